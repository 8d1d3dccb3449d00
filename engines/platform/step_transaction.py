"""A participant's step as one write transaction, in as few round trips as the database allows.

A submitted step reads the participant (locked), lets the step's hooks run, stores the answer
and moves the participant on. Through SQLAlchemy on PostgreSQL that is five round trips
(BEGIN, the locked read, the response INSERT, the participant UPDATE, COMMIT), and each costs
the app process and the server a wake-up and a system call or two: at 50 participants without
think time, more CPU than the statements themselves (``bench/platform_store.py``). Here a step
whose hooks run no SQL of their own is two: BEGIN travels with the locked read, and the step's
writes travel with COMMIT, as ``EXECUTE`` of statements prepared once per connection
(``driver_sql.PreparedPlan``), several statements in one simple-protocol message.

The messages go straight to psycopg's libpq connection (``Connection.pgconn``): the parameters
quoted as literals by the connection's own adapters (``psycopg.adapt.Transformer``, what
psycopg's ``ClientCursor`` does), the results read by the same adapters, errors raised as
psycopg raises them (``UniqueViolation`` and so on). A cursor per message cost more CPU than
the rest of the step's Python, and at 50 participants without think time that CPU is the
queue every step waits in.

Statements keep their order. A write the step has queued (``write``) waits for the next message
the transaction sends; when a hook runs a statement through ``step.session`` first, the queued
writes go just before it, so the hook reads what the step has written (an ``after_submit``
counting the participant's answers counts this one).

BEGIN is sent before anything else runs in the transaction, a hook's statement included, so no
statement escapes it, and psycopg, which opens a transaction of its own only on a connection
with none open, never sends a BEGIN in a round trip of its own.

The prepared statements last as long as the server session. psycopg's own automatic preparing
is off on these connections (``db.create_db_engine``): it ends every rolled-back transaction
with ``DEALLOCATE ALL``, which would drop ours too. Should they be gone anyway (a
``DISCARD ALL``), the transaction's first message is sent again with its PREPAREs.
PgBouncer in transaction mode cannot keep named prepared statements at all: there set
``HAI_DB_PREPARED_STATEMENTS=false`` and the statements travel as plain text, in the same two
round trips.

SQLite is in-process, with no round trips to save: there the same calls run each statement on
the driver, inside ``BEGIN IMMEDIATE`` (as ``db.write_transaction``).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from typing import Any, NoReturn

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, RootTransaction
from sqlmodel import Session

from engines.platform.db import get_engine, write_gate_and_engine
from engines.platform.driver_sql import CompiledForms, sqlalchemy_error
from engines.platform.settings import get_settings

_STEP_KEY = "hai_step_transaction"  # in the pooled connection's info while a step runs on it
_WATCHED: weakref.WeakSet[Engine] = weakref.WeakSet()
_WATCH_LOCK = threading.Lock()


class StepTransaction:
    """A step's transaction: statements run in order, the step's own writes sent as late as allowed.

    This base class runs each statement on the driver as it comes (SQLite, or a PostgreSQL
    driver other than psycopg 3).
    """

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._session: Session | None = None
        self._queued: list[tuple[CompiledForms, frozenset[str] | None, Mapping[str, Any]]] = []

    @property
    def session(self) -> Session:
        """An ORM session in this transaction, for hooks (``ctx.session``), opened on first use."""
        if self._session is None:
            # rollback_only: the session never ends the transaction; ``commit`` and ``rollback`` do.
            self._session = Session(bind=self.connection, expire_on_commit=False,
                                    join_transaction_mode="rollback_only")
        return self._session

    def session_of(self) -> Session:
        return self.session

    def flush_session(self) -> None:
        """Send what a hook added to the session but did not flush yet (before COMMIT)."""
        if self._session is not None:
            self._session.flush()

    def attach(self) -> None:
        """From now on, a statement SQLAlchemy runs on this connection sends the queued writes first."""
        self.connection.info[_STEP_KEY] = self

    def read(self, forms: CompiledForms, values: Mapping[str, Any]) -> tuple | None:
        """Run a query (after the queued writes) and return its first row, SQLAlchemy's types, or None."""
        self.send_queued()
        return forms.driver(self.connection.dialect).first(self.connection, values)

    def write(self, forms: CompiledForms, values: Mapping[str, Any], keys: frozenset[str] | None = None) -> None:
        """Queue a write for the next statement or the commit. ``keys``: the columns it sets, where they vary."""
        self._queued.append((forms, keys, values))

    def send_queued(self) -> None:
        """Run the queued writes now (another statement is about to run)."""
        queued, self._queued = self._queued, []
        for forms, keys, values in queued:
            forms.driver(self.connection.dialect, keys).run(self.connection, values)

    def commit(self, transaction: RootTransaction) -> None:
        self.flush_session()
        self.send_queued()
        self._release()
        transaction.commit()

    def rollback(self, transaction: RootTransaction) -> None:
        self._queued = []
        self._release()
        try:
            transaction.rollback()  # the driver sends ROLLBACK when a transaction is open or failed
        except Exception:  # noqa: BLE001 - a connection that cannot roll back is not reused
            self.connection.invalidate()

    def _release(self) -> None:
        # Before the connection can go back to the pool.
        if not self.connection.invalidated:
            self.connection.info.pop(_STEP_KEY, None)


