"""Drawn human–object-interaction scenes: the synthetic world the HOI-Edit area runs on offline.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Method: Task and benchmark format") edits photographs
of a person interacting with objects. Offline, this module stands in for the photographs: a
256 x 192 cartoon of a person (head, hair, torso in an outfit colour, two arms with hands, legs)
beside a table, with one to three objects (cup, ball, book, box, bottle, can; each its own shape
and colour), sometimes a tool (stick, ruler), a shelf and a basket, over a striped wall and a
checked floor. Everything is drawn in flat colours from :data:`PALETTE`, so a reader that knows the
palette (``engines.hoi.offline.grounder_judge``) can find every part from pixels, the way a trained detector knows
its classes.

A :class:`Scene` holds where everything is; its **state** is where the objects are (table, shelf,
basket, in the hand, raised above the head), their form (intact, squashed, crushed, filled, open)
and what the right hand touches. The three HOI-Edit levels are changes of that state:

- L1 (interaction relation): the hand takes, touches or releases an object (``occur``,
  ``not_occur``) or changes how it holds it (``change_only``);
- L2 (location): where the object starts (``specific_pos_initial``: which of two alike objects) or
  ends (``specific_pos_end``: shelf, basket);
- L3 (non-rigid change, reasoning): the object is deformed (squeezed, crushed) or its state follows
  from a goal (a cup made ready for drinking is filled).

This module holds the scenes, their drawing and :func:`read_scene`, which reads a rendered scene
back from its pixels (so an offline editor or video generator works from the source image alone).
How a scene changes, under an instruction or by an editor's mistake, is ``engines.hoi.offline.scene_edits``.
Synthetic demo data, labelled as such; not a model of the real benchmark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw
from scipy import ndimage

RGB = tuple[int, int, int]
Box = tuple[int, int, int, int]  # [x1, y1, x2, y2] in pixels, x2 and y2 one past the last pixel

# ---------------------------------------------------------------- geometry (pixels)

WIDTH, HEIGHT = 256, 192
HORIZON = 140  # the wall above, the floor below
GROUND = 176  # the person's feet
TABLE_TOP = 120  # objects on the table stand on this row
TABLE_WIDTH = 112
TABLE_OFFSET = 32  # the table starts this far right of the person's centre
SHELF_TOP = 62
SHELF_WIDTH = 104
BASKET_OFFSET = (80, 108)  # the basket's x range on the table, from the table's left edge
BASKET_TOP = TABLE_TOP - 6  # an object in the basket shows above this row only
SLOTS = 3  # places along the table and the shelf
SLOT_GAP = 24
HEAD_Y, HEAD_R = 44, 10
PERSON_X = (44, 100)  # the range of the person's centre
STRIPE, TILE = 8, 16  # wall stripe width, floor tile size
HAND = 3  # a hand is a 7 x 7 square around its centre
TOOL_LENGTH = 26
REACH = 4  # a hand touching an object sits this far left of it: adjacent, never covering it

# ---------------------------------------------------------------- palette

WALLS: dict[str, tuple[RGB, RGB]] = {
    "sky": ((156, 182, 198), (142, 168, 184)),
    "sage": ((168, 190, 156), (154, 176, 142)),
    "lavender": ((172, 162, 196), (158, 148, 182)),
}
FLOORS: dict[str, tuple[RGB, RGB]] = {
    "slate": ((118, 122, 128), (104, 108, 114)),
    "steel": ((132, 146, 160), (120, 134, 148)),
}
# The person's identity is the outfit: an editor that drifts identity changes it.
OUTFITS: dict[str, RGB] = {"crimson": (168, 28, 56), "navy": (36, 54, 140), "plum": (100, 40, 100),
                           "pink": (236, 140, 196)}
SKIN: RGB = (236, 192, 156)
DARK: RGB = (46, 40, 44)  # hair and trousers
WOOD: RGB = (128, 84, 48)  # table and shelf
BASKET: RGB = (180, 150, 60)
WATER: RGB = (150, 220, 250)
PAGES: RGB = (250, 250, 120)


@dataclass(frozen=True)
class Kind:
    """How one kind of object or tool is drawn: its colour, its size (w, h) when intact, the forms it
    can take (beyond "intact") and the size of each."""

    colour: RGB
    size: tuple[int, int]
    forms: dict[str, tuple[int, int]]


OBJECTS: dict[str, Kind] = {
    "cup": Kind((0, 140, 140), (17, 16), {"filled": (17, 16)}),
    "ball": Kind((250, 136, 20), (16, 16), {"squashed": (24, 10)}),
    "book": Kind((128, 56, 176), (22, 8), {"open": (34, 10)}),
    "box": Kind((44, 170, 64), (18, 16), {}),
    "bottle": Kind((84, 126, 236), (10, 26), {}),
    "can": Kind((206, 60, 150), (11, 16), {"crushed": (16, 9)}),
}
TOOLS: dict[str, Kind] = {
    "stick": Kind((230, 90, 90), (TOOL_LENGTH, 3), {}),
    "ruler": Kind((200, 230, 60), (TOOL_LENGTH, 3), {}),
}
FORMS = ("intact", "squashed", "crushed", "filled", "open")
PLACES = ("table", "shelf", "basket", "hand", "raised")
RESTING = ("table", "shelf", "basket")
HELD = ("hand", "raised")

# Every colour a drawn scene uses, by name; the offline grounder and judge read pixels against it.
PALETTE: dict[str, RGB] = {
    **{f"wall:{name}:{i}": tone for name, tones in WALLS.items() for i, tone in enumerate(tones)},
    **{f"floor:{name}:{i}": tone for name, tones in FLOORS.items() for i, tone in enumerate(tones)},
    **{f"outfit:{name}": colour for name, colour in OUTFITS.items()},
    "skin": SKIN, "dark": DARK, "wood": WOOD, "basket": BASKET, "water": WATER, "pages": PAGES,
    **{f"object:{name}": kind.colour for name, kind in OBJECTS.items()},
    **{f"tool:{name}": kind.colour for name, kind in TOOLS.items()},
}


class NotAScene(ValueError):
    """An image that is not one of the drawn scenes (the offline editors and video generator only
    redraw those); the message says what did not match."""


# ---------------------------------------------------------------- scenes


@dataclass(frozen=True)
class Thing:
    """An object or a tool, and its state: where it is and its form."""

    kind: str  # an OBJECTS or TOOLS name
    place: str = "table"  # one of PLACES
    slot: int = 0  # which place along the table or shelf (0 nearest the person)
    form: str = "intact"

    def __post_init__(self) -> None:
        if self.kind not in OBJECTS and self.kind not in TOOLS:
            raise ValueError(f"unknown kind {self.kind!r}; choose one of {', '.join([*OBJECTS, *TOOLS])}")
        if self.place not in PLACES:
            raise ValueError(f"{self.kind}: unknown place {self.place!r}; choose one of {', '.join(PLACES)}")
        if not 0 <= self.slot < SLOTS:
            raise ValueError(f"{self.kind}: slot must be from 0 to {SLOTS - 1}, got {self.slot}")
        if self.form != "intact" and self.form not in self.spec.forms:
            forms = ", ".join(["intact", *self.spec.forms])
            raise ValueError(f"a {self.kind} cannot be {self.form!r}; its forms are {forms}")
        if self.is_tool and self.place not in ("table", "hand"):
            raise ValueError(f"a tool lies on the table or is in the hand, not {self.place!r}")

    @property
    def is_tool(self) -> bool:
        return self.kind in TOOLS

    @property
    def spec(self) -> Kind:
        return TOOLS[self.kind] if self.is_tool else OBJECTS[self.kind]

    @property
    def size(self) -> tuple[int, int]:
        return self.spec.size if self.form == "intact" else self.spec.forms[self.form]


@dataclass(frozen=True)
class Scene:
    """One drawn scene: the room, the person and the things, in one state.

    ``touch`` is the index in ``things`` of the object the right hand touches without holding it
    (or, while the hand holds a tool, the object the tool touches); None when it touches nothing."""

    wall: str
    floor: str
    person_x: int
    outfit: str
    things: tuple[Thing, ...]
    shelf: bool = False
    basket: bool = False
    touch: int | None = None

    def __post_init__(self) -> None:
        for value, table, what in ((self.wall, WALLS, "wall"), (self.floor, FLOORS, "floor"),
                                   (self.outfit, OUTFITS, "outfit")):
            if value not in table:
                raise ValueError(f"unknown {what} {value!r}; choose one of {', '.join(table)}")
        if not PERSON_X[0] <= self.person_x <= PERSON_X[1]:
            raise ValueError(f"person_x must be from {PERSON_X[0]} to {PERSON_X[1]}, got {self.person_x}")
        taken: dict[tuple[str, int], str] = {}
        for thing in self.things:
            if thing.place in ("table", "shelf"):
                if (thing.place, thing.slot) in taken:
                    raise ValueError(f"the {thing.kind} and the {taken[thing.place, thing.slot]} are both in "
                                     f"{thing.place} slot {thing.slot}")
                taken[thing.place, thing.slot] = thing.kind
        if any(t.place == "shelf" for t in self.things) and not self.shelf:
            raise ValueError("a thing is on the shelf but the scene has no shelf")
        in_basket = [t.kind for t in self.things if t.place == "basket"]
        if in_basket and not self.basket:
            raise ValueError("a thing is in the basket but the scene has no basket")
        if len(in_basket) > 1:
            raise ValueError(f"the basket holds one thing, got {', '.join(in_basket)}")
        held = [t.kind for t in self.things if t.place in HELD]
        if len(held) > 1:
            raise ValueError(f"the right hand holds one thing at a time, got {', '.join(held)}")
        if self.touch is not None:
            if not 0 <= self.touch < len(self.things):
                raise ValueError(f"touch {self.touch} is not the index of a thing (there are {len(self.things)})")
            target = self.things[self.touch]
            if target.is_tool or target.place not in RESTING:
                raise ValueError(f"the hand touches an object where it rests, not a {target.kind} in {target.place!r}")
            if held and not self.held_tool:
                raise ValueError("the hand cannot touch one object while holding another")

    @property
    def table_x(self) -> int:
        return self.person_x + TABLE_OFFSET

    @property
    def held(self) -> int | None:
        """The index of the thing in the right hand (held or raised), or None."""
        return next((i for i, t in enumerate(self.things) if t.place in HELD), None)

    @property
    def held_tool(self) -> bool:
        return self.held is not None and self.things[self.held].is_tool



def free_slot(things: Sequence[Thing], place: str) -> int:
    """The first free slot of the table or the shelf among ``things``."""
    taken = {t.slot for t in things if t.place == place}
    for slot in range(SLOTS):
        if slot not in taken:
            return slot
    raise ValueError(f"the {place} is full")


# ---------------------------------------------------------------- poses: where everything is drawn


@dataclass(frozen=True)
class ThingPose:
    """Where one thing is drawn: an object's rectangle (x1, y1, x2, y2; x2, y2 one past), or a
    tool's segment (x1, y1) to (x2, y2), ends included."""

    box: tuple[float, float, float, float]
    form: str
    held: bool  # drawn in front of the person
    in_basket: bool  # drawn behind the basket's front


