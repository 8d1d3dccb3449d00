"""Tests of ``engines.hoi.offline``: the offline grounder, judge, editors, I2V and refiner read the
drawn scenes' pixels, answer right on the ideal edit and wrong-footed edits, and respond to prompts.

The judge is shown what HOI-Eval's evaluator shows it (``engines.hoi.drawing``: boxes in upstream's
colours, the "BEFORE/AFTER EDITING" title band, numbered candidates). The ideal edit is the scene
the instruction asks for, drawn; the expected answers follow from the instruction's meaning.
"""

from __future__ import annotations

import json
import random

import pytest

from engines.hoi.drawing import AFTER_TITLE, BEFORE_TITLE, add_title, annotate
from engines.hoi.evaluate import match_images
from engines.hoi.judge_replies import parse_match, parse_yes_no
from engines.hoi.offline import generation, grounder_judge, scene_edits, scenes
from engines.hoi.offline.scenes import Scene, Thing
from engines.hoi.roles import make, names

ROOM = {"wall": "sage", "floor": "steel", "person_x": 64, "outfit": "navy"}


def iou(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    inter = max(w, 0) * max(h, 0)
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


@pytest.fixture(scope="module")
def grounder():
    return make("grounder", "offline")


@pytest.fixture(scope="module")
def judge():
    return make("judge", "offline")


def test_every_role_has_its_offline_default():
    for kind in ("grounder", "judge", "i2v", "refiner"):
        assert "offline" in names(kind)
    assert {"offline", "offline-faithful", "offline-drift", "offline-timid", "offline-noisy"} <= set(names("editor"))


def test_the_grounder_finds_the_drawn_person_and_objects(grounder):
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("bottle", "shelf", 2), Thing("ball", "hand")),
                  shelf=True)
    drawn = scenes.render(scene)
    for image in (drawn.image, scene_edits.degrade(drawn.image, "noise", 0.3, random.Random(0))):
        (person,) = grounder.detect(image, "human")
        assert iou(person.box, drawn.person_box) > 0.8
        for thing, box in zip(scene.things, drawn.thing_boxes, strict=True):
            (found,) = grounder.detect(image, thing.kind)
            assert iou(found.box, box) > 0.8 and 0.3 <= found.score <= 1.0
    assert grounder.detect(drawn.image, "giraffe") == []


def test_the_grounder_follows_the_object_and_loses_a_removed_one(grounder):
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0), Thing("cup", "shelf", 1)), shelf=True)
    source = scenes.render(scene)
    after = scenes.render(scene_edits.apply_instruction(scene, "Make the person pick up the cup on the shelf"))
    # The shelf's cup went into the hand; the table's cup, which did not move, is not it.
    assert iou(grounder.track(source.image, after.image, source.thing_boxes[1]), after.thing_boxes[1]) > 0.8
    assert iou(grounder.track(source.image, after.image, source.thing_boxes[0]), after.thing_boxes[0]) > 0.8
    lone = Scene(**ROOM, things=(Thing("ball", "table", 1),))
    gone = scenes.render(scene_edits.without(lone, 0)).image
    assert grounder.track(scenes.render(lone).image, gone, scenes.render(lone).thing_boxes[0]) is None


L1_CASES = [  # tag, the scene before, the instruction
    ("occur", Scene(**ROOM, things=(Thing("cup", "table", 1), Thing("box", "table", 0))),
     "Make the person pick up the cup"),
    ("occur with a tool", Scene(**ROOM, things=(Thing("ball", "table", 2), Thing("ruler", "table", 0))),
     "Make the person touch the ball with the ruler"),
    ("not_occur", Scene(**ROOM, things=(Thing("bottle", "hand"), Thing("can", "table", 0))),
     "Make the person put down the bottle"),
    ("not_occur (let go)", Scene(**ROOM, things=(Thing("can", "table", 1),), touch=0), "Make the person let go of the can"),
    ("change_only", Scene(**ROOM, things=(Thing("book", "hand"),)), "Make the person lift the book above the head"),
]


