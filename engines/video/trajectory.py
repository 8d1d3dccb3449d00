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
import os
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainValidator, Strict, field_validator, model_validator, with_config
from pydantic.dataclasses import dataclass
from typing_extensions import TypedDict  # pydantic needs this one's TypedDict before Python 3.12

from engines.platform import formats
from engines.platform.files import echo
from engines.platform.formats import FieldProblem, FormatError
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


class TrajectoryFormatError(FormatError):
    """A trajectory record that does not follow ``lvqa-traj/1`` (``engines.platform.formats``):
    ``str(error)`` names the file and line, the field and the problem, e.g. ``"run.jsonl, line 3:
    steps[2].verdict.confidence: must be at most 1 (got 1.5)"``."""


# ---------------------------------------------------------------------------------------------------
# The record's field types: pydantic checks them on construction and on reading (a string is never
# a number, a bool never a count; lists become tuples).

_FORMAT = ConfigDict(extra="forbid")
Number = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Seconds = Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
Text = Annotated[str, Strict()]
Flag = Annotated[bool, Strict()]


def _span(value: Any) -> Span:
    """A :class:`Span`, or a ``[start, end]`` pair of seconds."""
    if isinstance(value, Span):
        return value
    if (isinstance(value, list | tuple) and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)):
        try:
            return Span(float(value[0]), float(value[1]))
        except TimeFormatError as err:
            raise FieldProblem("", str(err)) from None
    raise FieldProblem("", f"must be a [start, end] pair of seconds (got {echo(value)})")


SpanValue = Annotated[Span, PlainValidator(_span)]


def _spans(value: Any) -> tuple[Span, ...]:
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise FieldProblem("", f"must be a list of [start, end] pairs (got {echo(value)})")
    spans = []
    for k, item in enumerate(value):
        try:
            spans.append(_span(item))
        except FieldProblem as problem:
            raise FieldProblem(f"[{k}]", problem.problem) from None
    return tuple(spans)


# ---------------------------------------------------------------------------------------------------
# The record.


