"""The pictorial reasoning task: count the triangles in a generated image.

The paper's human study (Noorani et al., ICML 2026, arXiv:2602.17646; ``docs/collab.md``, Method)
is a visual counting task, very likely shape counting: participants see an image and a
question, enter a count, and the AI shows a set of candidate counts. This module generates
such images from a seed, with difficulty knobs (how many shapes, how many and which
distractors, overlap, size, rotation, contrast, pixel noise, clutter lines), the ground-truth
count, and a text description of the scene for text-only collaborators (an LLM).

Everything is deterministic from the seed: one ``numpy.random.Generator`` per image, never
the global random state.

Examples::

    >>> task = generate_task(7, "hard")
    >>> task.image.shape, task.question
    ((64, 64), 'How many triangles?')
    >>> batch = generate_batch(0, 8, difficulty=None)  # difficulty ~ U[0, 1] per image
    >>> batch.images.shape, batch.counts.dtype
    ((8, 64, 64), dtype('int64'))
"""

from __future__ import annotations

import io
import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
from PIL import Image, ImageDraw

from engines.platform.files import echo

# ---------------------------------------------------------------- label space
MAX_COUNT = 9
LABELS: tuple[int, ...] = tuple(range(MAX_COUNT + 1))  # the answer is a count 0..9
N_LABELS = len(LABELS)

# Shape kinds, ordered by how easily they are mistaken for a triangle at low resolution: a
# preset that admits k distractor kinds takes the first k (see ``config_for_difficulty``).
SHAPE_KINDS = ("triangle", "circle", "square", "diamond", "pentagon", "trapezoid")
DISTRACTOR_ORDER = ("circle", "square", "diamond", "pentagon", "trapezoid")

# What a shape that is hard to make out may be mistaken for (``ShapeTask.describe(detail="perceived")``).
_LOOKALIKES = {"triangle": ("trapezoid", "diamond"), "trapezoid": ("triangle", "square"),
               "diamond": ("triangle", "square"), "square": ("diamond", "pentagon"),
               "pentagon": ("circle", "square"), "circle": ("pentagon", "square")}
DESCRIBE_DETAILS = ("exact", "perceived")

_PLURAL = {"triangle": "triangles", "circle": "circles", "square": "squares", "diamond": "diamonds",
           "pentagon": "pentagons", "trapezoid": "trapezoids"}


