"""Alembic environment: migrate the database named by HAI_DATABASE_URL (or the config's URL)."""

from __future__ import annotations

from alembic import context

from engines.platform.db import create_db_engine
from engines.platform.models import metadata, register_all_tables
from engines.platform.settings import get_settings

register_all_tables()

config = context.config
url = config.attributes.get("database_url") or get_settings().resolved_database_url


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=metadata, literal_binds=True, render_as_batch=True,
                      user_module_prefix="sqlmodel.sql.sqltypes.")
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is not None:
        _run(connectable)
        return
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            _run(connection)
    finally:
        engine.dispose()


def _run(connection) -> None:  # noqa: ANN001 - SQLAlchemy Connection
    # render_as_batch: SQLite cannot ALTER most things in place; batch mode copies the table.
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True,
                      compare_type=True, user_module_prefix="sqlmodel.sql.sqltypes.")
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