@dataclass(frozen=True, config=_FORMAT)
class Hit:
    """One retrieval result: a span of the video, its score and the indexed text that matched
    (in the file: ``{"s", "e", "score", "text", "source"}``)."""

    span: SpanValue
    score: Number
    text: Text
    source: Text = "caption"  # "caption" | "ocr" | "frame" (HIT_SOURCES)

    @model_validator(mode="before")
    @classmethod
    def _from_file(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and ("s" in data or "e" in data):
            data = dict(data)
            data["span"] = [data.pop("s", None), data.pop("e", None)]
        return data


@dataclass(frozen=True, config=_FORMAT)
class FrameRef:
    """A frame the inspector looked at: its time in the video and, when saved, the image file."""

    t: Seconds
    path: Text | None = None


@dataclass(frozen=True, config=_FORMAT)
class Verdict:
    """The inspector's reply, parsed (:func:`engines.video.gate.parse_verdict`).

    ``answer`` is set exactly when ``status`` is ``"ANSWER"`` (option letters, ``"B"`` or ``"A,C"``);
    ``search_more_type`` only with ``"SEARCH_MORE"``. ``cited_times`` are the times (s) cited in
    ``evidence``.
    """

    status: Literal[STATUSES]
    answer: Text | None
    confidence: Annotated[float, Strict(), Field(ge=0, le=1, allow_inf_nan=False)]
    evidence: Text
    cited_times: tuple[Seconds, ...] = ()
    missing: Text = ""
    next_queries: tuple[Text, ...] = ()
    search_more_type: Literal[SEARCH_MORE_TYPES] | None = None

    def __post_init__(self) -> None:
        if self.status == "ANSWER":
            if not self.answer or not self.answer.strip():
                raise FieldProblem("answer", "must be the answered option letters when status is ANSWER "
                                             f"(got {echo(self.answer)})")
            if self.search_more_type is not None:
                raise FieldProblem("search_more_type", "must be null when status is ANSWER")
        elif self.answer is not None:
            raise FieldProblem("answer", f"must be null when status is SEARCH_MORE (got {echo(self.answer)})")


@dataclass(frozen=True, config=_FORMAT)
class Step:
    """One planner action and what came of it.

    ``i`` numbers the steps (increasing; the agent loop counts from 1). ``args`` is ``{"query"}`` for
    retrieve and ``{"spans", "context"}`` for inspect (spans given as :class:`Span` or ``[s, e]``
    pairs are stored as a tuple of :class:`Span`). ``observation`` is the text the planner was shown
    (the retrieve summary, the inspector's reply); ``forced`` marks the inspection forced at the
    last step or over the full video. ``hits`` belong to retrieve steps, ``frames`` and ``verdict``
    to inspect steps; ``gate_passed``/``gate_reason`` to inspect and finalize steps.
    """

    i: Annotated[int, Strict(), Field(ge=0)]
    action: Literal[ACTIONS]
    args: dict
    planner_thought: Text
    latency_s: Seconds
    hits: tuple[Hit, ...] = ()
    frames: tuple[FrameRef, ...] = ()
    verdict: Verdict | None = None
    gate_passed: Flag | None = None
    gate_reason: Text | None = None
    forced: Flag = False
    observation: Text = ""

    @field_validator("args")
    @classmethod
    def _args(cls, args: dict, info) -> dict:
        action, args = info.data.get("action"), dict(args)
        if action == "retrieve":
            if "query" not in args:
                raise FieldProblem("query", "is missing (a retrieve step needs its query)")
            if not isinstance(args["query"], str):
                raise FieldProblem("query", f"must be text (got {echo(args['query'])})")
        elif action == "inspect":
            if "spans" not in args:
                raise FieldProblem("spans", "is missing (an inspect step needs its spans)")
            try:
                args["spans"] = _spans(args["spans"])
            except FieldProblem as problem:
                raise FieldProblem(f"spans{problem.field}", problem.problem) from None
            if not args["spans"]:
                raise FieldProblem("spans", "must name at least one span")
            if "context" in args and not isinstance(args["context"], str):
                raise FieldProblem("context", f"must be text (got {echo(args['context'])})")
        return args

    def __post_init__(self) -> None:
        if self.hits and self.action != "retrieve":
            raise FieldProblem("hits", f"only a retrieve step has hits (this is {self.action})")
        if self.frames and self.action != "inspect":
            raise FieldProblem("frames", f"only an inspect step has frames (this is {self.action})")
        if self.verdict is not None and self.action != "inspect":
            raise FieldProblem("verdict", f"only an inspect step has a verdict (this is {self.action})")

    @property
    def spans(self) -> tuple[Span, ...]:
        """The inspected spans of an inspect step; empty for the other actions."""
        return self.args["spans"] if self.action == "inspect" else ()


@dataclass(frozen=True, config=_FORMAT)
class Final:
    """The final answer and where its authority came from (``mode``, one of FINAL_MODES)."""

    answer: Text | None
    authorised_by_step: Annotated[int, Strict(), Field(ge=0)] | None
    mode: Literal[FINAL_MODES]
    # The answer rests on nothing seen: a forced or fallback inspection found nothing that bears on
    # the question and named an option anyway (its verdict cites no time, confidence 0).
    guess: Flag = False

    def __post_init__(self) -> None:
        if self.guess and self.answer is None:
            raise FieldProblem("guess", "is true but there is no answer")
        if self.mode == "none" and (self.answer is not None or self.authorised_by_step is not None):
            raise FieldProblem("mode", "is 'none' but an answer or an authorising step is given")
        if self.mode != "none" and self.answer is None:
            raise FieldProblem("answer", f"is null but mode is {echo(self.mode)} (use mode 'none' for no answer)")
        if self.mode == "gated" and self.authorised_by_step is None:
            raise FieldProblem("authorised_by_step", "must name the inspect step whose verdict passed the gate")


def option_letters(options: Iterable[str]) -> tuple[str, ...]:
    """``("A", "B", ...)``, one letter per option."""
    return tuple(chr(ord("A") + k) for k, _ in enumerate(options))


@with_config(ConfigDict(extra="allow"))  # a run may record more; read back as written
class Budget(TypedDict):
    """A trajectory's ``budget``: a plain dict holding at least these."""

    max_steps: Annotated[int, Strict(), Field(ge=1)]
    max_frames: Annotated[int, Strict(), Field(ge=1)]
    fps: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]


