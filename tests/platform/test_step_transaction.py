"""A participant's step transaction (engines/platform/step_transaction.py, driver_sql.py).

What a participant or researcher would notice: answers stored through the driver read back
exactly as SQLAlchemy reads them (JSON, UTC times), a step that fails stores nothing, and on
PostgreSQL a step is two messages to the server whose prepared statements survive anything
that drops them; a connection a step leaves behind is in the pool's normal state.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import func, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from engines.platform import db, runtime, settings, study_admin
from engines.platform import participant_rows as rows
from engines.platform.driver_sql import CompiledForms
from engines.platform.models import Participant, StepResponse
from engines.platform.step_transaction import step_transaction
from engines.platform.store_bench import bench_protocol
from tests.conftest import PG_URL

T0 = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)


@pytest.fixture(autouse=True)
def compiled_afresh(monkeypatch):
    """Each test compiles the step's statements itself: the forms are cached per process, and a
    cache filled before the test would hide what compiling them does."""
    for name in ("_LOCKED_FORMS", "_INSERT_RESPONSE_FORMS", "_UPDATE_PARTICIPANT_FORMS", "_MARK_SHOWN_FORMS"):
        monkeypatch.setattr(rows, name, CompiledForms(getattr(rows, name).statement))


@pytest.fixture
def engine(any_db):
    """A fresh engine of its own (one pooled connection in these tests), disposed after."""
    engine = db.create_db_engine(any_db)
    yield engine
    engine.dispose()


def _new_participant(engine) -> int:
    study_admin.create_study("steps", bench_protocol(3).name, engine=engine)
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


def _answer_and_move_on(step, participant_id: int, step_index: int, to: int, *, answer_of: int | None = None,
                        data: dict | None = None) -> None:
    """In ``step``: lock the participant, queue its answer to ``step_index`` and move it to step ``to``.

    ``answer_of``: store the answer under another participant id (one that does not exist makes
    the foreign key refuse it at commit).
    """
    state, _ = rows.lock_participant(step, participant_id)
    before = state.snapshot()
    state.step_index = to
    rows.save_participant(step, state, before)
    rows.insert_response(step, participant_id=participant_id if answer_of is None else answer_of,
                         step_index=step_index, step_name="Item", round_number=1, data=data or {}, attempts=1,
                         shown_at=None, submitted_at=T0, duration_s=None)


def test_values_written_and_read_on_the_driver_match_what_sqlalchemy_stores_and_reads(engine, participant):
    nested = {"names": ["Zoë", "李"], "scores": {"a": [1.5, None, True]}, "empty": {}}
    with step_transaction(engine) as step:
        state, study = rows.lock_participant(step, participant)
        before = state.snapshot()
        state.vars, state.step_shown_at, state.step_index = nested, T0, 1
        rows.save_participant(step, state, before)
        rows.insert_response(step, participant_id=participant, step_index=0, step_name="Item", round_number=1,
                             data={"value": 3, "note": "ünïcode"}, attempts=2, shown_at=T0,
                             submitted_at=T0 + timedelta(seconds=2.5), duration_s=2.5)
    assert study.slug == "steps"
    stored = _participant(engine, participant)
    assert (stored.vars, stored.step_shown_at, stored.step_index) == (nested, T0, 1)
    [response] = _stored(engine, participant)
    assert (response.data, response.attempts, response.shown_at, response.duration_s) == (
        {"value": 3, "note": "ünïcode"}, 2, T0, 2.5)
    assert response.submitted_at == T0 + timedelta(seconds=2.5) and response.submitted_at.tzinfo is not None
    # The locked read on the driver and SQLAlchemy's own read agree, field for field.
    with db.read_session(engine) as session:
        through_sqlalchemy = rows.read_participant(session, participant)
    with step_transaction(engine) as step:
        through_driver = rows.lock_participant(step, participant)
    assert through_driver == through_sqlalchemy
    assert through_driver[0].step_shown_at == T0 and through_driver[0].step_shown_at.utcoffset() == timedelta(0)


def test_only_the_columns_that_changed_are_written(engine, participant):
    with step_transaction(engine) as step:
        state, _ = rows.lock_participant(step, participant)
        rows.save_participant(step, state, state.snapshot())  # nothing changed: no UPDATE queued
        assert step._queued == []  # noqa: SLF001
        before = state.snapshot()
        state.attention_failures = 2
        rows.save_participant(step, state, before)
        [(_, keys, values)] = step._queued  # noqa: SLF001
    assert keys == {"attention_failures"} and values == {"participant_id": participant, "attention_failures": 2}
    assert _participant(engine, participant).attention_failures == 2


def test_a_statement_run_through_the_session_sees_the_writes_queued_before_it(engine, participant):
    with step_transaction(engine) as step:
        rows.lock_participant(step, participant)
        rows.insert_response(step, participant_id=participant, step_index=0, step_name="Item", round_number=1,
                             data={}, attempts=1, shown_at=None, submitted_at=T0, duration_s=None)
        counted = step.session.exec(select(func.count()).select_from(StepResponse)
                                    .where(StepResponse.participant_id == participant)).one()
    assert counted == 1


def test_a_step_that_fails_after_writing_stores_nothing(engine, participant):
    with pytest.raises(RuntimeError, match="hook failed"), step_transaction(engine) as step:
        _answer_and_move_on(step, participant, 0, to=2)
        step.session.exec(select(func.count()).select_from(StepResponse)).one()  # the writes reach the server
        raise RuntimeError("hook failed")
    assert _stored(engine, participant) == [] and _participant(engine, participant).step_index == 0
    assert runtime.submit(participant, 0, {"value": 1}, engine=engine).accepted  # the connection is usable


def test_a_write_the_database_refuses_raises_its_integrity_error_and_stores_nothing(engine, participant):
    with pytest.raises(IntegrityError) as refused, step_transaction(engine) as step:
        # No such participant: the foreign key refuses the answer at commit.
        _answer_and_move_on(step, participant, 0, to=1, answer_of=participant + 1000, data={"note": "answer-xyz"})
    # The error says which statement and values, apart (as SQLAlchemy's own errors do, so that
    # hide_parameters can keep answers out of logs); a refused write is not a lost connection.
    assert "INSERT INTO stepresponse" in refused.value.statement
    assert "answer-xyz" not in refused.value.statement
    assert participant + 1000 in list(refused.value.params)
    assert refused.value.connection_invalidated is engine.url.get_backend_name().startswith("postgresql")
    assert _participant(engine, participant).step_index == 0
    assert runtime.submit(participant, 0, {"value": 1}, engine=engine).accepted


# ------------------------------------------------------------------ PostgreSQL: messages and prepared statements




@pytest.fixture
def pg_participant(pg_engine) -> int:
    return _new_participant(pg_engine)


def _count_messages(monkeypatch) -> dict[str, int]:
    """Messages sent: by the step transaction straight on the libpq connection, and by psycopg cursors."""
    counts = {"messages": 0, "cursor": 0}
    libpq_execute = psycopg.generators.execute
    client_execute, server_execute = psycopg.ClientCursor.execute, psycopg.Cursor.execute

    def message(pgconn):
        counts["messages"] += 1
        return libpq_execute(pgconn)

    def cursor(execute):
        def counted(self, *args, **kwargs):
            counts["cursor"] += 1
            return execute(self, *args, **kwargs)
        return counted

    monkeypatch.setattr(psycopg.generators, "execute", message)
    monkeypatch.setattr(psycopg.ClientCursor, "execute", cursor(client_execute))
    monkeypatch.setattr(psycopg.Cursor, "execute", cursor(server_execute))
    return counts


def _prepared_on_the_pooled_connection(engine) -> set[str]:
    with engine.connect() as connection:
        return set(connection.execute(text("SELECT name FROM pg_prepared_statements")).scalars())


@pytest.mark.postgres
def test_a_step_is_two_messages_and_showing_a_step_one(pg_engine, pg_participant, monkeypatch):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)  # prepares the statements
    counts = _count_messages(monkeypatch)
    assert runtime.submit(pg_participant, 1, {"value": 2}, engine=pg_engine).accepted
    assert counts == {"messages": 2, "cursor": 0}
    runtime.record_shown(pg_participant, 2, engine=pg_engine)
    assert counts == {"messages": 3, "cursor": 0}
    assert [r.step_index for r in _stored(pg_engine, pg_participant)] == [0, 1]
    assert _participant(pg_engine, pg_participant).step_shown_at is not None


@pytest.mark.postgres
def test_the_connection_goes_back_to_the_pool_as_it_came(pg_engine, pg_participant):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    with pytest.raises(RuntimeError), step_transaction(pg_engine) as step:
        rows.lock_participant(step, pg_participant)
        raise RuntimeError("hook failed")
    with pg_engine.connect() as connection:
        driver = connection.connection.dbapi_connection
        assert driver.autocommit is False and driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        # psycopg's automatic preparing stays off: it would DEALLOCATE ALL after every rollback.
        assert driver.prepare_threshold is None


@pytest.mark.postgres
def test_statements_dropped_from_the_server_session_are_prepared_again(pg_engine, pg_participant):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    assert len(_prepared_on_the_pooled_connection(pg_engine)) >= 2  # the locked read, the writes
    with pg_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("DISCARD ALL"))  # what a pooler's reset does
    assert _prepared_on_the_pooled_connection(pg_engine) == set()
    assert runtime.submit(pg_participant, 1, {"value": 2}, engine=pg_engine).accepted
    assert len(_prepared_on_the_pooled_connection(pg_engine)) >= 2
    assert [r.data["value"] for r in _stored(pg_engine, pg_participant)] == [1, 2]


@pytest.mark.postgres
def test_without_prepared_statements_a_step_prepares_nothing(pg_engine, pg_participant, monkeypatch):
    monkeypatch.setenv("HAI_DB_PREPARED_STATEMENTS", "false")
    settings.reset_settings()
    counts = _count_messages(monkeypatch)
    assert runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine).accepted
    assert counts == {"messages": 2, "cursor": 0}
    assert _prepared_on_the_pooled_connection(pg_engine) == set()
    assert [r.data for r in _stored(pg_engine, pg_participant)] == [{"value": 1}]


@pytest.mark.postgres
def test_a_failed_message_discards_its_connection(pg_engine, pg_participant):
    with pg_engine.connect() as connection:
        before = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
    with pytest.raises(IntegrityError), step_transaction(pg_engine) as step:
        rows.lock_participant(step, pg_participant)
        rows.insert_response(step, participant_id=pg_participant + 1000, step_index=0, step_name="Item",
                             round_number=1, data={}, attempts=1, shown_at=None, submitted_at=T0, duration_s=None)
    with pg_engine.connect() as connection:
        assert connection.execute(text("SELECT pg_backend_pid()")).scalar_one() != before


def _locked_elsewhere(schema: str, participant_id: int) -> bool:
    """Whether another session finds the participant's row locked (NOWAIT: no waiting for it)."""
    with psycopg.connect(PG_URL.replace("+psycopg", ""), autocommit=True) as other:
        try:
            other.execute(f'SELECT id FROM "{schema}".participant WHERE id = %s FOR UPDATE NOWAIT', (participant_id,))
        except psycopg.errors.LockNotAvailable:
            return True
        return False


