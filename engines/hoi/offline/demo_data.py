"""The HOI-Edit demo benchmark: drawn scenes in the upstream format, and offline methods' outputs.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Method: Task and benchmark format") ships two
annotation files and the images they name. This module writes a small synthetic benchmark of the
same shape from the drawn scenes of :mod:`engines.hoi.offline.scenes` (synthetic, labelled as such: it
exercises the pipeline, it is not the benchmark), laid out as upstream's repository so that a
user can point every command at the real benchmark folder instead::

    <root>/collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json   (and ..._L3_...)
    <root>/images/{L1L2,L3}/<key>                     the source images
    <root>/<method>_frames/{L1L2,L3}/<key>            each method's edit (an I2V method: the selected frame)
    <root>/<method>_strips/{L1L2,L3}/<stem>/frame_NN.png   an I2V method's 15 sampled frames
    <root>/methods.json                               {method: {kind, label, offline, description}}

Every item carries every upstream field (``instruction``, ``object``, ``subject_bounding_box``,
``object_bounding_box``, ``generated_question``, ``tools``, ``tool_bboxes``, ``tags_v6`` as a
comma-separated string, ``question_v6`` as a list, ``""`` or one string as upstream varies, and
the legacy ``tag`` and ``question``), and all seven tags are covered: ten L1/L2 recipes and four
L3 recipes (:data:`RECIPES`), each drawn ``items_per_tag`` times with seeded rooms, people,
positions and distracting objects.

The steps are separate functions so that later steps can add to a demo folder: the benchmark
(:func:`write_benchmark`), the image editors' outputs (:func:`write_edits`, one per
:data:`EDIT_METHODS`), the plain offline I2V's videos and selected frames (:func:`write_i2v`:
the bare instruction as the prompt, frames chosen by the offline judge's ``select_frame``) and
``methods.json`` (:func:`add_method`); :func:`generate_demo` runs them in order. HOI-Eval's
records (``engines.hoi.evaluate`` with the offline grounder and judge) and an SCPE method
(``engines.hoi.scpe`` with the offline roles) are added afterwards; ``engines.hoi.offline.demo`` does the
whole of it::

    python -m engines.hoi demo --out assets/hoi/demo --items-per-tag 3 --seed 0
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from engines.hoi.benchmark import ANNOTATION_FILES, SPLITS
from engines.hoi.methods import write_method
from engines.hoi.offline import generation, grounder_judge, scene_edits, scenes  # noqa: F401  (generation and grounder_judge register the offline roles)
from engines.hoi.roles import make

OCCUR = "L1-interaction-relation_occur"
NOT_OCCUR = "L1-interaction-relation_not_occur"
CHANGE_ONLY = "L1-interaction-relation_change_only"
POS_END = "L2-location_understanding-specific_pos_end"
POS_INITIAL = "L2-location_understanding-specific_pos_initial"
NON_RIGID = "L3-non_rigid_change"
REASONING = "L3-reasoning_process"

EDIT_METHODS = ("offline-faithful", "offline-drift", "offline-timid", "offline-noisy")
I2V_METHOD = "offline-i2v"
METHODS: dict[str, dict] = {
    "offline-faithful": {"kind": "image_edit", "label": "Offline editor (faithful)", "offline": True,
                         "description": "Redraws the drawn scene as the instruction asks, almost always right."},
    "offline-drift": {"kind": "image_edit", "label": "Offline editor (identity drift)", "offline": True,
                      "description": "Does the interaction but usually dresses the person in another outfit."},
    "offline-timid": {"kind": "image_edit", "label": "Offline editor (timid)", "offline": True,
                      "description": "Often leaves the interaction half-done or not done at all."},
    "offline-noisy": {"kind": "image_edit", "label": "Offline editor (noisy)", "offline": True,
                      "description": "Adds noise, blur or smear to every edit and sometimes loses the object."},
    I2V_METHOD: {"kind": "i2v", "label": "Offline I2V (plain prompt)", "offline": True,
                 "description": "The offline image-to-video generator prompted with the bare instruction; the "
                                "frame is chosen by the offline judge's frame selector."},
}
STRIP_FRAMES = 15  # upstream's selector sees 15 frames at linspace(0, N - 1)
VIDEO_FRAMES = 25


@dataclass(frozen=True)
class DemoItem:
    """One demo item: its scene and what its annotation says."""

    key: str
    split: str
    scene: scenes.Scene
    instruction: str
    object_name: str
    tags: tuple[str, ...]
    question_v6: list[str] | str  # as upstream varies: a list, "" (none) or one question
    tool_name: str | None = None

    @property
    def questions(self) -> list[str]:
        if isinstance(self.question_v6, str):
            return [self.question_v6] if self.question_v6 else []
        return list(self.question_v6)


@dataclass(frozen=True)
class Recipe:
    """A kind of demo item: its split, its tags and how to draw one (from a seeded random source)."""

    name: str
    split: str
    tags: tuple[str, ...]
    build: Callable[[random.Random], tuple[scenes.Scene, str, str, list[str] | str, str | None]]


# ---------------------------------------------------------------- recipes


def _room(rng: random.Random, *, shelf: bool = False, basket: bool = False) -> dict:
    return {"wall": rng.choice(list(scenes.WALLS)), "floor": rng.choice(list(scenes.FLOORS)),
            "person_x": rng.randrange(scenes.PERSON_X[0], scenes.PERSON_X[1] + 1, 4),
            "outfit": rng.choice(list(scenes.OUTFITS)), "shelf": shelf, "basket": basket}


def _with_distractors(rng: random.Random, things: list[scenes.Thing], *, shelf: bool, avoid: set[str],
                      beyond: int = -1) -> list:
    """``things`` and up to two other objects of other kinds in free places of the table (past slot
    ``beyond``) or the shelf."""
    kinds = [k for k in scenes.OBJECTS if k not in avoid and k not in {t.kind for t in things}]
    places = [(place, slot) for place in ("table", "shelf") if place == "table" or shelf for slot in range(scenes.SLOTS)
              if not any(t.place == place and t.slot == slot for t in things) and (place == "shelf" or slot > beyond)]
    for kind in rng.sample(kinds, k=min(rng.randint(0, 2), len(kinds), len(places))):
        place, slot = places.pop(rng.randrange(len(places)))
        things.append(scenes.Thing(kind, place, slot))
    return things


def _kind(rng: random.Random, exclude: tuple[str, ...] = ()) -> str:
    return rng.choice([k for k in scenes.OBJECTS if k not in exclude])


def _pick_up(rng):
    kind, room = _kind(rng), _room(rng, shelf=rng.random() < 0.3)
    things = _with_distractors(rng, [scenes.Thing(kind, "table", rng.randrange(scenes.SLOTS))], shelf=room["shelf"],
                               avoid={kind})
    return scenes.Scene(**room, things=tuple(things)), f"Make the person pick up the {kind}", kind, "", None


def _touch_with_tool(rng):
    kind, tool, room = _kind(rng), rng.choice(list(scenes.TOOLS)), _room(rng)
    slot = rng.randrange(1, scenes.SLOTS)  # from slot 1 on, the tool reaches it with the hand clear of the body
    other = rng.choice([s for s in range(scenes.SLOTS) if s != slot])
    things = [scenes.Thing(kind, "table", slot), scenes.Thing(tool, "table", other)]
    scene = scenes.Scene(**room, things=tuple(things))
    return scene, f"Make the person touch the {kind} with the {tool}", kind, "", tool


def _put_down(rng):
    kind, room = _kind(rng), _room(rng)
    things = _with_distractors(rng, [scenes.Thing(kind, "hand")], shelf=False, avoid={kind})
    return scenes.Scene(**room, things=tuple(things)), f"Make the person put down the {kind}", kind, "", None


def _touched(rng) -> tuple[str, dict, list[scenes.Thing]]:
    """An object the hand touches on the table; other objects stand only beyond it, so that the
    reaching arm passes over none."""
    kind, room, slot = _kind(rng), _room(rng), rng.randrange(scenes.SLOTS)
    return kind, room, _with_distractors(rng, [scenes.Thing(kind, "table", slot)], shelf=False, avoid={kind},
                                         beyond=slot)


def _let_go(rng):
    kind, room, things = _touched(rng)
    scene = scenes.Scene(**room, things=tuple(things), touch=0)
    return scene, f"Make the person let go of the {kind}", kind, "", None


def _raise(rng):
    kind, room = _kind(rng), _room(rng)
    things = _with_distractors(rng, [scenes.Thing(kind, "hand")], shelf=False, avoid={kind})
    return scenes.Scene(**room, things=tuple(things)), f"Make the person lift the {kind} above the head", kind, "", None


def _take_touched(rng):
    kind, room, things = _touched(rng)
    scene = scenes.Scene(**room, things=tuple(things), touch=0)
    return scene, f"Make the person pick up the {kind} they are touching", kind, "", None


def _put_on_shelf(rng):
    kind, room = _kind(rng), _room(rng, shelf=True)
    things = _with_distractors(rng, [scenes.Thing(kind, "table", rng.randrange(scenes.SLOTS))], shelf=True,
                               avoid={kind})
    question = scene_edits.aux_question("on_shelf", kind)
    # Upstream writes a lone question either as a one-element list or as the plain string.
    questions = question if rng.random() < 0.5 else [question]
    return scenes.Scene(**room, things=tuple(things)), f"Make the person put the {kind} on the shelf", kind, questions, None


def _basket_then_pick_up(rng):
    held, kind = rng.sample(list(scenes.OBJECTS), 2)
    room = _room(rng, basket=True)
    things = _with_distractors(rng, [scenes.Thing(held, "hand"), scenes.Thing(kind, "table", rng.randrange(scenes.SLOTS))],
                               shelf=False, avoid={held, kind})
    instruction = f"Make the person put the {held} into the basket and pick up the {kind}"
    return (scenes.Scene(**room, things=tuple(things)), instruction, kind,
            [scene_edits.aux_question("put_in_basket", held)], None)


def _two_alike(rng, *, basket: bool) -> tuple[str, dict, list[scenes.Thing]]:
    kind, room = _kind(rng, exclude=("book",)), _room(rng, shelf=True, basket=basket)
    things = [scenes.Thing(kind, "table", rng.randrange(scenes.SLOTS)), scenes.Thing(kind, "shelf",
                                                                                   rng.randrange(scenes.SLOTS))]
    return kind, room, _with_distractors(rng, things, shelf=True, avoid={kind})


def _pick_up_from_shelf(rng):
    kind, room, things = _two_alike(rng, basket=False)
    return scenes.Scene(**room, things=tuple(things)), f"Make the person pick up the {kind} on the shelf", kind, "", None


def _shelf_to_basket(rng):
    kind, room, things = _two_alike(rng, basket=True)
    instruction = f"Make the person put the {kind} from the shelf into the basket"
    return scenes.Scene(**room, things=tuple(things)), instruction, kind, [scene_edits.aux_question("in_basket", kind)], None


def _on_table(kind: str, rng, *, basket: bool = False) -> scenes.Scene:
    room = _room(rng, basket=basket)
    things = _with_distractors(rng, [scenes.Thing(kind, "table", rng.randrange(scenes.SLOTS))], shelf=False,
                               avoid={kind})
    return scenes.Scene(**room, things=tuple(things))


def _squeeze(rng):
    return (_on_table("ball", rng), "Make the person squeeze the ball", "ball",
            [scene_edits.aux_question("squashed", "ball")], None)


def _fill(rng):
    return (_on_table("cup", rng), "Make the person get the cup ready for drinking", "cup",
            [scene_edits.aux_question("filled", "cup")], None)


def _read(rng):
    return _on_table("book", rng), "Make the person start reading the book", "book", scene_edits.aux_question("open", "book"), None


def _crush_to_fit(rng):
    return (_on_table("can", rng, basket=True), "Make the person make the can fit into the basket", "can",
            [scene_edits.aux_question("crushed", "can"), scene_edits.aux_question("in_basket", "can")], None)


RECIPES: tuple[Recipe, ...] = (
    Recipe("pick_up", "L1L2", (OCCUR,), _pick_up),
    Recipe("touch_with_tool", "L1L2", (OCCUR,), _touch_with_tool),
    Recipe("put_down", "L1L2", (NOT_OCCUR,), _put_down),
    Recipe("let_go", "L1L2", (NOT_OCCUR,), _let_go),
    Recipe("raise", "L1L2", (CHANGE_ONLY,), _raise),
    Recipe("take_touched", "L1L2", (CHANGE_ONLY,), _take_touched),
    Recipe("put_on_shelf", "L1L2", (POS_END,), _put_on_shelf),
    Recipe("basket_then_pick_up", "L1L2", (OCCUR, POS_END), _basket_then_pick_up),
    Recipe("pick_up_from_shelf", "L1L2", (OCCUR, POS_INITIAL), _pick_up_from_shelf),
    Recipe("shelf_to_basket", "L1L2", (POS_INITIAL, POS_END), _shelf_to_basket),
    Recipe("squeeze", "L3", (NON_RIGID,), _squeeze),
    Recipe("fill", "L3", (REASONING,), _fill),
    Recipe("read", "L3", (REASONING,), _read),
    Recipe("crush_to_fit", "L3", (NON_RIGID, REASONING), _crush_to_fit),
)


def demo_items(*, items_per_tag: int = 3, seed: int = 0) -> list[DemoItem]:
    """The demo's items: each recipe drawn ``items_per_tag`` times, keyed ``demo_l1l2_000.png``,
    ``demo_l3_000.png``, ... in recipe order."""
    if not 1 <= items_per_tag <= 50:
        raise ValueError(f"items_per_tag must be from 1 to 50, got {items_per_tag}")
    rng = random.Random(seed)
    counters = {split: 0 for split in SPLITS}
    items = []
    for recipe in RECIPES:
        for _ in range(items_per_tag):
            scene, instruction, object_name, question_v6, tool = recipe.build(rng)
            key = f"demo_{recipe.split.lower()}_{counters[recipe.split]:03d}.png"
            counters[recipe.split] += 1
            items.append(DemoItem(key, recipe.split, scene, instruction, object_name, recipe.tags, question_v6, tool))
    return items


# ---------------------------------------------------------------- writing


def annotation(item: DemoItem) -> dict:
    """The item's upstream annotation record (every field upstream has, boxes from the drawing)."""
    drawn = scenes.render(item.scene)
    clauses = scene_edits.parse_instruction(item.instruction)
    main = next(c for c in reversed(clauses) if c.object_name == item.object_name)
    target = scene_edits.target_of(item.scene, main)
    tool_box: list[int] = []
    if item.tool_name is not None:
        tool = next(i for i, t in enumerate(item.scene.things) if t.kind == item.tool_name)
        tool_box = list(drawn.thing_boxes[tool])
    return {
        "instruction": item.instruction,
        "object": item.object_name,
        "subject_bounding_box": list(drawn.person_box),
        "object_bounding_box": list(drawn.thing_boxes[target]),
        "generated_question": main.question,
        "tools": item.tool_name or "",
        "tool_bboxes": tool_box,
        "tags_v6": ", ".join(item.tags),
        "question_v6": item.question_v6,
        "tag": list(item.tags),
        "question": item.questions or "",
    }


