"""Tests of ``engines.hoi.offline.scenes``: the drawn scenes, their instruction language and their mistakes.

Expected boxes and positions are worked out by hand from the drawing's constants: the person at
``person_x`` = 60 puts the table at x = 92, so table slot s is centred at 92 + 14 + 24 s, an
object stands on row 120 (the table top) or 62 (the shelf), a hand is a 7 x 7 square, and a
touching hand sits 4 px left of the object.
"""

from __future__ import annotations

import random
import timeit

import numpy as np
import pytest
from PIL import Image

from engines.hoi.offline import scene_edits, scenes
from engines.hoi.offline.scenes import NotAScene, Scene, Thing

ROOM = {"wall": "sky", "floor": "slate", "person_x": 60, "outfit": "crimson"}


def colour_pixels(image: Image.Image, colour) -> tuple[np.ndarray, np.ndarray]:
    ys, xs = np.nonzero(np.all(np.asarray(image) == np.asarray(colour, np.uint8), axis=-1))
    return xs, ys


def test_a_scene_renders_the_same_image_with_boxes_around_what_is_drawn():
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("ball", "shelf", 1), Thing("stick", "table", 2)),
                  shelf=True)
    first, second = scenes.render(scene), scenes.render(scene)
    assert first.image.tobytes() == second.image.tobytes()
    assert first.image.size == (256, 192)
    # cup: centre 106, 17 wide (body 13 + handle 4), 16 tall on the table top (row 120)
    # ball: on the shelf's slot 1, centre 130, 16 x 16 standing on row 62
    # stick: lying on slot 2, centre 154, from x 141 to 166, rows 117-119
    assert first.thing_boxes == ((98, 104, 115, 120), (122, 46, 138, 62), (141, 117, 167, 120))
    # person: left hand at x 41 (41-3 = 38), head top 44-10 = 34, right hand at rest x 79 (+3 -> 82), feet 176
    assert first.person_box == (38, 34, 83, 176)
    for thing, box in zip(scene.things, first.thing_boxes, strict=True):
        xs, ys = colour_pixels(first.image, thing.spec.colour)
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == box  # tight around every drawn pixel


def test_rendering_is_fast():
    scene = Scene(**ROOM, things=(Thing("cup", "hand"), Thing("book", "table", 1), Thing("ruler", "table", 2)),
                  basket=True, shelf=True)
    best = min(timeit.repeat(lambda: scenes.render(scene), number=10, repeat=5)) / 10
    assert best < 0.005


STATES = [
    Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("ball", "shelf", 1)), shelf=True),
    Scene(**ROOM, things=(Thing("bottle", "hand"), Thing("box", "table", 1))),
    Scene(**{**ROOM, "outfit": "pink", "person_x": 100}, things=(Thing("bottle", "raised"),)),
    Scene(**ROOM, things=(Thing("can", "table", 2), Thing("book", "table", 0)), touch=0),
    Scene(**{**ROOM, "wall": "sage", "floor": "steel"}, things=(Thing("ball", "table", 1), Thing("ruler", "hand")),
          touch=0),
    Scene(**ROOM, things=(Thing("can", "basket", form="crushed"), Thing("cup", "hand", form="filled")), basket=True),
    Scene(**{**ROOM, "wall": "lavender", "person_x": 44}, things=(Thing("book", "hand", form="open"),
                                                                  Thing("ball", "table", 2, form="squashed"))),
]


@pytest.mark.parametrize("scene", STATES)
def test_a_drawn_scene_is_read_back_from_its_pixels(scene):
    drawn = scenes.render(scene).image
    read = scenes.read_scene(drawn)
    assert scenes.render(read).image.tobytes() == drawn.tobytes()
    assert (read.outfit, read.person_x, read.shelf, read.basket) == (scene.outfit, scene.person_x, scene.shelf,
                                                                     scene.basket)
    assert sorted((t.kind, t.place, t.form) for t in read.things) == sorted((t.kind, t.place, t.form)
                                                                           for t in scene.things)


def test_what_is_not_a_drawn_scene_is_refused_with_the_reason():
    drawn = scenes.render(STATES[0]).image
    with pytest.raises(NotAScene, match="256 x 192"):
        scenes.read_scene(drawn.resize((128, 96)))
    with pytest.raises(NotAScene):
        scenes.read_scene(scene_edits.degrade(drawn, "noise", 0.5, random.Random(0)))
    with pytest.raises(NotAScene, match="wall"):
        scenes.read_scene(Image.new("RGB", (256, 192), (10, 200, 10)))


