"""Tests of ``engines.hoi.scoring``: HOI-Eval's combination on a fixture scored by hand.

The benchmark files are written in the upstream shape (``docs/hoi.md``, "Method: Task and benchmark format"),
the records in the shape ``engines.hoi.scoring`` documents (upstream field names). Every expected
number is worked out by hand in the comments, from the formula of upstream
``evaluation/compute_scoring_final_scores.py`` (``docs/hoi.md``, "Method: HOI-Eval scores"); none is computed by the
code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.hoi.benchmark import load_benchmark
from engines.hoi.scoring import (
    EvalRecord,
    QAAnswer,
    RecordFormatError,
    compute_scores,
    interaction_qa,
    iqa_scores,
    normalize_question,
    parse_records,
    read_records,
    score_files,
    yes_score,
)

OCCUR = "L1-interaction-relation_occur"
CHANGE = "L1-interaction-relation_change_only"
NOT_OCCUR = "L1-interaction-relation_not_occur"
END = "L2-location_understanding-specific_pos_end"
INITIAL = "L2-location_understanding-specific_pos_initial"
NON_RIGID = "L3-non_rigid_change"
REASONING = "L3-reasoning_process"


def _item(tags_v6: str | None, question_v6, *, legacy_tag=None) -> dict:
    item = {
        "instruction": "Make the person pick up the cup",
        "object": "cup",
        "subject_bounding_box": [10, 10, 200, 400],
        "object_bounding_box": [150, 300, 220, 380],
        "generated_question": "Has the person in the blue bounding box picked up the cup in the red bounding box?",
        "tools": "",
        "tool_bboxes": [],
        "question_v6": question_v6,
    }
    if tags_v6 is not None:
        item["tags_v6"] = tags_v6
    if legacy_tag is not None:
        item["tag"] = legacy_tag
    return item


L1L2 = {
    "k1.png": _item(f"{OCCUR}, {END}", ["Has the cup been put on the shelf?"]),
    "k2.png": _item(f"{CHANGE}, {INITIAL}", ""),
    "k3.png": _item(f"{OCCUR}, {END}", ["Is the cup in the sink?"]),
    "k4.png": _item(f"{NOT_OCCUR}, {END}", ["Is the cup on the table?"]),
    "k5.png": _item(OCCUR, ""),
    "k6.png": _item(OCCUR, ""),
    "shared.png": _item(OCCUR, ""),
    # Tagged only by the legacy field: upstream's scorer counts it nowhere, and so does this one.
    "old.png": _item(None, "", legacy_tag=["L2-tool-already_interacted"]),
}
L3 = {
    "shared.png": _item(f"{OCCUR}, {NON_RIGID}, {REASONING}", ["Is there fire on the stove?", "Is the person facing the stove?"]),
    "m2.png": _item(REASONING, "Is the lid off the pot?"),  # a plain-string question_v6
    "m3.png": _item(NON_RIGID, ["Is the towel folded?"]),
}


def _r(i, h, o, qa=(), **extra) -> dict:
    return {"max_yes_confidence": i, "processing_mode": "confidence_first", "subject_identity_score": 1.0,
            "subject_quality_score": h, "subject_similarity": h, "object_identity_score": 1.0,
            "object_quality_score": o, "object_similarity": o, "qa": list(qa), **extra}


def _qa(question, answer, confidence) -> dict:
    return {"question": question, "answer": answer, "confidence": confidence}


RECORDS = {
    "method": "toy-editor",
    "L1L2": {
        # Question matched ignoring case and runs of whitespace; "Yes" -> yes = 0.7.
        "k1.png": _r(0.8, 0.9, 0.6, [_qa("  has the cup   been put on the SHELF? ", "Yes", 0.7)]),
        "k2.png": _r(0.6, 0.5, 1.0),
        # A "no" answer: yes = 0 (its confidence 0.95 is not used).
        "k3.png": _r(0.9, 0.7, 0.8, [_qa("Is the cup in the sink?", "no", 0.95)]),
        # The pos_end question was not answered (only some other question was).
        "k4.png": _r(0.5, 0.4, 0.2, [_qa("Is the cup red?", "yes", 0.9)]),
        # A judge reply that did not parse: every score of the record is skipped, never zero.
        "k5.png": _r(0.99, 0.99, 0.99, vqa_error="reply did not parse as JSON"),
        # k6.png: no record at all.
        "shared.png": _r(0.3, 0.2, 0.3),
        "old.png": _r(0.01, 0.01, 0.01),
    },
    "L3": {
        "shared.png": _r(0.4, 0.8, 0.6, [_qa("Is there fire on the stove?", "yes", 0.9),
                                         _qa("Is the person facing the stove?", "yes, mostly", 0.2)]),
        # An answer that is neither yes nor no: skipped.
        "m2.png": _r(1.0, 0.6, 0.5, [_qa("Is the lid off the pot?", "unsure", 0.9)]),
        # The subject-similarity judge failed: I, H and O all skipped (upstream hoi_fail).
        "m3.png": {**_r(0.7, None, 0.9, [_qa("Is the towel folded?", "yes", 1.0)]),
                   "subject_similarity_error": "identity_score missing in reply"},
        "stray.png": _r(0.5, 0.5, 0.5),
    },
}

L1L2_NAME = "collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json"
L3_NAME = "collected_annotations_bboxes_v7_L3_questions_scoring_final.json"


@pytest.fixture
def bench(tmp_path: Path):
    (tmp_path / L1L2_NAME).write_text(json.dumps(L1L2), encoding="utf-8")
    (tmp_path / L3_NAME).write_text(json.dumps(L3), encoding="utf-8")
    return load_benchmark(tmp_path)


@pytest.fixture
def records_path(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "toy.json"
    path.parent.mkdir()
    path.write_text(json.dumps(RECORDS), encoding="utf-8")
    return path


@pytest.fixture
def scores(bench, records_path):
    return compute_scores(bench, read_records(records_path))


def _means(row) -> tuple:
    return (row.I, row.H, row.O, row.IQA)


def _counts(row) -> tuple:
    return (row.n, row.pairs, row.n_I, row.n_H, row.n_O, row.n_IQA)


def _close(actual: tuple, expected: tuple) -> None:
    assert actual == pytest.approx(expected, abs=1e-12)


# ---------------------------------------------------------------- per tag


def test_l1_tags_iqa_is_i(scores):
    tags = scores.tags["L1L2"]
    # occur: k1, k3, k5 (error), k6 (no record), shared -> I over 0.8, 0.9, 0.3 = 2.0/3.
    # H over 0.9, 0.7, 0.2 = 1.8/3 = 0.6; O over 0.6, 0.8, 0.3 = 1.7/3; IQA = I.
    _close(_means(tags[OCCUR]), (2.0 / 3, 0.6, 1.7 / 3, 2.0 / 3))
    assert _counts(tags[OCCUR]) == (5, 5, 3, 3, 3, 3)
    assert tags[OCCUR].skipped("I") == 2 and tags[OCCUR].skipped("I+Q&A") == 2
    _close(_means(tags[CHANGE]), (0.6, 0.5, 1.0, 0.6))
    _close(_means(tags[NOT_OCCUR]), (0.5, 0.4, 0.2, 0.5))


def test_pos_initial_iqa_is_i(scores):
    # k2 has no question and no QA at all; pos_initial needs none: IQA = I = 0.6.
    row = scores.tags["L1L2"][INITIAL]
    _close(_means(row), (0.6, 0.5, 1.0, 0.6))
    assert _counts(row) == (1, 1, 1, 1, 1, 1)


def test_l2_tag_with_qa_yes_no_and_missing_answer(scores):
    row = scores.tags["L1L2"][END]
    # k1: min(0.8, 0.7) = 0.7; k3: "no" -> min(0.9, 0) = 0; k4: no answer to its question -> skipped.
    # IQA = (0.7 + 0.0) / 2 = 0.35. I = (0.8 + 0.9 + 0.5)/3 = 2.2/3; H = (0.9+0.7+0.4)/3 = 2.0/3;
    # O = (0.6+0.8+0.2)/3 = 1.6/3.
    _close(_means(row), (2.2 / 3, 2.0 / 3, 1.6 / 3, 0.35))
    assert _counts(row) == (3, 3, 3, 3, 3, 2)


def test_tag_order_is_upstreams(scores):
    assert list(scores.tags["L1L2"]) == [CHANGE, NOT_OCCUR, OCCUR, END, INITIAL]
    assert list(scores.tags["L3"]) == [OCCUR, NON_RIGID, REASONING]


def test_l3_tags(scores):
    tags = scores.tags["L3"]
    # non_rigid: shared (I 0.4, yes 0.9 -> 0.4) and m3 (error: nothing).
    _close(_means(tags[NON_RIGID]), (0.4, 0.8, 0.6, 0.4))
    assert _counts(tags[NON_RIGID]) == (2, 2, 1, 1, 1, 1)
    # reasoning: shared ("yes, mostly" 0.2 -> min(0.4, 0.2) = 0.2) and m2 ("unsure": skipped).
    # I = (0.4 + 1.0)/2 = 0.7; H = (0.8 + 0.6)/2 = 0.7; O = (0.6 + 0.5)/2 = 0.55; IQA = 0.2.
    _close(_means(tags[REASONING]), (0.7, 0.7, 0.55, 0.2))
    assert _counts(tags[REASONING]) == (2, 2, 2, 2, 2, 1)


# ---------------------------------------------------------------- per level and split


def test_levels_count_each_item_once(scores):
    l1l2 = scores.levels["L1L2"]
    assert list(l1l2) == ["L1", "L2"]
    # L1: k1..k6 and shared (7 items, 7 pairs); I over k1 .8, k2 .6, k3 .9, k4 .5, shared .3 = 3.1/5 = 0.62;
    # H .9 .5 .7 .4 .2 = 2.7/5 = 0.54; O .6 1.0 .8 .2 .3 = 2.9/5 = 0.58; IQA = I on L1 tags = 0.62.
    _close(_means(l1l2["L1"]), (0.62, 0.54, 0.58, 0.62))
    assert _counts(l1l2["L1"]) == (7, 7, 5, 5, 5, 5)
    # L2: k1, k2, k3, k4. I .8 .6 .9 .5 = 2.8/4 = 0.7; H .9 .5 .7 .4 = 2.5/4 = 0.625;
    # O .6 1.0 .8 .2 = 2.6/4 = 0.65; IQA k1 .7, k2 .6 (pos_initial), k3 0, k4 skipped = 1.3/3.
    _close(_means(l1l2["L2"]), (0.7, 0.625, 0.65, 1.3 / 3))
    assert _counts(l1l2["L2"]) == (4, 4, 4, 4, 4, 3)
    # L3 (L3 split): shared has two L3 tags but its I counts once: I over .4 and 1.0 = 0.7 (not
    # (.4+.4+1.0)/3); H (.8+.6)/2 = 0.7; O (.6+.5)/2 = 0.55; IQA over shared's .4 and .2 = 0.3.
    l3 = scores.levels["L3"]
    assert list(l3) == ["L1", "L3"]
    _close(_means(l3["L3"]), (0.7, 0.7, 0.55, 0.3))
    assert _counts(l3["L3"]) == (3, 4, 2, 2, 2, 2)
    # The L3 file's L1 items are a level of their own there (shared: I 0.4), not the paper's L1.
    _close(_means(l3["L1"]), (0.4, 0.8, 0.6, 0.4))


def test_split_rows(scores):
    # L1L2: 7 scored items, pairs k1 2 + k2 2 + k3 2 + k4 2 + k5 1 + k6 1 + shared 1 = 11.
    # IQA over L1 .8 .6 .9 .5 .3 and L2 .7 .6 0 = 4.4/8 = 0.55.
    row = scores.splits["L1L2"]
    _close(_means(row), (0.62, 0.54, 0.58, 0.55))
    assert _counts(row) == (7, 11, 5, 5, 5, 8)
    # L3: shared 3 pairs + m2 1 + m3 1 = 5; I over .4, 1.0 = 0.7; IQA .4 (L1) .4 .2 = 1.0/3.
    row = scores.splits["L3"]
    _close(_means(row), (0.7, 0.7, 0.55, 1.0 / 3))
    assert _counts(row) == (3, 5, 2, 2, 2, 3)


def test_paper_table(scores):
    table = scores.paper_table()
    assert [row["level"] for row in table] == ["L1", "L2", "L3"]
    assert list(table[0]) == ["level", "n", "I", "H", "O"]
    assert list(table[1]) == ["level", "n", "I", "I+Q&A", "H", "O"]
    assert list(table[2]) == ["level", "n", "I", "I+Q&A", "H", "O"]
    # L1, L2 from the L1L2 split; L3 from the L3 split (values as in test_levels_count_each_item_once).
    assert table[0] == pytest.approx({"level": "L1", "n": 7, "I": 0.62, "H": 0.54, "O": 0.58})
    assert table[1] == pytest.approx({"level": "L2", "n": 4, "I": 0.7, "I+Q&A": 1.3 / 3, "H": 0.625, "O": 0.65})
    assert table[2] == pytest.approx({"level": "L3", "n": 3, "I": 0.7, "I+Q&A": 0.3, "H": 0.7, "O": 0.55})
    # Rounded as upstream prints (4 decimals): 1.3/3 = 0.43333...
    assert scores.paper_table(decimals=4)[1]["I+Q&A"] == 0.4333


def test_skipped_missing_unknown_and_unscored_are_listed(scores):
    assert scores.method == "toy-editor"
    assert scores.failed == {"L1L2": ("k5.png",), "L3": ("m3.png",)}
    assert scores.missing == {"L1L2": ("k6.png",), "L3": ()}
    assert scores.unknown == {"L1L2": (), "L3": ("stray.png",)}
    assert scores.unscored == {"L1L2": ("old.png",), "L3": ()}


def test_a_split_without_records_scores_nothing(bench):
    scores = compute_scores(bench, parse_records({"method": "half", "L1L2": RECORDS["L1L2"]}))
    row = scores.levels["L3"]["L3"]
    assert (row.I, row.H, row.O, row.IQA) == (None, None, None, None)
    assert _counts(row) == (3, 4, 0, 0, 0, 0)
    assert scores.paper_table()[2] == {"level": "L3", "n": 3, "I": None, "I+Q&A": None, "H": None, "O": None}
    assert scores.missing["L3"] == ("shared.png", "m2.png", "m3.png")


def test_paper_table_without_the_l3_file(tmp_path):
    (tmp_path / L1L2_NAME).write_text(json.dumps(L1L2), encoding="utf-8")
    scores = compute_scores(load_benchmark(tmp_path), parse_records(RECORDS))
    assert scores.paper_table()[2] == {"level": "L3", "n": 0, "I": None, "I+Q&A": None, "H": None, "O": None}
    assert scores.paper_table()[0]["I"] == pytest.approx(0.62)


# ---------------------------------------------------------------- one item


def test_iqa_of_one_item(bench):
    records = parse_records(RECORDS)
    # k1: L1 -> I 0.8; pos_end -> min(0.8, 0.7).
    assert iqa_scores(bench.get("L1L2", "k1.png"), records.get("L1L2", "k1.png")) == {OCCUR: 0.8, END: 0.7}
    # k4: pos_end's question unanswered -> None.
    assert iqa_scores(bench.get("L1L2", "k4.png"), records.get("L1L2", "k4.png")) == {NOT_OCCUR: 0.5, END: None}
    # No record: everything skipped.
    assert interaction_qa(bench.get("L1L2", "k6.png"), OCCUR, None) is None
    # A tag the item's question_v6 gives no question for (m2 has one question, for reasoning): skipped.
    record = EvalRecord(split="L3", key="m2.png", max_yes_confidence=0.9,
                        qa=(QAAnswer("Is the lid off the pot?", "yes", 0.8),))
    assert interaction_qa(bench.get("L3", "m2.png"), NON_RIGID, record) is None
    assert interaction_qa(bench.get("L3", "m2.png"), REASONING, record) == 0.8  # min(0.9, 0.8)


def test_record_with_an_error_gives_no_scores():
    record = EvalRecord(split="L1L2", key="x", max_yes_confidence=0.9, subject_similarity=0.8,
                        object_similarity=0.7, errors={"object_similarity_error": "timeout"})
    assert record.failed
    assert (record.I, record.H, record.O) == (None, None, None)
    assert (record.max_yes_confidence, record.subject_similarity) == (0.9, 0.8)  # kept for display


@pytest.mark.parametrize(("answer", "confidence", "expected"), [
    ("yes", 0.8, 0.8),
    ("  YES, clearly", 0.6, 0.6),
    ("no", 0.9, 0.0),
    ("No.", 0.2, 0.0),
    ("not sure", 0.5, 0.0),  # upstream: starts with "no"
    ("unsure", 0.5, None),
    ("", 0.5, None),
    (None, 0.5, None),
    ("yes", None, None),
])
def test_yes_score(answer, confidence, expected):
    assert yes_score(QAAnswer("q", answer, confidence)) == expected


def test_yes_score_of_an_errored_or_absent_answer():
    assert yes_score(QAAnswer("q", "yes", 0.9, error="timeout")) is None
    assert yes_score(None) is None


def test_question_matching():
    assert normalize_question("  Is the cup\n in the  SINK? ") == "is the cup in the sink?"
    record = EvalRecord(split="L3", key="k", qa=(QAAnswer("Is the cup in the sink?", "yes", 0.5),))
    assert record.answer_to("is the CUP in the sink?").confidence == 0.5
    assert record.answer_to("Is the cup in the bin?") is None


# ---------------------------------------------------------------- reading records


def test_read_records(records_path):
    records = read_records(records_path)
    assert records.method == "toy-editor" and records.path == records_path
    assert set(records.by_split) == {"L1L2", "L3"}
    k1 = records.get("L1L2", "k1.png")
    assert (k1.max_yes_confidence, k1.subject_similarity, k1.object_similarity, k1.mode) == \
        (0.8, 0.9, 0.6, "confidence_first")
    assert k1.qa == (QAAnswer("  has the cup   been put on the SHELF? ", "Yes", 0.7),)
    assert records.get("L1L2", "k5.png").errors == {"vqa_error": "reply did not parse as JSON"}
    assert records.get("L3", "m3.png").subject_similarity is None
    assert records.get("L1L2", "k6.png") is None


def test_empty_or_false_error_fields_are_not_errors():
    records = parse_records({"method": "m", "L3": {"a": {"max_yes_confidence": 0.5, "vqa_error": "",
                                                          "has_error": False, "processing_error": None}}})
    assert records.get("L3", "a").errors == {}
    assert records.get("L3", "a").I == 0.5
    flagged = parse_records({"method": "m", "L3": {"a": {"max_yes_confidence": 0.5, "has_error": True}}})
    assert flagged.get("L3", "a").errors == {"has_error": "True"}


def test_mode_alias():
    records = parse_records({"method": "m", "L1L2": {"a": {"mode": "similarity_first"}}})
    assert records.get("L1L2", "a").mode == "similarity_first"


def test_score_files(bench, records_path, tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"method": "other", "L3": {"m2.png": _r(0.25, 0.5, 0.5)}}), encoding="utf-8")
    out = score_files(bench, [records_path, other])
    assert list(out) == ["toy-editor", "other"]
    assert out["other"].levels["L3"]["L3"].I == 0.25
    with pytest.raises(RecordFormatError, match="already read"):
        score_files(bench, [records_path, records_path])


def _bad(split, key, record) -> dict:
    return {"method": "m", split: {key: record}}


BAD_RECORDS = [
    ("text_score", _bad("L1L2", "a.png", {"subject_similarity": "n/a"}), "L1L2", "a.png", "subject_similarity",
     "did not parse"),
    ("bool_score", _bad("L3", "b.png", {"max_yes_confidence": True}), "L3", "b.png", "max_yes_confidence",
     "number in [0, 1]"),
    ("score_above_one", _bad("L3", "b.png", {"object_similarity": 1.5}), "L3", "b.png", "object_similarity",
     "got 1.5"),
    ("negative_score", _bad("L3", "b.png", {"object_quality_score": -0.1}), "L3", "b.png", "object_quality_score",
     "got -0.1"),
    ("record_list", _bad("L1L2", "c.png", [0.5]), "L1L2", "c.png", "", "got a list"),
    ("qa_not_list", _bad("L1L2", "c.png", {"qa": {"q": "yes"}}), "L1L2", "c.png", "qa", "must be a list"),
    ("qa_entry_text", _bad("L1L2", "c.png", {"qa": ["yes"]}), "L1L2", "c.png", "qa[0]", "must be an object"),
    ("qa_no_question", _bad("L1L2", "c.png", {"qa": [{"answer": "yes", "confidence": 0.5}]}), "L1L2", "c.png",
     "qa[0].question", "is missing"),
    ("qa_text_confidence", _bad("L3", "d.png", {"qa": [_qa("Q?", "yes", 0.5), _qa("R?", "yes", "high")]}), "L3",
     "d.png", "qa[1].confidence", "'high'"),
    ("qa_answer_bool", _bad("L3", "d.png", {"qa": [_qa("Q?", True, 0.5)]}), "L3", "d.png", "qa[0].answer",
     "must be text"),
    ("qa_twice_differently", _bad("L3", "d.png", {"qa": [_qa("Q?", "yes", 0.5), _qa(" q? ", "no", 0.5)]}), "L3",
     "d.png", "qa[1].question", "answered twice"),
    ("mode_mismatch", _bad("L3", "d.png", {"mode": "a", "processing_mode": "b"}), "L3", "d.png", "mode", "differs"),
    ("mode_number", _bad("L3", "d.png", {"processing_mode": 1}), "L3", "d.png", "processing_mode", "must be text"),
    ("no_method", {"L3": {}}, None, None, "method", "is missing"),
    ("unknown_section", {"method": "m", "L1_L2": {}}, None, None, "L1_L2", "is not a field of"),
    ("section_list", {"method": "m", "L3": []}, None, None, "L3", "must be an object"),
]


@pytest.mark.parametrize(("data", "split", "key", "field", "words"), [case[1:] for case in BAD_RECORDS],
                         ids=[case[0] for case in BAD_RECORDS])
def test_record_errors_name_file_split_key_and_field(tmp_path, data, split, key, field, words):
    path = tmp_path / "records.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RecordFormatError) as info:
        read_records(path)
    error = info.value
    assert (error.path, error.split, error.key, error.field) == (path, split, key, field)
    assert words in error.problem
    where = ", ".join([str(path), *([split] if split else []), *([f"key {key!r}"] if key else [])])
    assert str(error) == ": ".join([where, *([field] if field else []), error.problem])


def test_records_file_errors(tmp_path):
    path = tmp_path / "records.json"
    path.write_text('{"method": "m", "L3": {', encoding="utf-8")
    with pytest.raises(RecordFormatError, match="not valid JSON") as info:
        read_records(path)
    assert info.value.path == path
    path.write_text("[]", encoding="utf-8")
    with pytest.raises(RecordFormatError, match="got a list"):
        read_records(path)
    with pytest.raises(RecordFormatError, match="cannot read"):
        read_records(tmp_path / "absent.json")
    assert len(parse_records({"method": "m", "L3": {"d.png": {"qa": [_qa("Q?", "yes", 0.5),
                                                                      _qa("q?", "yes", 0.5)]}}})
               .get("L3", "d.png").qa) == 1  # the same answer twice is one answer