class _PostgresStepTransaction(StepTransaction):
    """psycopg 3: BEGIN goes with the first statement, the queued writes with the next one or COMMIT."""

    def __init__(self, connection: Connection) -> None:
        super().__init__(connection)
        pooled = self.connection.connection
        self._driver = pooled.dbapi_connection
        # Names prepared on this server session: the pool keeps ``info`` with the connection.
        self._prepared: set[str] = pooled.info.setdefault("hai_prepared_statements", set())
        from psycopg.adapt import Transformer

        # The connection's adapters and client encoding, for the parameters and the locked read's row.
        self._adapters = Transformer(self._driver)
        self._use_prepared = get_settings().db_prepared_statements
        self._begun = False

    def read(self, forms: CompiledForms, values: Mapping[str, Any]) -> tuple | None:
        plan = forms.prepared(self.connection.dialect)
        result = self._send([(plan, values)])
        if not result.ntuples:
            return None
        self._adapters.set_pgresult(result)
        return plan.results.row(self._adapters.load_row(0, tuple),
                                lambda: [result.ftype(i) for i in range(result.nfields)])

    def send_queued(self) -> None:
        if self._queued or not self._begun:
            self._send([])

    def commit(self, transaction: RootTransaction) -> None:
        self.flush_session()  # ORM objects a hook added: before COMMIT, after the queued writes
        self._send([], commit=True)
        self._release()
        transaction.commit()  # SQLAlchemy's bookkeeping: psycopg sends nothing on an idle connection

    def _send(self, statements: list, *, commit: bool = False):  # noqa: ANN202 - a psycopg PGresult
        """One message: PREPAREs new to this connection, BEGIN once, the queued writes, ``statements``, COMMIT.

        Returns the last statement's result.
        """
        import psycopg

        dialect = self.connection.dialect
        queued, self._queued = self._queued, []
        plans = [(forms.prepared(dialect, keys), values) for forms, keys, values in queued] + statements
        first = not self._begun
        while True:
            message, new_names = self._message(plans, commit=commit)
            try:
                result = self._exchange(message)
                break
            except psycopg.errors.InvalidSqlStatementName as exc:
                if not (first and self._prepared):
                    self._fail(exc, plans, commit=commit)
                # Something deallocated this connection's statements (DISCARD ALL, say). Nothing
                # has run in this transaction yet: end it and send the message again, preparing all.
                self._driver.rollback()
                self._begun = False
                self._prepared.clear()
            except psycopg.Error as exc:
                self._fail(exc, plans, commit=commit)
        self._begun = True
        self._prepared.update(new_names)
        return result

    def _exchange(self, message: bytes):  # noqa: ANN202 - a psycopg PGresult
        """Send ``message`` and wait for its results: the last one, or the first error, raised as psycopg would."""
        import psycopg
        from psycopg import generators, pq

        driver = self._driver
        with driver.lock:  # what psycopg holds around its own exchanges
            driver.pgconn.send_query(message)
            results = driver.wait(generators.execute(driver.pgconn))
        for result in results:
            if result.status == pq.ExecStatus.FATAL_ERROR:
                raise psycopg.errors.error_from_result(result, encoding=driver.info.encoding)
        return results[-1]  # one result per statement: a message has at least one

    def _message(self, plans: list, *, commit: bool) -> tuple[bytes, list[str]]:
        parts: list[bytes] = []
        new_names: list[str] = []
        if self._use_prepared:
            for plan, _values in plans:
                if plan.name not in self._prepared and plan.name not in new_names:
                    parts.append(plan.prepare)
                    new_names.append(plan.name)
        if not self._begun:
            parts.append(b"BEGIN")
        for plan, values in plans:
            if self._use_prepared:
                parts.append(plan.execute % self._literals(plan.parameters(values)))
            else:
                parts.append(plan.inline % self._literals(plan.inline_parameters(values)))
        if commit:
            parts.append(b"COMMIT")
        return b"; ".join(parts), new_names

    def _literals(self, values: tuple[Any, ...]) -> tuple[bytes, ...]:
        # As psycopg's ClientCursor quotes its parameters (None as NULL).
        return tuple(map(self._adapters.as_literal, values))

    def _fail(self, exc: Exception, plans: list, *, commit: bool) -> NoReturn:
        self.connection.invalidate()  # which of the message's PREPAREs ran is unknown: not reused
        # The error shows the statements' own text with placeholders and the parameters apart,
        # as SQLAlchemy's errors do (so ``hide_parameters`` keeps answers out of logs), each
        # after the name it is prepared under (which the server's error may name).
        label = "/* {} */ " if self._use_prepared else ""
        texts = [label.format(plan.name) + plan.inline.decode() for plan, _values in plans]
        params = [value for plan, values in plans for value in plan.inline_parameters(values)]
        sql = "; ".join(texts + (["COMMIT"] if commit else []))
        raise sqlalchemy_error(self.connection, exc, sql, params, invalidated=True) from exc