def ask(judge, grounder, source: scenes.Rendered, edited, scene: Scene, instruction: str) -> dict:
    """The interaction check as HOI-Eval runs it: the person detected, the object tracked, both
    boxed on the titled BEFORE / AFTER images."""
    clause = scene_edits.parse_instruction(instruction)[-1]
    target = scene_edits.target_of(scene, clause)
    person = grounder.detect(edited, "human")[0].box
    obj = grounder.track(source.image, edited, source.thing_boxes[target])
    before = add_title(annotate(source.image, subject_box=source.person_box, object_box=source.thing_boxes[target]),
                       BEFORE_TITLE)
    after = add_title(annotate(edited, subject_box=person, object_box=obj), AFTER_TITLE)
    return json.loads(judge.yes_no([before, after], clause.question))


@pytest.mark.parametrize(("tag", "scene", "instruction"), L1_CASES, ids=[case[0] for case in L1_CASES])
def test_the_judge_says_yes_on_the_ideal_edit_and_no_on_the_source(judge, grounder, tag, scene, instruction):
    source = scenes.render(scene)
    ideal = scenes.render(scene_edits.apply_instruction(scene, instruction)).image
    yes = ask(judge, grounder, source, ideal, scene, instruction)
    assert yes["answer"] == "yes" and yes["confidence"] >= 0.9, yes
    no = ask(judge, grounder, source, source.image, scene, instruction)
    assert no["answer"] == "no" and no["confidence"] == 0.0, no
    assert parse_yes_no(json.dumps(no)).confidence == 0.0


@pytest.mark.parametrize(("scene", "instruction", "question"), [
    (Scene(**ROOM, things=(Thing("cup", "table", 0),), shelf=True), "Make the person put the cup on the shelf",
     "Is the cup on the shelf?"),
    (Scene(**ROOM, things=(Thing("ball", "table", 1),)), "Make the person squeeze the ball", "Is the ball squashed?"),
    (Scene(**ROOM, things=(Thing("cup", "table", 2),)), "Make the person get the cup ready for drinking",
     "Is there water in the cup?"),
    (Scene(**ROOM, things=(Thing("can", "table", 0),), basket=True), "Make the person make the can fit into the basket",
     "Is the can crushed?"),
])
def test_the_judge_answers_the_extra_questions_on_the_edit(judge, scene, instruction, question):
    ideal = scenes.render(scene_edits.apply_instruction(scene, instruction)).image
    assert json.loads(judge.yes_no([ideal], question))["answer"] == "yes"
    assert json.loads(judge.yes_no([scenes.render(scene).image], question))["answer"] == "no"


def test_identity_drops_when_the_outfit_drifts_and_quality_when_the_edit_is_noisy(judge):
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0),))
    instruction = "Make the person pick up the cup"
    source = scenes.render(scene)
    ideal = scenes.render(scene_edits.apply_instruction(scene, instruction))
    drifted = scenes.render(scene_edits.drift_identity(scene_edits.apply_instruction(scene, instruction), random.Random(0)))
    noisy = scene_edits.degrade(ideal.image, "noise", 0.6, random.Random(0))

    def match(edited, box, entity="person"):
        before, after = match_images(source.image, edited, source.person_box, [box])
        return parse_match(judge.match_score(before, after, entity, instruction))

    same, other, spoiled = (match(ideal.image, ideal.person_box), match(drifted.image, drifted.person_box),
                            match(noisy, ideal.person_box))
    assert same.best_match_id == 0 and same.identity_score >= 0.8 and same.quality_score == 1.0
    assert other.identity_score <= 0.3  # upstream's rubric: a different outfit is a direct contradiction
    assert spoiled.identity_score >= 0.8 and spoiled.quality_score < 0.4


