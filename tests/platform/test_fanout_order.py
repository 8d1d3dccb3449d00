"""A fanned-out sweep returns its cells in grid order, whatever order they finished in."""

from __future__ import annotations

import pytest

from engines.platform import settings
from engines.platform.fanout import map_cells
from tests.helpers import last_cell_first


@pytest.fixture
def local(monkeypatch):
    monkeypatch.setenv("HAI_JOB_EXECUTOR", "local")
    settings.reset_settings()
    yield
    settings.reset_settings()


def test_cells_run_in_processes_come_back_in_grid_order(local, tmp_path):
    cells = [(value, str(tmp_path), 4) for value in range(5)]
    finished: list[int] = []
    results = map_cells(last_cell_first, cells, workers=5, on_done=lambda index, done: finished.append(index))
    assert results == [0, 1, 4, 9, 16]  # value squared, cell by cell
    assert finished[0] == 4 and sorted(finished) == [0, 1, 2, 3, 4]  # the last cell finished first


def test_cells_run_in_turn_come_back_in_grid_order(local, tmp_path):
    # In one process the last cell cannot finish first: the others must not wait for it.
    cells = [(4, str(tmp_path), 4)] + [(value, str(tmp_path), 4) for value in range(4)]
    assert map_cells(last_cell_first, cells, workers=1) == [16, 0, 1, 4, 9]
