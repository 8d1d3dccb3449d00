"""bench/collab_reproduction.py --quick: both claims hold at small scale and the PNGs are written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reproduction(tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("repro")
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "collab_reproduction.py"), "--quick",
                           "--out", str(out / "r.json"), "--plots-dir", str(out / "plots")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["holds"] == {
        "online_vs_fixed": True, "accuracy_grid": True, "delayed_updates": True}
    data = json.loads((out / "r.json").read_text())
    data["_plots_dir"] = out / "plots"
    return data


def test_claim_1_online_within_target_plus_bound_under_every_schedule(reproduction):
    claim = reproduction["claims"]["online_vs_fixed"]
    assert claim["holds"] and claim["online_within_bound_all"]
    for schedule, row in claim["schedules"].items():
        for name in ("harm", "comp"):
            rate, target, bound = (row["online"]["violation_rate"][name], row["target"][name],
                                   row["online"]["bound"][name])
            assert rate <= target + bound, (schedule, name)
            assert row["online"]["max_excess"][name] <= 1e-12, (schedule, name)


def test_claim_1_fixed_baseline_farther_from_target_under_drift(reproduction):
    claim = reproduction["claims"]["online_vs_fixed"]
    drift = claim["schedules"]["drift"]["worst_deviation"]
    assert drift["fixed"] > drift["online"]
    assert "drift" in claim["fixed_farther_under"]


def test_claim_2_accuracy_moves_in_the_documented_direction(reproduction):
    claim = reproduction["claims"]["accuracy_grid"]
    sweep = claim["sweep"]
    harm, acc = sweep["config"]["alpha_harm_grid"], sweep["accuracy"]
    # tightening alpha_comp raises accuracy at the smallest alpha_harm
    assert all(a > b for a, b in zip(acc[0], acc[0][1:], strict=False))
    # loosening alpha_harm from 0.01 to 0.05 raises accuracy, for every alpha_comp
    assert all(hi > lo for hi, lo in zip(acc[harm.index(0.05)], acc[harm.index(0.01)], strict=True))
    assert claim["tighter_comp_raises_accuracy"] and claim["looser_harm_raises_accuracy"] and claim["holds"]


def test_plots_are_written(reproduction):
    names = sorted(p.name for p in reproduction["_plots_dir"].glob("*.png"))
    assert "sweep_accuracy.png" in names and "violations_drift.png" in names
    assert len(reproduction["plots"]) == len(names)


def test_overlapping_participants_stay_within_the_delay_aware_bound(reproduction):
    rows = reproduction["delayed_updates"]["overlaps"]
    assert set(rows) == {"1", "10", "50"}
    assert rows["50"]["bound"]["harm"] > rows["10"]["bound"]["harm"] > rows["1"]["bound"]["harm"]
    for row in rows.values():
        for name in ("harm", "comp"):
            assert row["violation_rate"][name] <= 0.05 + row["bound"][name] and row["max_excess"][name] <= 1e-12
