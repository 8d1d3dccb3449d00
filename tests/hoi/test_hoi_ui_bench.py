"""bench/hoi_ui.py --quick: what a researcher waits for on Research -> HOI-Edit, timed in Chromium through the
page (the first view of a benchmark, the next item in the item browser). One JSON line on stdout, the same
object in the result file, each measure taken and judged against its limit from its own numbers. Timings
are not judged here (they depend on the machine). Skipped, like the browser tests, without Debian's
chromium or Playwright."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.participant_ui import missing_requirement

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "hoi_ui.py"
SKIP_REASON = missing_requirement()
pytestmark = [pytest.mark.browser, pytest.mark.skipif(SKIP_REASON is not None, reason=SKIP_REASON or "")]


def test_quick_run_times_the_first_view_and_the_next_item_through_the_page(tmp_path):
    out = tmp_path / "hoi_ui.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(out)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1, proc.stdout[-2000:]
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result

    assert result["benchmark"] == "hoi_ui" and result["config"]["quick"] is True
    config = result["config"]
    assert (config["items"], config["methods"], config["images_per_item"]) == (40, 3, 4)
    counts = {"next_item": config["next_items"], "first_view": config["first_views"]}
    for name, count in counts.items():
        measure = result["results"][name]
        assert measure["samples"] == len(measure["samples_ms"]) == count
        assert all(ms > 0 for ms in measure["samples_ms"])
        assert measure["p95_ratio_to_limit"] == round(measure["p95_ms"] / measure["limit_ms"], 3)
        assert measure["pass"] is (measure["p95_ms"] < measure["limit_ms"])
    first = result["results"]["first_view"]
    # A first view is the folder opened, then the item browser's first item: the two waits add up.
    assert [round(a + b, 1) for a, b in zip(first["open_ms"], first["first_item_ms"], strict=True)] == pytest.approx(
        first["samples_ms"], abs=0.2)
    assert result["results"]["next_item"]["limit_ms"] == 300.0 and first["limit_ms"] == 2000.0
    assert result["goal"]["met"] is (result["results"]["next_item"]["pass"] and first["pass"])
