"""Background jobs of the collaboration engine: ``collab.simulate``, ``collab.sweep`` and ``collab.train_counter``.

Each job is the command line's ``simulate`` / ``sweep`` / ``train-counter`` run in the job queue
(``engines.platform.jobqueue``): the parameters mirror the main CLI options, with small defaults
so a job started from the Simulations page finishes in seconds (simulations) or about a minute
(training); the job's own result is a compact summary with ``result_path``.

The kind names are ``SIMULATE``, ``SWEEP`` and ``TRAIN_COUNTER``. The simulation jobs' parameters
are derived from ``SimulationConfig`` and ``SweepConfig`` (``engines.platform.config_schema``),
with the smaller defaults of ``simulate.JOB_DEFAULTS`` and ``sweep.JOB_DEFAULTS``;
``simulation_job_params`` builds them from a form's values.

- ``collab.simulate`` / ``collab.sweep``: the full JSON result (the same object ``--out``
  writes) goes to ``result.json`` in the job's folder. ``ai="cnn"`` uses the counting CNN's
  held-out scores: the shipped ones (``assets/collab/counter_scores.npz``) or, with
  ``counter_job_id``, those of a succeeded ``collab.train_counter`` job. No other file can be
  named: a job never reads a path it was given.
- ``collab.train_counter``: trains the CNN (``engines.collab.counter_training``) and writes
  ``counter.pt``, ``counter_report.json``, ``counter_scores.npz`` and two PNG plots into its
  own folder; the shipped files in ``assets/collab/`` are never touched.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from engines.collab.ai_sources import DEFAULT_AI_SCORES
from engines.collab.counter_config import JOB_DEFAULTS, QUICK, TrainConfig
from engines.collab.humans import HUMAN_PRESETS
from engines.collab.result_files import (
    CounterReportFile,
    ResultFileError,
    SimulationResultFile,
    SweepResultFile,
    load_result_file,
    write_result_file,
)
from engines.collab.simulate import JOB_DEFAULTS as SIMULATION_JOB_DEFAULTS
from engines.collab.simulate import SIMULATE_ONLY, SimulationConfig, calibration_size, simulate
from engines.collab.sweep import JOB_DEFAULTS as SWEEP_JOB_DEFAULTS
from engines.collab.sweep import SweepConfig, parse_grid, run_sweep
from engines.platform.config_schema import JobParams, job_model
from engines.platform.discovery import discover_all
from engines.platform.files import echo
from engines.platform.jobqueue import (
    JobContext,
    JobError,
    get_job,
    job_dir,
    job_result_file,
    list_jobs,
    register_job,
)
from engines.platform.models import Job, JobStatus
from engines.platform.progress import job_progress

SIMULATE = "collab.simulate"
SWEEP = "collab.sweep"
TRAIN_COUNTER = "collab.train_counter"
RESULT_FILE = "result.json"
COUNTER_STEM = "counter"  # the training job writes counter.pt, counter_report.json, counter_scores.npz
REPORT_FILE = f"{COUNTER_STEM}_report.json"
SCORES_FILE = f"{COUNTER_STEM}_scores.npz"


def counter_scores_path(job_id: int) -> Path:
    """The held-out scores file of a succeeded ``collab.train_counter`` job.

    Raises:
        ValueError: no such job, another kind of job, not (yet) succeeded, or its scores file is
            gone; the message says which.
    """
    try:
        job = get_job(job_id)
    except JobError:
        raise ValueError(f"counter_job_id {job_id}: there is no job #{job_id}") from None
    if job.kind != TRAIN_COUNTER:
        raise ValueError(f"counter_job_id {job_id}: job #{job_id} is a {job.kind} job, not {TRAIN_COUNTER}")
    if job.status != JobStatus.SUCCEEDED:
        raise ValueError(f"counter_job_id {job_id}: training job #{job_id} has status {echo(job.status)}; "
                         "only a succeeded training job's scores can be used")
    path = job_dir(job_id) / SCORES_FILE
    if not path.is_file():
        raise ValueError(f"counter_job_id {job_id}: training job #{job_id} has no {SCORES_FILE} in its folder")
    return path


class _SimulationParams(job_model(SimulationConfig, name="SimulationFields", exclude=SIMULATE_ONLY,
                                 defaults=SIMULATION_JOB_DEFAULTS)):
    """Options shared by both jobs: ``SimulationConfig``'s fields a job may set (no file path), small defaults."""

    counter_job_id: int | None = Field(default=None, ge=1,
                                       title="With ai='cnn': the succeeded collab.train_counter job whose scores "
                                             "to use (none: the shipped model's)")

    @field_validator("human")
    @classmethod
    def _parametric_human(cls, value: str) -> str:
        # A job carries no chat backend: LLM humans run from the command line (simulate --human llm).
        if value not in HUMAN_PRESETS:
            raise ValueError(f"human must be one of {sorted(HUMAN_PRESETS)} in a job (LLM humans: the command "
                             f"line, simulate --human llm), got {echo(value)}")
        return value

    def base_config(self, **overrides) -> SimulationConfig:
        """The ``SimulationConfig`` these parameters describe (raises ValueError with the reason)."""
        # Study modules register rules of their own (e.g. collab_shapes' near_count) when imported: the
        # worker process must know the same rules as the page that offered them.
        discover_all()
        fields = set(SimulationConfig.__dataclass_fields__)
        values = {k: v for k, v in self.model_dump().items() if k in fields}
        values["ai_scores"] = self.ai_scores_path()
        values.update(overrides)
        return SimulationConfig(**values)

    def ai_scores_path(self) -> str:
        """The scores file ``ai="cnn"`` reads: the shipped one, or the ``counter_job_id`` job's."""
        if self.counter_job_id is None:
            return DEFAULT_AI_SCORES
        if self.ai != "cnn":
            raise ValueError(f"counter_job_id {self.counter_job_id} needs ai='cnn' (got ai={echo(self.ai)})")
        return str(counter_scores_path(self.counter_job_id))


