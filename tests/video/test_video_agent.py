"""The agent loop with scripted roles: what the gate lets through, the forced last inspection, the
full-video fallback, the planner's words never taken as the gated answer, and the coupled baseline."""

from __future__ import annotations

import pytest

from engines.video.agent import AgentConfig, answer
from engines.video.decode import open_video
from engines.video.questions import Question
from engines.video.roles import Finalize, Inspect, Inspection, Retrieve, Roles
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, generate
from engines.video.trajectory import FrameRef, Hit, Verdict


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    out = tmp_path_factory.mktemp("agent")
    [script] = generate(out, SyntheticConfig(minutes=2, seed=2))
    return str(out / f"{script.video_id}.mp4")  # 120 s


QUESTION = Question(uid="q1", video_id="v", question="What colour are the kites?", options=("red", "blue", "green"),
                    answer="B", gt_spans=(Span(40, 50),), benchmark="synthetic", duration_s=120.0)


def answered(letter, confidence, cited):
    return Verdict("ANSWER", letter, confidence, f"the kites are {letter} at {cited}", tuple(cited))


def search_more():
    return Verdict("SEARCH_MORE", None, 0.0, "", (), missing="no kites", search_more_type="SPAN_MISMATCH")


class ScriptedPlanner:
    name = "scripted"

    def __init__(self, actions):
        self.actions = list(actions)
        self.seen = []

    def act(self, question, history, steps_left):
        self.seen.append((len(history), steps_left))
        return self.actions.pop(0) if self.actions else Finalize("out of script")


class ScriptedInspector:
    name = "scripted"

    def __init__(self, verdicts):
        self.verdicts = list(verdicts)
        self.calls = []

    def inspect(self, reader, spans, question, *, context="", fps=2.0, max_frames=48, answer_only=False):
        self.calls.append({"spans": tuple(spans), "fps": fps, "max_frames": max_frames, "answer_only": answer_only})
        verdict = self.verdicts.pop(0)
        return Inspection(verdict, [FrameRef(spans[0].start + 1.0, None)])


class FixedRetriever:
    def __init__(self, spans):
        self.spans = spans

    def search(self, query, *, top_k=30):
        return [Hit(span, 1.0 - 0.1 * k, f"text {k}", "caption") for k, span in enumerate(self.spans)][:top_k]


def roles(planner, inspector, hits=(Span(0, 16), Span(40, 56))):
    return Roles(planner, inspector, lambda path: FixedRetriever(list(hits)))


def test_a_verdict_that_passes_the_gate_is_the_answer(video):
    planner = ScriptedPlanner([Retrieve("kites"), Inspect((Span(0, 16),)), Inspect((Span(44, 46),))])
    inspector = ScriptedInspector([search_more(), answered("B", 0.97, [45.0])])
    t = answer(QUESTION, video, roles(planner, inspector))
    assert (t.final.answer, t.final.authorised_by_step, t.final.mode) == ("B", 3, "gated")
    assert [s.action for s in t.steps] == ["retrieve", "inspect", "inspect"]
    # A 2 s span is widened to 15 s around its centre before the inspector sees it, and recorded so.
    assert inspector.calls[1]["spans"] == (Span(37.5, 52.5),) and t.steps[2].spans == (Span(37.5, 52.5),)
    assert t.steps[1].gate_passed is False and t.steps[1].gate_reason == "the inspector asked to search more"
    assert t.steps[2].gate_passed is True and not inspector.calls[1]["answer_only"]
    assert [len(s.hits) for s in t.steps] == [2, 0, 0] and "text 0" in t.steps[0].observation


def test_a_confident_verdict_citing_a_time_outside_the_spans_is_refused(video):
    planner = ScriptedPlanner([Inspect((Span(40, 56),)), Inspect((Span(40, 56),))])
    inspector = ScriptedInspector([answered("B", 0.99, [90.0]), answered("B", 0.99, [41.0])])
    t = answer(QUESTION, video, roles(planner, inspector))
    assert t.steps[0].gate_passed is False
    assert t.steps[0].gate_reason == "cited time 00:01:30 lies outside the inspected spans"
    assert (t.final.authorised_by_step, t.final.mode) == (2, "gated")


