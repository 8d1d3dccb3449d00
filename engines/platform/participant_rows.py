"""A participant's row and its study's, read and written with SQLAlchemy Core statements.

Every submitted step reads the participant (locked) with its study, stores one response and
moves the participant on, inside one ``db.write_transaction``. The statements here are built
once; rows are read into plain dataclasses and only the columns that changed are written back.
Each statement runs at once on the transaction's connection (``session.connection()``), so a
step hook that queries through the same session (``ctx.session``) sees what the step has
written before it, and anything a hook writes through the session is in the same transaction.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlmodel import Session

from engines.platform.models import Participant, StepAttempt, StepResponse, Study

_PARTICIPANT = Participant.__table__
_STUDY = Study.__table__
_RESPONSE = StepResponse.__table__
_ATTEMPT = StepAttempt.__table__


@dataclass
class ParticipantState:
    """The columns of ``Participant`` that the runtime reads or moves on (a plain, mutable copy)."""

    id: int
    study_id: int
    external_id: str
    panel: str
    panel_params: dict
    condition: str
    status: str
    step_index: int
    step_shown_at: datetime | None
    attention_failures: int
    last_seen_at: datetime
    finished_at: datetime | None
    completion_code: str | None
    vars: dict

    def changes_since(self, before: ParticipantState) -> dict[str, Any]:
        """The columns whose values differ from ``before``: what an UPDATE must write."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(before, f.name)}

    def snapshot(self) -> ParticipantState:
        """A copy to compare against later. Shallow: the runtime replaces ``vars`` (hooks edit a
        deep copy of it), it never edits the dict in place."""
        return dataclasses.replace(self)


@dataclass(frozen=True)
class StudyRow:
    """The columns of ``Study`` a step needs."""

    id: int
    slug: str
    protocol: str
    title: str
    config: dict


_STATE_COLUMNS = [_PARTICIPANT.c[f.name] for f in dataclasses.fields(ParticipantState)]
_STUDY_COLUMNS = [_STUDY.c[f.name].label(f"study__{f.name}") for f in dataclasses.fields(StudyRow)]


def _participant_query(*, lock: bool):
    query = (select(*_STATE_COLUMNS, *_STUDY_COLUMNS)
             .join_from(_PARTICIPANT, _STUDY, _STUDY.c.id == _PARTICIPANT.c.study_id)
             .where(_PARTICIPANT.c.id == bindparam("participant_id")))
    # Only the participant is locked (FOR UPDATE OF participant on PostgreSQL; SQLite's writer
    # lock comes from BEGIN IMMEDIATE): concurrent steps of other participants never wait on the study.
    return query.with_for_update(of=_PARTICIPANT) if lock else query


_LOCKED = _participant_query(lock=True)
_UNLOCKED = _participant_query(lock=False)
_RESPONSE_EXISTS = select(_RESPONSE.c.id).where(
    _RESPONSE.c.participant_id == bindparam("participant_id"), _RESPONSE.c.step_index == bindparam("step_index"))
_ATTEMPTS = select(func.count()).select_from(_ATTEMPT).where(
    _ATTEMPT.c.participant_id == bindparam("participant_id"), _ATTEMPT.c.step_index == bindparam("step_index"))
# Which columns it sets comes from the parameters given (SQLAlchemy caches one compiled form per set).
_UPDATE_PARTICIPANT = update(_PARTICIPANT).where(_PARTICIPANT.c.id == bindparam("participant_id"))
_MARK_SHOWN = (update(_PARTICIPANT)
               .where(_PARTICIPANT.c.id == bindparam("participant_id"), _PARTICIPANT.c.step_index == bindparam("index"),
                      _PARTICIPANT.c.step_shown_at.is_(None))
               .values(step_shown_at=bindparam("now"), last_seen_at=bindparam("now")))
# inline(): no RETURNING of the new id (nothing reads it).
_INSERT_RESPONSE = insert(_RESPONSE).inline()
_INSERT_ATTEMPT = insert(_ATTEMPT).inline()


def _participant_and_study(row: tuple) -> tuple[ParticipantState, StudyRow]:
    n = len(_STATE_COLUMNS)
    state = ParticipantState(*row[:n])
    state.vars = state.vars or {}
    return state, StudyRow(*row[n:])


def read_participant(session: Session, participant_id: int) -> tuple[ParticipantState, StudyRow] | None:
    """The participant with its study, or None."""
    row = session.connection().execute(_UNLOCKED, {"participant_id": participant_id}).first()
    return None if row is None else _participant_and_study(tuple(row))


def lock_participant(session: Session, participant_id: int) -> tuple[ParticipantState, StudyRow] | None:
    """The participant with its study, their row held until the write transaction of ``session`` ends; or None."""
    row = session.connection().execute(_LOCKED, {"participant_id": participant_id}).first()
    return None if row is None else _participant_and_study(tuple(row))


def save_participant(session: Session, state: ParticipantState, before: ParticipantState) -> None:
    """Write the columns of ``state`` that changed since ``before`` (no statement when none did)."""
    changes = state.changes_since(before)
    if changes:
        session.connection().execute(_UPDATE_PARTICIPANT, {"participant_id": state.id, **changes})


def response_stored(session: Session, participant_id: int, step_index: int) -> bool:
    params = {"participant_id": participant_id, "step_index": step_index}
    return session.connection().execute(_RESPONSE_EXISTS, params).first() is not None


def failed_attempts(session: Session, participant_id: int, step_index: int) -> int:
    params = {"participant_id": participant_id, "step_index": step_index}
    return session.connection().execute(_ATTEMPTS, params).scalar_one()


def insert_response(session: Session, **values: Any) -> None:
    """One ``StepResponse`` row (``UNIQUE(participant_id, step_index)`` refuses a second).

    ``values``: every column but ``id``.
    """
    session.connection().execute(_INSERT_RESPONSE, values)


def insert_attempt(session: Session, **values: Any) -> None:
    """One ``StepAttempt`` row: a failed check."""
    session.connection().execute(_INSERT_ATTEMPT, values)


def mark_shown(session: Session, participant_id: int, step_index: int, now: datetime) -> None:
    """Set when the participant's current step was first shown (a step already marked keeps its time)."""
    session.connection().execute(_MARK_SHOWN, {"participant_id": participant_id, "index": step_index, "now": now})
