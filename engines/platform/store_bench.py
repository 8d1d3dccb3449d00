"""Step-commit latency of the study runtime under concurrent participants.

N threads each enter a 20-step study and submit every step as fast as they can (no think
time, so this is a stress test: real participants pause for seconds between steps). Reports
the latency of each ``runtime.submit`` call (p50, p95, max) and throughput in steps/second.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import ClassVar

from pydantic import BaseModel, Field

from engines.platform import runtime, study_admin
from engines.platform.registry import register_protocol
from engines.platform.scratch import scratch_database
from engines.platform.study import Constants, Step, StudyProtocol

BENCH_STEPS = 20


class _Answer(BaseModel):
    value: int = Field(ge=0, le=100, title="A number")


def bench_protocol(steps: int = BENCH_STEPS) -> StudyProtocol:
    """A study of ``steps`` one-field form steps, over two conditions."""

    class C(Constants):
        NAME = f"store_bench_{steps}"
        TITLE = "Store benchmark"
        CONDITIONS = ("a", "b")

    class Item(Step):
        Response: ClassVar[type[BaseModel]] = _Answer
        repeat: ClassVar[int] = steps

    return register_protocol(StudyProtocol(C.NAME, C.TITLE, "", C, [Item]), replace=True)


@dataclass(frozen=True)
class StoreBenchResult:
    database: str
    participants: int
    steps_per_participant: int
    commits: int
    p50_ms: float
    p95_ms: float
    max_ms: float
    throughput_steps_per_s: float
    wall_s: float
    balance: dict[str, int]

    def as_dict(self) -> dict:
        return asdict(self)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_once(url: str, participants: int, steps: int = BENCH_STEPS) -> StoreBenchResult:
    """Run N concurrent participants against the (migrated, empty) database at ``url``."""
    from engines.platform.db import get_engine

    engine = get_engine(url)
    protocol = bench_protocol(steps)
    slug = f"bench-{participants}"
    study_admin.create_study(slug, protocol.name, engine=engine)
    latencies: list[list[float]] = [[] for _ in range(participants)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(participants)

    def participant(i: int) -> None:
        try:
            barrier.wait()
            entered = runtime.enter(slug, {"pid": f"bench{i}"}, engine=engine)
            for step in range(steps):
                start = time.perf_counter()
                runtime.submit(entered.participant_id, step, {"value": step}, engine=engine)
                latencies[i].append((time.perf_counter() - start) * 1000)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=participant, args=(i,)) for i in range(participants)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    if errors:
        raise RuntimeError(f"{len(errors)} participants failed; first: {errors[0]!r}") from errors[0]
    flat = [x for row in latencies for x in row]
    progress = study_admin.progress(slug, engine=engine)
    return StoreBenchResult(
        database=url.split("://", 1)[0].split("+")[0], participants=participants, steps_per_participant=steps,
        commits=len(flat), p50_ms=round(statistics.median(flat), 2), p95_ms=round(_percentile(flat, 0.95), 2),
        max_ms=round(max(flat), 2), throughput_steps_per_s=round(len(flat) / wall, 1), wall_s=round(wall, 3),
        balance={p.condition: p.completed for p in progress},
    )


def run_store_benchmark(base_urls: dict[str, str | None], sizes: tuple[int, ...] = (1, 10, 50),
                        steps: int = BENCH_STEPS,
                        on_result: Callable[[StoreBenchResult], None] | None = None) -> list[StoreBenchResult]:
    """For every database and N, a fresh scratch database and one ``run_once``."""
    results = []
    for _name, base in base_urls.items():
        for n in sizes:
            with scratch_database(base) as url:
                result = run_once(url, n, steps)
            results.append(result)
            if on_result:
                on_result(result)
    return results
