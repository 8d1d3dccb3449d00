"""The offline image editors, image-to-video generator and SCPE prompt refiner on the drawn scenes.

HOI-Edit (ICML 2026; ``docs/hoi.md``, "Method: SCPE") compares image editors and Wan2.2 (I2V)
steered by SCPE, whose generator, reflector and curator run on Gemini 2.5 Pro. Offline, on the
synthetic scenes of ``engines.hoi.offline.scenes`` (labelled as such; no models of the real benchmark):

- ``editor "offline-faithful" | "offline-drift" | "offline-timid" | "offline-noisy"`` (and
  ``"offline"``, the faithful one): each reads the scene back from the source image
  (:func:`engines.hoi.offline.scenes.read_scene`), works out the scene the instruction asks for, and redraws
  it with its own seeded habits (:data:`EDITORS`): half-done interactions, another outfit, a lost
  object, noise, blur or smear.
- ``i2v "offline"`` (:class:`OfflineI2V`): frames moving from the source toward the instruction's
  end state. Whether the motion completes, the camera stays still and the clothing stays the same
  depends on the prompt (:data:`PROMPT_CUES`), so SCPE's playbook has something to learn.
- ``refiner "offline"`` (:class:`OfflineRefiner`): SCPE's generator (the instruction plus the
  playbook strategies it can apply), reflector (an abstract insight from the critique: no object or
  colour names) and curator (ADD the insight's sentences the playbook lacks).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image

from engines.hoi.offline import scene_edits, scenes
from engines.hoi.offline.reading import image_digest
from engines.hoi.roles import (
    EnhancedPrompt,
    Insight,
    PlaybookOperation,
    VideoReport,
    register,
)

# ---------------------------------------------------------------- image editors


@dataclass(frozen=True)
class EditorHabits:
    """How often an offline editor does each thing (probabilities, drawn independently per edit)."""

    done: float  # the interaction is done (else half-done with ``half``, else left undone)
    half: float
    drift: float  # the person's outfit changes
    lose: float  # the object disappears
    artifacts: float  # noise, blur or smear
    strength: tuple[float, float] = (0.1, 0.4)  # of the artifacts


EDITORS: dict[str, EditorHabits] = {
    "offline-faithful": EditorHabits(done=0.88, half=0.08, drift=0.03, lose=0.0, artifacts=0.05),
    "offline-drift": EditorHabits(done=0.8, half=0.1, drift=0.85, lose=0.05, artifacts=0.1),
    "offline-timid": EditorHabits(done=0.35, half=0.35, drift=0.05, lose=0.0, artifacts=0.05),
    "offline-noisy": EditorHabits(done=0.7, half=0.2, drift=0.1, lose=0.15, artifacts=1.0, strength=(0.3, 1.0)),
}


class OfflineEditor:
    """An image editor's offline stand-in on the drawn scenes (offline default; see the module
    docstring): reads the scene from the source image, works out the scene the instruction asks for
    and redraws it with its habits (:data:`EDITORS`), seeded by the method, seed, image and
    instruction."""

    def __init__(self, name: str = "offline-faithful") -> None:
        if name not in EDITORS:
            raise ValueError(f"unknown offline editor {name!r}; choose one of {', '.join(EDITORS)}")
        self.name = name
        self.habits = EDITORS[name]

    def edit(self, image: Image.Image, instruction: str, *, seed: int = 0) -> Image.Image:
        """The edited image.

        Raises:
            engines.hoi.offline.scenes.NotAScene: the source is not a drawn scene.
            ValueError: the instruction is none of the drawn world's, or names what the scene lacks.
        """
        scene = scenes.read_scene(image)
        keys = scene_edits.motion(scene, instruction)
        habits = self.habits
        rng = random.Random(f"{self.name}|{seed}|{image_digest(image)}|{instruction}")
        outcome, half_way, drifts, loses, spoils = (rng.random() for _ in range(5))
        progress = 1.0 if outcome < habits.done else rng.uniform(0.3, 0.7) if outcome < habits.done + habits.half else 0.0
        pose = scene_edits.pose_at(keys, progress)
        if drifts < habits.drift:
            pose = replace(pose, outfit=scene_edits.drift_identity(replace(scene, outfit=pose.outfit), rng).outfit)
        if loses < habits.lose:
            target = scene_edits.target_of(scene, scene_edits.parse_instruction(instruction)[-1])
            things = list(pose.things)
            things[target] = replace(things[target], box=None)
            pose = replace(pose, things=tuple(things))
        edited = scenes.draw(scene, pose).image
        if spoils < habits.artifacts:
            kind = rng.choice(scene_edits.DEGRADATIONS)
            edited = scene_edits.degrade(edited, kind, rng.uniform(*habits.strength), rng)
        return edited


def _editor_factory(name: str):
    def make(**options) -> OfflineEditor:
        return OfflineEditor(name, **options)
    return make


for _name in EDITORS:
    register("editor", _name)(_editor_factory(_name))
register("editor", "offline")(_editor_factory("offline-faithful"))


# ---------------------------------------------------------------- I2V generator

# What the offline I2V responds to in a prompt: saying the motion completes, the camera is fixed, the
# clothing stays the same. Upstream's Wan2.2 wrap ("The camera is fixed ...") already says the second.
PROMPT_CUES: dict[str, re.Pattern] = {
    "completion": re.compile(r"\b(end state|final state|fully|all the way|carr(?:y|ies) the action through)\b", re.I),
    "camera": re.compile(r"\b(camera is fixed|fixed camera|static shot|camera (?:stays|remains) (?:fixed|still|static)|"
                         r"no camera (?:motion|movement))\b", re.I),
    "appearance": re.compile(r"\b(clothing|appearance|outfit)\b[^.]{0,40}\b(same|unchanged|constant)\b|"
                             r"\b(same|unchanged|constant)\b[^.]{0,40}\b(clothing|appearance|outfit)\b", re.I),
}


@dataclass(frozen=True)
class I2VHabits:
    """The offline I2V's failure rates (probability without the prompt's cue, with it)."""

    stall: tuple[float, float] = (0.6, 0.1)  # the motion stops short
    camera: tuple[float, float] = (0.55, 0.05)  # the camera pans or zooms
    drift: tuple[float, float] = (0.25, 0.03)  # the clothing changes midway
    motion_share: float = 0.7  # the action takes this share of the clip, then holds


def prompt_cues(prompt: str) -> dict[str, bool]:
    """Which of :data:`PROMPT_CUES` a prompt gives."""
    return {name: bool(pattern.search(prompt)) for name, pattern in PROMPT_CUES.items()}


def _pan(frame: Image.Image, dx: float) -> Image.Image:
    pixels = np.asarray(frame)
    columns = np.clip(np.arange(pixels.shape[1]) - int(round(dx)), 0, pixels.shape[1] - 1)
    return Image.fromarray(np.ascontiguousarray(pixels[:, columns]), "RGB")


def _zoom(frame: Image.Image, factor: float) -> Image.Image:
    w, h = frame.size
    cx, cy = w / 2, h / 2
    # Nearest neighbour keeps the drawn colours exact: a camera move is not a loss of quality.
    return frame.transform((w, h), Image.Transform.AFFINE, (1 / factor, 0, cx - cx / factor, 0, 1 / factor,
                                                             cy - cy / factor), resample=Image.Resampling.NEAREST)


@register("i2v", "offline")
class OfflineI2V:
    """An image-to-video generator's offline stand-in on the drawn scenes (offline default; see the
    module docstring). The seed fixes the random draws; the prompt's cues lower the failure rates,
    so a better prompt never does worse on the same seed."""

    name = "offline"

    def __init__(self, habits: I2VHabits | None = None) -> None:
        self.habits = habits or I2VHabits()

    def generate(self, image: Image.Image, prompt: str, *, num_frames: int = 17, seed: int = 0) -> list[Image.Image]:
        """``num_frames`` frames from the source toward the end state of the "Make the person ..."
        instruction in ``prompt`` (nothing moves when there is none).

        Raises:
            engines.hoi.offline.scenes.NotAScene: the source is not a drawn scene.
        """
        if num_frames < 2:
            raise ValueError(f"num_frames must be at least 2, got {num_frames}")
        scene = scenes.read_scene(image)
        clauses = scene_edits.find_instruction(prompt)
        try:
            keys = scene_edits.motion(scene, clauses) if clauses else [scenes.pose_of(scene)]
        except ValueError:  # the prompt names an object the scene lacks: nothing happens
            keys = [scenes.pose_of(scene)]
        rng = random.Random(f"offline-i2v|{seed}|{image_digest(image)}")
        stall_draw, camera_draw, drift_draw = rng.random(), rng.random(), rng.random()
        stall_at, drift_at = rng.uniform(0.25, 0.55), rng.uniform(0.35, 0.65)
        pan = rng.choice((-1, 1)) * rng.uniform(6, 14)  # never a whole stripe period (16 px): a pan always shows
        zoom = rng.uniform(0.08, 0.18)
        camera_kind = rng.choice(("pan", "zoom"))
        other_outfit = scene_edits.drift_identity(scene, rng).outfit
        cues, habits = prompt_cues(prompt), self.habits
        stalls = stall_draw < habits.stall[cues["completion"]]
        moves = camera_draw < habits.camera[cues["camera"]]
        drifts = drift_draw < habits.drift[cues["appearance"]]
        frames = []
        for i in range(num_frames):
            u = i / (num_frames - 1)
            progress = min(1.0, u / habits.motion_share)
            if stalls:
                progress = min(progress, stall_at)
            pose = scene_edits.pose_at(keys, progress)
            if drifts and u >= drift_at:
                pose = replace(pose, outfit=other_outfit)
            frame = scenes.draw(scene, pose).image
            if moves:
                frame = _pan(frame, pan * u) if camera_kind == "pan" else _zoom(frame, 1 + zoom * u)
            frames.append(frame)
        return frames


# ---------------------------------------------------------------- prompt refiner


@dataclass(frozen=True)
class Device:
    """One thing the offline refiner knows to write into a prompt: the playbook words that call for
    it, the sentence it writes, and the insight that teaches it (abstract: no object or colour)."""

    triggers: tuple[str, ...]  # in a strategy (lower case)
    sentence: str  # written into the prompt
    failure: tuple[str, ...]  # critique words that show it was missing
    root_cause: str
    key_insight: str


DEVICES: dict[str, Device] = {
    "completion": Device(
        ("end state", "final state", "fully executed", "carried through"),
        "The person carries the action through to its end state, which holds in the final frames.",
        ("not carried through", "stops short", "incomplete", "not completed"),
        "The prompt names the action but not its finished state, so the motion stops before the interaction "
        "is complete.",
        "Describe the action through to its end state and say that the end state holds in the final frames."),
    "camera": Device(
        ("camera is fixed", "fixed camera", "static shot", "no camera movement"),
        "The camera is fixed: a static shot with no pan and no zoom.",
        ("camera",),
        "Nothing in the prompt fixes the camera, so the video pans or zooms.",
        "Say that the camera is fixed: a static shot with no pan and no zoom."),
    "appearance": Device(
        ("appearance", "clothing"),
        "The person's clothing and appearance stay the same in every frame.",
        ("clothing", "appearance", "outfit"),
        "Nothing in the prompt keeps the person's look constant, so their clothing changes mid-video.",
        "Say that the person's clothing and appearance stay the same in every frame."),
}


def strategy_lines(playbook_text: str) -> list[str]:
    """The playbook's strategies: the lines under a "strategies" heading (upstream's JSON key or a
    Markdown heading), or every line when there is no heading; a line saying "pitfall" never is one."""
    lines, section = [], None
    for line in playbook_text.splitlines():
        stripped = line.strip()
        heading = re.match(r"^(?:#+\s*|\"?)(strategies|templates|pitfalls)\b", stripped, flags=re.I)
        if heading:
            section = heading.group(1).lower()
            continue
        if stripped and section in (None, "strategies") and "pitfall" not in stripped.lower():
            lines.append(stripped)
    return lines


@register("refiner", "offline")
class OfflineRefiner:
    """SCPE's generator, reflector and curator's offline stand-in (offline default; see the module
    docstring). It knows three prompt devices (:data:`DEVICES`)."""

    name = "offline"

    def generate(self, image: Image.Image, instruction: str, playbook_text: str) -> EnhancedPrompt:
        """The instruction, then the sentence of every device a playbook strategy calls for."""
        strategies = [line.lower() for line in strategy_lines(playbook_text)]
        used = [name for name, device in DEVICES.items()
                if any(trigger in line for line in strategies for trigger in device.triggers)]
        prompt = " ".join([instruction.strip().rstrip(".") + ".", *(DEVICES[name].sentence for name in used)])
        reasoning = (f"Applied the playbook's strategies on {', '.join(used)}." if used
                     else "The playbook has no strategy this generator can apply; the instruction is used as is.")
        return EnhancedPrompt(prompt, reasoning)

    def reflect(self, report: VideoReport, prompt: str, instruction: str) -> Insight:
        """The root cause and the key insight of a failed video, from its critique."""
        critique = report.critique.lower()
        found = [device for device in DEVICES.values() if any(word in critique for word in device.failure)]
        if not found:
            return Insight("The critique names no failure this reflector recognises.",
                           "Describe the requested interaction explicitly, from its start to its end state.")
        return Insight(" ".join(d.root_cause for d in found), " ".join(d.key_insight for d in found))

    def curate(self, insight: Insight, playbook_text: str) -> list[PlaybookOperation]:
        """An ADD to the strategies for each sentence of the insight the playbook does not have."""
        known = playbook_text.lower()
        sentences = [s.strip() for s in re.split(r"(?<=\.)\s+", insight.key_insight) if s.strip()]
        return [PlaybookOperation("strategies", s) for s in dict.fromkeys(sentences) if s.lower() not in known]
