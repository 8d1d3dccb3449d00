"""Background jobs of the HOI-Edit area: ``hoi.evaluate`` (HOI-Eval over one method's edits) and
``hoi.scpe`` (SCPE: learn a playbook, generate and select each item's frame, then evaluate it).

The same functions the command line calls (``python -m engines.hoi evaluate`` and ``scpe``), in
the job queue, with progress. A benchmark folder (a registered data set or the shipped demo) is
only read: each job writes into its own result folder, in the benchmark's layout
(``records/<method>.json``, and for SCPE ``<method>_frames``, ``_strips``, ``_traces``,
``methods.json``), and the page reads the benchmark with the result folders of the jobs run on it
(``result_layers``).

Everything a job is given is checked when it is submitted, and again when it starts: the
benchmark is a folder the app owns (``engines.hoi.folders``) that reads; a role's options are
options of that role; an API key comes only from a declared variable
(``engines.platform.credentials``) and an endpoint URL only from a host the server allows
(``engines.platform.endpoints``), before any request is made.
"""

from __future__ import annotations

import functools
import inspect
import re
import shutil
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, Field, field_validator, model_validator

from engines.hoi import backends
from engines.hoi.benchmark import load_benchmark
from engines.hoi.evaluate import EvaluateConfig, evaluate_method
from engines.hoi.folders import benchmark_folder, input_folder, shown
from engines.hoi.methods import METHOD_NAME, method_sources, write_method
from engines.hoi.roles import factory
from engines.hoi.scpe import SCPEConfig, run_scpe
from engines.platform.config_schema import JobParams, job_model
from engines.platform.credentials import check_key_variable
from engines.platform.endpoints import check_endpoint_url
from engines.platform.files import echo
from engines.platform.jobqueue import JobContext, job_dir, list_jobs, register_job
from engines.platform.models import Job
from engines.platform.progress import job_progress

EVALUATE, SCPE = "hoi.evaluate", "hoi.scpe"
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # a Hugging Face hub id, as a diffusers "model"
DEFAULT_I2V = "offline"  # runs on any machine; a diffusers pipeline needs a model (and, in practice, a GPU)


def _benchmark_folder(value: str) -> str:
    """The benchmark as its owned folder's relative name (``shipped/hoi/demo``), once it reads."""
    root = benchmark_folder(value)
    load_benchmark(root)  # its errors name the file, key and field
    return shown(root)


def _role_name(kind: str, value: str) -> str:
    if value not in backends.names(kind):
        raise ValueError(f"unknown {kind} {echo(value)}; choose one of {', '.join(backends.names(kind))}")
    return value


def _role(kind: str):
    """A registered name of the role ``kind``, checked at submission."""
    return Annotated[str, AfterValidator(functools.partial(_role_name, kind))]


def check_role_options(kind: str, name: str, options: dict[str, Any], *, field: str) -> dict[str, Any]:
    """``options`` when the role ``kind``/``name`` takes them: each is a parameter of its factory, its
    ``api_key_env`` (given or default) a declared API-key variable, its ``base_url`` an allowed endpoint.

    Raises:
        ValueError: (``SecretRefused``, ``EndpointRefused``) naming ``field`` and the option.
    """
    parameters = inspect.signature(factory(kind, name)).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        allowed = sorted(key for key in parameters if key != "chat")
        unknown = sorted(set(options) - set(allowed))
        if unknown:
            raise ValueError(f"{field}: the {kind} {name!r} has no option {echo(unknown[0])}; its options are "
                             f"{', '.join(allowed) or 'none'}")
    for option, check in (("api_key_env", check_key_variable), ("base_url", check_endpoint_url)):
        if option in parameters:
            default = parameters[option].default
            value = options.get(option, None if default is inspect.Parameter.empty else default)
            if value is not None:
                check(value, field=f"{field}.{option}")
    return options


BenchmarkFolder = Annotated[str, AfterValidator(_benchmark_folder),
                            Field(title="The benchmark folder: shipped/hoi/demo or datasets/hoi/<name>")]