def _save(image: Image.Image, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, compress_level=1)  # flat drawings compress well even at the fastest level


def _open(path: Path) -> Image.Image:
    with Image.open(path) as image:
        return image.convert("RGB")


def write_benchmark(root: str | Path, *, items_per_tag: int = 3, seed: int = 0) -> list[DemoItem]:
    """Step 1: both annotation files and the source images under ``root``."""
    root = Path(root)
    items = demo_items(items_per_tag=items_per_tag, seed=seed)
    for split in SPLITS:
        records = {item.key: annotation(item) for item in items if item.split == split}
        root.mkdir(parents=True, exist_ok=True)
        (root / ANNOTATION_FILES[split]).write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    for item in items:
        _save(scenes.render(item.scene).image, root / "images" / item.split / item.key)
    return items


def _read_items(root: Path) -> list[tuple[str, str, str]]:
    """(split, key, instruction) of each item of the annotation files under ``root``, in file order."""
    found = []
    for split in SPLITS:
        path = root / ANNOTATION_FILES[split]
        if path.is_file():
            found += [(split, key, record["instruction"])
                      for key, record in json.loads(path.read_text(encoding="utf-8")).items()]
    if not found:
        raise FileNotFoundError(f"{root}: no demo benchmark (write it first with write_benchmark)")
    return found


