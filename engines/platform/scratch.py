"""Throw-away databases for tests and benchmarks: a temp SQLite file, or a fresh PostgreSQL schema."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from sqlalchemy import create_engine, text

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
    schema = f"hai_scratch_{secrets.token_hex(6)}"
    admin = create_engine(base_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    separator = "&" if "?" in base_url else "?"
    url = f"{base_url}{separator}options={quote(f'-csearch_path={schema}')}"
    try:
        if migrated:
            migrate.upgrade(url)
        yield url
    finally:
        get_engine(url).dispose()
        with admin.connect() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
