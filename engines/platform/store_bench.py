"""Step-commit latency of the study runtime under concurrent participants.

N threads enter a 20-step study together, then submit every step as fast as they can (no think
time by default, so this is a stress test: real participants pause for seconds between steps).
Reports the latency of each ``runtime.submit`` call (p50, p95, max) and throughput in
steps/second over the submit phase. With ``think_ms`` each participant pauses a random
0.5-1.5 x ``think_ms`` before each step (outside the timed call), which models real traffic.

In a closed loop with zero think time, Little's law fixes the mean step latency at
N / throughput: at N = 50 the mean stays under 50 ms only above 1000 steps/s.
"""

from __future__ import annotations

import random
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
    think_ms: float = 0.0
    enter_p95_ms: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def run_once(url: str, participants: int, steps: int = BENCH_STEPS, *, think_ms: float = 0.0, seed: int = 0,
             on_step: Callable[[], None] | None = None) -> StoreBenchResult:
    """Run N concurrent participants against the (migrated, empty) database at ``url``.

    All N enter at once (condition balance under concurrent arrival), then all start submitting
    at once; ``wall_s`` and the throughput cover that submit phase. ``on_step`` is called after
    each committed step, outside the timed call (progress bars).
    """
    from engines.platform.db import get_engine

    engine = get_engine(url)
    protocol = bench_protocol(steps)
    slug = f"bench-{participants}"
    study_admin.create_study(slug, protocol.name, engine=engine)
    latencies: list[list[float]] = [[] for _ in range(participants)]
    enter_ms: list[float] = [0.0] * participants
    errors: list[BaseException] = []
    arrive, go = threading.Barrier(participants), threading.Barrier(participants + 1)

    def participant(i: int) -> None:
        rng = random.Random(seed * 100_003 + i)
        try:
            arrive.wait()
            start = time.perf_counter()
            entered = runtime.enter(slug, {"pid": f"bench{i}"}, engine=engine)
            enter_ms[i] = (time.perf_counter() - start) * 1000
            go.wait()
            for step in range(steps):
                if think_ms > 0:
                    time.sleep(rng.uniform(0.5, 1.5) * think_ms / 1000)
                start = time.perf_counter()
                result = runtime.submit(entered.participant_id, step, {"value": step}, engine=engine)
                latencies[i].append((time.perf_counter() - start) * 1000)
                if not result.accepted or result.duplicate:
                    raise RuntimeError(f"participant {i}, step {step}: not stored ({result})")
                if on_step is not None:
                    on_step()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
            arrive.abort()
            go.abort()

    threads = [threading.Thread(target=participant, args=(i,), name=f"bench-{i}") for i in range(participants)]
    for t in threads:
        t.start()
    try:
        go.wait()
    except threading.BrokenBarrierError:
        pass
    wall = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    if errors:
        first = next((e for e in errors if not isinstance(e, threading.BrokenBarrierError)), errors[0])
        raise RuntimeError(f"{len(errors)} participants failed; first: {first!r}") from first
    flat = [x for row in latencies for x in row]
    progress = study_admin.progress(slug, engine=engine)
    return StoreBenchResult(
        database=url.split("://", 1)[0].split("+")[0], participants=participants, steps_per_participant=steps,
        commits=len(flat), p50_ms=round(statistics.median(flat), 2), p95_ms=round(_percentile(flat, 0.95), 2),
        max_ms=round(max(flat), 2), throughput_steps_per_s=round(len(flat) / wall, 1), wall_s=round(wall, 3),
        balance={p.condition: p.completed for p in progress}, think_ms=think_ms,
        enter_p95_ms=round(_percentile(enter_ms, 0.95), 2),
    )


def run_store_benchmark(base_urls: dict[str, str | None], sizes: tuple[int, ...] = (1, 10, 50),
                        steps: int = BENCH_STEPS,
                        on_result: Callable[[StoreBenchResult], None] | None = None, *, think_ms: float = 0.0,
                        on_step: Callable[[], None] | None = None) -> list[StoreBenchResult]:
    """For every database and N, a fresh scratch database and one ``run_once``."""
    results = []
    for _name, base in base_urls.items():
        for n in sizes:
            with scratch_database(base) as url:
                result = run_once(url, n, steps, think_ms=think_ms, on_step=on_step)
            results.append(result)
            if on_result:
                on_result(result)
    return results
