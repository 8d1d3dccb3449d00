"""The offline roles: the heuristic and coupled planners' decisions, the inspector's reading of a
question, drift measured from decoded frames, and the shipped frame model on the synthetic videos."""

from __future__ import annotations

import pytest

from engines.video import backends
from engines.video.decode import open_video
from engines.video.offline.heuristics import (
    CoupledHeuristicPlanner,
    HeuristicPlanner,
    _asked_head,
    _conditions,
    direction_of,
)
from engines.video.questions import Question
from engines.video.roles import FRAME_MODEL, Finalize, Inspect, Retrieve
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, generate
from engines.video.trajectory import Hit, Step, Verdict

QUESTION = Question(uid="q", video_id="v", question="What colour are the diamonds on screen while the narrator "
                    "talks about the kiln?", options=("red", "blue", "green", "purple"), answer="C",
                    benchmark="synthetic")


def retrieved(i, *spans, query="q"):
    return Step(i, "retrieve", {"query": query}, "", 0.0,
                hits=tuple(Hit(span, 1.0, f"clip {span.start:g}", "caption") for span in spans))


def inspected(i, span, verdict):
    return Step(i, "inspect", {"spans": [span]}, "", 0.0, verdict=verdict)


NOTHING = Verdict("SEARCH_MORE", None, 0.0, "", (), missing="no diamonds", search_more_type="SPAN_MISMATCH")


def test_the_heuristic_planner_searches_then_inspects_hits_best_first():
    planner = HeuristicPlanner()
    first = planner.act(QUESTION, (), 8)
    assert isinstance(first, Retrieve) and first.query == QUESTION.question
    history = (retrieved(1, Span(16, 32), Span(300, 316), Span(20, 36)),)
    assert planner.act(QUESTION, history, 7).spans == (Span(16, 32),)
    history += (inspected(2, Span(9, 39), NOTHING),)
    # [20, 36] overlaps what was inspected ([9, 39]): the next is [300, 316].
    assert planner.act(QUESTION, history, 6).spans == (Span(300, 316),)
    history += (inspected(3, Span(300, 316), NOTHING),)
    again = planner.act(QUESTION, history, 5)
    assert isinstance(again, Retrieve) and again.query == QUESTION.question + " red blue green purple"
    history += (retrieved(4, query=again.query),)
    assert isinstance(planner.act(QUESTION, history, 4), Finalize)


def test_a_question_that_names_a_time_is_inspected_there_first():
    named = Question(uid="q", video_id="v", question="What colour are the diamonds on screen at 00:12:05?",
                     options=("red", "blue"), answer="A", benchmark="synthetic")
    action = HeuristicPlanner().act(named, (), 8)
    assert isinstance(action, Inspect) and action.spans == (Span(723.0, 727.0),)


def test_the_inspectors_next_search_is_used_when_no_hit_is_left():
    verdict = Verdict("SEARCH_MORE", None, 0.0, "", (), missing="x", next_queries=("diamonds near the kiln",),
                      search_more_type="PARTIAL_EVIDENCE")
    history = (retrieved(1, Span(16, 32)), inspected(2, Span(16, 32), verdict))
    action = HeuristicPlanner().act(QUESTION, history, 6)
    assert isinstance(action, Retrieve) and action.query == "diamonds near the kiln"


def test_the_coupled_planner_answers_when_the_best_hit_names_one_option():
    history = (Step(1, "retrieve", {"query": "q"}, "", 0.0, hits=(
        Hit(Span(16, 32), 2.0, "Visual: 3 green diamonds drifting left.\nDialogue: Here we reach the kiln.",
            "caption"),)),)
    action = CoupledHeuristicPlanner().act(QUESTION, history, 7)
    assert isinstance(action, Finalize) and action.answer == "C"
    both = (Step(1, "retrieve", {"query": "q"}, "", 0.0, hits=(
        Hit(Span(16, 32), 2.0, "Visual: green diamonds. Then red diamonds.", "caption"),)),)
    assert isinstance(CoupledHeuristicPlanner().act(QUESTION, both, 7), Inspect)  # two options named: look