def write_edits(root: str | Path, method: str, *, seed: int = 0) -> int:
    """Step 2: an offline editor's edit of every item, ``<root>/<method>_frames/<split>/<key>``;
    returns how many were written."""
    root = Path(root)
    editor = make("editor", method)
    items = _read_items(root)
    for index, (split, key, instruction) in enumerate(items):
        source = _open(root / "images" / split / key)
        _save(editor.edit(source, instruction, seed=seed + index), root / f"{method}_frames" / split / key)
    return len(items)


def uniform(frames: list[Image.Image], count: int = STRIP_FRAMES) -> list[Image.Image]:
    """``count`` frames at ``linspace(0, N - 1, count)`` truncated (upstream's sampling); all of
    them when there are fewer."""
    if len(frames) <= count:
        return list(frames)
    return [frames[int(i * (len(frames) - 1) / (count - 1))] for i in range(count)]


def write_i2v(root: str | Path, method: str = I2V_METHOD, *, seed: int = 0) -> int:
    """Step 3: the plain offline I2V's video of every item, prompted with the bare instruction:
    15 sampled frames in ``<method>_strips`` and the frame the offline judge selects in
    ``<method>_frames``; returns how many items were written."""
    root = Path(root)
    i2v, judge = make("i2v", "offline"), make("judge", "offline")
    items = _read_items(root)
    for index, (split, key, instruction) in enumerate(items):
        source = _open(root / "images" / split / key)
        strip = uniform(i2v.generate(source, instruction, num_frames=VIDEO_FRAMES, seed=seed + index))
        for number, frame in enumerate(strip):
            _save(frame, root / f"{method}_strips" / split / Path(key).stem / f"frame_{number:02d}.png")
        choice = judge.select_frame(strip, instruction)
        _save(strip[choice.best_frame_index], root / f"{method}_frames" / split / key)
    return len(items)


