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
    assert line["ratios"]["iss_vs_raw_forward"] == speed["ratio"] and line["device_name"].startswith(line["device"])
    assert set(line["scaling"]["iss_masks_per_s"]) == {"500", "2000"}  # --quick: the two smaller counts
    assert set(line["faithfulness"]) == {"blur", "mean", "noisy"}
    for rows in line["faithfulness"].values():
        assert set(rows) == {"iss", "occlusion", "saliency"}
        for method, row in rows.items():
            assert row["morf"] >= row["gap"]  # the gap subtracts LeRF's area, which is not negative
            assert ("wilcoxon_p" in row) == (method != "iss")


def test_the_gpu_check_runs_its_checks_on_the_cpu_without_a_gpu_and_says_so(tmp_path):
    import torch

    out = tmp_path / "gpu.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "cpu", "--quick", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    line = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == line and proc.returncode == (0 if line["ok"] else 1)
    assert line["quick"] is True  # every check, at the smaller sizes
    if not torch.cuda.is_available():
        assert line["device"] == "cpu (no CUDA device)" and line["device_detail"]
    assert set(line["checks"]) == {"cuda_tests", "iss_matches_cpu", "attribution_baselines", "explain",
                                   "iss_throughput", "half_precision", "counter"}
    assert all(isinstance(check["ok"], bool) for check in line["checks"].values())
    for name in ("iss_matches_cpu", "attribution_baselines", "explain", "half_precision", "counter"):
        assert line["checks"][name]["ok"], (name, line["checks"][name])  # the CPU path works on any machine
    speed = line["checks"]["iss_throughput"]["throughput"]
    assert line["ratios"]["iss_vs_raw_forward"] == speed["ratio"]
    assert {"feature_ablation_vs_raw_forward", "instruct-pix2pix_float16_vs_float32_per_255"} <= set(line["ratios"])
