"""Train the shape-counting CNN and write its weights, report and held-out scores.

Examples::

    python -m engines.collab train-counter                # the shipped model (CPU, a few minutes)
    python -m engines.collab train-counter --quick --out /tmp/counter.pt   # seconds, for tests

Trains ``engines.collab.counter.ShapeCounter`` on images of ``engines.collab.shapes`` whose
difficulty is drawn uniformly from [0, 1], with the 8 flips/rotations of the square as free
augmentation (they never change a count). After training, one softmax temperature is fitted
on a validation set (temperature scaling, Guo et al. 2017), because the AI's probabilities
are the score s(y) = 1 - p_AI(y) that the paper's thresholds act on (arXiv:2602.17646;
``docs/collab.md``, Method, "Prediction sets"): miscalibration would distort the sets, not just the
reported confidence.

Writes, next to ``--out`` (default ``assets/collab/counter.pt``):

- ``<stem>.pt``: format, model config and state dict (loadable with ``weights_only=True``);
- ``<stem>_report.json``: configs, seed, the command that reproduces the run, accuracy and
  expected calibration error (ECE) overall and per difficulty preset, code version, time;
- ``<stem>_scores.npz``: the model's probabilities on held-out images for the simulation
  engine -- ``probs`` (n, 10) float32, ``labels`` (n,) int64, ``difficulty`` (n,) float32 and
  ``seed`` (uint64); ``shapes.generate_batch(int(seed), n)`` regenerates exactly those images.

``write_plots`` draws a reliability diagram and accuracy/ECE by difficulty from these files
(the ``collab.train_counter`` background job writes them beside its model).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import time
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engines.collab.counter import DEFAULT_WEIGHTS, ShapeCounter, n_parameters, save_counter
from engines.collab.counter_config import QUICK, TrainConfig
from engines.collab.shapes import DIFFICULTY_PRESETS, LABELS, generate_batch
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.progress import Progress, ProgressBar
from engines.platform.settings import REPO_ROOT
from engines.platform.torch_device import exact_float32, resolve_device

# The training steps' part of the whole run's progress (data generation before, calibration and evaluation after).
TRAIN_SHARE = (0.05, 0.85)

@dataclass
class EvalMetrics:
    """Accuracy and calibration of predicted probabilities against true counts."""

    n: int
    accuracy: float
    ece: float  # expected calibration error, 15 equal-width bins over the max probability
    nll: float  # mean negative log-likelihood of the true count
    mean_confidence: float  # mean max probability
    top2_accuracy: float
    mean_abs_error: float  # |argmax - truth|, in counts

    @classmethod
    def of(cls, probs: np.ndarray, labels: np.ndarray) -> EvalMetrics:
        probs = np.asarray(probs, dtype=np.float64)
        labels = np.asarray(labels, dtype=np.int64)
        pred = probs.argmax(axis=1)
        top2 = np.argsort(-probs, axis=1)[:, :2]
        return cls(
            n=len(labels),
            accuracy=round(float((pred == labels).mean()), 4),
            ece=round(expected_calibration_error(probs, labels), 4),
            nll=round(float(-np.log(np.clip(probs[np.arange(len(labels)), labels], 1e-12, 1.0)).mean()), 4),
            mean_confidence=round(float(probs.max(axis=1).mean()), 4),
            top2_accuracy=round(float((top2 == labels[:, None]).any(axis=1).mean()), 4),
            mean_abs_error=round(float(np.abs(pred - labels).mean()), 4),
        )


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Expected calibration error of the top-1 prediction (Guo et al. 2017; Naeini et al. 2015).

    ECE = sum_b (|B_b| / n) * |accuracy(B_b) - mean confidence(B_b)|, with the max probability
    split into ``n_bins`` equal-width bins (lo, hi]; a confidence of exactly 0 joins the first bin.

    Args:
        probs: (n, K) probabilities.
        labels: (n,) true labels.
        n_bins: number of bins over [0, 1].
    """
    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(labels)
    if probs.ndim != 2 or len(probs) != len(labels):
        raise ValueError(f"probs must be (n, K) and labels (n,), got {probs.shape} and {labels.shape}")
    if len(labels) == 0:
        return 0.0
    confidence = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == labels).astype(np.float64)
    # Bin b holds confidences in (b/n_bins, (b+1)/n_bins]; the tiny tolerance keeps values
    # such as 0.6 (= 9/15 in exact arithmetic) in their own bin despite rounding.
    bins = np.clip(np.ceil(confidence * n_bins - 1e-9).astype(int) - 1, 0, n_bins - 1)
    ece = 0.0
    for b in range(n_bins):
        mask = bins == b
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - confidence[mask].mean())
    return float(ece)


