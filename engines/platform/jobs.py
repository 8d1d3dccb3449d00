"""The platform's own job kinds: study export and the storage benchmark."""

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


class StoreBenchParams(BaseModel):
    participants: list[int] = Field(default=[1, 10], title="Concurrent participants (N)")
    steps: int = Field(default=20, ge=1, le=200, title="Steps per participant")


@register_job("platform.store_benchmark", title="Benchmark step-commit latency (SQLite scratch DB)",
              params=StoreBenchParams)
def store_benchmark_job(ctx: JobContext, participants: list[int], steps: int) -> dict:
    """Run the study-store benchmark on a scratch SQLite database and report latency per N."""
    from engines.platform.store_bench import run_store_benchmark

    results = []
    for i, n in enumerate(participants):
        ctx.progress(i / len(participants), f"N = {n}")
        start = time.perf_counter()
        (result,) = run_store_benchmark({"sqlite": None}, sizes=(n,), steps=steps)
        ctx.log(f"N={n}: p50 {result.p50_ms} ms, p95 {result.p95_ms} ms, "
                f"{result.throughput_steps_per_s} steps/s ({time.perf_counter() - start:.1f} s)")
        results.append(result.as_dict())
    return {"results": results}


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
