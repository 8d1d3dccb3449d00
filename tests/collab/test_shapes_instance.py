"""What a participant reads follows the study instance's constants, and the trial page reads plainly.

A study created with ``{"ROUNDS": 2, "INTERACTIONS": 3}`` must say 3 images, about 5 minutes, accept
"Up to 2" as the number of rounds, and count the steps this participant sees (not the protocol's 66
trial slots). Expected figures are worked out by hand from the study's description: consent,
instructions, comprehension, attention, one trial per image (more once a revision is due), attention,
survey.
"""

from __future__ import annotations

import pytest

from engines.platform import runtime, study_admin
from engines.platform.bots import run_bot
from studies.collab_shapes import Comprehension, Consent, PlayerBot, Trial
from tests.apptest_driver import new_participant_app, play

SHORT = {"ROUNDS": 2, "INTERACTIONS": 3}


@pytest.fixture
def short_study(sqlite_db):
    study_admin.create_study("short", "collab_shapes", config={"constants": SHORT})
    return "short"


def answer(pid: int, data: dict) -> runtime.StepView:
    view = runtime.current_view(pid)
    result = runtime.submit(pid, view.step.index, data)
    assert result.accepted, result
    return runtime.current_view(pid)


def page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [h.value for h in at.subheader]
    return " ".join(parts)


def test_consent_announces_the_instances_length_and_counts_its_steps(short_study):
    at = new_participant_app(short_study, "p1")
    assert not at.exception
    text = page_text(at)
    assert "3 small images" in text and "about 5 minutes" in text  # 3 + ceil(3 * 2 / 5)
    # 4 steps before the trials, 3 images (one round known so far each), attention, survey.
    assert at.get("progress")[0].proto.text == "Step 1 of 9"


def test_default_instance_keeps_its_announced_length(sqlite_db):
    study_admin.create_study("full", "collab_shapes")
    at = new_participant_app("full", "p1")
    assert "about 15 minutes" in page_text(at) and "20 small images" in page_text(at)
    assert at.get("progress")[0].proto.text == "Step 1 of 26"  # not "of 66", the protocol's trial slots


def test_comprehension_offers_and_accepts_the_instances_number_of_rounds(short_study):
    at = new_participant_app(short_study, "p1")
    pid = runtime.find_participant(short_study, "p1")
    answer(pid, {"agree": True})
    view = answer(pid, {})
    assert view.step.step is Comprehension
    at.run()
    rounds = at.radio(key=f"step{view.step.index}-rounds")
    assert "Up to 2" in rounds.options and "Up to 3" not in rounds.options
    result = runtime.submit(pid, view.step.index, {"task": "How many triangles are in the image", "rounds": "Up to 2"})
    assert result.accepted and not result.check_failed


def test_a_wrong_comprehension_answer_offers_the_instructions_again(short_study):
    at = new_participant_app(short_study, "p1")
    pid = runtime.find_participant(short_study, "p1")
    answer(pid, {"agree": True})
    view = answer(pid, {})
    result = runtime.submit(pid, view.step.index, {"task": "How many shapes are in the image", "rounds": "1"})
    assert result.check_failed and result.attempts_left == 1
    at.run()
    assert any("Read again" in e.label for e in at.expander)
    (expander,) = [e for e in at.expander if "Read again" in e.label]
    assert "An image takes at most 2 rounds" in " ".join(m.value for m in expander.markdown)


def test_a_revision_round_keeps_its_images_step_number_and_the_total(short_study):
    """An image is one step however many rounds it takes: its revision round shows the same "Step n
    of m" as its first round, and the count goes on from there; the total never grows."""
    pid = runtime.enter(short_study, {"pid": "p1"}).participant_id
    view = runtime.current_view(pid)
    assert (view.position, view.total_steps) == (0, 9)
    for data in ({"agree": True}, {}, {"task": "How many triangles are in the image", "rounds": "Up to 2"},
                 {"answer": "Rarely"}):
        view = answer(pid, data)
    assert view.step.step is Trial and (view.position, view.total_steps) == (4, 9)
    view = answer(pid, {"answer": 3, "confidence": 2})  # round 1 of image 1: round 2 is now due
    assert view.step.step is Trial and (view.position, view.total_steps) == (4, 9)


