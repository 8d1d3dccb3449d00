"""Throw-away databases for tests and benchmarks: a temp SQLite file, or a fresh PostgreSQL schema;
and, for test suites, PostgreSQL schemas emptied and lent again (:class:`RecycledSchemas`)."""

from __future__ import annotations

import atexit
import secrets
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError

from engines.platform import migrate
from engines.platform.db import get_engine


@contextmanager
def scratch_database(base_url: str | None = None, *, migrated: bool = True) -> Iterator[str]:
    """Yield the URL of an empty database, removed afterwards.

    ``base_url`` None or SQLite: a new file in a temp folder. PostgreSQL: a new schema in that
    database, selected through ``search_path`` in the returned URL, dropped on exit.
    """
    if not base_url or base_url.startswith("sqlite"):
        with tempfile.TemporaryDirectory(prefix="hai-") as folder:
            url = f"sqlite:///{(Path(folder) / 'scratch.db').as_posix()}"
            if migrated:
                migrate.upgrade(url)
            try:
                yield url
            finally:
                get_engine(url).dispose()
        return
    schema, url = _create_schema(base_url)
    try:
        if migrated:
            migrate.upgrade(url)
        yield url
    finally:
        get_engine(url).dispose()
        _drop_schema(base_url, schema)


def _create_schema(base_url: str) -> tuple[str, str]:
    """A new, empty schema in ``base_url``'s database: its name, and the URL that selects it
    (through ``search_path``)."""
    schema = f"hai_scratch_{secrets.token_hex(6)}"
    _administer(base_url, f'CREATE SCHEMA "{schema}"')
    separator = "&" if "?" in base_url else "?"
    return schema, f"{base_url}{separator}options={quote(f'-csearch_path={schema}')}"


def _drop_schema(base_url: str, schema: str) -> None:
    _administer(base_url, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def _administer(base_url: str, statement: str) -> None:
    """Run one statement outside a transaction (schemas are made and dropped at once)."""
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()


# ---------------------------------------------------------------- recycled PostgreSQL schemas (test suites)

# What a schema's structure is: its columns, indexes, constraints and migration revision. A schema
# whose fingerprint changed while in use (a test altered it) is dropped instead of reused.
_FINGERPRINT = text(
    """
    SELECT md5(coalesce(string_agg(part, ';' ORDER BY part), '')) FROM (
      SELECT 'c:' || table_name || '.' || column_name || ':' || data_type || ':' || is_nullable
             || ':' || coalesce(column_default, '') AS part
        FROM information_schema.columns WHERE table_schema = current_schema()
      UNION ALL SELECT 'i:' || indexname || ':' || indexdef FROM pg_indexes WHERE schemaname = current_schema()
      UNION ALL SELECT 'k:' || conname || ':' || pg_get_constraintdef(oid) FROM pg_constraint
        WHERE connamespace = current_schema()::regnamespace
      UNION ALL SELECT 'v:' || version_num FROM alembic_version
    ) AS parts
    """
)
_TABLES = text(
    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename <> 'alembic_version'"
)


@dataclass
class _PooledSchema:
    name: str
    url: str
    fingerprint: str


class RecycledSchemas:
    """Migrated PostgreSQL schemas lent one at a time and emptied between borrowers.

    Creating and migrating a schema costs 0.2-0.5 s; emptying one (``TRUNCATE ... RESTART
    IDENTITY``) a few milliseconds, and the borrower sees what a fresh schema would show: every
    table empty, every identity starting at 1, the same migration revision. A schema comes back
    to the pool only when its structure is what it was lent with and nobody still holds a lock on
    it; otherwise it is dropped. The schemas left in the pool are dropped when the process ends.
    """

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self._free: list[_PooledSchema] = []
        self._lock = threading.Lock()
        atexit.register(self.close)

    @contextmanager
    def borrow(self) -> Iterator[str]:
        """Yield the URL of an empty, migrated schema; it goes back to the pool (or is dropped) after."""
        with self._lock:
            schema = self._free.pop() if self._free else None
        if schema is None:
            name, url = _create_schema(self.base_url)
            migrate.upgrade(url)
            schema = _PooledSchema(name, url, _fingerprint(url))
        try:
            yield schema.url
        finally:
            get_engine(schema.url).dispose()
            if _emptied_unchanged(schema):
                with self._lock:
                    self._free.append(schema)
            else:
                _drop_schema(self.base_url, schema.name)

    def close(self) -> None:
        with self._lock:
            free, self._free = self._free, []
        for schema in free:
            get_engine(schema.url).dispose()
            _drop_schema(self.base_url, schema.name)


def _fingerprint(url: str) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(_FINGERPRINT).scalar_one()
    finally:
        engine.dispose()


def _emptied_unchanged(schema: _PooledSchema) -> bool:
    """Empty the schema's tables if its structure is as lent; False when it is not (or is locked)."""
    engine = create_engine(schema.url)
    try:
        with engine.begin() as conn:
            # A connection still inside a transaction on these tables would make TRUNCATE wait.
            conn.execute(text("SET LOCAL lock_timeout = '2s'"))
            if conn.execute(_FINGERPRINT).scalar_one() != schema.fingerprint:
                return False
            tables = conn.execute(_TABLES).scalars().all()
            if tables:
                listed = ", ".join(f'"{name}"' for name in tables)
                conn.execute(text(f"TRUNCATE {listed} RESTART IDENTITY CASCADE"))
        return True
    except SQLAlchemyError:
        return False
    finally:
        engine.dispose()
