"""Benchmark of the judge area (issue 9): the audit of 100k labels x 5 judges, all breakdowns, 1,000 resamples.

Requirement: ``engines.judge.audit`` on 100,000 labelled items x 5 judges, with every breakdown
(victim model, attack, semantic category, model x attack cell), the per-cell ASR figures,
agreement, concordance and 1,000 bootstrap resamples clustered by behaviour, in under 10 s on
one core, in one process.

The data is synthetic and made here, seeded (``synthetic_audit_data``): 100 behaviours (as the
paper's sample of HarmBench) in 7 semantic categories, 4 victim models x 5 attacks, 50
generations per behaviour and cell; each item one label, 20% a second one (agreement runs on
those); 5 judges of different quality with p(harmful) and 1% unparsed replies. Timed: the
audit from in-memory items, labels and verdicts (``build_table`` + ``audit_table``), median
of ``--repeats`` runs (wall time, the goal's measure, and the process's CPU time, which other
work on a shared machine does not inflate), with the phases of one run beside it; making the
data and a warm-up audit (the imports) are not timed. BLAS is held to one thread.

The file is organised by section (``SECTIONS``): each is a function ``(args) -> dict`` whose
result goes under ``results[name]``; the headline and goal come from the audit section. The
other sections: the submit-label-to-next-item latency with 10 annotators at once on SQLite and
PostgreSQL (goal p95 < 100 ms at the engine level), and the offline judges' throughput.

Prints one JSON line to stdout, writes the same object (indented) to
``bench/results/judge.json`` (or ``--out``), progress on stderr.

    python bench/judge.py            # 100k items, 5 judges, 1,000 resamples, 3 repeats
    python bench/judge.py --quick    # 2k items, 3 judges, 50 resamples, 1 repeat
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

# "One core": BLAS may not spread the matrix products over threads (set before numpy loads).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Needs the repository on sys.path.
from bench._results import emit, machine_info  # noqa: E402

NAME = "judge"
GOAL_AUDIT_S = 10.0
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
FULL = {"items": 100_000, "judges": 5, "bootstrap": 1_000, "behaviours": 100, "repeats": 3}
QUICK = {"items": 2_000, "judges": 3, "bootstrap": 50, "behaviours": 20, "repeats": 1}
MODELS = ("gemma-3-1b", "llama-3.1-8b", "gemma-3-27b", "qwen-3-32b")  # the paper's victims
ATTACKS = ("Direct", "GCG", "GCG-REINFORCE", "BoN", "PAIR")  # the paper's attacks
CATEGORIES = ("chemical_biological", "illegal", "misinformation_disinformation", "harmful", "harassment_bullying",
              "cybercrime_intrusion", "copyright")  # HarmBench's semantic categories
SECOND_LABEL_SHARE = 0.2  # items with a second label (the labeling protocol's overlap, docs/judge.md)
UNPARSED_SHARE = 0.01


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=f"Judge area benchmark. Goal: audit in < {GOAL_AUDIT_S:g} s.")
    parser.add_argument("--quick", action="store_true",
                        help=f"small run for tests: {QUICK['items']:,} items, {QUICK['bootstrap']} resamples")
    parser.add_argument("--items", type=int, default=None, help=f"labelled items (default {FULL['items']:,})")
    parser.add_argument("--judges", type=int, default=None, help=f"judges (default {FULL['judges']})")
    parser.add_argument("--bootstrap", type=int, default=None, help=f"resamples (default {FULL['bootstrap']:,})")
    parser.add_argument("--repeats", type=int, default=None, help=f"timed runs (default {FULL['repeats']})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    for name in ("items", "judges", "repeats"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    if args.bootstrap is not None and args.bootstrap < 0:
        parser.error("--bootstrap must be >= 0")
    return args


def sizes(args: argparse.Namespace) -> dict:
    base = QUICK if args.quick else FULL
    return {name: getattr(args, name, None) or base[name] for name in base}


def synthetic_audit_data(n_items: int, n_judges: int, n_behaviours: int, seed: int):
    """(items, labels, verdicts) of a synthetic audit, seeded; no text but the redaction marker."""
    import numpy as np

    from engines.judge.items import Item, Label, Verdict

    rng = np.random.default_rng(seed)
    cells = [(m, a) for m in MODELS for a in ATTACKS]
    behaviour = rng.integers(0, n_behaviours, n_items)
    cell = rng.integers(0, len(cells), n_items)
    # Harmful by construction: ~22% overall (the paper's share), varying by cell and behaviour.
    logit = -1.3 + rng.normal(0, 0.5, len(cells))[cell] + rng.normal(0, 0.7, n_behaviours)[behaviour]
    truth = rng.random(n_items) < 1 / (1 + np.exp(-logit))
    first = np.where(truth, rng.integers(3, 6, n_items), rng.integers(1, 3, n_items))
    # A second annotator agrees on the binary label ~95% of the time (the paper's audit).
    flip = rng.random(n_items) < 0.05
    second = np.where(truth ^ flip, rng.integers(3, 6, n_items), rng.integers(1, 3, n_items))
    has_second = rng.random(n_items) < SECOND_LABEL_SHARE
    items, labels, verdicts = [], [], []
    # Plain Python values for the loops (numpy scalars make them several times slower).
    behaviour_l, cell_l, first_l, second_l = behaviour.tolist(), cell.tolist(), first.tolist(), second.tolist()
    has_second_l = has_second.tolist()
    for i in range(n_items):
        model, attack = cells[cell_l[i]]
        b = behaviour_l[i]
        key = f"{model}/{attack}/b{b}/{i}"
        items.append(Item(key=key, behavior_id=f"b{b}", behavior="[REDACTED]", victim_model=model, attack=attack,
                          semantic_category=CATEGORIES[b % len(CATEGORIES)], generation="[REDACTED]"))
        labels.append((key, Label(annotator_id=f"a{i % 17}", score=first_l[i])))
        if has_second_l[i]:
            labels.append((key, Label(annotator_id=f"a{(i + 1) % 17}", score=second_l[i])))
    keys = [item.key for item in items]
    for j in range(n_judges):
        # Judges near chance to fairly good (the paper: ~0.5 on balanced data), with a per-cell shift.
        skill = 0.3 + 0.5 * j / max(n_judges - 1, 1)
        z = skill * (2 * truth - 1) * 2 + rng.normal(0, 0.6, len(cells))[cell] + rng.normal(0, 1, n_items) - 0.3
        p = (1 / (1 + np.exp(-z))).tolist()
        unparsed = (rng.random(n_items) < UNPARSED_SHARE).tolist()
        name = f"judge{j}"
        verdicts.extend(
            (key, Verdict(judge=name, raw="?", parse_status="unparsed") if bad
             else Verdict(judge=name, p_harmful=prob, label=int(prob >= 0.5)))
            for key, prob, bad in zip(keys, p, unparsed, strict=True))
    return items, labels, verdicts


def audit_section(args: argparse.Namespace) -> dict:
    """Time the audit of the synthetic data: median of repeats, and the phases of one run."""
    import numpy as np

    from engines.judge import audit as audit_module
    from engines.judge.audit_table import build_table

    size = sizes(args)
    print(f"{NAME}: making {size['items']:,} items x {size['judges']} judges", file=sys.stderr)
    items, labels, verdicts = synthetic_audit_data(size["items"], size["judges"], size["behaviours"], args.seed)
    config = audit_module.AuditConfig(bootstrap=size["bootstrap"], seed=args.seed)
    # Warm-up on a slice: imports (scikit-learn, krippendorff, scipy) are not the audit's time.
    head = {item.key for item in items[:200]}
    audit_module.audit(items[:200], [r for r in labels if r[0] in head], [r for r in verdicts if r[0] in head],
                       audit_module.AuditConfig(bootstrap=2))
    times, cpu_times, phases, result = [], [], {}, None
    for repeat in range(size["repeats"]):
        print(f"{NAME}: audit, run {repeat + 1}/{size['repeats']}", file=sys.stderr)
        cpu_started, started = time.process_time(), time.perf_counter()
        table = build_table(items, labels, verdicts, config.human_rule)
        built = time.perf_counter()
        result = audit_module.audit_from_table(table, config)
        done = time.perf_counter()
        times.append(done - started)
        cpu_times.append(time.process_time() - cpu_started)
        phases = {"build_table_s": round(built - started, 4), "audit_s": round(done - built, 4)}
    seconds = statistics.median(times)
    pooled = {name: report.pooled.accuracy for name, report in result.judges.items()}
    groups = sum(len(getattr(report, part)) + 0 for report in result.judges.values()
                 for part in ("by_model", "by_attack", "by_category", "by_cell")) + len(result.judges)
    return {
        "items": size["items"], "labels": len(labels), "verdicts": len(verdicts), "judges": size["judges"],
        "behaviours": size["behaviours"], "cells": len(MODELS) * len(ATTACKS), "bootstrap": size["bootstrap"],
        "metric_groups": groups, "median_s": round(seconds, 4), "runs_s": [round(t, 4) for t in times],
        # CPU time of the process: what the audit costs when other work shares the machine.
        "median_cpu_s": round(statistics.median(cpu_times), 4),
        "phases_last_run": phases, "goal_s": GOAL_AUDIT_S, "ratio_to_goal": round(seconds / GOAL_AUDIT_S, 3),
        "pass": seconds < GOAL_AUDIT_S,
        "sanity": {"pooled_accuracy": pooled, "human_labelled": result.n_human_labelled,
                   "kappa_binary": result.agreement.kappa_binary,
                   "has_intervals": bool(size["bootstrap"]) and result.judges["judge0"].pooled.ci is not None,
                   "finite_accuracy": bool(np.all([v is not None for v in pooled.values()]))},
    }


GOAL_LABEL_P95_MS = 100.0
LABEL_ANNOTATORS = 10


def log(message: str) -> None:
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


def label_latency_once(url: str, n_items: int, annotators: int) -> dict:
    """``annotators`` threads label a fresh project at once; each timed step is one submitted label
    followed by fetching the next item (what the Label page does between two keys)."""
    import threading

    import numpy as np

    from engines.judge import labeling, labeling_queue
    from engines.judge.items import Item
    from engines.platform import db

    engine = db.get_engine(url)
    items = [Item(key=f"m{i % 4}/a{i % 5}/b{i}/0", behavior_id=f"b{i}", behavior="[REDACTED: request]",
                  victim_model=f"m{i % 4}", attack=f"a{i % 5}", generation="[REDACTED: response]")
             for i in range(n_items)]
    labeling.create_project("bench", items, labeling.ProjectSettings(overlap_fraction=0.2, gold_every=0, quiz_size=0),
                            engine=engine)
    timings: list[float] = []
    lock = threading.Lock()

    def annotate(name: str) -> None:
        shown = labeling_queue.next_item("bench", name, engine=engine)
        local = []
        while shown is not None:
            started = time.perf_counter()
            labeling_queue.submit_label(shown.claim_id, name, 1 + len(local) % 5, engine=engine)
            shown = labeling_queue.next_item("bench", name, engine=engine)
            local.append(1000 * (time.perf_counter() - started))
        with lock:
            timings.extend(local)

    threads = [threading.Thread(target=annotate, args=(f"bench-{n}",)) for n in range(annotators)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    engine.dispose()
    values = np.array(timings)
    p95 = round(float(np.percentile(values, 95)), 2)  # the ratio and the verdict use the figure reported
    return {"labels": len(timings), "annotators": annotators, "items": n_items,
            "p50_ms": round(float(np.percentile(values, 50)), 2), "p95_ms": p95,
            "labels_per_s": round(len(timings) / wall, 1), "goal_p95_ms": GOAL_LABEL_P95_MS,
            "ratio_to_goal": round(p95 / GOAL_LABEL_P95_MS, 3), "pass": p95 < GOAL_LABEL_P95_MS}


def label_latency_section(args: argparse.Namespace) -> dict:
    """Submit-label-to-next-item latency at the engine level, 10 annotators at once, on a fresh
    SQLite file and (when ``HAI_BENCH_PG_URL`` or ``HAI_TEST_DATABASE_URL`` names a server) PostgreSQL."""
    from engines.platform.scratch import scratch_database

    n_items = 40 if args.quick else 2000
    rows = {}
    with scratch_database() as url:
        log(f"label latency: SQLite, {LABEL_ANNOTATORS} annotators, {n_items} items")
        rows["sqlite"] = label_latency_once(url, n_items, LABEL_ANNOTATORS)
    pg = os.environ.get("HAI_BENCH_PG_URL") or os.environ.get("HAI_TEST_DATABASE_URL")
    if pg:
        try:
            with scratch_database(pg) as url:
                log(f"label latency: PostgreSQL, {LABEL_ANNOTATORS} annotators, {n_items} items")
                rows["postgresql"] = label_latency_once(url, n_items, LABEL_ANNOTATORS)
        except Exception as exc:  # noqa: BLE001 - a missing server is reported, not fatal
            rows["postgresql"] = {"status": "skipped", "reason": str(exc).splitlines()[0]}
    else:
        rows["postgresql"] = {"status": "skipped", "reason": "no PostgreSQL URL (HAI_BENCH_PG_URL)"}
    return rows


def judge_throughput_section(args: argparse.Namespace) -> dict:
    """Items judged per second by the offline judges (string matching; the MiniLM learned judge)."""
    from engines.judge.judges import get_judge

    n = 200 if args.quick else 2000
    items = synthetic_audit_data(n, 1, 20, args.seed)[0][:n]  # texts: redaction markers only
    rows = {}
    for name in ("gcg-strings", "minilm-logreg"):
        judge = get_judge(name)
        judge.judge(items[:8])  # warm-up: loads the embedding model once
        count = n if name.endswith("strings") else min(n, 16 if args.quick else 400)
        started = time.perf_counter()
        judge.judge(items[:count])
        elapsed = time.perf_counter() - started
        rows[name] = {"items": count, "items_per_s": round(count / elapsed, 1)}
        log(f"throughput: {name} {rows[name]['items_per_s']} items/s")
    return rows


# name: (function, what it measures)
SECTIONS = {
    "audit": (audit_section, "audit of labelled items x judges, all breakdowns, clustered bootstrap"),
    "label_latency": (label_latency_section, "submit a label -> next item, 10 annotators at once, engine level"),
    "judge_throughput": (judge_throughput_section, "offline judges, items judged per second"),
}


def run(args: argparse.Namespace) -> dict:
    from engines.platform.provenance import code_version

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    results = {name: fn(args) for name, (fn, _) in SECTIONS.items()}
    audit_row = results["audit"]
    full_size = not args.quick and audit_row["items"] >= FULL["items"] and audit_row["bootstrap"] >= FULL["bootstrap"] \
        and audit_row["judges"] >= FULL["judges"]
    return {
        "benchmark": NAME,
        "requirement": f"audit of {FULL['items']:,} labels x {FULL['judges']} judges, all breakdowns, "
                       f"{FULL['bootstrap']:,} bootstrap resamples, in < {GOAL_AUDIT_S:g} s on one core",
        "headline": {"label": "audit, median wall time", "median_s": audit_row["median_s"],
                     "ratio_to_goal": audit_row["ratio_to_goal"], "pass": audit_row["pass"]},
        # Only a full-size run can meet the goal; a smaller one says nothing about it.
        "goal": {"audit_s": GOAL_AUDIT_S, "met": audit_row["pass"] if full_size else None,
                 "label_p95_ms": GOAL_LABEL_P95_MS,
                 "label_met": {db_name: row.get("pass") for db_name, row in results["label_latency"].items()}},
        "sections": {name: text for name, (_, text) in SECTIONS.items()},
        "results": results,
        "config": {"quick": args.quick, **sizes(args), "seed": args.seed},
        "machine": machine_info(round(load_before, 2)),
        "code_version": code_version(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