def test_what_the_inspector_reads_from_a_question():
    assert _asked_head(["red", "Blue", "green"]) == "colour"
    assert _asked_head(["1", "2", "3", "4"]) == "count"
    assert _asked_head(["left", "up", "they do not move"]) == "direction"
    assert _asked_head(["ROCKET", "piano"]) == "word"
    assert _asked_head(["a cat", "a dog"]) is None
    assert _conditions("How many blue diamonds are on screen?") == {"colour": "blue", "shape": "diamond"}
    assert _conditions("Which word is written on the screen?") == {}


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    out = tmp_path_factory.mktemp("offline")
    [script] = generate(out, SyntheticConfig(minutes=6, seed=8))
    return out / f"{script.video_id}.mp4", script


def test_drift_is_measured_from_decoded_frames(video):
    path, script = video
    checked = 0
    with open_video(path) as reader:
        for event in script.events:
            t = event.span.start + 3.0
            got = direction_of(reader.frame_at(t), reader.frame_at(t + 0.5), event.colour)
            assert got == (event.direction or "still"), (event, got)
            checked += 1
    assert checked >= 4


def test_unknown_roles_are_refused_with_the_known_names():
    with pytest.raises(ValueError, match="unknown planner 'oracle'; choose one of coupled-heuristic, heuristic"):
        backends.planner("oracle")
    assert "frame-model" in backends.names("inspector")


@pytest.mark.skipif(not FRAME_MODEL.is_file(), reason="the shipped frame model is written by train-inspector")
def test_the_shipped_inspector_answers_on_the_event_and_searches_more_elsewhere(video):
    path, script = video
    inspector = backends.inspector()
    letters = "ABCD"
    with open_video(path) as reader:
        for event in [e for e in script.events if e.topic][:3]:
            options = ("red", "blue", "green", "purple") if event.colour in ("red", "blue", "green", "purple") \
                else (event.colour, "red", "blue", "green")
            question = Question(uid="q", video_id="v", question=f"What colour are the {event.shape}s on screen?",
                                options=options, answer=letters[options.index(event.colour)], benchmark="synthetic")
            seen = inspector.inspect(reader, [event.span], question)
            assert (seen.verdict.status, seen.verdict.answer) == ("ANSWER", question.answer), (event, seen.verdict)
            assert seen.verdict.confidence >= 0.95 and all(event.span.contains(t) for t in seen.verdict.cited_times)
        quiet = Span(0.0, script.events[0].span.start - 1.0)
        nothing = inspector.inspect(reader, [quiet], QUESTION)
        assert (nothing.verdict.status, nothing.verdict.search_more_type) == ("SEARCH_MORE", "SPAN_MISMATCH")


def test_a_span_where_the_narrator_only_promises_to_come_back_is_not_the_answer(tmp_path):
    # Find a key event whose misleading mention falls inside the distractor after it: there the same
    # shape is on screen in another colour, and only the narration tells the two apart.
    for seed in range(40):
        out = tmp_path / str(seed)
        [script] = generate(out, SyntheticConfig(minutes=3, seed=seed))
        for i, event in enumerate(script.events[:-1]):
            after = script.events[i + 1]
            promise = [s for s in script.subtitles if event.topic and event.topic in s.text and "later" in s.text]
            if event.topic and promise and after.span.contains(promise[0].span.start):
                break
        else:
            continue
        break
    else:
        pytest.fail("no distractor with the misleading mention in 40 seeds")
    colours = [event.colour, after.colour] + [c for c in ("red", "blue", "green", "purple", "yellow", "orange")
                                              if c not in (event.colour, after.colour)][:2]
    question = Question(uid="q", video_id=script.video_id, question=f"What colour are the {event.shape}s on screen "
                        f"while the narrator talks about the {event.topic}?", options=tuple(colours), answer="A",
                        benchmark="synthetic")
    inspector = backends.inspector()
    with open_video(out / f"{script.video_id}.mp4") as reader:
        there = inspector.inspect(reader, [after.span], question)
        here = inspector.inspect(reader, [event.span], question)
        forced = inspector.inspect(reader, [after.span], question, answer_only=True)
    assert there.verdict.status == "SEARCH_MORE" and there.verdict.search_more_type == "SPAN_MISMATCH"
    assert f"the narrator does not talk about the {event.topic}" in there.verdict.missing
    assert "come back to the" in there.verdict.missing  # what was heard instead
    assert (here.verdict.status, here.verdict.answer) == ("ANSWER", "A")
    assert forced.verdict.answer == "B"  # forced, it reads the frames alone: the distractor's colour