class SimulateParams(job_model(SimulationConfig, name="SimulateFields", base=_SimulationParams,
                               only=SIMULATE_ONLY)):
    """Parameters of a ``collab.simulate`` job: the shared options, the targets and the baselines to run."""

    @model_validator(mode="after")
    def _valid_config(self) -> SimulateParams:
        self.base_config()  # a ValueError (unknown schedule, ...) becomes a validation error
        return self


class SweepParams(job_model(SweepConfig, name="SweepFields", base=_SimulationParams,
                            defaults=SWEEP_JOB_DEFAULTS)):
    """Parameters of a ``collab.sweep`` job: the shared options and the two grids of targets."""

    @model_validator(mode="after")
    def _valid_config(self) -> SweepParams:
        self.sweep_config()
        return self

    def sweep_config(self) -> SweepConfig:
        return SweepConfig(base=self.base_config(with_fixed=False, with_matched=False), alpha_harm_grid=tuple(self.alpha_harm_grid),
                           alpha_comp_grid=tuple(self.alpha_comp_grid))


def simulation_job_params(kind: str, **values) -> dict:
    """The parameters of a ``collab.simulate`` or ``collab.sweep`` job from a form's values.

    ``values`` are job parameters by name: ``SimulationConfig``'s fields and ``counter_job_id``,
    the targets ``alpha_harm``/``alpha_comp`` (simulate) and the grids ``alpha_harm_grid``/
    ``alpha_comp_grid`` (sweep), as numbers or as text such as "0.01, 0.02, 0.05" (``parse_grid``).
    A form may hold both kinds' fields: those of the other kind are left out. Without
    ``n_calibration`` the pilot batch follows T (``simulate.calibration_size``). ``submit_job``
    validates the result.

    Raises:
        ValueError: an unknown kind, or a grid that is not numbers (the message quotes it).
    """
    models = {SIMULATE: SimulateParams, SWEEP: SweepParams}
    if kind not in models:
        raise ValueError(f"not a simulation job kind: {echo(kind)} (known: {', '.join(models)})")
    other = set().union(*(m.model_fields for k, m in models.items() if k != kind)) - set(models[kind].model_fields)
    params = {name: value for name, value in values.items() if name not in other}
    for name in ("alpha_harm_grid", "alpha_comp_grid"):
        if isinstance(params.get(name), str):
            params[name] = list(parse_grid(params[name]))
    if "T" in params and "n_calibration" not in params:
        params["n_calibration"] = calibration_size(params["T"])
    return params


def _write(ctx: JobContext, result: dict) -> Path:
    path = ctx.result_dir / RESULT_FILE
    write_result_file(result, path)
    ctx.log(f"wrote {path}")
    return path


@register_job(SIMULATE, title="Collaboration: simulate interactions (online vs fixed)",
              params=SimulateParams)
