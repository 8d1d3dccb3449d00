"""The experiment's statistics against scipy and by hand, and its quick run end to end."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pytest

from engines.attribution.configs import ExperimentConfig
from engines.attribution.experiment import add_arguments, run_experiment, spearman


def test_spearman_matches_scipy_with_an_exact_permutation_p_value():
    x = np.array([0.1, 0.4, 0.2, 0.9, 0.7])
    y = np.array([1.0, 3.0, 2.0, 5.0, 4.0])  # the same order as x: rho = 1
    result = spearman(x, y, permutations=3000, bootstrap=200, seed=0)
    assert result["rho"] == pytest.approx(1.0) and result["n"] == 5
    # |rho| = 1 happens for 2 of the 120 orders of 5 values: p = 1/60.
    assert abs(result["p_permutation"] - 1 / 60) < 0.01
    assert result["ci_low"] <= result["rho"] <= result["ci_high"] <= 1.0


def test_spearman_leaves_out_missing_values_and_refuses_a_constant():
    result = spearman(np.array([1.0, 2.0, np.nan, 3.0]), np.array([3.0, 2.0, 9.0, 1.0]), permutations=50,
                      bootstrap=50, seed=0)
    assert result["rho"] == pytest.approx(-1.0) and result["n"] == 3
    assert spearman(np.ones(4), np.arange(4.0), permutations=10, bootstrap=10, seed=0)["rho"] is None


def test_the_config_refuses_unknown_methods_and_too_few_policies():
    with pytest.raises(ValueError, match="unknown method 'lime'"):
        ExperimentConfig(methods=("lime",))
    with pytest.raises(ValueError, match="at least 3 policies"):
        ExperimentConfig(rhos=(0.0,), seeds=(0, 1))


def test_the_quick_experiment_runs_end_to_end(data_dir):
    out = data_dir / "datasets" / "attribution" / "experiment.json"  # the folder is made by the command
    proc = subprocess.run([sys.executable, "-m", "engines.attribution", "experiment", "--quick", "--out", str(out),
                           "--json"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert [(p["rho"], p["seed"]) for p in result["policies"]] == [(0.0, 0), (0.0, 1), (1.0, 0), (1.0, 1)]
    assert set(result["correlations"]) == {"iss", "iss_contrast", "occlusion"}
    for policy in result["policies"]:
        assert all(v is None or 0.0 <= v <= 1.0 for v in policy["nmr"].values())
    assert json.loads(out.read_text())["summary"] == result["summary"]


@pytest.mark.parametrize(("option", "value"), [("--out", "/etc/experiment.json"), ("--out", "../experiment.json"),
                                               ("--policy-dir", "/etc"), ("--policy-dir", "datasets/..")])
def test_the_experiment_refuses_paths_outside_the_owned_folders_before_it_runs(data_dir, option, value, capsys):
    # In process through the command line's main(argv); the quick run above is its subprocess smoke test.
    from engines.attribution.__main__ import main

    with pytest.raises(SystemExit) as exited:
        main(["experiment", option, value, "--rhos", "0.5", "1", "--seeds", "0", "1", "--methods", "iss"])
    stderr = capsys.readouterr().err
    assert exited.value.code == 2 and stderr.startswith(f"error: {option}: "), stderr[-2000:]
    assert not (data_dir.parent / "experiment.json").exists()


def test_by_default_the_experiment_loads_the_shipped_policies_and_their_figures_hold():
    from engines.attribution.experiment import config_from_args
    from engines.attribution.policy_set import SHIPPED_DIR

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    config = config_from_args(parser.parse_args(["--rhos", "0.5", "1", "--seeds", "0", "1", "--methods", "iss"]))
    assert config.policy_dir == str(SHIPPED_DIR)
    assert config_from_args(parser.parse_args(["--train"])).policy_dir is None
    # One loaded policy per (rho, seed), evaluated on the report's episodes: its success is the report's.
    small = ExperimentConfig(**{**asdict(config), "rhos": (0.5, 1.0), "seeds": (0, 1), "nmr_frames": 1,
                                "n_masks": 20, "permutations": 10, "bootstrap": 10})
    result = run_experiment(small)
    assert {p["policy"] for p in result["policies"]} == {"loaded"}
    assert result["config"]["policy_dir"] == "shipped/attribution/policies"  # no path of this machine
    report = {(r["rho"], r["seed"]): r["evaluation"] for r in json.loads((SHIPPED_DIR / "report.json").read_text())["policies"]}
    for policy in result["policies"]:
        expected = report[(policy["rho"], policy["seed"])]
        assert abs(policy["ood_success"] - expected["random"]["success"]) <= 0.02


def test_only_the_shipped_run_itself_may_be_written_into_the_assets(data_dir):
    from engines.attribution.paths import output_path
    from engines.attribution.policy_set import SHIPPED_DIR, SHIPPED_EXPERIMENT
    from engines.platform.files import FileRefused

    assert output_path(SHIPPED_EXPERIMENT, what="--out", shipped=SHIPPED_EXPERIMENT) == SHIPPED_EXPERIMENT.resolve()
    assert output_path("datasets/attribution/run.json", what="--out") == data_dir / "datasets" / "attribution" / "run.json"
    for refused in (SHIPPED_DIR / "report.json", SHIPPED_DIR.parent / "other.json", data_dir / "run.json"):
        with pytest.raises(FileRefused, match="--out: .* is outside the folders the app writes to"):
            output_path(refused, what="--out", shipped=SHIPPED_EXPERIMENT)
