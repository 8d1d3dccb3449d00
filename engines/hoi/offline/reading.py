"""Reading the drawn demo scenes from pixels: what the offline grounder and judge see.

The offline roles of ``engines.hoi.offline.grounder_judge`` stand in for GroundingDINO, SAM2.1 and a VLM judge
(HOI-Edit, ICML 2026; ``docs/hoi.md``, "Method: HOI-Eval scores") on the synthetic scenes of
``engines.hoi.offline.scenes``. They know the scenes' palette the way a trained detector knows its classes:
a :class:`Reading` of an image finds the boxes the evaluator drew on it (pure red, blue, yellow or
green, with their labels and the BEFORE/AFTER title band) and paints them out, then segments the
palette colours (after a 3 x 3 median, so noise does not break it) into regions of the person and
the objects; :func:`check` says whether a region meets what an instruction expects (contact,
place, form). Synthetic demo data, labelled as such; no model of the real photographs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from PIL import Image, ImageFilter
from scipy import ndimage

from engines.hoi.offline import scene_edits, scenes
from engines.hoi.roles import (
    Box,
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
PALETTE_INDEX = {name: i for i, name in enumerate(_NAMES)}


def image_digest(image: Image.Image) -> str:
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


def iou(a: Sequence[float], b: Sequence[float]) -> float:
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


def below_band(box: Sequence[float], band: int) -> Box:
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
        return np.isin(self.classes, [PALETTE_INDEX[name] for name in names])

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
        return int((self.classes[y1:y2, x1:x2] == PALETTE_INDEX[name]).sum())


def place_of(reading: Reading, region: Region, tolerance: int = 2) -> str:
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
        where = place_of(reading, region, 4 if strict and expect.place in scenes.HELD else 2)
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


def entity_class(phrase: str) -> str | None:
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


def region_box(region: Region) -> Box:
    return tuple(float(v) for v in region.box)
