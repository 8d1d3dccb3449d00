"""How a drawn scene changes: the instruction language, HOI-Eval's questions on it, the motion of
an action, and the mistakes an editor makes.

HOI-Edit (ICML 2026; ``docs/hoi.md``, "Method: Task and benchmark format") instructions are, offline, sentences of a
small language (:data:`ACTIONS`) over the scenes of ``engines.hoi.offline.scenes``: ``parse_instruction``
reads them, ``apply_instruction`` gives the scene the instruction asks for (rendering it gives the
ideal edit); :func:`expectation` and :func:`read_question` say what HOI-Eval's interaction and extra
questions check; :func:`motion` and :func:`pose_at` give the in-between poses of the action (for
generated videos and half-done edits); :func:`degrade`, :func:`drift_identity` and :func:`without`
make the mistakes an editor makes (low quality, identity drift, a lost object). Synthetic demo
data, labelled as such.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from PIL import Image, ImageFilter

from engines.hoi.offline.scenes import (
    HELD,
    OBJECTS,
    OUTFITS,
    RESTING,
    TOOLS,
    Pose,
    Scene,
    ThingPose,
    free_slot,
    grab_point,
    pose_of,
    tool_grab_point,
)

# ---------------------------------------------------------------- the instruction language


@dataclass(frozen=True)
class Action:
    """One verb of the drawn world: how an instruction and HOI-Eval's question say it, and the end
    state it asks for (None: unchanged)."""

    name: str
    instruction: str  # the clause after "Make the person ", with {obj} (and {tool})
    past: str  # the question's verb: "Has the person in the blue bounding box <past> the ..."
    tail: str = ""  # what follows "... in the red bounding box" in the question
    place: str | None = None  # where the object ends
    form: str | None = None  # the form it ends in
    contact: bool | None = None  # True: the hand (or its tool) touches it at the end; False: let go
    tool: bool = False  # done with the tool


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("pick_up", "pick up the {obj}", "picked up", place="hand", contact=True),
    Action("touch_with_tool", "touch the {obj} with the {tool}", "touched",
           " with the {tool} in the yellow bounding box", contact=True, tool=True),
    Action("touch", "touch the {obj}", "touched", contact=True),
    Action("put_down", "put down the {obj}", "put down", place="table", contact=False),
    Action("let_go", "let go of the {obj}", "let go of", contact=False),
    Action("raise", "lift the {obj} above the head", "lifted", " above the head", place="raised", contact=True),
    Action("put_on_shelf", "put the {obj} on the shelf", "put", " on the shelf", place="shelf", contact=False),
    Action("put_in_basket", "put the {obj} into the basket", "put", " into the basket", place="basket",
           contact=False),
    Action("squeeze", "squeeze the {obj}", "squeezed", place="hand", form="squashed", contact=True),
    Action("crush_to_fit", "make the {obj} fit into the basket", "crushed", " and put it into the basket",
           place="basket", form="crushed", contact=False),
    Action("crush", "crush the {obj}", "crushed", form="crushed", contact=True),
    Action("fill", "get the {obj} ready for drinking", "filled", " with water", place="hand", form="filled",
           contact=True),
    Action("read", "start reading the {obj}", "opened", place="hand", form="open", contact=True),
)}
# Which of several alike objects a clause means: "the cup on the shelf", "the ball they are touching".
QUALIFIERS = {"on the table": "table", "from the table": "table", "on the shelf": "shelf",
              "from the shelf": "shelf", "in the basket": "basket", "they are holding": "hand",
              "they are touching": "touch"}
_NAME = r"(?P<obj>[a-z]+)"
_QUALIFIER = "(?P<qualifier>(?: (?:" + "|".join(QUALIFIERS) + "))?)"


def _clause_pattern(action: Action) -> re.Pattern:
    text = re.escape(action.instruction).replace(re.escape("{obj}"), _NAME + _QUALIFIER)
    text = text.replace(re.escape("{tool}"), r"(?P<tool>[a-z]+)")
    return re.compile(text + "$")


_CLAUSES = [(action, _clause_pattern(action)) for action in ACTIONS.values()]


@dataclass(frozen=True)
class Clause:
    """One clause of an instruction: the action, the object's name, which one (a QUALIFIERS value
    or None) and the tool's name."""

    action: Action
    object_name: str
    qualifier: str | None = None
    tool_name: str | None = None

    @property
    def question(self) -> str:
        """HOI-Eval's interaction question for this clause (upstream ``generated_question``)."""
        tail = self.action.tail.format(tool=self.tool_name)
        return (f"Has the person in the blue bounding box {self.action.past} the {self.object_name} "
                f"in the red bounding box{tail}?")


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and name[:-1] in {**OBJECTS, **TOOLS} else name