@dataclass(frozen=True)
class Pose:
    """Everything that moves: the right hand's centre, every thing's pose and the outfit."""

    hand: tuple[float, float]
    things: tuple[ThingPose, ...]
    outfit: str


def rest_hand(person_x: int) -> tuple[int, int]:
    return person_x + 19, 104


def left_hand(person_x: int) -> tuple[int, int]:
    return person_x - 19, 104


def hold_hand(person_x: int) -> tuple[int, int]:
    return person_x + 28, 88


def raise_hand(person_x: int) -> tuple[int, int]:
    return person_x + 20, 28


def _resting_box(scene: Scene, thing: Thing) -> tuple[float, float, float, float]:
    w, h = thing.size
    if thing.place == "basket":
        cx, bottom = scene.table_x + (BASKET_OFFSET[0] + BASKET_OFFSET[1]) // 2, TABLE_TOP - 2
    else:
        cx = scene.table_x + 14 + SLOT_GAP * thing.slot
        bottom = TABLE_TOP if thing.place == "table" else SHELF_TOP
    x1, y1 = cx - w // 2, bottom - h
    return (x1, y1, x1 + w, bottom)


def grab_point(box: Sequence[float]) -> tuple[float, float]:
    """Where the hand is when it touches an object drawn at ``box``: just left of it, mid-height."""
    x1, y1, _, y2 = box
    return x1 - REACH, y1 + (y2 - y1) // 2


