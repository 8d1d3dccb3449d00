"""The model roles of the video agent, behind protocols, and the tables the registry fills.

- **Planner** (text only, upstream ``agents/tool_agent.py``): chooses the next action from the
  question and what it has seen so far: search the index, inspect time spans, or finish. It never
  sees pixels and never gives the answer: the gated agent ignores any answer a planner states.
- **Inspector** (upstream ``VisualInspectAliasTool``): looks at the frames of the spans it is given
  and returns a :class:`~engines.video.trajectory.Verdict`: a letter with a confidence, evidence
  citing times, or SEARCH_MORE with what is missing. In ``answer_only`` mode (the forced last step,
  the full-video fallback, the coupled baseline) it always names its best letter.
- **Captioner**: describes each 16 s clip for the index (``engines.video.index``).

Offline defaults (``engines.video.offline.heuristics``): a heuristic planner and an inspector and captioner
built on the project's frame model (``assets/video/frame_model.pt``). Names resolve through
``engines.video.backends`` (:func:`~engines.video.backends.planner`, ``inspector``, ``captioner``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from engines.platform.registries import Registry
from engines.video.decode import VideoReader
from engines.video.index import Captioner, Retriever
from engines.video.questions import Question
from engines.video.spans import Span
from engines.video.trajectory import FrameRef, Hit, Step, Verdict

ASSETS = Path(__file__).resolve().parents[2] / "assets" / "video"
FRAME_MODEL = ASSETS / "frame_model.pt"


@dataclass(frozen=True)
class Retrieve:
    query: str
    thought: str = ""


@dataclass(frozen=True)
class Inspect:
    spans: tuple[Span, ...]
    context: str = ""
    thought: str = ""


@dataclass(frozen=True)
class Finalize:
    thought: str = ""
    answer: str | None = None  # only the coupled baseline's planner answers; the gated agent ignores it


Action = Retrieve | Inspect | Finalize


@dataclass
class Inspection:
    """What an inspector returns: its verdict, the frames it looked at, and its raw reply."""

    verdict: Verdict
    frames: list[FrameRef] = field(default_factory=list)
    raw: str = ""


class Planner(Protocol):
    name: str

    def act(self, question: Question, history: Sequence[Step], steps_left: int) -> Action: ...


class Inspector(Protocol):
    name: str

    def inspect(self, reader: VideoReader, spans: Sequence[Span], question: Question, *, context: str = "",
                fps: float = 2.0, max_frames: int = 48, answer_only: bool = False) -> Inspection: ...


@dataclass
class Roles:
    """The planner, inspector and retriever one run uses."""

    planner: Planner
    inspector: Inspector
    retriever_for: Callable[[str], Retriever]  # video path -> its retriever
    hits_shown: int = 5  # how many hits a retrieve shows the planner


# The offline stand-ins and the adapters register themselves when this module is imported (torch):
# the first read of a registry imports it.
_FILLED_BY = "engines.video.backends"
PLANNERS: Registry[Callable[..., Planner]] = Registry("video", "planners", filled_by=_FILLED_BY)
INSPECTORS: Registry[Callable[..., Inspector]] = Registry("video", "inspectors", filled_by=_FILLED_BY)
CAPTIONERS: Registry[Callable[..., Captioner]] = Registry("video", "captioners", filled_by=_FILLED_BY)


def register(kind: str, name: str, description: str = ""):
    """Register a factory of a planner, inspector or captioner under ``name`` (described by its
    docstring's first line unless ``description`` says otherwise)."""
    return {"planner": PLANNERS, "inspector": INSPECTORS, "captioner": CAPTIONERS}[kind].register(name, description)


def hit_summary(hits: Sequence[Hit]) -> str:
    """What the planner reads after a search: the hits' times and text, best first."""
    return "\n".join(f"[{h.span.label()}] score {h.score:.3f}: {h.text.replace(chr(10), ' | ')}" for h in hits)