def parse_instruction(text: str) -> list[Clause]:
    """The clauses of an instruction ("Make the person put the cup into the basket and pick up the
    ball"); ``ValueError`` naming the clause that is none of :data:`ACTIONS`."""
    body = " ".join(text.strip().rstrip(".").split())
    body = re.sub(r"^make the person\s+", "", body, flags=re.I)
    clauses = []
    for part in body.split(" and "):
        part = part.strip().lower()
        for action, pattern in _CLAUSES:
            match = pattern.match(part)
            if match:
                qualifier = QUALIFIERS.get(match.group("qualifier").strip()) if match.group("qualifier") else None
                tool = match.groupdict().get("tool")
                clauses.append(Clause(action, _singular(match.group("obj")), qualifier,
                                      _singular(tool) if tool else None))
                break
        else:
            known = "; ".join(a.instruction for a in ACTIONS.values())
            raise ValueError(f"cannot read {part!r} in the instruction {text!r}: the drawn scenes know {known}")
    return clauses


def find_instruction(prompt: str) -> list[Clause]:
    """The clauses of the first "Make the person ..." sentence in a longer prompt (its longest
    beginning that reads, so that words run on after it do not matter), or of the whole prompt;
    [] when nothing reads."""
    for sentence in re.findall(r"make the person [^.]*", prompt, flags=re.I) or [prompt]:
        words = sentence.split()
        for end in range(len(words), 0, -1):
            try:
                return parse_instruction(" ".join(words[:end]))
            except ValueError:
                continue
    return []


def target_of(scene: Scene, clause: Clause) -> int:
    """The index of the object a clause means; ``ValueError`` when the scene has none."""
    candidates = [i for i, t in enumerate(scene.things) if t.kind == clause.object_name]
    if clause.qualifier == "touch":
        candidates = [i for i in candidates if i == scene.touch]
    elif clause.qualifier == "hand":
        candidates = [i for i in candidates if scene.things[i].place in HELD]
    elif clause.qualifier is not None:
        candidates = [i for i in candidates if scene.things[i].place == clause.qualifier]
    if not candidates:
        where = f" ({clause.qualifier})" if clause.qualifier else ""
        raise ValueError(f"the scene has no {clause.object_name}{where}")
    return candidates[0]


def apply(scene: Scene, clause: Clause) -> Scene:
    """The scene after one clause is done."""
    action = clause.action
    target = target_of(scene, clause)
    things = list(scene.things)
    touch = scene.touch
    tool = None
    if action.tool:
        tool = next((i for i, t in enumerate(things) if t.kind == clause.tool_name), None)
        if tool is None:
            raise ValueError(f"the scene has no {clause.tool_name}")
    # The hand puts down whatever it holds that the clause does not use.
    held = scene.held
    if held is not None and held not in (target, tool) and (action.place in HELD or action.tool or action.contact):
        others = things[:held] + things[held + 1:]
        things[held] = replace(things[held], place="table", slot=free_slot(others, "table"))
        touch = None
    thing = things[target]
    if action.place is not None and action.place != thing.place:
        slot = free_slot(things[:target] + things[target + 1:], action.place) if action.place in ("table", "shelf") else 0
        thing = replace(thing, place=action.place, slot=slot)
    if action.form is not None:
        thing = replace(thing, form=action.form)
    things[target] = thing
    if tool is not None:
        things[tool] = replace(things[tool], place="hand", slot=0)
        touch = target
    elif action.contact:
        touch = target if thing.place in RESTING else None
    elif action.contact is False:
        touch = None if touch == target else touch
        if scene.held_tool and scene.touch == target:  # the tool goes back on the table
            others = things[:held] + things[held + 1:]
            things[held] = replace(things[held], place="table", slot=free_slot(others, "table"))
    elif thing.place in HELD:
        touch = None
    return replace(scene, things=tuple(things), touch=touch)


