"""Data files are private to the service's user: the database, its WAL, job folders."""

from __future__ import annotations

import os
import stat

import pytest

from engines.platform import db, migrate
from engines.platform.private_files import make_private


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def usual_umask():
    before = os.umask(0o022)  # what a login shell usually has: new files 0644, folders 0755
    yield
    os.umask(before)


def test_a_new_sqlite_database_its_wal_and_its_folder_are_private(tmp_path, usual_umask, use_database):
    data = tmp_path / "data"
    url = use_database(f"sqlite:///{data / 'hai_studio.db'}")
    migrate.upgrade(url)
    from engines.platform import auth

    auth.create_user("rhea", "correct horse", "researcher")  # a write: the WAL exists now
    assert _mode(data) == 0o700
    assert _mode(data / "hai_studio.db") == 0o600
    assert _mode(data / "hai_studio.db-wal") == 0o600
    db.get_engine(url).dispose()


def test_an_existing_world_readable_database_is_tightened_on_connect(tmp_path, usual_umask, use_database):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    url = use_database(f"sqlite:///{data / 'hai_studio.db'}")
    migrate.upgrade(url)
    db.dispose_engines()
    os.chmod(data / "hai_studio.db", 0o644)  # as an older version left it
    from engines.platform import auth

    auth.list_users()
    assert _mode(data / "hai_studio.db") == 0o600
    db.get_engine(url).dispose()


def test_a_service_process_makes_its_files_private(tmp_path, usual_umask):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    make_private(data)
    try:
        assert _mode(data) == 0o700
        (data / "jobs").mkdir()
        (data / "export.csv").write_text("x")
        assert _mode(data / "jobs") == 0o700
        assert _mode(data / "export.csv") == 0o600
    finally:
        os.umask(0o022)


def test_job_folders_are_inside_a_private_data_directory(sqlite_db, usual_umask):
    from engines.platform.jobqueue import JobContext
    from engines.platform.settings import get_settings

    context = JobContext.__new__(JobContext)
    context.job_id = 7
    folder = context.result_dir
    assert folder == get_settings().data_dir / "jobs" / "7"
    assert _mode(get_settings().data_dir) == 0o700