def add_method(root: str | Path, name: str, entry: dict) -> None:
    """Step 4: list a method in ``<root>/methods.json`` (:func:`engines.hoi.methods.write_method`)."""
    write_method(root, name, entry)


@dataclass(frozen=True)
class DemoSummary:
    root: Path
    items: dict[str, int]  # split -> items written
    methods: list[str] = field(default_factory=list)
    seconds: float = 0.0


def generate_demo(root: str | Path, *, items_per_tag: int = 3, seed: int = 0,
                  progress: Callable[[str], None] | None = None) -> DemoSummary:
    """Write the demo benchmark and the offline methods' outputs under ``root`` (steps 1-4).

    Args:
        root: the demo folder (``assets/hoi/demo`` in the project).
        items_per_tag: how many items each recipe draws (3: 30 L1/L2 and 12 L3 items).
        seed: the random seed of the scenes and of every method.
        progress: called with a line after each step.

    Returns:
        A :class:`DemoSummary`.
    """
    started = time.perf_counter()
    root = Path(root)
    say = progress or (lambda line: None)
    items = write_benchmark(root, items_per_tag=items_per_tag, seed=seed)
    say(f"benchmark: {len(items)} items")
    for method in EDIT_METHODS:
        write_edits(root, method, seed=seed)
        add_method(root, method, METHODS[method])
        say(f"{method}: {len(items)} edits")
    write_i2v(root, I2V_METHOD, seed=seed)
    add_method(root, I2V_METHOD, METHODS[I2V_METHOD])
    say(f"{I2V_METHOD}: {len(items)} videos")
    counts = {split: sum(item.split == split for item in items) for split in SPLITS}
    return DemoSummary(root, counts, [*EDIT_METHODS, I2V_METHOD], round(time.perf_counter() - started, 2))


def load_demo(*, engine=None) -> list[str]:
    """What ``make run`` loads for this area into the database: nothing. The demo's files ship in
    ``assets/hoi/demo`` (``python -m engines.hoi demo``), and the arena study that reads them is
    created with every other protocol's demo study (``engines.platform.demo``)."""
    return []


__all__ = ["EDIT_METHODS", "I2V_METHOD", "METHODS", "RECIPES", "DemoItem", "DemoSummary", "add_method",
           "annotation", "demo_items", "generate_demo", "load_demo", "uniform", "write_benchmark", "write_edits",
           "write_i2v"]
