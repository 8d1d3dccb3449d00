"""bench/load.py --quick on SQLite: every participant completes through the real server, every row is stored.

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


@pytest.mark.slow
def test_quick_run_completes_every_participant(tmp_path):
    out = tmp_path / "load.json"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--database", "sqlite", "--out", str(out)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180)
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
    assert result["goal"]["met"] is None  # quick runs stop below K = 50: nothing to judge

    [row] = result["results"]
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


def test_url_mode_needs_a_database_or_a_study():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--url", "http://127.0.0.1:1"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "--database-url" in proc.stderr
