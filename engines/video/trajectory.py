"""The run record of the long-video agent: one trajectory per question, one JSON object per line.

Schema ``"lvqa-traj/1"`` (docs/video.md, "Method: the trajectory record"), modelled on the
upstream VideoSEAL record (``videoseal/utils/agent/trajectory.py``: a trajectory of steps, each an
action and its observation) but flattened to what the viewer and the metrics read: the question
and its ground truth, the budget, every planner action with what it returned (retrieval hits,
inspected frames, the inspector's verdict and whether the answer gate let it through) and the
final answer with the step that authorised it.

Layout of one line (spans are ``[start, end]`` pairs of seconds)::

    {"schema": "lvqa-traj/1", "run_id", "benchmark", "uid", "video_id", "video_path", "duration_s",
     "question", "options": [...], "gt_answer", "gt_spans": [[s, e], ...],
     "budget": {"max_steps", "max_frames", "fps"},
     "steps": [{"i", "action": "retrieve"|"inspect"|"finalize", "args", "planner_thought",
                "latency_s", "observation", "hits": [{"s", "e", "score", "text", "source"}],
                "frames": [{"t", "path"}], "verdict": {...} | null, "gate_passed", "gate_reason",
                "forced"}],
     "final": {"answer", "authorised_by_step", "mode", "guess"?}, "models": {"planner", "inspector"},
     "metrics": {...} | null, "agent": "gated"|"coupled", "config": {...}}

``args`` is ``{"query": str}`` for a retrieve step and ``{"spans": [[s, e], ...], "context": str}``
for an inspect step. The spans of an inspect step are the spans whose frames the inspector looked
at (after its widening to ``MIN_WIDTH_S``); the groundedness metrics are computed from them.

Every dataclass checks its fields on construction; :func:`from_json` and :func:`read_jsonl` raise
:class:`TrajectoryFormatError` naming the field path (``steps[2].verdict.confidence``) and, for a
file, the line.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.platform.files import echo, json_depth_problem
from engines.video.spans import Span, TimeFormatError

SCHEMA = "lvqa-traj/1"

ACTIONS = ("retrieve", "inspect", "finalize")
STATUSES = ("ANSWER", "SEARCH_MORE")
# The typed SEARCH_MORE variant of the inspector prompt (upstream ``visual_inspect_search_more_typed.txt``).
SEARCH_MORE_TYPES = ("SPAN_MISMATCH", "PARTIAL_EVIDENCE", "VISUAL_UNCLEAR", "IDENTITY_AMBIGUOUS", "REPEATED_FAIL")
# gated: an inspection's verdict passed the gate; forced_last_step: the verdict of the inspection forced
# at step max_steps-1; full_video_fallback: the inspection of the whole video after the steps ran out;
# coupled: the planner answered by itself (the coupled baseline; its ``authorised_by_step`` names the
# inspection whose verdict it had last seen, or is null when it answered from the text alone); none: no answer.
FINAL_MODES = ("gated", "forced_last_step", "full_video_fallback", "coupled", "none")
AGENTS = ("gated", "coupled")
HIT_SOURCES = ("caption", "ocr", "frame")  # the values docs/video.md names; any string is accepted


class TrajectoryFormatError(ValueError):
    """A trajectory record that does not follow ``lvqa-traj/1``.

    ``path`` names the field (``steps[2].verdict.confidence``), ``source`` the file and line when the
    record was read from one; ``str(error)`` joins them: ``"run.jsonl, line 3: steps[2].verdict.confidence:
    must be a number from 0 to 1 (got 1.5)"``.
    """

    def __init__(self, path: str, problem: str, source: str = "") -> None:
        self.path, self.problem, self.source = path, problem, source
        parts = [part for part in (source, path) if part]
        super().__init__(": ".join([*parts, problem]))

    def within(self, prefix: str) -> TrajectoryFormatError:
        """The same error one level further out, e.g. ``confidence`` within ``steps[2].verdict``."""
        if not self.path:
            path = prefix
        elif self.path.startswith("["):
            path = prefix + self.path
        else:
            path = f"{prefix}.{self.path}"
        return TrajectoryFormatError(path, self.problem, self.source)


@contextmanager
def _within(prefix: str) -> Iterator[None]:
    try:
        yield
    except TrajectoryFormatError as err:
        raise err.within(prefix) from None


# ---------------------------------------------------------------------------------------------------
# Field checks shared by the dataclasses (each returns the value in its stored form).


def _number(value: Any, path: str, rule: str = "a number", ok=lambda v: True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or not ok(value):
        raise TrajectoryFormatError(path, f"must be {rule} (got {echo(value)})")
    return float(value)


def _seconds(value: Any, path: str) -> float:
    return _number(value, path, "a number of seconds, 0 or more", lambda v: v >= 0)


def _count(value: Any, path: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TrajectoryFormatError(path, f"must be a whole number of {low} or more (got {echo(value)})")
    return value


def _text(value: Any, path: str, *, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TrajectoryFormatError(path, f"must be {'text or null' if optional else 'text'} (got {echo(value)})")
    return value


def _one_of(value: Any, path: str, choices: tuple[str | None, ...]) -> Any:
    if value not in choices:
        shown = ", ".join("null" if c is None else repr(c) for c in choices)
        raise TrajectoryFormatError(path, f"must be one of {shown} (got {echo(value)})")
    return value


def _sequence(value: Any, path: str) -> tuple:
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise TrajectoryFormatError(path, f"must be a list (got {type(value).__name__})")
    return tuple(value)


def _mapping(value: Any, path: str, *, optional: bool = False) -> dict | None:
    if value is None and optional:
        return None
    if not isinstance(value, Mapping):
        raise TrajectoryFormatError(path, f"must be an object (got {type(value).__name__})")
    return dict(value)


def _span(value: Any, path: str) -> Span:
    """A :class:`Span`, or a ``[start, end]`` pair of seconds."""
    if isinstance(value, Span):
        return value
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        try:
            return Span(float(value[0]), float(value[1]))
        except TimeFormatError as err:
            raise TrajectoryFormatError(path, str(err)) from None
    raise TrajectoryFormatError(path, f"must be a [start, end] pair of seconds (got {echo(value)})")


def _spans(value: Any, path: str) -> tuple[Span, ...]:
    return tuple(_span(item, f"{path}[{k}]") for k, item in enumerate(_sequence(value, path)))


def _items_of(value: Any, path: str, cls: type) -> tuple:
    items = _sequence(value, path)
    for k, item in enumerate(items):
        if not isinstance(item, cls):
            raise TrajectoryFormatError(f"{path}[{k}]", f"must be a {cls.__name__} (got {type(item).__name__})")
    return items


def _set(obj: object, name: str, value: Any) -> None:
    object.__setattr__(obj, name, value)  # the dataclasses are frozen; __post_init__ stores normalised values


# ---------------------------------------------------------------------------------------------------
# The record.


@dataclass(frozen=True)
class Hit:
    """One retrieval result: a span of the video, its score and the indexed text that matched."""

    span: Span
    score: float
    text: str
    source: str  # "caption" | "ocr" | "frame" (HIT_SOURCES)

    def __post_init__(self) -> None:
        _set(self, "span", _span(self.span, "span"))
        _set(self, "score", _number(self.score, "score"))
        _text(self.text, "text")
        _text(self.source, "source")


@dataclass(frozen=True)
class FrameRef:
    """A frame the inspector looked at: its time in the video and, when saved, the image file."""

    t: float
    path: str | None = None

    def __post_init__(self) -> None:
        _set(self, "t", _seconds(self.t, "t"))
        _text(self.path, "path", optional=True)


@dataclass(frozen=True)
class Verdict:
    """The inspector's reply, parsed (:func:`engines.video.gate.parse_verdict`).

    ``answer`` is set exactly when ``status`` is ``"ANSWER"`` (option letters, ``"B"`` or ``"A,C"``);
    ``search_more_type`` only with ``"SEARCH_MORE"``. ``cited_times`` are the times (s) cited in
    ``evidence``.
    """

    status: str
    answer: str | None
    confidence: float
    evidence: str
    cited_times: tuple[float, ...] = ()
    missing: str = ""
    next_queries: tuple[str, ...] = ()
    search_more_type: str | None = None

    def __post_init__(self) -> None:
        _one_of(self.status, "status", STATUSES)
        if self.status == "ANSWER":
            if not isinstance(self.answer, str) or not self.answer.strip():
                raise TrajectoryFormatError(
                    "answer", f"must be the answered option letters when status is ANSWER (got {echo(self.answer)})"
                )
            if self.search_more_type is not None:
                raise TrajectoryFormatError("search_more_type", "must be null when status is ANSWER")
        else:
            if self.answer is not None:
                raise TrajectoryFormatError("answer", f"must be null when status is SEARCH_MORE (got {echo(self.answer)})")
            _one_of(self.search_more_type, "search_more_type", (*SEARCH_MORE_TYPES, None))
        _set(self, "confidence", _number(self.confidence, "confidence", "a number from 0 to 1", lambda v: 0 <= v <= 1))
        _text(self.evidence, "evidence")
        times = _sequence(self.cited_times, "cited_times")
        _set(self, "cited_times", tuple(_seconds(t, f"cited_times[{k}]") for k, t in enumerate(times)))
        _text(self.missing, "missing")
        queries = _sequence(self.next_queries, "next_queries")
        for k, query in enumerate(queries):
            _text(query, f"next_queries[{k}]")
        _set(self, "next_queries", queries)


@dataclass(frozen=True)
class Step:
    """One planner action and what came of it.

    ``i`` numbers the steps (increasing; the agent loop counts from 1). ``args`` is ``{"query"}`` for
    retrieve and ``{"spans", "context"}`` for inspect (spans given as :class:`Span` or ``[s, e]``
    pairs are stored as a tuple of :class:`Span`). ``observation`` is the text the planner was shown
    (the retrieve summary, the inspector's reply); ``forced`` marks the inspection forced at the
    last step or over the full video. ``hits`` belong to retrieve steps, ``frames`` and ``verdict``
    to inspect steps; ``gate_passed``/``gate_reason`` to inspect and finalize steps.
    """

    i: int
    action: str
    args: dict
    planner_thought: str
    latency_s: float
    hits: tuple[Hit, ...] = ()
    frames: tuple[FrameRef, ...] = ()
    verdict: Verdict | None = None
    gate_passed: bool | None = None
    gate_reason: str | None = None
    forced: bool = False
    observation: str = ""

    def __post_init__(self) -> None:
        _count(self.i, "i", 0)
        _one_of(self.action, "action", ACTIONS)
        args = _mapping(self.args, "args")
        if self.action == "retrieve":
            if "query" not in args:
                raise TrajectoryFormatError("args.query", "is missing (a retrieve step needs its query)")
            _text(args["query"], "args.query")
        elif self.action == "inspect":
            if "spans" not in args:
                raise TrajectoryFormatError("args.spans", "is missing (an inspect step needs its spans)")
            args["spans"] = _spans(args["spans"], "args.spans")
            if not args["spans"]:
                raise TrajectoryFormatError("args.spans", "must name at least one span")
            if "context" in args:
                _text(args["context"], "args.context")
        _set(self, "args", args)
        _text(self.planner_thought, "planner_thought")
        _set(self, "latency_s", _seconds(self.latency_s, "latency_s"))
        _set(self, "hits", _items_of(self.hits, "hits", Hit))
        _set(self, "frames", _items_of(self.frames, "frames", FrameRef))
        if self.hits and self.action != "retrieve":
            raise TrajectoryFormatError("hits", f"only a retrieve step has hits (this is {self.action})")
        if self.frames and self.action != "inspect":
            raise TrajectoryFormatError("frames", f"only an inspect step has frames (this is {self.action})")
        if self.verdict is not None:
            if not isinstance(self.verdict, Verdict):
                raise TrajectoryFormatError("verdict", f"must be a Verdict (got {type(self.verdict).__name__})")
            if self.action != "inspect":
                raise TrajectoryFormatError("verdict", f"only an inspect step has a verdict (this is {self.action})")
        if self.gate_passed is not None and not isinstance(self.gate_passed, bool):
            raise TrajectoryFormatError("gate_passed", f"must be true, false or null (got {echo(self.gate_passed)})")
        _text(self.gate_reason, "gate_reason", optional=True)
        if not isinstance(self.forced, bool):
            raise TrajectoryFormatError("forced", f"must be true or false (got {echo(self.forced)})")
        _text(self.observation, "observation")

    @property
    def spans(self) -> tuple[Span, ...]:
        """The inspected spans of an inspect step; empty for the other actions."""
        return self.args["spans"] if self.action == "inspect" else ()


@dataclass(frozen=True)
class Final:
    """The final answer and where its authority came from (``mode``, one of FINAL_MODES)."""

    answer: str | None
    authorised_by_step: int | None
    mode: str
    # The answer rests on nothing seen: a forced or fallback inspection found nothing that bears on
    # the question and named an option anyway (its verdict cites no time, confidence 0).
    guess: bool = False

    def __post_init__(self) -> None:
        _text(self.answer, "answer", optional=True)
        if not isinstance(self.guess, bool):
            raise TrajectoryFormatError("guess", f"must be true or false (got {echo(self.guess)})")
        if self.guess and self.answer is None:
            raise TrajectoryFormatError("guess", "is true but there is no answer")
        if self.authorised_by_step is not None:
            _count(self.authorised_by_step, "authorised_by_step", 0)
        _one_of(self.mode, "mode", FINAL_MODES)
        if self.mode == "none" and (self.answer is not None or self.authorised_by_step is not None):
            raise TrajectoryFormatError("mode", "is 'none' but an answer or an authorising step is given")
        if self.mode != "none" and self.answer is None:
            raise TrajectoryFormatError("answer", f"is null but mode is {echo(self.mode)} (use mode 'none' for no answer)")
        if self.mode == "gated" and self.authorised_by_step is None:
            raise TrajectoryFormatError(
                "authorised_by_step", "must name the inspect step whose verdict passed the gate"
            )


def option_letters(options: Iterable[str]) -> tuple[str, ...]:
    """``("A", "B", ...)``, one letter per option."""
    return tuple(chr(ord("A") + k) for k, _ in enumerate(options))


@dataclass(frozen=True)
class Trajectory:
    """The record of one question: the question, the agent's steps and its final answer.

    ``options`` are the option texts in letter order (A, B, ...); ``gt_answer`` is a letter or
    ``None`` (unlabelled); ``gt_spans`` the benchmark's evidence spans (only LVBench has them).
    ``budget`` is ``{"max_steps", "max_frames", "fps"}``, ``models`` ``{"planner", "inspector"}``.
    ``metrics`` caches :func:`engines.video.metrics.question_metrics` for the viewer; ``config`` holds
    the run configuration.
    """

    run_id: str
    benchmark: str
    uid: str
    video_id: str
    video_path: str
    duration_s: float
    question: str
    options: tuple[str, ...]
    gt_answer: str | None
    gt_spans: tuple[Span, ...]
    budget: dict
    steps: tuple[Step, ...]
    final: Final
    models: dict
    metrics: dict | None = None
    agent: str = "gated"
    config: dict = field(default_factory=dict)
    schema: str = SCHEMA

    def __post_init__(self) -> None:
        if self.schema != SCHEMA:
            raise TrajectoryFormatError("schema", f"must be {SCHEMA!r} (got {echo(self.schema)})")
        for name in ("run_id", "benchmark", "uid", "video_id", "video_path", "question"):
            _text(getattr(self, name), name)
        _set(self, "duration_s", _number(self.duration_s, "duration_s", "a number of seconds above 0", lambda v: v > 0))
        options = _sequence(self.options, "options")
        if not 2 <= len(options) <= 26:
            raise TrajectoryFormatError("options", f"must hold 2 to 26 options (got {len(options)})")
        for k, option in enumerate(options):
            _text(option, f"options[{k}]")
        _set(self, "options", options)
        if self.gt_answer is not None:
            _one_of(self.gt_answer, "gt_answer", (*self.option_letters, None))
        _set(self, "gt_spans", _spans(self.gt_spans, "gt_spans"))
        budget = _mapping(self.budget, "budget")
        for key in ("max_steps", "max_frames", "fps"):
            if key not in budget:
                raise TrajectoryFormatError(f"budget.{key}", "is missing")
        _count(budget["max_steps"], "budget.max_steps", 1)
        _count(budget["max_frames"], "budget.max_frames", 1)
        budget["fps"] = _number(budget["fps"], "budget.fps", "a number above 0", lambda v: v > 0)
        _set(self, "budget", budget)
        steps = _items_of(self.steps, "steps", Step)
        for k in range(1, len(steps)):
            if steps[k].i <= steps[k - 1].i:
                raise TrajectoryFormatError(f"steps[{k}].i", f"must be above the previous step's i ({steps[k - 1].i})")
        _set(self, "steps", steps)
        if not isinstance(self.final, Final):
            raise TrajectoryFormatError("final", f"must be a Final (got {type(self.final).__name__})")
        models = _mapping(self.models, "models")
        for key in ("planner", "inspector"):
            if key not in models:
                raise TrajectoryFormatError(f"models.{key}", "is missing")
            _text(models[key], f"models.{key}")
        _set(self, "models", models)
        _set(self, "metrics", _mapping(self.metrics, "metrics", optional=True))
        _one_of(self.agent, "agent", AGENTS)
        _set(self, "config", _mapping(self.config, "config"))
        # Cross-field rules of the final answer.
        named = self.final.authorised_by_step
        if named is not None:
            step = self.step(named)
            if step is None:
                raise TrajectoryFormatError("final.authorised_by_step", f"names step {named}, which is not in steps")
            if step.action != "inspect":
                raise TrajectoryFormatError(
                    "final.authorised_by_step", f"names step {named}, a {step.action} step (must be an inspect step)"
                )
        # Mode "coupled" belongs to the coupled agent, which answers in that mode or not at all.
        if (self.final.mode == "coupled") != (self.agent == "coupled" and self.final.answer is not None):
            raise TrajectoryFormatError(
                "final.mode", f"is {echo(self.final.mode)} but the agent is {echo(self.agent)} (the coupled agent answers in "
                "mode 'coupled' or not at all; only it uses that mode)"
            )

    # -- convenience ---------------------------------------------------------------------------

    @property
    def option_letters(self) -> tuple[str, ...]:
        return option_letters(self.options)

    def option_text(self, letter: str) -> str | None:
        """The text of option ``letter``; ``None`` when there is no such option."""
        letters = self.option_letters
        return self.options[letters.index(letter)] if letter in letters else None

    def step(self, i: int) -> Step | None:
        """The step numbered ``i``, or ``None``."""
        return next((step for step in self.steps if step.i == i), None)

    @property
    def inspected_spans(self) -> tuple[Span, ...]:
        """The spans of every inspect step, in step order (not merged)."""
        return tuple(span for step in self.steps for span in step.spans)

    @property
    def retrieved_spans(self) -> tuple[Span, ...]:
        """The span of every retrieval hit, in step order (not merged)."""
        return tuple(hit.span for step in self.steps for hit in step.hits)

    @property
    def authorising_step(self) -> Step | None:
        if self.final.authorised_by_step is None:
            return None
        return self.step(self.final.authorised_by_step)

    @property
    def authorising_spans(self) -> tuple[Span, ...]:
        """A: the spans of the inspection that authorised the answer; empty when none did."""
        step = self.authorising_step
        return step.spans if step is not None else ()

    @property
    def authorising_verdict(self) -> Verdict | None:
        step = self.authorising_step
        return step.verdict if step is not None else None

    @property
    def frames_used(self) -> int:
        return sum(len(step.frames) for step in self.steps)


# ---------------------------------------------------------------------------------------------------
# JSON.


def _pair(span: Span) -> list[float]:
    return [span.start, span.end]


def _plain(value: Any) -> Any:
    """``value`` with spans as ``[s, e]`` pairs and tuples as lists (the JSON form of ``args``)."""
    if isinstance(value, Span):
        return _pair(value)
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _verdict_json(verdict: Verdict) -> dict:
    return {
        "status": verdict.status,
        "answer": verdict.answer,
        "confidence": verdict.confidence,
        "evidence": verdict.evidence,
        "cited_times": list(verdict.cited_times),
        "missing": verdict.missing,
        "next_queries": list(verdict.next_queries),
        "search_more_type": verdict.search_more_type,
    }


def _step_json(step: Step) -> dict:
    return {
        "i": step.i,
        "action": step.action,
        "args": _plain(step.args),
        "planner_thought": step.planner_thought,
        "latency_s": step.latency_s,
        "observation": step.observation,
        "hits": [
            {"s": h.span.start, "e": h.span.end, "score": h.score, "text": h.text, "source": h.source} for h in step.hits
        ],
        "frames": [{"t": f.t, "path": f.path} for f in step.frames],
        "verdict": _verdict_json(step.verdict) if step.verdict is not None else None,
        "gate_passed": step.gate_passed,
        "gate_reason": step.gate_reason,
        "forced": step.forced,
    }


def to_json(trajectory: Trajectory) -> dict:
    """The JSON object of one trajectory (plain dicts, lists, numbers and strings; spans as ``[s, e]``)."""
    t = trajectory
    return {
        "schema": t.schema,
        "run_id": t.run_id,
        "benchmark": t.benchmark,
        "uid": t.uid,
        "video_id": t.video_id,
        "video_path": t.video_path,
        "duration_s": t.duration_s,
        "question": t.question,
        "options": list(t.options),
        "gt_answer": t.gt_answer,
        "gt_spans": [_pair(span) for span in t.gt_spans],
        "budget": _plain(t.budget),
        "steps": [_step_json(step) for step in t.steps],
        "final": {"answer": t.final.answer, "authorised_by_step": t.final.authorised_by_step, "mode": t.final.mode,
                  **({"guess": True} if t.final.guess else {})},
        "models": _plain(t.models),
        "metrics": _plain(t.metrics),
        "agent": t.agent,
        "config": _plain(t.config),
    }


def _key(name: str) -> str:
    """A key of the file as a field path: as it is when short and printable, else quoted shortened."""
    return name if len(name) <= 60 and name.isprintable() else echo(name, 60)


def _fields(obj: Any, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """The keys of a JSON object, checked: every required key present, no unknown key."""
    obj = _mapping(obj, "")
    for key in required:
        if key not in obj:
            raise TrajectoryFormatError(key, "is missing")
    unknown = sorted(set(obj) - set(required) - set(optional), key=str)
    if unknown:
        raise TrajectoryFormatError(_key(unknown[0]), f"is not a field of {SCHEMA}")
    return obj


def _verdict_from_json(obj: Any) -> Verdict:
    d = _fields(obj, ("status", "answer", "confidence", "evidence"),
                ("cited_times", "missing", "next_queries", "search_more_type"))
    return Verdict(d["status"], d["answer"], d["confidence"], d["evidence"], d.get("cited_times", ()),
                   d.get("missing", ""), d.get("next_queries", ()), d.get("search_more_type"))


def _hit_from_json(obj: Any) -> Hit:
    d = _fields(obj, ("s", "e", "score", "text"), ("source",))
    start, end = _number(d["s"], "s", "a number of seconds"), _number(d["e"], "e", "a number of seconds")
    return Hit(_span([start, end], ""), d["score"], d["text"], d.get("source", "caption"))


def _frame_from_json(obj: Any) -> FrameRef:
    d = _fields(obj, ("t",), ("path",))
    return FrameRef(d["t"], d.get("path"))


def _list_from_json(value: Any, path: str, read) -> tuple:
    items = []
    for k, item in enumerate(_sequence(value, path)):
        with _within(f"{path}[{k}]"):
            items.append(read(item))
    return tuple(items)


def _step_from_json(obj: Any) -> Step:
    d = _fields(obj, ("i", "action", "args", "planner_thought", "latency_s"),
                ("observation", "hits", "frames", "verdict", "gate_passed", "gate_reason", "forced"))
    hits = _list_from_json(d.get("hits", []), "hits", _hit_from_json)
    frames = _list_from_json(d.get("frames", []), "frames", _frame_from_json)
    verdict = None
    if d.get("verdict") is not None:
        with _within("verdict"):
            verdict = _verdict_from_json(d["verdict"])
    return Step(d["i"], d["action"], d["args"], d["planner_thought"], d["latency_s"], hits=hits, frames=frames,
                verdict=verdict, gate_passed=d.get("gate_passed"), gate_reason=d.get("gate_reason"),
                forced=d.get("forced", False), observation=d.get("observation", ""))


_TOP_REQUIRED = ("schema", "run_id", "benchmark", "uid", "video_id", "video_path", "duration_s", "question", "options",
                 "gt_answer", "gt_spans", "budget", "steps", "final", "models")
_TOP_OPTIONAL = ("metrics", "agent", "config")


def from_json(obj: Any) -> Trajectory:
    """The :class:`Trajectory` of a JSON object written by :func:`to_json`.

    Raises:
        TrajectoryFormatError: the object does not follow ``lvqa-traj/1``; the message names the
            field path, e.g. ``"steps[2].verdict.confidence: must be a number from 0 to 1 (got 1.5)"``.
    """
    if isinstance(obj, Mapping) and "schema" in obj and obj["schema"] != SCHEMA:
        raise TrajectoryFormatError("schema", f"must be {SCHEMA!r} (got {echo(obj['schema'])})")
    d = _fields(obj, _TOP_REQUIRED, _TOP_OPTIONAL)
    steps = _list_from_json(d["steps"], "steps", _step_from_json)
    with _within("final"):
        f = _fields(d["final"], ("answer", "authorised_by_step", "mode"), ("guess",))
        final = Final(f["answer"], f["authorised_by_step"], f["mode"], f.get("guess", False))
    return Trajectory(
        run_id=d["run_id"], benchmark=d["benchmark"], uid=d["uid"], video_id=d["video_id"], video_path=d["video_path"],
        duration_s=d["duration_s"], question=d["question"], options=d["options"], gt_answer=d["gt_answer"],
        gt_spans=d["gt_spans"], budget=d["budget"], steps=steps, final=final, models=d["models"],
        metrics=d.get("metrics"), agent=d.get("agent", "gated"), config=d.get("config", {}), schema=d["schema"],
    )


def _line(trajectory: Trajectory) -> str:
    return json.dumps(to_json(trajectory), ensure_ascii=False, allow_nan=False) + "\n"


def write_jsonl(trajectories: Iterable[Trajectory], path: str | os.PathLike) -> Path:
    """Write ``trajectories``, one per line, replacing ``path`` atomically (a temporary file in the
    same folder, then ``os.replace``): a reader never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for trajectory in trajectories:
                out.write(_line(trajectory))
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def append_jsonl(trajectory: Trajectory, path: str | os.PathLike) -> Path:
    """Append one trajectory as one line and flush it to disk, so that a run that stops keeps every
    finished question (a resumed run skips the uids already in the file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = _line(trajectory)  # serialise first: a record that cannot be written leaves the file untouched
    with open(path, "a", encoding="utf-8") as out:
        out.write(line)
        out.flush()
        os.fsync(out.fileno())
    return path


def read_jsonl(path: str | os.PathLike, *, name: str | None = None) -> list[Trajectory]:
    """The trajectories of a JSONL file (blank lines skipped).

    ``name`` is how messages call the file (default: its path); a page passes the path as a person
    may see it. A line's values are quoted shortened in messages (``echo``), and a line nesting
    deeper than ``HAI_MAX_JSON_DEPTH`` is refused before it is parsed.

    Raises:
        TrajectoryFormatError: a line is not JSON or not ``lvqa-traj/1``; the message names the file,
            the line and the field, e.g. ``"run.jsonl, line 3: final.mode: must be one of ..."``.
    """
    path = Path(path)
    trajectories = []
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{name or path}, line {number}"
            problem = json_depth_problem(line)
            if problem is not None:
                raise TrajectoryFormatError("", f"the JSON {problem}", where)
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as err:
                raise TrajectoryFormatError("", f"not valid JSON ({err.msg} at column {err.colno})", where) from None
            try:
                trajectories.append(from_json(obj))
            except TrajectoryFormatError as err:
                raise TrajectoryFormatError(err.path, err.problem, where) from None
    return trajectories
