"""The planner–inspector loop: the gated agent (VideoSEAL) and the coupled baseline.

Gated (VideoSEAL's loop; docs/video.md, "Method: the planner–inspector loop"): each step the planner searches, inspects spans, or stops;
an inspection's verdict becomes the answer only if it passes the gate (``engines.video.gate``: an
option letter, confidence at least tau or a fixed-range question, every cited time inside the
inspected spans). At the last step with nothing accepted, an inspection of the best spans found
and those inspected before (at most 10) is forced, answer-only (upstream
``AGENT_FORCE_LAST_STEP_VISUAL_INSPECT``); if the planner stopped early or that names no option,
the whole video is inspected answer-only at ``max_frames / duration`` fps (upstream
``_forced_full_video_visual_inspect``). The answer is always an inspector's letter: the planner's
words are never taken as the answer.

Coupled: the same planner search and inspector, but the planner holds the answer authority (as
DVD's orchestrator, or VideoAgent): it may answer from the retrieved text alone, and it takes an
inspector's best letter without a gate.

Inspected spans are widened to at least 15 s and kept inside the video before the inspector sees
them (upstream ``normalize_window_min_width``); the trajectory records the widened spans.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace

from engines.platform.config_schema import check_fields
from engines.platform.progress import Progress
from engines.video.decode import VideoReader
from engines.video.gate import gate
from engines.video.questions import Question
from engines.video.roles import Inspect, Retrieve, Roles, hit_summary
from engines.video.spans import Span, merge, widen
from engines.video.trajectory import Final, Step, Trajectory

AGENTS = ("gated", "coupled")
MAX_FORCED_SPANS = 10  # upstream: the forced last inspection merges at most 10 earlier spans


@dataclass(frozen=True)
class AgentConfig:
    """One run's budget and gate. ``max_frames`` caps each inspection (upstream ``INSPECT_MAX_TOTAL_IMAGES``).

    Each field's metadata (``engines.platform.config_schema``) is its one declaration: the command
    line's option, the ``video.ask`` job's parameter and the bounds every caller meets.
    """

    agent: str = field(default="gated", metadata={"help": "gated (VideoSEAL) or the coupled baseline",
                                                  "choices": AGENTS})
    # Upstream run()'s default is 8; its runner script uses 16.
    max_steps: int = field(default=8, metadata={"help": "planner steps before the forced last inspection",
                                                "min": 1, "max": 64})
    max_frames: int = field(default=48, metadata={"help": "frames one inspection may look at", "min": 1, "max": 512})
    fps: float = field(default=2.0, metadata={  # upstream INSPECT_FPS
        "help": "frames per second an inspection samples", "gt": 0, "max": 30})
    tau: float = field(default=0.95, metadata={"help": "the gate's confidence threshold", "min": 0, "max": 1})
    min_width_s: float = field(default=15.0, metadata={"cli": False, "job": False})
    top_k: int = field(default=30, metadata={"cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)

    @property
    def budget(self) -> dict:
        return {"max_steps": self.max_steps, "max_frames": self.max_frames, "fps": self.fps}


class _Run:
    """One question's loop: the steps so far and how to record the next."""

    def __init__(self, question: Question, reader: VideoReader, roles: Roles, config: AgentConfig) -> None:
        self.question, self.reader, self.roles, self.config = question, reader, roles, config
        self.retriever = roles.retriever_for(reader.path)
        self.steps: list[Step] = []

    def widened(self, spans) -> tuple[Span, ...]:
        duration = self.reader.info.duration_s
        inside = [Span(min(s.start, duration), min(s.end, duration)) for s in spans]
        return tuple(merge(widen(s, self.config.min_width_s, duration) for s in inside))

    def retrieve(self, action: Retrieve, started: float) -> Step:
        hits = self.retriever.search(action.query, top_k=self.config.top_k)
        step = Step(len(self.steps) + 1, "retrieve", {"query": action.query}, action.thought,
                    round(time.perf_counter() - started, 4), hits=tuple(hits),
                    observation=hit_summary(hits[:self.roles.hits_shown]) or "no hits")
        self.steps.append(step)
        return step

    def inspect(self, spans, context: str, thought: str, started: float, *, answer_only: bool, forced: bool,
                fps: float | None = None, gated: bool = True) -> Step:
        spans = self.widened(spans)
        inspection = self.roles.inspector.inspect(self.reader, spans, self.question, context=context,
                                                  fps=fps or self.config.fps, max_frames=self.config.max_frames,
                                                  answer_only=answer_only)
        passed = reason = None
        if gated:
            result = gate(inspection.verdict, self.question.letters, spans, tau=self.config.tau,
                          fixed_range=self.question.fixed_range)
            passed, reason = result.passed, result.reason
        step = Step(len(self.steps) + 1, "inspect", {"spans": spans, "context": context}, thought,
                    round(time.perf_counter() - started, 4), frames=tuple(inspection.frames),
                    verdict=inspection.verdict, gate_passed=passed, gate_reason=reason, forced=forced,
                    observation=inspection.raw or _verdict_text(inspection.verdict))
        self.steps.append(step)
        return step

    def forced_spans(self) -> list[Span]:
        """The best unexplored hit and the spans inspected before, at most 10 in all."""
        inspected = [s for step in self.steps if step.action == "inspect" for s in step.spans]
        hits = [h.span for step in reversed(self.steps) if step.action == "retrieve" for h in step.hits]
        fresh = [s for s in hits if not any(s.start < i.end and s.end > i.start for i in inspected)][:1]
        return (fresh + inspected)[:MAX_FORCED_SPANS]


