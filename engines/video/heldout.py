"""The held-out video benchmark: videos and LVBench-format questions made independently of the
synthetic benchmark the offline agent was tuned on (``engines.video.synthetic``), to measure it on
videos it was not made for. Nothing here is shared with that generator: its own shapes (squares,
oblong rectangles, circles, triangles pointing up or down, and plus-shaped crosses), its own
colours (CSS colours of all thirteen colour names, each drawn with some jitter), its own
backgrounds (flat, linear gradients at any angle, radial, some with grain, a new one every minute),
its own text (a frame counter and a clock burned in at the corners, words on a banner), sizes from
160 x 120 to 1280 x 720, constant and variable frame rates, and lengths of 1 to 60 minutes.

A video is a sequence of **scenes** (18-45 s, with short empty gaps): each shows one to three
objects, each either still in its own cell of a 3 x 3 grid or moving along a row or a column (left
to right, right to left, up or down) without leaving the frame; some objects come back in later
scenes (so "how many separate times" has answers above one). Some scenes show a word on a banner.

Questions (one LVBench-format line each, ``kind`` naming the kind): colour, position, motion,
count (objects in a frame), repeat (separate appearances), order (which appears first or last) and
text, each with a time reference phrased in one of the ways LVBench's questions use ("at 04:10",
"at 0:04:10", "around the two-minute mark", "in the first minute", "near the end", "between 2:10 and
2:40", "after the X disappears") and ground-truth evidence spans in ``time_reference`` (a point
as a zero-width span, as LVBench writes them). Options A-D or A-E, in random order.

The set is fixed by its seed (:data:`HELDOUT_SEED`); the offline agent's thresholds are never
tuned on it. Written to a folder: ``<video_id>.mp4``, ``<video_id>.truth.json`` (the scenes, for
tests) and ``questions.jsonl``, ``manifest.json``.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from functools import lru_cache
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw, ImageFont

HELDOUT_SEED = 20260511
VERSION = 1

# CSS colours by the name a person gives them (each drawn with a little jitter).
PAINTS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "red": ((220, 20, 60), (178, 34, 34), (230, 25, 25)),
    "orange": ((255, 140, 0), (255, 127, 80), (240, 120, 10)),
    "yellow": ((255, 215, 0), (250, 240, 30), (240, 220, 40)),
    "green": ((50, 205, 50), (34, 139, 34), (46, 160, 87)),
    "cyan": ((0, 230, 230), (0, 206, 209), (64, 224, 208)),
    "blue": ((65, 105, 225), (20, 40, 240), (30, 110, 250)),
    "purple": ((138, 43, 226), (153, 50, 204), (110, 40, 170)),
    "magenta": ((255, 0, 255), (200, 0, 200), (230, 40, 230)),
    "pink": ((255, 105, 180), (255, 20, 147), (255, 175, 200)),
    "brown": ((139, 69, 19), (110, 70, 35), (120, 60, 25)),
    "black": ((10, 10, 10), (25, 25, 25), (35, 30, 30)),
    "white": ((250, 250, 250), (240, 240, 235), (245, 245, 250)),
    "grey": ((128, 128, 128), (150, 150, 150), (105, 105, 105)),
}
FORMS = ("square", "rectangle", "circle", "triangle", "cross")
# What a question calls each form (the cross is "other": no question names it, but it is there).
FORM_WORDS = {"square": "square", "rectangle": "rectangle", "circle": "circle", "triangle": "triangle"}
WORDS = ("HARBOR", "VELVET", "MARBLE", "SUMMIT", "COPPER", "LANTERN", "MEADOW", "FALCON", "PEPPER", "CASTLE",
         "ORBIT", "TIMBER", "JUNGLE", "SILVER", "THUNDER", "PUZZLE")
CELLS = (("top-left", "top", "top-right"), ("left", "centre", "right"), ("bottom-left", "bottom", "bottom-right"))
WAYS = {"right": "from left to right", "left": "from right to left", "up": "upwards", "down": "downwards",
        "still": "it does not move"}
STAGE = (0.12, 0.9)  # objects stay between the banner strip at the top and the counter and clock at the bottom
WAY_OPTIONS = ("from left to right", "from right to left", "upwards", "downwards", "it does not move")


@dataclass(frozen=True)
class VideoSpec:
    """One held-out video: its size, frame rate (``vfr``: frames at irregular times around it) and length."""

    width: int
    height: int
    fps: float
    minutes: float
    vfr: bool = False


# The held-out set: sizes from 160 x 120 to 1280 x 720, 5 to 25 fps (two with variable frame
# rates), 1 to 60 minutes.
HELDOUT_SET = (
    VideoSpec(160, 120, 10, 3), VideoSpec(320, 240, 25, 4), VideoSpec(640, 360, 12, 5, vfr=True),
    VideoSpec(854, 480, 15, 8), VideoSpec(1280, 720, 8, 2), VideoSpec(480, 270, 6, 20, vfr=True),
    VideoSpec(320, 180, 5, 60), VideoSpec(1024, 576, 12, 1),
)
QUICK_SET = (VideoSpec(160, 120, 8, 1.5), VideoSpec(640, 360, 10, 1.5, vfr=True))


@dataclass
class Actor:
    """One object in one scene: ``identity`` names it across scenes (same colour name and form)."""

    identity: int
    colour: str
    rgb: tuple[int, int, int]
    form: str
    size: float  # side, as a fraction of the frame's height
    start: float
    end: float
    cell: tuple[int, int]  # (row, column) where it is, or starts
    way: str  # still, left, right, up, down
    pointing: str = "up"  # a triangle's apex

    def centre(self, t: float) -> tuple[float, float]:
        """Its centre at ``t`` as fractions of the frame (x, y): a still object in its cell; a moving
        one crossing its row (or column) from 1/6 to 5/6 of the frame over its scene."""
        row, col = self.cell
        x, y = (col + 0.5) / 3, (row + 0.5) / 3
        if self.way != "still":
            share = min(1.0, max(0.0, (t - self.start) / max(1e-6, self.end - self.start)))
            travel = 1 / 6 + share * 4 / 6
            x, y = {"right": (travel, y), "left": (1 - travel, y), "down": (x, travel), "up": (x, 1 - travel)}[self.way]
        return x, STAGE[0] + (STAGE[1] - STAGE[0]) * y

    def on(self, t: float) -> bool:
        return self.start <= t < self.end


@dataclass
class Scene:
    start: float
    end: float
    actors: list[Actor]
    word: str | None = None


@dataclass
class Truth:
    """Everything in one held-out video."""

    video_id: str
    spec: VideoSpec
    duration: float
    backgrounds: list[dict]
    scenes: list[Scene]
    questions: list[dict] = field(default_factory=list)

    def actors_at(self, t: float) -> list[Actor]:
        return [a for s in self.scenes for a in s.actors if a.on(t)]

    def word_at(self, t: float) -> str | None:
        return next((s.word for s in self.scenes if s.start <= t < s.end and s.word), None)


# ------------------------------------------------------------------ backgrounds


def _lab_distance(a, b) -> float:
    def lab(rgb):
        c = np.asarray(rgb, float) / 255
        c = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
        x, y, z = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ c
        f = [v ** (1 / 3) if v > 0.008856 else 7.787 * v + 16 / 116 for v in (x / 0.95047, y, z / 1.08883)]
        return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])
    return float(np.linalg.norm(lab(a) - lab(b)))


def _background_spec(rng: random.Random) -> dict:
    """A background: flat, a linear gradient at an angle, or radial; between two muted colours."""
    def muted():
        import colorsys
        h, s, v = rng.random(), rng.uniform(0.0, 0.35), rng.uniform(0.3, 0.85)
        return tuple(int(c * 255) for c in colorsys.hsv_to_rgb(h, s, v))
    kind = rng.choice(("flat", "linear", "linear", "radial"))
    first = muted()
    second = first if kind == "flat" else muted()
    return {"kind": kind, "a": first, "b": second, "angle": rng.uniform(0, 2 * math.pi),
            "grain": rng.choice((0.0, 0.0, 4.0)), "seed": rng.randrange(1 << 30)}


def _background_colours(spec: dict) -> list[tuple[int, int, int]]:
    a, b = np.asarray(spec["a"], float), np.asarray(spec["b"], float)
    return [tuple(int(v) for v in a + (b - a) * k) for k in (0.0, 0.5, 1.0)]


@lru_cache(maxsize=4)
def _background_image(spec_json: str, width: int, height: int) -> np.ndarray:
    spec = json.loads(spec_json)
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    u, v = xs / width - 0.5, ys / height - 0.5
    if spec["kind"] == "flat":
        mix = np.zeros_like(u)
    elif spec["kind"] == "linear":
        mix = np.clip(u * math.cos(spec["angle"]) + v * math.sin(spec["angle"]) + 0.5, 0, 1)
    else:
        mix = np.clip(np.hypot(u, v) / 0.7, 0, 1)
    a, b = np.asarray(spec["a"], np.float32), np.asarray(spec["b"], np.float32)
    image = a + (b - a) * mix[..., None]
    if spec["grain"]:
        image = image + np.random.default_rng(spec["seed"]).normal(0, spec["grain"], (height, width, 1))
    return np.clip(image, 0, 255).astype(np.float32)


# ------------------------------------------------------------------ the script


def _paint(rng: random.Random, backgrounds: list[dict], avoid: set[str]) -> tuple[str, tuple[int, int, int]]:
    """A colour name (not in ``avoid``) and its jittered value that stands out from the backgrounds."""
    names = [n for n in PAINTS if n not in avoid]
    rng.shuffle(names)
    for name in names:
        base = rng.choice(PAINTS[name])
        rgb = tuple(int(min(255, max(0, c + rng.randint(-8, 8)))) for c in base)
        if all(_lab_distance(rgb, c) >= 30 for bg in backgrounds for c in _background_colours(bg)):
            return name, rgb
    raise RuntimeError("no colour stands out from these backgrounds")


def _scene_actors(rng: random.Random, start: float, end: float, backgrounds: list[dict], recurring: list[Actor],
                  next_identity: list[int]) -> list[Actor]:
    """One to three objects in distinct cells; at most one moves, along a row or a column kept free."""
    count = rng.choice((1, 2, 2, 3, 3))
    actors: list[Actor] = []
    used_cells: set[tuple[int, int]] = set()
    lane: tuple[str, int] | None = None
    if rng.random() < 0.55:
        way = rng.choice(("left", "right", "up", "down"))
        lane = ("row", rng.randrange(3)) if way in {"left", "right"} else ("col", rng.randrange(3))
        cell = (lane[1], 1) if lane[0] == "row" else (1, lane[1])
        actors.append(_new_actor(rng, start, end, backgrounds, {a.colour for a in actors}, cell, way, recurring,
                                 next_identity))
    free = [(r, c) for r in range(3) for c in range(3)
            if lane is None or (lane[0] == "row" and r != lane[1]) or (lane[0] == "col" and c != lane[1])]
    rng.shuffle(free)
    for cell in free[: count - len(actors)]:
        used_cells.add(cell)
        actors.append(_new_actor(rng, start, end, backgrounds, {a.colour for a in actors}, cell, "still", recurring,
                                 next_identity))
    return actors


def _new_actor(rng, start, end, backgrounds, taken_colours, cell, way, recurring, next_identity) -> Actor:
    comeback = [a for a in recurring if a.colour not in taken_colours and
                all(_lab_distance(a.rgb, c) >= 30 for bg in backgrounds for c in _background_colours(bg))]
    if comeback and rng.random() < 0.3:
        old = rng.choice(comeback)
        return Actor(old.identity, old.colour, old.rgb, old.form, old.size, start, end, cell, way, old.pointing)
    colour, rgb = _paint(rng, backgrounds, taken_colours)
    identity = next_identity[0]
    next_identity[0] += 1
    return Actor(identity, colour, rgb, rng.choice(FORMS), rng.uniform(0.13, 0.2), start, end, cell, way,
                 rng.choice(("up", "down")))


def make_truth(video_id: str, spec: VideoSpec, seed: int) -> Truth:
    """The scenes and backgrounds of one video (no pixels yet), and its questions."""
    rng = random.Random(seed)
    duration = spec.minutes * 60.0
    backgrounds = [_background_spec(rng) for _ in range(int(math.ceil(duration / 60.0)) + 1)]
    scenes: list[Scene] = []
    recurring: list[Actor] = []
    next_identity = [0]
    t = rng.uniform(2.0, 5.0)
    while t + 18.0 < duration - 2.0:
        length = min(rng.uniform(18.0, 45.0), duration - 2.0 - t)
        minutes = range(int(t // 60), int((t + length) // 60) + 1)
        actors = _scene_actors(rng, t, t + length, [backgrounds[m] for m in minutes], recurring, next_identity)
        recurring += [a for a in actors if all(r.identity != a.identity for r in recurring)]
        word = rng.choice(WORDS) if rng.random() < 0.4 else None
        scenes.append(Scene(round(t, 2), round(t + length, 2), actors, word))
        t += length + rng.choice((rng.uniform(1.0, 3.0), rng.uniform(4.0, 12.0)))
    for scene in scenes:
        for actor in scene.actors:
            actor.start, actor.end = scene.start, scene.end
    truth = Truth(video_id, spec, duration, backgrounds, scenes)
    truth.questions = make_questions(truth, random.Random(seed + 1))
    return truth


# ------------------------------------------------------------------ questions


def _mmss(seconds: float, hours: bool = False) -> str:
    whole = int(seconds)
    if hours:
        return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
    return f"{whole // 60:02d}:{whole % 60:02d}"


def _reference(spans: list[tuple[float, float]]) -> str:
    return ",".join(f"{_mmss(s)}-{_mmss(e)}" for s, e in spans)


def _name(actor: Actor) -> str:
    return f"{actor.colour} {FORM_WORDS.get(actor.form, actor.form)}"


def _unique_form(truth: Truth, actor: Actor, start: float, end: float) -> bool:
    """No other object of the same form is on screen between ``start`` and ``end``."""
    return all(a is actor or a.form != actor.form or a.end <= start or a.start >= end
               for s in truth.scenes for a in s.actors)


def _unique_name(truth: Truth, actor: Actor, start: float, end: float) -> bool:
    return all(a is actor or (a.colour, a.form) != (actor.colour, actor.form) or a.end <= start or a.start >= end
               for s in truth.scenes for a in s.actors)


def _options(rng: random.Random, correct: str, pool: list[str], n: int) -> tuple[list[str], str]:
    others = [p for p in pool if p != correct]
    rng.shuffle(others)
    options = [correct, *others[: n - 1]]
    rng.shuffle(options)
    return options, "ABCDEFG"[options.index(correct)]


def _when(rng: random.Random, truth: Truth, actor: Actor, style: str) -> tuple[str, float, float, list] | None:
    """A time phrase for a moment of ``actor``'s scene, the window it names and the evidence span;
    None when the style does not fit (the object not there, or not alone of its form there)."""
    d, long = truth.duration, truth.duration >= 600
    if style == "clock":
        t = rng.uniform(actor.start + 3.0, actor.end - 3.0)
        return f"at {_mmss(t, hours=long and rng.random() < 0.5)}", t - 2.5, t + 2.5, [(t, t)]
    if style == "range":
        a = actor.start + rng.uniform(1.5, 4.0)
        b = min(actor.end - 1.5, a + rng.uniform(8.0, 25.0))
        if b - a < 5:
            return None
        return f"between {_mmss(a)} and {_mmss(b)}", a, b, [(a, b)]
    if style == "mark":
        minute = round((actor.start + actor.end) / 120.0)
        t = minute * 60.0
        if minute < 1 or not (actor.start + 16 <= t <= actor.end - 16):
            return None
        words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine",
                 10: "ten", 12: "twelve", 15: "fifteen", 20: "twenty", 30: "thirty"}
        said = words.get(minute, str(minute))
        return f"around the {said}-minute mark", t - 15, t + 15, [(t, t)]
    if style == "first":
        if actor.end > 60.0 or actor.start > 45:
            return None
        return "in the first minute", 0.0, 60.0, [(actor.start, actor.end)]
    if style == "end":
        if actor.end < d - 0.1 * d - 2 and actor.end < d - 40:
            return None
        start = max(actor.start, d - max(60.0, 0.1 * d))
        return "near the end of the video", d - max(60.0, 0.1 * d), d, [(start, actor.end)]
    return None


def make_questions(truth: Truth, rng: random.Random) -> list[dict]:
    """Questions of every kind about one video (see the module docstring)."""
    questions: list[dict] = []
    actors = [a for s in truth.scenes for a in s.actors]
    named = [a for a in actors if a.form in FORM_WORDS]
    styles = ("clock", "range", "mark", "first", "end", "clock")

    def add(kind: str, stem: str, options: list[str], answer: str, spans: list) -> None:
        text = stem + "".join(f"\n({'ABCDEFG'[k]}) {o}" for k, o in enumerate(options))
        questions.append({"uid": f"{truth.video_id}-q{len(questions):03d}", "video_key": truth.video_id,
                          "question": text, "answer": answer, "question_type": [kind], "kind": kind,
                          "time_reference": _reference([(s, math.ceil(e) if e > s else s) for s, e in spans]),
                          "duration": truth.duration, "benchmark": "lvbench"})

    def timed(pick, unique=_unique_form):
        """An actor and a time phrase where it is alone of its form (for colour, position, motion)."""
        for _ in range(30):
            actor = rng.choice(named)
            when = _when(rng, truth, actor, rng.choice(styles))
            if when is not None and unique(truth, actor, when[1], when[2]) and pick(actor):
                return actor, when
        return None

    per_kind = max(1, min(3, int(truth.duration // 90)))
    for _ in range(per_kind):
        found = timed(lambda a: True)
        if found:
            actor, (phrase, _, _, spans) = found
            options, answer = _options(rng, actor.colour, list(PAINTS), rng.choice((4, 4, 5)))
            add("colour", f"What colour is the {FORM_WORDS[actor.form]} on screen {phrase}?", options, answer, spans)
        found = timed(lambda a: a.way == "still", _unique_name)
        if found:
            actor, (phrase, _, _, spans) = found
            row, col = actor.cell
            cell = CELLS[row][col]
            if rng.random() < 0.3 and col != 1:
                correct, pool = ("the left half" if col == 0 else "the right half"), ["the left half", "the right half",
                                                                                       "the top half",
                                                                                       "the bottom half"]
                pool = [p for p in pool if not (row == 0 and p == "the top half") and
                        not (row == 2 and p == "the bottom half")]
            else:
                correct, pool = cell, [c for r in CELLS for c in r]
            options, answer = _options(rng, correct, pool, 4)
            add("position", f"Where on the screen is the {_name(actor)} {phrase}?", options, answer, spans)
        found = timed(lambda a: True, _unique_name)
        if found:
            actor, (phrase, _, _, spans) = found
            options, answer = _options(rng, WAYS[actor.way], list(WAY_OPTIONS), 4)
            add("motion", f"Which way is the {_name(actor)} moving {phrase}?", options, answer, spans)
        for _ in range(10):
            scene = rng.choice(truth.scenes)
            t = rng.uniform(scene.start + 3, scene.end - 3)
            style = rng.random()
            phrase = f"at {_mmss(t)}" if style < 0.7 else f"at {_mmss(t, hours=True)}"
            n = len(truth.actors_at(t))
            options, answer = _options(rng, str(n), [str(k) for k in range(0, 6)], 4)
            add("count", f"How many objects are visible on screen {phrase}?", options, answer, [(t, t)])
            break
        words = [s for s in truth.scenes if s.word]
        if words:
            scene = rng.choice(words)
            t = rng.uniform(scene.start + 3, scene.end - 3)
            options, answer = _options(rng, scene.word, list(WORDS), 4)
            phrase = rng.choice((f"at {_mmss(t)}", f"between {_mmss(scene.start + 2)} and {_mmss(scene.end - 2)}"))
            span = [(t, t)] if phrase.startswith("at") else [(scene.start + 2, scene.end - 2)]
            add("text", f"What word is written on the banner {phrase}?", options, answer, span)
    _repeat_questions(truth, rng, named, add)
    _order_questions(truth, rng, named, add)
    _anchor_questions(truth, rng, add)
    return questions


def _appearances(truth: Truth, colour: str, form: str) -> list[tuple[float, float]]:
    spans = sorted((a.start, a.end) for s in truth.scenes for a in s.actors if (a.colour, a.form) == (colour, form))
    joined: list[tuple[float, float]] = []
    for start, end in spans:
        if joined and start - joined[-1][1] < 1.0:
            joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    return joined


def _repeat_questions(truth: Truth, rng: random.Random, named: list[Actor], add) -> None:
    seen: set[tuple[str, str]] = set()
    candidates = []
    for actor in named:
        key = (actor.colour, actor.form)
        if key not in seen:
            seen.add(key)
            candidates.append((key, _appearances(truth, *key)))
    many = [c for c in candidates if len(c[1]) > 1]
    chosen = (many[:1] + [c for c in candidates if len(c[1]) == 1][:1])[: max(1, int(truth.duration // 240))]
    for (colour, form), spans in chosen:
        options, answer = _options(rng, str(len(spans)), ["1", "2", "3", "4", "5"], 4)
        add("repeat", f"How many separate times does the {colour} {FORM_WORDS[form]} appear in the video?",
            options, answer, spans)


def _order_questions(truth: Truth, rng: random.Random, named: list[Actor], add) -> None:
    first: dict[tuple[str, str], float] = {}
    for actor in sorted(named, key=lambda a: a.start):
        first.setdefault((actor.colour, actor.form), actor.start)
    last = {key: max(a.start for a in named if (a.colour, a.form) == key) for key in first}
    keys = list(first)
    if len(keys) < 4:
        return
    for _ in range(max(1, min(2, int(truth.duration // 240)))):
        picked = rng.sample(keys, 4)
        latest = rng.random() < 0.3
        times = last if latest else first
        ranked = sorted(picked, key=lambda k: times[k], reverse=latest)
        if abs(times[ranked[0]] - times[ranked[1]]) < 5.0:
            continue
        options = [f"the {c} {FORM_WORDS[f]}" for c, f in picked]
        answer = "ABCD"[picked.index(ranked[0])]
        word = "last" if latest else "first"
        add("order", f"Which of these objects appears {word} in the video?", options, answer,
            [(times[k], times[k]) for k in picked])


def _anchor_questions(truth: Truth, rng: random.Random, add) -> None:
    """"What colour is the <form> that is on screen right after the <X> disappears?": X seen once,
    the next scene starting within 15 s, with one object of the asked form."""
    made = 0
    for k in range(len(truth.scenes) - 1):
        scene, following = truth.scenes[k], truth.scenes[k + 1]
        if following.start - scene.end > 12.0:
            continue
        gone = [a for a in scene.actors if a.form in FORM_WORDS and len(_appearances(truth, a.colour, a.form)) == 1]
        forms = [a for a in following.actors if a.form in FORM_WORDS and
                 sum(1 for b in following.actors if b.form == a.form) == 1 and
                 all(b.form != a.form or b.colour == a.colour for b in scene.actors)]
        if not gone or not forms or rng.random() < 0.5:
            continue
        anchor, target = rng.choice(gone), rng.choice(forms)
        options, answer = _options(rng, target.colour, list(PAINTS), 4)
        add("colour", f"What colour is the {FORM_WORDS[target.form]} that appears right after the {_name(anchor)} "
                      "disappears?", options, answer, [(following.start, min(following.end, following.start + 10))])
        made += 1
        if made >= max(1, int(truth.duration // 300)):
            break


# ------------------------------------------------------------------ pixels


@lru_cache(maxsize=16)
def _font(size: int):
    return ImageFont.load_default(size=max(8, size))


@lru_cache(maxsize=64)
def _sprite(form: str, side: int, pointing: str) -> np.ndarray:
    """Coverage (0-1) of a form drawn at 4x and reduced (smooth edges), ``side`` pixels across."""
    scale = 4
    width = int(side * (1.7 if form == "rectangle" else 1.0))
    big = Image.new("L", (width * scale, side * scale), 0)
    draw = ImageDraw.Draw(big)
    w, h = width * scale - 1, side * scale - 1
    if form in {"square", "rectangle"}:
        draw.rectangle((0, 0, w, h), fill=255)
    elif form == "circle":
        draw.ellipse((0, 0, w, h), fill=255)
    elif form == "triangle":
        draw.polygon([(w / 2, 0), (w, h), (0, h)] if pointing == "up" else [(0, 0), (w, 0), (w / 2, h)], fill=255)
    else:  # a plus-shaped cross
        third_w, third_h = w / 3, h / 3
        draw.rectangle((third_w, 0, 2 * third_w, h), fill=255)
        draw.rectangle((0, third_h, w, 2 * third_h), fill=255)
    return np.asarray(big.resize((width, side), Image.Resampling.BOX), np.float32) / 255.0


@lru_cache(maxsize=512)  # the clock and the banner word stay the same over many frames
def _text_patch(text: str, size: int, light: bool) -> np.ndarray:
    """RGB patch of ``text`` on a box: white on dark grey (overlays), or dark on cream (banners)."""
    font = _font(size)
    left, top, right, bottom = font.getbbox(text)
    pad = max(2, size // 4)
    box = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), (245, 240, 220) if light else (30, 30, 30))
    ImageDraw.Draw(box).text((pad - left, pad - top), text, font=font, fill=(20, 20, 20) if light else (235, 235, 235))
    return np.asarray(box)


def render_frame(truth: Truth, t: float, index: int) -> np.ndarray:
    """The frame at ``t`` (frame number ``index``) as RGB uint8."""
    spec = truth.spec
    width, height = spec.width, spec.height
    background = truth.backgrounds[min(len(truth.backgrounds) - 1, int(t // 60))]
    image = _background_image(json.dumps(background), width, height).copy()
    for actor in truth.actors_at(t):
        side = max(8, int(actor.size * height))
        sprite = _sprite(actor.form, side, actor.pointing)
        sh, sw = sprite.shape
        cx, cy = actor.centre(t)
        x0 = int(round(cx * width - sw / 2))
        y0 = int(round(cy * height - sh / 2))
        x0, y0 = min(max(1, x0), width - sw - 1), min(max(1, y0), height - sh - 1)
        region = image[y0:y0 + sh, x0:x0 + sw]
        region += (np.asarray(actor.rgb, np.float32) - region) * sprite[..., None]
    frame = np.clip(image, 0, 255).astype(np.uint8)
    small = max(8, height // 24)
    counter = _text_patch(f"frame {index:06d}", small, False)
    _paste(frame, counter, 2, height - counter.shape[0] - 2)
    clock = _text_patch(_mmss(t, hours=True), small, False)
    _paste(frame, clock, width - clock.shape[1] - 2, height - clock.shape[0] - 2)
    word = truth.word_at(t)
    if word:
        patch = _text_patch(word, max(9, height // 14), True)
        _paste(frame, patch, (width - patch.shape[1]) // 2, 2)
    return frame


def _paste(frame: np.ndarray, patch: np.ndarray, x: int, y: int) -> None:
    h = min(patch.shape[0], frame.shape[0] - y)
    w = min(patch.shape[1], frame.shape[1] - x)
    if h > 0 and w > 0:
        frame[y:y + h, x:x + w] = patch[:h, :w]


def frame_times(spec: VideoSpec, duration: float, seed: int) -> list[float]:
    """When each frame is shown: every 1/fps, or (variable frame rate) at irregular steps between
    0.5 and 1.5 of it."""
    rng = random.Random(seed)
    times, t = [], 0.0
    step = 1.0 / spec.fps
    while t < duration - 1e-9:
        times.append(t)
        t += step * (rng.uniform(0.5, 1.5) if spec.vfr else 1.0)
    return times


def encode(truth: Truth, path: Path, seed: int) -> None:
    """Render and encode the video as H.264 (B-frames; timestamps in milliseconds for a variable rate)."""
    spec = truth.spec
    partial = path.with_name(path.name + ".partial")
    times = frame_times(spec, truth.duration, seed)
    with av.open(str(partial), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=Fraction(spec.fps).limit_denominator(1000))
        stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
        stream.time_base = Fraction(1, 1000)
        stream.codec_context.time_base = Fraction(1, 1000)
        gop = max(1, int(round(spec.fps * 3)))
        stream.options = {"preset": "veryfast", "crf": "23",
                          "x264-params": f"keyint={gop}:min-keyint={gop}:scenecut=0:bframes=2"}
        for index, t in enumerate(times):
            frame = av.VideoFrame.from_ndarray(render_frame(truth, t, index), format="rgb24")
            frame.pts = int(round(t * 1000))
            frame.time_base = Fraction(1, 1000)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    os.replace(partial, path)


def _truth_json(truth: Truth) -> dict:
    return {"version": VERSION, "video_id": truth.video_id, "spec": asdict(truth.spec), "duration": truth.duration,
            "backgrounds": truth.backgrounds,
            "scenes": [{"start": s.start, "end": s.end, "word": s.word, "actors": [asdict(a) for a in s.actors]}
                       for s in truth.scenes]}


def generate(out: str | Path, specs=HELDOUT_SET, seed: int = HELDOUT_SEED,
             progress=None) -> list[Truth]:
    """Write the held-out videos and their questions into ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    truths = []
    for number, spec in enumerate(specs):
        video_id = f"heldout-{seed % 10000:04d}-{number:02d}-{spec.width}x{spec.height}"
        video_seed = seed * 7919 + number
        truth = make_truth(video_id, spec, video_seed)
        encode(truth, out / f"{video_id}.mp4", video_seed)
        (out / f"{video_id}.truth.json").write_text(json.dumps(_truth_json(truth)))
        truths.append(truth)
        if progress is not None:
            progress(number + 1, len(specs))
    lines = [json.dumps(q) for truth in truths for q in truth.questions]
    (out / "questions.jsonl").write_text("\n".join(lines) + "\n")
    (out / "manifest.json").write_text(json.dumps({"generator": "engines.video.heldout", "version": VERSION,
                                                   "seed": seed, "videos": [t.video_id for t in truths],
                                                   "specs": [asdict(s) for s in specs]}, indent=2))
    return truths


def iter_questions(folder: str | Path) -> Iterator[dict]:
    """The raw question lines of a generated folder (with their ``kind``)."""
    for line in Path(folder, "questions.jsonl").read_text().splitlines():
        if line.strip():
            yield json.loads(line)
