"""A participant's row and its study's, read and written with SQLAlchemy Core on the hot path.

Every submitted step reads the participant (locked) with its study, stores one response and
moves the participant on. Through the ORM that is an identity map, instrumented objects and a
unit-of-work flush for two rows: about half of a step's CPU time, and at 50 participants
without think time every millisecond of it queues (``bench/platform_store.py``). Here the
statements are built once, rows are read into plain dataclasses and only the columns that
changed are written back. A step's statements go through its ``StepTransaction``
(``engines.platform.step_transaction``: on PostgreSQL, two round trips per step); the rarer
reads and writes run on the session's connection. Either way step hooks that write through
``ctx.session`` stay in the same transaction.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlmodel import Session

from engines.platform.driver_sql import CompiledForms
from engines.platform.models import Participant, StepAttempt, StepResponse, Study

if TYPE_CHECKING:
    from engines.platform.step_transaction import StepTransaction

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
# inline(): no RETURNING of the new id (nothing reads it), one result less to process per step.
_INSERT_RESPONSE = insert(_RESPONSE).inline()
_INSERT_ATTEMPT = insert(_ATTEMPT).inline()
_RESPONSE_COLUMNS = frozenset(c.name for c in _RESPONSE.c if c.name != "id")

# The statements of a step's own transaction, compiled on first use per database.
_LOCKED_FORMS = CompiledForms(_LOCKED)
_INSERT_RESPONSE_FORMS = CompiledForms(_INSERT_RESPONSE)
_UPDATE_PARTICIPANT_FORMS = CompiledForms(_UPDATE_PARTICIPANT)
_MARK_SHOWN_FORMS = CompiledForms(_MARK_SHOWN)


def _participant_and_study(row: tuple) -> tuple[ParticipantState, StudyRow]:
    n = len(_STATE_COLUMNS)
    state = ParticipantState(*row[:n])
    state.vars = state.vars or {}
    return state, StudyRow(*row[n:])


def read_participant(session: Session, participant_id: int) -> tuple[ParticipantState, StudyRow] | None:
    """The participant with its study, or None."""
    row = session.connection().execute(_UNLOCKED, {"participant_id": participant_id}).first()
    return None if row is None else _participant_and_study(tuple(row))


def lock_participant(step: StepTransaction, participant_id: int) -> tuple[ParticipantState, StudyRow] | None:
    """The participant with its study, their row held until ``step`` ends; or None. The step's first statement."""
    row = step.read(_LOCKED_FORMS, {"participant_id": participant_id})
    return None if row is None else _participant_and_study(row)


def save_participant(step: StepTransaction, state: ParticipantState, before: ParticipantState) -> None:
    """Write the columns of ``state`` that changed since ``before`` (nothing when none did), with the step's next statement."""
    changes = state.changes_since(before)
    if changes:
        step.write(_UPDATE_PARTICIPANT_FORMS, {"participant_id": state.id, **changes}, keys=frozenset(changes))


def response_stored(session: Session, participant_id: int, step_index: int) -> bool:
    params = {"participant_id": participant_id, "step_index": step_index}
    return session.connection().execute(_RESPONSE_EXISTS, params).first() is not None


def failed_attempts(session: Session, participant_id: int, step_index: int) -> int:
    params = {"participant_id": participant_id, "step_index": step_index}
    return session.connection().execute(_ATTEMPTS, params).scalar_one()


def insert_response(step: StepTransaction, **values: Any) -> None:
    """One ``StepResponse`` row (``UNIQUE(participant_id, step_index)`` refuses a second), sent with the step's next statement.

    ``values``: every column but ``id``.
    """
    step.write(_INSERT_RESPONSE_FORMS, values, keys=_RESPONSE_COLUMNS)


def insert_attempt(session: Session, **values: Any) -> None:
    """One ``StepAttempt`` row: a failed check."""
    session.connection().execute(_INSERT_ATTEMPT, values)


def mark_shown(step: StepTransaction, participant_id: int, step_index: int, now: datetime) -> None:
    """Set when the participant's current step was first shown (a step already marked keeps its time), with the step's next statement."""
    step.write(_MARK_SHOWN_FORMS, {"participant_id": participant_id, "index": step_index, "now": now})
