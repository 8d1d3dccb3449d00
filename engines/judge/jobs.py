"""Background jobs of the judge area: ``judge.run`` (a safety judge over items, with progress).

The job is the command line's ``judge`` (``engines.judge.judging.judge_items``) in the job queue:
it writes ``verdicts.csv`` into the job's folder and returns the run's counts. Its verdict cache
lives in the data directory (``<data_dir>/judge/cache/``), one file per judge and backend, so a
job started again after a crash or a cancel judges only what is missing.

Items come from the shipped synthetic demo set (``items="demo"``) or from a JSONL file in one of the
folders the app owns (``engines.platform.files.owned_path``): an imported data set
(``datasets/judge/<name>/``), a labeling project's items (``datasets/judge/_projects/<slug>/``) or
an upload. Labels and verdicts likewise (verdicts also from a job's result folder). A job reads no
other path: not the database, not a key file, whatever ``..`` or link the parameter holds.

``judge.audit`` is the command line's ``audit``: items and labels of a labeling project (or files),
verdicts of finished ``judge.run`` jobs (or files); it writes ``audit.json`` into the job's folder.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import Field, field_validator, model_validator

from engines.judge import labeling, review
from engines.judge.audit import AuditConfig, audit
from engines.judge.items import (
    Item,
    Label,
    Verdict,
    read_items,
    read_labels,
    read_verdicts,
    write_items,
    write_verdicts,
)
from engines.judge.judges import get_judge
from engines.judge.judging import JudgeRunConfig, judge_items
from engines.judge.subsets import ReliableBenchConfig, StressTestConfig
from engines.platform.config_schema import JobParams, job_model
from engines.platform.files import Folder, area_folder, echo, owned_path, shown_path
from engines.platform.jobqueue import JobContext, JobError, get_job, job_result_file, list_jobs, register_job
from engines.platform.models import Job, JobStatus
from engines.platform.private_files import private_dir
from engines.platform.progress import job_progress
from engines.platform.settings import REPO_ROOT, get_settings

RUN = "judge.run"
VERDICTS_FILE = "verdicts.csv"
DEMO_ITEMS = REPO_ROOT / "assets" / "judge" / "demo_items.jsonl"


def cache_file(cache_id: str) -> Path:
    """The cache of one judge + backend under the data directory (a readable stem and a hash of the id)."""
    stem = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in cache_id.split("@")[0])[:40]
    digest = hashlib.sha256(cache_id.encode("utf-8")).hexdigest()[:12]
    folder = private_dir(get_settings().data_dir / "judge" / "cache")  # verdicts quote generations: keep them private
    return folder / f"{stem}-{digest}.jsonl"


class _RunItems(JobParams):
    """What a ``judge.run`` job judges, and whether it keeps a cache; the judge follows (``JudgeRunConfig``)."""

    items: str = Field(default="demo", min_length=1, max_length=500,
                       title="Items: 'demo' (the synthetic demo set) or a JSONL file of an imported data set")
    use_cache: bool = Field(default=True, title="Reuse and extend the judge's verdict cache")

    @field_validator("items")
    @classmethod
    def _readable_items(cls, value: str) -> str:
        items_path(value)  # a FileRefused (a ValueError) for anything but an owned items file
        return value


class JudgeRunParams(job_model(JudgeRunConfig, name="JudgeRunFields", base=_RunItems)):
    """Parameters of a ``judge.run`` job: its items and cache, and ``JudgeRunConfig``'s fields (as the
    ``judge`` command's options; an unknown judge is refused when the job is submitted)."""


def items_path(items: str) -> Path:
    """The file a job's ``items`` names: the demo set, or an items JSONL file the app owns.

    Raises:
        FileRefused: a path outside the owned folders, not a .jsonl file, or missing.
    """
    return data_file(items, "items", DEMO_ITEMS)