def test_the_object_match_picks_the_numbered_candidate_that_is_the_object(judge):
    scene = Scene(**ROOM, things=(Thing("ball", "table", 0), Thing("box", "table", 2)))
    drawn = scenes.render(scene)
    # Candidates numbered 0 (the box) and 1 (the ball): the ball in the red box before is number 1.
    before, after = match_images(drawn.image, drawn.image, drawn.thing_boxes[0], [drawn.thing_boxes[1],
                                                                                 drawn.thing_boxes[0]])
    reply = parse_match(judge.match_score(before, after, "ball", "Make the person pick up the ball",
                                          candidates=[drawn.thing_boxes[1], drawn.thing_boxes[0]]))
    assert reply.best_match_id == 1 and reply.identity_score == 1.0


def test_the_selector_picks_the_first_frame_that_shows_the_interaction(judge):
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0),))
    instruction = "Make the person pick up the cup"
    keys = scene_edits.motion(scene, instruction)
    source = scenes.render(scene).image
    reaching = scenes.draw(scene, scene_edits.pose_at(keys, 0.5)).image  # the hand on the cup, the cup on the table
    lifted = scenes.draw(scene, scene_edits.pose_at(keys, 0.8)).image
    held = scenes.render(scene_edits.apply_instruction(scene, instruction)).image
    choice = judge.select_frame([source, source, reaching, lifted, held], instruction)
    assert (choice.best_frame_index, choice.strict_pass, choice.selection_mode) == (3, True, "earliest_pass")
    none = judge.select_frame([source, reaching, reaching], instruction)
    assert (none.best_frame_index, none.strict_pass, none.selection_mode) == (1, False, "fallback")


def test_a_hand_barely_off_the_object_is_only_a_best_effort_frame(judge):
    # Putting the held cup down: it lands on table slot 0, box x 102-119 (centre 96 + 14 = 110), so the
    # hand lets go at (98, 112) and goes back to rest at (83, 104). At progress 0.633 of the motion the
    # hand is at (94, 110): its right edge (97) is 4 px from the cup, clear of it for the lenient
    # reading (3 px), not for the strict one (6 px).
    scene = Scene(**ROOM, things=(Thing("cup", "hand"),))
    instruction = "Make the person put down the cup"
    keys = scene_edits.motion(scene, instruction)
    hovering = scene_edits.pose_at(keys, 0.633)
    assert tuple(round(v) for v in hovering.hand) == (94, 110)
    held, hover = scenes.render(scene).image, scenes.draw(scene, hovering).image
    choice = judge.select_frame([held, hover, hover], instruction)
    assert (choice.best_frame_index, choice.strict_pass, choice.selection_mode) == (1, False, "best_effort")
    done = scenes.render(scene_edits.apply_instruction(scene, instruction)).image
    assert judge.select_frame([held, hover, done], instruction).best_frame_index == 2


def test_a_prompt_that_asks_for_the_end_state_and_a_still_camera_completes_more_often():
    scene = Scene(**ROOM, things=(Thing("ball", "table", 1),))
    source = scenes.render(scene).image
    instruction = "Make the person pick up the ball"
    good = " ".join([instruction + "."] + [device.sentence for device in generation.DEVICES.values()])
    assert generation.prompt_cues(good) == {"completion": True, "camera": True, "appearance": True}
    assert generation.prompt_cues(instruction) == {"completion": False, "camera": False, "appearance": False}
    i2v, judge = make("i2v", "offline"), make("judge", "offline")
    bare_ok, good_ok = [], []
    for seed in range(10):
        bare = i2v.generate(source, instruction, num_frames=9, seed=seed)
        assert len(bare) == 9 and bare[0].tobytes() == source.tobytes()
        bare_ok.append(judge.analyze_video(source, bare, instruction, instruction).success)
        good_ok.append(judge.analyze_video(source, i2v.generate(source, good, num_frames=9, seed=seed),
                                           instruction, good).success)
    assert sum(good_ok) > sum(bare_ok)
    assert all(g for b, g in zip(bare_ok, good_ok, strict=True) if b)  # on one seed, the better prompt never does worse