# ---------------------------------------------------------------- configuration
@dataclass(frozen=True)
class ShapeTaskConfig:
    """How one image is generated. Ranges are inclusive ``(low, high)``.

    Args:
        image_size: side of the square grayscale image, in pixels.
        target: the shape kind to count (the question asks "How many <target>s?").
        n_targets: range of the number of target shapes; the count is uniform over it.
        n_distractors: range of the number of non-target shapes.
        distractor_kinds: which other shapes may appear.
        overlap_prob: probability that a shape may overlap the ones already placed (0: shapes
            never touch). Overlapping shapes still keep their centres apart, so each stays
            partly visible and the count stays well defined.
        size: range of the shape diameter (circumscribed circle), in pixels.
        rotation: largest rotation of a shape away from upright, in degrees.
        jitter: random displacement of each polygon vertex, as a fraction of the radius;
            makes triangles irregular and distractors less regular.
        contrast: range of the shape brightness above the background (image values in [0, 1]).
        noise_std: standard deviation of the Gaussian pixel noise (image values in [0, 1]).
        clutter_lines: number of thin random lines drawn behind the shapes.
        supersample: drawing resolution factor; the image is box-downsampled, which
            antialiases edges (PIL polygons are not antialiased).
        difficulty: the difficulty in [0, 1] this config stands for (recorded on each task).
    """

    # Canvas.
    image_size: int = 64
    target: str = "triangle"
    # What is on it.
    n_targets: tuple[int, int] = (0, 6)
    n_distractors: tuple[int, int] = (0, 2)
    distractor_kinds: tuple[str, ...] = ("circle", "square")
    overlap_prob: float = 0.0
    # How the shapes look.
    size: tuple[float, float] = (11.0, 15.0)
    rotation: float = 0.0
    jitter: float = 0.0
    contrast: tuple[float, float] = (0.6, 0.85)
    # Degradations.
    noise_std: float = 0.0
    clutter_lines: int = 0
    supersample: int = 2
    difficulty: float = 0.0

    def __post_init__(self) -> None:
        if self.image_size < 16:
            raise ValueError(f"image_size must be at least 16 pixels, got {self.image_size}")
        if self.target not in SHAPE_KINDS:
            raise ValueError(f"target must be one of {SHAPE_KINDS}, got {echo(self.target)}")
        unknown = [k for k in self.distractor_kinds if k not in SHAPE_KINDS]
        if unknown:
            raise ValueError(f"unknown distractor kinds {unknown}; known: {SHAPE_KINDS}")
        if self.target in self.distractor_kinds:
            raise ValueError(f"the target {echo(self.target)} cannot also be a distractor kind")
        for name in ("n_targets", "n_distractors", "size", "contrast"):
            low, high = getattr(self, name)
            if low > high:
                raise ValueError(f"{name} must be (low, high) with low <= high, got {(low, high)}")
        if not (0 <= self.n_targets[0] and self.n_targets[1] <= MAX_COUNT):
            raise ValueError(f"n_targets must lie in 0..{MAX_COUNT} (the label space), got {self.n_targets}")
        if self.n_distractors[0] < 0:
            raise ValueError(f"n_distractors must be non-negative, got {self.n_distractors}")
        if self.n_distractors[1] > 0 and not self.distractor_kinds:
            raise ValueError("distractors requested but distractor_kinds is empty")
        if not 0.0 <= self.overlap_prob <= 1.0:
            raise ValueError(f"overlap_prob must be in [0, 1], got {self.overlap_prob}")
        if self.size[0] < 3 or self.size[1] > self.image_size / 2:
            raise ValueError(f"size must lie in [3, image_size / 2], got {self.size}")
        if not 0.0 <= self.jitter < 0.5:
            raise ValueError(f"jitter must be in [0, 0.5), got {self.jitter}")
        if not (0.0 < self.contrast[0] and self.contrast[1] <= 1.0):
            raise ValueError(f"contrast must lie in (0, 1], got {self.contrast}")
        if self.noise_std < 0 or self.clutter_lines < 0 or self.supersample < 1:
            raise ValueError("noise_std and clutter_lines must be >= 0, supersample >= 1")
        if not 0.0 <= self.difficulty <= 1.0:
            raise ValueError(f"difficulty must be in [0, 1], got {self.difficulty}")


# The presets anchor the continuous difficulty scale at 0, 0.5 and 1. They were tuned (see
# ``assets/collab/README.md``) so the shipped CNN is near perfect on easy images and clearly
# fallible on hard ones -- collaboration only matters where the AI can be wrong.
DIFFICULTY_PRESETS: dict[str, ShapeTaskConfig] = {
    "easy": ShapeTaskConfig(
        n_targets=(0, 6), n_distractors=(0, 2), distractor_kinds=("circle", "square"),
        overlap_prob=0.0, size=(11.0, 15.0), rotation=0.0, jitter=0.0, contrast=(0.6, 0.85),
        noise_std=0.0, clutter_lines=0, difficulty=0.0,
    ),
    "medium": ShapeTaskConfig(
        n_targets=(0, 8), n_distractors=(2, 5), distractor_kinds=("circle", "square", "diamond", "pentagon"),
        overlap_prob=0.25, size=(8.0, 14.0), rotation=30.0, jitter=0.05, contrast=(0.4, 0.8),
        noise_std=0.08, clutter_lines=3, difficulty=0.5,
    ),
    "hard": ShapeTaskConfig(
        n_targets=(0, 9), n_distractors=(3, 6), distractor_kinds=DISTRACTOR_ORDER,
        overlap_prob=0.4, size=(8.0, 13.0), rotation=180.0, jitter=0.08, contrast=(0.35, 0.8),
        noise_std=0.12, clutter_lines=5, difficulty=1.0,
    ),
}
PRESET_DIFFICULTY = {name: cfg.difficulty for name, cfg in DIFFICULTY_PRESETS.items()}


