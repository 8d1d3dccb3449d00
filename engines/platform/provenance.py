"""What produced a result: the code version and the configuration, recorded beside every export and job."""

from __future__ import annotations

import functools
import platform
import subprocess
import sys
from typing import Any

from engines.platform.settings import REPO_ROOT, get_settings

PACKAGE_VERSION = "0.1.0"


@functools.lru_cache(maxsize=1)
def code_version() -> str:
    """``git describe`` of the checkout (with ``-dirty`` for local edits), else the package version."""
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--tags"], cwd=REPO_ROOT,
            capture_output=True, text=True, timeout=5, check=True,
        )
        return f"{PACKAGE_VERSION}+{out.stdout.strip()}"
    except (OSError, subprocess.SubprocessError):
        return PACKAGE_VERSION


def run_record(**config: Any) -> dict[str, Any]:
    """A dictionary to store beside a result: code version, runtime and the given config."""
    settings = get_settings()
    url = settings.resolved_database_url
    return {
        "code_version": code_version(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "database": url.split("://", 1)[0],
        "config": config,
    }
