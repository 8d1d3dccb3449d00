"""Fixtures of the attribution tests: a data folder of the test's own."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.platform import settings


@pytest.fixture
def data_dir(monkeypatch, tmp_path) -> Path:
    """``HAI_DATA_DIR`` set to ``<tmp>/data`` for the test (the folder ``sqlite_db`` uses too)."""
    path = tmp_path / "data"
    monkeypatch.setenv("HAI_DATA_DIR", str(path))
    settings.reset_settings()
    yield path
    settings.reset_settings()