@pytest.fixture
def pg_schema(pg_engine) -> str:
    """The scratch schema the engine's tables are in."""
    with pg_engine.connect() as connection:
        return connection.execute(text("SELECT current_schema()")).scalar_one()


def _server_notices(engine) -> list[str]:
    """Notices the server sends the pooled connection from now on (a stray BEGIN warns of one)."""
    notices: list[str] = []
    with engine.connect() as connection:
        connection.connection.dbapi_connection.add_notice_handler(lambda notice: notices.append(notice.message_primary))
    return notices


@pytest.mark.postgres
def test_the_participant_stays_locked_until_the_step_ends_and_the_server_warns_of_nothing(
        pg_engine, pg_participant, pg_schema):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)  # prepares the statements
    notices = _server_notices(pg_engine)
    with step_transaction(pg_engine) as step:
        rows.lock_participant(step, pg_participant)
        assert _locked_elsewhere(pg_schema, pg_participant)
    assert not _locked_elsewhere(pg_schema, pg_participant)
    assert runtime.submit(pg_participant, 1, {"value": 2}, engine=pg_engine).accepted
    assert notices == []  # e.g. "there is already a transaction in progress"
    with pg_engine.connect() as connection:  # a committed step leaves the connection as it came
        assert connection.connection.dbapi_connection.autocommit is False