def _send_queued_first(conn, *_args) -> None:  # noqa: ANN001 - SQLAlchemy Connection
    step = conn.info.get(_STEP_KEY)
    if step is not None and step.connection is conn:  # (a step's own checkout, never a later one's)
        step.send_queued()


def _watch(engine: Engine) -> None:
    """Have statements run through SQLAlchemy on ``engine`` send a running step's queued writes first."""
    with _WATCH_LOCK:
        if engine not in _WATCHED:
            event.listen(engine, "before_cursor_execute", _send_queued_first)
            _WATCHED.add(engine)


@contextmanager
def step_transaction(engine: Engine | None = None) -> Iterator[StepTransaction]:
    """One participant step's write transaction: commits on success, rolls back entirely on any exception.

    Admitted through the same per-process write gate as ``db.write_transaction``.
    """
    engine = engine or get_engine()
    _watch(engine)
    gate, writer = write_gate_and_engine(engine)
    fused = writer.dialect.name == "postgresql" and writer.dialect.driver == "psycopg"
    with gate or nullcontext(), writer.connect() as connection:
        transaction = connection.begin()  # SQLite: BEGIN IMMEDIATE (db.py); psycopg: nothing sent yet
        step = _PostgresStepTransaction(connection) if fused else StepTransaction(connection)
        try:
            step.attach()
            yield step
            step.commit(transaction)
        except BaseException:
            step.rollback(transaction)
            raise
        finally:
            if step._session is not None:
                step._session.close()
