"""Does in-distribution NMR predict out-of-distribution failure? The paper's claim at small scale.

Zhang et al. (ICML 2026) report r = -0.77 between NMR and OOD success across VLA policies. Here
(``docs/attribution.md``, Method, "The experiment and its permutation test"): reaching policies
trained with cue agreement rho over several seeds; for each, NMR on held-out in-distribution frames
(ISS and each baseline's map, upstream's NMR@k, and the mass NMR of ISS's contrast map) and the
action error and closed-loop success with the cue randomised (out of distribution). Across policies:
Spearman's correlation of NMR with the OOD error (expected > 0) and with OOD success (expected < 0),
a two-sided permutation p-value and a bootstrap interval.

``python -m engines.attribution experiment [--quick] --json``; the same as the
``attribution.experiment`` job.
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from engines.attribution.baselines import attribute
from engines.attribution.configs import QUICK, ExperimentConfig, TrainConfig
from engines.attribution.env import TaskConfig, dataset
from engines.attribution.iss import iss
from engines.attribution.nmr import nmr_value
from engines.attribution.paths import output_path, policy_folder, shown
from engines.attribution.policies import ReachPolicy, load_policy, torch_policy
from engines.attribution.policy_set import SHIPPED_DIR, SHIPPED_EXPERIMENT, policy_file
from engines.attribution.train import evaluate, train_policy
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.progress import Progress


def spearman(x: np.ndarray, y: np.ndarray, *, permutations: int, bootstrap: int, seed: int) -> dict:
    """Spearman's rho with a two-sided permutation p-value and a percentile bootstrap 95% interval."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if len(x) < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return {"rho": None, "p_permutation": None, "ci_low": None, "ci_high": None, "n": int(len(x))}
    observed = float(stats.spearmanr(x, y).statistic)
    rng = np.random.default_rng(seed)
    null = np.array([stats.spearmanr(x, rng.permutation(y)).statistic for _ in range(permutations)])
    p_value = (1 + int(np.sum(np.abs(null) >= abs(observed) - 1e-12))) / (permutations + 1)
    draws = []
    for _ in range(bootstrap):
        index = rng.integers(0, len(x), len(x))
        if np.all(x[index] == x[index][0]) or np.all(y[index] == y[index][0]):
            continue
        draws.append(stats.spearmanr(x[index], y[index]).statistic)
    low, high = (np.percentile(draws, [2.5, 97.5]).tolist() if draws else (None, None))
    return {"rho": observed, "p_permutation": p_value, "ci_low": low, "ci_high": high, "n": int(len(x))}


def frame_nmr(method: str, model: torch.nn.Module, image: torch.Tensor, relevant: torch.Tensor,
              config: ExperimentConfig, seed: int) -> float:
    """NMR of one frame (1, 3, H, W) under ``method``'s map: NMR@k, or the mass of ISS's contrast map."""
    if method in ("iss", "iss_contrast"):
        result = iss(torch_policy(model), image, grid=config.grid, n_masks=config.n_masks, seed=seed)
        if method == "iss_contrast":
            return nmr_value(result.contrast_pixel_map[0], relevant)
        return nmr_value(result.pixel_map[0], relevant, config.k)
    pixel_map = attribute(method, model, image, grid=config.grid, n_masks=config.n_masks, seed=seed)
    return nmr_value(pixel_map, relevant, config.k)


def _policy(rho: float, seed: int, config: ExperimentConfig, task: TaskConfig) -> tuple[ReachPolicy, str]:
    if config.policy_dir is not None and policy_file(config.policy_dir, rho, seed).exists():
        model, _ = load_policy(policy_file(config.policy_dir, rho, seed))
        return model, "loaded"
    trained = train_policy(TrainConfig(rho=rho, seed=seed, frames=config.frames, epochs=config.epochs), task)
    return trained.model, "trained"


def _stored_config(config: ExperimentConfig) -> dict:
    """The config as a result file keeps it: the policy folder relative to its owned folder
    (``shipped/attribution/policies``), never a path of the machine that ran it."""
    stored = asdict(config)
    if config.policy_dir is not None:
        stored["policy_dir"] = shown(config.policy_dir)
    return stored


