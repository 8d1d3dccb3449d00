"""Background jobs of the HOI-Edit area: ``hoi.evaluate`` (HOI-Eval over one method's edits) and
``hoi.scpe`` (SCPE: learn a playbook, generate and select each item's frame, then evaluate it).

The same functions the command line calls (``python -m engines.hoi evaluate`` and ``scpe``), in
the job queue, with progress. Both write into the benchmark folder, where the page finds them:
``records/<method>.json``, and for SCPE ``<method>_frames``, ``_strips``, ``_traces``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from engines.hoi import backends
from engines.hoi.benchmark import load_benchmark
from engines.hoi.methods import method_folders
from engines.platform import job_table
from engines.platform.jobqueue import JobContext, list_jobs, register_job
from engines.platform.models import Job

EVALUATE, SCPE = "hoi.evaluate", "hoi.scpe"
METHOD_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"  # a folder name: <method>_frames, records/<method>.json


def _benchmark_folder(value: str) -> str:
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ValueError(f"{value} is not a folder")
    load_benchmark(path)  # its errors name the file, key and field
    return str(path.resolve())


def _role_name(kind: str, value: str) -> str:
    if value not in backends.names(kind):
        raise ValueError(f"unknown {kind} {value!r}; choose one of {', '.join(backends.names(kind))}")
    return value


def _role(kind: str):
    """A registered name of the role ``kind``, checked at submission."""
    return Annotated[str, AfterValidator(functools.partial(_role_name, kind))]


BenchmarkFolder = Annotated[str, AfterValidator(_benchmark_folder), Field(title="The benchmark folder (upstream's layout)")]


class EvaluateParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: BenchmarkFolder
    method: str = Field(pattern=METHOD_NAME, title="The method whose <method>_frames are judged")
    grounder: _role("grounder") = "offline"
    judge: _role("judge") = "offline"
    judge_options: dict[str, str] = Field(default_factory=dict, title="e.g. base_url, model for the openai judge")
    limit: int | None = Field(default=None, ge=1, le=100_000)


def _evaluate(ctx: JobContext, benchmark: Path, method: str, grounder: str, judge: str, judge_options: dict,
              limit: int | None, *, start: float, span: float) -> dict:
    from engines.hoi.evaluate import evaluate_method

    outputs = method_folders(benchmark).get(method)
    if outputs is None:
        raise ValueError(f"no edits of {method!r} in {benchmark} (looked for {method}_frames at the top and under data/)")

    def progress(done: int, total: int) -> None:
        ctx.check_cancelled()
        ctx.progress(start + span * done / max(total, 1), f"HOI-Eval: {done}/{total} items judged")

    return evaluate_method(benchmark, method, outputs, backends.make("grounder", grounder),
                           backends.make("judge", judge, **judge_options), progress=progress,
                           out=benchmark / "records" / f"{method}.json", limit=limit)


@register_job(EVALUATE, title="HOI-Edit: evaluate a method's edits with HOI-Eval", params=EvaluateParams)
def evaluate_job(ctx: JobContext, **params) -> dict:
    """Judge every edit of the method (resuming what an earlier run judged) into records/<method>.json."""
    p = EvaluateParams(**params)
    ctx.progress(0.01, f"grounder {p.grounder}, judge {p.judge}")
    result = _evaluate(ctx, Path(p.benchmark), p.method, p.grounder, p.judge, p.judge_options, p.limit,
                       start=0.01, span=0.98)
    return {"result_path": result["out"], "method": p.method, "paper_table": result["paper_table"],
            "summary": result["summary"]}


class SCPEParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: BenchmarkFolder
    i2v: dict = Field(default_factory=lambda: {"role": "offline"},
                      title='The I2V role and its options, as scpe --i2v: {"role": "gradio", "url": ...}')
    judge: _role("judge") = "offline"
    refiner: _role("refiner") = "offline"
    epochs: int = Field(default=1, ge=0, le=5)
    retries: int = Field(default=1, ge=1, le=5)
    limit: int | None = Field(default=None, ge=1, le=100_000)
    method: str = Field(default="scpe", pattern=METHOD_NAME)
    evaluate: bool = Field(default=True, title="Then evaluate the chosen frames with HOI-Eval (offline roles)")

    @field_validator("i2v")
    @classmethod
    def _i2v(cls, value: dict) -> dict:
        role = value.get("role")
        if not isinstance(role, str):
            raise ValueError('the I2V config needs a "role"')
        _role_name("i2v", role)
        return value


@register_job(SCPE, title="HOI-Edit: SCPE with an I2V model (learn, generate, select)", params=SCPEParams)
def scpe_job(ctx: JobContext, **params) -> dict:
    """Learn the playbook, edit every item through the I2V model, keep the selected frames (and
    evaluate them) in the benchmark folder as method ``method``."""
    from engines.hoi.playbook import load_playbook
    from engines.hoi.scpe import SCPEConfig, run_scpe

    p = SCPEParams(**params)
    benchmark = load_benchmark(p.benchmark)
    options = {k: v for k, v in p.i2v.items() if k != "role"}
    config = SCPEConfig(epochs=p.epochs, retries=p.retries, method_name=p.method, limit=p.limit)
    span = 0.7 if p.evaluate else 0.98

    def progress(done: int, total: int, message: str) -> None:
        ctx.check_cancelled()
        ctx.progress(0.01 + span * done / max(total, 1), f"SCPE: {message}")

    result = run_scpe(benchmark, benchmark.items(), backends.make("i2v", p.i2v["role"], **options),
                      backends.make("judge", p.judge), backends.make("refiner", p.refiner), config,
                      Path(p.benchmark), playbook=load_playbook(), progress=progress)
    counts = result.counts()
    (ctx.result_dir / "playbook.json").write_text(json.dumps(result.playbook.to_dict(), indent=1), encoding="utf-8")
    summary = f"SCPE {p.method}: {counts['written']}/{counts['items']} frames written"
    out = {"method": p.method, "counts": counts, "result_path": str(result.run_path), "summary": summary}
    if p.evaluate:
        evaluated = _evaluate(ctx, Path(p.benchmark), p.method, "offline", "offline", {}, p.limit,
                              start=0.01 + span, span=0.98 - span)
        out.update(paper_table=evaluated["paper_table"], summary=f"{summary}; {evaluated['summary']}")
    return out


def hoi_jobs(limit: int = 20) -> list[Job]:
    """This area's recent jobs, newest first."""
    return [j for j in list_jobs(limit=200) if j.kind in (EVALUATE, SCPE)][:limit]


def describe(job: Job) -> str:
    params = job.params or {}
    if job.kind == EVALUATE:
        return f"evaluate {params.get('method', '?')} (judge {params.get('judge', 'offline')})"
    return f"SCPE as {params.get('method', 'scpe')} (I2V {params.get('i2v', {}).get('role', '?')})"


def jobs_frame(jobs: list[Job]):
    return job_table.jobs_frame(jobs, describe)
