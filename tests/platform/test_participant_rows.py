"""A participant's step as one write transaction of SQLAlchemy Core statements (engines/platform/participant_rows.py).

What a participant or researcher would notice: answers and the participant's row read back
exactly as written (JSON, UTC times), only what changed is written, a step that fails stores
nothing and leaves the connection usable, a refused write raises SQLAlchemy's error (never the
driver's own), and on PostgreSQL the participant stays locked until the step ends while the
app's connections keep the driver's defaults.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import event, func, text
from sqlalchemy.exc import DataError, IntegrityError, SQLAlchemyError
from sqlmodel import select

from engines.platform import db, runtime, study_admin
from engines.platform import participant_rows as rows
from engines.platform.models import Participant, StepResponse
from tests.conftest import PG_URL
from tests.helpers import form_steps_protocol

T0 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


@pytest.fixture
def engine(any_db):
    """A fresh engine of its own, disposed after."""
    engine = db.create_db_engine(any_db)
    yield engine
    engine.dispose()


def _new_participant(engine, *, steps: int = 3, config: dict | None = None) -> int:
    study_admin.create_study("steps", form_steps_protocol(steps).name, config=config, engine=engine)
    return runtime.enter("steps", {"pid": "p-1"}, engine=engine).participant_id


@pytest.fixture
def participant(engine) -> int:
    return _new_participant(engine)


def _stored(engine, participant_id: int) -> list[StepResponse]:
    with db.read_session(engine) as session:
        return list(session.exec(select(StepResponse).where(StepResponse.participant_id == participant_id)
                                 .order_by(StepResponse.step_index)).all())


def _participant(engine, participant_id: int) -> Participant:
    with db.read_session(engine) as session:
        return session.get(Participant, participant_id)


def _answer_and_move_on(session, participant_id: int, step_index: int, to: int, *, answer_of: int | None = None,
                        data: dict | None = None) -> None:
    """In the step's ``session``: lock the participant, store its answer to ``step_index``, move it to step ``to``.

    ``answer_of``: store the answer under another participant id (one that does not exist makes
    the foreign key refuse it).
    """
    state, _ = rows.lock_participant(session, participant_id)
    before = state.snapshot()
    state.step_index = to
    rows.save_participant(session, state, before)
    rows.insert_response(session, participant_id=participant_id if answer_of is None else answer_of,
                         step_index=step_index, step_name="Item", round_number=1, data=data or {}, attempts=1,
                         shown_at=None, submitted_at=T0, duration_s=None)


def _statements(engine) -> list[str]:
    """The SQL the engine sends from now on (for the length of the test)."""
    sent: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda _c, _cur, statement, *_: sent.append(statement))
    return sent


def test_values_written_in_a_step_read_back_as_written(engine, participant):
    nested = {"names": ["Zoë", "李"], "scores": {"a": [1.5, None, True]}, "empty": {}}
    with db.write_transaction(engine) as session:
        state, study = rows.lock_participant(session, participant)
        before = state.snapshot()
        state.vars, state.step_shown_at, state.step_index = nested, T0, 1
        rows.save_participant(session, state, before)
        rows.insert_response(session, participant_id=participant, step_index=0, step_name="Item", round_number=1,
                             data={"value": 3, "note": "ünïcode"}, attempts=2, shown_at=T0,
                             submitted_at=T0 + timedelta(seconds=2.5), duration_s=2.5)
    assert study.slug == "steps"
    stored = _participant(engine, participant)
    assert (stored.vars, stored.step_shown_at, stored.step_index) == (nested, T0, 1)
    [response] = _stored(engine, participant)
    assert (response.data, response.attempts, response.shown_at, response.duration_s) == (
        {"value": 3, "note": "ünïcode"}, 2, T0, 2.5)
    assert response.submitted_at == T0 + timedelta(seconds=2.5) and response.submitted_at.tzinfo is not None
    # The locked read and the plain one agree, field for field, times in UTC.
    with db.read_session(engine) as session:
        unlocked = rows.read_participant(session, participant)
    with db.write_transaction(engine) as session:
        locked = rows.lock_participant(session, participant)
    assert locked == unlocked
    assert locked[0].step_shown_at == T0 and locked[0].step_shown_at.utcoffset() == timedelta(0)


def test_only_the_columns_that_changed_are_written(engine, participant):
    sent = _statements(engine)
    with db.write_transaction(engine) as session:
        state, _ = rows.lock_participant(session, participant)
        rows.save_participant(session, state, state.snapshot())  # nothing changed: no UPDATE
        assert not [sql for sql in sent if sql.startswith("UPDATE")]
        before = state.snapshot()
        state.attention_failures = 2
        rows.save_participant(session, state, before)
    [update] = [sql for sql in sent if sql.startswith("UPDATE")]
    assert "attention_failures" in update and "step_index" not in update and "vars" not in update
    assert _participant(engine, participant).attention_failures == 2


def test_a_query_through_the_steps_session_sees_what_the_step_wrote(engine, participant):
    with db.write_transaction(engine) as session:
        _answer_and_move_on(session, participant, 0, to=1)
        counted = session.exec(select(func.count()).select_from(StepResponse)
                               .where(StepResponse.participant_id == participant)).one()
        moved_on = session.exec(select(Participant.step_index).where(Participant.id == participant)).one()
    assert (counted, moved_on) == (1, 1)


def test_a_step_that_fails_after_writing_stores_nothing(engine, participant):
    with pytest.raises(RuntimeError, match="hook failed"), db.write_transaction(engine) as session:
        _answer_and_move_on(session, participant, 0, to=2)
        raise RuntimeError("hook failed")
    assert _stored(engine, participant) == [] and _participant(engine, participant).step_index == 0
    assert runtime.submit(participant, 0, {"value": 1}, engine=engine).accepted  # the connection is usable


def test_a_write_the_database_refuses_raises_its_integrity_error_and_stores_nothing(engine, participant):
    with pytest.raises(IntegrityError) as refused, db.write_transaction(engine) as session:
        # No such participant: the foreign key refuses the answer.
        _answer_and_move_on(session, participant, 0, to=1, answer_of=participant + 1000, data={"note": "answer-xyz"})
    # SQLAlchemy's error: the statement and its values apart (hide_parameters keeps answers out of logs).
    assert "INSERT INTO stepresponse" in refused.value.statement
    assert "answer-xyz" not in refused.value.statement
    assert _participant(engine, participant).step_index == 0
    assert runtime.submit(participant, 0, {"value": 1}, engine=engine).accepted


def test_showing_a_step_twice_keeps_the_first_time(engine, participant):
    with db.write_transaction(engine) as session:
        rows.mark_shown(session, participant, 0, T0)
    with db.write_transaction(engine) as session:
        rows.mark_shown(session, participant, 0, T0 + timedelta(seconds=9))
        rows.mark_shown(session, participant, 5, T0 + timedelta(seconds=9))  # not its step: nothing
    stored = _participant(engine, participant)
    assert (stored.step_shown_at, stored.step_index) == (T0, 0)


# ------------------------------------------------------------------ PostgreSQL


@pytest.fixture
def pg_participant(pg_engine) -> int:
    return _new_participant(pg_engine)


@pytest.fixture
def pg_schema(pg_engine) -> str:
    """The scratch schema the engine's tables are in."""
    with pg_engine.connect() as connection:
        return connection.execute(text("SELECT current_schema()")).scalar_one()


