"""Tests of ``engines.hoi.evaluate``: HOI-Eval over a 3-item benchmark in the upstream shape, with a
stub grounder and a stub judge whose answers are fixed, so every record field and the paper table
are worked out by hand in the comments (upstream
``evaluation/gemini3_final_hoicheck_new_noquestion_track_google_newsim.py`` for the steps,
``evaluation/compute_scoring_final_scores.py`` for the scores; ``docs/hoi.md``, "Method: HOI-Eval scores")."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from PIL import Image

from engines.hoi import roles
from engines.hoi.benchmark import ANNOTATION_FILES, load_benchmark
from engines.hoi.drawing import BLUE, RED, YELLOW
from engines.hoi.evaluate import (
    add_evaluate_arguments,
    evaluate_method,
    find_output,
    role_options,
    run_evaluate,
)
from engines.hoi.judge_replies import JudgeReplyError
from engines.hoi.roles import Detection
from engines.hoi.scoring import compute_scores, read_records

OCCUR = "L1-interaction-relation_occur"
NOT_OCCUR = "L1-interaction-relation_not_occur"
END = "L2-location_understanding-specific_pos_end"
INITIAL = "L2-location_understanding-specific_pos_initial"
REASONING = "L3-reasoning_process"

SIZE = (80, 60)  # every source image; the edits come at other sizes and are resized to this
Q_A = "Has the person in the blue bounding box picked up the cup in the red bounding box?"
Q_B = "Has the person in the blue bounding box touched the kettle in the red bounding box?"
Q_C = "Has the person in the blue bounding box opened the pot in the red bounding box?"
QA_A = "Is the cup on the shelf?"
QA_C = "Is the lid in the yellow box off the pot?"


def _item(instruction, obj, object_box, question, tags, question_v6, tool="", tool_box=()):
    return {"instruction": instruction, "object": obj, "subject_bounding_box": [5, 5, 35, 55],
            "object_bounding_box": list(object_box), "generated_question": question, "tools": tool,
            "tool_bboxes": list(tool_box), "tags_v6": tags, "question_v6": question_v6}


L1L2 = {
    "a.png": _item("Make the person pick up the cup", "cup", (40, 30, 50, 40), Q_A, f"{OCCUR}, {END}", [QA_A]),
    "b.png": _item("Make the person touch the kettle", "kettle", (50, 10, 70, 30), Q_B, f"{NOT_OCCUR}, {INITIAL}", ""),
}
L3 = {
    "c.png": _item("Make the person open the pot", "pot", (45, 35, 75, 55), Q_C, REASONING, [QA_C], "lid",
                   (60, 20, 70, 30)),
}

HUMANS = [Detection((10, 10, 30, 50), 0.6, "human"), Detection((12, 8, 34, 52), 0.9, "human")]
TOP_HUMAN = [12, 8, 34, 52]  # the highest score
# Six cup detections: the top 5 by score are 0.9, 0.7, 0.5, 0.4, 0.35 (0.3 is left out).
CUPS = [Detection((41, 31, 51, 41), 0.5, "cup"), Detection((42, 32, 52, 42), 0.9, "cup"),
        Detection((43, 33, 53, 43), 0.3, "cup"), Detection((44, 34, 54, 44), 0.7, "cup"),
        Detection((45, 35, 55, 45), 0.4, "cup"), Detection((46, 36, 56, 46), 0.35, "cup")]
RANKED_CUPS = [(42, 32, 52, 42), (44, 34, 54, 44), (41, 31, 51, 41), (45, 35, 55, 45), (46, 36, 56, 46)]
KETTLE_TRACKED = (48, 12, 68, 32)


def _yes(confidence, why="seen"):
    return json.dumps({"answer": "yes", "confidence": confidence, "reasoning": why})


def _no(why="not seen"):
    return json.dumps({"answer": "no", "confidence": 0.0, "reasoning": why})


def _match(best, identity, quality):
    return json.dumps({"best_match_id": best, "identity_score": identity, "quality_score": quality})


class StubGrounder:
    name = "stub"

    def __init__(self, fail: Exception | None = None):
        self.fail, self.sizes = fail, []

    def detect(self, image, prompt, *, box_threshold=0.3, text_threshold=0.25):
        if self.fail is not None:
            raise self.fail
        assert (box_threshold, text_threshold) == (0.3, 0.25)  # upstream's thresholds
        self.sizes.append(image.size)
        return {"human": HUMANS, "cup": CUPS}.get(prompt, [])

    def track(self, original, edited, box):
        return KETTLE_TRACKED if tuple(box) == (50, 10, 70, 30) else None


class StubJudge:
    """Answers from fixed tables; an Exception in a table is raised instead."""

    name = "stub"

    def __init__(self, **changes):
        self.interaction = {Q_A: [_no(), _yes(0.6), _yes(0.8, "the cup is lifted"), _no(), _yes(0.8, "tie")],
                            Q_B: [_yes(0.7, "the hand is on the kettle")],
                            Q_C: [_yes(0.6, "the lid is raised")]}
        self.matches = {("Make the person pick up the cup", "person"): _match(0, 0.9, 0.8),
                        ("Make the person pick up the cup", "cup"): _match(2, 1.0, 0.5),
                        ("Make the person touch the kettle", "person"): _match(0, 1.0, 1.0),
                        ("Make the person touch the kettle", "kettle"): _match(None, 0.4, 0.5),
                        ("Make the person open the pot", "person"): _match(0, 0.5, 1.0),
                        ("Make the person open the pot", "pot"): _match(0, 1.0, 0.9)}
        self.answers = {QA_A: '{"answer": "Yes", "confidence": "85%"}',
                        QA_C: '```json\n{"answer": "no", "confidence": 0.9}\n```'}
        for name, value in changes.items():
            getattr(self, name).update(value)
        self.calls, self.images = [], {}

    def yes_no(self, images, question, context=""):
        if len(images) == 2:
            self.calls.append(("interaction", question))
            self.images.setdefault(question, []).append(images)
            reply = self.interaction[question][sum(1 for c in self.calls if c == ("interaction", question)) - 1]
        else:
            self.calls.append(("qa", question))
            self.images[question] = images
            self.context = context
            reply = self.answers[question]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def match_score(self, before, after_candidates, entity, instruction):
        self.calls.append(("match", entity))
        reply = self.matches[(instruction, entity)]
        if isinstance(reply, Exception):
            raise reply
        return reply

    def analyze_video(self, image, frames, instruction, prompt):
        raise NotImplementedError

    def select_frame(self, frames, instruction):
        raise NotImplementedError


def _bench(tmp_path: Path, *, outputs=("a.png", "b.png", "c.png")) -> Path:
    root = tmp_path / "bench"
    for split, items in (("L1L2", L1L2), ("L3", L3)):
        (root / "images" / split).mkdir(parents=True)
        (root / "method_frames" / split).mkdir(parents=True)
        (root / ANNOTATION_FILES[split]).write_text(json.dumps(items), encoding="utf-8")
        for key in items:
            Image.new("RGB", SIZE, (200, 200, 200)).save(root / "images" / split / key)
            if key in outputs:
                # Edits at twice and at 1.5 times the size: the evaluator resizes them to 80 x 60.
                size = (160, 120) if split == "L1L2" else (120, 90)
                Image.new("RGB", size, (90, 90, 90)).save(root / "method_frames" / split / key)
    return root


def _run(root: Path, judge=None, grounder=None, **kwargs) -> dict:
    return evaluate_method(root, "method", root / "method_frames", grounder or StubGrounder(), judge or StubJudge(),
                           **kwargs)


# ---------------------------------------------------------------- the records, by hand


def test_records_hold_the_hand_computed_scores(tmp_path):
    root = _bench(tmp_path)
    grounder, judge = StubGrounder(), StubJudge()
    result = _run(root, judge, grounder, out=root / "records" / "method.json")
    a, b = result["records"]["L1L2"]["a.png"], result["records"]["L1L2"]["b.png"]
    c = result["records"]["L3"]["c.png"]

    # a: confidence_first over the top person x the 5 best cups; replies no, .6, .8, no, .8 -> I = .8,
    # kept pair = the first .8 (the third cup by score); H = .9 x .8, O = 1 x .5.
    assert a["mode"] == "confidence_first"
    assert a["max_yes_confidence"] == 0.8 and a["reasoning"] == "the cup is lifted"
    assert a["person_box"] == TOP_HUMAN and a["object_box"] == list(RANKED_CUPS[2])
    assert (a["person_box_source"], a["object_box_source"]) == ("detection", "detection")
    assert a["subject_similarity"] == pytest.approx(0.72) and a["object_similarity"] == 0.5
    assert (a["subject_identity_score"], a["subject_quality_score"]) == (0.9, 0.8)
    assert a["qa"] == [{"question": QA_A, "answer": "Yes", "confidence": 0.85}]  # "85%" read as 0.85
    assert a["generated_question"] == Q_A
    assert len(judge.images[Q_A]) == 5
    # Confidence first: the five interaction questions, then the two matches.
    assert judge.calls[:7] == [("interaction", Q_A)] * 5 + [("match", "person"), ("match", "cup")]

    # b: similarity_first (tagged relation_not_occur): both matches before the one interaction
    # question, on the matched pair; the kettle matched to no candidate keeps the tracked box.
    kettle = judge.calls.index(("match", "kettle"))
    assert judge.calls[kettle - 1:kettle + 2] == [("match", "person"), ("match", "kettle"), ("interaction", Q_B)]
    assert judge.calls.count(("interaction", Q_B)) == 1
    assert b["mode"] == "similarity_first" and b["max_yes_confidence"] == 0.7
    assert b["subject_similarity"] == 1.0 and b["object_similarity"] == pytest.approx(0.2)
    assert b["object_box"] == list(KETTLE_TRACKED) and b["object_box_source"] == "track"
    assert b["qa"] == []

    # c: the pot is neither tracked nor detected: the annotated box stands in.
    assert c["mode"] == "confidence_first" and c["max_yes_confidence"] == 0.6
    assert c["object_box"] == [45, 35, 75, 55] and c["object_box_source"] == "annotation"
    assert (c["subject_similarity"], c["object_similarity"]) == (0.5, 0.9)
    assert c["qa"] == [{"question": QA_C, "answer": "no", "confidence": 0.9}]

    # Every image the grounder saw was the edit resized to the original's size.
    assert set(grounder.sizes) == {SIZE}
    assert not [error for record in (a, b, c) for error in record if error.endswith("_error")]


def test_the_judge_sees_upstreams_boxes(tmp_path):
    root = _bench(tmp_path)
    judge = StubJudge()
    _run(root, judge)
    before, after = judge.images[Q_A][2]  # the pair kept
    band = before.height - SIZE[1]  # the title band above each image
    assert after.size == before.size == (80, 60 + band)
    # BEFORE: the annotated person (5, 5, 35, 55) blue, the cup (40, 30, 50, 40) red.
    assert before.getpixel((5, 30 + band)) == BLUE and before.getpixel((40, 35 + band)) == RED
    # AFTER: the top person (12, 8, 34, 52) blue, the third cup (41, 31, 51, 41) red.
    assert after.getpixel((12, 30 + band)) == BLUE and after.getpixel((41, 36 + band)) == RED
    # QA on c: the question speaks of the yellow box, so the tool (60, 20, 70, 30) is drawn on the edit.
    (qa_image,) = judge.images[QA_C]
    assert qa_image.size == SIZE and qa_image.getpixel((60, 25)) == YELLOW
    assert "[5, 5, 35, 55]" in judge.context and 'instruction was: "Make the person open the pot"' in judge.context


def test_scoring_the_written_file_gives_the_hand_computed_paper_table(tmp_path):
    root = _bench(tmp_path)
    out = root / "records" / "method.json"
    result = _run(root, out=out)
    scores = compute_scores(load_benchmark(root), read_records(out))
    table = {row["level"]: row for row in scores.paper_table()}
    # L1 (a, b): I = (.8 + .7) / 2 = .75; H = (.72 + 1) / 2 = .86; O = (.5 + .2) / 2 = .35.
    assert table["L1"] == pytest.approx({"level": "L1", "n": 2, "I": 0.75, "H": 0.86, "O": 0.35})
    # L2 (a pos_end, b pos_initial): I+Q&A = mean(min(.8, yes .85), I of b .7) = .75.
    assert table["L2"] == pytest.approx({"level": "L2", "n": 2, "I": 0.75, "I+Q&A": 0.75, "H": 0.86, "O": 0.35})
    # L3 (c): I = .6; its question answered "no" -> yes() = 0 -> I+Q&A = min(.6, 0) = 0.
    assert table["L3"] == pytest.approx({"level": "L3", "n": 1, "I": 0.6, "I+Q&A": 0.0, "H": 0.5, "O": 0.9})
    assert result["paper_table"] == scores.paper_table()
    assert "L1 0.7500, L2 0.7500, L3 0.0000" in result["summary"]
    # Written atomically: no temporary file is left beside it.
    assert sorted(p.name for p in out.parent.iterdir()) == ["method.json"]


# ---------------------------------------------------------------- errors are never zeros


def test_an_unparseable_reply_and_a_raising_role_become_errors(tmp_path):
    root = _bench(tmp_path)
    judge = StubJudge(interaction={Q_C: ["The person lifts the lid."]},
                      matches={("Make the person pick up the cup", "cup"): RuntimeError("endpoint down")},
                      answers={QA_A: RuntimeError("timed out")})
    out = root / "records" / "method.json"
    result = _run(root, judge, out=out)
    a, c = result["records"]["L1L2"]["a.png"], result["records"]["L3"]["c.png"]
    assert "no JSON object" in c["max_yes_confidence_error"] and "max_yes_confidence" not in c
    assert c["subject_similarity"] == 0.5  # the other steps still ran
    assert a["object_similarity_error"] == "the judge's object match failed: RuntimeError: endpoint down"
    assert "object_similarity" not in a and a["max_yes_confidence"] == 0.8
    assert a["qa"] == [{"question": QA_A, "answer": None, "confidence": None,
                        "error": "the judge failed: RuntimeError: timed out"}]
    assert result["failed"] == {"L1L2": ["a.png"], "L3": ["c.png"]}
    # Scored: the failed records are skipped, never counted as zero: L1 is b alone.
    table = {row["level"]: row for row in compute_scores(load_benchmark(root), read_records(out)).paper_table()}
    assert table["L1"] == pytest.approx({"level": "L1", "n": 2, "I": 0.7, "H": 1.0, "O": 0.2})
    assert table["L3"]["I"] is None and table["L3"]["I+Q&A"] is None


def test_a_raising_grounder_is_recorded_and_the_questions_still_asked(tmp_path):
    root = _bench(tmp_path)
    result = _run(root, grounder=StubGrounder(fail=OSError("weights missing")))
    a = result["records"]["L1L2"]["a.png"]
    assert a["grounding_error"] == "the grounder failed: OSError: weights missing"
    assert "max_yes_confidence" not in a and a["qa"][0]["confidence"] == 0.85


def test_a_missing_output_is_recorded_not_scored(tmp_path):
    root = _bench(tmp_path, outputs=("a.png", "c.png"))
    out = root / "records" / "method.json"
    result = _run(root, out=out)
    assert result["records"]["L1L2"]["b.png"] == {"output_missing": True}
    assert result["missing"] == {"L1L2": ["b.png"], "L3": []}
    table = {row["level"]: row for row in compute_scores(load_benchmark(root), read_records(out)).paper_table()}
    assert table["L1"] == pytest.approx({"level": "L1", "n": 2, "I": 0.8, "H": 0.72, "O": 0.5})
    assert "1 without an output" in result["summary"]


def test_an_edit_under_upstreams_other_names_is_found(tmp_path):
    folder = tmp_path / "L3"
    folder.mkdir()
    assert find_output(tmp_path, "L3", "x.jpg") is None
    (folder / "x_edited.png").write_bytes(b"")
    assert find_output(tmp_path, "L3", "x.jpg") == folder / "x_edited.png"
    (folder / "x.png").write_bytes(b"")
    assert find_output(tmp_path, "L3", "x.jpg") == folder / "x.png"


def test_qa_replies_are_read_like_the_other_replies():
    from engines.hoi.judge_replies import parse_answer as read_answer

    assert read_answer('Sure: {"answer": "no", "confidence": "0.3"}') == ("no", 0.3)
    assert read_answer('{"answer": "the lid is on the table", "confidence": 70}') == ("the lid is on the table", 0.7)
    for reply, problem in (("yes", "no JSON object"), ('{"confidence": 1}', "no answer"),
                           ('{"answer": "yes"}', "not a number"), ('{"answer": "yes", "confidence": 300}', "outside")):
        with pytest.raises(JudgeReplyError, match=problem):
            read_answer(reply)


# ---------------------------------------------------------------- resuming


def test_resume_skips_the_judged_items_and_redoes_the_failed(tmp_path):
    root = _bench(tmp_path)
    out = root / "records" / "method.json"
    first = _run(root, StubJudge(interaction={Q_C: ["unreadable"]}), out=out, limit=1)
    assert (first["judged"], list(first["records"]["L1L2"])) == (1, ["a.png"])
    second = _run(root, StubJudge(interaction={Q_C: ["unreadable"]}), out=out)
    assert (second["judged"], second["kept"]) == (2, 1)  # b and c judged, a kept
    assert second["records"]["L1L2"]["a.png"] == first["records"]["L1L2"]["a.png"]
    assert "max_yes_confidence_error" in second["records"]["L3"]["c.png"]
    judge = StubJudge()
    third = _run(root, judge, out=out)
    assert (third["judged"], third["kept"]) == (1, 2)  # c had an error: judged again
    assert {question for kind, question in judge.calls} == {Q_C, QA_C, "person", "pot"}
    assert third["records"]["L3"]["c.png"]["max_yes_confidence"] == 0.6
    fresh = _run(root, StubJudge(), out=out, resume=False)
    assert (fresh["judged"], fresh["kept"]) == (3, 0)


def test_a_records_file_of_another_method_is_refused(tmp_path):
    root = _bench(tmp_path)
    out = root / "records" / "method.json"
    out.parent.mkdir()
    out.write_text(json.dumps({"method": "other", "L1L2": {}}), encoding="utf-8")
    with pytest.raises(ValueError, match="'other', not 'method'"):
        _run(root, out=out)


# ---------------------------------------------------------------- the command


@roles.register("grounder", "test-evaluate-stub")
def _stub_grounder(**options):
    return StubGrounder()


@roles.register("judge", "test-evaluate-stub")
def _stub_judge(**options):
    _stub_judge.options = options
    return StubJudge()


def test_the_command_writes_the_records_where_the_layout_puts_them(dataset):
    root = _bench(dataset)
    parser = argparse.ArgumentParser()
    add_evaluate_arguments(parser)
    args = parser.parse_args(["--benchmark", str(root), "--method", "method", "--grounder", "test-evaluate-stub",
                              "--judge", "test-evaluate-stub", "--option", "judge.model=m1", "--no-progress"])
    result = run_evaluate(args)
    out = root / "records" / "method.json"  # <benchmark>/records/<method>.json, edits from <method>_frames
    assert result["out"] == str(out) and read_records(out).method == "method"
    assert _stub_judge.options == {"model": "m1"}
    assert result["summary"].startswith("method: 3 item(s) judged, 0 kept from before, 0 without an output")
    assert "records" not in result


def test_the_command_reads_and_writes_only_in_the_owned_folders(dataset, tmp_path):
    from engines.platform.files import FileRefused

    root = _bench(dataset)
    parser = argparse.ArgumentParser()
    add_evaluate_arguments(parser)
    base = ["--method", "method", "--grounder", "test-evaluate-stub", "--judge", "test-evaluate-stub", "--no-progress"]
    elsewhere = _bench(tmp_path / "elsewhere")
    with pytest.raises(FileRefused, match="--benchmark: .* is outside the folders the app reads from"):
        run_evaluate(parser.parse_args(["--benchmark", str(elsewhere), *base]))
    with pytest.raises(FileRefused, match="--outputs"):
        run_evaluate(parser.parse_args(["--benchmark", str(root), "--outputs", str(elsewhere / "method_frames"),
                                        *base]))
    for out in (tmp_path / "records.json", f"{root}/../../../../records.json", "shipped/hoi/records.json"):
        with pytest.raises(FileRefused, match="--out: .* is outside the folders the app writes to"):
            run_evaluate(parser.parse_args(["--benchmark", str(root), "--out", str(out), *base]))
    assert not (tmp_path / "records.json").exists()


def test_role_options_name_their_role():
    assert role_options(["judge.base_url=http://h:1/v1", "grounder.path=/m=1"]) == {
        "grounder": {"path": "/m=1"}, "judge": {"base_url": "http://h:1/v1"}}
    for bad in ("model=x", "editor.model=x", "judge.=x", "judge.model"):
        with pytest.raises(ValueError, match="grounder.KEY=VALUE or judge.KEY=VALUE"):
            role_options([bad])
