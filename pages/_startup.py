"""Start-up of every app process: files private, the schema migrated, the job executor started."""

from __future__ import annotations

import streamlit as st

from engines.platform import migrate
from engines.platform.jobqueue import start_executor
from engines.platform.private_files import make_private
from engines.platform.settings import get_settings


@st.cache_resource(show_spinner="Preparing the database...")
def _boot(database_url: str) -> bool:
    # Once per process and database: files from now on private to this user, the schema at the
    # latest migration, and the local job executor started (so queued jobs run even if no one
    # keeps a page open).
    make_private(get_settings().data_dir)
    migrate.upgrade(database_url)
    if get_settings().run_jobs_in_app:
        start_executor()
    return True


def boot() -> None:
    _boot(get_settings().resolved_database_url)
