"""bench/load.py: --quick on SQLite completes every participant through the real server with every row
stored; the goal, the capacity per core and the comparison with a baseline are judged as stated.

Timings are not judged (they depend on the machine); only that each was taken, is positive, and is
reported against the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "load.py"
LATENCY_KEYS = {"samples", "p50_ms", "p95_ms", "max_ms", "min_ms", "mean_ms"}
ROW_KEYS = {"processes", "participants", "participants_per_process", "submit_next", "rejected", "first_load",
            "by_step", "by_server", "slowest", "participants_failed", "errors", "rows_expected", "rows_stored",
            "participants_completed", "stored_problems", "stored_problem_count", "nothing_lost", "wall_s",
            "throughput_steps_per_s", "server_cpu_s", "server_cpu_ms_per_request", "participants_per_busy_core",
            "client_cpu_share", "limit_p95_ms", "p95_ratio_to_limit", "pass"}


@pytest.fixture(scope="module")
def quick_run_with_baseline(tmp_path_factory):
    """One quick run, with the last commit's code as the baseline (each pass starts its own servers:
    the script's subprocess smoke test, taken once for the tests below)."""
    out = tmp_path_factory.mktemp("load") / "load.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--baseline", "HEAD", "--database", "sqlite",
                           "--out", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    return proc, out


@pytest.mark.slow
def test_quick_run_completes_every_participant(quick_run_with_baseline):
    proc, out = quick_run_with_baseline
    assert proc.returncode == 0, proc.stderr[-3000:]

    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result

    assert {"benchmark", "requirement", "headline", "goal", "capacity", "config", "database", "results", "warmup",
            "machine", "code_version", "timestamp", "duration_s"} <= set(result)
    assert result["benchmark"] == "load"
    assert result["database"]["kind"] == "sqlite"
    assert {"cpu_count", "python", "load_avg_1min"} <= set(result["machine"])
    config = result["config"]
    assert config["quick"] is True and config["participants"] == [2] and config["processes"] == [1]
    assert result["goal"]["met"] is None  # quick runs stop below K = 100 on 2 processes: nothing to judge
    assert result["every_row_stored"] is True
    # Without a baseline there is nothing to compare (the run above has one: its comparison is below).
    assert _load_module().comparison(result["results"], []) is None
    per_core = result["capacity"]["1"]
    [row] = result["results"]
    # Within the limit or not depends on the machine's load: the capacity follows the row's verdict.
    assert row["pass"] == (row["submit_next"]["p95_ms"] < row["limit_p95_ms"] and row["nothing_lost"])
    assert (per_core["cores_used"], per_core["participants_per_core_within_limit"]) == (1, 2.0 if row["pass"] else None)
    assert ROW_KEYS <= set(row), sorted(ROW_KEYS - set(row))
    k = row["participants"]
    assert row["errors"] == [] and row["participants_failed"] == 0
    assert row["participants_completed"] == k
    assert row["rows_stored"] == row["rows_expected"] == k * config["rows_per_participant"] > 0
    assert row["stored_problem_count"] == 0 and row["nothing_lost"] is True

    submit = row["submit_next"]
    assert LATENCY_KEYS <= set(submit)
    assert submit["samples"] == k * config["accepted_per_participant"]
    assert 0 < submit["min_ms"] <= submit["p50_ms"] <= submit["p95_ms"] <= submit["max_ms"]
    assert row["first_load"]["samples"] == k and row["first_load"]["min_ms"] > 0
    refused = config["submits_per_participant"] - config["accepted_per_participant"]
    assert (row["rejected"] or {"samples": 0})["samples"] == k * refused
    assert row["throughput_steps_per_s"] > 0 and row["wall_s"] > 0 and row["server_cpu_s"] > 0
    assert row["p95_ratio_to_limit"] == round(submit["p95_ms"] / row["limit_p95_ms"], 3)
    assert row["pass"] is (submit["p95_ms"] < row["limit_p95_ms"])
    assert result["headline"]["results"]["1"]["p95_ms"] == submit["p95_ms"]
    assert [w["cold_first_load_ms"] > 0 for w in result["warmup"]["1"]] == [True]


