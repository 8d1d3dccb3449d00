"""Background jobs of the judge area: ``judge.run`` (a safety judge over items, with progress).

The job is the command line's ``judge`` (``engines.judge.judging.judge_items``) in the job queue:
it writes ``verdicts.csv`` into the job's folder and returns the run's counts. Its verdict cache
lives in the data directory (``<data_dir>/judge/cache/``), one file per judge and backend, so a
job started again after a crash or a cancel judges only what is missing.

Items come from the shipped synthetic demo set (``items="demo"``) or from a JSONL file inside the
data directory (where the pages keep imported files); a job reads no other path.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engines.judge.items import read_items, write_verdicts
from engines.judge.judges import JUDGES, get_judge
from engines.judge.judging import judge_items
from engines.platform.jobqueue import JobContext, register_job
from engines.platform.private_files import private_dir
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


class JudgeRunParams(BaseModel):
    """Parameters of a ``judge.run`` job."""

    model_config = ConfigDict(extra="forbid")

    items: str = Field(default="demo", min_length=1, max_length=500,
                       title="Items: 'demo' (the synthetic demo set) or a JSONL file under the data directory")
    judge: str = Field(default="gcg-strings", title="Judge")
    backend: str | None = Field(default=None, max_length=500,
                                title="Backend of a prompt judge: transformers:PATH or openai:URL#MODEL")
    name: str | None = Field(default=None, max_length=128, title="Name in the verdicts' judge column")
    use_cache: bool = Field(default=True, title="Reuse and extend the judge's verdict cache")
    batch_size: int = Field(default=32, ge=1, le=4096, title="Items between two cache writes")

    @field_validator("judge")
    @classmethod
    def _known_judge(cls, value: str) -> str:
        if value not in JUDGES:
            raise ValueError(f"unknown judge {value!r}; known: {', '.join(JUDGES)}")
        return value

    @field_validator("items")
    @classmethod
    def _readable_items(cls, value: str) -> str:
        items_path(value)  # a ValueError for a path outside the data directory
        return value


def items_path(items: str) -> Path:
    """The file a job's ``items`` names: the demo set, or a path inside the data directory.

    Raises:
        ValueError: a path outside the data directory (a job reads only what the app stored).
    """
    if items == "demo":
        return DEMO_ITEMS
    data_dir = get_settings().data_dir.resolve()
    path = Path(items)
    path = (path if path.is_absolute() else data_dir / path).resolve()
    if not path.is_relative_to(data_dir):
        raise ValueError(f"items must be 'demo' or a file under the data directory ({data_dir}), got {items!r}")
    return path


@register_job(RUN, title="Judge: run a safety judge over items", params=JudgeRunParams)
def judge_run_job(ctx: JobContext, **params) -> dict:
    """Judge every item with one safety judge; writes verdicts.csv (resumes from the judge's cache)."""
    p = JudgeRunParams(**params)
    path = items_path(p.items)
    ctx.progress(0.0, f"reading {path.name}")
    items = read_items(path)
    judge = get_judge(p.judge, backend=p.backend)
    cache = cache_file(judge.cache_id) if p.use_cache else None

    def on_progress(done: int, total: int) -> None:
        ctx.progress(0.95 * done / max(total, 1), f"{done:,} of {total:,} items judged")  # raises on cancel

    result = judge_items(items, judge, cache_path=cache, batch_size=p.batch_size, progress=on_progress, name=p.name)
    ctx.progress(0.97, "writing verdicts.csv")
    out = ctx.result_dir / VERDICTS_FILE
    write_verdicts(result.rows, out)
    ctx.log(result.summary())
    return {"result_path": str(out), **result.to_dict(), "items": p.items, "backend": p.backend}