@register_job(RUN, title="Judge: run a safety judge over items", params=JudgeRunParams)
def judge_run_job(ctx: JobContext, **params) -> dict:
    """Judge every item with one safety judge; writes verdicts.csv (resumes from the judge's cache)."""
    p = JudgeRunParams(**params)
    path = items_path(p.items)
    ctx.progress(0.0, f"reading {path.name}")
    items = read_items(path)
    judge = get_judge(p.judge, backend=p.backend)
    cache = cache_file(judge.cache_id) if p.use_cache else None

    result = judge_items(items, judge, cache_path=cache, batch_size=p.batch_size, name=p.name,
                         progress=job_progress(ctx, 0.0, 0.95, unit="items judged"))  # stops there when cancelled
    ctx.progress(0.97, "writing verdicts.csv")
    out = ctx.result_dir / VERDICTS_FILE
    write_verdicts(result.rows, out)
    ctx.log(result.summary())
    return {"result_path": str(out), **result.to_dict(), "items": p.items, "backend": p.backend}


# ----------------------------------------------------------------------------- judge.audit
#
# The command line's ``audit`` (``engines.judge.audit.audit``) in the job queue, for the Research ->
# Judge audit page: items and labels from a labeling project or from files, verdicts from finished
# ``judge.run`` jobs or files; the result is ``audit.json`` (``AuditResult.to_dict()``) in the job's folder.

AUDIT = "judge.audit"
AUDIT_FILE = "audit.json"
DEMO_LABELS = REPO_ROOT / "assets" / "judge" / "demo_labels.csv"
PROJECT_ITEMS = "items.jsonl"
PROJECTS_FOLDER = "_projects"  # under datasets/judge/; a data set's name never starts with "_"
# Where each kind of job file may lie, and its suffixes: imported data sets and uploads, the shipped
# demo files, and for verdicts also a job's result folder (a judge.run's verdicts.csv).
FILE_RULES: dict[str, tuple[tuple[str, ...], tuple[Folder, ...]]] = {
    "items": ((".jsonl",), ("datasets", "uploads", "shipped")),
    "labels": ((".csv",), ("datasets", "uploads", "shipped")),
    "verdicts": ((".csv",), ("datasets", "uploads", "jobs", "shipped")),
}


def data_file(value: str, field: str, demo: Path | None = None) -> Path:
    """The file a job parameter names: ``demo`` (when the field has a shipped demo file) or an owned
    file of the field's kind (``FILE_RULES``), resolved.

    Raises:
        FileRefused: a path outside those folders, with another suffix, or missing; the message
            names the parameter.
    """
    if value == "demo" and demo is not None:
        return demo
    suffixes, folders = FILE_RULES[field]
    return owned_path(value, what=field, suffixes=suffixes, folders=folders)


class _AuditSources(JobParams):
    """What a ``judge.audit`` job reads.

    The items and labels come from a labeling ``project`` or from files (``items``, optional ``labels``);
    with neither, the shipped synthetic demo set. The verdicts come from finished ``judge.run`` jobs
    (``verdict_jobs``) and/or verdicts files; with none, the items' own ``judges`` (if any).
    """

    project: str | None = Field(default=None, min_length=1, max_length=128,
                                title="Labeling project whose items, labels and adjudications to audit")
    items: str | None = Field(default=None, min_length=1, max_length=500,
                              title="Items: 'demo' or a JSONL file under the data directory (with no project)")
    labels: str | None = Field(default=None, min_length=1, max_length=500,
                               title="Labels: 'demo' or a labels.csv under the data directory (none: the items' own)")
    verdict_jobs: list[int] = Field(default_factory=list, max_length=100,
                                    title="Finished judge.run jobs whose verdicts.csv to audit")
    verdicts: list[str] = Field(default_factory=list, max_length=100,
                                title="verdicts.csv files under the data directory")

    @field_validator("items")
    @classmethod
    def _items_inside(cls, value: str | None) -> str | None:
        if value is not None:
            data_file(value, "items", DEMO_ITEMS)
        return value

    @field_validator("labels")
    @classmethod
    def _labels_inside(cls, value: str | None) -> str | None:
        if value is not None:
            data_file(value, "labels", DEMO_LABELS)
        return value

    @field_validator("verdict_jobs")
    @classmethod
    def _finished_verdict_jobs(cls, value: list[int]) -> list[int]:
        for job_id in value:
            verdict_job_file(job_id)  # a ValueError naming the job and why its verdicts cannot be read
        return value

    @field_validator("verdicts")
    @classmethod
    def _verdicts_inside(cls, value: list[str]) -> list[str]:
        for path in value:
            data_file(path, "verdicts", None)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> _AuditSources:
        if self.project is not None and (self.items is not None or self.labels is not None):
            raise ValueError("give either a labeling project or items (and labels) files, not both")
        if self.labels is not None and self.items is None:
            raise ValueError("labels need the items they label: give items as well")
        return self