def fit_temperature(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """The softmax temperature minimising validation NLL (a grid over log T, then refined).

    A grid rather than LBFGS: one dimension, deterministic, and robust to a flat optimum.
    """
    def nll(t: float) -> float:
        return float(nn.functional.cross_entropy(logits / t, labels))

    grid = np.exp(np.linspace(math.log(0.25), math.log(8.0), 121))
    best = float(grid[int(np.argmin([nll(t) for t in grid]))])
    fine = best * np.exp(np.linspace(-0.03, 0.03, 61))
    return round(float(fine[int(np.argmin([nll(t) for t in fine]))]), 4)


# ---------------------------------------------------------------- CLI
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``train-counter`` options: ``TrainConfig``'s (``engines.platform.config_schema``), where to write, how."""
    argparse_options(TrainConfig, parser)
    parser.add_argument("--out", type=Path, default=DEFAULT_WEIGHTS,
                        help="weights file; the report and held-out scores are written beside it (default: the shipped model)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes: a useless model in seconds, to check the pipeline")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def config_from_args(args: argparse.Namespace) -> TrainConfig:
    values = option_values(TrainConfig, args)
    if args.quick:
        values.update(QUICK)
    return TrainConfig(**values)


def reproduce_command(config: TrainConfig, out: Path, quick: bool) -> str:
    """The shell command that reruns this training."""
    parts = ["python", "-m", "engines.collab", "train-counter", "--seed", str(config.seed)]
    if quick:
        parts.append("--quick")
    else:
        parts += ["--train-size", str(config.train_size), "--epochs", str(config.epochs),
                  "--batch-size", str(config.batch_size), "--lr", str(config.lr)]
    if tuple(config.train_difficulty) != TrainConfig.train_difficulty:
        parts += ["--train-difficulty", ",".join(f"{v:g}" for v in config.train_difficulty)]
    parts += ["--device", str(resolve_device(config.device)), "--threads", str(config.threads),
              "--out", _display_path(out)]
    return shlex.join(parts)


def run(args: argparse.Namespace) -> dict:
    """Train, calibrate, evaluate and write the files; returns the report (with a "summary")."""
    config = config_from_args(args)
    out = Path(args.out)
    with ProgressBar("train-counter", "run", enabled=not args.no_progress) as bar:
        report = train_counter(config, out, quick=args.quick, progress=bar)
    report["summary"] = format_summary(report)
    return report


# ---------------------------------------------------------------- training
def _stream_seed(seed: int, name: str) -> int:
    """An independent data seed per purpose, so train, validation and test images never coincide."""
    return int(np.random.SeedSequence([seed, zlib.crc32(name.encode())]).generate_state(1, dtype=np.uint64)[0])


def _augment(x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random element of the square's symmetry group (4 rotations x optional flip) per batch."""
    k = int(torch.randint(0, 4, (1,), generator=generator))
    flip = bool(torch.randint(0, 2, (1,), generator=generator))
    x = torch.rot90(x, k, dims=(2, 3))
    return torch.flip(x, dims=(3,)) if flip else x


@torch.no_grad()
@exact_float32()
def _logits(model: ShapeCounter, images: np.ndarray, device: torch.device, batch_size: int = 512) -> torch.Tensor:
    """The model's logits on uint8 images, TF32 off: what ``predict_proba`` gives on any device."""
    model.eval()
    x = torch.from_numpy(images).unsqueeze(1)  # (n, 1, H, W) uint8
    out = []
    for i in range(0, len(x), batch_size):
        xb = (x[i:i + batch_size].to(device).float() / 255.0).contiguous(memory_format=torch.channels_last)
        out.append(model(xb).float().cpu())
    return torch.cat(out)


def train_counter(config: TrainConfig, out: Path, *, quick: bool = False, progress: Progress | None = None) -> dict:
    """Run one training and write ``out`` plus its ``_report.json`` and ``_scores.npz``; return the report.

    Args:
        config: the run.
        out: the weights file; the report and scores go next to it.
        quick: recorded in the report and its command (the sizes are already in ``config``).
        progress: ``progress(fraction, 1, message)``, the share of the whole run done:
            after every optimiser step (no message) and every epoch (loss and accuracy), then
            before calibration and evaluation. It may raise to stop the run (a background job
            raises ``JobCancelled`` when a cancel was requested); nothing is written then.
    """
    def report_progress(fraction: float, message: str = "") -> None:
        if progress is not None:
            progress(fraction, 1.0, message)

    start = time.perf_counter()
    previous_threads = torch.get_num_threads()
    previous_deterministic = torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        torch.manual_seed(config.seed)
        device = resolve_device(config.device)
        report_progress(0.0, f"generating {config.train_size:,} training images")
        lo, hi = config.train_difficulty
        mix = None if (lo, hi) == (0.0, 1.0) else (lambda rng, n: rng.uniform(lo, hi, n))  # None: U[0, 1]
        train = generate_batch(_stream_seed(config.seed, "train"), config.train_size, difficulty=mix)
        data_time = time.perf_counter() - start

        model = ShapeCounter(config.model).to(device).to(memory_format=torch.channels_last)
        # channels_last: about 1.5x faster convolutions on CPU for this network.
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
        steps_per_epoch = config.train_size // config.batch_size  # drop the ragged last batch (batch norm)
        scheduler = torch.optim.lr_scheduler.OneCycleLR(
            optimizer, max_lr=config.lr, total_steps=steps_per_epoch * config.epochs, pct_start=0.15)
        generator = torch.Generator().manual_seed(config.seed)
        images = torch.from_numpy(train.images).unsqueeze(1)  # (n, 1, H, W) uint8; floats made per batch
        labels = torch.from_numpy(train.counts)

        total_steps = steps_per_epoch * config.epochs
        history = []
        for epoch in range(config.epochs):
            model.train()
            order = torch.randperm(config.train_size, generator=generator)
            loss_sum, correct = 0.0, 0
            for step in range(steps_per_epoch):
                idx = order[step * config.batch_size:(step + 1) * config.batch_size]
                xb = _augment(images[idx].float() / 255.0, generator)
                xb = xb.to(device).contiguous(memory_format=torch.channels_last)
                yb = labels[idx].to(device)
                logits = model(xb)
                loss = nn.functional.cross_entropy(logits, yb)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                loss_sum += loss.item() * len(idx)
                correct += int((logits.argmax(1) == yb).sum())
                done = epoch * steps_per_epoch + step + 1
                report_progress(TRAIN_SHARE[0] + (TRAIN_SHARE[1] - TRAIN_SHARE[0]) * done / total_steps)
            seen = steps_per_epoch * config.batch_size
            history.append({"epoch": epoch + 1, "loss": round(loss_sum / seen, 4), "accuracy": round(correct / seen, 4)})
            report_progress(TRAIN_SHARE[0] + (TRAIN_SHARE[1] - TRAIN_SHARE[0]) * (epoch + 1) / config.epochs,
                            f"epoch {epoch + 1}/{config.epochs}: loss {loss_sum / seen:.3f}, "
                            f"training accuracy {correct / seen:.3f}")
        train_time = time.perf_counter() - start - data_time

        # Temperature scaling on held-out images (the training accuracy is optimistic).
        report_progress(TRAIN_SHARE[1], "calibrating the temperature and evaluating on held-out images")
        val = generate_batch(_stream_seed(config.seed, "validation"), config.val_size, difficulty=None)
        val_logits = _logits(model, val.images, device)
        temperature = fit_temperature(val_logits, torch.from_numpy(val.counts))
        model.temperature.fill_(temperature)

        metrics: dict[str, dict] = {}
        scores_seed = _stream_seed(config.seed, "scores")
        scores = generate_batch(scores_seed, config.scores_size, difficulty=None)
        score_logits = _logits(model, scores.images, device)  # temperature-scaled; reused for T = 1 below
        score_probs = torch.softmax(score_logits, dim=1).numpy()
        metrics["overall"] = asdict(EvalMetrics.of(score_probs, scores.counts))
        for name in DIFFICULTY_PRESETS:
            test = generate_batch(_stream_seed(config.seed, f"test-{name}"), config.test_size, difficulty=name)
            probs = torch.softmax(_logits(model, test.images, device), dim=1).numpy()
            metrics[name] = asdict(EvalMetrics.of(probs, test.counts))
        # The overall set again, split by difficulty thirds (continuous difficulty, not presets).
        for low, high in ((0.0, 1 / 3), (1 / 3, 2 / 3), (2 / 3, 1.0001)):  # not lo/hi: those name the training range
            mask = (scores.difficulty >= low) & (scores.difficulty < high)
            metrics[f"difficulty {low:.2f}-{min(high, 1.0):.2f}"] = asdict(
                EvalMetrics.of(score_probs[mask], scores.counts[mask]))
        metrics["uncalibrated (T=1) overall"] = asdict(EvalMetrics.of(
            torch.softmax(score_logits * temperature, dim=1).numpy(), scores.counts))

        model = model.to(memory_format=torch.contiguous_format)
        weights_path = save_counter(model, out)
        scores_path = out.with_name(out.stem + "_scores.npz")
        np.savez_compressed(
            scores_path, probs=score_probs.astype(np.float32), labels=scores.counts.astype(np.int64),
            difficulty=scores.difficulty.astype(np.float32), seed=np.uint64(scores_seed),  # a 64-bit seed
        )
        from engines.platform.provenance import code_version

        report = {
            "command": reproduce_command(config, out, quick),
            "seed": config.seed,
            "quick": quick,
            "train_config": _jsonable(asdict(config)),
            "model_config": _jsonable(asdict(config.model)),
            "n_parameters": n_parameters(model),
            "temperature": temperature,
            "labels": list(LABELS),
            "generator_presets": {name: _jsonable(asdict(cfg)) for name, cfg in DIFFICULTY_PRESETS.items()},
            "train_difficulty": "uniform on [{:g}, {:g}] (shapes.config_for_difficulty)".format(*config.train_difficulty),
            "metrics": metrics,
            "history": history,
            "scores": {"path": scores_path.name, "seed": scores_seed, "n": config.scores_size,
                       "regenerate": f"engines.collab.shapes.generate_batch({scores_seed}, {config.scores_size})"},
            "files": {"weights": weights_path.name, "weights_bytes": weights_path.stat().st_size,
                      "scores_bytes": scores_path.stat().st_size},
            "code_version": code_version(),
            "torch": torch.__version__,
            "data_time_s": round(data_time, 1),
            "train_time_s": round(train_time, 1),
            "total_time_s": round(time.perf_counter() - start, 1),
        }
        report_path = out.with_name(out.stem + "_report.json")
        report_path.write_text(json.dumps(report, indent=2) + "\n")
        report["files"]["report"] = report_path.name
        return report
    finally:
        torch.set_num_threads(previous_threads)
        torch.use_deterministic_algorithms(previous_deterministic)


# ---------------------------------------------------------------- plots
def reliability_bins(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> dict[str, np.ndarray]:
    """Count, mean confidence and accuracy of the top-1 prediction per confidence bin.

    The bins of ``expected_calibration_error`` ((lo, hi], equal width); empty bins have count 0
    and NaN means. ECE is ``sum(count * |accuracy - confidence|) / n`` over the non-empty bins.
    """
    probs = np.asarray(probs, dtype=np.float64)
    confidence = probs.max(axis=1)
    correct = (probs.argmax(axis=1) == np.asarray(labels)).astype(np.float64)
    bins = np.clip(np.ceil(confidence * n_bins - 1e-9).astype(int) - 1, 0, n_bins - 1)
    count = np.bincount(bins, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_confidence = np.bincount(bins, weights=confidence, minlength=n_bins) / count
        accuracy = np.bincount(bins, weights=correct, minlength=n_bins) / count
    return {"edges": np.linspace(0.0, 1.0, n_bins + 1), "count": count, "confidence": mean_confidence,
            "accuracy": accuracy}


def write_plots(report: dict, out_dir: Path, stem: str = "counter") -> list[Path]:
    """Draw a run's reliability diagram and its accuracy/ECE per difficulty as PNGs in ``out_dir``.

    Args:
        report: the report ``train_counter`` returned or wrote.
        out_dir: the folder of the run's files (its scores file is read from there).
        stem: file names are ``<stem>_reliability.png`` and ``<stem>_accuracy.png``.

    Returns:
        The paths written.
    """
    from matplotlib.figure import Figure  # no pyplot: no global backend state

    out_dir = Path(out_dir)
    with np.load(out_dir / report["scores"]["path"]) as scores:
        probs, labels = scores["probs"], scores["labels"]
    overall = report["metrics"]["overall"]
    b = reliability_bins(probs, labels)
    centres = (b["edges"][:-1] + b["edges"][1:]) / 2
    width = b["edges"][1] - b["edges"][0]
    filled = b["count"] > 0

    fig = Figure(figsize=(6.5, 6.0))
    ax, hist = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    ax.plot([0, 1], [0, 1], color="grey", ls="--", lw=1, label="perfect calibration")
    ax.bar(centres[filled], b["accuracy"][filled], width=width * 0.9, color="tab:blue", alpha=0.8,
           label="accuracy in bin")
    ax.plot(b["confidence"][filled], b["accuracy"][filled], "o", color="black", ms=4,
            label="(mean confidence, accuracy)")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.set_title(f"Reliability on {overall['n']:,} held-out images: accuracy {overall['accuracy']:.3f}, "
                 f"ECE {overall['ece']:.3f}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(alpha=0.3)
    hist.bar(centres, b["count"], width=width * 0.9, color="tab:grey")
    hist.set_xlim(0, 1)
    hist.set_xlabel("confidence (max probability)")
    hist.set_ylabel("images")
    fig.tight_layout()
    reliability = out_dir / f"{stem}_reliability.png"
    fig.savefig(reliability, dpi=100)

    names = [n for n in report["metrics"] if n in DIFFICULTY_PRESETS or n.startswith("difficulty ")]
    rows = [report["metrics"][n] for n in names]
    x = np.arange(len(names))
    fig = Figure(figsize=(8.0, 4.5))
    acc_ax, ece_ax = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    acc_ax.bar(x - 0.2, [r["accuracy"] for r in rows], width=0.4, color="tab:blue", label="accuracy")
    acc_ax.bar(x + 0.2, [r["mean_confidence"] for r in rows], width=0.4, color="tab:orange",
               label="mean confidence")
    acc_ax.axhline(overall["accuracy"], color="grey", ls="--", lw=1, label="overall accuracy")
    acc_ax.set_ylim(0, 1)
    acc_ax.set_title("Accuracy by difficulty", fontsize=10)
    acc_ax.legend(fontsize=8)
    ece_ax.bar(x, [r["ece"] for r in rows], color="tab:red")
    ece_ax.set_title("ECE by difficulty", fontsize=10)
    for a in (acc_ax, ece_ax):
        a.set_xticks(x, [n.replace("difficulty ", "d ") for n in names], rotation=30, ha="right", fontsize=8)
        a.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    accuracy = out_dir / f"{stem}_accuracy.png"
    fig.savefig(accuracy, dpi=100)
    return [reliability, accuracy]


def format_summary(report: dict) -> str:
    """A plain-text table of the report's metrics."""
    lines = [f"{'set':<28}{'n':>6}{'accuracy':>10}{'ECE':>8}{'NLL':>8}{'conf':>8}"]
    for name, m in report["metrics"].items():
        lines.append(f"{name:<28}{m['n']:>6}{m['accuracy']:>10.3f}{m['ece']:>8.3f}{m['nll']:>8.3f}{m['mean_confidence']:>8.3f}")
    lines.append(f"temperature {report['temperature']}, {report['n_parameters']} parameters, "
                 f"{report['files']['weights_bytes'] / 1024:.0f} KiB weights, {report['total_time_s']} s")
    lines.append(f"reproduce: {report['command']}")
    return "\n".join(lines)


def _jsonable(value):
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


def _display_path(path: Path) -> str:
    """The path relative to the repository when it lies inside it (a portable command line)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


__all__ = ["EvalMetrics", "add_arguments", "expected_calibration_error", "fit_temperature",
           "reliability_bins", "run", "train_counter", "write_plots"]
