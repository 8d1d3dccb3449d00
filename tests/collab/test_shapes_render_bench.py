"""bench/shapes_render.py --quick: one JSON line on stdout, the same object in the result file, every measure there.

The speed of ``generate_batch`` (>= 100 images/s, once a unit test's 500 images in 5 s) is measured by the
benchmark, not judged here: a timing depends on the machine. Only that each measure was taken and reported
against the goal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "shapes_render.py"
ROW_KEYS = {"images", "median_s", "images_per_s", "ratio_to_goal"}


def test_quick_run_reports_every_measure_against_the_goal(tmp_path):
    out = tmp_path / "shapes_render.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result
    assert result["benchmark"] == "shapes_render" and result["config"]["quick"] is True
    assert result["goal"] == {"images_per_s": 100, "met": result["headline"]["pass"]}
    n = result["config"]["n"]
    assert set(result["results"]) == {"batch", "batch_easy", "batch_hard", "png_scale5"}
    for name, row in result["results"].items():
        assert ROW_KEYS <= set(row), name
        assert row["images"] == n and row["median_s"] > 0
        assert n / row["images_per_s"] == pytest.approx(row["median_s"], rel=1e-3, abs=1e-5)  # both are rounded
    assert result["headline"]["pass"] is (result["results"]["batch"]["images_per_s"] >= 100)
    assert {"cpu_count", "python", "load_avg_1min"} <= set(result["machine"])
