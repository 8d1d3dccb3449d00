"""Files the service writes are private to the user it runs as.

The SQLite database and its WAL hold password hashes, participant ids and answers; job folders
and exports hold results. Under the usual umask (022) they would be readable by every account
on a shared lab server. ``make_private`` sets the process umask to 077 and closes the data
directory; ``private_sqlite_file`` tightens a database file that already exists (SQLite gives
its -wal and -shm files the mode of the database file).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by this user only; tighten it if it exists."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    if stat.S_IMODE(path.stat().st_mode) != PRIVATE_DIR:
        path.chmod(PRIVATE_DIR)
    return path


def private_sqlite_file(database: str | Path) -> None:
    """Make an SQLite database file and its -wal/-shm companions 0600, where they exist."""
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{database}{suffix}")
        if path.is_file() and stat.S_IMODE(path.stat().st_mode) != PRIVATE_FILE:
            path.chmod(PRIVATE_FILE)


def make_private(data_dir: Path) -> Path:
    """For a service process: files and folders created from now on are private (umask 077), and
    the data directory is closed to other users."""
    os.umask(0o077)
    return private_dir(data_dir)