def config_for_difficulty(difficulty: float) -> ShapeTaskConfig:
    """The generator config for a difficulty in [0, 1].

    Numeric knobs are interpolated piecewise-linearly between the presets (easy at 0, medium
    at 0.5, hard at 1); integer ranges are rounded; distractor kinds are the first k of
    ``DISTRACTOR_ORDER``, with k interpolated as well.
    """
    d = float(difficulty)
    if not 0.0 <= d <= 1.0 or math.isnan(d):
        raise ValueError(f"difficulty must be in [0, 1], got {difficulty}")
    lo, hi = (DIFFICULTY_PRESETS["easy"], DIFFICULTY_PRESETS["medium"]) if d <= 0.5 else (
        DIFFICULTY_PRESETS["medium"], DIFFICULTY_PRESETS["hard"])
    t = (d - lo.difficulty) / (hi.difficulty - lo.difficulty)

    def lerp(a: float, b: float) -> float:
        return a + t * (b - a)

    def lerp_range(a: tuple, b: tuple, integer: bool) -> tuple:
        pair = (lerp(a[0], b[0]), lerp(a[1], b[1]))
        return tuple(int(round(v)) for v in pair) if integer else pair

    n_kinds = int(round(lerp(len(lo.distractor_kinds), len(hi.distractor_kinds))))
    return replace(
        lo,
        n_targets=lerp_range(lo.n_targets, hi.n_targets, True),
        n_distractors=lerp_range(lo.n_distractors, hi.n_distractors, True),
        distractor_kinds=DISTRACTOR_ORDER[:n_kinds],
        overlap_prob=lerp(lo.overlap_prob, hi.overlap_prob),
        size=lerp_range(lo.size, hi.size, False),
        rotation=lerp(lo.rotation, hi.rotation),
        jitter=lerp(lo.jitter, hi.jitter),
        contrast=lerp_range(lo.contrast, hi.contrast, False),
        noise_std=lerp(lo.noise_std, hi.noise_std),
        clutter_lines=int(round(lerp(lo.clutter_lines, hi.clutter_lines))),
        difficulty=d,
    )


def resolve_config(spec: ShapeTaskConfig | float | str | None = None) -> ShapeTaskConfig:
    """A config from a config, a difficulty in [0, 1], or a preset name (None: "medium")."""
    if spec is None:
        return DIFFICULTY_PRESETS["medium"]
    if isinstance(spec, ShapeTaskConfig):
        return spec
    if isinstance(spec, str):
        if spec not in DIFFICULTY_PRESETS:
            raise ValueError(f"unknown difficulty preset {echo(spec)}; known: {sorted(DIFFICULTY_PRESETS)}")
        return DIFFICULTY_PRESETS[spec]
    return config_for_difficulty(float(spec))


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class Shape:
    """One drawn shape, in image pixel coordinates (x to the right, y down)."""

    kind: str
    x: float
    y: float
    size: float  # diameter of the circumscribed circle, pixels
    angle: float  # degrees
    brightness: float  # in [0, 1]
    order: int  # drawing order: a higher order is drawn on top
    overlaps: tuple[int, ...] = ()  # indices (into ShapeTask.shapes) of shapes it touches


