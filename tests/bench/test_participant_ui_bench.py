"""bench/participant_ui.py --quick: one JSON line on stdout, the same object in the result file, every key there.

Timings are not judged here (they depend on the machine); only that each measure was taken and
reported against its limit. Skipped, like the browser tests, without Debian's chromium or Playwright.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.participant_ui import missing_requirement

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "participant_ui.py"

SKIP_REASON = missing_requirement()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]

MEASURE_KEYS = {"samples", "median_ms", "p95_ms", "min_ms", "max_ms", "limit_ms", "median_ratio_to_limit",
                "p95_ratio_to_limit", "pass", "samples_ms", "driver_median_ms"}
SUBMIT_KEYS = MEASURE_KEYS | {"warmup_samples_ms"}


def test_quick_run_writes_both_measures(tmp_path):
    out = tmp_path / "participant_ui.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]

    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result

    assert {"benchmark", "requirement", "headline", "goal", "results", "config", "machine", "code_version",
            "timestamp", "duration_s"} <= set(result)
    assert result["benchmark"] == "participant_ui"
    assert {"cpu_count", "python", "load_avg_1min"} <= set(result["machine"])
    assert result["config"]["quick"] is True
    assert {"submit_next_limit_ms", "first_load_limit_ms", "met"} <= set(result["goal"])
    assert {"submit_next_p95_ms", "first_load_p95_ms", "pass"} <= set(result["headline"])

    counts = {"submit_next": result["config"]["submissions"], "first_load": result["config"]["loads"]}
    for name, count in counts.items():
        measure = result["results"][name]
        assert (SUBMIT_KEYS if name == "submit_next" else MEASURE_KEYS) <= set(measure), (name, measure)
        assert measure["samples"] == len(measure["samples_ms"]) == count
        assert measure["p95_ratio_to_limit"] == round(measure["p95_ms"] / measure["limit_ms"], 3)
        assert measure["pass"] is (measure["p95_ms"] < measure["limit_ms"])
    assert result["results"]["first_load"]["cold_first_load_ms"] > 0
    assert len(result["results"]["submit_next"]["warmup_samples_ms"]) == result["config"]["warmup_submissions"]
