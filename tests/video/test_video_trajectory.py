"""The run record ``lvqa-traj/1``: round trips through JSON and JSONL, the convenience properties,
and validation errors that name the field path and the file line."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from engines.platform.formats import format_error
from engines.video.spans import Span
from engines.video.trajectory import (
    SCHEMA,
    Final,
    FrameRef,
    Hit,
    Step,
    Trajectory,
    TrajectoryFormatError,
    Verdict,
    append_jsonl,
    from_json,
    read_jsonl,
    to_json,
    write_jsonl,
)

OPTIONS = ("a blue truck", "a red car", "a white van", "a green bus")


def full_trajectory(uid: str = "lvb-0001") -> Trajectory:
    """Every kind of step: retrieve (with hits), a SEARCH_MORE inspect, a gated inspect, a finalize."""
    return Trajectory(
        run_id="run-2026-01-01",
        benchmark="lvbench",
        uid=uid,
        video_id="vid42",
        video_path="/data/videos/vid42.mp4",
        duration_s=600.0,
        question="What vehicle parks by the gate?",
        options=OPTIONS,
        gt_answer="B",
        gt_spans=(Span(15.0, 30.0), Span(100.0, 100.0)),
        budget={"max_steps": 8, "max_frames": 48, "fps": 2.0},
        steps=(
            Step(1, "retrieve", {"query": "vehicle parking by the gate"}, "Look for the gate first.", 0.25,
                 hits=(Hit(Span(0.0, 16.0), 0.91, "Visual: a red car near a gate", "caption"),
                       Hit(Span(100.0, 116.0), 0.5, "GATE 3", "ocr")),
                 observation="Span relevance: 00:00:00-00:00:16 high"),
            Step(2, "inspect", {"spans": (Span(100.0, 115.0),), "context": "gate sign seen"}, "Check the OCR hit.", 3.5,
                 frames=(FrameRef(100.0, "frames/100.000.jpg"), FrameRef(107.5, None)),
                 verdict=Verdict("SEARCH_MORE", None, 0.4, "Only a sign at 00:01:40.", (100.0,),
                                 "the vehicle", ("red car at the gate",), "SPAN_MISMATCH"),
                 gate_passed=False, gate_reason="the inspector asked to search more"),
            Step(3, "inspect", {"spans": (Span(10.0, 20.0),), "context": ""}, "Check the caption hit.", 4.0,
                 frames=(FrameRef(10.0, "frames/10.000.jpg"), FrameRef(15.0, "frames/15.000.jpg")),
                 verdict=Verdict("ANSWER", "B", 0.97, "At 00:00:15 a red car parks by the gate.", (15.0,)),
                 gate_passed=True, gate_reason="passed"),
            Step(4, "finalize", {}, "The inspector answered B.", 0.1, gate_passed=True),
        ),
        final=Final("B", 3, "gated"),
        models={"planner": "stub-planner", "inspector": "stub-inspector"},
        metrics={"correct": True, "tIoU": 0.25},
        config={"retriever": "bm25", "top_k": 30},
    )


# --- round trips -------------------------------------------------------------------------------------


def test_to_json_layout_follows_the_documented_record():
    obj = to_json(full_trajectory())
    assert list(obj)[0] == "schema" and obj["schema"] == SCHEMA == "lvqa-traj/1"
    assert obj["gt_spans"] == [[15.0, 30.0], [100.0, 100.0]]
    assert obj["options"] == list(OPTIONS)
    assert obj["steps"][0]["hits"][1] == {"s": 100.0, "e": 116.0, "score": 0.5, "text": "GATE 3", "source": "ocr"}
    assert obj["steps"][1]["args"] == {"spans": [[100.0, 115.0]], "context": "gate sign seen"}
    assert obj["steps"][1]["frames"][1] == {"t": 107.5, "path": None}
    assert obj["steps"][2]["verdict"]["cited_times"] == [15.0]
    assert obj["steps"][0]["verdict"] is None
    assert obj["final"] == {"answer": "B", "authorised_by_step": 3, "mode": "gated"}
    json.dumps(obj, allow_nan=False)  # plain JSON all the way down


def test_json_round_trip_equals_original():
    original = full_trajectory()
    assert from_json(to_json(original)) == original
    assert from_json(json.loads(json.dumps(to_json(original)))) == original


def test_jsonl_write_read_round_trip_and_atomic_replace(tmp_path):
    path = tmp_path / "runs" / "run.jsonl"
    first, second = full_trajectory("q1"), full_trajectory("q2")
    write_jsonl([first, second], path)
    assert path.read_text(encoding="utf-8").count("\n") == 2
    assert read_jsonl(path) == [first, second]
    write_jsonl([second], path)  # replaces, does not append
    assert read_jsonl(path) == [second]
    assert sorted(p.name for p in path.parent.iterdir()) == ["run.jsonl"]  # no temporary file left


def test_append_jsonl_adds_one_line_each(tmp_path):
    path = tmp_path / "run.jsonl"
    append_jsonl(full_trajectory("q1"), path)
    append_jsonl(full_trajectory("q2"), path)
    assert [t.uid for t in read_jsonl(path)] == ["q1", "q2"]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 2


def test_constructor_normalises_lists_and_pairs():
    step = Step(1, "inspect", {"spans": [[10, 20]], "context": ""}, "", 1)
    assert step.args["spans"] == (Span(10.0, 20.0),) and step.latency_s == 1.0
    verdict = Verdict("ANSWER", "B", 1, "at 00:00:15", [15])
    assert verdict.cited_times == (15.0,) and verdict.confidence == 1.0
    traj = full_trajectory()
    same = Trajectory(**{**traj.__dict__, "options": list(OPTIONS), "gt_spans": [[15, 30], [100, 100]],
                         "steps": list(traj.steps)})
    assert same == traj


# --- properties --------------------------------------------------------------------------------------


def test_span_properties():
    traj = full_trajectory()
    assert traj.inspected_spans == (Span(100.0, 115.0), Span(10.0, 20.0))
    assert traj.retrieved_spans == (Span(0.0, 16.0), Span(100.0, 116.0))
    assert traj.authorising_spans == (Span(10.0, 20.0),)
    assert traj.authorising_verdict.answer == "B"
    assert traj.option_letters == ("A", "B", "C", "D")
    assert traj.option_text("B") == "a red car" and traj.option_text("E") is None
    assert traj.frames_used == 4


def test_no_authorising_step_gives_empty_spans():
    traj = full_trajectory()
    unanswered = Trajectory(**{**traj.__dict__, "final": Final(None, None, "none")})
    assert unanswered.authorising_spans == () and unanswered.authorising_verdict is None
    coupled = Trajectory(**{**traj.__dict__, "agent": "coupled", "final": Final("B", None, "coupled")})
    assert coupled.authorising_spans == () and coupled.authorising_verdict is None


# --- validation --------------------------------------------------------------------------------------


def broken(edit) -> dict:
    obj = json.loads(json.dumps(to_json(full_trajectory())))
    edit(obj)
    return obj


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda o: o["steps"][2]["verdict"].__setitem__("confidence", 1.5),
         "steps[2].verdict.confidence: must be at most 1 (got 1.5)"),
        (lambda o: o["steps"][2]["verdict"].__setitem__("confidence", "0.9"),
         "steps[2].verdict.confidence: must be a number (got '0.9')"),
        (lambda o: o["steps"][1]["verdict"].__setitem__("search_more_type", "OTHER"),
         "steps[1].verdict.search_more_type: must be one of"),
        (lambda o: o["steps"][2]["verdict"].__setitem__("answer", None),
         "steps[2].verdict.answer: must be the answered option letters when status is ANSWER"),
        (lambda o: o["steps"][0]["hits"][1].__setitem__("e", 90.0),
         "steps[0].hits[1].span: a span must satisfy 0 <= start <= end"),  # the file's s and e
        (lambda o: o["steps"][0]["hits"][0].pop("score"), "steps[0].hits[0].score: is missing"),
        (lambda o: o["steps"][1]["args"]["spans"].__setitem__(0, [5.0]),
         "steps[1].args.spans[0]: must be a [start, end] pair of seconds"),
        (lambda o: o["steps"][1]["frames"][0].__setitem__("t", -1),
         "steps[1].frames[0].t: must be at least 0 (got -1)"),
        (lambda o: o["steps"][0].__setitem__("action", "seek"), "steps[0].action: must be one of"),
        (lambda o: o["steps"][0]["args"].pop("query"), "steps[0].args.query: is missing"),
        (lambda o: o["steps"][3].__setitem__("i", 2), "steps[3].i: must be above the previous step's i (3)"),
        (lambda o: o["steps"][0].__setitem__("frames", [{"t": 1.0, "path": None}]),
         "steps[0].frames: only an inspect step has frames"),
        (lambda o: o["steps"][0].__setitem__("colour", "red"), "steps[0].colour: is not a field of lvqa-traj/1"),
        (lambda o: o["gt_spans"].__setitem__(1, [30.0, 20.0]), "gt_spans[1]: a span must satisfy 0 <= start <= end"),
        (lambda o: o.__setitem__("gt_answer", "E"), "gt_answer: must be one of 'A', 'B', 'C', 'D', null (got 'E')"),
        (lambda o: o.__setitem__("duration_s", 0), "duration_s: must be above 0 (got 0)"),
        (lambda o: o["budget"].pop("fps"), "budget.fps: is missing"),
        (lambda o: o["models"].pop("inspector"), "models.inspector: is missing"),
        (lambda o: o.pop("question"), "question: is missing"),
        (lambda o: o.__setitem__("schema", "lvqa-traj/0"), "schema: must be 'lvqa-traj/1' (got 'lvqa-traj/0')"),
        (lambda o: o["final"].__setitem__("mode", "planner"), "final.mode: must be one of"),
        (lambda o: o["final"].__setitem__("authorised_by_step", 1),
         "final.authorised_by_step: names step 1, a retrieve step (must be an inspect step)"),
        (lambda o: o["final"].__setitem__("authorised_by_step", 9),
         "final.authorised_by_step: names step 9, which is not in steps"),
        (lambda o: o["final"].update(answer=None), "final.answer: is null but mode is 'gated'"),
        (lambda o: o["final"].update(mode="coupled", authorised_by_step=None),
         "final.mode: is 'coupled' but the agent is 'gated'"),
    ],
)
def test_from_json_errors_name_the_field_path(edit, message):
    with pytest.raises(TrajectoryFormatError) as info:
        from_json(broken(edit))
    assert str(info.value).startswith(message), str(info.value)


def test_format_error_is_a_value_error_with_its_path():
    with pytest.raises(ValueError) as info:
        from_json(broken(lambda o: o["steps"][2]["verdict"].__setitem__("confidence", 1.5)))
    assert info.value.field == "steps[2].verdict.confidence"
    assert info.value.problem == "must be at most 1 (got 1.5)"


def test_constructor_errors_name_the_field():
    def problem(make) -> str:
        with pytest.raises(ValidationError) as info:
            make()
        return str(format_error(info.value, format_name=SCHEMA))

    assert problem(lambda: Verdict(status="ANSWER", answer="B", confidence=1.2, evidence="")) == (
        "confidence: must be at most 1 (got 1.2)")  # given by position, a value's path is its place ("[2]")
    assert problem(lambda: Verdict("SEARCH_MORE", "B", 0.5, "", ())).startswith(
        "answer: must be null when status is SEARCH_MORE")
    assert problem(lambda: Verdict("ANSWER", "B", 0.99, "", (), search_more_type="VISUAL_UNCLEAR")) == (
        "search_more_type: must be null when status is ANSWER")
    assert problem(lambda: Step(i=1, action="inspect", args={"spans": []}, planner_thought="", latency_s=0.0)) == (
        "args.spans: must name at least one span")
    assert problem(lambda: Step(1, "inspect", {"spans": [[0, 15]]}, "", 0.0,
                                hits=(Hit(Span(0, 1), 1.0, "", "caption"),))).startswith(
        "hits: only a retrieve step has hits")
    assert problem(lambda: Final("B", None, "none")).startswith("mode: is 'none' but an answer")
    assert problem(lambda: Final("B", None, "gated")).startswith("authorised_by_step: must name the inspect step")
    assert problem(lambda: Step(i=True, action="retrieve", args={"query": "q"}, planner_thought="", latency_s=0.0)) == (
        "i: must be a whole number (got True)")


def test_read_jsonl_names_file_and_line(tmp_path):
    path = tmp_path / "run.jsonl"
    good = json.dumps(to_json(full_trajectory()))
    bad_field = json.dumps(broken(lambda o: o["final"].__setitem__("mode", "planner")))
    path.write_text(good + "\n\n" + bad_field + "\n", encoding="utf-8")  # the bad record is on line 3
    with pytest.raises(TrajectoryFormatError) as info:
        read_jsonl(path)
    assert str(info.value).startswith(f"{path}, line 3: final.mode: must be one of")
    assert info.value.source == f"{path}, line 3" and info.value.field == "final.mode"

    path.write_text(good + "\n" + good[:40] + "\n", encoding="utf-8")  # torn second line
    with pytest.raises(TrajectoryFormatError, match=r", line 2: not valid JSON"):
        read_jsonl(path)


def test_writing_a_non_finite_number_fails_before_touching_the_file(tmp_path):
    path = tmp_path / "run.jsonl"
    append_jsonl(full_trajectory("q1"), path)
    traj = full_trajectory("q2")
    nan_metrics = Trajectory(**{**traj.__dict__, "metrics": {"tIoU": float("nan")}})
    with pytest.raises(ValueError):
        append_jsonl(nan_metrics, path)
    with pytest.raises(ValueError):
        write_jsonl([nan_metrics], path)
    assert [t.uid for t in read_jsonl(path)] == ["q1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.jsonl"]
