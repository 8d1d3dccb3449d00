"""Final human accuracy over a grid of targets: ``python -m engines.collab sweep``.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with User-Specified
Requirements" (ICML 2026, arXiv:2602.17646), claim (2): tightening or loosening each target moves
final accuracy in a predictable, monotone direction (``docs/collab.md``, Method, "Baselines and
measurements", item 3). Every cell reruns ``simulate`` with the same seed (common random numbers:
same cases, same people, same draws), so differences between cells come from the targets alone.

    python -m engines.collab sweep --alpha-harm-grid 0.01,0.02,0.05,0.1 --alpha-comp-grid 0.02,0.05,0.1
    python -m engines.collab --json sweep --quick
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field

import numpy as np

from engines.collab.simulate import Drawn, SimulationConfig, draw, simulate
from engines.platform.config_schema import cli_type
from engines.platform.fanout import map_cells
from engines.platform.files import echo
from engines.platform.progress import Progress

DEFAULT_HARM_GRID = (0.01, 0.02, 0.05, 0.1, 0.2)
DEFAULT_COMP_GRID = (0.02, 0.05, 0.1, 0.15)
QUICK_HARM_GRID = (0.01, 0.02, 0.05)
QUICK_COMP_GRID = (0.02, 0.1)
# A job runs the --quick grid by default (a click on the Simulations page finishes in seconds).
JOB_DEFAULTS = {"alpha_harm_grid": QUICK_HARM_GRID, "alpha_comp_grid": QUICK_COMP_GRID}
MAX_GRID = 12  # values per axis a job may ask for


def parse_grid(text: str) -> tuple[float, ...]:
    """``"0.01, 0.02, 0.05"`` -> (0.01, 0.02, 0.05): the targets of one axis, as typed on a form or the command line.

    Raises:
        ValueError: a part that is not a number, with the text.
    """
    try:
        return tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"expected comma-separated numbers such as 0.01,0.05,0.1, got {echo(text)}") from None


def _grid_option(name: str, default: tuple[float, ...], quick: tuple[float, ...]) -> dict:
    """Metadata of a grid field (``engines.platform.config_schema``)."""
    return {"help": f"{name} targets (increasing)", "min_length": 1, "max_length": MAX_GRID,
            "cli": {"type": cli_type(parse_grid), "default": None,
                    "help": f"{name} targets (default {','.join(map(str, default))}; "
                            f"--quick: {','.join(map(str, quick))})"}}


@dataclass(frozen=True)
class SweepConfig:
    """A grid of (alpha_harm, alpha_comp) over one base simulation (its targets are ignored)."""

    base: SimulationConfig = field(default_factory=lambda: SimulationConfig(with_fixed=False, with_matched=False),
                                   metadata={"cli": False, "job": False})  # options and job fields of its own
    alpha_harm_grid: tuple[float, ...] = field(default=DEFAULT_HARM_GRID,
                                               metadata=_grid_option("harm", DEFAULT_HARM_GRID, QUICK_HARM_GRID))
    alpha_comp_grid: tuple[float, ...] = field(default=DEFAULT_COMP_GRID, metadata=_grid_option(
        "complementarity", DEFAULT_COMP_GRID, QUICK_COMP_GRID))

    def __post_init__(self):
        for name in ("alpha_harm_grid", "alpha_comp_grid"):
            grid = getattr(self, name)
            if not grid:
                raise ValueError(f"{name} is empty")
            if any(not 0.0 < a < 1.0 for a in grid):
                raise ValueError(f"{name} values must be in (0, 1), got {list(grid)}")
            if list(grid) != sorted(set(grid)):
                raise ValueError(f"{name} must be strictly increasing, got {list(grid)}")


def direction(values: list[float]) -> str:
    """"increasing", "decreasing", "constant" or "mixed" (non-strict monotonicity)."""
    diffs = np.diff(values)
    if len(diffs) == 0 or np.all(diffs == 0):
        return "constant"
    if np.all(diffs >= 0):
        return "increasing"
    if np.all(diffs <= 0):
        return "decreasing"
    return "mixed"


@dataclass
class SweepResult:
    """Per-cell online results; ``accuracy[i][j]`` is for alpha_harm_grid[i], alpha_comp_grid[j]."""

    config: SweepConfig
    cells: list[dict]
    accuracy: list[list[float]]
    human_alone_accuracy: float
    ai_alone_accuracy: float
    wall_s: float

    def trends(self) -> dict:
        """Direction of accuracy along each row (alpha_comp varies) and column (alpha_harm varies)."""
        acc = np.array(self.accuracy)
        return {
            "along_alpha_harm": {str(c): direction(acc[:, j].tolist())
                                 for j, c in enumerate(self.config.alpha_comp_grid)},
            "along_alpha_comp": {str(h): direction(acc[i, :].tolist())
                                 for i, h in enumerate(self.config.alpha_harm_grid)},
        }

    def to_dict(self) -> dict:
        return {
            "config": {"base": dataclasses.asdict(self.config.base),
                       "alpha_harm_grid": list(self.config.alpha_harm_grid),
                       "alpha_comp_grid": list(self.config.alpha_comp_grid)},
            "cells": self.cells,
            "accuracy": self.accuracy,
            "trends": self.trends(),
            "human_alone_accuracy": self.human_alone_accuracy,
            "ai_alone_accuracy": self.ai_alone_accuracy,
            "wall_s": self.wall_s,
            "summary": self.summary(),
        }

    def summary(self) -> str:
        c = self.config
        head = "alpha_harm \\ alpha_comp " + " ".join(f"{a:>7g}" for a in c.alpha_comp_grid)
        rows = [f"{h:>24g} " + " ".join(f"{a:7.4f}" for a in row) for h, row in zip(c.alpha_harm_grid, self.accuracy,
                                                                                    strict=True)]
        trends = self.trends()
        return "\n".join([f"final accuracy (online), T={c.base.T}, schedule={c.base.schedule}, "
                          f"human alone {self.human_alone_accuracy:.4f}, AI alone {self.ai_alone_accuracy:.4f}",
                          head, *rows,
                          f"along alpha_harm: {trends['along_alpha_harm']}",
                          f"along alpha_comp: {trends['along_alpha_comp']}"])


def _cell(base: SimulationConfig, drawn: Drawn, targets: tuple[float, float]) -> dict:
    """One cell of the grid: the base simulation at ``targets`` (alpha_harm, alpha_comp) on the shared draw.

    Module-level, so the cells can run in other processes or on a Ray cluster (``map_cells``).
    """
    alpha_harm, alpha_comp = targets
    result = simulate(dataclasses.replace(base, alpha_harm=alpha_harm, alpha_comp=alpha_comp), drawn=drawn)
    on = result.online
    return {"cell": {"alpha_harm": alpha_harm, "alpha_comp": alpha_comp, "accuracy": on.accuracy,
                     "violation_rate": on.violation_rate, "bound": on.bound, "within_bound": on.within_bound,
                     "mean_set_size": on.mean_set_size, "mean_rounds": on.mean_rounds},
            "wall_s": result.wall_s, "human_alone_accuracy": result.human_alone_accuracy,
            "ai_alone_accuracy": result.ai_alone_accuracy}


def run_sweep(config: SweepConfig, progress: Progress | None = None) -> SweepResult:
    """Simulate every cell of the grid; ``progress(done, cells, message)`` as cells finish.

    The cells fan out (``engines.platform.fanout.map_cells``): Ray tasks when jobs run on Ray,
    ``HAI_FANOUT_WORKERS`` local processes otherwise. Each cell depends on the shared draw and its
    targets alone, so the result is the serial one whichever way they ran.
    """
    grid = [(h, c) for h in config.alpha_harm_grid for c in config.alpha_comp_grid]
    drawn = draw(config.base)  # the cells differ only in their targets: one draw serves them all

    def finished(index: int, done: int) -> None:
        if progress is not None:
            alpha_harm, alpha_comp = grid[index]
            progress(done, len(grid), f"{done}/{len(grid)} cells done "
                                      f"(last: alpha_harm={alpha_harm:g}, alpha_comp={alpha_comp:g})")

    outcomes = map_cells(functools.partial(_cell, config.base, drawn), grid, on_done=finished)
    cells = [outcome["cell"] for outcome in outcomes]
    n_comp = len(config.alpha_comp_grid)
    accuracy = [[cell["accuracy"] for cell in cells[i:i + n_comp]] for i in range(0, len(cells), n_comp)]
    # Every cell plays the same draw, so any cell's human-alone and AI-alone accuracy is the sweep's.
    return SweepResult(config=config, cells=cells, accuracy=accuracy,
                       human_alone_accuracy=outcomes[-1]["human_alone_accuracy"],
                       ai_alone_accuracy=outcomes[-1]["ai_alone_accuracy"],
                       wall_s=round(sum(outcome["wall_s"] for outcome in outcomes), 3))
