"""An area's jobs as a table for its page: what each does (the area says), status, progress, message."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

COLUMNS = ["id", "job", "status", "progress", "message", "created"]


def jobs_frame(jobs: list, describe: Callable[[object], str]) -> pd.DataFrame:
    """One row per job; ``describe(job)`` says in a few words what the job does."""
    return pd.DataFrame([{"id": j.id, "job": describe(j), "status": j.status, "progress": j.progress,
                          "message": j.message, "created": j.created_at} for j in jobs], columns=COLUMNS)