def _locked_elsewhere(schema: str, participant_id: int) -> bool:
    """Whether another session finds the participant's row locked (NOWAIT: no waiting for it)."""
    with psycopg.connect(PG_URL.replace("+psycopg", ""), autocommit=True) as other:
        try:
            other.execute(f'SELECT id FROM "{schema}".participant WHERE id = %s FOR UPDATE NOWAIT', (participant_id,))
        except psycopg.errors.LockNotAvailable:
            return True
        return False


@pytest.mark.postgres
def test_the_participant_stays_locked_until_the_step_ends(pg_engine, pg_participant, pg_schema):
    with db.write_transaction(pg_engine) as session:
        rows.lock_participant(session, pg_participant)
        assert _locked_elsewhere(pg_schema, pg_participant)
    assert not _locked_elsewhere(pg_schema, pg_participant)
    assert runtime.submit(pg_participant, 0, {"value": 2}, engine=pg_engine).accepted


@pytest.mark.postgres
def test_a_value_the_driver_refuses_in_a_step_raises_sqlalchemys_error_and_stores_nothing(pg_engine, pg_participant):
    # PostgreSQL cannot hold a NUL character in a text column, and psycopg refuses it before
    # sending. The step must end with SQLAlchemy's error (which the page and the logs handle as
    # any database error, with the values kept apart), never the driver's own.
    with pytest.raises(DataError) as refused, db.write_transaction(pg_engine) as session:
        _answer_and_move_on(session, pg_participant, 0, to=1)
        state, _ = rows.lock_participant(session, pg_participant)
        before = state.snapshot()
        state.completion_code = "DONE\x00"
        rows.save_participant(session, state, before)
    assert isinstance(refused.value, SQLAlchemyError) and isinstance(refused.value.orig, psycopg.DataError)
    assert "UPDATE participant" in refused.value.statement
    assert _stored(pg_engine, pg_participant) == [] and _participant(pg_engine, pg_participant).step_index == 0
    assert runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine).accepted  # the connection is usable


@pytest.mark.postgres
def test_the_apps_connections_keep_the_drivers_prepared_statements(pg_engine, pg_participant):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    with pg_engine.connect() as connection:
        driver = connection.connection.dbapi_connection
        threshold = driver.prepare_threshold
    with psycopg.connect(PG_URL.replace("+psycopg", "")) as plain:
        # psycopg prepares a statement it has run this many times: the app leaves that as it is.
        assert threshold == plain.prepare_threshold is not None
