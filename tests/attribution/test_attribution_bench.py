"""bench/attribution.py --quick: one JSON line and file with each measure taken. No timing is judged
here (it depends on the machine); only that the figures follow from their own numbers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_run_writes_throughput_versus_captum_and_faithfulness(tmp_path):
    out = tmp_path / "attribution.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "attribution.py"), "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == line
    speed, versus = line["throughput"], line["versus_feature_ablation"]
    assert abs(
        speed["ratio"] - speed["iss_masks_per_s"] / speed["raw_forward_per_s"]) < 2e-3
    assert speed["meets_goal"] == (speed["ratio"] >= 0.8)
    assert versus["feature_ablation_evaluations"] == 500 and versus["meets_goal"] == (versus["ratio"] <= 1.0)
    assert set(line["faithfulness"]) == {"blur", "mean", "noisy"}
    for rows in line["faithfulness"].values():
        assert set(rows) == {"iss", "occlusion", "saliency"}
        for method, row in rows.items():
            assert row["morf"] >= row["gap"]  # the gap subtracts LeRF's area, which is not negative
            assert ("wilcoxon_p" in row) == (method != "iss")