def verdict_job_file(job_id: int) -> Path:
    """The verdicts.csv of a finished ``judge.run`` job.

    Raises:
        ValueError: no such job, another kind of job, not (yet) succeeded, or its file is gone; the message says which.
    """
    try:
        job = get_job(job_id)
    except JobError as exc:
        raise ValueError(f"verdict job {job_id}: {exc}") from None
    if job.kind != RUN:
        raise ValueError(f"job {job_id} is a {job.kind} job, not a {RUN} job: it has no verdicts")
    if job.status != JobStatus.SUCCEEDED:
        raise ValueError(f"{RUN} job {job_id} has not succeeded (it is {job.status}): its verdicts are not complete")
    try:
        path = job_result_file(job_id)
    except JobError:
        raise ValueError(f"{RUN} job {job_id} succeeded but its {VERDICTS_FILE} is gone") from None
    # The stored result path is read like any other: only a verdicts file in the jobs' folders.
    return owned_path(path, what=f"{RUN} job {job_id}'s verdicts", suffixes=(".csv",), folders=("jobs",))


def audit_source(p: JudgeAuditParams) -> tuple[list[Item], list[tuple[str, Label]] | None, str]:
    """(items, labels or None for the items' own, a description) of an audit job's parameters."""
    if p.project is not None:
        return labeled_project_items(p.project), None, f"labeling project {p.project}"
    items_file = data_file(p.items or "demo", "items", DEMO_ITEMS)
    labels = p.labels if p.items is not None else "demo"  # nothing named: the demo set with its labels
    if labels is None:
        return read_items(items_file), None, f"{_shown(items_file)} (labels inside the items)"
    labels_file = data_file(labels, "labels", DEMO_LABELS)
    source = "the synthetic demo set" if items_file == DEMO_ITEMS else f"{_shown(items_file)} + {_shown(labels_file)}"
    return read_items(items_file), read_labels(labels_file), source


def _shown(path: Path) -> str:
    """A data file as the page names it: within its owned folder (an imported set's folder says which set)."""
    return shown_path(path)


def labeled_project_items(slug: str) -> list[Item]:
    """A labeling project's regular items with their labels and adjudications (gold items stay out)."""
    try:
        return review.labelled_items(slug)
    except labeling.LabelingError as exc:
        raise ValueError(str(exc)) from None


def project_items_param(slug: str) -> str:
    """The ``items`` parameter of ``judge.run`` jobs over a labeling project (``project_items_file`` writes it):
    ``datasets/judge/_projects/<slug>/items.jsonl``, relative to the data directory."""
    if not labeling.SLUG.match(slug):  # the slug names a folder: never a path of its own
        raise ValueError(f"{echo(slug)} is not a labeling project's name.")
    folder = area_folder("datasets", "judge") / PROJECTS_FOLDER / slug
    return str((folder / PROJECT_ITEMS).relative_to(get_settings().data_dir))


def project_items_file(slug: str) -> str:
    """Write a labeling project's items (no labels) where a ``judge.run`` job can read them; returns that
    ``items`` parameter (a path relative to the data directory). The same items as its audit reads."""
    items = [item.model_copy(update={"labels": [], "adjudicated": None}) for item in labeled_project_items(slug)]
    path = get_settings().data_dir / project_items_param(slug)
    for folder in (path.parents[2], path.parents[1], path.parent):
        private_dir(folder)  # generations are the project's data: kept private like the verdict cache
    write_items(items, path)
    return project_items_param(slug)


