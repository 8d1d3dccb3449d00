"""Drawing the synthetic videos' frames: scene backgrounds, shapes, burned-in words, frame codes.

A frame is 160 x 120 RGB. It shows a scene background (a two-colour gradient with a faint texture,
changing every minute or so), zero or more objects of one shape and colour (the scripted event
on screen, possibly moving), an optional burned-in word in a dark box at the top, and a 16-bit
code of the frame's number in 8 x 8 black and white blocks along the bottom edge, so that a test
can read which frame a decoder returned (blocks aligned to the codec's 8 x 8 grid survive
compression). Everything here is deterministic given its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

WIDTH, HEIGHT = 160, 120
CODE_BITS, CODE_BLOCK = 16, 8
CODE_TOP = HEIGHT - CODE_BLOCK  # the code's row of blocks; nothing else is drawn there
ARENA_TOP, ARENA_BOTTOM = 24, CODE_TOP - 2  # objects stay between the word box and the code

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40), "green": (40, 170, 60), "blue": (50, 90, 230),
    "yellow": (235, 215, 40), "purple": (150, 60, 195), "orange": (245, 140, 30),
}
SHAPES = ("circle", "square", "triangle", "diamond")
DIRECTIONS = ("left", "right", "up", "down")
WORDS = ("APPLE", "RIVER", "CLOCK", "TIGER", "PIANO", "CANDLE", "ROCKET", "GARDEN",
         "MIRROR", "BRIDGE", "PENCIL", "WINDOW")
OBJECT_SIZE = 24  # 12 pixels at the frame model's half resolution: shapes stay legible
SPEED_PX_S = 8.0  # how fast a moving group drifts: 4 pixels between frames half a second apart
_VELOCITY = {"left": (-1.0, 0.0), "right": (1.0, 0.0), "up": (0.0, -1.0), "down": (0.0, 1.0)}


@dataclass(frozen=True)
class Objects:
    """A group of ``count`` objects of one shape and colour on screen, drifting in ``direction``
    (None: still) from their places at ``since`` seconds."""

    shape: str
    colour: str
    count: int
    direction: str | None
    since: float
    seed: int


@dataclass(frozen=True)
class Scene:
    """A background: a vertical gradient between two dim colours with a texture of ``seed``."""

    top: tuple[int, int, int]
    bottom: tuple[int, int, int]
    seed: int


@lru_cache(maxsize=64)
def background(scene: Scene) -> np.ndarray:
    """The scene's background (H, W, 3) uint8; cached, since a scene lasts for many frames."""
    rows = np.linspace(0.0, 1.0, HEIGHT, dtype=np.float32)[:, None, None]
    gradient = (1 - rows) * np.asarray(scene.top, np.float32) + rows * np.asarray(scene.bottom, np.float32)
    texture = np.random.default_rng(scene.seed).normal(0.0, 6.0, (HEIGHT // 8, WIDTH // 8, 1)).astype(np.float32)
    image = gradient + np.kron(texture, np.ones((8, 8, 1), np.float32))
    image = np.broadcast_to(image, (HEIGHT, WIDTH, 3))
    return np.clip(image, 0, 255).astype(np.uint8)


@lru_cache(maxsize=16)
def _sprite(shape: str) -> np.ndarray:
    """The shape's coverage (S, S) bool, drawn once with Pillow."""
    size = OBJECT_SIZE
    mask = Image.new("L", (size, size), 0)
    draw = ImageDraw.Draw(mask)
    edge = size - 1
    if shape == "circle":
        draw.ellipse((0, 0, edge, edge), fill=255)
    elif shape == "square":
        draw.rectangle((2, 2, edge - 2, edge - 2), fill=255)
    elif shape == "triangle":
        draw.polygon([(size / 2, 0), (edge, edge), (0, edge)], fill=255)
    elif shape == "diamond":
        draw.polygon([(size / 2, 0), (edge, size / 2), (size / 2, edge), (0, size / 2)], fill=255)
    else:
        raise ValueError(f"unknown shape {shape!r}; choose one of {', '.join(SHAPES)}")
    return np.asarray(mask) > 127


@lru_cache(maxsize=32)
def _word_patch(word: str) -> tuple[np.ndarray, int, int]:
    """A word in white on a dark box: its coverage (h, w) bool and the box's left and width."""
    font = ImageFont.load_default(size=14)
    left, top, right, bottom = font.getbbox(word)
    width, height = right - left + 8, 18
    patch = Image.new("L", (width, height), 0)
    ImageDraw.Draw(patch).text((4 - left, (height - (bottom - top)) // 2 - top), word, fill=255, font=font)
    return np.asarray(patch) > 127, (WIDTH - width) // 2, width


def object_positions(objects: Objects, t: float) -> list[tuple[int, int]]:
    """Top-left corners of the group's objects at ``t``: each in its own column slot (so they never
    overlap and can be counted), at seeded places, then drifting together, wrapping around the
    arena so that they never leave the screen."""
    rng = np.random.default_rng(objects.seed)
    span_x = WIDTH - OBJECT_SIZE
    span_y = ARENA_BOTTOM - ARENA_TOP - OBJECT_SIZE
    slot = span_x / max(objects.count, 4)
    slots = rng.permutation(max(objects.count, 4))[:objects.count]
    xs = slots * slot + rng.uniform(0.0, slot - OBJECT_SIZE, objects.count)  # within its slot: never overlapping
    ys = ARENA_TOP + rng.uniform(0, span_y, objects.count)
    dx, dy = _VELOCITY.get(objects.direction, (0.0, 0.0)) if objects.direction else (0.0, 0.0)
    moved = max(0.0, t - objects.since) * SPEED_PX_S
    positions = []
    for x, y in zip(xs, ys, strict=True):
        x = (x + dx * moved) % span_x
        y = ARENA_TOP + (y - ARENA_TOP + dy * moved) % span_y
        positions.append((int(round(x)), int(round(y))))
    return positions


def frame_code(image: np.ndarray, index: int) -> None:
    """Burn ``index`` (mod 2^16) into the bottom row as 16 blocks, most significant bit first."""
    image[CODE_TOP:, :] = 0
    for bit in range(CODE_BITS):
        if (index >> (CODE_BITS - 1 - bit)) & 1:
            image[CODE_TOP:, bit * CODE_BLOCK:(bit + 1) * CODE_BLOCK] = 255


def read_frame_code(image: np.ndarray) -> int:
    """The frame number :func:`frame_code` burned into ``image`` (read from each block's centre)."""
    value = 0
    centre = CODE_TOP + CODE_BLOCK // 2
    for bit in range(CODE_BITS):
        x = bit * CODE_BLOCK + CODE_BLOCK // 2
        level = image[centre - 2:centre + 2, x - 2:x + 2].mean()
        value = (value << 1) | int(level > 127)
    return value


def render(scene: Scene, objects: Objects | None, word: str | None, t: float, index: int) -> np.ndarray:
    """The frame (H, W, 3) uint8 at time ``t`` with frame number ``index``."""
    image = background(scene).copy()
    if objects is not None:
        sprite = _sprite(objects.shape)
        colour = np.asarray(COLOURS[objects.colour], np.uint8)
        for x, y in object_positions(objects, t):
            region = image[y:y + OBJECT_SIZE, x:x + OBJECT_SIZE]
            region[sprite[:region.shape[0], :region.shape[1]]] = colour
    if word is not None:
        coverage, left, width = _word_patch(word)
        box = image[3:3 + coverage.shape[0], left:left + width]
        box[:] = (25, 25, 30)
        box[coverage] = 245
    frame_code(image, index)
    return image
