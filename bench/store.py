"""Step-commit latency of the study runtime under concurrent participants (run by ``bench/platform_store.py``).

N threads enter a 20-step study together, then submit every step as fast as they can (no think
time by default, so this is a stress test: real participants pause for seconds between steps).
Reports the latency of each ``runtime.submit`` call (p50, p95, max) and throughput in
steps/second over the submit phase. With ``think_ms`` each participant pauses a random
0.5-1.5 x ``think_ms`` before each step (outside the timed call), which models real traffic.

In a closed loop with zero think time, Little's law fixes the mean step latency at
N / throughput: at N = 50 the mean stays under 50 ms only above 1000 steps/s.

Before the timed study the same participants complete an identical warm-up study on the same
engine, untimed in the headline: it pays what a running app pays once per process and
connection, not per step (compiling each statement and each set of updated columns, opening
the pool's connections, the server's first plans and catalog caches). The timed study takes
well under a second at N = 50, so those one-time costs, which land on the first and the last
step of every participant, would otherwise make up its slowest 5 % and be what p95 measures.
The warm-up runs without think time; its own p95 is reported beside the timed figures
(``warmup_p95_ms``: the cold process at zero think time), and ``warmup=False`` measures a cold
process instead.

What participants feel is measured end to end, through the running app, by ``bench/load.py``;
this one isolates the store.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
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
    processes: int = 1
    warmup: bool = False
    warmup_p95_ms: float | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


@dataclass
class _Played:
    """What the participants one process ran saw: per participant, its step latencies and entry time."""

    latencies: dict[int, list[float]]
    enter_ms: dict[int, float]
    warmup_latencies: list[float]
    first_start: float  # perf_counter (system-wide monotonic clock) when the first submit began
    last_end: float
    errors: list[str]


def _play(url: str, slug: str, steps: int, numbers: list[int], think_ms: float, seed: int,
          arrive, go, on_step: Callable[[], None] | None = None, warmup_slug: str | None = None) -> _Played:
    """Threads for participants ``numbers``: all enter together (``arrive``), then submit as fast as
    they can from ``go`` on. ``arrive`` and ``go`` are barriers shared with every other participant
    (threading's in one process, multiprocessing's across several). With ``warmup_slug`` each
    first completes that study the same way, before ``arrive``."""
    from engines.platform.db import get_engine

    engine = get_engine(url)
    bench_protocol(steps)  # a process started for the benchmark registers the protocol itself
    played = _Played({i: [] for i in numbers}, {}, [], float("inf"), 0.0, [])
    lock = threading.Lock()

    def submit_timed(i: int, participant_id: int, step: int) -> tuple[float, float]:
        """Submit ``step`` and check that it was stored: its (start, end) on the perf_counter clock."""
        start = time.perf_counter()
        result = runtime.submit(participant_id, step, {"value": step}, engine=engine)
        end = time.perf_counter()
        if not result.accepted or result.duplicate:
            raise RuntimeError(f"participant {i}, step {step}: not stored ({result})")
        return start, end

    def warm_up(i: int) -> None:
        # Without think time: it warms the same code paths, in a fraction of the time.
        entered = runtime.enter(warmup_slug, {"pid": f"warmup{i}"}, engine=engine)
        for step in range(steps):
            start, end = submit_timed(i, entered.participant_id, step)
            with lock:
                played.warmup_latencies.append((end - start) * 1000)

    def participant(i: int) -> None:
        rng = random.Random(seed * 100_003 + i)
        try:
            if warmup_slug is not None:
                warm_up(i)
            arrive.wait()
            start = time.perf_counter()
            entered = runtime.enter(slug, {"pid": f"bench{i}"}, engine=engine)
            played.enter_ms[i] = (time.perf_counter() - start) * 1000
            go.wait()
            for step in range(steps):
                if think_ms > 0:
                    time.sleep(rng.uniform(0.5, 1.5) * think_ms / 1000)
                start, end = submit_timed(i, entered.participant_id, step)
                played.latencies[i].append((end - start) * 1000)
                with lock:
                    played.first_start = min(played.first_start, start)
                    played.last_end = max(played.last_end, end)
                if on_step is not None:
                    on_step()
        except threading.BrokenBarrierError:
            played.errors.append(f"participant {i}: stopped because another participant failed")
        except BaseException as exc:  # noqa: BLE001 - reported by the caller
            played.errors.append(f"participant {i}: {exc!r}")
            arrive.abort()
            go.abort()

    threads = [threading.Thread(target=participant, args=(i,), name=f"bench-{i}") for i in numbers]
    gc.collect()
    gc.freeze()  # as the app does once its modules are imported (app.freeze_long_lived_objects)
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return played


def _play_in_child(url: str, slug: str, steps: int, numbers: list[int], think_ms: float, seed: int,
                   arrive, go, results, warmup_slug: str | None = None) -> None:
    """A benchmark process: ``_play`` its participants, send what they saw to the parent."""
    try:
        results.put(_play(url, slug, steps, numbers, think_ms, seed, arrive, go, warmup_slug=warmup_slug))
    except BaseException as exc:  # noqa: BLE001 - the parent reports it
        arrive.abort()
        go.abort()
        results.put(_Played({}, {}, [], float("inf"), 0.0, [f"process with participants {numbers[:3]}...: {exc!r}"]))


def run_once(url: str, participants: int, steps: int = BENCH_STEPS, *, think_ms: float = 0.0, seed: int = 0,
             on_step: Callable[[], None] | None = None, processes: int = 1, warmup: bool = True) -> StoreBenchResult:
    """Run N concurrent participants against the (migrated, empty) database at ``url``.

    All N enter at once (condition balance under concurrent arrival), then all start submitting
    at once; ``wall_s`` and the throughput cover that submit phase. ``processes`` > 1 deals the
    participants round-robin to that many Python processes (threads in each), as several app
    processes serve them in a deployment (``make serve``). ``on_step`` is called after each
    committed step, outside the timed call (progress bars); with several processes, for all of a
    process's steps once it ends. ``warmup``: the same participants first complete an identical
    study on the same engine (module docstring); its steps are left out of every figure but
    ``warmup_p95_ms``.
    """
    from engines.platform.db import get_engine

    if not 1 <= processes <= participants:
        raise ValueError(f"processes must be between 1 and the {participants} participants, got {processes}")
    engine = get_engine(url)
    protocol = bench_protocol(steps)
    slug = f"bench-{participants}-p{processes}"
    study_admin.create_study(slug, protocol.name, engine=engine)
    warmup_slug = f"{slug}-warmup" if warmup else None
    if warmup_slug is not None:
        study_admin.create_study(warmup_slug, protocol.name, engine=engine)
    played: list[_Played] = []
    if processes == 1:
        arrive, go = threading.Barrier(participants), threading.Barrier(participants + 1)
        worker = threading.Thread(target=lambda: played.append(
            _play(url, slug, steps, list(range(participants)), think_ms, seed, arrive, go, on_step, warmup_slug)))
        worker.start()
        with contextlib.suppress(threading.BrokenBarrierError):
            go.wait()
        worker.join()
    else:
        context = multiprocessing.get_context("spawn")  # a fresh interpreter each: no copied engine or locks
        arrive, go = context.Barrier(participants), context.Barrier(participants + 1)
        results = context.Queue()
        children = [context.Process(target=_play_in_child, name=f"store-bench-{k}", args=(
            url, slug, steps, list(range(k, participants, processes)), think_ms, seed, arrive, go, results,
            warmup_slug))
            for k in range(processes)]
        for child in children:
            child.start()
        with contextlib.suppress(threading.BrokenBarrierError):
            go.wait()
        played = [results.get() for _ in children]
        for child in children:
            child.join()
        if on_step is not None:
            for _ in range(sum(len(v) for p in played for v in p.latencies.values())):
                on_step()
    errors = [e for p in played for e in p.errors]
    if errors:
        first = next((e for e in errors if "another participant failed" not in e), errors[0])
        raise RuntimeError(f"{len(errors)} participants failed; first: {first}")
    flat = [x for p in played for row in p.latencies.values() for x in row]
    enter_ms = [x for p in played for x in p.enter_ms.values()]
    warmup_ms = [x for p in played for x in p.warmup_latencies]
    wall = max(p.last_end for p in played) - min(p.first_start for p in played)
    progress = study_admin.progress(slug, engine=engine)
    return StoreBenchResult(
        database=url.split("://", 1)[0].split("+")[0], participants=participants, steps_per_participant=steps,
        commits=len(flat), p50_ms=round(statistics.median(flat), 2), p95_ms=round(_percentile(flat, 0.95), 2),
        max_ms=round(max(flat), 2), throughput_steps_per_s=round(len(flat) / wall, 1), wall_s=round(wall, 3),
        balance={p.condition: p.completed for p in progress}, think_ms=think_ms,
        enter_p95_ms=round(_percentile(enter_ms, 0.95), 2), processes=processes,
        warmup=warmup, warmup_p95_ms=round(_percentile(warmup_ms, 0.95), 2) if warmup_ms else None,
    )


def run_store_benchmark(base_urls: dict[str, str | None], sizes: tuple[int, ...] = (1, 10, 50),
                        steps: int = BENCH_STEPS,
                        on_result: Callable[[StoreBenchResult], None] | None = None, *, think_ms: float = 0.0,
                        on_step: Callable[[], None] | None = None,
                        processes: tuple[int, ...] = (1,), warmup: bool = True) -> list[StoreBenchResult]:
    """For every database, process count and N, a fresh scratch database and one ``run_once``.

    A process count above N is left out (a process would have no participant).
    """
    results = []
    for _name, base in base_urls.items():
        for count in processes:
            for n in sizes:
                if count > n:
                    continue
                with scratch_database(base) as url:
                    result = run_once(url, n, steps, think_ms=think_ms, on_step=on_step, processes=count,
                                      warmup=warmup)
                results.append(result)
                if on_result:
                    on_result(result)
    return results
