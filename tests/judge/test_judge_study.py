"""The panel study of judge labeling is created only for a labeling project that exists and is open."""

from __future__ import annotations

import pytest

from engines.judge import labeling, review
from engines.platform import study_admin
from engines.platform.runtime import StudyError
from studies.judge_labeling.bot import bot_items


def test_a_study_naming_no_project_is_refused_and_not_stored(sqlite_db):
    with pytest.raises(StudyError) as refused:
        study_admin.create_study("panel", "judge_labeling", config={"constants": {"PROJECT": "wave-9"}})
    assert str(refused.value) == ("Constants: PROJECT names no labeling project: there is none called 'wave-9'. "
                                  "Create it under Admin → Labeling projects first.")
    assert study_admin.list_studies() == []


def test_a_study_of_a_closed_project_is_refused_and_an_open_one_is_created(sqlite_db):
    labeling.create_project("wave-9", bot_items(), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0,
                                                                            quiz_size=0))
    labeling.set_open("wave-9", False)
    with pytest.raises(StudyError, match="'wave-9', which is closed: reopen it first"):
        study_admin.create_study("panel", "judge_labeling", config={"constants": {"PROJECT": "wave-9"}})
    labeling.set_open("wave-9", True)
    study_admin.create_study("panel", "judge_labeling", config={"constants": {"PROJECT": "wave-9"}})
    assert [s.slug for s in study_admin.list_studies()] == ["panel"]


def test_panel_workers_label_through_the_study_on_both_databases(any_db):
    # The bot's project has 3 items wanting one label each: the first worker rates all three, the
    # second finds none left and goes straight to the end. Each rating is a label in the queue.
    from engines.platform.bots import run_protocol_bots

    first, second = run_protocol_bots("judge_labeling", participants=2)
    assert (first.status, first.steps, second.status, second.steps) == ("completed", 5, "completed", 2)
    labels = [lb for item in review.labelled_items("demo-labeling") for lb in item.labels]
    assert sorted(lb.score for lb in labels) == [1, 2, 3]
    assert {lb.annotator_id for lb in labels} == {f"study:{first.study}:{first.external_id}"}
