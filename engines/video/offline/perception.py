"""General offline perception of video frames from pixels: objects, their colour names, shapes,
places and motion, and on-screen text. No model is trained here and nothing depends on the palette,
shapes or layout of a particular generator.

- **Objects** (:func:`find_objects`): the background of each frame is estimated as a smooth surface
  (a quadratic in x and y per channel, fitted with outliers left out, so a gradient or a background
  that changes from one minute to the next is its own background); pixels that differ from it by
  more than the background's own noise allows are foreground, and their connected regions
  (``scipy.ndimage.label``) are the candidate objects. A region is an object when it is solid (a
  small disc fits inside it) and of one colour; thin strokes and boxes holding text of another
  colour are text, not objects; bands across the whole frame are layout, not objects.
- **Colour names** (:func:`colour_name`) over the whole hue circle and the greys, from HSV with the
  usual boundaries: red, orange, yellow, green, cyan, blue, purple, magenta, pink, brown, black,
  white, grey. A colour word a question uses is matched to a seen colour by name or, for words
  outside the thirteen (violet, navy, crimson...), by distance in CIELAB (:func:`colour_distance`).
- **Shapes** (:func:`shape_of`): from the region's mask alone: how much of its bounding box it
  fills, how much of each corner of the box, where its centroid lies in the box, and its solidity:
  square, rectangle, circle, triangle, diamond, or other.
- **Places**: a 3 x 3 grid (top-left ... centre ... bottom-right) and the halves.
- **Motion** (:func:`motion_of`): a region matched to the nearest one that can be the same object
  (a near colour, a shape class that agrees) in a frame half a second later; its shift, relative to
  the frame, gives left, right, up, down or still. A drift too slow for that gap shows in the net
  shift over frames seconds apart (:func:`track_motion`).
- **Text** (:func:`read_text`): Debian's Tesseract (``tesseract-ocr``) called as a program on the
  text-like regions, enlarged; it ships its own English model, so nothing is downloaded. Without
  the program, :func:`ocr_available` is False and callers say that text cannot be read.
"""

from __future__ import annotations

import hashlib
import math
import re
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image
from scipy import ndimage

# Frames are analysed this wide: larger ones are decoded smaller (objects stay legible, work stays
# small), smaller ones are enlarged first (bilinear), because the pixel sizes below (the smallest
# object, the openings that remove specks and smears) are set for it; at 160 x 120 a 13-pixel circle
# is a blocky octagon of 2 x 2 chroma blocks, read as a square until enlarged.
ANALYSIS_WIDTH = 320
OCR_WIDTH = 1280  # text is read from frames at most this wide

COLOUR_NAMES = ("red", "orange", "yellow", "green", "cyan", "blue", "purple", "magenta", "pink", "brown", "black",
                "white", "grey")
