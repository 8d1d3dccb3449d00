"""Background jobs of the collaboration engine: ``collab.simulate`` and ``collab.sweep``.

Each job is the command line's ``simulate`` / ``sweep`` run in the job queue
(``engines.platform.jobqueue``): the parameters mirror the main CLI options, with small defaults
so a job started from the dashboard finishes in seconds; the full JSON result (the same object
``--out`` writes) goes to ``result.json`` in the job's folder, and the job's own result is a
compact summary with ``result_path``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pydantic import BaseModel, Field, model_validator

from engines.collab.simulate import SimulationConfig, simulate
from engines.collab.sweep import SweepConfig, run_sweep
from engines.platform.jobqueue import JobContext, register_job

RESULT_FILE = "result.json"


class _SimulationParams(BaseModel):
    """Options shared by both jobs (the CLI's ``add_common_arguments``), small defaults."""

    schedule: str = Field(default="drift", title="Shift schedule over t")
    human: str = Field(default="parametric", title="Simulated human model")
    switch_at: float = Field(default=0.5, gt=0, lt=1, title="Fraction of T where switches happen")
    strength: float = Field(default=1.0, ge=0, title="Size of the schedule's shift")
    eta_harm: float = Field(default=0.05, ge=0, title="Step size of the harm threshold")
    eta_comp: float = Field(default=0.05, ge=0, title="Step size of the complementarity threshold")
    conditional: bool = Field(default=False, title="Conditional variant (update when the rule fires)")
    rounds: int = Field(default=3, ge=1, le=10, title="Maximum rounds per interaction")
    T: int = Field(default=5_000, ge=10, le=2_000_000, title="Interactions")
    n_calibration: int = Field(default=500, ge=10, le=100_000, title="Calibration batch size")
    seed: int = Field(default=0, title="Seed")
    ai: str = Field(default="synthetic", title="AI scores: synthetic or cnn")
    # Registered rule names and their parameters (engines.collab.rules); never code.
    protect_rule: str = Field(default="human_holds", title="Harm rule: labels to protect")
    protect_params: dict = Field(default_factory=dict, title="Parameters of the harm rule")
    supply_rule: str = Field(default="human_lacks", title="Complementarity rule: labels to supply")
    supply_params: dict = Field(default_factory=dict, title="Parameters of the complementarity rule")

    def base_config(self, **overrides) -> SimulationConfig:
        """The ``SimulationConfig`` these parameters describe (raises ValueError with the reason)."""
        fields = set(SimulationConfig.__dataclass_fields__)
        values = {k: v for k, v in self.model_dump().items() if k in fields}
        values.update(overrides)
        return SimulationConfig(**values)


class SimulateParams(_SimulationParams):
    alpha_harm: float = Field(default=0.05, gt=0, lt=1, title="Target counterfactual-harm rate")
    alpha_comp: float = Field(default=0.05, gt=0, lt=1, title="Target complementarity-failure rate")
    with_fixed: bool = Field(default=True, title="Also run the fixed-threshold baseline")

    @model_validator(mode="after")
    def _valid_config(self) -> SimulateParams:
        self.base_config()  # a ValueError (unknown schedule, ...) becomes a validation error
        return self


class SweepParams(_SimulationParams):
    alpha_harm_grid: list[float] = Field(default=[0.01, 0.02, 0.05], min_length=1, max_length=12,
                                         title="Harm targets (increasing)")
    alpha_comp_grid: list[float] = Field(default=[0.02, 0.1], min_length=1, max_length=12,
                                         title="Complementarity targets (increasing)")

    @model_validator(mode="after")
    def _valid_config(self) -> SweepParams:
        self.sweep_config()
        return self

    def sweep_config(self) -> SweepConfig:
        return SweepConfig(base=self.base_config(with_fixed=False), alpha_harm_grid=tuple(self.alpha_harm_grid),
                           alpha_comp_grid=tuple(self.alpha_comp_grid))


def _write(ctx: JobContext, result: dict) -> Path:
    path = ctx.result_dir / RESULT_FILE
    path.write_text(json.dumps(result, indent=2) + "\n")
    ctx.log(f"wrote {path}")
    return path


@register_job("collab.simulate", title="Collaboration: simulate interactions (online vs fixed)",
              params=SimulateParams)
def simulate_job(ctx: JobContext, **params) -> dict:
    """Run T simulated interactions under the online controller and the fixed baseline; writes result.json."""
    config = SimulateParams(**params).base_config()
    ctx.progress(0.0, f"simulating {config.T:,} interactions, schedule {config.schedule}")
    result = simulate(config, on_progress=lambda f: ctx.progress(0.95 * f))
    ctx.progress(0.97, "writing the result")
    data = result.to_dict()
    path = _write(ctx, data)
    ctx.log(data["summary"])
    return {
        "result_path": str(path), "kind": "simulate", "schedule": config.schedule, "T": config.T,
        "violation_rate": {"online": result.online.violation_rate,
                           "fixed": result.fixed.violation_rate if result.fixed else None},
        "within_bound": result.online.within_bound,
        "accuracy": {"human_alone": result.human_alone_accuracy, "ai_alone": result.ai_alone_accuracy,
                     "online": result.online.accuracy, "fixed": result.fixed.accuracy if result.fixed else None},
        "wall_s": result.wall_s,
    }


@register_job("collab.sweep", title="Collaboration: final accuracy over a grid of targets", params=SweepParams)
def sweep_job(ctx: JobContext, **params) -> dict:
    """Rerun the simulation for every (alpha_harm, alpha_comp) in the grid; writes result.json."""
    config = SweepParams(**params).sweep_config()
    cells = len(config.alpha_harm_grid) * len(config.alpha_comp_grid)
    ctx.progress(0.0, f"{cells} cells of {config.base.T:,} interactions")
    result = run_sweep(config, on_progress=lambda f, message: ctx.progress(0.95 * f, message))
    ctx.progress(0.97, "writing the result")
    data = result.to_dict()
    path = _write(ctx, data)
    ctx.log(data["summary"])
    return {"result_path": str(path), "kind": "sweep", "schedule": config.base.schedule, "T": config.base.T,
            "cells": cells, "accuracy": result.accuracy, "trends": data["trends"], "wall_s": result.wall_s,
            "base": {k: v for k, v in dataclasses.asdict(config.base).items() if k in ("schedule", "human", "T")}}
