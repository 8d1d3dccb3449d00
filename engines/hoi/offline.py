"""The offline defaults of HOI-Eval's and SCPE's model roles, for the drawn demo scenes.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``shared/specs/hoi_edit.md`` §3, §4, §8) runs
GroundingDINO + SAM2.1 (grounder), Gemini 2.5 Pro (VLM judge, SCPE's generator, reflector and
curator), image editors and Wan2.2 (I2V). The classes here take those roles with no network and no
GPU, on the synthetic scenes of :mod:`engines.hoi.scenes`, so that HOI-Eval, SCPE and the pages run
end to end on the shipped demo data. They are offline defaults, labelled as such: they read the
drawn scenes' pixels (they know the palette, the way a trained detector knows its classes) and are
no models of the real benchmark's photographs.

- ``grounder "offline"`` (:class:`OfflineGrounder`): ``detect`` finds the person or an object by
  colour segmentation (after a 3 x 3 median, so noise does not break it), a box per connected
  region, scored by how well the colours match; ``track`` follows a box from the original into the
  edit among the regions of the same colour, leaving out the other instances that did not move;
  None when the object is gone.
- ``judge "offline"`` (:class:`OfflineJudge`): answers HOI-Eval's questions from pixels (hand-object
  contact, where the object rests, whether it is above the head, deformed, filled or open), matches
  an entity among candidates by colour histogram (identity) and scores their quality by how much of
  the region is clean palette colour, and for SCPE critiques a generated video (interaction reached,
  camera still, clothing unchanged) and picks the earliest frame that shows the interaction.
  Replies are JSON text, as a VLM's; boxes drawn on the images in pure red, blue, yellow or green
  (upstream draws red and blue, width 2-3) are found, read and painted out before anything else.
- ``editor "offline-faithful" | "offline-drift" | "offline-timid" | "offline-noisy"`` (and
  ``"offline"``, the faithful one): each reads the scene back from the source image
  (:func:`engines.hoi.scenes.read_scene`), works out the scene the instruction asks for, and redraws
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

import hashlib
import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from PIL import Image, ImageFilter
from scipy import ndimage

from engines.hoi import scene_edits, scenes
from engines.hoi.roles import (
    Box,
    Detection,
    EnhancedPrompt,
    FrameChoice,
    Insight,
    PlaybookOperation,
    VideoReport,
    register,
)

# Colours the evaluator draws boxes and labels in (upstream: red and blue, width 2-3, white text).
ANNOTATION_COLOURS: dict[str, scenes.RGB] = {"red": (255, 0, 0), "blue": (0, 0, 255), "yellow": (255, 255, 0),
                                             "green": (0, 255, 0)}
LABEL_TEXT: scenes.RGB = (255, 255, 255)
TITLE_TEXT: scenes.RGB = (0, 0, 0)  # the evaluator's "BEFORE EDITING" / "AFTER EDITING" band: black on white
ANNOTATION_TOLERANCE = 40  # the palette stays more than 60 from every annotation colour
MATCH = 36  # a (median-filtered) pixel is a palette colour within this RGB distance: about half the closest pair (65)
CLEAN = 10  # a raw pixel this close to a palette or annotation colour is clean (no noise, blur or smear)
NOISE_FREE, NOISE_RUIN = 3.0, 28.0  # the noise (sigma, RGB levels) below which quality is whole, at which it is 0
BLUR_RUIN = 0.7  # unreadable pixels per edge pixel at which a blur or smear leaves no quality
PERSON_CLASSES = ("skin", "dark", *(f"outfit:{name}" for name in scenes.OUTFITS))
OBJECT_CLASSES = tuple(f"object:{name}" for name in scenes.OBJECTS)
PERSON_WORDS = {"human", "person", "people", "man", "woman", "boy", "girl", "child", "subject"}
SYNONYMS = {"mug": "cup", "tin": "can", "carton": "box", "notebook": "book"}

_NAMES = list(scenes.PALETTE)
_COLOURS = np.asarray([scenes.PALETTE[name] for name in _NAMES], np.int32)
_CLEAN_COLOURS = np.asarray([*_COLOURS.tolist(), *ANNOTATION_COLOURS.values(), LABEL_TEXT, TITLE_TEXT], np.int32)
_INDEX = {name: i for i, name in enumerate(_NAMES)}


def _digest(image: Image.Image) -> str:
    return hashlib.sha256(image.convert("RGB").tobytes()).hexdigest()[:16]


def _nearest(pixels: np.ndarray, colours: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pixel's nearest colour (index) and its squared distance, computed once per distinct
    colour (a drawn scene has a few dozen)."""
    h, w, _ = pixels.shape
    packed = (pixels[..., 0].astype(np.uint32) << 16) | (pixels[..., 1].astype(np.uint32) << 8) | pixels[..., 2]
    distinct, inverse = np.unique(packed.ravel(), return_inverse=True)
    rgb = np.stack([(distinct >> 16) & 255, (distinct >> 8) & 255, distinct & 255], axis=-1).astype(np.int32)
    squared = ((rgb[:, None, :] - colours[None, :, :]) ** 2).sum(-1)
    index, distance = squared.argmin(1), squared.min(1)
    return index[inverse].reshape(h, w), distance[inverse].reshape(h, w)