@with_config(ConfigDict(extra="allow"))
class Models(TypedDict):
    """A trajectory's ``models``: the planner's and the inspector's names (a plain dict)."""

    planner: Text
    inspector: Text


@dataclass(frozen=True, config=_FORMAT)
class Trajectory:
    """The record of one question: the question, the agent's steps and its final answer.

    ``options`` are the option texts in letter order (A, B, ...); ``gt_answer`` is a letter or
    ``None`` (unlabelled); ``gt_spans`` the benchmark's evidence spans (only LVBench has them).
    ``budget`` is ``{"max_steps", "max_frames", "fps"}``, ``models`` ``{"planner", "inspector"}``.
    ``metrics`` caches :func:`engines.video.metrics.question_metrics` for the viewer; ``config`` holds
    the run configuration.
    """

    run_id: Text
    benchmark: Text
    uid: Text
    video_id: Text
    video_path: Text
    duration_s: Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
    question: Text
    options: Annotated[tuple[Text, ...], Field(min_length=2, max_length=26)]
    gt_answer: Text | None
    gt_spans: Annotated[tuple[Span, ...], PlainValidator(_spans)]
    budget: Budget
    steps: tuple[Step, ...]
    final: Final
    models: Models
    metrics: dict | None = None
    agent: Literal[AGENTS] = "gated"
    config: dict = field(default_factory=dict)
    schema: Literal["lvqa-traj/1"] = SCHEMA

    @model_validator(mode="before")
    @classmethod
    def _schema_first(cls, data: Any) -> Any:
        # A record of another schema is named as such, before any field of this one is missed.
        if isinstance(data, Mapping) and "schema" in data and data["schema"] != SCHEMA:
            raise FieldProblem("schema", f"must be {SCHEMA!r} (got {echo(data['schema'])})")
        return data

    def __post_init__(self) -> None:
        if self.gt_answer is not None and self.gt_answer not in self.option_letters:
            shown = ", ".join([*map(repr, self.option_letters), "null"])
            raise FieldProblem("gt_answer", f"must be one of {shown} (got {echo(self.gt_answer)})")
        for k in range(1, len(self.steps)):
            if self.steps[k].i <= self.steps[k - 1].i:
                raise FieldProblem(f"steps[{k}].i", f"must be above the previous step's i ({self.steps[k - 1].i})")
        # Cross-field rules of the final answer.
        named = self.final.authorised_by_step
        if named is not None:
            step = self.step(named)
            if step is None:
                raise FieldProblem("final.authorised_by_step", f"names step {named}, which is not in steps")
            if step.action != "inspect":
                raise FieldProblem("final.authorised_by_step",
                                   f"names step {named}, a {step.action} step (must be an inspect step)")
        # Mode "coupled" belongs to the coupled agent, which answers in that mode or not at all.
        if (self.final.mode == "coupled") != (self.agent == "coupled" and self.final.answer is not None):
            raise FieldProblem(
                "final.mode", f"is {echo(self.final.mode)} but the agent is {echo(self.agent)} (the coupled agent answers "
                "in mode 'coupled' or not at all; only it uses that mode)")

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


def from_json(obj: Any) -> Trajectory:
    """The :class:`Trajectory` of a JSON object written by :func:`to_json`.

    Raises:
        TrajectoryFormatError: the object does not follow ``lvqa-traj/1``; the message names the
            field path, e.g. ``"steps[2].verdict.confidence: must be at most 1 (got 1.5)"``.
    """
    return formats.validated(Trajectory, obj, format_name=SCHEMA, error=TrajectoryFormatError)


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
    """The trajectories of a JSONL file (blank lines skipped; ``engines.platform.formats.read_jsonl``).

    ``name`` is how messages call the file (default: its path); a page passes the path as a person
    may see it.

    Raises:
        TrajectoryFormatError: a line is not JSON or not ``lvqa-traj/1``; the message names the file,
            the line and the field, e.g. ``"run.jsonl, line 3: final.mode: must be one of ..."``.
    """
    return formats.read_jsonl(path, Trajectory, format_name=SCHEMA, name=name, error=TrajectoryFormatError)
