"""bench/hoi.py --quick: one JSON line and file with each measure taken. No timing is judged here
(it depends on the machine); only that the figures follow from their own numbers and that the
ratings recover the synthetic methods' true order."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_browser_and_ratings_figures(tmp_path):
    out = tmp_path / "hoi.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "hoi.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == line
    browser = line["item_browser"]
    assert browser["items"] == 40 and browser["methods"] == 3 and browser["images_per_view"] == 4
    assert browser["meets_first_view_goal"] == (browser["first_view_s"] < 2.0)
    assert abs(browser["next_item_vs_goal"] - browser["next_item_s"] / 0.3) < 0.01
    for method in ("bt", "elo"):
        rated = line["ratings"][method]
        assert rated["ranking"] == ["method-0", "method-1", "method-2"] and rated["ranking_recovered"]
        assert rated["meets_goal"] == (rated["seconds"] < 2.0)