@dataclass
class ShapeTask:
    """One generated image with its question and ground truth.

    ``image`` is uint8 of shape (H, W) (grayscale); ``count`` is the number of target shapes
    drawn, an element of ``LABELS``; ``shapes`` lists every shape, targets and distractors.
    """

    image: np.ndarray
    count: int
    difficulty: float
    question: str
    seed: int
    config: ShapeTaskConfig
    shapes: tuple[Shape, ...] = field(default_factory=tuple)
    clutter_lines: int = 0

    def describe(self, detail: str = "exact") -> str:
        """A text description of the scene for a text-only collaborator.

        Lists every shape (kind, rough place, pixel position, size, brightness, overlaps) in
        reading order, without stating how many targets there are: a careful reader can count
        them, a careless one can miscount, as with the image.

        Args:
            detail: "exact" names every shape's kind, so a text-only reader can always count
                exactly, even on hard images. "perceived" describes what a viewer could make
                out: a shape that is hard to see (``hard_to_make_out``: small, faint, partly
                covered, in a noisy image) is named as two look-alike kinds, e.g. "a small faint
                shape ..., hard to make out: maybe a triangle or a trapezoid", so hard images are
                hard for a text reader too. Easy images have no such shapes. Deterministic: the
                look-alike and the order of the two names come from the task's seed.
        """
        if detail not in DESCRIBE_DETAILS:
            raise ValueError(f"detail must be one of {DESCRIBE_DETAILS}, got {echo(detail)}")
        n = self.config.image_size
        lo, hi = self.config.size
        vague = self.unclear_kinds() if detail == "perceived" else {}

        def name(j: int) -> str:  # how other lines refer to shape j (a vague shape's kind stays unknown)
            o = self.shapes[j]
            return f"the {'shape' if j in vague else o.kind} at ({o.x:.0f}, {o.y:.0f})"

        lines = [
            f"A {n}x{n} grayscale image (x to the right, y downward) of bright shapes on a dark background.",
            "Shapes, in reading order (top to bottom, left to right):",
        ]
        for i in _reading_order(self.shapes, n):
            s = self.shapes[i]
            rel = (s.size - lo) / (hi - lo) if hi > lo else 0.5
            size_word = "small" if rel < 1 / 3 else ("medium-sized" if rel < 2 / 3 else "large")
            shade = "faint" if s.brightness < 0.45 else ("grey" if s.brightness < 0.7 else "bright")
            kind = "shape" if i in vague else s.kind
            text = f"- a {size_word} {shade} {kind} {_place_word(s.x, s.y, n)} (x≈{s.x:.0f}, y≈{s.y:.0f})"
            turn = _visible_turn(s.kind, s.angle)
            if turn >= 10 and i not in vague:  # the turn modulo the kind's symmetry would give the kind away
                text += f", turned about {turn:.0f}° from upright"
            covered = [j for j in s.overlaps if self.shapes[j].order > s.order]
            covers = [j for j in s.overlaps if self.shapes[j].order < s.order]
            if covered:
                text += ", partly covered by " + _join(name(j) for j in covered)
            if covers:
                text += ", lying over " + _join(name(j) for j in covers)
            if i in vague:
                first, second = vague[i]
                text += f", hard to make out: maybe a {first} or a {second}"
            lines.append(text)
        if not self.shapes:
            lines.append("- (no shapes)")
        extras = []
        if self.clutter_lines:
            extras.append(f"thin random lines behind the shapes ({self.clutter_lines})")
        if self.config.noise_std > 0:
            extras.append(f"pixel noise (std {self.config.noise_std:.2f} of full brightness)")
        if extras:
            lines.append("The image also has " + " and ".join(extras) + ".")
        return "\n".join(lines)

    def hard_to_make_out(self) -> list[bool]:
        """Per shape (in ``shapes`` order): is its kind hard to make out in the image?

        Four visibility handicaps, each scored in [0, 1]: small (1 at 8 px, 0 from 12 px),
        faint (1 at brightness 0.35, 0 from 0.6), covered (1 when 30% of it lies under shapes
        drawn on top) and pixel noise (1 at the hard preset's std 0.12). A shape is hard to make
        out when they add up to 2 or more: never on easy images (no noise, no overlap, bright,
        large), for about 2% of the shapes at medium difficulty and 16% at hard.
        """
        noise = _unit(self.config.noise_std / 0.12)
        out = []
        for i, s in enumerate(self.shapes):
            score = (_unit((12.0 - s.size) / 4.0) + _unit((0.6 - s.brightness) / 0.25)
                     + _unit(_covered_fraction(self.shapes, i) / 0.3) + noise)
            out.append(score >= 2.0)
        return out

    def unclear_kinds(self) -> dict[int, tuple[str, str]]:
        """{shape index: (kind, kind)} for the shapes hard to make out: the true kind and a look-alike, in seeded order.

        The look-alike is the counted target when the shape is one of the target's look-alikes
        (a vague trapezoid may be a triangle), otherwise one of the shape's own look-alikes.
        """
        rng = np.random.default_rng([int(self.seed), 0x5EE])  # its own stream: the image's draws stay untouched
        out = {}
        for i, hard in enumerate(self.hard_to_make_out()):
            if not hard:
                continue
            kind = self.shapes[i].kind
            target = self.config.target
            if kind != target and target in _LOOKALIKES[kind]:
                other = target
            else:
                choices = _LOOKALIKES[kind]
                other = choices[int(rng.integers(len(choices)))]
            out[i] = (kind, other) if rng.random() < 0.5 else (other, kind)
        return out