@pytest.mark.postgres
def test_after_its_statements_are_prepared_again_a_step_still_holds_the_lock(pg_engine, pg_participant, pg_schema):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    with pg_engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
        connection.execute(text("DISCARD ALL"))
    with step_transaction(pg_engine) as step:
        rows.lock_participant(step, pg_participant)
        assert _locked_elsewhere(pg_schema, pg_participant)


@pytest.mark.postgres
def test_a_statement_a_hook_runs_before_the_step_reads_belongs_to_the_step(pg_engine, pg_participant):
    with pytest.raises(RuntimeError), step_transaction(pg_engine) as step:
        step.session.exec(text("UPDATE participant SET attention_failures = 5 WHERE id = :id"),
                          params={"id": pg_participant})
        raise RuntimeError("hook failed")
    assert _participant(pg_engine, pg_participant).attention_failures == 0


@pytest.mark.postgres
def test_a_step_whose_hook_runs_a_statement_first_is_one_transaction_without_warnings(pg_engine, pg_participant):
    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    notices = _server_notices(pg_engine)
    with step_transaction(pg_engine) as step:
        assert step.session.exec(text("SELECT 1")).scalar_one() == 1  # before the step's first message
        _answer_and_move_on(step, pg_participant, 1, to=2)
    assert notices == []  # a BEGIN of psycopg's own first would make the step's BEGIN warn
    assert [r.step_index for r in _stored(pg_engine, pg_participant)] == [0, 1]
    assert _participant(pg_engine, pg_participant).step_index == 2