def simulate_job(ctx: JobContext, **params) -> dict:
    """Run T simulated interactions under the online controller and the fixed baseline; writes result.json."""
    config = SimulateParams(**params).base_config()
    ctx.progress(0.0, f"simulating {config.T:,} interactions, schedule {config.schedule}")
    result = simulate(config, progress=job_progress(ctx, 0.0, 0.95, prefix="simulating: ", unit="interactions"))
    ctx.progress(0.97, "writing the result")
    data = result.to_dict()
    path = _write(ctx, data)
    ctx.log(data["summary"])
    return {
        "result_path": str(path), "kind": "simulate", "schedule": config.schedule, "T": config.T,
        "ai": config.ai, "counter_job_id": params.get("counter_job_id"),
        "violation_rate": {"online": result.online.violation_rate,
                           "fixed": result.fixed.violation_rate if result.fixed else None},
        "within_bound": result.online.within_bound,
        "accuracy": {"human_alone": result.human_alone_accuracy, "ai_alone": result.ai_alone_accuracy,
                     "online": result.online.accuracy, "fixed": result.fixed.accuracy if result.fixed else None},
        "wall_s": result.wall_s,
    }


@register_job(SWEEP, title="Collaboration: final accuracy over a grid of targets", params=SweepParams)
def sweep_job(ctx: JobContext, **params) -> dict:
    """Rerun the simulation for every (alpha_harm, alpha_comp) in the grid; writes result.json."""
    config = SweepParams(**params).sweep_config()
    cells = len(config.alpha_harm_grid) * len(config.alpha_comp_grid)
    ctx.progress(0.0, f"{cells} cells of {config.base.T:,} interactions")
    result = run_sweep(config, progress=job_progress(ctx, 0.0, 0.95))
    ctx.progress(0.97, "writing the result")
    data = result.to_dict()
    path = _write(ctx, data)
    ctx.log(data["summary"])
    return {"result_path": str(path), "kind": "sweep", "schedule": config.base.schedule, "T": config.base.T,
            "ai": config.base.ai, "counter_job_id": params.get("counter_job_id"), "cells": cells, "accuracy": result.accuracy, "trends": data["trends"], "wall_s": result.wall_s,
            "base": {k: v for k, v in dataclasses.asdict(config.base).items() if k in ("schedule", "human", "T")}}


class _Quick(JobParams):
    quick: bool = Field(default=False, title="Tiny sizes (seconds; a useless model, for checks)")


def _quick_sizes(params: _Quick, values: dict) -> dict:
    return {**values, **QUICK} if params.quick else values  # as the command line's --quick


class TrainCounterParams(job_model(TrainConfig, name="TrainCounterFields", base=_Quick, defaults=JOB_DEFAULTS,
                                   adjust=_quick_sizes)):
    """Parameters of a ``collab.train_counter`` job: ``counter_config.TrainConfig``'s fields, as the
    ``train-counter`` command's options, with the job's smaller defaults (``JOB_DEFAULTS``: under a
    minute on 2 idle CPU cores, a weaker model than the shipped one). ``quick`` replaces the sizes by
    the command line's ``--quick`` ones: a useless model in seconds, to check the pipeline."""


def counter_summary(report: dict) -> dict:
    """Accuracy and ECE overall and per difficulty set of a training report (the job's result)."""
    metrics = report["metrics"]
    return {
        "overall": {k: metrics["overall"][k] for k in ("n", "accuracy", "ece")},
        "by_difficulty": {name: {k: m[k] for k in ("n", "accuracy", "ece")} for name, m in metrics.items()
                          if name != "overall" and not name.startswith("uncalibrated")},
        "temperature": report["temperature"], "n_parameters": report["n_parameters"],
    }


@register_job(TRAIN_COUNTER, title="Collaboration: train the shape-counting CNN", params=TrainCounterParams)
def train_counter_job(ctx: JobContext, **params) -> dict:
    """Train the counting CNN on generated images; writes its weights, report, held-out scores and plots to the job's folder."""
    from engines.collab import counter_training  # torch is imported in the job's process only

    p = TrainCounterParams(**params)
    config = p.config()
    folder = ctx.result_dir
    out = folder / f"{COUNTER_STEM}.pt"

    share = job_progress(ctx, 0.0, 0.95, prefix="training: ")

    def progress(done: float, total: float, message: str = "") -> None:
        if message:
            ctx.log(message)  # the epochs' losses stay in the job's log
        share(done, total, message)  # raises JobCancelled on a cancel request

    report = counter_training.train_counter(config, out, quick=p.quick, progress=progress)
    ctx.progress(0.96, "drawing the plots")
    try:
        plots = counter_training.write_plots(report, folder, stem=COUNTER_STEM)
    except ImportError as exc:  # matplotlib is optional: the report and scores are what matter
        plots = []
        ctx.log(f"no plots: {exc}")
    ctx.log(counter_training.format_summary(report))
    report_path = folder / REPORT_FILE
    return {
        "result_path": str(report_path), "kind": "train_counter", "quick": p.quick,
        "weights_path": str(out), "report_path": str(report_path), "scores_path": str(folder / SCORES_FILE),
        "plots": [str(path) for path in plots],
        **counter_summary(report),
        "total_time_s": report["total_time_s"],
    }


