"""Budget scaling: both agents over a set of questions at several step budgets.

The paper's claims at small scale, on the synthetic benchmark: the gated, decoupled agent has
higher grounded accuracy and a lower misaligned-correct rate than the coupled baseline, and its
accuracy rises with the step budget. A sweep writes one trajectories file per (agent, budget),
``<agent>-steps<S>.jsonl``, and ``summary.json`` with the metrics of each and the claims checked.
A trajectory names its video relative to the run file's folder when the video lies under that
folder's parent (the shipped demo's ``runs/`` beside its videos), so that the files keep playing
wherever the folder is copied; other videos keep their absolute path.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from engines.platform.config_schema import check_fields, cli_type
from engines.platform.fanout import map_cells
from engines.video.agent import AGENTS, AgentConfig, run_all
from engines.video.metrics import summarise, with_metrics
from engines.video.questions import Question
from engines.video.trajectory import Trajectory, write_jsonl


def step_budgets(text: str) -> tuple[int, ...]:
    """``"2,4,8"`` -> (2, 4, 8): the command line's form of ``SweepConfig.budgets``."""
    try:
        return tuple(int(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"budgets are step counts joined by commas, e.g. 2,4,8 (got {text!r})") from None


@dataclass(frozen=True)
class SweepConfig:
    """A sweep's grid: each agent at each step budget. Each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``sweep`` command's option and the ``video.sweep`` job's parameter."""

    budgets: tuple[int, ...] = field(default=(2, 4, 8), metadata={
        "help": "step budgets, e.g. 2,4,8", "min_length": 1, "max_length": 6,
        "cli": {"type": cli_type(step_budgets)}})
    agents: tuple[str, ...] = field(default=AGENTS, metadata={"cli": False, "job": False})
    max_frames: int = field(default=48, metadata={"help": "frames one inspection may look at", "min": 1, "max": 512})
    search: str = field(default="bm25", metadata={"cli": False, "job": False})

    def __post_init__(self) -> None:
        if not self.budgets or any(not 1 <= b <= 64 for b in self.budgets):
            raise ValueError(f"budgets must be step counts from 1 to 64, got {self.budgets}")
        check_fields(self)
        unknown = [a for a in self.agents if a not in AGENTS]
        if unknown or not self.agents:
            raise ValueError(f"agents must be some of {', '.join(AGENTS)}, got {self.agents}")


def run_file(folder: Path, agent: str, budget: int) -> Path:
    return folder / f"{agent}-steps{budget}.jsonl"


def portable(trajectory: Trajectory, folder: Path) -> Trajectory:
    """``trajectory`` with its ``video_path`` relative to ``folder`` (where its run file is written)
    when the video lies under the folder's parent; otherwise unchanged."""
    video, home = Path(trajectory.video_path).resolve(), folder.resolve()
    if not video.is_relative_to(home.parent):
        return trajectory
    return replace(trajectory, video_path=os.path.relpath(video, home))


def claims(results: dict[str, dict[int, dict]]) -> dict:
    """The paper's three claims checked on a sweep's summaries (None where an agent is missing)."""
    gated, coupled = results.get("gated"), results.get("coupled")
    out: dict = {}
    if gated and coupled:
        top = max(set(gated) & set(coupled))
        out["budget_compared"] = top
        out["gated_grounded_accuracy_higher"] = gated[top]["grounded_accuracy"] > coupled[top]["grounded_accuracy"]
        out["gated_misaligned_correct_lower"] = (gated[top]["misaligned_correct_rate"]
                                                 < coupled[top]["misaligned_correct_rate"])
    if gated and len(gated) > 1:
        budgets = sorted(gated)
        accuracies = [gated[b]["accuracy"] for b in budgets]
        out["gated_accuracy_by_budget"] = dict(zip(budgets, accuracies, strict=True))
        out["gated_accuracy_rises_with_budget"] = accuracies[-1] > accuracies[0] and all(
            later >= earlier - 1e-9 for earlier, later in zip(accuracies, accuracies[1:], strict=False))
    return out


@dataclass(frozen=True)
class _VideoOf:
    """A question's video file from a table: ``video_for`` resolved once, in the sweep's process, so the
    cells carry the table instead of the caller's function (often a lambda, which ``pickle`` refuses)."""

    paths: dict[Question, str]

    def __call__(self, question: Question) -> str:
        return self.paths[question]


def _run_cell(questions: list[Question], video_for: Callable[[Question], str], roles_for: Callable[[str], object],
              max_frames: int, cell: tuple[str, int]) -> list[Trajectory]:
    """One cell of the sweep: every question answered by ``agent`` at ``budget`` steps, with its metrics.

    Module-level, so the cells can run in other processes or on a Ray cluster (``map_cells``).
    """
    agent, budget = cell
    config = AgentConfig(agent=agent, max_steps=budget, max_frames=max_frames)
    return [with_metrics(t) for t in run_all(questions, video_for, roles_for(agent), config)]


def run_sweep(questions: list[Question], video_for: Callable[[Question], str], roles_for: Callable[[str], object],
              config: SweepConfig, out: Path, progress: Callable[[int, int, str], None] | None = None) -> dict:
    """Run every agent at every budget; ``roles_for(agent)`` gives that agent's roles. Writes the run
    files and summary.json into ``out``; returns the summary.

    The (agent, budget) cells fan out (``engines.platform.fanout.map_cells``): Ray tasks when jobs
    run on Ray, ``HAI_FANOUT_WORKERS`` local processes otherwise; ``progress(done, total, label)``
    counts questions as each cell finishes. A cell's trajectories depend on its agent, budget and
    questions alone, so the summary is the serial one whichever way they ran.
    """
    out.mkdir(parents=True, exist_ok=True)
    cells = [(agent, budget) for agent in config.agents for budget in config.budgets]
    total = len(cells) * len(questions)
    videos = _VideoOf({q: video_for(q) for q in questions})
    # Each video's index is built once, here, before the cells start: cells running at once would
    # each build it and write the same cache file beside the video.
    for agent in config.agents:
        roles = roles_for(agent)
        for path in dict.fromkeys(videos.paths.values()):
            roles.retriever_for(path)

    def finished(index: int, done: int) -> None:
        if progress is not None:
            agent, budget = cells[index]
            progress(done * len(questions), total, f"{agent} agent, {budget} steps")

    runs = map_cells(functools.partial(_run_cell, questions, videos, roles_for, config.max_frames), cells,
                     on_done=finished)
    results: dict[str, dict[int, dict]] = {}
    for (agent, budget), trajectories in zip(cells, runs, strict=True):
        write_jsonl([portable(t, out) for t in trajectories], run_file(out, agent, budget))
        results.setdefault(agent, {})[budget] = summarise(trajectories)
    summary = {"config": asdict(config), "questions": len(questions),
               "results": {agent: {str(b): s for b, s in by.items()} for agent, by in results.items()},
               "claims": claims(results)}
    partial = out / "summary.json.partial"
    partial.write_text(json.dumps(summary, indent=1, default=str))
    os.replace(partial, out / "summary.json")
    return summary
