"""Tests of ``engines.hoi.benchmark``: the HOI-Edit loader on hand-written files in the upstream shape.

The fixture items copy the shapes of upstream's
``data/collected_annotations_bboxes_v7_{L1L2,L3}_questions_scoring_final.json``
(``docs/hoi.md``, "Method: Task and benchmark format"): L1L2 items with ``tools``/``tool_bboxes`` and the legacy
``tag``/``question``; L3 items, some without any tool or legacy field; ``question_v6`` as a list,
as ``""`` and as a plain string. Expected values are written out by hand.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from engines.hoi.benchmark import (
    ANNOTATION_FILES,
    POS_INITIAL,
    BenchmarkFormatError,
    level_of,
    load_benchmark,
    other_tags,
    parse_tags,
    read_annotations,
)

L1L2_NAME = "collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json"
L3_NAME = "collected_annotations_bboxes_v7_L3_questions_scoring_final.json"

L1L2 = {
    # Two tags, one taking a question: pos_end gets question_v6[0].
    "BR2q2QDnB70-0:04:12.819-0:04:18.358_frame_0002_79.png": {
        "instruction": "Make the person put the thing in her hand into the bowl and pick up the can",
        "object": "can",
        "object_bounding_box": [22, 247, 146, 494],
        "subject_bounding_box": [981, 3, 1280, 710],
        "generated_question": "Has the person in the blue bounding box picked up the can in the red bounding box?",
        "tool_bboxes": [],
        "tools": "",
        "question": ["Has the thing in her hand been put into the bowl?"],
        "tag": ["L1-interaction-relation_occur", "L2-location_understanding-specific_pos"],
        "tags_v6": "L1-interaction-relation_occur, L2-location_understanding-specific_pos_end",
        "question_v6": ["Has the thing in her hand been put into the bowl?"],
    },
    # A tool with its yellow box; question_v6 "" (no question); an L1 tag only.
    "iBjKnOA59r4-0:02:35.363-0:02:41.035_frame_0003_136.png": {
        "instruction": "Make the person pick up the food from the pot with the tong",
        "object": "pot",
        "object_bounding_box": [515, 415, 752, 654],
        "subject_bounding_box": [336, 27, 728, 543],
        "generated_question": "Has the person in the blue bounding box picked up the food from the pot in the red bounding box?",
        "tool_bboxes": [356, 382, 418, 503],
        "tools": "tong",
        "question": ["Has the tong been used to pick up the food?"],
        "tag": ["L2-tool-already_interacted"],
        "tags_v6": "L1-interaction-relation_change_only",
        "question_v6": "",
    },
    # Also in the L3 file (with other tags); fractional boxes as upstream has them; pos_initial takes no question.
    "shared frame 7.jpg": {
        "instruction": "Make the person lift the wooden board.",
        "object": "wooden board",
        "object_bounding_box": [870.4, 584.2285714285714, 972.8, 657.3714285714286],
        "subject_bounding_box": [190, 4, 935, 718],
        "generated_question": "Has the person in the blue bounding box lifted the wooden board in the red bounding box?",
        "tool_bboxes": [],
        "tools": "",
        "question": "",
        "tag": [],
        "tags_v6": "L1-interaction-relation_occur, L2-location_understanding-specific_pos_initial",
        "question_v6": "",
    },
}

L3 = {
    # Three tags, two taking questions, in order: non_rigid -> question 0, reasoning -> question 1.
    "shared frame 7.jpg": {
        "instruction": "Make the person lift the wooden board and turn on the stove.",
        "object": "wooden board",
        "object_bounding_box": [841, 210, 1278, 717],
        "subject_bounding_box": [190, 4, 935, 718],
        "generated_question": "Has the person in the blue bounding box lifted the wooden board in the red bounding box?",
        "question_v6": ["Is there any fire on the stove?", "Is the person facing the stove?"],
        "tags_v6": "L1-interaction-relation_occur, L3-non_rigid_change, L3-reasoning_process",
    },
    # question_v6 a plain string = one question; two tags take one, so the second has none.
    "UNym1GX3TNU-0:04:08.040-0:04:10.600_frame_0001_4.png": {
        "instruction": "Make the person pour the oil from the bottle into the frying pan",
        "object": "oil bottle",
        "object_bounding_box": [133, 1, 603, 308],
        "subject_bounding_box": [1, 0, 649, 472],
        "generated_question": "Has the person in the blue bounding box poured the oil bottle in the red bounding box?",
        "tool_bboxes": [],
        "tools": "",
        "tags_v6": "L2-location_understanding-specific_pos_end, L3-non_rigid_change",
        "question_v6": "Has the oil been poured into the frying pan?",
    },
    # No tags_v6: tags from the legacy 'tag' list (old taxonomy), with a note; question_v6 [].
    "legacy.jpg": {
        "instruction": "Make the person tighten the screws on the machine.",
        "object": "machine",
        "object_bounding_box": [535, 232, 893, 668],
        "subject_bounding_box": [8, 0, 1273, 575],
        "generated_question": "Has the person in the blue bounding box tightened the screws on the machine in the red bounding box?",
        "tools": "screwdriver",
        "tool_bboxes": [2, 578, 483, 701],
        "tag": ["L3-reasoning_process"],
        "question_v6": [],
    },
}

A = "BR2q2QDnB70-0:04:12.819-0:04:18.358_frame_0002_79.png"
B = "iBjKnOA59r4-0:02:35.363-0:02:41.035_frame_0003_136.png"
SHARED = "shared frame 7.jpg"
OIL = "UNym1GX3TNU-0:04:08.040-0:04:10.600_frame_0001_4.png"


def _write(root: Path, name: str, data, *, under_data: bool = False) -> Path:
    folder = root / "data" if under_data else root
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data, ensure_ascii=False, indent=4), encoding="utf-8")
    return path


@pytest.fixture
def bench_dir(tmp_path: Path) -> Path:
    _write(tmp_path, L1L2_NAME, L1L2)
    _write(tmp_path, L3_NAME, L3)
    # Images for two of the six items; the others are missing.
    for split, key in (("L1L2", A), ("L3", SHARED)):
        (tmp_path / "images" / split).mkdir(parents=True, exist_ok=True)
        (tmp_path / "images" / split / key).write_bytes(b"\x89PNG not really")
    return tmp_path


# ---------------------------------------------------------------- reading


def test_file_names_are_upstreams():
    assert ANNOTATION_FILES == {"L1L2": L1L2_NAME, "L3": L3_NAME}


def test_loads_both_files_in_file_order(bench_dir):
    bench = load_benchmark(bench_dir)
    assert bench.splits == ("L1L2", "L3")
    assert bench.files == {"L1L2": bench_dir / L1L2_NAME, "L3": bench_dir / L3_NAME}
    assert bench.split_counts() == {"L1L2": 3, "L3": 3}
    assert len(bench) == 6
    assert [item.key for item in bench.items("L1L2")] == [A, B, SHARED]
    assert [(item.split, item.key) for item in bench] == [
        ("L1L2", A), ("L1L2", B), ("L1L2", SHARED), ("L3", SHARED), ("L3", OIL), ("L3", "legacy.jpg"),
    ]


def test_item_with_a_question_taking_tag(bench_dir):
    item = load_benchmark(bench_dir).get("L1L2", A)
    assert item.split == "L1L2"
    assert item.image_path == bench_dir / "images" / "L1L2" / A
    assert item.instruction == "Make the person put the thing in her hand into the bowl and pick up the can"
    assert item.object_name == "can"
    assert item.subject_box == (981, 3, 1280, 710)
    assert item.object_box == (22, 247, 146, 494)
    assert item.tool_name is None and item.tool_box is None  # "" and []
    assert item.tags == ("L1-interaction-relation_occur", "L2-location_understanding-specific_pos_end")
    assert item.levels == ("L1", "L2")
    assert item.interaction_question == \
        "Has the person in the blue bounding box picked up the can in the red bounding box?"
    # The L1 tag takes no question; pos_end takes question_v6[0].
    assert item.aux_questions == {
        "L2-location_understanding-specific_pos_end": "Has the thing in her hand been put into the bowl?",
    }
    assert item.question_for("L1-interaction-relation_occur") is None
    assert item.questions == ("Has the thing in her hand been put into the bowl?",)
    assert item.tags_field == "tags_v6"
    assert item.note is None


def test_item_with_a_tool_and_an_empty_question_v6(bench_dir):
    item = load_benchmark(bench_dir).get("L1L2", B)
    assert item.tool_name == "tong"
    assert item.tool_box == (356, 382, 418, 503)
    assert item.tags == ("L1-interaction-relation_change_only",)
    assert item.levels == ("L1",)
    assert item.questions == ()
    assert item.aux_questions == {}
    assert item.image_path is None
    assert item.note == "image not found under images/L1L2/"


def test_pos_initial_takes_no_question(bench_dir):
    item = load_benchmark(bench_dir).get("L1L2", SHARED)
    assert item.tags == ("L1-interaction-relation_occur", POS_INITIAL)
    assert item.levels == ("L1", "L2")
    assert item.aux_questions == {}
    assert item.object_box == (870.4, 584.2285714285714, 972.8, 657.3714285714286)


def test_a_key_in_both_files_is_two_items(bench_dir):
    bench = load_benchmark(bench_dir)
    l1l2, l3 = bench.get("L1L2", SHARED), bench.get("L3", SHARED)
    assert l1l2.instruction == "Make the person lift the wooden board."
    assert l3.instruction == "Make the person lift the wooden board and turn on the stove."
    assert l3.object_box == (841, 210, 1278, 717)
    assert l3.tags == ("L1-interaction-relation_occur", "L3-non_rigid_change", "L3-reasoning_process")
    assert l3.levels == ("L1", "L3")
    # No tools / tool_bboxes / legacy fields at all in this L3 item.
    assert l3.tool_name is None and l3.tool_box is None
    assert l3.aux_questions == {
        "L3-non_rigid_change": "Is there any fire on the stove?",
        "L3-reasoning_process": "Is the person facing the stove?",
    }
    assert l3.image_path == bench_dir / "images" / "L3" / SHARED


def test_plain_string_question_v6_is_one_question_and_a_tag_may_have_none(bench_dir):
    item = load_benchmark(bench_dir).get("L3", OIL)
    assert item.questions == ("Has the oil been poured into the frying pan?",)
    # other tags: [pos_end, non_rigid]; one question -> pos_end only.
    assert item.aux_questions == {
        "L2-location_understanding-specific_pos_end": "Has the oil been poured into the frying pan?",
    }
    assert item.question_for("L3-non_rigid_change") is None
    assert item.levels == ("L2", "L3")
    assert "L3-non_rigid_change without one" in item.note


def test_legacy_tag_fallback_only_without_tags_v6(bench_dir):
    item = load_benchmark(bench_dir).get("L3", "legacy.jpg")
    assert item.tags == ("L3-reasoning_process",)
    assert item.tags_field == "tag"
    assert item.levels == ("L3",)
    assert item.questions == ()
    assert item.tool_name == "screwdriver" and item.tool_box == (2, 578, 483, 701)
    assert "legacy 'tag'" in item.note


def test_tags_v6_wins_over_legacy_tag(bench_dir):
    # Item B has tag ["L2-tool-already_interacted"] and tags_v6 "L1-...change_only": tags_v6 is read.
    assert load_benchmark(bench_dir).get("L1L2", B).tags == ("L1-interaction-relation_change_only",)


def test_counts(bench_dir):
    bench = load_benchmark(bench_dir)
    # L1L2: A (L1, L2), B (L1), SHARED (L1, L2). L3: SHARED (L1, L3), OIL (L2, L3), legacy (L3).
    assert bench.level_counts("L1L2") == {"L1": 3, "L2": 2}
    assert bench.level_counts("L3") == {"L1": 1, "L2": 1, "L3": 3}
    assert bench.level_counts() == {"L1": 4, "L2": 3, "L3": 3}
    assert bench.tag_counts("L1L2") == {
        "L1-interaction-relation_change_only": 1,
        "L1-interaction-relation_occur": 2,
        "L2-location_understanding-specific_pos_end": 1,
        POS_INITIAL: 1,
    }
    assert bench.tag_counts("L3") == {
        "L1-interaction-relation_occur": 1,
        "L2-location_understanding-specific_pos_end": 1,
        "L3-non_rigid_change": 2,
        "L3-reasoning_process": 2,
    }


def test_files_under_data_and_a_single_file(tmp_path):
    _write(tmp_path, L3_NAME, L3, under_data=True)
    bench = load_benchmark(tmp_path)
    assert bench.splits == ("L3",)
    assert bench.files == {"L3": tmp_path / "data" / L3_NAME}
    assert bench.split_counts() == {"L3": 3}
    assert bench.items("L1L2") == []
    with pytest.raises(KeyError, match="no item 'x.png' in split L1L2"):
        bench.get("L1L2", "x.png")


def test_unknown_split_is_refused(bench_dir):
    bench = load_benchmark(bench_dir)
    with pytest.raises(ValueError, match="unknown split 'L2'"):
        bench.items("L2")
    with pytest.raises(ValueError, match="unknown split"):
        read_annotations(bench_dir / L3_NAME, "L1")


def test_no_annotation_file(tmp_path):
    with pytest.raises(BenchmarkFormatError, match="no HOI-Edit annotation file") as info:
        load_benchmark(tmp_path)
    assert info.value.path == tmp_path
    with pytest.raises(BenchmarkFormatError, match="not a directory"):
        load_benchmark(tmp_path / "absent")


def test_notes_for_odd_but_readable_items(tmp_path):
    base = {**copy.deepcopy(L1L2[A]), "question_v6": ""}
    data = {
        "empty.png": {**base, "tags_v6": ""},
        "repeat.png": {**base, "tags_v6": "L1-interaction-relation_occur, L1-interaction-relation_occur"},
        "extra.png": {**base, "tags_v6": "L1-interaction-relation_occur", "question_v6": ["Q?"]},
        "fullwidth.png": {**base, "tags_v6": "L1-interaction-relation_occur\uff0cL3-reasoning_process",
                          "question_v6": ["  Q one?  ", "", "Q two?"]},
        "notool.png": {**base, "tags_v6": "L1-interaction-relation_occur", "tools": "", "tool_bboxes": "[1, 2, 3, 4]"},
    }
    items = {item.key: item for item in read_annotations(_write(tmp_path, L1L2_NAME, data), "L1L2")}
    assert items["empty.png"].tags == () and items["empty.png"].levels == ()
    assert items["empty.png"].note == "tags_v6 is empty: the item counts in no tag and no level"
    assert items["repeat.png"].tags == ("L1-interaction-relation_occur",)
    assert items["repeat.png"].note == "tags_v6 repeats L1-interaction-relation_occur; each kept once"
    assert items["extra.png"].aux_questions == {}
    assert items["extra.png"].note == "1 question_v6 question(s) beyond the tags that take one"
    # Full-width comma splits; blank questions are left out before aligning (upstream normalize_questions).
    assert items["fullwidth.png"].tags == ("L1-interaction-relation_occur", "L3-reasoning_process")
    assert items["fullwidth.png"].questions == ("Q one?", "Q two?")
    assert items["fullwidth.png"].aux_questions == {"L3-reasoning_process": "Q one?"}
    assert items["fullwidth.png"].note == "1 question_v6 question(s) beyond the tags that take one"
    # A box written as text is read (upstream's QA script parses it); a box without a name is noted.
    assert items["notool.png"].tool_box == (1, 2, 3, 4) and items["notool.png"].tool_name is None
    assert items["notool.png"].note == "tool_bboxes written as text; a tool box without a tool name"


# ---------------------------------------------------------------- errors name file, key and field


def _good() -> dict:
    return copy.deepcopy(L1L2[A])


def _without(field: str) -> dict:
    record = _good()
    del record[field]
    return record


BAD_ITEMS = [
    ("three_numbers", {**_good(), "subject_bounding_box": [1, 2, 3]}, "subject_bounding_box", "four numbers"),
    ("x2_before_x1", {**_good(), "object_bounding_box": [146, 247, 22, 494]}, "object_bounding_box", "ends before"),
    ("y2_before_y1", {**_good(), "object_bounding_box": [22, 494, 146, 247]}, "object_bounding_box", "ends before"),
    ("text_number", {**_good(), "object_bounding_box": [22, "247", 146, 494]}, "object_bounding_box", "four numbers"),
    ("bool_number", {**_good(), "subject_bounding_box": [True, 0, 5, 5]}, "subject_bounding_box", "four numbers"),
    ("no_subject_box", _without("subject_bounding_box"), "subject_bounding_box", "missing"),
    ("bad_tool_box", {**_good(), "tools": "tong", "tool_bboxes": [1, 2]}, "tool_bboxes", "four numbers"),
    ("tool_box_text", {**_good(), "tool_bboxes": "left of the pot"}, "tool_bboxes", "the text"),
    ("tools_not_text", {**_good(), "tools": 3}, "tools", "must be text (got 3)"),
    ("unknown_prefix", {**_good(), "tags_v6": "L1-interaction-relation_occur, L4-new"}, "tags_v6", "L4-new"),
    ("tags_not_text", {**_good(), "tags_v6": 7}, "tags_v6", "comma-separated"),
    ("legacy_bad_prefix", {**_without("tags_v6"), "tag": ["morphology"]}, "tag", "'morphology'"),
    ("no_tags_at_all", {k: v for k, v in _good().items() if k not in ("tags_v6", "tag")}, "tags_v6", "missing"),
    ("no_instruction", _without("instruction"), "instruction", "missing"),
    ("empty_instruction", {**_good(), "instruction": "  "}, "instruction", "must not be empty"),
    ("instruction_list", {**_good(), "instruction": ["Make"]}, "instruction", "must be text (got a list)"),
    ("no_object", _without("object"), "object", "missing"),
    ("question_v6_object", {**_good(), "question_v6": {"q": 1}}, "question_v6", "list of questions"),
    ("question_v6_number", {**_good(), "question_v6": ["Q?", 3]}, "question_v6[1]", "must be text (got 3)"),
    ("question_not_text", {**_good(), "generated_question": 5}, "generated_question", "must be text (got 5)"),
]


@pytest.mark.parametrize(("record", "field", "words"), [case[1:] for case in BAD_ITEMS],
                         ids=[case[0] for case in BAD_ITEMS])
def test_item_errors_name_file_key_and_field(tmp_path, record, field, words):
    good_key = "fine.png"
    path = _write(tmp_path, L1L2_NAME, {good_key: _good(), "bad key.png": record})
    with pytest.raises(BenchmarkFormatError) as info:
        load_benchmark(tmp_path)
    error = info.value
    assert (error.path, error.key, error.field) == (path, "bad key.png", field)
    assert words in error.problem
    assert str(error) == f"{path}, key 'bad key.png': {field}: {error.problem}"


def test_an_error_in_the_l3_file_names_it(tmp_path):
    _write(tmp_path, L1L2_NAME, L1L2)
    bad = copy.deepcopy(L3)
    bad[OIL]["tags_v6"] = "L3-reasoning_process, X-other"
    path = _write(tmp_path, L3_NAME, bad, under_data=True)
    with pytest.raises(BenchmarkFormatError) as info:
        load_benchmark(tmp_path)
    assert (info.value.path, info.value.key, info.value.field) == (path, OIL, "tags_v6")


def test_record_not_an_object(tmp_path):
    path = _write(tmp_path, L3_NAME, {"x.jpg": ["not", "a", "record"]})
    with pytest.raises(BenchmarkFormatError, match="must be an object") as info:
        load_benchmark(tmp_path)
    assert (info.value.path, info.value.key, info.value.field) == (path, "x.jpg", "")


@pytest.mark.parametrize(("text", "words"), [
    ('{"a.png": {', "not valid JSON"),
    ('[{"instruction": "x"}]', "must be a JSON object keyed by image file name \\(got a list\\)"),
    ('{"a.png": {"instruction": "x"}, "a.png": {"instruction": "y"}}', "'a.png' appears twice"),
    ('{"../a.png": {}}', "must be an image file name"),
])
def test_file_errors_name_the_file(tmp_path, text, words):
    path = tmp_path / L1L2_NAME
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BenchmarkFormatError, match=words) as info:
        load_benchmark(tmp_path)
    assert info.value.path == path


# ---------------------------------------------------------------- tag helpers


def test_tag_helpers():
    assert parse_tags("L1-interaction-relation_occur ,, L3-reasoning_process\uff0c ") == [
        "L1-interaction-relation_occur", "L3-reasoning_process"]
    assert parse_tags("") == [] and parse_tags(None) == []
    assert level_of("L2-location_understanding-specific_pos_end") == "L2"
    with pytest.raises(ValueError):
        level_of("L12-x")
    assert other_tags(["L1-interaction-relation_occur", POS_INITIAL, "L2-location_understanding-specific_pos_end",
                       "L3-reasoning_process"]) == ["L2-location_understanding-specific_pos_end", "L3-reasoning_process"]
