"""bench/judge.py --quick: one JSON line on stdout, the same object in the result file, every key there.

No timing is asserted: only the shape of the result and figures that follow from its own numbers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "judge.py"
AUDIT_KEYS = {"items", "labels", "verdicts", "judges", "behaviours", "cells", "bootstrap", "metric_groups",
              "median_s", "median_cpu_s", "runs_s", "phases_last_run", "goal_s", "ratio_to_goal", "pass", "sanity"}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> tuple[dict, str]:
    """One quick run for every test here (the same environment as the suite's: PostgreSQL when
    ``HAI_TEST_DATABASE_URL`` names a server); its result, and the URL it had (or "")."""
    out = tmp_path_factory.mktemp("judge-bench") / "judge.json"
    pg = os.environ.get("HAI_BENCH_PG_URL") or os.environ.get("HAI_TEST_DATABASE_URL") or ""
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], cwd=REPO_ROOT,
                          env={**os.environ}, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result
    return result, pg


def test_quick_run_writes_the_audit_section(quick_run):
    result, _ = quick_run
    assert {"benchmark", "requirement", "headline", "goal", "sections", "results", "config", "machine",
            "code_version", "timestamp", "duration_s"} <= set(result)
    assert result["benchmark"] == "judge"
    assert {"cpu_count", "python"} <= set(result["machine"])
    assert result["goal"]["met"] is None  # a quick run is below the goal's size: nothing to judge
    audit = result["results"]["audit"]
    assert AUDIT_KEYS <= set(audit)
    config = result["config"]
    assert (audit["items"], audit["judges"], audit["bootstrap"]) == (config["items"], config["judges"],
                                                                      config["bootstrap"])
    assert audit["verdicts"] == audit["items"] * audit["judges"]
    assert audit["items"] <= audit["labels"] < 2 * audit["items"]  # one label each, some a second
    assert len(audit["runs_s"]) == config["repeats"]
    assert audit["ratio_to_goal"] == round(audit["median_s"] / audit["goal_s"], 3)
    assert audit["pass"] is (audit["median_s"] < audit["goal_s"])
    assert result["headline"]["median_s"] == audit["median_s"]
    assert audit["sanity"]["has_intervals"] and audit["sanity"]["finite_accuracy"]
    assert set(audit["sanity"]["pooled_accuracy"]) == {f"judge{j}" for j in range(audit["judges"])}


def test_quick_run_measures_label_latency_and_judge_throughput(quick_run):
    result, pg = quick_run
    latency = result["results"]["label_latency"]
    # 40 items, 20% of them (8) wanting a second label: every annotator's labels together, on each database.
    databases = ("sqlite", "postgresql") if pg else ("sqlite",)
    for name in databases:
        measured = latency[name]
        assert (measured["annotators"], measured["items"], measured["labels"]) == (10, 40, 48), name
        assert measured["p50_ms"] <= measured["p95_ms"]
        assert measured["ratio_to_goal"] == round(measured["p95_ms"] / measured["goal_p95_ms"], 3)
    if not pg:
        assert latency["postgresql"] == {"status": "skipped", "reason": "no PostgreSQL URL (HAI_BENCH_PG_URL)"}
        assert result["goal"]["label_met"]["postgresql"] is None
    throughput = result["results"]["judge_throughput"]
    assert set(throughput) == {"gcg-strings", "minilm-logreg"}
    assert throughput["gcg-strings"]["items"] == 200 and throughput["minilm-logreg"]["items"] == 16