def test_instructions_give_the_scene_they_ask_for():
    scene = Scene(**ROOM, things=(Thing("ball", "hand"), Thing("cup", "table", 1)), basket=True)
    after = scene_edits.apply_instruction(scene, "Make the person put the ball into the basket and pick up the cup")
    assert [(t.kind, t.place) for t in after.things] == [("ball", "basket"), ("cup", "hand")]
    # Put down: the ball goes to the first free place of the table (slot 0; the cup holds slot 1).
    down = scene_edits.apply_instruction(scene, "Make the person put down the ball.")
    assert down.things[0] == Thing("ball", "table", 0) and down.touch is None
    # Of two cups, "on the shelf" picks the shelf's one.
    two = Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("cup", "shelf", 2)), shelf=True)
    taken = scene_edits.apply_instruction(two, "Make the person pick up the cup on the shelf")
    assert [t.place for t in taken.things] == ["table", "hand"]
    # With the stick: the stick is in the hand and touches the ball.
    tool = Scene(**ROOM, things=(Thing("ball", "table", 1), Thing("stick", "table", 2)))
    poked = scene_edits.apply_instruction(tool, "Make the person touch the ball with the stick")
    assert poked.things[1].place == "hand" and poked.touch == 0


def test_an_instruction_outside_the_language_names_the_clause():
    with pytest.raises(ValueError, match="juggle the cup"):
        scene_edits.parse_instruction("Make the person juggle the cup")
    with pytest.raises(ValueError, match="no ball"):
        scene_edits.apply_instruction(STATES[1], "Make the person pick up the ball")


def test_a_prompt_is_read_up_to_where_its_instruction_ends():
    prompt = ("The camera is fixed and the person is the only one in the frame. Make the person pick up the cup "
              "With no other person's additional movements.")
    (clause,) = scene_edits.find_instruction(prompt)
    assert (clause.action.name, clause.object_name) == ("pick_up", "cup")
    assert scene_edits.find_instruction("A quiet room.") == []


def test_questions_are_read_into_what_must_hold():
    question = "Has the person in the blue bounding box lifted the bottle in the red bounding box above the head?"
    read = scene_edits.read_question(question)
    assert read.interaction and read.object_name == "bottle"
    assert (read.expect.place, read.expect.contact) == ("raised", True)
    water = scene_edits.read_question("Is there water in the cup?")
    assert not water.interaction and water.expect.form == "filled"
    assert scene_edits.read_question("What colour is the sky?") is None
    clause = scene_edits.parse_instruction("Make the person touch the ball with the ruler")[0]
    assert clause.question == ("Has the person in the blue bounding box touched the ball in the red bounding box "
                               "with the ruler in the yellow bounding box?")


def test_the_motion_reaches_for_the_object_then_carries_it():
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0),))
    keys = scene_edits.motion(scene, "Make the person pick up the cup")
    # rest (79, 104) -> at the cup (its box 98..115 x 104..120: 98 - 4, 104 + 8) -> held at the waist (88, 88)
    assert [k.hand for k in keys] == [(79, 104), (94, 112), (88, 88)]
    assert scene_edits.pose_at(keys, 0.5).hand == (94, 112)
    assert scene_edits.pose_at(keys, 0.25).hand == (86.5, 108.0)
    assert scene_edits.pose_at(keys, 1.0).things[0].held


def test_the_mistakes_an_editor_makes():
    scene = STATES[0]
    drifted = scene_edits.drift_identity(scene, random.Random(0))
    assert drifted.outfit != scene.outfit and drifted.things == scene.things
    lost = scene_edits.without(scene, 0)
    assert [t.kind for t in lost.things] == ["ball"]
    drawn = scenes.render(scene).image
    noisy = scene_edits.degrade(drawn, "noise", 0.5, random.Random(0))
    assert noisy.size == drawn.size and noisy.tobytes() != drawn.tobytes()
    with pytest.raises(ValueError, match="unknown degradation"):
        scene_edits.degrade(drawn, "jpeg", 0.5, random.Random(0))


def test_impossible_scenes_are_refused():
    with pytest.raises(ValueError, match="both in table slot 0"):
        Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("ball", "table", 0)))
    with pytest.raises(ValueError, match="no shelf"):
        Scene(**ROOM, things=(Thing("cup", "shelf", 0),))
    with pytest.raises(ValueError, match="cannot be 'squashed'"):
        Thing("cup", form="squashed")
    with pytest.raises(ValueError, match="one thing at a time"):
        Scene(**ROOM, things=(Thing("cup", "hand"), Thing("ball", "raised")))
