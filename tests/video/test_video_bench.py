"""bench/video.py --quick: one JSON line and file with each measure taken. No timing is judged here
(it depends on the machine); only that the figures follow from their own numbers, and that the
decoder's frames were all exact; and that the accuracy part reports both sets per question kind
with intervals that contain their rates, groundedness, guesses and the budget curve."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_seeking_and_agent_latency(tmp_path):
    out = tmp_path / "video.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "video.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == line
    seeking = line["seeking"]
    assert seeking["frames"] == 48 and seeking["video_minutes"] == 5.0
    assert seeking["exact_frames"]["seek_and_decode"] == 48 and seeking["exact_frames"]["sequential"] == 48
    ratio = seeking["sequential_decode_s"] / seeking["seek_and_decode_s"]
    assert abs(seeking["speedup_vs_sequential"] - ratio) <= 0.05 + 0.01 * ratio
    assert seeking["meets_sequential_goal"] == (seeking["speedup_vs_sequential"] >= 10)
    assert seeking["meets_opencv_goal"] == (seeking["time_vs_opencv"] <= 1.0)
    for agent in ("gated", "coupled"):
        latency = line["agent"][agent]
        assert latency["questions"] == 3 and 0 < latency["p50_s"] <= latency["p95_s"]
    assert line["generation"]["minutes"] == 5.0 and line["generation"]["megabytes"] > 0
    scores = line["accuracy"]
    assert scores["goal_heldout_per_kind"] == 0.8
    for name in ("tuning", "heldout"):
        part = scores[name]
        assert set(part["budgets"]) == {"2", "8"} and part["gated"] == part["budgets"]["8"]
        for agent in ("gated", "coupled"):
            result = part[agent]
            assert result["n"] == part["questions"] > 0 and result["guesses"] >= 0
            assert 0 <= result["TG_rate"] <= 1 and 0 <= result["SG_rate"] <= 1
            for kind in result["by_kind"].values():
                low, high = kind["ci95"]
                assert kind["accuracy"] == round(kind["correct"] / kind["n"], 3) and low <= kind["accuracy"] <= high
    kinds = scores["heldout"]["gated"]["by_kind"]
    assert scores["meets_heldout_goal"] == all(k["accuracy"] >= 0.8 for k in kinds.values())
    assert "held-out accuracy by kind" in line["headline"]