def run_experiment(config: ExperimentConfig, task: TaskConfig = TaskConfig(),
                   progress: Progress | None = None) -> dict:
    """Every policy's NMR per method and its OOD figures, then the correlations across policies."""
    started = time.perf_counter()
    cells = [(rho, seed) for rho in config.rhos for seed in config.seeds]
    policies = []
    for index, (rho, seed) in enumerate(cells):
        if progress is not None:
            progress(index, len(cells), f"policy rho={rho:g} seed={seed}: training or loading")
        model, how = _policy(rho, seed, config, task)
        scores = evaluate(torch_policy(model), rho, episodes=config.episodes, task=task)
        images, _, masks = dataset(config.nmr_frames, rho, seed=50_000 + seed, config=task)
        nmr = {}
        for method in config.methods:
            if progress is not None:
                progress(index + 0.5, len(cells), f"policy rho={rho:g} seed={seed}: NMR by {method}")
            values = [frame_nmr(method, model, torch.from_numpy(images[f:f + 1]), torch.from_numpy(masks[f]),
                                config, config.seed + f) for f in range(config.nmr_frames)]
            finite = [v for v in values if not math.isnan(v)]
            nmr[method] = float(np.mean(finite)) if finite else None
        policies.append({"rho": rho, "seed": seed, "policy": how, "nmr": nmr,
                         "id_success": scores["normal"]["success"], "id_mse": scores["normal"]["action_mse"],
                         "ood_success": scores["random"]["success"], "ood_mse": scores["random"]["action_mse"],
                         "no_cue_success": scores["none"]["success"], "no_cue_mse": scores["none"]["action_mse"]})
    correlations = {}
    for method in config.methods:
        values = np.array([p["nmr"][method] if p["nmr"][method] is not None else np.nan for p in policies])
        correlations[method] = {
            outcome: spearman(values, np.array([p[outcome] for p in policies]), permutations=config.permutations,
                              bootstrap=config.bootstrap, seed=config.seed)
            for outcome in ("ood_mse", "ood_success")}
    iss_row = correlations.get("iss_contrast") or correlations.get("iss") or {}
    headline = iss_row.get("ood_success", {})
    summary = (f"{len(policies)} policies; NMR vs OOD success, Spearman rho = "
               + ("n/a" if headline.get("rho") is None else
                  f"{headline['rho']:.2f} (p = {headline['p_permutation']:.3f})")
               + f" in {time.perf_counter() - started:.0f} s")
    return {"config": _stored_config(config), "policies": policies, "correlations": correlations,
            "seconds": round(time.perf_counter() - started, 1), "summary": summary}


# ------------------------------------------------------------------ command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true",
                        help="a small run for tests: 2 policies' worth of cells, few masks and episodes")
    parser.add_argument("--policy-dir", default=None,
                        help="load reach-rho<rho>-seed<seed>.pt from here when present (default: the shipped set, "
                             "assets/attribution/policies)")
    parser.add_argument("--train", action="store_true",
                        help="train every policy anew instead of loading any (implied by --quick)")
    argparse_options(ExperimentConfig, parser)
    parser.add_argument("--out", type=Path, default=None,
                        help="also write the result as JSON here: in a folder under datasets/attribution/ of the "
                             "data folder, or assets/attribution/experiment.json (the shipped run)")


def config_from_args(args: argparse.Namespace) -> ExperimentConfig:
    base = {**QUICK} if args.quick else {}  # 2 rhos x 2 seeds: the smallest set with a correlation
    for name, value in option_values(ExperimentConfig, args).items():
        if value is not None:  # set on the command line: wins over --quick's
            base[name] = tuple(value) if isinstance(value, list) else value
    if args.train or args.quick:
        policy_dir = None
    else:
        policy_dir = str(policy_folder(args.policy_dir)) if args.policy_dir else str(SHIPPED_DIR)
    return ExperimentConfig(policy_dir=policy_dir, **base)


def run(args: argparse.Namespace) -> dict:
    """Correlate in-distribution NMR with out-of-distribution error and success across policies."""
    # Checked before the run, not after: a registered data set's folder, a job's, or the shipped run itself.
    out = output_path(args.out, what="--out", shipped=SHIPPED_EXPERIMENT) if args.out is not None else None
    result = run_experiment(config_from_args(args))
    if out is not None:
        import json

        out.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return result
