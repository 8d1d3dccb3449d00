"""Background jobs of the attribution area: ``attribution.train`` and ``attribution.experiment``.

The same functions the command line calls, in the job queue, with progress: a policy trained
here lands in the job's folder as ``policy.pt`` (with its ``policy.json``), an experiment's
result as ``experiment.json``. A job writes only there (never into the shipped assets), and a
job's result file is opened only from a job's result folder (``engines.attribution.paths``).
The work itself (torch) is imported when a job runs: discovering the job kinds stays light.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Literal

from pydantic import Field

from engines.attribution.configs import ExperimentConfig, TrainConfig
from engines.attribution.paths import POLICY_SUFFIXES, result_file, shown
from engines.attribution.policy_set import SHIPPED_DIR, SHIPPED_EXPERIMENT
from engines.platform.config_schema import JobParams, job_model
from engines.platform.files import FileRefused
from engines.platform.jobqueue import JobContext, get_job, list_jobs, register_job
from engines.platform.models import Job
from engines.platform.progress import job_progress

TRAIN, EXPERIMENT = "attribution.train", "attribution.experiment"


class _Evaluation(JobParams):
    episodes: int = Field(default=100, ge=5, le=1000, title="Closed-loop episodes per evaluation")


class TrainParams(job_model(TrainConfig, name="TrainFields", base=_Evaluation)):
    """Parameters of an ``attribution.train`` job: ``TrainConfig``'s fields and the evaluation's episodes."""


@register_job(TRAIN, title="Attribution: train a reaching policy", params=TrainParams)
def train_job(ctx: JobContext, **params) -> dict:
    """Behaviour cloning on the reaching task; writes policy.pt and its evaluation."""
    from engines.attribution.policies import parameter_count, save_policy, torch_policy  # torch: when it runs
    from engines.attribution.train import evaluate, train_policy

    p = TrainParams(**params)
    config = p.config()

    ctx.progress(0.0, "generating expert frames")
    result = train_policy(config, progress=job_progress(ctx, 0.0, 0.8))  # stops at an epoch's end when cancelled
    ctx.progress(0.85, f"closed-loop evaluation, {p.episodes} episodes per cue")
    scores = evaluate(torch_policy(result.model), p.rho, episodes=p.episodes)
    out = ctx.result_dir / "policy.pt"
    save_policy(result.model, out, {"train": asdict(config), "final_loss": result.losses[-1],
                                    "parameters": parameter_count(result.model), "evaluation": scores,
                                    "episodes": p.episodes})
    return {"result_path": str(out), "rho": p.rho, "seed": p.seed, "final_loss": result.losses[-1],
            "evaluation": scores}


class _Policies(JobParams):
    policies: Literal["shipped", "train"] = Field(
        default="shipped", title="Use the shipped policies where there is one for a (rho, seed), or train all anew")


class ExperimentParams(job_model(ExperimentConfig, name="ExperimentFields", base=_Policies)):
    """Parameters of an ``attribution.experiment`` job: ``ExperimentConfig``'s fields a job may set
    (by default the shipped set's rhos and seeds, every policy loaded) and where the policies come from."""


@register_job(EXPERIMENT, title="Attribution: NMR against out-of-distribution failure", params=ExperimentParams)
def experiment_job(ctx: JobContext, **params) -> dict:
    """The experiment of ``python -m engines.attribution experiment``; writes experiment.json."""
    from engines.attribution.experiment import run_experiment  # torch and scipy: when it runs

    p = ExperimentParams(**params)
    config = ExperimentConfig(rhos=p.rhos, seeds=p.seeds, n_masks=p.n_masks, nmr_frames=p.nmr_frames,
                              episodes=p.episodes, methods=p.methods,
                              policy_dir=str(SHIPPED_DIR) if p.policies == "shipped" else None)
    result = run_experiment(config, progress=job_progress(ctx, 0.0, 0.95))
    out = ctx.result_dir / "experiment.json"
    out.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return {"result_path": str(out), "summary": result["summary"], "policies": len(result["policies"])}


def attribution_jobs(*, limit: int = 20) -> list[Job]:
    """The newest training and experiment jobs of this area (any status)."""
    return list_jobs(kinds=[TRAIN, EXPERIMENT], limit=limit)


def _job_file(job: Job, *, what: str, suffixes: tuple[str, ...]) -> Path | None:
    """The file a finished job's ``result_path`` names, in a job's result folder; None when it is not
    there any more or lies anywhere else (``engines.attribution.paths.result_file``)."""
    try:
        return result_file((job.result or {}).get("result_path") or "", what=what, suffixes=suffixes)
    except FileRefused:
        return None


def finished_training_jobs(*, limit: int = 50) -> list[Job]:
    """Finished ``attribution.train`` jobs whose policy file is still there, newest first."""
    return [job for job in list_jobs(kind=TRAIN, status="succeeded", limit=limit)
            if _job_file(job, what="the job's policy", suffixes=POLICY_SUFFIXES)]


def read_experiment(job_id: int | None) -> dict:
    """The experiment.json of a finished ``attribution.experiment`` job; None: the shipped run's.

    Raises:
        ValueError: the job is not a finished experiment, or its result file is gone (or does not
            follow its format: ``run_files.RunFileError``, naming the file and the field).
    """
    from engines.attribution.run_files import read_experiment_file

    if job_id is None:
        return read_experiment_file(SHIPPED_EXPERIMENT, name=shown(SHIPPED_EXPERIMENT))
    job = get_job(job_id)
    if job.kind != EXPERIMENT or job.status != "succeeded" or not job.result:
        raise ValueError(f"job #{job_id} is not a finished attribution experiment")
    path = _job_file(job, what="the experiment's result", suffixes=(".json",))
    if path is None:
        raise ValueError(f"job #{job_id}: its result file is gone")
    return read_experiment_file(path, name=shown(path))