@pytest.mark.postgres
def test_statements_dropped_in_the_middle_of_a_step_fail_it_and_store_nothing(pg_engine, pg_participant):
    from sqlalchemy.exc import ProgrammingError

    runtime.submit(pg_participant, 0, {"value": 1}, engine=pg_engine)
    with pytest.raises(ProgrammingError) as failed, step_transaction(pg_engine) as step:
        _answer_and_move_on(step, pg_participant, 1, to=2)
        step.connection.connection.dbapi_connection.execute("DEALLOCATE ALL")  # the writes' statements are gone
    # Not prepared again and sent a second time: that would commit the writes without the lock
    # the step's read took.
    assert isinstance(failed.value.orig, psycopg.errors.InvalidSqlStatementName)
    # The error names the statement the server could not find, shows its text and the values apart.
    missing = failed.value.orig.diag.message_primary.split('"')[1]
    assert f"/* {missing} */ INSERT INTO stepresponse" in failed.value.statement
    assert failed.value.statement.endswith("; COMMIT")
    assert pg_participant in list(failed.value.params)
    assert failed.value.connection_invalidated is True
    assert [r.step_index for r in _stored(pg_engine, pg_participant)] == [0]
    assert _participant(pg_engine, pg_participant).step_index == 1


@pytest.mark.postgres
def test_text_keeps_its_characters_on_a_connection_in_another_client_encoding(pg_engine):
    latin = db.create_db_engine(pg_engine.url.update_query_dict({"client_encoding": "latin1"})
                                .render_as_string(hide_password=False))
    try:
        participant = _new_participant(latin)
        with step_transaction(latin) as step:
            state, _ = rows.lock_participant(step, participant)
            before = state.snapshot()
            state.step_index = 1
            rows.save_participant(step, state, before)
            rows.insert_response(step, participant_id=participant, step_index=0, step_name="Étape café",
                                 round_number=1, data={}, attempts=1, shown_at=None, submitted_at=T0,
                                 duration_s=None)
            assert step.session.exec(text("SHOW client_encoding")).scalar_one() == "LATIN1"
        assert [r.step_name for r in _stored(pg_engine, participant)] == ["Étape café"]  # read on UTF-8
    finally:
        latin.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize("prepared", [True, False], ids=["prepared", "plain"])
@pytest.mark.parametrize("sent", ["with COMMIT", "before a hook's statement"])
def test_a_refused_write_shows_each_statement_of_its_message_in_order(pg_engine, pg_participant, monkeypatch,
                                                                     prepared, sent):
    monkeypatch.setenv("HAI_DB_PREPARED_STATEMENTS", str(prepared).lower())
    settings.reset_settings()
    with pytest.raises(IntegrityError) as refused, step_transaction(pg_engine) as step:
        _answer_and_move_on(step, pg_participant, 0, to=1, answer_of=pg_participant + 1000)
        if sent != "with COMMIT":
            step.session.exec(select(func.count()).select_from(StepResponse)).one()
    *statements, last = refused.value.statement.split("; ")
    assert (last == "COMMIT") is (sent == "with COMMIT")
    if last != "COMMIT":
        statements.append(last)
    label = r"/\* hai_[0-9a-f]{20} \*/ " if prepared else ""
    found = [re.match(label + r"(UPDATE participant|INSERT INTO stepresponse) ", sql) for sql in statements]
    assert [m.group(1) if m else sql for m, sql in zip(found, statements, strict=True)] == [
        "UPDATE participant", "INSERT INTO stepresponse"]