def matching_verdicts(rows: list[tuple[str, Verdict]], keys: set[str], source: str) -> tuple[list, int]:
    """The verdicts on the audited items and how many were on other items (a judge.run over the whole
    demo set includes its gold items, which a project's audit leaves out).

    Raises:
        ValueError: none of the verdicts names an audited item (verdicts of some other item set).
    """
    kept = [(key, verdict) for key, verdict in rows if key in keys]
    if rows and not kept:
        raise ValueError(f"none of the {len(rows)} verdicts of {source} names an item of this audit: "
                         "were they made on other items?")
    return kept, len(rows) - len(kept)


class JudgeAuditParams(job_model(AuditConfig, name="AuditFields", base=_AuditSources)):
    """Parameters of a ``judge.audit`` job: its sources, and ``AuditConfig``'s fields (as ``audit``'s options)."""

    def audit_config(self) -> AuditConfig:
        """The audit these parameters ask for; the subsets' class balancing is seeded as on the command line."""
        return AuditConfig(human_rule=self.human_rule, bootstrap=self.bootstrap, seed=self.seed, subsets=self.subsets,
                           reliable_bench=ReliableBenchConfig(seed=self.seed), stress_test=StressTestConfig(seed=self.seed))


@register_job(AUDIT, title="Judge: audit safety judges against human labels", params=JudgeAuditParams)
def judge_audit_job(ctx: JobContext, **params) -> dict:
    """Audit judges against the human labels; writes audit.json (the command line's ``audit --json``)."""
    p = JudgeAuditParams(**params)
    ctx.progress(0.0, "reading items and labels")
    items, labels, source = audit_source(p)
    keys = {item.key for item in items}
    verdicts: list[tuple[str, Verdict]] | None = None
    dropped = 0
    # Oldest job first: a later verdict of the same judge on the same item replaces an earlier one,
    # so a response judged again is audited by its latest verdict, whatever order the jobs were listed in.
    sources = [(verdict_job_file(job_id), f"{RUN} job {job_id}") for job_id in sorted(p.verdict_jobs)]
    sources += [(data_file(path, "verdicts"), path) for path in p.verdicts]
    if sources:
        verdicts = []
        for path, name in sources:
            ctx.progress(0.05, f"reading the verdicts of {name}")
            kept, n_other = matching_verdicts(read_verdicts(path), keys, name)
            verdicts += kept
            dropped += n_other
        if dropped:
            ctx.log(f"{dropped} verdicts name items outside this audit (e.g. gold items) and were left out")
    config = p.audit_config()

    ctx.progress(0.1, f"auditing {len(items):,} items" + (f" with {p.bootstrap:,} resamples" if p.bootstrap else ""))
    result = audit(items, labels, verdicts, config, progress=job_progress(ctx, 0.1, 0.9))
    ctx.progress(0.95, f"writing {AUDIT_FILE}")
    data = {**result.to_dict(), "source": source, "verdicts_left_out": dropped}
    out = ctx.result_dir / AUDIT_FILE
    partial = out.with_suffix(".json.partial")  # renamed when complete: a reader never sees half a file
    partial.write_text(json.dumps(data, indent=1, allow_nan=False), encoding="utf-8")
    partial.replace(out)
    ctx.log(result.summary)
    return {"result_path": str(out), "summary": result.summary, "source": source, "judges": list(result.judges),
            "n_items": result.n_items, "n_human_labelled": result.n_human_labelled, "verdicts_left_out": dropped}


def verdict_jobs(items: str | None = None, *, limit: int = 100) -> list[Job]:
    """The newest ``judge.run`` jobs (any status), of the ``items`` parameter given (None: all)."""
    return list_jobs(kind=RUN, params=None if items is None else {"items": items}, limit=limit)


def audit_jobs(*, limit: int = 50) -> list[Job]:
    """The newest ``judge.audit`` jobs (any status)."""
    return list_jobs(kind=AUDIT, limit=limit)


def read_audit(job_id: int) -> dict:
    """The audit.json of a finished ``judge.audit`` job (``AuditResult.to_dict()`` plus ``source``).

    Raises:
        JobError: no such job, or it has no result file; the message gives its status.
    """
    return json.loads(job_result_file(job_id).read_text(encoding="utf-8"))