@pytest.mark.slow
def test_a_baseline_revision_runs_the_same_pass_beside_this_code(quick_run_with_baseline):
    proc, out = quick_run_with_baseline
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True).stdout.strip()
    baseline = result["baseline"]
    assert (baseline["ref"], baseline["commit"]) == ("HEAD", head)
    [theirs], [mine] = baseline["results"], result["results"]
    assert (theirs["code"], mine["code"]) == ("baseline", "current")
    for row in (theirs, mine):  # both served every participant, stored every row, and were measured
        assert row["nothing_lost"] is True and row["rows_stored"] == row["rows_expected"] > 0
        assert row["server_cpu_s"] > 0
    [pair] = result["comparison"]["pairs"]
    assert pair["p95_ms"] == mine["submit_next"]["p95_ms"] and pair["baseline_p95_ms"] == theirs["submit_next"]["p95_ms"]
    assert pair["regression"] is None  # 16 submits: too few to judge
    assert result["headline"]["results"]["1"]["baseline_p95_ms"] == theirs["submit_next"]["p95_ms"]
    assert result["config"]["pass_order"] == ["current P=1", "baseline P=1"]


def _row(processes: int, k: int, p95: float, *, samples: int = 800, lost: bool = False) -> dict:
    return {"processes": processes, "participants": k, "participants_per_process": k / processes,
            "submit_next": {"p95_ms": p95, "samples": samples}, "p95_ratio_to_limit": round(p95 / 300, 3),
            "nothing_lost": not lost, "pass": p95 < 300 and not lost, "participants_per_busy_core": 80.0}


def _load_module():
    sys.path.insert(0, str(REPO_ROOT))
    from bench import load

    return load


def test_the_goal_is_judged_at_a_hundred_participants_on_two_processes():
    load = _load_module()
    rows = [_row(1, 100, 250.0), _row(2, 50, 120.0), _row(2, 100, 310.0)]
    goal = load.goal_verdict(rows)
    assert (goal["participants"], goal["processes"], goal["limit_p95_ms"]) == (100, 2, 300.0)
    # One process meeting the limit at 100 does not meet the goal: two processes at 100 is judged.
    assert goal["met"] is False and goal["p95_ms"] == 310.0 and goal["p95_ratio_to_limit"] == round(310 / 300, 3)
    assert goal["per_processes"] == {"1": True, "2": False}
    assert load.goal_verdict([_row(2, 100, 290.0, lost=True)])["met"] is False  # a lost row fails it
    assert load.goal_verdict([_row(2, 100, 290.0)])["met"] is True


def test_capacity_is_stated_per_core_the_app_processes_can_use():
    load = _load_module()
    capacity = load.capacity([_row(2, 50, 120.0), _row(2, 100, 280.0), _row(1, 50, 200.0), _row(1, 100, 900.0)])
    cores = min(2, os.cpu_count() or 1)
    assert capacity["2"]["most_participants_within_limit"] == 100
    assert capacity["2"]["participants_per_core_within_limit"] == round(100 / cores, 1)
    assert (capacity["1"]["most_participants_within_limit"], capacity["1"]["participants_per_core_within_limit"]) == (
        50, 50.0)


def test_a_slower_p95_or_a_lost_row_against_the_baseline_is_a_regression():
    load = _load_module()
    baseline = [_row(2, 100, 480.0), _row(1, 50, 100.0), _row(1, 2, 30.0, samples=16)]
    same = load.comparison([_row(2, 100, 500.0), _row(1, 50, 90.0), _row(1, 2, 90.0, samples=16)], baseline)
    # 500 / 480 is within the 10 % tolerance; 16 submits are too few to judge a p95.
    assert [p["regression"] for p in same["pairs"]] == [False, False, None] and same["no_regression"] is True
    slower = load.comparison([_row(2, 100, 540.0)], baseline)
    assert slower["pairs"][0]["p95_ratio_to_baseline"] == round(540 / 480, 3) and slower["no_regression"] is False
    lost = load.comparison([_row(1, 2, 10.0, samples=16, lost=True)], baseline)
    assert lost["pairs"][0]["regression"] is True and lost["no_regression"] is False
    assert load.comparison([_row(2, 100, 1.0)], []) is None


def test_a_baseline_that_is_not_a_revision_is_refused(tmp_path):
    # In process through main(argv) (the runs above are the script's subprocess smoke tests): the revision is
    # looked up before any server starts, and nothing is written.
    load = _load_module()
    out = tmp_path / "load.json"
    with pytest.raises(RuntimeError, match="--baseline no-such-revision-xyz: not a revision"):
        load.main(["--quick", "--baseline", "no-such-revision-xyz", "--database", "sqlite", "--out", str(out)])
    assert not out.exists()


def test_url_mode_needs_a_database_or_a_study():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--url", "http://127.0.0.1:1"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--database-url" in proc.stderr