def test_at_the_last_step_the_best_spans_are_inspected_answer_only(video):
    planner = ScriptedPlanner([Retrieve("kites"), Inspect((Span(0, 16),)), Inspect((Span(0, 16),))])
    inspector = ScriptedInspector([answered("B", 0.5, [5.0]), answered("C", 0.6, [45.0])])
    t = answer(QUESTION, video, roles(planner, inspector), AgentConfig(max_steps=3))
    # Step 3 is forced: the best hit not yet inspected ([40, 56]) and the span inspected before ([0, 16]).
    assert inspector.calls[1] == {"spans": (Span(0, 16), Span(40, 56)), "fps": 2.0, "max_frames": 48,
                                  "answer_only": True}
    assert t.steps[2].forced is True
    assert (t.final.answer, t.final.authorised_by_step, t.final.mode) == ("C", 3, "forced_last_step")
    assert planner.seen == [(0, 3), (1, 2)]  # the planner was not asked at the forced step


def test_a_planner_that_stops_early_leads_to_the_whole_video_answer_only(video):
    planner = ScriptedPlanner([Retrieve("kites"), Finalize("I think it is red", answer="A")])
    inspector = ScriptedInspector([answered("B", 0.3, [60.0])])
    t = answer(QUESTION, video, roles(planner, inspector), AgentConfig(max_frames=24))
    # The planner's "A" is never the gated agent's answer: the whole video decides, 24 frames over 120 s = 0.2 fps.
    assert [s.action for s in t.steps] == ["retrieve", "finalize", "inspect"]
    assert inspector.calls == [{"spans": (Span(0, 120),), "fps": pytest.approx(0.2), "max_frames": 24,
                                "answer_only": True}]
    assert (t.final.answer, t.final.authorised_by_step, t.final.mode) == ("B", 3, "full_video_fallback")


def test_a_single_step_budget_has_no_forced_step_but_still_a_fallback(video):
    planner = ScriptedPlanner([Inspect((Span(40, 56),))])
    inspector = ScriptedInspector([answered("B", 0.5, [41.0]), answered("C", 0.4, [10.0])])
    t = answer(QUESTION, video, roles(planner, inspector), AgentConfig(max_steps=1))
    assert [s.forced for s in t.steps] == [False, True]
    assert t.final.mode == "full_video_fallback" and t.final.answer == "C"


def test_the_coupled_planner_may_answer_from_text_alone(video):
    planner = ScriptedPlanner([Retrieve("kites"), Finalize("the caption says blue", answer="B")])
    t = answer(QUESTION, video, roles(planner, ScriptedInspector([])), AgentConfig(agent="coupled"))
    assert (t.final.answer, t.final.authorised_by_step, t.final.mode) == ("B", None, "coupled")
    assert t.agent == "coupled"


def test_the_coupled_planner_takes_an_inspectors_letter_without_a_gate(video):
    planner = ScriptedPlanner([Inspect((Span(40, 56),)), Finalize("go with it", answer="C")])
    inspector = ScriptedInspector([answered("C", 0.2, [45.0])])
    t = answer(QUESTION, video, roles(planner, inspector), AgentConfig(agent="coupled"))
    assert inspector.calls[0]["answer_only"] is True and t.steps[0].gate_passed is None
    assert (t.final.answer, t.final.authorised_by_step, t.final.mode) == ("C", 1, "coupled")


def test_the_trajectory_records_the_run(video):
    planner = ScriptedPlanner([Inspect((Span(40, 56),))])
    t = answer(QUESTION, video, roles(planner, ScriptedInspector([answered("B", 0.96, [45.0])])),
               AgentConfig(max_steps=4, max_frames=16), run_id="run-1")
    assert (t.run_id, t.uid, t.gt_answer, t.duration_s, t.video_path) == ("run-1", "q1", "B", 120.0, video)
    assert t.budget == {"max_steps": 4, "max_frames": 16, "fps": 2.0}
    assert t.models == {"planner": "scripted", "inspector": "scripted"}


@pytest.mark.parametrize(("settings", "message"), [
    ({"agent": "solo"}, "agent must be one of gated, coupled, got 'solo'"),
    ({"max_steps": 0}, "max_steps must be from 1 to 64, got 0"),
    ({"max_frames": 1000}, "max_frames must be from 1 to 512, got 1000"),
    ({"fps": 0}, "fps must be above 0 and at most 30, got 0"),
    ({"tau": 1.5}, "tau must be from 0 to 1, got 1.5"),
])
def test_bad_settings_are_refused(settings, message):
    with pytest.raises(ValueError) as raised:
        AgentConfig(**settings)
    assert str(raised.value) == message


def test_the_reader_reports_the_fixture_length(video):
    with open_video(video) as reader:
        assert reader.info.duration_s == 120.0
