"""Researcher-side study operations: progress per condition and status, the study list's counts."""

from __future__ import annotations

import pytest
from sqlmodel import select

from engines.platform import study_admin
from engines.platform.db import write_transaction
from engines.platform.models import Participant, Study
from engines.platform.study_admin import ConditionProgress


def _add_participants(slug: str, condition: str, status: str, n: int) -> None:
    """Write ``n`` participant rows directly (no runtime call)."""
    with write_transaction() as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        start = len(session.exec(select(Participant).where(Participant.study_id == study.id)).all())
        for i in range(start, start + n):
            session.add(Participant(study_id=study.id, external_id=f"x{i}", panel="generic",
                                    condition=condition, status=status))


@pytest.fixture
def watched_study(any_db) -> str:
    """A demo_survey study (conditions plain, explained) with participants in every status:
    plain 1 active, 2 completed, 3 screened out; explained 1 completed, 1 screened out."""
    study_admin.create_study("watched", "demo_survey")
    _add_participants("watched", "plain", "active", 1)
    _add_participants("watched", "plain", "completed", 2)
    _add_participants("watched", "plain", "screened_out", 3)
    _add_participants("watched", "explained", "completed", 1)
    _add_participants("watched", "explained", "screened_out", 1)
    return "watched"


def test_progress_does_not_count_screened_out_participants_as_completed(watched_study):
    assert study_admin.progress(watched_study) == [
        ConditionProgress("plain", active=1, completed=2, screened_out=3),
        ConditionProgress("explained", active=0, completed=1, screened_out=1),
    ]


def test_progress_lists_every_condition_even_without_participants(any_db):
    study_admin.create_study("empty", "demo_survey")
    assert study_admin.progress("empty") == [
        ConditionProgress("plain", active=0, completed=0, screened_out=0),
        ConditionProgress("explained", active=0, completed=0, screened_out=0),
    ]


def test_study_list_counts_only_completed_participants_as_completed(watched_study):
    summary = next(s for s in study_admin.list_studies() if s.slug == watched_study)
    assert (summary.participants, summary.completed) == (8, 3)