class ShapeBatch(NamedTuple):
    """Many images at once; unpacks as ``images, counts, difficulty = generate_batch(...)``."""

    images: np.ndarray  # (n, H, W) uint8
    counts: np.ndarray  # (n,) int64
    difficulty: np.ndarray  # (n,) float32 in [0, 1]


# ---------------------------------------------------------------- generation
def generate_task(seed: int, spec: ShapeTaskConfig | float | str | None = None) -> ShapeTask:
    """Generate one image ("How many triangles?") deterministically from ``seed``.

    Args:
        seed: any non-negative integer; equal seeds and configs give identical tasks.
        spec: a ``ShapeTaskConfig``, a difficulty in [0, 1], or a preset name
            ("easy" / "medium" / "hard"); default "medium".

    Returns:
        A ``ShapeTask`` with the uint8 (H, W) image, the count and the scene's shapes.
    """
    config = resolve_config(spec)
    rng = np.random.default_rng(seed)
    n = config.image_size
    ss = config.supersample
    count = int(rng.integers(config.n_targets[0], config.n_targets[1] + 1))
    n_distract = int(rng.integers(config.n_distractors[0], config.n_distractors[1] + 1))
    kinds = [config.target] * count + [
        config.distractor_kinds[int(k)] for k in rng.integers(0, len(config.distractor_kinds), n_distract)
    ]
    rng.shuffle(kinds)  # the drawing order mixes targets and distractors

    placed = _place(kinds, config, rng)
    background = float(rng.uniform(0.0, 0.15))

    canvas = Image.new("L", (n * ss, n * ss), _level(background))
    draw = ImageDraw.Draw(canvas)
    for _ in range(config.clutter_lines):
        x0, y0, x1, y1 = rng.uniform(0, n * ss, 4)
        shade = background + float(rng.uniform(*config.contrast)) * float(rng.uniform(0.4, 1.0))
        draw.line([(x0, y0), (x1, y1)], fill=_level(shade), width=ss)

    shapes = []
    for order, (kind, x, y, size) in enumerate(placed):
        angle = float(rng.uniform(-config.rotation, config.rotation))
        brightness = min(1.0, background + float(rng.uniform(*config.contrast)))
        _draw_shape(draw, kind, x * ss, y * ss, size * ss / 2, angle, config.jitter, rng, _level(brightness))
        shapes.append(Shape(kind, round(x, 1), round(y, 1), round(size, 1), round(angle, 1), round(brightness, 2), order))

    image = np.asarray(canvas.resize((n, n), Image.Resampling.BOX) if ss > 1 else canvas, dtype=np.float32) / 255.0
    if config.noise_std > 0:
        image = image + rng.normal(0.0, config.noise_std, image.shape).astype(np.float32)
    image = np.clip(np.round(image * 255.0), 0, 255).astype(np.uint8)

    shapes = _with_overlaps(shapes)
    return ShapeTask(
        image=image, count=count, difficulty=config.difficulty, question=f"How many {_PLURAL[config.target]}?",
        seed=int(seed), config=config, shapes=tuple(shapes), clutter_lines=config.clutter_lines,
    )