def _iou(a: Sequence[float], b: Sequence[float]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


# ---------------------------------------------------------------- boxes drawn on the images


def _annotation_mask(nearest: np.ndarray, distance: np.ndarray, pixels: np.ndarray) -> np.ndarray:
    """Pixels of drawn boxes and labels, from each pixel's nearest colour in :data:`_CLEAN_COLOURS`."""
    mask = (nearest >= len(_NAMES)) & (nearest < len(_NAMES) + len(ANNOTATION_COLOURS)) & (
        distance <= ANNOTATION_TOLERANCE ** 2)
    if not mask.any():
        return mask
    # A label's white text sits inside its filled background: white pixels mostly surrounded by it.
    white = np.all(pixels >= 235, axis=-1)
    around = ndimage.uniform_filter(mask.astype(np.float32), size=5)
    return mask | (white & (around >= 0.5))


def drawn_boxes(image: Image.Image, colour: str) -> list[Box]:
    """The rectangles drawn on ``image`` in an annotation colour (a name of
    :data:`ANNOTATION_COLOURS`), left to right; a filled label stuck to a box is left out."""
    pixels = np.asarray(image.convert("RGB"))
    _, distance = _nearest(pixels, np.asarray([ANNOTATION_COLOURS[colour]], np.int32))
    mask = distance <= ANNOTATION_TOLERANCE ** 2
    if not mask.any():
        return []
    # A label is a filled tab with white text: with its text filled in, an opening keeps the tab and
    # drops the box's thin lines; the lines are what is left.
    white = np.all(pixels >= 200, axis=-1) & (ndimage.uniform_filter(mask.astype(np.float32), size=5) >= 0.3)
    labels = ndimage.binary_opening(mask | white, structure=np.ones((5, 5), bool))
    lines = mask & ~ndimage.binary_dilation(labels, iterations=2)
    found = []
    components, _ = ndimage.label(lines, structure=np.ones((3, 3), bool))
    for index, part in enumerate(ndimage.find_objects(components), start=1):
        ys, xs = part
        w, h = xs.stop - xs.start, ys.stop - ys.start
        hollow = (components[part] == index).sum() < 0.7 * w * h
        if w >= 4 and h >= 4 and hollow:
            found.append((float(xs.start), float(ys.start), float(xs.stop), float(ys.stop)))
    return sorted(found)


def title_band(image: Image.Image) -> int:
    """The height of a white title band at the top of ``image`` (the evaluator's "BEFORE EDITING"
    / "AFTER EDITING"), 0 when there is none: the leading rows that are mostly pure white."""
    pixels = np.asarray(image.convert("RGB"))
    white_rows = np.all(pixels == 255, axis=-1).mean(axis=1) >= 0.6
    return int(np.argmin(white_rows)) if not white_rows.all() else 0


def _below_band(box: Sequence[float], band: int) -> Box:
    x1, y1, x2, y2 = box
    return (float(x1), float(y1) + band, float(x2), float(y2) + band)


def _inpaint(pixels: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Each masked pixel takes the colour of the nearest unmasked one."""
    if not mask.any() or mask.all():
        return pixels
    _, (iy, ix) = ndimage.distance_transform_edt(mask, return_indices=True)
    return pixels[iy, ix]


# ---------------------------------------------------------------- reading one image


class Region:
    """One connected region of a colour class: its box (x2, y2 one past), area and pixels."""

    def __init__(self, labels: np.ndarray, index: int, part: tuple[slice, slice], area: int) -> None:
        self._labels, self._index, self._part = labels, index, part
        self.box = (part[1].start, part[0].start, part[1].stop, part[0].stop)
        self.area = area

    @cached_property
    def mask(self) -> np.ndarray:
        """(H, W) bool: the region's pixels."""
        mask = np.zeros(self._labels.shape, bool)
        mask[self._part] = self._labels[self._part] == self._index
        return mask

    @property
    def width(self) -> int:
        return self.box[2] - self.box[0]

    @property
    def height(self) -> int:
        return self.box[3] - self.box[1]

    @property
    def centre_x(self) -> float:
        return (self.box[0] + self.box[2]) / 2


def _regions(mask: np.ndarray, min_area: int = 6, *, bridge: int = 0) -> list[Region]:
    """The connected regions of ``mask`` (8-connected) of at least ``min_area`` pixels, largest first;
    parts less than ``2 * bridge`` pixels apart count as one region (a blur leaves gaps of unreadable
    pixels between the parts of a body)."""
    if bridge:
        labels, count = ndimage.label(ndimage.binary_dilation(mask, iterations=bridge), structure=np.ones((3, 3), bool))
        labels = labels * mask
    else:
        labels, count = ndimage.label(mask, structure=np.ones((3, 3), bool))
    if count == 0:
        return []
    areas = np.bincount(labels.ravel(), minlength=count + 1)
    found = [Region(labels, index, part, int(areas[index]))
             for index, part in enumerate(ndimage.find_objects(labels), start=1)
             if part is not None and areas[index] >= min_area]
    return sorted(found, key=lambda r: -r.area)


class Reading:
    """What the offline roles see in one image: every pixel's palette class (after painting out the
    drawn boxes and a 3 x 3 median), and the person, hands, surfaces and objects found from them."""

    def __init__(self, image: Image.Image) -> None:
        raw = np.asarray(image.convert("RGB"))
        self.raw = raw
        nearest, distance = _nearest(raw, _CLEAN_COLOURS)
        self.clean = distance <= CLEAN ** 2  # exactly a drawn colour: palette, box or label
        self._drawn_over = nearest >= len(_NAMES)  # nearest to a box, label or title colour
        self.annotation = _annotation_mask(nearest, distance, raw)
        if self.clean.mean() >= 0.9:  # a clean drawing: its colours are read as they are
            painted = _inpaint(raw, self.annotation)
            classes, distance = _nearest(painted, _COLOURS) if self.annotation.any() else (nearest, distance)
        else:  # noise, blur or smear: a 3 x 3 median first, as a detector is robust to them
            painted = _inpaint(raw, self.annotation)
            smooth = np.asarray(Image.fromarray(np.ascontiguousarray(painted)).filter(ImageFilter.MedianFilter(3)))
            classes, distance = _nearest(smooth, _COLOURS)
        nearest_distance = np.sqrt(distance)
        self.classes = np.where((nearest_distance <= MATCH) & (classes < len(_NAMES)), classes, -1)
        self.fit = np.clip(1.0 - nearest_distance / MATCH, 0.0, 1.0)  # how well each pixel matches its class
        self._things: dict[str, list[Region]] = {}
        self._reaches: dict[int, np.ndarray] = {}

    def mask(self, *names: str) -> np.ndarray:
        return np.isin(self.classes, [_INDEX[name] for name in names])

    @cached_property
    def _noise(self) -> np.ndarray:
        """(H, W): how far each raw pixel is from its 3 x 3 median (noise shows, edges and blur do not)."""
        smooth = np.asarray(Image.fromarray(np.ascontiguousarray(self.raw)).filter(ImageFilter.MedianFilter(3)))
        return np.abs(self.raw.astype(np.float32) - smooth).mean(-1)

    @cached_property
    def _unread(self) -> tuple[np.ndarray, np.ndarray]:
        """Pixels of no palette colour that are not drawn boxes or text, and edge pixels (where the
        class changes): a blur or smear widens the edges into bands of unreadable mixed colours."""
        overlay = self.annotation | (self.clean & (self._drawn_over))
        unread = (self.classes == -1) & ~overlay
        edges = ndimage.maximum_filter(self.classes, 3) != ndimage.minimum_filter(self.classes, 3)
        return unread, edges

    def quality(self, box: Sequence[float] | None = None) -> float:
        """How clean the pixels in ``box`` (the whole image when None) are, from 1 (as drawn) to 0:
        the noise's sigma (robust, from the residual to a median) and the share of unreadable
        pixels along the edges (blur, smear)."""
        h, w = self.classes.shape
        x1, y1, x2, y2 = (int(round(v)) for v in (box if box is not None else (0, 0, w, h)))
        part = (slice(max(y1, 0), max(y2, 0)), slice(max(x1, 0), max(x2, 0)))
        if self.clean[part].size == 0:
            return 0.0
        # Pixels exactly in the drawn colours carry no noise; measure it only where they are not.
        sigma = 0.0 if self.clean[part].mean() >= 0.95 else 1.4826 * float(np.median(self._noise[part]))
        unread, edges = self._unread
        blur = float(unread[part].sum()) / max(float(edges[part].sum()), 1.0)
        noise_factor = 1.0 - (sigma - NOISE_FREE) / (NOISE_RUIN - NOISE_FREE)
        return float(np.clip(noise_factor, 0.0, 1.0) * np.clip(1.0 - blur / BLUR_RUIN, 0.0, 1.0))

    def fit_of(self, region: Region) -> float:
        return float(self.fit[region.mask].mean())

    @cached_property
    def person(self) -> Region | None:
        people = _regions(self.mask(*PERSON_CLASSES), min_area=150, bridge=2)
        return people[0] if people else None

    @cached_property
    def head(self) -> Region | None:
        if self.person is None:
            return None
        heads = _regions(self.mask("skin") & self.person.mask, min_area=20)
        return heads[0] if heads else None

    @cached_property
    def hands(self) -> np.ndarray:
        """(H, W) bool: skin that is not the head."""
        skin = self.mask("skin")
        return skin & ~self.head.mask if self.head is not None else skin

    @cached_property
    def _limbs(self) -> np.ndarray:
        """(H, W) bool: the hands and the arms that end in them (a blur can leave a small hand
        unreadable, not the arm)."""
        limbs = self.hands
        if self.person is not None:
            limbs = limbs | (self.person.mask & ~self.mask("dark"))
            if self.head is not None:
                limbs &= ~self.head.mask
        return limbs

    def reach(self, within: int = 3) -> np.ndarray:
        """(H, W) bool: what the limbs reach, ``within`` pixels around them. At the default three: a
        hand touching an object is drawn next to it, one not touching farther; and the reach goes on
        (up to five pixels more) across pixels of no colour, the band a blur or smear leaves between
        a hand and what it holds, never across a readable background."""
        if within not in self._reaches:
            limbs = self._limbs
            reach = np.zeros_like(limbs)
            if limbs.any():
                # Only around the limbs, which is quicker than the whole image.
                ys, xs = np.nonzero(limbs)
                margin = within + 6
                part = (slice(max(ys.min() - margin, 0), ys.max() + margin + 1),
                        slice(max(xs.min() - margin, 0), xs.max() + margin + 1))
                square = np.ones((3, 3), bool)
                near = ndimage.binary_dilation(limbs[part], structure=square, iterations=within)
                if within == 3:
                    # A drawn box line counts as unreadable where it crosses such a band (it hides its
                    # pixels), not on a sharp drawing, where the line would bridge hand and object.
                    unread = self._unread[0][part]
                    lines = self.annotation[part] & ndimage.binary_dilation(unread, structure=square, iterations=2)
                    near |= ndimage.binary_dilation(near, structure=square, iterations=5, mask=unread | lines)
                reach[part] = near
            self._reaches[within] = reach
        return self._reaches[within]

    @cached_property
    def table(self) -> tuple[int, int, int] | None:
        """The table's top row and x range, or None."""
        woods = _regions(self.mask("wood"), min_area=40)
        if not woods:
            return None
        table = woods[0]
        rows = table.mask.sum(axis=1)
        top = int(np.argmax(rows >= 0.5 * table.width))
        return top, table.box[0], table.box[2]

    @cached_property
    def shelf(self) -> tuple[int, int, int] | None:
        table = self.table
        for wood in _regions(self.mask("wood"), min_area=40)[1:]:
            if table is None or wood.box[3] <= table[0]:
                return wood.box[1], wood.box[0], wood.box[2]
        return None

    @cached_property
    def basket(self) -> Region | None:
        baskets = _regions(self.mask("basket"), min_area=40)
        return baskets[0] if baskets else None

    def things(self, kind: str) -> list[Region]:
        """The regions of an object kind (a cup with its water, a book with its pages) or a tool."""
        if kind not in self._things:
            if kind in scenes.TOOLS:
                names = [f"tool:{kind}"]
            else:
                names = [f"object:{kind}"] + (["water"] if kind == "cup" else []) + (["pages"] if kind == "book" else [])
            self._things[kind] = _regions(self.mask(*names))
        return self._things[kind]

    def regions_of(self, entity: str) -> list[Region]:
        """The person (``entity`` "person") or a kind's regions."""
        if entity == "person":
            return [self.person] if self.person is not None else []
        return self.things(entity)

    # --- facts about one object region

    def touches(self, region: Region, within: int = 3) -> bool:
        return int((self.reach(within) & region.mask).sum()) >= 2

    def touches_with_tool(self, region: Region, tool: str | None, within: int = 2) -> bool:
        kinds = [tool] if tool in scenes.TOOLS else list(scenes.TOOLS)
        near = ndimage.binary_dilation(region.mask, iterations=within)
        return any((self.reach() & t.mask).any() and (near & t.mask).any() for k in kinds for t in self.things(k))

    def rests_on(self, region: Region, surface: tuple[int, int, int] | None, tolerance: int = 2) -> bool:
        if surface is None:
            return False
        top, x1, x2 = surface
        return abs(region.box[3] - top) <= tolerance and x1 <= region.centre_x <= x2

    def in_basket(self, region: Region, tolerance: int = 2) -> bool:
        basket = self.basket
        if basket is None:
            return False
        x1, y1, x2, _ = basket.box
        return abs(region.box[3] - y1) <= tolerance and x1 <= region.centre_x <= x2

    def above_head(self, region: Region) -> bool:
        return self.head is not None and region.box[3] <= self.head.box[1] + 1

    def deformed(self, region: Region, kind: str) -> bool:
        """Squashed or crushed: much wider for its height than the intact kind. In the basket, whose
        front hides the lower part, wider than the intact kind (with a pixel each side to spare),
        measured against the basket's width so that a zoom does not count."""
        w, h = scenes.OBJECTS[kind].size
        if self.in_basket(region):
            basket_width = scenes.BASKET_OFFSET[1] - scenes.BASKET_OFFSET[0]
            return region.width / self.basket.width > (w + 2) / basket_width
        return (region.width / max(region.height, 1)) >= 1.5 * (w / h)

    def count_in(self, name: str, region: Region) -> int:
        x1, y1, x2, y2 = region.box
        return int((self.classes[y1:y2, x1:x2] == _INDEX[name]).sum())


def _where(reading: Reading, region: Region, tolerance: int = 2) -> str:
    """Where an object is: "basket", "table", "shelf" (resting within ``tolerance`` pixels of it),
    "raised" (above the head) or "air"."""
    if reading.in_basket(region, tolerance):
        return "basket"
    if reading.rests_on(region, reading.table, tolerance):
        return "table"
    if reading.rests_on(region, reading.shelf, tolerance):
        return "shelf"
    return "raised" if reading.above_head(region) else "air"


def check(reading: Reading, region: Region, kind: str, expect: scene_edits.Expectation, tool: str | None = None, *,
          strict: bool = False) -> tuple[bool, list[str]]:
    """Whether ``region`` (an object of ``kind``) is as ``expect`` says, and what was seen, in words.

    ``strict`` asks for a clear yes, as the frame selector wants: a touching hand (or tool) right
    against the object, a released hand well clear of it (6 px), a lifted object well off its
    surface (4 px). Drawing boxes over an image can eat a pixel of an edge, never more, so a frame
    that passes strictly still passes once boxed."""
    seen, ok = [], True
    touching = reading.touches(region, 2 if strict else 3)
    if expect.contact is not None:
        if expect.tool:
            with_tool = reading.touches_with_tool(region, tool, 1 if strict else 2)
            seen.append(f"the {tool or 'tool'} in the hand {'touches' if with_tool else 'does not touch'} the {kind}")
            ok &= with_tool
        elif expect.contact:
            seen.append(f"the hand {'touches' if touching else 'does not touch'} the {kind}")
            ok &= touching
        else:
            clear = not reading.touches(region, 6 if strict else 3)
            seen.append(f"the hand {'does not touch' if clear else 'touches'} the {kind}")
            ok &= clear
    if expect.place is not None:
        where = _where(reading, region, 4 if strict and expect.place in scenes.HELD else 2)
        names = {"basket": "is in the basket", "table": "rests on the table", "shelf": "rests on the shelf",
                 "raised": "is above the head", "air": "is off every surface"}
        seen.append(f"the {kind} {names[where]}")
        if expect.place == "hand":
            ok &= touching and where in ("air", "raised")
        elif expect.place == "raised":
            ok &= touching and where == "raised"
        else:
            ok &= where == expect.place
    if expect.form is not None:
        if expect.form in ("squashed", "crushed"):
            has = reading.deformed(region, kind)
        elif expect.form == "filled":
            has = reading.count_in("water", region) >= 6
        else:  # open
            has = reading.count_in("pages", region) >= 10
        seen.append(f"the {kind} is {'' if has else 'not '}{expect.form}")
        ok &= has
    return ok, seen


def _entity(phrase: str) -> str | None:
    """What a grounding phrase names: "person", an object or tool kind, or None."""
    words = re.findall(r"[a-z]+", phrase.lower())
    for word in reversed(words):
        word = SYNONYMS.get(word, word)
        singular = word[:-1] if word.endswith("s") else word
        if word in PERSON_WORDS or singular in PERSON_WORDS:
            return "person"
        for name in (word, singular):
            if name in scenes.OBJECTS or name in scenes.TOOLS:
                return name
    return None


def _region_box(region: Region) -> Box:
    return tuple(float(v) for v in region.box)


# ---------------------------------------------------------------- grounder


@register("grounder", "offline")
class OfflineGrounder:
    """GroundingDINO + SAM2.1's offline stand-in on the drawn scenes (offline default; see the module
    docstring)."""

    name = "offline"

    def detect(self, image: Image.Image, prompt: str, *, box_threshold: float = 0.3,
               text_threshold: float = 0.25) -> list[Detection]:
        """Boxes of what ``prompt`` names ("human", "cup", or several phrases split by "." or ","),
        best first; a phrase it does not know finds nothing."""
        reading = Reading(image)
        found = []
        for phrase in re.split(r"[.,]", prompt):
            entity = _entity(phrase)
            if entity is None:
                continue
            for region in reading.regions_of(entity):
                # Colour match, and a small region is a weaker find (a detector's score drops on fragments).
                score = (0.35 + 0.6 * reading.fit_of(region)) * min(1.0, region.area / 40)
                if score >= box_threshold:
                    found.append(Detection(_region_box(region), round(score, 4), phrase.strip()))
        return sorted(found, key=lambda d: -d.score)

    def track(self, original: Image.Image, edited: Image.Image, box: Box) -> Box | None:
        """Where the thing in ``box`` of the original is in the edit, or None when it is gone."""
        before, after = Reading(original), Reading(edited)
        return _track(before, after, box)


def _dominant(reading: Reading, box: Sequence[float], names: Sequence[str]) -> str | None:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    part = reading.classes[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)]
    counts = {name: int((part == _INDEX[name]).sum()) for name in names}
    best = max(counts, key=counts.get) if counts else None
    return best if best is not None and counts[best] > 0 else None


def _kind_in(reading: Reading, box: Sequence[float]) -> str | None:
    tools = [f"tool:{name}" for name in scenes.TOOLS]
    best = _dominant(reading, box, [*OBJECT_CLASSES, *tools])
    return best.split(":", 1)[1] if best else None


def _track(before: Reading, after: Reading, box: Sequence[float]) -> Box | None:
    kind = _kind_in(before, box)
    if kind is None:
        if _dominant(before, box, PERSON_CLASSES) and after.person is not None:
            return _region_box(after.person)
        return None
    instances = before.things(kind)
    if not instances:
        return None
    tracked = max(instances, key=lambda r: _iou(r.box, box))
    others = [r for r in instances if r is not tracked]
    # The other instances that did not move are not the tracked one (SAM2 keeps them apart too).
    candidates = [r for r in after.things(kind) if not any(_iou(r.box, o.box) >= 0.7 for o in others)]
    if not candidates:
        return None
    best = max(candidates, key=lambda r: _iou(r.box, tracked.box)
               + 0.3 * min(r.area, tracked.area) / max(r.area, tracked.area))
    return _region_box(best)


# ---------------------------------------------------------------- judge


def _reply(answer: bool, confidence: float, reasoning: str) -> str:
    return json.dumps({"answer": "yes" if answer else "no", "confidence": round(confidence, 3) if answer else 0.0,
                       "reasoning": reasoning})


def _confidence(reading: Reading, boxes: Sequence[Sequence[float]]) -> float:
    """A yes-answer's confidence: high on clean pixels, lower as noise or blur hide the details."""
    quality = min((reading.quality(box) for box in boxes), default=reading.quality())
    return 0.6 + 0.35 * quality


def _target(reading: Reading, kind: str, box: Sequence[float] | None) -> list[Region]:
    regions = reading.things(kind)
    if box is None:
        return regions
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    inside = []
    for region in regions:
        share = region.mask[max(y1 - 3, 0):y2 + 3, max(x1 - 3, 0):x2 + 3].sum() / region.area
        if share >= 0.3:
            inside.append(region)
    return inside


@dataclass(frozen=True)
class _Targets:
    """Each clause's object in the first frame of a video, and the clause."""

    clauses: list[scene_edits.Clause]
    boxes: list[Box | None]


def _first_targets(reading: Reading, clauses: list[scene_edits.Clause]) -> _Targets:
    boxes: list[Box | None] = []
    for clause in clauses:
        regions = reading.things(clause.object_name)
        if clause.qualifier == "touch":
            regions = [r for r in regions if reading.touches(r)]
        elif clause.qualifier == "hand":
            regions = [r for r in regions if reading.touches(r) and _where(reading, r) in ("air", "raised")]
        elif clause.qualifier is not None:
            regions = [r for r in regions if _where(reading, r) == clause.qualifier]
        boxes.append(_region_box(regions[0]) if regions else None)
    return _Targets(clauses, boxes)


def _judge_frame(first: Reading, frame: Reading, targets: _Targets, *, strict: bool = False) -> tuple[bool, list[str]]:
    """Whether a frame shows every clause's end state (clearly, when ``strict``), and what was seen."""
    ok, seen = True, []
    for clause, box in zip(targets.clauses, targets.boxes, strict=True):
        where = None if box is None else _track(first, frame, box)
        region = None
        if where is not None:
            region = next((r for r in frame.things(clause.object_name) if r.box == tuple(int(v) for v in where)), None)
        if region is None:
            ok = False
            seen.append(f"the {clause.object_name} is nowhere to be seen")
            continue
        done, facts = check(frame, region, clause.object_name, scene_edits.expectation(clause.action), clause.tool_name,
                            strict=strict)
        ok &= done
        seen.extend(facts)
    return ok, seen


def _outfit(reading: Reading) -> str | None:
    if reading.person is None:
        return None
    counts = {name: int((reading.classes[reading.person.mask] == _INDEX[f"outfit:{name}"]).sum())
              for name in scenes.OUTFITS}
    best = max(counts, key=counts.get)
    return best if counts[best] > 0 else None


def camera_moved(first: Image.Image, last: Image.Image) -> bool:
    """Whether the background's top-left corner (never covered in the drawn scenes) differs: the
    camera panned or zoomed."""
    a = np.asarray(first.convert("RGB"), np.int16)[0:8, 0:32]
    b = np.asarray(last.convert("RGB"), np.int16)[0:8, 0:32]
    return a.shape != b.shape or float(np.abs(a - b).mean()) > 6.0


@register("judge", "offline")
class OfflineJudge:
    """Gemini 2.5 Pro's offline stand-in as HOI-Eval's judge and SCPE's analyzer and frame selector,
    on the drawn scenes (offline default; see the module docstring)."""

    name = "offline"

    def yes_no(self, images: Sequence[Image.Image], question: str, context: str = "") -> str:
        """``{answer, confidence, reasoning}`` for a question on the last image (the edit): the
        interaction question about the boxed person and object, or a ``question_v6`` question."""
        if not images:
            raise ValueError("yes_no needs at least one image (the edited one last)")
        read = scene_edits.read_question(question)
        if read is None:
            return _reply(False, 0.0, f"The question {question!r} is about nothing this judge can check.")
        if read.object_name not in scenes.OBJECTS:
            return _reply(False, 0.0, f"There is no {read.object_name} in the image.")
        after = images[-1]
        reading = Reading(after)
        red = _largest(drawn_boxes(after, "red")) if read.interaction else None
        regions = _target(reading, read.object_name, red)
        if not regions:
            where = " in the red box" if red is not None else ""
            return _reply(False, 0.0, f"There is no {read.object_name}{where}.")
        for region in regions:
            ok, seen = check(reading, region, read.object_name, read.expect, read.tool_name)
            if ok:
                person = reading.person.box if reading.person is not None else region.box
                confidence = _confidence(reading, [region.box, person])
                return _reply(True, confidence, _sentence(seen) + " So yes.")
        return _reply(False, 0.0, _sentence(seen) + " So no.")

    def match_score(self, before: Image.Image, after_candidates: Image.Image, entity: str, instruction: str, *,
                    entity_box: Sequence[float] | None = None,
                    candidates: Sequence[Sequence[float]] | None = None) -> str:
        """``{best_match_id, identity_score, quality_score, similarity, reasoning}``: which candidate
        in the edit is the entity boxed in the original, how alike (colour histograms of the
        person's or the objects' classes, squared, so that a changed outfit, about half of the
        person, scores under 0.3) and how clean its pixels are.

        ``entity`` is "subject" (or "person", "human") or the object's name / "object". The entity's
        box in ``before`` is ``entity_box``, else the red box drawn on it. The candidates are
        ``candidates`` (their indexes are the ids), else the boxes drawn on ``after_candidates``,
        numbered left to right (this judge reads no label text). Boxes given as keywords are in the
        scene's pixels (a title band above it is allowed for). With no candidate, it finds the entity
        itself and answers ``best_match_id`` null (upstream's "manual" mode)."""
        is_person = entity.strip().lower() in PERSON_WORDS
        names = PERSON_CLASSES if is_person else OBJECT_CLASSES
        first, second = Reading(before), Reading(after_candidates)
        # Boxes given as keywords are in the scene's pixels, below any title band.
        if entity_box is not None:
            entity_box = _below_band(entity_box, title_band(before))
        if candidates is not None:
            candidates = [_below_band(box, title_band(after_candidates)) for box in candidates]
        if entity_box is None:
            entity_box = _largest(drawn_boxes(before, "red")) or _own_box(first, entity, is_person)
        reference = _histogram(first, entity_box, names)
        if candidates is None:
            candidates = [b for colour in ANNOTATION_COLOURS for b in drawn_boxes(after_candidates, colour)]
            candidates = sorted(candidates)
        manual = not candidates
        if manual:  # no boxes: the judge finds the entity in the edit itself
            kind = None if is_person else _kind_in(first, entity_box)
            own = second.person if is_person else (next(iter(second.things(kind)), None) if kind else None)
            candidates = [own.box] if own is not None else []
        if reference.sum() == 0 or not candidates:
            what = "nothing of the entity in its box before editing" if reference.sum() == 0 else "no candidate"
            return json.dumps({"best_match_id": None, "identity_score": 0.0, "quality_score": 0.0,
                               "similarity": 0.0, "reasoning": f"There is {what}."})
        scores = [_identity(reference, _histogram(second, box, names)) for box in candidates]
        best = int(np.argmax(scores))
        identity = scores[best]
        quality = second.quality(candidates[best])
        notes = [f"candidate {best} has {'the same' if identity >= 0.8 else 'different'} colours"
                 f" (identity {identity:.2f})",
                 "its pixels are clean" if quality >= 0.9 else f"noise or blur spoil its pixels (quality {quality:.2f})"]
        if not is_person:
            kind = _kind_in(second, candidates[best])
            asked = {clause.action.form for clause in scene_edits.find_instruction(instruction)}
            regions = _target(second, kind, candidates[best]) if kind in scenes.OBJECTS else []
            if regions and not asked & {"squashed", "crushed"} and second.deformed(regions[0], kind):
                quality = min(quality, 0.2)  # upstream's rubric: collapsed geometry is below 0.4
                notes.append(f"the {kind} lost its shape though the instruction does not ask for it")
        return json.dumps({"best_match_id": None if manual else best, "identity_score": round(identity, 3),
                           "quality_score": round(quality, 3), "similarity": round(identity * quality, 3),
                           "reasoning": _sentence(notes)})

    def analyze_video(self, image: Image.Image, frames: Sequence[Image.Image], instruction: str,
                      prompt: str) -> VideoReport:
        """SCPE's analyzer: success when the last frame shows the instruction's end state, the camera
        did not move and the clothing did not change; the critique says what went wrong."""
        if not frames:
            raise ValueError("analyze_video needs the video's frames")
        clauses = scene_edits.find_instruction(instruction)
        if not clauses:
            critique = f"The instruction {instruction!r} is none this analyzer can check."
            return VideoReport(False, critique, json.dumps({"success": False, "critique": critique}))
        # The source image says which object is meant and how the person looks; the frames say the rest.
        first, last = Reading(image), Reading(frames[-1])
        done, seen = _judge_frame(first, last, _first_targets(first, clauses))
        problems = []
        if not done:
            problems.append(f"The action is not carried through: at the end {'; '.join(seen)}.")
        if camera_moved(frames[0], frames[-1]):
            problems.append("The camera moves during the clip (the background shifts), so the shot is not static.")
        if _outfit(first) != _outfit(last):
            problems.append("The person's clothing changes during the clip.")
        success = not problems
        critique = " ".join(problems) if problems else (
            f"The action is completed ({'; '.join(seen)}); the camera stays fixed and the person looks the same "
            "throughout.")
        return VideoReport(success, critique, json.dumps({"success": success, "critique": critique}))

    def select_frame(self, frames: Sequence[Image.Image], instruction: str) -> FrameChoice:
        """The earliest frame that clearly shows the instruction's end state with acceptable quality
        (``strict_pass``, mode "earliest_pass"); else the earliest that shows it at all (mode
        "best_effort"); else frame 1 (mode "fallback", upstream's frame when the selector fails)."""
        if not frames:
            raise ValueError("select_frame needs frames")
        clauses = scene_edits.find_instruction(instruction)
        boxes = re.compile(r" in the (?:blue|red|yellow) bounding box")
        question = (" and ".join(boxes.sub("", c.question) for c in clauses) if clauses
                    else f"Is this done: {instruction}?")
        first = Reading(frames[0])
        targets = _first_targets(first, clauses)
        best_effort = None
        for index, frame in enumerate(frames):
            if not clauses:
                break
            reading = first if index == 0 else Reading(frame)
            if reading.quality() < 0.5:
                continue
            score = round(0.6 + 0.35 * reading.quality(), 3)
            if _judge_frame(first, reading, targets, strict=True)[0]:
                return _choice(index, True, "earliest_pass", score, question)
            if best_effort is None and _judge_frame(first, reading, targets)[0]:
                best_effort = (index, score)
        if best_effort is not None:
            return _choice(best_effort[0], False, "best_effort", best_effort[1], question)
        return _choice(min(1, len(frames) - 1), False, "fallback", 0.0, question)


def _choice(index: int, strict_pass: bool, mode: str, score: float, question: str) -> FrameChoice:
    raw = json.dumps({"best_frame_index": index, "strict_pass": strict_pass, "selection_mode": mode,
                      "match_score": score})
    return FrameChoice(index, strict_pass, mode, score, "dynamic", question, raw)


def _largest(boxes: Sequence[Box]) -> Box | None:
    return max(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1])) if boxes else None


