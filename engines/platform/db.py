"""One SQLAlchemy engine per process and short, explicit transactions over it.

SQLite (the default) runs in WAL mode with ``busy_timeout`` and foreign keys on; write
transactions start with ``BEGIN IMMEDIATE`` so that two read-then-write transactions queue for
the single writer lock instead of failing half-way (SQLite's documented advice). PostgreSQL is
used through ``psycopg`` 3, pooled connections pinged once they have sat idle; writers there
serialise on row locks (``SELECT ... FOR UPDATE``) taken by the callers that need them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from sqlalchemy import event
from sqlalchemy import exc as exc_module
from sqlalchemy.engine import Engine, make_url
from sqlmodel import Session, create_engine

from engines.platform.private_files import private_dir, private_sqlite_file
from engines.platform.settings import get_settings

_ENGINES: dict[str, Engine] = {}
_LOCK = threading.Lock()

_GATES: dict[str, _WriteGate] = {}
# engine -> (its write gate, the engine with the write option set)
_WRITERS: dict[Engine, tuple[_WriteGate | None, Engine]] = {}

SQLITE_PRAGMAS = ("journal_mode=WAL", "busy_timeout=10000", "foreign_keys=ON", "synchronous=NORMAL")


def is_sqlite(engine_or_url: Engine | str) -> bool:
    url = engine_or_url if isinstance(engine_or_url, str) else str(engine_or_url.url)
    return url.startswith("sqlite")


def _install_sqlite_hooks(engine: Engine) -> None:
    # The SQLAlchemy recipe for explicit SQLite transactions: turn off pysqlite's own BEGIN
    # handling and emit ours, so that writers can ask for BEGIN IMMEDIATE.
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # noqa: ANN001 - DB-API connection
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        for pragma in SQLITE_PRAGMAS:
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):  # noqa: ANN001 - SQLAlchemy Connection
        # Straight to the driver: a BEGIN needs none of SQLAlchemy's statement handling, and this
        # runs once per transaction on the participants' hot path.
        mode = "IMMEDIATE" if conn.get_execution_options().get("hai_write") else "DEFERRED"
        conn.connection.driver_connection.execute(f"BEGIN {mode}")


def create_db_engine(url: str) -> Engine:
    """Build an engine for ``url`` with the project's connection settings (no caching)."""
    if is_sqlite(url):
        database = make_url(url).database
        on_disk = bool(database) and database != ":memory:"
        if on_disk and not Path(database).parent.exists():
            private_dir(Path(database).parent)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30},
            pool_size=10, max_overflow=60, pool_timeout=60,
        )
        _install_sqlite_hooks(engine)
        if on_disk:
            # The file appears on the first connection; its -wal and -shm copy its mode.
            event.listen(engine, "connect", lambda *_: private_sqlite_file(database))
        return engine
    engine = create_engine(url, pool_size=10, max_overflow=60, pool_timeout=60)
    _ping_when_idle(engine)
    return engine


PING_AFTER_IDLE_S = 1.0


def _ping_when_idle(engine: Engine) -> None:
    """Test a pooled connection before use only when it has sat unused for a while.

    SQLAlchemy's ``pool_pre_ping`` pings on every checkout: a round trip for each of a
    participant's steps, about a tenth of a step's time on PostgreSQL under load. A connection
    that a server restart or an idle timeout has closed has been idle for longer than the restart
    took, so pinging only those still finds every dead one (SQLAlchemy's documented pessimistic
    recipe: a failed ping raises ``DisconnectionError`` and the pool takes a fresh connection).
    """

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn, record):  # noqa: ANN001 - DB-API connection, pool record
        record.info["hai_idle_since"] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn, record, _proxy):  # noqa: ANN001 - DB-API connection, pool record, proxy
        idle_since = record.info.get("hai_idle_since")
        if idle_since is None or time.monotonic() - idle_since < PING_AFTER_IDLE_S:
            return
        try:
            with dbapi_conn.cursor() as cursor:
                cursor.execute("SELECT 1")
            dbapi_conn.rollback()
        except Exception as exc:  # noqa: BLE001 - any failure means the connection is gone
            raise exc_module.DisconnectionError(f"pooled connection failed its ping: {exc}") from exc


def get_engine(url: str | None = None) -> Engine:
    """The process-wide engine for ``url`` (default: the configured database)."""
    url = url or get_settings().resolved_database_url
    with _LOCK:
        engine = _ENGINES.get(url)
        if engine is None:
            engine = _ENGINES[url] = create_db_engine(url)
        return engine


def dispose_engines() -> None:
    """Close every pooled connection (tests and benchmarks switch databases)."""
    with _LOCK:
        for engine in _ENGINES.values():
            engine.dispose()
        _ENGINES.clear()
        _WRITERS.clear()


@contextmanager
def read_session(engine: Engine | None = None) -> Iterator[Session]:
    """A session for reads; objects stay usable after it closes."""
    with Session(engine or get_engine(), expire_on_commit=False) as session:
        yield session


class _WriteGate:
    """At most ``permits`` write transactions of this process at once, admitted in arrival order.

    Without it, SQLite writers that find the database locked sleep in SQLite's busy handler
    (polls of 1-100 ms), so the lock often sits free while they sleep and a thread that has just
    committed takes it again: waits of seconds for the unlucky ones. Here the oldest waiter gets
    the slot the moment it frees (writers of other processes still queue through busy_timeout).
    Re-entrant within a thread, so a nested write transaction behaves as before.
    """

    def __init__(self, permits: int) -> None:
        self._free = permits
        self._mutex = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()
        self._local = threading.local()

    def __enter__(self) -> None:
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth:
            return
        with self._mutex:
            if self._free > 0 and not self._waiters:
                self._free -= 1
                return
            baton = threading.Lock()
            baton.acquire()
            self._waiters.append(baton)
        baton.acquire()  # released by __exit__ of the holder: the slot passes straight to us

    def __exit__(self, *exc: object) -> None:
        self._local.depth -= 1
        if self._local.depth:
            return
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1


def _gate_for(engine: Engine) -> _WriteGate | None:
    # SQLite has one writer anyway; on PostgreSQL a few writers keep the database busy while the
    # rest wait without competing for the GIL (HAI_DB_WRITE_CONCURRENCY; 0 turns the gate off).
    # Keyed by URL: two engines on one SQLite file share its single writer.
    permits = 1 if engine.dialect.name == "sqlite" else get_settings().db_write_concurrency
    if permits <= 0:
        return None
    key = str(engine.url)
    with _LOCK:
        gate = _GATES.get(key)
        if gate is None:
            gate = _GATES[key] = _WriteGate(permits)
        return gate


def write_gate_and_engine(engine: Engine) -> tuple[_WriteGate | None, Engine]:
    """The write gate of ``engine`` and the engine with the write option set, found once per engine.

    A participant's every step opens a write transaction, and rendering the URL (the gate's key)
    or building an option engine each time (it copies the engine's dispatch) was a noticeable
    share of its CPU time.
    """
    found = _WRITERS.get(engine)
    if found is None:
        found = _WRITERS[engine] = (_gate_for(engine), engine.execution_options(hai_write=True))
    return found


@contextmanager
def write_transaction(engine: Engine | None = None) -> Iterator[Session]:
    """One write transaction: commits on success, rolls back entirely on any exception."""
    gate, writer = write_gate_and_engine(engine or get_engine())
    with gate or nullcontext(), Session(writer, expire_on_commit=False) as session:
        with session.begin():
            yield session