def test_the_analyzer_says_what_went_wrong():
    scene = Scene(**ROOM, things=(Thing("cup", "table", 0),))
    source = scenes.render(scene).image
    instruction = "Make the person pick up the cup"
    judge = make("judge", "offline")
    perfect = generation.OfflineI2V(generation.I2VHabits(stall=(0, 0), camera=(0, 0), drift=(0, 0)))
    report = judge.analyze_video(source, perfect.generate(source, instruction, num_frames=9), instruction, instruction)
    assert report.success and json.loads(report.raw)["success"] is True
    clumsy = generation.OfflineI2V(generation.I2VHabits(stall=(1, 1), camera=(1, 1), drift=(1, 1)))
    report = judge.analyze_video(source, clumsy.generate(source, instruction, num_frames=9), instruction, instruction)
    assert not report.success
    assert "not carried through" in report.critique and "camera moves" in report.critique
    assert "clothing changes" in report.critique


def test_the_refiner_learns_abstract_insights_once_and_uses_them():
    refiner = make("refiner", "offline")
    image = scenes.render(Scene(**ROOM, things=(Thing("cup", "table", 0),))).image
    report = grounder_judge.VideoReport(False, "The action is not carried through: at the end the hand does not touch the "
                                        "cup. The camera moves during the clip (the background shifts).")
    insight = refiner.reflect(report, "Make the person pick up the cup", "Make the person pick up the cup")
    words = (insight.root_cause + " " + insight.key_insight).lower()
    assert not any(name in words for name in [*scenes.OBJECTS, *scenes.OUTFITS, "red", "blue", "green"])
    operations = refiner.curate(insight, "")
    assert [op.section for op in operations] == ["strategies", "strategies"]
    playbook = json.dumps({"strategies": [op.content for op in operations], "pitfalls": []}, indent=2)
    assert refiner.curate(insight, playbook) == []  # already there: nothing added twice
    prompt = refiner.generate(image, "Make the person pick up the cup", playbook).enhanced_prompt
    assert prompt.startswith("Make the person pick up the cup.")
    assert generation.prompt_cues(prompt) == {"completion": True, "camera": True, "appearance": False}
    # A pitfall is no strategy: it does not make the prompt say the camera is fixed.
    pitfall = json.dumps({"strategies": [], "pitfalls": ["Pitfall: say the camera is fixed."]}, indent=2)
    assert refiner.generate(image, "Make the person pick up the cup", pitfall).enhanced_prompt == (
        "Make the person pick up the cup.")


def test_the_editors_have_their_own_habits(judge, grounder):
    # Over 12 seeds the faithful editor (88% done) does the interaction at least 9 times, the timid
    # one (35% done, 35% half-done) at most 6; the drift editor (85%) changes the outfit at least 8
    # times, the faithful one (3%) at most once.
    scene = Scene(**ROOM, things=(Thing("cup", "table", 1),))
    instruction = "Make the person pick up the cup"
    source = scenes.render(scene)
    done, drifted = {}, {}
    for name in ("offline-faithful", "offline-timid", "offline-drift"):
        editor = make("editor", name)
        edits = [editor.edit(source.image, instruction, seed=seed) for seed in range(12)]
        assert editor.edit(source.image, instruction, seed=3).tobytes() == edits[3].tobytes()  # seeded
        if name != "offline-drift":
            done[name] = sum(ask(judge, grounder, source, edit, scene, instruction)["answer"] == "yes"
                             for edit in edits)
        drifted[name] = sum(grounder_judge._outfit(grounder_judge.Reading(edit)) != scene.outfit for edit in edits)
    assert done["offline-faithful"] >= 9 and done["offline-timid"] <= 6
    assert drifted["offline-drift"] >= 8 and drifted["offline-faithful"] <= 1
    with pytest.raises(scenes.NotAScene):
        make("editor", "offline").edit(scene_edits.degrade(source.image, "blur", 0.5, random.Random(0)), instruction)
