"""bench/platform_store.py --quick: one JSON line on stdout, a result file, every participant done."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "platform_store.py"
ROW_KEYS = {"database", "participants", "steps_per_participant", "commits", "p50_ms", "p95_ms", "max_ms",
            "throughput_steps_per_s", "wall_s", "balance", "think_ms", "limit_p95_ms", "p95_ratio_to_limit", "pass",
            "processes"}


def run_quick(tmp_path, *args: str, timeout: int = 120) -> dict:
    """``platform_store.py --quick ARGS``: its one JSON line, after a clean exit."""
    out = tmp_path / "platform_store.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", *args, "--out", str(out)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def test_quick_run_reports_every_participant(tmp_path):
    out = tmp_path / "platform_store.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]

    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result

    assert {"benchmark", "headline", "goal", "config", "databases", "results", "machine", "code_version",
            "timestamp"} <= set(result)
    assert result["benchmark"] == "platform_store"
    assert {"cpu_count", "python"} <= set(result["machine"])
    assert result["code_version"]
    assert result["databases"]["sqlite"]["status"] == "ok"
    postgres = result["databases"]["postgresql"]
    assert postgres["status"] in ("ok", "skipped")
    if postgres["status"] == "skipped":
        assert postgres["reason"]
    assert result["goal"]["met"] is None  # quick runs stop below N = 50: nothing to judge

    measured = [name for name, info in result["databases"].items() if info["status"] == "ok"]
    sizes = result["config"]["participants"]
    steps = result["config"]["steps_per_participant"]
    rows = result["results"]
    assert result["config"]["processes"] == [1]
    assert sorted((r["database"], r["participants"]) for r in rows) == sorted((d, n) for d in measured for n in sizes)
    assert {r["processes"] for r in rows} == {1}
    for row in rows:
        assert ROW_KEYS <= set(row), row
        n = row["participants"]
        assert sum(row["balance"].values()) == n, row  # every participant completed the study
        assert row["commits"] == n * steps
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["max_ms"]
        assert row["throughput_steps_per_s"] > 0 and row["wall_s"] > 0
        assert row["p95_ratio_to_limit"] == round(row["p95_ms"] / row["limit_p95_ms"], 3)
        assert row["pass"] is (row["p95_ms"] < row["limit_p95_ms"])


def test_unreachable_postgres_is_recorded_as_skipped(tmp_path):
    result = run_quick(tmp_path, "--sizes", "2", "--steps", "2", "--pg-url",
                       "postgresql+psycopg://nobody@127.0.0.1:1/none", timeout=60)
    assert result["databases"]["postgresql"]["status"] == "skipped"
    assert "unreachable" in result["databases"]["postgresql"]["reason"]
    assert [r["database"] for r in result["results"]] == ["sqlite"]


def test_participants_dealt_over_two_processes_all_complete_once(tmp_path):
    result = run_quick(tmp_path, "--sizes", "1,4", "--steps", "3", "--processes", "2", "--pg-url", "")
    # Two processes for one participant would leave one idle: that size is left out.
    [row] = result["results"]
    assert (row["processes"], row["participants"], row["commits"]) == (2, 4, 12)
    assert row["balance"] == {"a": 2, "b": 2}
    assert result["goal"]["per_database_processes"]["sqlite"] == {}


def test_each_configuration_reports_its_median_run_of_several(tmp_path):
    result = run_quick(tmp_path, "--sizes", "3", "--steps", "2", "--repeat", "3", "--pg-url", "")
    [row] = result["results"]
    assert result["config"]["repeat"] == 3 and len(row["p95_runs_ms"]) == 3
    assert row["p95_ms"] == sorted(row["p95_runs_ms"])[1]
    assert row["commits"] == 6  # one run's figures, not a sum over the runs
    if "cpu_steal_s" in result["machine"]:  # Linux
        assert result["machine"]["cpu_steal_s"] >= 0


def test_the_median_run_is_the_middle_p95_and_the_upper_of_two():
    sys.path.insert(0, str(REPO_ROOT))
    from bench.platform_store import median_runs

    def run(p95: float, processes: int = 1) -> dict:
        return {"database": "sqlite", "think_ms": 0.0, "processes": processes, "participants": 50, "p95_ms": p95}

    three = median_runs([run(30.0), run(10.0), run(20.0), run(7.0, processes=2), run(9.0, processes=2)])
    assert sorted((r["processes"], r["p95_ms"], r["p95_runs_ms"]) for r in three) == [
        (1, 20.0, [30.0, 10.0, 20.0]), (2, 9.0, [7.0, 9.0])]