class _Benchmark(JobParams):
    """Where a ``hoi.evaluate`` job's edits are, and its judge's options (a job writes its records into
    its result folder)."""

    benchmark: BenchmarkFolder
    judge_options: dict[str, str] = Field(default_factory=dict, title="e.g. base_url, model for the openai judge")


class EvaluateParams(job_model(EvaluateConfig, name="EvaluateFields", base=_Benchmark)):
    """Parameters of a ``hoi.evaluate`` job: the benchmark folder, ``EvaluateConfig``'s fields (as the
    ``evaluate`` command's options) and the judge's options."""

    @model_validator(mode="after")
    def _judge_options(self) -> EvaluateParams:
        check_role_options("judge", self.judge, self.judge_options, field="judge_options")
        return self


def result_layers(root: str | Path, *, besides: int | None = None) -> list[Path]:
    """The result folders of this area's jobs on the benchmark ``root`` (any status: a running or
    failed job's records show too), oldest first; ``besides`` leaves one job out."""
    name = shown(benchmark_folder(root))
    jobs = [job for job in list_jobs(kinds=[EVALUATE, SCPE], params={"benchmark": name}, limit=None)
            if job.id != besides]
    return [folder for job in sorted(jobs, key=lambda j: j.id) if (folder := job_dir(job.id)).is_dir()]


def _evaluate(ctx: JobContext, root: Path, method: str, grounder: str, judge: str, judge_options: dict,
              limit: int | None, *, start: float, span: float) -> dict:
    sources = method_sources([root, *result_layers(root, besides=ctx.job_id), ctx.result_dir])
    source = sources.get(method)
    if source is None:
        raise ValueError(f"no edits of {echo(method)} in {shown(root)} or its jobs' results "
                         f"(looked for {method}_frames at the top and under data/)")
    out = ctx.result_dir / "records" / f"{method}.json"
    if source.records_path is not None and source.records_path != out:
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source.records_path, out)  # resume what an earlier run judged; its file stays as it was

    progress = job_progress(ctx, start, start + span, prefix="HOI-Eval: ", unit="items judged")
    return evaluate_method(root, method, source.frames_dir, backends.make("grounder", grounder),
                           backends.make("judge", judge, **judge_options), progress=progress, out=out, limit=limit)


@register_job(EVALUATE, title="HOI-Edit: evaluate a method's edits with HOI-Eval", params=EvaluateParams)
def evaluate_job(ctx: JobContext, **params) -> dict:
    """Judge every edit of the method (resuming what an earlier run judged) into the job's
    records/<method>.json."""
    p = EvaluateParams(**params)  # checked again: the folder may have changed since it was queued
    ctx.progress(0.01, f"grounder {p.grounder}, judge {p.judge}")
    result = _evaluate(ctx, benchmark_folder(p.benchmark), p.method, p.grounder, p.judge, p.judge_options, p.limit,
                       start=0.01, span=0.98)
    return {"result_path": result["out"], "method": p.method, "paper_table": result["paper_table"],
            "summary": result["summary"]}


def _model_folder(model: str) -> str:
    """A diffusers ``model``: a hub id (from the local cache), or a model folder the app owns."""
    if HUB_ID.match(model) and not Path(model).exists():
        return model
    return str(input_folder(model, what="i2v.model"))


def check_i2v(value: dict) -> dict:
    """An SCPE job's I2V config, ``{"role": NAME, ...options}``: a registered role whose config
    checks (a Gradio URL on an allowed host; a diffusers model as a hub id or an owned folder)."""
    from engines.hoi.generation import GenerationConfigError, load_generation_config

    role = value.get("role")
    if not isinstance(role, str):
        raise ValueError('the I2V config needs a "role"')
    _role_name("i2v", role)
    if role in ("gradio", "diffusers"):
        try:
            config = load_generation_config({**value, "task": "i2v"}, task="i2v")
        except GenerationConfigError as error:
            raise ValueError(str(error).replace("generation config: ", "i2v: ", 1)) from None
        if role == "diffusers":
            _model_folder(config.model)
    return value


