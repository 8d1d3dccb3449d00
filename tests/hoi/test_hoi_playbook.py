"""The SCPE playbook: upstream's file shape read and written, curator operations merged without
repeats, and the normalization that moves "prevent/avoid" strategies to the pitfalls."""

from __future__ import annotations

import json

import pytest

from engines.hoi.playbook import Playbook, PlaybookFormatError, load_playbook
from engines.hoi.roles import PlaybookOperation

# Upstream's shape (scpe/data/playbook_seed_en.json), ids included, made up for the test.
UPSTREAM_SHAPED = {
    "strategies": ["[strategy-001]: Describe the start, the process and the end of the action.",
                   "[strategy-002]: Name the existing object, not a new one."],
    "templates": ["[template-001]: A {camera_angle} shot, {person} reaches for {object}."],
    "pitfalls": ["[pitfall-001]: Pitfall: Using vague verbs such as 'interact'."],
}


def test_an_upstream_playbook_loads_without_ids_and_is_written_back_numbered(tmp_path):
    path = tmp_path / "seed.json"
    path.write_text(json.dumps(UPSTREAM_SHAPED), encoding="utf-8")
    playbook = load_playbook(path)
    assert playbook.strategies == ["Describe the start, the process and the end of the action.",
                                   "Name the existing object, not a new one."]
    assert playbook.counts() == {"strategies": 2, "templates": 1, "pitfalls": 1}
    assert json.loads(playbook.to_json()) == UPSTREAM_SHAPED
    assert json.loads(playbook.as_text()) == UPSTREAM_SHAPED  # what the generator and curator read


def test_merge_appends_a_new_entry_at_the_end_of_its_section():
    playbook = Playbook.from_dict(UPSTREAM_SHAPED)
    merged = playbook.merge([PlaybookOperation("pitfalls", "The camera zooms in.")])
    assert merged.updated and len(merged.added) == 1
    assert playbook.pitfalls == ["Pitfall: Using vague verbs such as 'interact'.", "The camera zooms in."]
    assert playbook.to_dict()["pitfalls"][1] == "[pitfall-002]: The camera zooms in."


def test_merge_skips_what_the_section_already_says_in_other_case_spacing_or_punctuation():
    playbook = Playbook.from_dict(UPSTREAM_SHAPED)
    merged = playbook.merge([
        {"type": "ADD", "section": "strategies", "content": "name the EXISTING object,   not a new one"},
        {"type": "ADD", "section": "strategies", "content": "[strategy-009]: Describe the start, the process and "
                                                            "the end of the action!"},
        {"type": "ADD", "section": "pitfalls", "content": "Using vague verbs such as interact"},
    ])
    assert not merged.updated and len(merged.already_present) == 3
    assert playbook.counts() == {"strategies": 2, "templates": 1, "pitfalls": 1}


def test_the_same_text_in_another_section_is_added_there():
    playbook = Playbook.from_dict(UPSTREAM_SHAPED)
    playbook.merge([PlaybookOperation("pitfalls", "Name the existing object, not a new one.")])
    assert len(playbook.pitfalls) == 2


def test_an_entry_given_twice_in_one_merge_is_added_once():
    playbook = Playbook()
    merged = playbook.merge([PlaybookOperation("strategies", "Keep the camera still."),
                             PlaybookOperation("strategies", "keep the camera still")])
    assert playbook.strategies == ["Keep the camera still."] and len(merged.already_present) == 1


@pytest.mark.parametrize(("operation", "words"), [
    ({"type": "ADD", "section": "tricks", "content": "x"},
     "section: must be one of 'strategies', 'templates' or 'pitfalls' (got 'tricks')"),
    ({"type": "DELETE", "section": "pitfalls", "content": "x"}, "unknown operation type 'DELETE'"),
    ({"type": "ADD", "section": "pitfalls", "content": "  "}, "content: must not be empty"),
    ({"section": "pitfalls"}, "content: is missing"),
    ("add a pitfall", "must be an object"),
])
def test_a_bad_operation_is_an_error_naming_it_and_nothing_is_merged(operation, words):
    playbook = Playbook.from_dict(UPSTREAM_SHAPED)
    good = PlaybookOperation("strategies", "A new strategy.")
    with pytest.raises(PlaybookFormatError) as raised:
        playbook.merge([good, operation])
    assert str(raised.value).startswith("operation 1: ") and words in str(raised.value)
    assert playbook.counts() == {"strategies": 2, "templates": 1, "pitfalls": 1}


def test_normalize_moves_prevent_and_avoid_strategies_to_the_end_of_the_pitfalls():
    playbook = Playbook(
        strategies=["Describe the whole motion.",
                    "State the camera is fixed to prevent the model from panning.",
                    "Avoid naming colours of other objects.",
                    "Use 'only the right hand' to avoid confusion between hands."],
        templates=["A {shot} of {person}."],
        pitfalls=["Pitfall: Vague verbs.", "The object disappears."])
    stats = playbook.normalize()
    # By hand: the 2nd says "prevent the model" (upstream's phrase), the 3rd opens with "Avoid";
    # the 4th only mentions avoiding on the way, and stays, as upstream keeps such strategies.
    assert playbook.strategies == ["Describe the whole motion.",
                                   "Use 'only the right hand' to avoid confusion between hands."]
    assert playbook.pitfalls == ["Pitfall: Vague verbs.", "Pitfall: The object disappears.",
                                 "Pitfall: State the camera is fixed to prevent the model from panning.",
                                 "Pitfall: Avoid naming colours of other objects."]
    assert playbook.templates == ["A {shot} of {person}."]
    assert (stats.strategies_in, stats.strategies_out, stats.moved_to_pitfalls) == (4, 2, 2)
    assert (stats.pitfalls_in, stats.pitfalls_out) == (2, 4)
    assert playbook.to_dict()["pitfalls"][3] == "[pitfall-004]: Pitfall: Avoid naming colours of other objects."


def test_a_pitfall_labelled_by_normalize_is_still_recognized_when_the_curator_repeats_it():
    playbook = Playbook(pitfalls=["The camera moves."])
    playbook.normalize()
    assert not playbook.merge([PlaybookOperation("pitfalls", "the camera moves")]).updated


def test_the_shipped_seed_is_small_and_already_normal():
    playbook = load_playbook()
    assert playbook.counts() == {"strategies": 6, "templates": 1, "pitfalls": 10}
    before = playbook.to_dict()
    assert playbook.normalize().moved_to_pitfalls == 0 and playbook.to_dict() == before
    assert "camera" in playbook.as_text().lower()


@pytest.mark.parametrize(("text", "words"), [
    ('{"strategies": [], "pitfall": []}', "pitfall: is not a field of a playbook (strategies, templates, pitfalls)"),
    ('{"strategies": "one"}', "strategies: must be a list (got 'one')"),
    ('{"pitfalls": ["ok", 3]}', "pitfalls[1]: must be text (got 3)"),
    ('["a"]', "must be an object (got a list)"),
    ('{"strategies": [', "not valid JSON (Expecting value at line 1, column 17)"),
])
def test_a_bad_playbook_file_is_an_error_naming_the_file_and_the_place(tmp_path, text, words):
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(PlaybookFormatError) as raised:
        load_playbook(path)
    assert str(raised.value) == f"{path}: {words}"


def test_a_missing_playbook_file_is_named(tmp_path):
    with pytest.raises(PlaybookFormatError, match="absent.json"):
        load_playbook(tmp_path / "absent.json")