# A typical colour of each name, for words matched by distance (CSS-like values).
REFERENCE_RGB: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 35), "orange": (250, 140, 20), "yellow": (245, 220, 30), "green": (40, 170, 60),
    "cyan": (20, 210, 215), "blue": (40, 80, 230), "purple": (135, 50, 205), "magenta": (230, 30, 220),
    "pink": (250, 130, 185), "brown": (125, 75, 35), "black": (15, 15, 15), "white": (245, 245, 245),
    "grey": (128, 128, 128),
}
# Other words for the colours, with a typical value each (matched by distance to what is seen).
COLOUR_WORDS: dict[str, tuple[int, int, int]] = {
    **REFERENCE_RGB, "gray": (128, 128, 128), "violet": (143, 0, 255), "indigo": (75, 0, 130),
    "lavender": (181, 126, 220), "navy": (0, 0, 128), "crimson": (220, 20, 60), "scarlet": (255, 36, 0),
    "maroon": (128, 0, 0), "gold": (255, 215, 0), "golden": (255, 215, 0), "lime": (50, 205, 50),
    "olive": (128, 128, 0), "teal": (0, 128, 128), "turquoise": (64, 224, 208), "aqua": (0, 255, 255),
    "fuchsia": (255, 0, 255), "rose": (255, 102, 178), "tan": (210, 180, 140), "beige": (225, 210, 170),
    "silver": (192, 192, 192), "azure": (0, 127, 255), "amber": (255, 191, 0), "emerald": (80, 200, 120),
    "chocolate": (123, 63, 0), "lilac": (200, 162, 200), "mauve": (224, 176, 255),
}
SHAPE_NAMES = ("square", "rectangle", "circle", "triangle", "diamond", "other")
# Words for shapes, and the shape classes each one matches ("a rectangle" may be a square).
SHAPE_WORDS: dict[str, frozenset[str]] = {
    "square": frozenset({"square", "rectangle"}), "squares": frozenset({"square", "rectangle"}),
    "box": frozenset({"square", "rectangle"}), "boxes": frozenset({"square", "rectangle"}),
    "rectangle": frozenset({"rectangle", "square"}), "rectangles": frozenset({"rectangle", "square"}),
    "circle": frozenset({"circle"}), "circles": frozenset({"circle"}), "disc": frozenset({"circle"}),
    "discs": frozenset({"circle"}), "disk": frozenset({"circle"}), "dot": frozenset({"circle"}),
    "dots": frozenset({"circle"}), "ball": frozenset({"circle"}), "balls": frozenset({"circle"}),
    "triangle": frozenset({"triangle"}), "triangles": frozenset({"triangle"}),
    "diamond": frozenset({"diamond"}), "diamonds": frozenset({"diamond"}), "rhombus": frozenset({"diamond"}),
}
GRID = (("top-left", "top", "top-right"), ("left", "centre", "right"), ("bottom-left", "bottom", "bottom-right"))
DIRECTIONS = ("left", "right", "up", "down", "still")


# ------------------------------------------------------------------ colours


def hsv(rgb: Sequence[float]) -> tuple[float, float, float]:
    """Hue in degrees [0, 360), saturation and value in [0, 1] of an RGB triple (0-255)."""
    r, g, b = (max(0.0, min(255.0, float(c))) / 255.0 for c in rgb)
    high, low = max(r, g, b), min(r, g, b)
    spread = high - low
    if spread <= 1e-9:
        hue = 0.0
    elif high == r:
        hue = (60.0 * (g - b) / spread) % 360.0
    elif high == g:
        hue = 60.0 * (b - r) / spread + 120.0
    else:
        hue = 60.0 * (r - g) / spread + 240.0
    return hue, (spread / high if high > 0 else 0.0), high


def colour_name(rgb: Sequence[float]) -> str:
    """The name of an RGB colour (0-255) among :data:`COLOUR_NAMES`, by the usual HSV boundaries:
    greys by low saturation (black, grey, white by brightness), brown as a dark orange, pink as a
    light red or a red-magenta, the rest by hue."""
    hue, saturation, value = hsv(rgb)
    if value < 0.2:
        return "black"
    if saturation < 0.2 or (saturation < 0.3 and value < 0.45):
        return "white" if value > 0.82 else ("black" if value < 0.25 else "grey")
    if 10 <= hue < 48 and value < 0.64:
        return "brown"
    if (hue >= 345 or hue < 12) and saturation < 0.5 and value > 0.7:
        return "pink"
    for name, upper in (("red", 12), ("orange", 42), ("yellow", 70), ("green", 165), ("cyan", 195), ("blue", 252),
                        ("purple", 290), ("magenta", 322), ("pink", 345), ("red", 360)):
        if hue < upper:
            return name
    return "red"