def tool_grab_point(segment: Sequence[float]) -> tuple[float, float]:
    """Where the hand is when it holds a tool at ``segment``: at its near end."""
    return segment[0] - REACH, segment[1]


def pose_of(scene: Scene) -> Pose:
    """Where the scene draws its hand and things."""
    px = scene.person_x
    boxes: list[tuple[float, float, float, float] | None] = [None] * len(scene.things)
    for i, thing in enumerate(scene.things):
        if thing.place in RESTING:
            if thing.is_tool:
                cx = scene.table_x + 14 + SLOT_GAP * thing.slot
                boxes[i] = (cx - 13, TABLE_TOP - 2, cx + 12, TABLE_TOP - 2)
            else:
                boxes[i] = _resting_box(scene, thing)
    hand: tuple[float, float] = rest_hand(px)
    held = scene.held
    if held is not None:
        thing = scene.things[held]
        w, h = thing.size
        if thing.is_tool:
            if scene.touch is not None:
                target = boxes[scene.touch]
                cy = target[1] + (target[3] - target[1]) // 2
                hand = (target[0] - REACH - TOOL_LENGTH, cy)
                boxes[held] = (hand[0] + REACH, cy, target[0] - 1, cy)
            else:
                hand = hold_hand(px)
                boxes[held] = (hand[0] + REACH, hand[1], hand[0] + REACH + TOOL_LENGTH - 1, hand[1])
        elif thing.place == "hand":
            hand = hold_hand(px)
            x1, y1 = hand[0] + REACH, hand[1] - h // 2
            boxes[held] = (x1, y1, x1 + w, y1 + h)
        else:  # raised: the object sits on the raised hand
            hand = raise_hand(px)
            x1, y2 = hand[0] - w // 2, hand[1] - HAND
            boxes[held] = (x1, y2 - h, x1 + w, y2)
    elif scene.touch is not None:
        hand = grab_point(boxes[scene.touch])
    things = tuple(ThingPose(box, t.form, t.place in HELD, t.place == "basket")
                   for box, t in zip(boxes, scene.things, strict=True))
    return Pose(hand, things, scene.outfit)


