"""The model roles of HOI-Eval and SCPE, behind protocols, and the tables the registry fills.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Method: HOI-Eval scores" and "Method: SCPE"):

- **Grounder** (upstream GroundingDINO + SAM2.1): finds the person and the object in an edited
  image (``detect``) and follows the annotated object box from the original into the edit
  (``track``).
- **VLM judge** (upstream Gemini 2.5 Pro): answers the interaction question on boxed images
  (``yes_no``), matches an entity among numbered candidates (``match_score``), and, for SCPE,
  critiques a generated video (``analyze_video``) and picks the frame that shows the interaction
  (``select_frame``). Replies are text; ``engines.hoi.judge_replies`` reads them, and a reply that
  does not parse becomes the field's ``*_error``.
- **Image editor** (diffusers InstructPix2Pix, FLUX.1 Kontext, Qwen-Image-Edit): source image and
  instruction to an edited image.
- **I2V generator** (diffusers Wan, Stable Video Diffusion, CogVideoX, LTX): source image and
  prompt to frames.
- **Prompt refiner** (SCPE's generator, reflector and curator): writes the enhanced prompt from the
  playbook, turns a failed video's critique into an insight, and turns an insight into playbook
  operations.

Every role has a deterministic offline default that runs on the shipped demo data, and adapters
for real models; names resolve through the tables below (filled by the modules that define them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from PIL import Image

from engines.platform.files import echo
from engines.platform.registries import Registry

Box = tuple[float, float, float, float]  # [x1, y1, x2, y2] in the image's pixels, as upstream


@dataclass(frozen=True)
class Detection:
    """One box a grounder found: its label (the prompt it answers) and the detector's score."""

    box: Box
    score: float
    label: str


@dataclass(frozen=True)
class VideoReport:
    """The analyzer's verdict on a generated video (upstream ``{success, critique}``)."""

    success: bool
    critique: str
    raw: str = ""


@dataclass(frozen=True)
class FrameChoice:
    """The frame selector's choice (upstream ``ace_v2f_qa2.py``: call 1 then call 2).

    ``best_frame_index`` indexes the frames the selector was shown; ``strict_pass`` says whether
    that frame clearly answers yes with acceptable quality."""

    best_frame_index: int
    strict_pass: bool
    selection_mode: str  # "earliest_pass", "best_effort", or "fallback" when the reply did not parse
    match_score: float
    action_type: str = "dynamic"  # "static" | "dynamic" (call 1)
    question: str = ""  # the yes/no question call 1 wrote
    raw: str = ""


@dataclass(frozen=True)
class Insight:
    """The reflector's reading of a failure (upstream ``{root_cause, key_insight}``), abstract: no
    object or colour names."""

    root_cause: str
    key_insight: str


@dataclass(frozen=True)
class PlaybookOperation:
    """One curator operation (upstream ``{type: "ADD", section, content}``)."""

    section: str  # "strategies" | "templates" | "pitfalls"
    content: str
    type: str = "ADD"


@dataclass(frozen=True)
class EnhancedPrompt:
    """The generator's output (upstream ``{reasoning, enhanced_prompt}``)."""

    enhanced_prompt: str
    reasoning: str = ""


class Grounder(Protocol):
    name: str

    def detect(self, image: Image.Image, prompt: str, *, box_threshold: float = 0.3,
               text_threshold: float = 0.25) -> list[Detection]: ...

    def track(self, original: Image.Image, edited: Image.Image, box: Box) -> Box | None: ...


class VLMJudge(Protocol):
    """Each method returns the model's raw reply text; ``engines.hoi.judge_replies`` parses the
    HOI-Eval ones, so an unreadable reply is recorded as an error, never as a zero."""

    name: str

    def yes_no(self, images: Sequence[Image.Image], question: str, context: str = "") -> str: ...

    def match_score(self, before: Image.Image, after_candidates: Image.Image, entity: str,
                    instruction: str) -> str: ...

    def analyze_video(self, image: Image.Image, frames: Sequence[Image.Image], instruction: str,
                      prompt: str) -> VideoReport: ...

    def select_frame(self, frames: Sequence[Image.Image], instruction: str) -> FrameChoice: ...


class ImageEditor(Protocol):
    name: str

    def edit(self, image: Image.Image, instruction: str, *, seed: int = 0) -> Image.Image: ...


class I2VGenerator(Protocol):
    name: str

    def generate(self, image: Image.Image, prompt: str, *, num_frames: int = 17,
                 seed: int = 0) -> list[Image.Image]: ...


class PromptRefiner(Protocol):
    name: str

    def generate(self, image: Image.Image, instruction: str, playbook_text: str) -> EnhancedPrompt: ...

    def reflect(self, report: VideoReport, prompt: str, instruction: str) -> Insight: ...

    def curate(self, insight: Insight, playbook_text: str) -> list[PlaybookOperation]: ...


@dataclass
class RoleTables:
    """Factories by name for each role; ``register`` fills them."""

    grounders: Registry[Callable[..., Grounder]] = field(default_factory=lambda: Registry("hoi", "grounders"))
    judges: Registry[Callable[..., VLMJudge]] = field(default_factory=lambda: Registry("hoi", "VLM judges"))
    editors: Registry[Callable[..., ImageEditor]] = field(default_factory=lambda: Registry("hoi", "image editors"))
    i2v: Registry[Callable[..., I2VGenerator]] = field(
        default_factory=lambda: Registry("hoi", "image-to-video generators"))
    refiners: Registry[Callable[..., PromptRefiner]] = field(default_factory=lambda: Registry("hoi", "prompt refiners"))


TABLES = RoleTables()
KINDS = ("grounder", "judge", "editor", "i2v", "refiner")


def _table(kind: str) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown role {kind!r}; choose one of {', '.join(KINDS)}")
    return {"grounder": TABLES.grounders, "judge": TABLES.judges, "editor": TABLES.editors,
            "i2v": TABLES.i2v, "refiner": TABLES.refiners}[kind]


def register(kind: str, name: str, description: str = ""):
    """Register a factory of a role (``kind`` one of :data:`KINDS`) under ``name``."""
    return _table(kind).register(name, description)


def factory(kind: str, name: str):
    """The factory registered as ``name`` for the role ``kind`` (its parameters are the role's options)."""
    table = _table(kind)
    if name not in table:
        raise ValueError(f"unknown {kind} {echo(name)}; choose one of {', '.join(sorted(table)) or '(none registered)'}")
    return table[name]


def make(kind: str, name: str, **options):
    """An instance of the role ``kind`` registered as ``name``, built with ``options``."""
    return factory(kind, name)(**options)


def names(kind: str) -> list[str]:
    return sorted(_table(kind))
