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
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from engines.attribution.baselines import attribute
from engines.attribution.env import TaskConfig, dataset
from engines.attribution.iss import iss
from engines.attribution.nmr import nmr_value
from engines.attribution.paths import output_path, policy_folder, shown
from engines.attribution.policies import ReachPolicy, load_policy, torch_policy
from engines.attribution.policy_set import RHOS, SEEDS, SHIPPED_DIR, policy_file
from engines.attribution.train import TrainConfig, evaluate, train_policy
from engines.platform.config_schema import argparse_options, check_fields, option_values
from engines.platform.files import echo
from engines.platform.progress import Progress

METHODS = ("iss", "iss_contrast", "occlusion", "feature_ablation", "rise", "saliency", "integrated_gradients",
           "grad_cam")
SHIPPED_EXPERIMENT = SHIPPED_DIR.parent / "experiment.json"  # the shipped run (its regeneration command's --out)
QUICK = {"rhos": (0.0, 1.0), "seeds": (0, 1), "frames": 160, "epochs": 1, "nmr_frames": 1, "n_masks": 20,
         "episodes": 5, "methods": ("iss", "iss_contrast", "occlusion"), "permutations": 100, "bootstrap": 100}


@dataclass(frozen=True)
class ExperimentConfig:
    """The experiment's policies, maps and statistics. Each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``experiment`` command's option (unset: the config's value,
    or ``--quick``'s) and the ``attribution.experiment`` job's parameter."""

    rhos: tuple[float, ...] = field(default=RHOS, metadata={
        "help": "cue agreements of the policies (default: the shipped set's)", "min_length": 1, "max_length": 10,
        "cli": {"type": float, "nargs": "+", "default": None}})
    seeds: tuple[int, ...] = field(default=SEEDS, metadata={
        "help": "training seeds of the policies", "min_length": 1, "max_length": 10,
        "cli": {"type": int, "nargs": "+", "default": None}})
    # Training frames and epochs per policy, when it is trained here.
    frames: int = field(default=6000, metadata={"min": 1, "max": 100_000, "cli": False, "job": False})
    epochs: int = field(default=20, metadata={"min": 1, "max": 100, "cli": False, "job": False})
    nmr_frames: int = field(default=12, metadata={
        "help": "held-out in-distribution frames NMR is averaged over", "min": 1, "max": 200, "cli": {"default": None}})
    n_masks: int = field(default=300, metadata={"help": "masks per frame", "min": 1, "max": 5000,
                                                "cli": {"default": None}})
    grid: tuple[int, int] = field(default=(7, 7), metadata={"cli": False, "job": False})
    k: float = field(default=10.0, metadata={"gt": 0, "max": 100, "cli": False, "job": False})  # NMR@k, % of pixels
    episodes: int = field(default=100, metadata={"help": "closed-loop episodes per evaluation", "min": 1, "max": 1000,
                                                 "cli": {"default": None}})
    methods: tuple[str, ...] = field(default=METHODS, metadata={
        "help": "attribution methods compared", "min_length": 1,
        "cli": {"type": str, "nargs": "+", "choices": METHODS, "default": None}})
    # Load <dir>/reach-rho<rho>-seed<seed>.pt where present (the command line's --policy-dir and --train).
    policy_dir: str | None = field(default=None, metadata={"cli": False, "job": False})
    permutations: int = field(default=2000, metadata={"min": 1, "cli": False, "job": False})
    bootstrap: int = field(default=1000, metadata={"min": 1, "cli": False, "job": False})
    seed: int = field(default=0, metadata={"min": 0, "cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)
        if any(not 0.0 <= rho <= 1.0 for rho in self.rhos):
            raise ValueError(f"every rho is a probability in [0, 1], got {', '.join(map(str, self.rhos))}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown method {echo(unknown[0])}; choose from {', '.join(METHODS)}")
        if len(self.rhos) * len(self.seeds) < 3:
            raise ValueError("a correlation needs at least 3 policies (rhos x seeds)")


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