def _lab(rgb: Sequence[float]) -> np.ndarray:
    """CIELAB (D65) of an sRGB triple (0-255)."""
    c = np.asarray(rgb, np.float64) / 255.0
    linear = np.where(c > 0.04045, ((c + 0.055) / 1.055) ** 2.4, c / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def colour_distance(first: Sequence[float], second: Sequence[float]) -> float:
    """Distance of two RGB colours in CIELAB (Delta E 1976): about 2.3 is just noticeable, 40 is
    another colour."""
    return float(np.linalg.norm(_lab(first) - _lab(second)))


def colour_word(word: str) -> str | None:
    """The canonical colour word of ``word`` ("Gray" -> "gray", "reddish" -> "red"), or None."""
    word = word.strip().lower()
    if word in COLOUR_WORDS:
        return word
    for suffix in ("dish", "ish"):
        if word.endswith(suffix) and word[: -len(suffix)] in COLOUR_WORDS:
            return word[: -len(suffix)]
    if word == "reddish":
        return "red"
    return None


def colour_match(rgb: Sequence[float], word: str) -> float:
    """How well a seen colour fits a colour word, 0 (not at all) to 1 (its name): 1 for the name
    the colour gets (grey and gray alike), else falling with the CIELAB distance to the word's
    typical value (0 beyond 60)."""
    word = colour_word(word) or word
    if word == "gray":
        word = "grey"
    if word in COLOUR_NAMES and colour_name(rgb) == word:
        return 1.0
    reference = COLOUR_WORDS.get(word)
    if reference is None:
        return 0.0
    return max(0.0, 1.0 - colour_distance(rgb, reference) / 60.0) * (0.9 if word in COLOUR_NAMES else 1.0)


# ------------------------------------------------------------------ objects


@dataclass(frozen=True)
class Region:
    """One object seen in a frame. Coordinates are fractions of the frame's width and height."""

    x0: float
    y0: float
    x1: float
    y1: float
    cx: float
    cy: float
    area: float  # fraction of the frame
    rgb: tuple[int, int, int]
    colour: str
    shape: str
    aspect: float  # width / height of the bounding box (in pixels)

    @property
    def cell(self) -> str:
        """Its place on the 3 x 3 grid (by its centre)."""
        return GRID[min(2, int(self.cy * 3))][min(2, int(self.cx * 3))]

    def describe(self) -> str:
        """"a red circle at top-left"."""
        noun = "shape" if self.shape == "other" else self.shape
        return f"a {self.colour} {noun} at {self.cell}"


@dataclass(frozen=True)
class FrameView:
    """What one frame shows: its objects and whether it holds text-like regions (with their boxes,
    as fractions of the frame)."""

    objects: tuple[Region, ...]
    text_boxes: tuple[tuple[float, float, float, float], ...]


def analysis_size(width: int, height: int, limit: int = ANALYSIS_WIDTH) -> tuple[int, int] | None:
    """The (width, height) to decode a video's frames at for analysis: the video's own when it is at
    most ``limit`` wide (None), else scaled to that width, the aspect ratio kept (even sizes)."""
    if width <= limit:
        return None
    scale = limit / width
    return limit, max(2, int(round(height * scale / 2)) * 2)


def background(frame: np.ndarray, iterations: int = 3) -> tuple[np.ndarray, float]:
    """The frame's background as a smooth surface (a quadratic in x and y per channel, fitted to
    the pixels that fit it, on a coarse grid) and the noise of the pixels around it (the median
    distance to it, scaled to a standard deviation)."""
    height, width, _ = frame.shape
    step = max(1, min(height, width) // 40)
    ys, xs = np.mgrid[0:height:step, 0:width:step]
    u, v = xs.ravel() / width - 0.5, ys.ravel() / height - 0.5
    design = np.stack([np.ones_like(u), u, v, u * u, u * v, v * v], axis=1)
    samples = frame[0:height:step, 0:width:step].reshape(-1, 3).astype(np.float64)
    keep = np.ones(len(samples), bool)
    noise = 0.0
    coefficients = np.zeros((6, 3))
    for _ in range(iterations):
        if keep.sum() < 12:
            break
        used = design[keep]  # least squares by the normal equations: 6 unknowns, cheap and stable here
        coefficients = np.linalg.solve(used.T @ used + 1e-6 * np.eye(6), used.T @ samples[keep])
        residual = np.linalg.norm(samples - design @ coefficients, axis=1)
        noise = 1.4826 * float(np.median(residual[keep]))
        keep = residual < max(3.0 * noise, 15.0)
    gy, gx = np.mgrid[0:height, 0:width]
    gu, gv = gx / width - 0.5, gy / height - 0.5
    full = np.stack([np.ones_like(gu), gu, gv, gu * gu, gu * gv, gv * gv], axis=-1) @ coefficients
    return full.astype(np.float32), noise


MIN_CONTRAST = 28.0  # RGB distance from the background below which a pixel is background, whatever the noise
MIN_RADIUS_PX = 2.5  # an object holds a disc of this radius (at analysis size): strokes of text do not
SOLID = 0.92  # an object's inside is this much its own colour; a box around text (a tenth or more letters) is not
SAME_COLOUR = 90.0  # RGB distance from a region's median within which its pixels are "its colour"


def _structure(size: int) -> np.ndarray:
    return np.ones((size, size), bool)


# What frames showed, by their pixels: an agent looks at the same frames again (another budget, the
# other agent, a question asked again, the captioner's clips), and analysing one costs ~10 ms.
VIEWS_KEPT = 4096
_views: OrderedDict[bytes, FrameView] = OrderedDict()
_views_lock = threading.Lock()


def forget_views() -> None:
    """Empty the cache of analysed frames (a benchmark times the analysis itself)."""
    with _views_lock:
        _views.clear()


def find_objects(frame: np.ndarray) -> FrameView:
    """The objects (and text-like regions) of an RGB frame (H, W, 3) uint8; see the module docstring.
    A frame with the same pixels as one analysed recently gets the same view from the cache."""
    frame = np.ascontiguousarray(frame)
    hashed = hashlib.blake2b(f"{frame.shape} {frame.dtype}".encode(), digest_size=16)
    hashed.update(frame.data)
    digest = hashed.digest()
    with _views_lock:
        view = _views.get(digest)
        if view is not None:
            _views.move_to_end(digest)
            return view
    view = _analyse(frame)
    with _views_lock:
        _views[digest] = view
        while len(_views) > VIEWS_KEPT:
            _views.popitem(last=False)
    return view


def _analyse(frame: np.ndarray) -> FrameView:
    if frame.shape[1] < ANALYSIS_WIDTH:
        scale = ANALYSIS_WIDTH / frame.shape[1]
        size = (ANALYSIS_WIDTH, max(2, int(round(frame.shape[0] * scale))))
        frame = np.asarray(Image.fromarray(frame).resize(size, Image.Resampling.BILINEAR))
    height, width, _ = frame.shape
    image = frame.astype(np.float32)
    surface, noise = background(image)
    distance = np.linalg.norm(image - surface, axis=-1)
    raw = distance > max(MIN_CONTRAST, 4.0 * noise)
    # Specks of noise out; then gaps of a pixel or two closed, so that a low-contrast box around
    # text joins its letters (and is then seen as text) rather than breaking into blobs.
    opened = ndimage.binary_opening(raw, _structure(2))
    foreground = ndimage.binary_closing(opened, _structure(3))
    texts = _strokes(raw & ~opened, height, width)
    labels, count = ndimage.label(foreground, structure=_structure(3))
    if count == 0:
        return FrameView((), tuple(texts))
    min_area = max(12, int(0.0006 * height * width))
    objects = []
    boxes = ndimage.find_objects(labels)
    for number, box in enumerate(boxes, start=1):
        if box is None:
            continue
        rows, cols = box
        mask = labels[box] == number
        area = int(mask.sum())
        if area < min_area:
            continue
        h, w = rows.stop - rows.start, cols.stop - cols.start
        fraction = (cols.start / width, rows.start / height, cols.stop / width, rows.stop / height)
        if w > 0.7 * width or h > 0.7 * height:
            continue  # a band across the frame: layout, not an object
        radius = float(ndimage.distance_transform_edt(np.pad(mask, 1)).max())
        # Colour is judged inside the region: its rim blends with the background (and the codec
        # blurs colour over 2 x 2 pixels), while text inside a box differs from the box everywhere.
        # The rim is a pixel wide in a sharp video, wider in an enlarged or soft one: a quarter of
        # the inner radius is left out.
        inner = ndimage.binary_erosion(mask, _structure(3), iterations=max(1, int(radius / 4))) if radius >= 3 \
            else mask
        pixels = frame[box][inner if inner.any() else mask].astype(np.float32)
        rgb = np.median(pixels, axis=0)
        uniform = float((np.linalg.norm(pixels - rgb, axis=1) < SAME_COLOUR).mean())
        if radius < MIN_RADIUS_PX or uniform < SOLID:
            texts.append(fraction)
            continue
        if rows.start == 0 or cols.start == 0 or rows.stop == height or cols.stop == width:
            continue  # cut by the frame's edge: partly out of view, neither counted nor named
        ys, xs = np.nonzero(mask)
        cy, cx = (ys.mean() + rows.start + 0.5) / height, (xs.mean() + cols.start + 0.5) / width
        colour = tuple(int(round(c)) for c in rgb)
        objects.append(Region(*fraction, float(cx), float(cy), area / (height * width), colour, colour_name(colour),
                              shape_of(_core(mask, radius)), w / h))
    objects.sort(key=lambda r: (r.y0, r.x0))
    return FrameView(tuple(objects), tuple(texts))


def _core(mask: np.ndarray, radius: float) -> np.ndarray:
    """A region's mask without thin growths (a codec's smear behind a moving object, a shadow of the
    background's texture): opened with a disc a fifth of the region's inner radius, cut to its box."""
    r = int(round(radius * 0.2))
    if r < 1:
        return mask
    disc = np.hypot(*np.mgrid[-r:r + 1, -r:r + 1]) <= r + 0.2
    opened = ndimage.binary_opening(np.pad(mask, r + 1), disc)
    if not opened.any():
        return mask
    rows, cols = np.nonzero(opened)
    return opened[rows.min():rows.max() + 1, cols.min():cols.max() + 1]


def _strokes(thin: np.ndarray, height: int, width: int) -> list[tuple[float, float, float, float]]:
    """Boxes (fractions of the frame) of clusters of thin strokes that stand out from the
    background, as letters do: the pixels an opening removes, gathered by a small dilation; a
    cluster is kept when it holds enough stroke pixels and is no taller than a fifth of the frame."""
    if thin.sum() < 10:
        return []
    gathered = ndimage.binary_dilation(thin, _structure(3), iterations=2)
    labels, count = ndimage.label(gathered, structure=_structure(3))
    boxes = []
    for number, box in enumerate(ndimage.find_objects(labels), start=1):
        if box is None:
            continue
        rows, cols = box
        strokes = int((thin[box] & (labels[box] == number)).sum())
        h = rows.stop - rows.start
        if strokes >= 12 and 5 <= h <= height / 5:
            boxes.append((cols.start / width, rows.start / height, cols.stop / width, rows.stop / height))
    return boxes


def _hull_area(mask: np.ndarray) -> float:
    """The area of the convex hull of a mask's pixels (each pixel a unit square)."""
    from scipy.spatial import ConvexHull, QhullError

    edge = mask & ~ndimage.binary_erosion(mask)
    ys, xs = np.nonzero(edge)
    corners = np.concatenate([np.stack([xs + dx, ys + dy], axis=1) for dx in (0, 1) for dy in (0, 1)])
    try:
        return float(ConvexHull(corners).volume)
    except QhullError:
        return float(mask.sum())


def shape_of(mask: np.ndarray) -> str:
    """The shape class of a region's mask (its bounding box, bool): square or rectangle (fills its
    box, corners included), circle (about pi/4 of a squarish box, no corner filled), triangle (about
    half its box, centroid off the box's centre towards the base), diamond (about half its box, no
    corner filled, centroid at the centre), else other (hollow, star-like, or ragged)."""
    h, w = mask.shape
    area = float(mask.sum())
    if h < 4 or w < 4 or area == 0:
        return "other"
    extent = area / (h * w)
    filled = ndimage.binary_fill_holes(mask)
    if filled.sum() > 1.15 * area:
        return "other"  # a ring or a frame: hollow
    if area / _hull_area(mask) < 0.85:
        return "other"  # not convex: a cross, a star, an L
    aspect = w / h
    squarish = 0.75 <= aspect <= 1.33
    qh, qw = max(1, int(round(h / 4))), max(1, int(round(w / 4)))
    corners = [float(mask[:qh, :qw].mean()), float(mask[:qh, -qw:].mean()), float(mask[-qh:, :qw].mean()),
               float(mask[-qh:, -qw:].mean())]
    ys, xs = np.nonzero(mask)
    offset = max(abs((ys.mean() + 0.5) / h - 0.5), abs((xs.mean() + 0.5) / w - 0.5))
    if extent >= 0.82 and min(corners) >= 0.55:
        return "square" if squarish else "rectangle"
    if 0.66 <= extent < 0.88 and max(corners) <= 0.5 and squarish and offset < 0.06:
        return "circle"
    if 0.36 <= extent <= 0.66:
        if offset >= 0.09:
            return "triangle"
        if max(corners) <= 0.2 and offset < 0.06:
            return "diamond"
    return "other"


# ------------------------------------------------------------------ what a question names


def shape_matches(region: Region, word: str) -> bool:
    """Whether a region is what a shape word names ("squares", "box", "objects" matches anything)."""
    word = word.lower()
    if word in {"object", "objects", "shape", "shapes", "thing", "things", "item", "items", "one", "ones"}:
        return True
    return region.shape in SHAPE_WORDS.get(word, frozenset({word}))


def position_fits(region: Region, place: str) -> bool:
    """Whether a region's centre lies in a named place: a grid cell ("top-left", "centre", "top")
    or a half ("left half", "upper half")."""
    place = normalise_place(place)
    if place is None:
        return False
    if place.endswith(" half"):
        side = place.split()[0]
        return {"left": region.cx < 0.5, "right": region.cx >= 0.5, "top": region.cy < 0.5,
                "bottom": region.cy >= 0.5}[side]
    return region.cell == place


_PLACE_WORDS = {"upper": "top", "lower": "bottom", "middle": "centre", "center": "centre", "central": "centre"}


def normalise_place(text: str) -> str | None:
    """A place phrase as a grid cell or a half: "Upper left corner" -> "top-left", "the middle" ->
    "centre", "the right half of the screen" -> "right half", "top centre" -> "top"; None if none."""
    words = [_PLACE_WORDS.get(w, w) for w in re.findall(r"[a-z]+", text.lower())]
    vertical = next((w for w in words if w in {"top", "bottom"}), None)
    horizontal = next((w for w in words if w in {"left", "right"}), None)
    if ("half" in words or "side" in words) and bool(vertical) != bool(horizontal):
        return f"{vertical or horizontal} half"
    if vertical and horizontal:
        return f"{vertical}-{horizontal}"
    if vertical or horizontal:
        return vertical or horizontal
    if "centre" in words:
        return "centre"
    return None


# ------------------------------------------------------------------ motion


MOVING = 0.012  # a shift of at least this fraction of the frame (in the pair's gap) is motion
MATCH_REACH = 0.2  # a region a moment later is the same object only within this fraction of the frame
ONE_OBJECT_LAB = 30.0  # CIELAB distance under which two readings are one object's colour (names may differ)
TRACK_REACH = 0.35  # frames seconds apart: the same object within this fraction of the frame
DRIFT = 0.04  # a net shift over a track of at least this fraction of the frame is motion, however slow
TRACK_AGREE = 0.6  # ... when at least this share of the track's steps go the same way


def _same_object(region: Region, other: Region) -> bool:
    """Whether two readings, frames apart, can be one object: a colour near enough (the name may
    flip between orange and red on compression noise) and a shape class that agrees, where both
    frames give one (a moving square's blurred corners read as "other")."""
    if other.colour != region.colour and colour_distance(other.rgb, region.rgb) > ONE_OBJECT_LAB:
        return False
    return other.shape == region.shape or "other" in (region.shape, other.shape)


def match(region: Region, later: Sequence[Region], reach: float = MATCH_REACH) -> Region | None:
    """The region of ``later`` that is ``region`` a moment later: the nearest that can be the same
    object (:func:`_same_object`) within ``reach`` of the frame; None if there is none."""
    best, best_distance = None, reach
    for other in later:
        if not _same_object(region, other):
            continue
        distance = math.hypot(other.cx - region.cx, other.cy - region.cy)
        if distance < best_distance:
            best, best_distance = other, distance
    return best


def _way(dx: float, dy: float, least: float) -> str:
    if max(abs(dx), abs(dy)) < least:
        return "still"
    if abs(dx) >= abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


def motion_of(region: Region, later: Sequence[Region]) -> str | None:
    """Which way a region moved between two frames (left, right, up, down, still); None when it
    cannot be found in the later frame."""
    other = match(region, later)
    if other is None:
        return None
    return _way(other.cx - region.cx, other.cy - region.cy, MOVING)


def track_motion(track: Sequence[tuple[float, Sequence[Region]]]) -> str | None:
    """The net motion of an object over frames seconds apart: ``track`` is (time, the regions that
    may be the object) per frame. Each step links the closest pair of readings of consecutive frames
    that can be one object; the linked shifts add up to the object's net shift. A drift too slow for
    a half-second pair (a crossing of the frame in a few minutes) shows here; a net shift under
    ``DRIFT``, or steps that do not mostly go one way, is "still". None when no two frames link."""
    frames = sorted((t, regions) for t, regions in track if regions)
    dx = dy = 0.0
    steps: list[tuple[float, float]] = []
    for (_, before), (_, after) in zip(frames, frames[1:], strict=False):
        pairs = [(math.hypot(b.cx - a.cx, b.cy - a.cy), a, b) for a in before for b in after if _same_object(a, b)]
        pairs = [pair for pair in pairs if pair[0] <= TRACK_REACH]
        if not pairs:
            continue
        _, a, b = min(pairs, key=lambda pair: pair[0])
        steps.append((b.cx - a.cx, b.cy - a.cy))
        dx, dy = dx + steps[-1][0], dy + steps[-1][1]
    if not steps:
        return None
    way = _way(dx, dy, DRIFT)
    if way == "still":
        return way
    along = [sx if way in ("left", "right") else sy for sx, sy in steps]
    sign = 1 if way in ("right", "down") else -1
    agreeing = sum(1 for step in along if step * sign > 0)
    return way if agreeing >= TRACK_AGREE * len(along) else "still"


# ------------------------------------------------------------------ text


@lru_cache(maxsize=1)
def tesseract() -> str | None:
    """The path of Debian's ``tesseract`` program, or None when it is not installed."""
    return shutil.which("tesseract")


def ocr_available() -> bool:
    return tesseract() is not None


OCR_TIMEOUT_S = 20


def ocr(image: np.ndarray) -> str:
    """The text Tesseract reads in an RGB image (one block of lines; English). Raises RuntimeError
    when the program is missing or fails."""
    program = tesseract()
    if program is None:
        raise RuntimeError("no OCR engine: Debian's tesseract-ocr is not installed (make setup installs it)")
    with tempfile.TemporaryDirectory(prefix="hai-ocr-") as folder:
        path = Path(folder) / "text.png"
        Image.fromarray(image).save(path)
        done = subprocess.run([program, str(path), "stdout", "--psm", "6", "-l", "eng"], capture_output=True,
                              text=True, timeout=OCR_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"tesseract failed ({done.stderr.strip()[:200]})")
    return done.stdout


def text_lines(boxes: Sequence[tuple[float, float, float, float]], aspect: float = 4 / 3
               ) -> list[tuple[float, float, float, float]]:
    """Text-like boxes joined into lines: boxes that share most of their height and lie less than
    two heights apart side by side are one line (letters, or pieces of a box around a word).
    ``aspect`` is the frame's width / height (boxes are fractions of each)."""
    lines: list[list[float]] = []
    for x0, y0, x1, y1 in sorted(boxes, key=lambda b: b[0]):
        for line in lines:
            overlap = min(y1, line[3]) - max(y0, line[1])
            height = max(y1 - y0, line[3] - line[1])
            gap = (x0 - line[2]) * aspect
            if overlap > 0.4 * min(y1 - y0, line[3] - line[1]) and gap < 2 * height:
                line[:] = [min(x0, line[0]), min(y0, line[1]), max(x1, line[2]), max(y1, line[3])]
                break
        else:
            lines.append([x0, y0, x1, y1])
    return [tuple(line) for line in lines]


def text_crops(frame: np.ndarray, boxes: Sequence[tuple[float, float, float, float]]) -> np.ndarray | None:
    """The text-like regions of a frame, each cut out with a margin, enlarged so its text is about
    40 pixels tall, and stacked on a white-bordered strip for one OCR call; None without regions."""
    height, width, _ = frame.shape
    pieces = []
    for x0, y0, x1, y1 in text_lines(boxes, width / height):
        top, bottom = max(0, int(y0 * height) - 4), min(height, int(math.ceil(y1 * height)) + 4)
        left, right = max(0, int(x0 * width) - 6), min(width, int(math.ceil(x1 * width)) + 6)
        if bottom - top < 4 or right - left < 4:
            continue
        piece = Image.fromarray(frame[top:bottom, left:right])
        scale = max(1.0, 48.0 / piece.height)
        piece = piece.resize((int(piece.width * scale), int(piece.height * scale)), Image.Resampling.LANCZOS)
        grey = np.asarray(piece.convert("L"), np.float32)
        # Tesseract reads dark text on light: invert a piece whose border (its background) is dark.
        border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
        if border.mean() < 128:
            grey = 255 - grey
        pieces.append(np.pad(grey.astype(np.uint8), 12, constant_values=255))
    if not pieces:
        return None
    widest = max(p.shape[1] for p in pieces)
    strip = np.vstack([np.pad(p, ((0, 0), (0, widest - p.shape[1])), constant_values=255) for p in pieces])
    return np.stack([strip] * 3, axis=-1)


def read_text(frame: np.ndarray, boxes: Sequence[tuple[float, float, float, float]]) -> list[str]:
    """The words Tesseract reads in a frame's text-like regions (upper case, letters and digits, no
    repeats, in reading order); [] without regions."""
    strip = text_crops(frame, boxes)
    if strip is None:
        return []
    words = re.findall(r"[A-Za-z0-9:]+", ocr(strip))
    return list(dict.fromkeys(w.upper() for w in words if len(w.strip(":")) >= 2))


def text_similarity(first: str, second: str) -> float:
    """How alike two words are, 0 to 1 (difflib's ratio of the upper-cased letters and digits)."""
    import difflib

    a, b = re.sub(r"[^A-Z0-9]", "", first.upper()), re.sub(r"[^A-Z0-9]", "", second.upper())
    return difflib.SequenceMatcher(None, a, b).ratio() if a and b else 0.0