def apply_instruction(scene: Scene, instruction: str) -> Scene:
    """The scene an instruction asks for (its clauses done in order): rendered, the ideal edit."""
    for clause in parse_instruction(instruction):
        scene = apply(scene, clause)
    return scene


# ---------------------------------------------------------------- HOI-Eval's extra questions


@dataclass(frozen=True)
class Expectation:
    """What must hold of an object for a question to be answered yes (None: anything)."""

    place: str | None = None
    form: str | None = None
    contact: bool | None = None
    tool: bool = False


def expectation(action: Action) -> Expectation:
    return Expectation(action.place, action.form, action.contact, action.tool)


# The ``question_v6`` questions the demo asks beyond the interaction (``{obj}``: the object's name).
AUX_QUESTIONS: dict[str, tuple[str, Expectation]] = {
    "on_shelf": ("Is the {obj} on the shelf?", Expectation(place="shelf")),
    "in_basket": ("Is the {obj} in the basket?", Expectation(place="basket")),
    "put_in_basket": ("Has the {obj} been put into the basket?", Expectation(place="basket")),
    "on_table": ("Is the {obj} on the table?", Expectation(place="table")),
    "held": ("Is the person holding the {obj}?", Expectation(place="hand", contact=True)),
    "squashed": ("Is the {obj} squashed?", Expectation(form="squashed")),
    "crushed": ("Is the {obj} crushed?", Expectation(form="crushed")),
    "filled": ("Is there water in the {obj}?", Expectation(form="filled")),
    "open": ("Is the {obj} open?", Expectation(form="open")),
}
_INTERACTION = re.compile(r"^has the person in the blue bounding box (?P<past>.+?) the (?P<obj>[a-z]+) "
                          r"in the red bounding box(?P<tail>.*)\?$")


def aux_question(name: str, object_name: str) -> str:
    return AUX_QUESTIONS[name][0].format(obj=object_name)


@dataclass(frozen=True)
class ReadQuestion:
    """A question the drawn world understands: about which object, what must hold, and whether it is
    the interaction question (boxes drawn) or an extra question."""

    object_name: str
    expect: Expectation
    interaction: bool
    tool_name: str | None = None


def read_question(text: str) -> ReadQuestion | None:
    """What a question asks, or None when it is none of the demo's questions."""
    question = " ".join(text.strip().split()).lower()
    match = _INTERACTION.match(question)
    if match:
        for action in ACTIONS.values():
            tail = re.escape(action.tail).replace(re.escape("{tool}"), r"(?P<tool>[a-z]+)")
            if action.past == match.group("past") and re.fullmatch(tail, match.group("tail")):
                tool = re.fullmatch(tail, match.group("tail")).groupdict().get("tool")
                return ReadQuestion(_singular(match.group("obj")), expectation(action), True, tool)
        return None
    for template, expect in AUX_QUESTIONS.values():
        pattern = re.escape(template.lower()).replace(re.escape("{obj}"), _NAME)
        match = re.fullmatch(pattern, question)
        if match:
            return ReadQuestion(_singular(match.group("obj")), expect, False)
    return None


# ---------------------------------------------------------------- motion: the poses in between


