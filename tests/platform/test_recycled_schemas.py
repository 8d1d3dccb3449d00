"""The test suite's PostgreSQL schemas, lent again after each test: what the next test gets must be
what a fresh schema would give it."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from engines.platform.scratch import RecycledSchemas
from tests.conftest import PG_URL

pytestmark = pytest.mark.postgres


@pytest.fixture
def pool():
    if not PG_URL:
        pytest.skip("HAI_TEST_DATABASE_URL is not set")
    schemas = RecycledSchemas(PG_URL)
    yield schemas
    schemas.close()


def _run(url: str, *statements: str) -> list:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            results = [conn.execute(text(statement)) for statement in statements]
            return results[-1].all() if results[-1].returns_rows else []
    finally:
        engine.dispose()


def _schemas() -> set[str]:
    return {row[0] for row in _run(PG_URL, "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'hai_scratch_%'")}


def test_a_lent_schema_comes_back_empty_with_identities_from_one(pool):
    with pool.borrow() as url:
        _run(url, "INSERT INTO study (slug, protocol, title, is_open, config, created_at) "
                  "VALUES ('a', 'p', 't', true, '{}', now()), ('b', 'p', 't', true, '{}', now())")
        assert _run(url, "SELECT count(*) FROM study") == [(2,)]
    with pool.borrow() as again:
        assert again == url  # the same schema, lent again
        assert _run(again, "SELECT count(*) FROM study") == [(0,)]
        inserted = _run(again, "INSERT INTO study (slug, protocol, title, is_open, config, created_at) "
                               "VALUES ('c', 'p', 't', true, '{}', now()) RETURNING id")
        assert inserted == [(1,)]  # as in a fresh schema
        assert _run(again, "SELECT count(*) FROM alembic_version") == [(1,)]


def test_a_schema_whose_structure_changed_is_dropped_not_lent(pool):
    with pool.borrow() as url:
        _run(url, "ALTER TABLE job ADD COLUMN left_behind integer")
        altered = _run(url, "SELECT current_schema()")[0][0]
    assert altered not in _schemas()
    with pool.borrow() as fresh:
        assert fresh != url
        columns = _run(fresh, "SELECT column_name FROM information_schema.columns "
                              "WHERE table_schema = current_schema() AND table_name = 'job'")
        assert ("left_behind",) not in columns


def test_closing_the_pool_drops_its_schemas(pool):
    with pool.borrow() as url:
        name = _run(url, "SELECT current_schema()")[0][0]
    assert name in _schemas()
    pool.close()
    assert name not in _schemas()
