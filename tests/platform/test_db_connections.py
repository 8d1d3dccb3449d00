"""Pooled PostgreSQL connections: one the server closed is found and replaced before a request uses it.

The pool pings a connection only when it has sat idle (``db.PING_AFTER_IDLE_S``), not on every
checkout; these tests close the server side of a pooled connection, as a database restart does.
"""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from engines.platform import db
from tests.conftest import PG_URL

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_engine():
    if not PG_URL:
        pytest.skip("HAI_TEST_DATABASE_URL is not set")
    engine = db.create_db_engine(PG_URL)
    yield engine
    engine.dispose()


def backend_pid(engine) -> int:
    with db.read_session(engine) as session:
        return session.connection().execute(text("SELECT pg_backend_pid()")).scalar_one()


def close_from_the_server(pid: int) -> None:
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            assert conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid}).scalar_one()
    finally:
        admin.dispose()


def test_an_idle_connection_closed_by_the_server_is_replaced_without_an_error(pg_engine, monkeypatch):
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 0.0)
    first = backend_pid(pg_engine)
    close_from_the_server(first)
    second = backend_pid(pg_engine)  # would raise if the dead connection were handed out
    assert second != first
    with db.write_transaction(pg_engine) as session:
        assert session.connection().execute(text("SELECT 1")).scalar_one() == 1


def test_a_connection_used_moments_ago_is_not_pinged_so_a_dead_one_fails_once(pg_engine, monkeypatch):
    # The ping is what saves the request above: without it (every connection counts as fresh)
    # the dead connection reaches the request, which fails, and the pool then starts afresh.
    monkeypatch.setattr(db, "PING_AFTER_IDLE_S", 3600.0)
    close_from_the_server(backend_pid(pg_engine))
    with pytest.raises(OperationalError):
        backend_pid(pg_engine)
    assert backend_pid(pg_engine) > 0