def _keyframes(scene: Scene, after: Scene, clause: Clause) -> list[Pose]:
    """The poses of one clause: reach for what moves, carry it, let go, as needed."""
    start, end = pose_of(scene), pose_of(after)
    target = target_of(scene, clause)
    poses = [start]
    moving = target
    if clause.action.tool:
        moving = next(i for i, t in enumerate(scene.things) if t.kind == clause.tool_name)
    was, now = start.things[moving], end.things[moving]
    grab = tool_grab_point if scene.things[moving].is_tool else grab_point
    if not was.held and (now.held or was.box != now.box or (clause.action.contact and not clause.action.tool)):
        reached = grab(was.box)
        if reached != start.hand:
            poses.append(replace(start, hand=reached))
    if not now.held and was.box != now.box:
        carried = list(end.things)
        carried[moving] = replace(now, held=True)
        poses.append(replace(end, hand=grab(now.box), things=tuple(carried)))
    if poses[-1] != end:
        poses.append(end)
    return poses


def motion(scene: Scene, instruction: str | Sequence[Clause]) -> list[Pose]:
    """The key poses from ``scene`` to the scene the instruction (or its parsed clauses) asks for,
    clause after clause."""
    poses: list[Pose] = []
    clauses = parse_instruction(instruction) if isinstance(instruction, str) else instruction
    for clause in clauses:
        after = apply(scene, clause)
        keys = _keyframes(scene, after, clause)
        poses.extend(keys if not poses else keys[1:])
        scene = after
    return poses


def _lerp(a: Sequence[float], b: Sequence[float], t: float) -> tuple[float, ...]:
    return tuple(x + (y - x) * t for x, y in zip(a, b, strict=True))


def pose_at(keyframes: Sequence[Pose], progress: float) -> Pose:
    """The pose a fraction ``progress`` (0 to 1) along the key poses, each step taking equal time;
    a changing form switches halfway through its step."""
    if not keyframes:
        raise ValueError("no key poses")
    progress = min(max(progress, 0.0), 1.0)
    if len(keyframes) == 1 or progress == 1.0:
        return keyframes[-1]
    position = progress * (len(keyframes) - 1)
    step = int(position)
    a, b, t = keyframes[step], keyframes[step + 1], position - step
    things = []
    for x, y in zip(a.things, b.things, strict=True):
        if x.box is None or y.box is None:
            things.append(y if t >= 0.5 else x)
            continue
        things.append(ThingPose(_lerp(x.box, y.box, t), y.form if t >= 0.5 else x.form, x.held or y.held,
                                y.in_basket if t >= 0.5 else x.in_basket))
    return Pose(_lerp(a.hand, b.hand, t), tuple(things), b.outfit if t >= 0.5 else a.outfit)


# ---------------------------------------------------------------- what an editor gets wrong


def drift_identity(scene: Scene, rng: random.Random) -> Scene:
    """The same scene with the person in another outfit (an identity drift)."""
    others = [name for name in OUTFITS if name != scene.outfit]
    return replace(scene, outfit=rng.choice(others))


def without(scene: Scene, index: int) -> Scene:
    """The scene with thing ``index`` gone (a lost object)."""
    touch = scene.touch
    if touch is not None:
        touch = None if touch == index else touch - (touch > index)
    return replace(scene, things=scene.things[:index] + scene.things[index + 1:], touch=touch)


DEGRADATIONS = ("noise", "blur", "smear")


def degrade(image: Image.Image, kind: str, strength: float, rng: random.Random) -> Image.Image:
    """A low-quality copy of ``image``: Gaussian ``noise``, a ``blur`` or a horizontal ``smear``
    (``strength`` from 0, barely, to 1, badly)."""
    if kind not in DEGRADATIONS:
        raise ValueError(f"unknown degradation {kind!r}; choose one of {', '.join(DEGRADATIONS)}")
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be from 0 to 1, got {strength}")
    if kind == "blur":
        return image.filter(ImageFilter.GaussianBlur(0.8 + 1.7 * strength))
    pixels = np.asarray(image.convert("RGB"), np.float32)
    if kind == "noise":
        noise = np.random.default_rng(rng.getrandbits(32)).normal(0.0, 8.0 + 24.0 * strength, pixels.shape)
        return Image.fromarray(np.clip(pixels + noise, 0, 255).astype(np.uint8), "RGB")
    length = 3 + round(8 * strength)
    smeared = np.mean([np.roll(pixels, shift, axis=1) for shift in range(length)], axis=0)
    return Image.fromarray(smeared.astype(np.uint8), "RGB")