def _own_box(reading: Reading, entity: str, is_person: bool) -> Sequence[float]:
    """The entity's box found without a drawn box: the person, or the named (else the largest) object."""
    if is_person:
        region = reading.person
    else:
        kind = _entity(entity)
        regions = reading.things(kind) if kind in scenes.OBJECTS else [
            r for name in scenes.OBJECTS for r in reading.things(name)]
        region = max(regions, key=lambda r: r.area, default=None)
    h, w = reading.classes.shape
    return region.box if region is not None else (0, 0, w, h)


def _histogram(reading: Reading, box: Sequence[float], names: Sequence[str]) -> np.ndarray:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    part = reading.classes[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)]
    return np.asarray([(part == _INDEX[name]).sum() for name in names], np.float64)


def _identity(a: np.ndarray, b: np.ndarray) -> float:
    if a.sum() == 0 or b.sum() == 0:
        return 0.0
    return float(np.minimum(a / a.sum(), b / b.sum()).sum()) ** 2


def _sentence(parts: Sequence[str]) -> str:
    text = "; ".join(parts) if parts else "nothing to report"
    return text[0].upper() + text[1:] + "."


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
            engines.hoi.scenes.NotAScene: the source is not a drawn scene.
            ValueError: the instruction is none of the drawn world's, or names what the scene lacks.
        """
        scene = scenes.read_scene(image)
        keys = scene_edits.motion(scene, instruction)
        habits = self.habits
        rng = random.Random(f"{self.name}|{seed}|{_digest(image)}|{instruction}")
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
            engines.hoi.scenes.NotAScene: the source is not a drawn scene.
        """
        if num_frames < 2:
            raise ValueError(f"num_frames must be at least 2, got {num_frames}")
        scene = scenes.read_scene(image)
        clauses = scene_edits.find_instruction(prompt)
        try:
            keys = scene_edits.motion(scene, clauses) if clauses else [scenes.pose_of(scene)]
        except ValueError:  # the prompt names an object the scene lacks: nothing happens
            keys = [scenes.pose_of(scene)]
        rng = random.Random(f"offline-i2v|{seed}|{_digest(image)}")
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
