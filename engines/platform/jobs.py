"""The platform's own job kinds: study export, and a countdown that checks the job system."""

from __future__ import annotations

import time

from pydantic import BaseModel, Field

from engines.platform.jobqueue import JobContext, register_job


class ExportParams(BaseModel):
    slug: str = Field(min_length=1, max_length=64, title="Study")


@register_job("platform.export_study", title="Export a study's data", params=ExportParams)
def export_study_job(ctx: JobContext, slug: str) -> dict:
    """Write the study's CSV/JSONL export, data dictionary and config into the job's folder."""
    from engines.platform.export import export_study

    ctx.progress(0.1, f"collecting data of {slug}")
    export = export_study(slug)
    ctx.progress(0.7, "writing files")
    paths = export.write(ctx.result_dir / slug)
    ctx.log(f"wrote {len(paths)} files to {ctx.result_dir / slug}")
    return {"result_path": str(ctx.result_dir / slug), "files": [p.name for p in paths]}


class SleepParams(BaseModel):
    seconds: float = Field(default=5.0, ge=0, le=3600, title="Duration (s)")
    fail: bool = Field(default=False, title="Fail at the end (to see failure handling)")


@register_job("platform.countdown", title="Countdown (checks the job system)", params=SleepParams)
def countdown_job(ctx: JobContext, seconds: float, fail: bool) -> dict:
    """Count down for ``seconds`` with progress each tenth; fail on request. Checks a deployment's workers."""
    ticks = 10
    for tick in range(ticks):
        ctx.progress(tick / ticks, f"{seconds * (ticks - tick) / ticks:.1f} s left")
        time.sleep(seconds / ticks)
    if fail:
        raise RuntimeError("failed on request (fail=true)")
    return {"slept_s": seconds}
