"""Alembic migrations match the models (`alembic check`) and go up and down cleanly."""

from sqlalchemy import inspect

from engines.platform import migrate
from engines.platform.db import get_engine
from engines.platform.scratch import scratch_database

TABLES = {"user", "loginsession", "study", "participant", "stepresponse", "stepattempt", "job"}


def test_alembic_check_finds_no_drift(any_db):
    migrate.check(any_db)


def test_upgrade_and_downgrade_round_trip(tmp_path):
    with scratch_database(None, migrated=False) as url:
        migrate.upgrade(url)
        assert TABLES <= set(inspect(get_engine(url)).get_table_names())
        migrate.downgrade(url, "base")
        assert not TABLES & set(inspect(get_engine(url)).get_table_names())