# QUERIES: the collab jobs a researcher looks at, and what they wrote

SIMULATION_KINDS = (SIMULATE, SWEEP)  # the jobs whose result.json the result figures draw


def simulation_jobs(*, limit: int = 20, succeeded: bool = False, engine=None) -> list[Job]:
    """The newest ``limit`` simulate and sweep jobs (newest first); only succeeded ones if ``succeeded``."""
    return list_jobs(limit=limit, kinds=SIMULATION_KINDS, status=JobStatus.SUCCEEDED if succeeded else None,
                     engine=engine)


def counter_jobs(*, limit: int = 20, succeeded: bool = False, engine=None) -> list[Job]:
    """The newest ``limit`` ``collab.train_counter`` jobs, newest first; only succeeded ones if ``succeeded``."""
    return list_jobs(limit=limit, kind=TRAIN_COUNTER, status=JobStatus.SUCCEEDED if succeeded else None,
                     engine=engine)


def simulation_result(job_id: int, *, engine=None) -> SimulationResultFile | SweepResultFile:
    """The checked result file of a finished simulate or sweep job (``result_files.load_result_file``).

    Raises:
        ResultFileError: no such job, no result file, or the file is not a valid result (the message says which).
    """
    try:
        path = job_result_file(job_id, engine=engine)
    except JobError as exc:
        raise ResultFileError(str(exc)) from None
    return load_result_file(path)


def counter_job_report(job_id: int, *, engine=None) -> CounterReportFile:
    """The report (``CounterReportFile``, with its plots) a succeeded ``collab.train_counter`` job wrote.

    Raises:
        ResultFileError: no such job, not a succeeded training job, or its report is missing or incomplete.
    """
    try:
        job = get_job(job_id, engine=engine)
    except JobError as exc:
        raise ResultFileError(str(exc)) from None
    if job.kind != TRAIN_COUNTER or job.status != JobStatus.SUCCEEDED:
        raise ResultFileError(f"job #{job_id} is not a succeeded {TRAIN_COUNTER} job ({job.kind}, {job.status})")
    folder = job_dir(job_id)
    path = folder / REPORT_FILE
    if not path.is_file():
        raise ResultFileError(f"training job #{job_id} has no {REPORT_FILE} in its folder")
    plots = [p for p in (folder / f"{COUNTER_STEM}_reliability.png", folder / f"{COUNTER_STEM}_accuracy.png")
             if p.is_file()]
    return CounterReportFile.from_json(path, job_id=job_id, plots=plots)


def ai_score_choices(*, limit: int = 50, engine=None) -> dict[str, str]:
    """AI score sources a simulation job can use, as {key: label}: synthetic, the shipped CNN, each trained CNN.

    Keys are "synthetic", "shipped" and "job:<id>" (succeeded training jobs, newest first);
    ``ai_score_params`` turns a key into job parameters.
    """
    choices = {"synthetic": "synthetic AI (parametric)", "shipped": "shipped CNN (assets/collab)"}
    for job in counter_jobs(limit=limit, succeeded=True, engine=engine):
        overall = (job.result or {}).get("overall", {})
        accuracy = f", accuracy {overall['accuracy']:.3f}" if "accuracy" in overall else ""
        quick = ", quick" if (job.params or {}).get("quick") else ""
        choices[f"job:{job.id}"] = f"CNN from job #{job.id}{accuracy}{quick}"
    return choices


def ai_score_params(key: str) -> dict:
    """Simulation job parameters for a key of ``ai_score_choices``: ``ai`` and, for a trained CNN, ``counter_job_id``."""
    if key == "synthetic":
        return {"ai": "synthetic"}
    if key == "shipped":
        return {"ai": "cnn"}
    if key.startswith("job:") and key[4:].isdigit():
        return {"ai": "cnn", "counter_job_id": int(key[4:])}
    raise ValueError(f"unknown AI score source {echo(key)} (synthetic, shipped or job:<id>)")


def train_counter_defaults() -> dict:
    """The default parameters of a ``collab.train_counter`` job (what a training form starts from)."""
    return TrainCounterParams().model_dump()