def test_bot_completes_the_shortened_study_through_the_page(short_study):
    for case in PlayerBot.cases:
        bot = PlayerBot(case)
        at = new_participant_app(short_study, f"page-{case}")
        play(at, short_study, f"page-{case}", bot)
        view = runtime.current_view(bot.participant_id)
        assert view.status == bot.final_status()
        if view.status == "completed":
            # Every image took two rounds at most: 4 + 2 * 3 + 2 steps at most were answered.
            assert len([r for r in runtime_responses(bot.participant_id) if r.step_name == "Trial"]) <= 6


def runtime_responses(pid):
    from engines.platform.bots import stored_responses

    return stored_responses(pid)


def test_headless_bot_completes_the_shortened_study(short_study):
    for case in PlayerBot.cases:
        report = run_bot(short_study, PlayerBot(case), f"api-{case}")
        assert report.status == PlayerBot(case).final_status()


def test_unusable_estimated_minutes_is_refused(sqlite_db):
    with pytest.raises(runtime.StudyError, match="ESTIMATED_MINUTES"):
        study_admin.create_study("bad", "collab_shapes", config={"constants": {"ESTIMATED_MINUTES": 0}})


# --------------------------------------------------------------------------- the trial page


def to_trial(slug: str, external_id: str):
    at = new_participant_app(slug, external_id)
    pid = runtime.find_participant(slug, external_id)
    for data in ({"agree": True}, {}, {"task": "How many triangles are in the image", "rounds": "Up to 2"},
                 {"answer": "Rarely"}):
        answer(pid, data)
    at.run()
    return at, pid


def test_the_question_is_asked_once(short_study):
    at, _ = to_trial(short_study, "p1")
    labels = [n.label for n in at.number_input] + [m.value for m in at.markdown]
    assert sum("How many triangles?" in text for text in labels) == 1


def test_revision_round_starts_from_the_previous_answer_and_is_final(short_study):
    at, pid = to_trial(short_study, "online")  # least filled: the first participant is in "online"
    view = runtime.current_view(pid)
    answer(pid, {"answer": 7, "confidence": 2})
    at.run()
    view = runtime.current_view(pid)
    assert view.template_vars["round"] == 2 and view.template_vars["last_round"]
    assert at.number_input(key=f"step{view.step.index}-answer").value == 7
    assert at.radio(key=f"step{view.step.index}-confidence").value == 2
    # The last round has no box to untick: its answer is final.
    assert not [c for c in at.checkbox if c.key == f"step{view.step.index}-final"]
    submit = [b for b in at.form_submit_button if b.form_id == f"form-{view.step.index}"]
    submit[0].click()
    at.run()
    after = runtime.current_view(pid)
    assert after.step.index != view.step.index and after.template_vars["interaction"] == 2


def test_an_error_is_said_in_plain_words_under_its_field(short_study):
    at, pid = to_trial(short_study, "p1")
    view = runtime.current_view(pid)
    at.number_input(key=f"step{view.step.index}-answer").set_value(12)
    at.radio(key=f"step{view.step.index}-confidence").set_value(3)
    [b for b in at.form_submit_button if b.form_id == f"form-{view.step.index}"][0].click()
    at.run()
    assert [e.value for e in at.error] == ["Please enter a number no greater than 9."]
    assert at.number_input(key=f"step{view.step.index}-answer").value == 12  # typed value kept
    assert runtime.current_view(pid).step.index == view.step.index


def test_the_consent_step_is_the_first_of_the_instance(short_study):
    view = runtime.current_view(runtime.enter(short_study, {"pid": "x"}).participant_id)
    assert view.step.step is Consent and view.response_model is not None


def test_the_data_dictionary_lists_the_instances_choices(short_study):
    from engines.platform.export import export_study

    dictionary = export_study(short_study).files["data_dictionary.csv"].decode()
    (rounds,) = [line for line in dictionary.splitlines() if line.startswith("Comprehension,rounds")]
    assert "Up to 2" in rounds and "Up to 3" not in rounds
