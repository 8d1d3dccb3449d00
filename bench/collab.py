"""Benchmark: simulated interactions per second of the collaboration controller.

Requirement: at least 100,000 simulated interactions/s for the parametric human with the AI's
scores precomputed, in one process. One interaction = up to R rounds of (human answer and set,
protect/supply rules, two-threshold AI set, human revision), then the truth, the two violations
and the threshold update (``engines.collab.simulate``, loops in ``loop_fast`` and ``loop_reference``).

Timed, after a warm-up run (numba compiles, or loads its cache, on first use):

- ``end_to_end`` (the headline): drawing the humans' randomness for T interactions (vectorised
  numpy), the online controller's loop over them, and the metrics (running rates and bounds);
- ``loop_only``: the sequential loop alone (``loop_fast.run_fast``);
- ``reference``: the readable one-interaction-at-a-time path on a smaller T, for comparison.

Also measured: the latency of one controller update inside a database transaction
(``engines.collab.store.record_interaction``) with 50 participants finishing interactions at once
on one shared stream, on SQLite and, when a URL is given, PostgreSQL (p50/p95 per update).

Not timed: the AI's scores (precomputed, as the requirement says) and the calibration batch.
Each figure is the median of ``--repeats`` runs. Prints one JSON line to stdout, writes the same
object (indented) to ``bench/results/collab.json`` (or ``--out``), progress on stderr.

    python bench/collab.py            # T = 1,000,000
    python bench/collab.py --quick    # T = 20,000, reference on 500
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Needs the repository on sys.path.
from bench._results import machine_info, pg_url_from_env, write_result  # noqa: E402

NAME = "collab"
GOAL_PER_S = 100_000
FULL_T, QUICK_T = 1_000_000, 20_000
FULL_REFERENCE_T, QUICK_REFERENCE_T = 5_000, 500
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=f"Simulated interactions/s of the collaboration controller (parametric human, AI scores "
                    f"precomputed). Goal: >= {GOAL_PER_S:,}/s.")
    parser.add_argument("--quick", action="store_true", help=f"small run for tests: T = {QUICK_T:,}")
    parser.add_argument("--T", type=int, default=None, help=f"interactions per timed run (default {FULL_T:,})")
    parser.add_argument("--rounds", type=int, default=3, help="maximum rounds per interaction (default 3)")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per figure (default 5; --quick: 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    parser.add_argument("--pg-url", default=None,
                        help="PostgreSQL URL for the controller-update latency (default: $HAI_BENCH_PG_URL, else "
                             "$HAI_TEST_DATABASE_URL; empty: SQLite only)")
    parser.add_argument("--db-participants", type=int, default=50, help="concurrent participants for the DB part")
    args = parser.parse_args(argv)
    if args.T is not None and args.T < 1:
        parser.error("--T must be >= 1")
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def _timed(fn, repeats: int, bar) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - started)
        bar.update(1)
    return statistics.median(times), out


def run(args: argparse.Namespace) -> dict:
    import numpy as np
    from tqdm import tqdm

    from engines.collab import simulate as sim
    from engines.collab.ai_sources import AICases
    from engines.collab.humans import ParamTrack, draw_humans
    from engines.collab.loop_fast import COMPILED, run_fast
    from engines.collab.loop_reference import run_parametric
    from engines.platform.provenance import code_version

    T = args.T or (QUICK_T if args.quick else FULL_T)
    reference_T = min(T, QUICK_REFERENCE_T if args.quick else FULL_REFERENCE_T)
    repeats = args.repeats or (2 if args.quick else 5)
    config = sim.SimulationConfig(T=T, rounds=args.rounds, seed=args.seed, with_fixed=False, with_matched=False, engine="fast")
    started = time.perf_counter()
    prepared = sim.prepare(config)  # AI scores and calibration: precomputed, not timed
    p = prepared
    human_rng = np.random.default_rng(args.seed + 1)

    def end_to_end():
        draws = draw_humans(p.cases.labels, p.cases.difficulty, p.params, config.rounds, config.n_labels, human_rng)
        trace = run_fast(p.cases, draws, p.params, p.protect, p.supply, p.state, config.rounds)
        return sim.summarise(trace, p.cases.labels, config)

    def loop_only():
        return run_fast(p.cases, p.draws, p.params, p.protect, p.supply, p.state, config.rounds)

    head = slice(0, reference_T)
    small_cases = AICases(p.cases.probs[head], p.cases.labels[head], p.cases.difficulty[head])
    small_params = ParamTrack.constant(p.params.at(0), reference_T)  # stationary: every t has the same person
    small_draws = draw_humans(small_cases.labels, small_cases.difficulty, small_params, config.rounds,
                              config.n_labels, np.random.default_rng(args.seed))

    def reference():
        return run_parametric(small_cases, small_draws, small_params, p.protect, p.supply, p.state, config.rounds)

    with tqdm(total=1 + 3 * repeats, desc=NAME, unit="run", file=sys.stderr, disable=None) as bar:
        warm_started = time.perf_counter()
        run_fast(small_cases, small_draws, small_params, p.protect, p.supply, p.state, config.rounds)
        warm_s = time.perf_counter() - warm_started
        bar.update(1)
        e2e_s, summary = _timed(end_to_end, repeats, bar)
        loop_s, _ = _timed(loop_only, repeats, bar)
        ref_s, _ = _timed(reference, repeats, bar)

    def row(seconds: float, n: int) -> dict:
        return {"interactions": n, "median_s": round(seconds, 5), "interactions_per_s": round(n / seconds, 1),
                "ratio_to_goal": round(n / seconds / GOAL_PER_S, 3)}

    results = {"end_to_end": row(e2e_s, T), "loop_only": row(loop_s, T), "reference": row(ref_s, reference_T)}
    headline = {**results["end_to_end"], "pass": results["end_to_end"]["interactions_per_s"] >= GOAL_PER_S}
    return {
        "benchmark": NAME,
        "requirement": f">= {GOAL_PER_S:,} simulated interactions/s, parametric human, AI scores precomputed, "
                       "one process",
        "headline": {"label": "end to end: human draws + online loop + metrics", **headline},
        "goal": {"interactions_per_s": GOAL_PER_S, "met": headline["pass"]},
        "results": results,
        "compiled": COMPILED,  # numba present (else the fast path runs as plain Python)
        "warmup_s": round(warm_s, 3),
        "sanity": {"violation_rate": summary.violation_rate, "bound": summary.bound, "accuracy": summary.accuracy},
        "config": {"quick": args.quick, "T": T, "rounds": config.rounds, "repeats": repeats, "seed": args.seed,
                   "human": config.human, "schedule": config.schedule, "protect_rule": config.protect_rule,
                   "supply_rule": config.supply_rule},
        "machine": machine_info(),
        "code_version": code_version(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 2),
    }


def controller_update_latency(base_url: str | None, participants: int, interactions: int) -> dict:
    """p50/p95 of one ``record_interaction`` (a write transaction) with N threads on one stream."""
    import threading

    from engines.collab import store
    from engines.collab.controller import ControllerConfig, ControllerState
    from engines.platform.db import get_engine
    from engines.platform.scratch import scratch_database

    with scratch_database(base_url) as url:
        engine = get_engine(url)
        store.ensure_stream("bench:online", ControllerState.initial(ControllerConfig()), engine=engine)
        latencies: list[list[float]] = [[] for _ in range(participants)]
        failures: list[BaseException] = []
        barrier = threading.Barrier(participants)

        def participant(i: int) -> None:
            try:
                barrier.wait()
                for j in range(interactions):
                    started = time.perf_counter()
                    store.record_interaction("bench:online", f"{i}:{j}", err_harm=(i + j) % 10 == 0,
                                             err_comp=(i * j) % 7 == 0, engine=engine)
                    latencies[i].append((time.perf_counter() - started) * 1000)
            except BaseException as exc:  # noqa: BLE001 - reported below
                failures.append(exc)

        threads = [threading.Thread(target=participant, args=(i,)) for i in range(participants)]
        wall = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - wall
        if failures:
            raise RuntimeError(f"{len(failures)} participants failed: {failures[0]!r}")
        store.audit("bench:online", engine=engine)  # every update applied once, in order
        flat = sorted(x for row in latencies for x in row)
        return {"database": url.split("://", 1)[0].split("+")[0], "participants": participants,
                "updates": len(flat), "p50_ms": round(statistics.median(flat), 2),
                "p95_ms": round(flat[int(0.95 * (len(flat) - 1))], 2), "updates_per_s": round(len(flat) / wall, 1)}


def database_part(args: argparse.Namespace) -> list[dict]:
    pg_url = args.pg_url
    if pg_url is None:
        pg_url = pg_url_from_env()
    interactions = 5 if args.quick else 20
    participants = min(args.db_participants, 10) if args.quick else args.db_participants
    rows = [controller_update_latency(None, participants, interactions)]
    if pg_url:
        try:
            rows.append(controller_update_latency(pg_url, participants, interactions))
        except Exception as exc:  # noqa: BLE001 - an unreachable server is recorded, not fatal
            rows.append({"database": "postgresql", "skipped": f"{type(exc).__name__}: {exc}"[:300]})
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # Only the JSON line goes to stdout: anything a library prints during the run goes to stderr.
    with contextlib.redirect_stdout(sys.stderr):
        result = run(args)
        result["controller_update_db"] = database_part(args)
    write_result(result, args.out)
    print(json.dumps(result, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