# ---------------------------------------------------------------- drawing


@lru_cache(maxsize=16)
def _background(wall: str, floor: str) -> Image.Image:
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH]
    wall_tone = (x // STRIPE) % 2
    floor_tone = (x // TILE + y // TILE) % 2
    walls, floors = np.asarray(WALLS[wall], np.uint8), np.asarray(FLOORS[floor], np.uint8)
    pixels = np.where((y < HORIZON)[..., None], walls[wall_tone], floors[floor_tone])
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


class _Canvas:
    """Draws each shape twice: in colour, and as its entity's id in a label image, so that every
    entity's box is the box of its visible pixels."""

    def __init__(self, background: Image.Image) -> None:
        self.image = background.copy()
        self.ids = Image.new("L", background.size, 0)
        self._colour = ImageDraw.Draw(self.image)
        self._id = ImageDraw.Draw(self.ids)

    def rect(self, box: Sequence[float], colour: RGB, ident: int) -> None:
        x1, y1, x2, y2 = (round(v) for v in box)
        if x2 - 1 < x1 or y2 - 1 < y1:
            return
        self._colour.rectangle((x1, y1, x2 - 1, y2 - 1), fill=colour)
        self._id.rectangle((x1, y1, x2 - 1, y2 - 1), fill=ident)

    def ellipse(self, box: Sequence[float], colour: RGB, ident: int) -> None:
        x1, y1, x2, y2 = (round(v) for v in box)
        if x2 - 1 < x1 or y2 - 1 < y1:
            return
        self._colour.ellipse((x1, y1, x2 - 1, y2 - 1), fill=colour)
        self._id.ellipse((x1, y1, x2 - 1, y2 - 1), fill=ident)

    def chord(self, box: Sequence[int], start: int, end: int, colour: RGB, ident: int) -> None:
        self._colour.chord(tuple(box), start, end, fill=colour)
        self._id.chord(tuple(box), start, end, fill=ident)

    def line(self, points: Sequence[Sequence[float]], colour: RGB, width: int, ident: int) -> None:
        xy = [(round(x), round(y)) for x, y in points]
        self._colour.line(xy, fill=colour, width=width)
        self._id.line(xy, fill=ident, width=width)

    def hand(self, centre: Sequence[float], ident: int) -> None:
        x, y = round(centre[0]), round(centre[1])
        self.rect((x - HAND, y - HAND, x + HAND + 1, y + HAND + 1), SKIN, ident)


def _draw_object(canvas: _Canvas, kind: str, pose: ThingPose, ident: int) -> None:
    colour = OBJECTS[kind].colour
    x1, y1, x2, y2 = pose.box
    if kind == "ball":
        canvas.ellipse(pose.box, colour, ident)
    elif kind == "cup":  # a body and a handle on the right
        canvas.rect((x1, y1, x2 - 4, y2), colour, ident)
        canvas.rect((x2 - 4, y1 + 4, x2, y1 + 6), colour, ident)
        canvas.rect((x2 - 2, y1 + 4, x2, y1 + 11), colour, ident)
        canvas.rect((x2 - 4, y1 + 9, x2, y1 + 11), colour, ident)
        if pose.form == "filled":
            canvas.rect((x1 + 2, y1 + 1, x2 - 6, y1 + 7), WATER, ident)
    elif kind == "bottle":  # a body and a neck
        canvas.rect((x1, y1 + 8, x2, y2), colour, ident)
        canvas.rect((x1 + 3, y1, x2 - 3, y1 + 8), colour, ident)
    elif kind == "book" and pose.form == "open":  # the cover under two open pages
        middle = (x1 + x2) / 2
        canvas.rect((x1, y1 + 3, x2, y2), colour, ident)
        canvas.rect((x1 + 1, y1, middle - 1, y1 + 6), PAGES, ident)
        canvas.rect((middle + 1, y1, x2 - 1, y1 + 6), PAGES, ident)
    else:  # book, box, can: blocks
        canvas.rect(pose.box, colour, ident)


@dataclass(frozen=True)
class Rendered:
    """A drawn scene and the boxes of what it shows (the visible pixels' boxes; None when hidden)."""

    image: Image.Image
    person_box: Box
    thing_boxes: tuple[Box | None, ...]


def _boxes(ids: Image.Image, count: int) -> list[Box | None]:
    parts = ndimage.find_objects(np.asarray(ids), max_label=count)
    return [None if part is None else (part[1].start, part[0].start, part[1].stop, part[0].stop) for part in parts]


def draw(scene: Scene, pose: Pose) -> Rendered:
    """The scene's room and person drawn with the things and hand where ``pose`` puts them."""
    canvas = _Canvas(_background(scene.wall, scene.floor))
    tx, px = scene.table_x, scene.person_x
    canvas.rect((tx, TABLE_TOP, tx + TABLE_WIDTH, TABLE_TOP + 5), WOOD, 0)
    canvas.rect((tx + 4, TABLE_TOP + 5, tx + 10, 168), WOOD, 0)
    canvas.rect((tx + TABLE_WIDTH - 10, TABLE_TOP + 5, tx + TABLE_WIDTH - 4, 168), WOOD, 0)
    if scene.shelf:
        canvas.rect((tx, SHELF_TOP, tx + SHELF_WIDTH, SHELF_TOP + 4), WOOD, 0)

    def draw_thing(i: int) -> None:
        thing, where = scene.things[i], pose.things[i]
        if where.box is None:
            return
        if thing.is_tool:
            x1, y1, x2, y2 = where.box
            canvas.line(((x1, y1), (x2, y2)), TOOLS[thing.kind].colour, 3, i + 2)
        else:
            _draw_object(canvas, thing.kind, where, i + 2)

    order = range(len(scene.things))
    for i in order:
        if not pose.things[i].held and not pose.things[i].in_basket:
            draw_thing(i)
    for i in order:
        if pose.things[i].in_basket and not pose.things[i].held:
            draw_thing(i)
    if scene.basket:
        canvas.rect((tx + BASKET_OFFSET[0], BASKET_TOP, tx + BASKET_OFFSET[1], TABLE_TOP), BASKET, 0)
    outfit = OUTFITS[pose.outfit]
    canvas.rect((px - 11, 108, px - 3, GROUND), DARK, 1)
    canvas.rect((px + 3, 108, px + 11, GROUND), DARK, 1)
    canvas.rect((px - 13, 55, px + 14, 109), outfit, 1)
    canvas.ellipse((px - HEAD_R, HEAD_Y - HEAD_R, px + HEAD_R + 1, HEAD_Y + HEAD_R + 1), SKIN, 1)
    canvas.chord((px - HEAD_R, HEAD_Y - HEAD_R, px + HEAD_R, HEAD_Y + HEAD_R), 190, 350, DARK, 1)
    canvas.line(((px - 11, 60), left_hand(px)), outfit, 6, 1)
    canvas.hand(left_hand(px), 1)
    canvas.line(((px + 11, 60), pose.hand), outfit, 6, 1)
    for i in order:
        if pose.things[i].held:
            draw_thing(i)
    canvas.hand(pose.hand, 1)
    boxes = _boxes(canvas.ids, len(scene.things) + 1)
    return Rendered(canvas.image, boxes[0], tuple(boxes[1:]))


def render(scene: Scene) -> Rendered:
    """The scene drawn in its state: the image and the person's and things' boxes."""
    return draw(scene, pose_of(scene))


# ---------------------------------------------------------------- reading a drawn scene back


def _packed(pixels: np.ndarray) -> np.ndarray:
    """(H, W) uint32: each pixel's colour as one number, so that a colour is found by one comparison."""
    return (pixels[..., 0].astype(np.uint32) << 16) | (pixels[..., 1].astype(np.uint32) << 8) | pixels[..., 2]


def _exact(packed: np.ndarray, colour: RGB) -> np.ndarray:
    return packed == ((colour[0] << 16) | (colour[1] << 8) | colour[2])


def _components(mask: np.ndarray) -> list[Box]:
    labels, _ = ndimage.label(mask, structure=np.ones((3, 3), bool))
    return [(s[1].start, s[0].start, s[1].stop, s[0].stop) for s in ndimage.find_objects(labels) if s is not None]


def _match_style(patch: np.ndarray, styles: dict[str, tuple[RGB, RGB]], tone_of: np.ndarray, what: str) -> str:
    for name, tones in styles.items():
        expected = np.asarray(tones, np.uint8)[tone_of]
        if np.array_equal(patch, expected):
            return name
    raise NotAScene(f"the {what} is none of the drawn {what}s ({', '.join(styles)})")


def read_scene(image: Image.Image) -> Scene:
    """The scene a drawn image shows, read from its pixels (the inverse of :func:`render`).

    Raises:
        NotAScene: the image is not a drawn scene in a resting state (another size, another
            picture, an edited or degraded scene, a half-done motion); the message says what did
            not match.
    """
    if image.size != (WIDTH, HEIGHT):
        raise NotAScene(f"a drawn scene is {WIDTH} x {HEIGHT} pixels, this image is {image.size[0]} x {image.size[1]}")
    return _read_scene(image.convert("RGB").tobytes())


@lru_cache(maxsize=64)
def _read_scene(data: bytes) -> Scene:
    # Cached by the pixels: the editors and the video generator read the same sources again and again.
    pixels = np.frombuffer(data, np.uint8).reshape(HEIGHT, WIDTH, 3)
    packed = _packed(pixels)
    y, x = np.mgrid[0:8, 0:32]
    wall = _match_style(pixels[0:8, 0:32], WALLS, (x // STRIPE) % 2, "wall")
    y, x = np.mgrid[HEIGHT - 8:HEIGHT, 0:16]
    floor = _match_style(pixels[HEIGHT - 8:HEIGHT, 0:16], FLOORS, (x // TILE + y // TILE) % 2, "floor")
    skin = _exact(packed, SKIN)
    heads = [b for b in _components(skin) if b[2] - b[0] == 2 * HEAD_R + 1 and b[1] < HEAD_Y < b[3]]
    if len(heads) != 1:
        raise NotAScene(f"expected one head, found {len(heads)}")
    person_x = (heads[0][0] + heads[0][2] - 1) // 2
    outfit = next((name for name, colour in OUTFITS.items() if tuple(pixels[80, person_x]) == colour), None)
    if outfit is None:
        raise NotAScene(f"the torso's colour {tuple(int(v) for v in pixels[80, person_x])} is no outfit")
    if not PERSON_X[0] <= person_x <= PERSON_X[1]:
        raise NotAScene(f"the person stands at x={person_x}, outside the drawn scenes' {PERSON_X}")
    tx = person_x + TABLE_OFFSET
    shelf = bool(_exact(packed[SHELF_TOP:SHELF_TOP + 4, tx:tx + 3], WOOD).all())
    basket = bool(_exact(packed[TABLE_TOP - 4:TABLE_TOP - 1, tx + BASKET_OFFSET[1] - 3:tx + BASKET_OFFSET[1]],
                         BASKET).all())
    things: list[Thing] = []
    boxes: list[Box] = []
    basket_x = (tx + BASKET_OFFSET[0], tx + BASKET_OFFSET[1])
    for kind, spec in OBJECTS.items():
        mask = _exact(packed, spec.colour)
        if kind == "cup":
            mask |= _exact(packed, WATER)
        elif kind == "book":
            mask |= _exact(packed, PAGES)
        for box in _components(mask):
            x1, y1, x2, y2 = box
            if (x2 - x1) * (y2 - y1) < 6:
                continue
            form = _form_of(kind, box, packed)
            w = (spec.size if form == "intact" else spec.forms[form])[0]
            cx = x1 + w // 2
            if basket and y2 == BASKET_TOP and basket_x[0] <= cx < basket_x[1]:
                place, slot = "basket", 0
            elif y2 in (TABLE_TOP, SHELF_TOP):
                place = "table" if y2 == TABLE_TOP else "shelf"
                slot = round((cx - tx - 14) / SLOT_GAP)
            elif y2 == raise_hand(person_x)[1] - HAND:
                place, slot = "raised", 0
            else:
                place, slot = "hand", 0
            if not 0 <= slot < SLOTS:
                raise NotAScene(f"a {kind} stands between the places of the table or shelf")
            things.append(Thing(kind, place, slot, form))
            boxes.append(box)
    for kind, spec in TOOLS.items():
        for box in _components(_exact(packed, spec.colour)):
            lying = box[3] == TABLE_TOP and box[3] - box[1] == 3
            slot = round((box[0] + 13 - tx - 14) / SLOT_GAP) if lying else 0
            if not 0 <= slot < SLOTS:
                raise NotAScene(f"a {kind} lies between the places of the table")
            things.append(Thing(kind, "table" if lying else "hand", slot))
            boxes.append(box)
    touch = _read_touch(skin, person_x, things, boxes)
    try:
        scene = Scene(wall, floor, person_x, outfit, tuple(things), shelf=shelf, basket=basket, touch=touch)
    except ValueError as error:
        raise NotAScene(f"the pixels describe no possible scene ({error})") from None
    if not np.array_equal(np.asarray(render(scene).image), pixels):
        raise NotAScene("the image is not a drawn scene in a resting state (redrawing what it shows differs)")
    return scene


def _form_of(kind: str, box: Box, packed: np.ndarray) -> str:
    x1, y1, x2, y2 = box
    if kind == "cup":
        return "filled" if _exact(packed[y1:y2, x1:x2], WATER).any() else "intact"
    if kind == "book":
        return "open" if _exact(packed[y1:y2, x1:x2], PAGES).any() else "intact"
    spec = OBJECTS[kind]
    for form, (w, _) in spec.forms.items():
        if x2 - x1 == w and w != spec.size[0]:
            return form
    return "intact"


def _read_touch(skin: np.ndarray, person_x: int, things: list[Thing], boxes: list[Box]) -> int | None:
    held = next((i for i, t in enumerate(things) if t.place in HELD), None)
    if held is not None and things[held].is_tool:
        end = boxes[held][2]
        return next((i for i, (t, b) in enumerate(zip(things, boxes, strict=True))
                     if not t.is_tool and t.place in RESTING and b[0] == end), None)
    if held is not None:
        return None
    rest, left = rest_hand(person_x), left_hand(person_x)
    hands = [b for b in _components(skin) if b[2] - b[0] == 2 * HAND + 1 and b[3] - b[1] == 2 * HAND + 1]
    centres = [((b[0] + b[2] - 1) // 2, (b[1] + b[3] - 1) // 2) for b in hands]
    right = [c for c in centres if c != left]
    if not right or right[0] == rest:
        return None
    for i, (thing, box) in enumerate(zip(things, boxes, strict=True)):
        if not thing.is_tool and thing.place in ("table", "shelf"):
            if tuple(grab_point(box)) == right[0]:
                return i
    return None