def _verdict_text(verdict) -> str:
    if verdict.status == "ANSWER":
        return f"Answer: {verdict.answer}\nConfidence: {verdict.confidence:.2f}\nEvidence: {verdict.evidence}"
    return (f"Answer: SEARCH_MORE\nConfidence: {verdict.confidence:.2f}\nMissing: {verdict.missing}\n"
            f"Next search: {'; '.join(verdict.next_queries)}")


def _gated(run: _Run) -> Final:
    config, question = run.config, run.question
    for number in range(1, config.max_steps + 1):
        started = time.perf_counter()
        if number == config.max_steps and number > 1:
            spans = run.forced_spans()
            if spans:
                step = run.inspect(spans, question.question, "Last step: inspect the best spans, answer only.",
                                   started, answer_only=True, forced=True)
                if step.verdict.answer in question.letters:
                    return Final(step.verdict.answer, step.i, "forced_last_step", _guessed(step.verdict))
                break
        action = run.roles.planner.act(question, tuple(run.steps), config.max_steps - number + 1)
        if isinstance(action, Retrieve):
            run.retrieve(action, started)
        elif isinstance(action, Inspect):
            step = run.inspect(action.spans, action.context, action.thought, started, answer_only=False, forced=False)
            if step.gate_passed:
                return Final(step.verdict.answer, step.i, "gated")
        else:
            run.steps.append(Step(len(run.steps) + 1, "finalize", {}, action.thought,
                                  round(time.perf_counter() - started, 4),
                                  observation="No inspection's verdict has passed the gate: the answer comes from "
                                              "an inspection of the whole video."))
            break
    started = time.perf_counter()
    whole = Span(0.0, run.reader.info.duration_s)
    fps = min(config.fps, config.max_frames / max(whole.length, 1e-6))
    step = run.inspect([whole], question.question, "Steps ran out: inspect the whole video, answer only.",
                       started, answer_only=True, forced=True, fps=fps)
    if step.verdict.answer in question.letters:
        return Final(step.verdict.answer, step.i, "full_video_fallback", _guessed(step.verdict))
    return Final(None, None, "none")


def _guessed(verdict) -> bool:
    """An answer-only verdict that rests on nothing seen: no confidence, or no frame cited."""
    return verdict.confidence <= 0.0 or not verdict.cited_times


def _coupled(run: _Run) -> Final:
    config, question = run.config, run.question
    for number in range(1, config.max_steps + 1):
        started = time.perf_counter()
        action = run.roles.planner.act(question, tuple(run.steps), config.max_steps - number + 1)
        if isinstance(action, Retrieve):
            run.retrieve(action, started)
        elif isinstance(action, Inspect):
            run.inspect(action.spans, action.context, action.thought, started, answer_only=True, forced=False,
                        gated=False)
        else:
            run.steps.append(Step(len(run.steps) + 1, "finalize", {"answer": action.answer}, action.thought,
                                  round(time.perf_counter() - started, 4)))
            if action.answer in question.letters:
                return Final(action.answer, _last_inspection(run), "coupled")
            break
    last = _last_inspection(run)
    if last is not None:
        return Final(run.steps[last - 1].verdict.answer, last, "coupled")
    return Final(None, None, "none")


def _last_inspection(run: _Run) -> int | None:
    return next((step.i for step in reversed(run.steps) if step.action == "inspect" and step.verdict is not None
                 and step.verdict.answer is not None), None)


def answer(question: Question, video_path: str, roles: Roles, config: AgentConfig = AgentConfig(), *,
           reader: VideoReader | None = None, run_id: str | None = None) -> Trajectory:
    """Run the agent on one question about the video at ``video_path``; its full trajectory."""
    own = reader is None
    reader = reader or VideoReader(video_path)
    if question.duration_s is None:  # the planner may place "near the end" only knowing where the end is
        question = replace(question, duration_s=reader.info.duration_s)
    started = time.perf_counter()
    try:
        run = _Run(question, reader, roles, config)
        final = _gated(run) if config.agent == "gated" else _coupled(run)
    finally:
        if own:
            reader.close()
    return Trajectory(
        run_id=run_id or uuid.uuid4().hex[:12], benchmark=question.benchmark, uid=question.uid,
        video_id=question.video_id, video_path=str(video_path), duration_s=reader.info.duration_s,
        question=question.question, options=question.options, gt_answer=question.answer,
        gt_spans=question.gt_spans, budget=config.budget, steps=tuple(run.steps), final=final,
        models={"planner": roles.planner.name, "inspector": roles.inspector.name}, agent=config.agent,
        config={**asdict(config), "seconds": round(time.perf_counter() - started, 3)})


def run_all(questions: list[Question], video_for: Callable[[Question], str], roles: Roles, config: AgentConfig, *,
            run_id: str | None = None, progress: Progress | None = None,
            on_done: Callable[[Trajectory], None] | None = None) -> list[Trajectory]:
    """Answer every question (one reader per video, reused), in order."""
    run_id = run_id or uuid.uuid4().hex[:12]
    readers: dict[str, VideoReader] = {}
    done = []
    try:
        for number, question in enumerate(questions, start=1):
            path = video_for(question)
            if path not in readers:
                readers[path] = VideoReader(path)
            trajectory = answer(question, path, roles, config, reader=readers[path], run_id=run_id)
            done.append(trajectory)
            if on_done is not None:
                on_done(trajectory)
            if progress is not None:
                progress(number, len(questions))
    finally:
        for reader in readers.values():
            reader.close()
    return done