def _i2v_options(value: dict) -> dict:
    """The I2V role's options as it is made: a diffusers model folder by its full path."""
    options = {key: item for key, item in value.items() if key != "role"}
    if value.get("role") == "diffusers":
        options["model"] = _model_folder(options["model"])
    return options


class _SCPERoles(JobParams):
    """What an ``hoi.scpe`` job runs on and with; how it runs follows (``SCPEConfig``)."""

    benchmark: BenchmarkFolder
    i2v: dict = Field(default_factory=lambda: {"role": DEFAULT_I2V},
                      title='The I2V role and its options, as scpe --i2v: {"role": "gradio", "url": ...}')
    judge: _role("judge") = "offline"
    refiner: _role("refiner") = "offline"
    method: str = Field(default="scpe", pattern=METHOD_NAME)
    evaluate: bool = Field(default=True, title="Then evaluate the chosen frames with HOI-Eval (offline roles)")


class SCPEParams(job_model(SCPEConfig, name="SCPEFields", base=_SCPERoles)):
    """Parameters of an ``hoi.scpe`` job: the benchmark, the roles, and SCPE's epochs, retries and limit."""

    @field_validator("i2v")
    @classmethod
    def _i2v(cls, value: dict) -> dict:
        return check_i2v(value)

    @model_validator(mode="after")
    def _roles(self) -> SCPEParams:
        check_role_options("judge", self.judge, {}, field="judge")
        check_role_options("refiner", self.refiner, {}, field="refiner")
        return self


@register_job(SCPE, title="HOI-Edit: SCPE with an I2V model (learn, generate, select)", params=SCPEParams)
def scpe_job(ctx: JobContext, **params) -> dict:
    """Learn the playbook, edit every item through the I2V model, keep the selected frames (and
    evaluate them) in the job's result folder as method ``method``."""
    from engines.hoi.playbook import load_playbook

    p = SCPEParams(**params)
    root = benchmark_folder(p.benchmark)
    benchmark = load_benchmark(root)
    config = SCPEConfig(epochs=p.epochs, retries=p.retries, method_name=p.method, limit=p.limit)
    span = 0.7 if p.evaluate else 0.98

    progress = job_progress(ctx, 0.01, 0.01 + span, prefix="SCPE: ")

    result = run_scpe(benchmark, benchmark.items(), backends.make("i2v", p.i2v["role"], **_i2v_options(p.i2v)),
                      backends.make("judge", p.judge), backends.make("refiner", p.refiner), config,
                      ctx.result_dir, playbook=load_playbook(), progress=progress)
    offline = p.i2v["role"] == "offline"
    write_method(ctx.result_dir, p.method, {
        "kind": "i2v", "label": p.method, "offline": offline,
        "description": f"SCPE with the I2V role {p.i2v['role']!r} (job #{ctx.job_id})"})
    counts = result.counts()
    summary = f"SCPE {p.method}: {counts['written']}/{counts['items']} frames written"
    out = {"method": p.method, "counts": counts, "result_path": str(result.run_path), "summary": summary}
    if p.evaluate:
        evaluated = _evaluate(ctx, root, p.method, "offline", "offline", {}, p.limit,
                              start=0.01 + span, span=0.98 - span)
        out.update(paper_table=evaluated["paper_table"], summary=f"{summary}; {evaluated['summary']}")
    return out


def hoi_jobs(limit: int = 20) -> list[Job]:
    """This area's recent jobs, newest first."""
    return list_jobs(kinds=[EVALUATE, SCPE], limit=limit)


def describe(job: Job) -> str:
    params = job.params or {}
    if job.kind == EVALUATE:
        return f"evaluate {params.get('method', '?')} (judge {params.get('judge', 'offline')})"
    return f"SCPE as {params.get('method', 'scpe')} (I2V {params.get('i2v', {}).get('role', '?')})"


def jobs_frame(jobs: list[Job]):
    from engines.platform import job_table  # pandas: for the page that shows the table

    return job_table.jobs_frame(jobs, describe)