def generate_batch(
    seed: int,
    n: int,
    difficulty: float | str | ShapeTaskConfig | Sequence[float] | Callable | None = None,
) -> ShapeBatch:
    """Generate ``n`` images deterministically from ``seed``.

    Image i is ``generate_task(seed_i, difficulty_i)`` with per-image seeds and difficulties
    drawn from ``numpy.random.SeedSequence(seed)``, so a batch's first k images do not depend
    on n.

    Args:
        seed: the batch seed.
        n: number of images.
        difficulty: None (each image's difficulty ~ U[0, 1]); one difficulty in [0, 1], preset
            name or config for all images; a sequence of n difficulties; or a callable
            ``f(rng, n) -> array`` of n difficulties in [0, 1] (e.g. a Beta distribution).

    Returns:
        ``ShapeBatch(images (n, H, W) uint8, counts (n,) int64, difficulty (n,) float32)``.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    diff_seq, image_seq = np.random.SeedSequence(seed).spawn(2)
    seeds = image_seq.generate_state(max(n, 1), dtype=np.uint64)[:n]
    if difficulty is None:
        difficulty = np.random.default_rng(diff_seq).uniform(0.0, 1.0, n)
    elif callable(difficulty):
        difficulty = np.asarray(difficulty(np.random.default_rng(diff_seq), n), dtype=np.float64)
    if isinstance(difficulty, (str, ShapeTaskConfig, numbers.Real)):  # numbers.Real covers numpy scalars
        config = resolve_config(difficulty)
        configs = [config] * n
    else:
        values = np.asarray(difficulty, dtype=np.float64)
        if values.shape != (n,):
            raise ValueError(f"need one difficulty per image: expected shape ({n},), got {values.shape}")
        configs = [config_for_difficulty(v) for v in values]
    size = configs[0].image_size if configs else DIFFICULTY_PRESETS["medium"].image_size
    images = np.empty((n, size, size), dtype=np.uint8)
    counts = np.empty(n, dtype=np.int64)
    levels = np.empty(n, dtype=np.float32)
    for i, (s, config) in enumerate(zip(seeds, configs, strict=True)):
        task = generate_task(int(s), config)
        images[i], counts[i], levels[i] = task.image, task.count, task.difficulty
    return ShapeBatch(images, counts, levels)


def to_png_bytes(image: np.ndarray, scale: int = 1) -> bytes:
    """PNG bytes of a uint8 (H, W) or (H, W, 3) image, optionally enlarged ``scale`` times (nearest)."""
    pil = Image.fromarray(np.asarray(image, dtype=np.uint8))
    if scale > 1:
        pil = pil.resize((pil.width * scale, pil.height * scale), Image.Resampling.NEAREST)
    buffer = io.BytesIO()
    pil.save(buffer, format="PNG")
    return buffer.getvalue()


# ---------------------------------------------------------------- helpers
def _level(value: float) -> int:
    return int(round(255 * min(max(value, 0.0), 1.0)))


def _place(kinds: list[str], config: ShapeTaskConfig, rng: np.random.Generator) -> list[tuple[str, float, float, float]]:
    """Centres and sizes for each shape, by rejection sampling.

    Without overlap, bounding circles stay a pixel apart. With overlap, centres stay at least
    0.6 of the summed radii apart, so a covered shape keeps part of its outline visible.
    When a crowded canvas leaves no room, the shape shrinks, and as a last resort is put at
    the best of the tried spots.
    """
    n = config.image_size
    placed: list[tuple[str, float, float, float]] = []
    for kind in kinds:
        size = float(rng.uniform(*config.size))
        factor = 0.6 if rng.random() < config.overlap_prob else 1.0
        best, best_score = None, -np.inf
        for attempt in range(60):
            if attempt and attempt % 20 == 0:
                size = max(config.size[0] * 0.8, size * 0.85)  # crowded: try a smaller shape
            r = size / 2
            x, y = rng.uniform(r + 1, n - r - 1, 2)
            # Worst clearance against the placed shapes: >= 0 means the constraint holds.
            score = min(
                (math.hypot(x - px, y - py) - (factor * (r + ps / 2) + (1.0 if factor == 1.0 else 0.0))
                 for _, px, py, ps in placed),
                default=np.inf,
            )
            if score > best_score:
                best, best_score = (kind, float(x), float(y), size), score
            if score >= 0:
                break
        placed.append(best)
    return placed


def _polygon(kind: str, cx: float, cy: float, r: float, angle: float) -> list[tuple[float, float]]:
    """Vertices of a regular-ish polygon of circumradius r, rotated by ``angle`` degrees."""
    if kind == "triangle":
        pts = [(math.cos(a), math.sin(a)) for a in (math.radians(-90 + 120 * k) for k in range(3))]
        # Shift down so the triangle's area centroid sits at the centre of its bounding box.
        pts = [(px, py + 0.25) for px, py in pts]
    elif kind == "square":
        pts = [(math.cos(a), math.sin(a)) for a in (math.radians(45 + 90 * k) for k in range(4))]
    elif kind == "diamond":
        pts = [(0.0, -1.0), (0.6, 0.0), (0.0, 1.0), (-0.6, 0.0)]
    elif kind == "pentagon":
        pts = [(math.cos(a), math.sin(a)) for a in (math.radians(-90 + 72 * k) for k in range(5))]
    elif kind == "trapezoid":
        # A narrow-topped trapezoid: at low resolution it is the triangle's closest look-alike.
        pts = [(-0.3, -0.6), (0.3, -0.6), (0.9, 0.6), (-0.9, 0.6)]
    else:
        raise ValueError(f"no polygon for {echo(kind)}")
    cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [(cx + r * (px * cos - py * sin), cy + r * (px * sin + py * cos)) for px, py in pts]


def _draw_shape(draw: ImageDraw.ImageDraw, kind: str, cx: float, cy: float, r: float, angle: float,
                jitter: float, rng: np.random.Generator, fill: int) -> None:
    if kind == "circle":
        rr = 0.85 * r  # a circle of the full circumradius looks much bigger than the polygons
        draw.ellipse([cx - rr, cy - rr, cx + rr, cy + rr], fill=fill)
        return
    pts = _polygon(kind, cx, cy, r, angle)
    if jitter > 0:
        offsets = rng.uniform(-jitter * r, jitter * r, (len(pts), 2))
        pts = [(px + float(dx), py + float(dy)) for (px, py), (dx, dy) in zip(pts, offsets, strict=True)]
    draw.polygon(pts, fill=fill)


def _with_overlaps(shapes: list[Shape]) -> list[Shape]:
    """Record which shapes touch (bounding circles shrunk to 85%, an approximation of the outline)."""
    out = []
    for i, s in enumerate(shapes):
        touching = tuple(
            j for j, o in enumerate(shapes)
            if j != i and math.hypot(s.x - o.x, s.y - o.y) < 0.85 * (s.size + o.size) / 2
        )
        out.append(replace(s, overlaps=touching))
    return out


# Rotational symmetry of each kind, in degrees: a square turned by 90° looks upright again.
_SYMMETRY = {"triangle": 120.0, "square": 90.0, "diamond": 180.0, "pentagon": 72.0, "trapezoid": 360.0}


def _visible_turn(kind: str, angle: float) -> float:
    """How far a shape looks turned from upright, modulo its symmetry (0 for circles)."""
    period = _SYMMETRY.get(kind)
    if period is None:
        return 0.0
    folded = angle % period
    return min(folded, period - folded)


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)


# Points filling the unit disc, for the covered share of a shape (a 15x15 grid: ~1% resolution).
_GRID = np.linspace(-1.0, 1.0, 15)
_DISC = np.stack(np.meshgrid(_GRID, _GRID), axis=-1).reshape(-1, 2)
_DISC = _DISC[(_DISC ** 2).sum(axis=1) <= 1.0]  # (P, 2)


def _covered_fraction(shapes: Sequence[Shape], i: int) -> float:
    """Share of shape i's outline disc (85% of its circumradius, as in ``_with_overlaps``) under shapes drawn on top."""
    s = shapes[i]
    pts = _DISC * (0.85 * s.size / 2) + np.array([s.x, s.y])  # (P, 2)
    hidden = np.zeros(len(pts), dtype=bool)
    for j in s.overlaps:
        o = shapes[j]
        if o.order > s.order:
            hidden |= np.hypot(pts[:, 0] - o.x, pts[:, 1] - o.y) < 0.85 * o.size / 2
    return float(hidden.mean())


def _reading_order(shapes: Sequence[Shape], n: int) -> list[int]:
    band = max(n / 8, 1.0)  # rows of an eighth of the image, left to right within a row
    return sorted(range(len(shapes)), key=lambda i: (int(shapes[i].y // band), shapes[i].x))


def _place_word(x: float, y: float, n: int) -> str:
    col = min(int(3 * x / n), 2)
    row = min(int(3 * y / n), 2)
    words = [["top left", "top", "top right"], ["left", "centre", "right"], ["bottom left", "bottom", "bottom right"]]
    word = words[row][col]
    return "in the centre" if word == "centre" else f"at the {word}"


def _join(items) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


__all__ = [
    "DESCRIBE_DETAILS", "DIFFICULTY_PRESETS", "DISTRACTOR_ORDER", "LABELS", "MAX_COUNT", "N_LABELS", "PRESET_DIFFICULTY", "SHAPE_KINDS",
    "Shape", "ShapeBatch", "ShapeTask", "ShapeTaskConfig", "config_for_difficulty", "generate_batch",
    "generate_task", "resolve_config", "to_png_bytes",
]
