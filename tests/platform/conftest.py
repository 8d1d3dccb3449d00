"""Fixtures shared by the platform tests."""

from __future__ import annotations

import pytest

from engines.platform import db
from tests.conftest import PG_URL, pg_schemas


@pytest.fixture
def pg_engine(use_database):
    """An engine of its own on a scratch PostgreSQL schema (skipped without a server), disposed after."""
    if not PG_URL:
        pytest.skip("HAI_TEST_DATABASE_URL is not set")
    with pg_schemas().borrow() as url:
        engine = db.create_db_engine(use_database(url))
        yield engine
        engine.dispose()
