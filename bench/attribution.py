"""Benchmark of the attribution area (issue 10): ISS throughput, time to a map, and faithfulness.

Three measures, on a shipped reaching policy (reach-cnn, 64 x 64 frames) on ``--device`` (default
the ``HAI_DEVICE`` setting's: CUDA when present), in one process:

- **throughput**: mask evaluations per second inside ``iss`` (a 500-mask map of one frame, batch
  64) against the same policy's raw batched forward throughput on the same batch size over the
  same images, the limit (goal: at least 0.8 of it); on a GPU every timed work ends with a
  synchronisation, so queued work is counted; ``scaling`` gives ISS's rate at more masks
  (goal: no fall beyond 2,000);
- **time to a map**: a 500-mask ISS map against Captum's ``FeatureAblation`` on the same 7 x 7
  grid with as many image evaluations (10 calls of 49 ablations and the input, 64 per forward
  pass), goal: ISS no slower (ratio <= 1);
- **faithfulness**: deletion (MoRF) area, MoRF - LeRF gap and insertion area of ISS and each
  baseline's map over held-out frames, under each replacement (blur, mean, noisy), with a paired
  Wilcoxon test of ISS against each baseline on the deletion area. Reported as measured, where
  ISS loses too.

Median of ``--repeats`` timings after a warm-up, the three timed works run in turn within each
repeat (so a shared machine's drift shifts them alike). Prints one JSON line, writes the same object to
``bench/results/attribution.json`` (or ``--out``), progress on stderr.

    python bench/attribution.py                  # 5 repeats, 12 frames for faithfulness
    python bench/attribution.py --quick          # 1 repeat, 2 frames, 2 baselines
    python bench/attribution.py --device cuda    # the same on the GPU
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._results import emit, machine_info  # noqa: E402

NAME = "attribution"
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
GOAL_THROUGHPUT_RATIO = 0.8  # ISS mask evaluations per second / raw forward throughput, at least
GOAL_TIME_RATIO = 1.0  # ISS map time / Captum FeatureAblation time for the same forward passes, at most
N_MASKS, BATCH, GRID = 500, 64, (7, 7)
FULL = {"repeats": 5, "frames": 12, "baselines": ("occlusion", "feature_ablation", "rise", "saliency",
                                                  "integrated_gradients", "grad_cam")}
QUICK = {"repeats": 1, "frames": 2, "baselines": ("occlusion", "saliency")}
SCALING_MASKS = (500, 2000, 8000)  # ISS's rate at these mask counts (the full run; --quick: the first two)
POLICY = "reach-rho1-seed0.pt"  # the shipped policy that leans on the cue


def round_robin_medians(works: dict, repeats: int) -> dict[str, float]:
    """Median seconds of each work, run in turn within every repeat (ISS, raw, FeatureAblation, ISS,
    ...), after one warm-up of each: a machine that speeds up or slows down meanwhile (a shared
    CPU) shifts all of them alike, so their ratios hold."""
    for work in works.values():
        work()  # warm-up: first calls allocate and pick convolution kernels
    times: dict[str, list[float]] = {name: [] for name in works}
    for _ in range(repeats):
        for name, work in works.items():
            started = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) for name, values in times.items()}


def timed_works(model, image, device=None) -> dict:
    """The three timed works: a 500-mask ISS map, as many raw batched forward passes over masked
    images, and Captum FeatureAblation with as many evaluations on the same grid. Each ends by
    waiting for ``device`` (a GPU queues work and returns at once)."""
    import torch
    from captum.attr import FeatureAblation

    from engines.attribution.baselines import DivergenceModel, cell_mask
    from engines.attribution.iss import iss
    from engines.attribution.policies import torch_policy
    from engines.attribution.replacements import replacement
    from engines.platform.torch_device import model_device, synchronize

    device = device if device is not None else model_device(model)
    policy = torch_policy(model)
    batch = (image * torch.rand((BATCH, 1, *image.shape[-2:]), generator=torch.Generator().manual_seed(0))
             .to(image.device)).contiguous()  # masked images, as ISS feeds the policy
    passes = -(-N_MASKS // BATCH)
    cells = cell_mask(GRID, tuple(image.shape[-2:])).to(image.device)
    replaced = replacement(image, "blur")
    ablation = FeatureAblation(DivergenceModel(model, image))
    rounds = N_MASKS // (GRID[0] * GRID[1] + 1)  # each call evaluates the 49 ablations and the input itself

    def raw() -> None:
        with torch.no_grad():
            for _ in range(passes):
                model(batch)
        synchronize(device)

    def captum() -> None:
        with torch.no_grad():
            for _ in range(rounds):
                ablation.attribute(image, baselines=replaced, feature_mask=cells, perturbations_per_eval=BATCH)
        synchronize(device)

    def map_() -> None:
        iss(policy, image, grid=GRID, n_masks=N_MASKS, batch_size=BATCH)  # ends with its one copy back

    return {"iss": map_, "raw": raw, "feature_ablation": captum}


def scaling(model, image, counts: tuple[int, ...]) -> dict:
    """ISS's mask evaluations per second at each of ``counts`` masks (one frame, batch 64; a warm-up,
    then the best of two), and the rate at the largest count over the rate at the smallest."""
    from engines.attribution.iss import iss
    from engines.attribution.policies import torch_policy

    policy = torch_policy(model)
    rates = {}
    for count in counts:
        iss(policy, image, grid=GRID, n_masks=count, batch_size=BATCH)  # warm-up
        best = min(_seconds(lambda count=count: iss(policy, image, grid=GRID, n_masks=count, batch_size=BATCH))
                   for _ in range(2))
        rates[str(count)] = round(count / best, 1)
    first, last = rates[str(counts[0])], rates[str(counts[-1])]
    return {"iss_masks_per_s": rates, "ratio_largest_to_smallest": round(last / first, 3)}


def _seconds(work) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def throughput(seconds: dict[str, float]) -> dict:
    """ISS's mask evaluations per second against raw batched forward passes of the same batch size."""
    passes = -(-N_MASKS // BATCH)
    raw_rate, iss_rate = passes * BATCH / seconds["raw"], N_MASKS / seconds["iss"]
    return {"raw_forward_per_s": round(raw_rate, 1), "iss_masks_per_s": round(iss_rate, 1),
            "ratio": round(iss_rate / raw_rate, 3), "goal_at_least": GOAL_THROUGHPUT_RATIO,
            "meets_goal": iss_rate / raw_rate >= GOAL_THROUGHPUT_RATIO, "iss_map_s": round(seconds["iss"], 4)}


def against_feature_ablation(seconds: dict[str, float]) -> dict:
    """A 500-mask ISS map against Captum FeatureAblation with 500 forward evaluations on the same grid."""
    per_call = GRID[0] * GRID[1] + 1
    iss_s, captum_s = seconds["iss"], seconds["feature_ablation"]
    return {"iss_s": round(iss_s, 4), "feature_ablation_s": round(captum_s, 4),
            "feature_ablation_evaluations": (N_MASKS // per_call) * per_call, "ratio": round(iss_s / captum_s, 3),
            "goal_at_most": GOAL_TIME_RATIO, "meets_goal": iss_s / captum_s <= GOAL_TIME_RATIO}


def faithfulness(model, frames, baselines: tuple[str, ...]) -> dict:
    """Deletion area, MoRF - LeRF gap and insertion area per method and replacement, over ``frames``."""
    from engines.attribution.baselines import attribute
    from engines.attribution.faithfulness import cell_scores, curves, paired_test
    from engines.attribution.iss import iss
    from engines.attribution.policies import torch_policy
    from engines.attribution.replacements import REPLACEMENTS, replacement

    policy = torch_policy(model)
    # The contrast map is an increasing affine function of the plain one per cell (dISS = (ISS - E[D]) / p),
    # so it ranks cells identically: its curves are ISS's.
    methods = ("iss", *baselines)
    table: dict = {}
    for name in REPLACEMENTS:
        per_method = {m: {"morf": [], "gap": [], "insertion": []} for m in methods}
        for index in range(frames.shape[0]):
            image = frames[index:index + 1]
            result = iss(policy, image, grid=GRID, n_masks=300, baseline=name, seed=index)
            maps = {"iss": result.pixel_map[0]}
            for method in baselines:
                maps[method] = attribute(method, model, image, grid=GRID, n_masks=300, baseline=name, seed=index)
            replaced = replacement(image, name, seed=index)
            for method, pixel_map in maps.items():
                c = curves(policy, image, cell_scores(pixel_map.detach(), GRID), replaced, GRID)
                per_method[method]["morf"].append(c.morf_auc)
                per_method[method]["gap"].append(c.gap)
                per_method[method]["insertion"].append(c.insertion_auc)
            print(f"faithfulness {name}: frame {index + 1}/{frames.shape[0]}", file=sys.stderr, flush=True)
        rows = {}
        for method in methods:
            values = per_method[method]
            row = {key: round(statistics.fmean(v), 6) for key, v in values.items()}
            if method != "iss" and len(values["morf"]) >= 2:
                test = paired_test(per_method["iss"]["morf"], values["morf"])
                row["iss_minus_this_morf_median"] = round(test.median_difference, 6)
                row["wilcoxon_p"] = None if test.p_value != test.p_value else round(test.p_value, 4)
            rows[method] = row
        table[name] = rows
    return table


def run(args: argparse.Namespace) -> dict:
    import numpy as np
    import torch

    from engines.attribution.env import dataset
    from engines.attribution.policies import load_policy
    from engines.attribution.policy_set import SHIPPED_DIR
    from engines.platform.torch_device import describe_device, resolve_device

    settings = QUICK if args.quick else FULL
    repeats = args.repeats or settings["repeats"]
    load_before = round(os.getloadavg()[0], 2)
    device = resolve_device(args.device)
    model, _ = load_policy(SHIPPED_DIR / POLICY, device=device)
    frames, _, _ = dataset(settings["frames"], 1.0, seed=70_000)
    # The frames stay on the CPU, as a caller's would: every entry point moves them to the model's device.
    frames = torch.from_numpy(np.ascontiguousarray(frames))
    image = frames[:1].to(device)
    print(f"ISS, raw forward passes, FeatureAblation, in turn on {describe_device(device)}…", file=sys.stderr,
          flush=True)
    seconds = round_robin_medians(timed_works(model, image, device), repeats)  # one ISS figure for both ratios
    speed = throughput(seconds)
    versus = against_feature_ablation(seconds)
    print("ISS at more masks…", file=sys.stderr, flush=True)
    scaled = scaling(model, image, SCALING_MASKS[:2] if args.quick else SCALING_MASKS)
    print("faithfulness…", file=sys.stderr, flush=True)
    faithful = faithfulness(model, frames, settings["baselines"])
    return {
        "benchmark": NAME, "quick": bool(args.quick), "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": str(device), "device_name": describe_device(device), "torch_threads": torch.get_num_threads(),
        "policy": POLICY,
        "n_masks": N_MASKS, "batch_size": BATCH, "grid": list(GRID), "repeats": repeats,
        "headline": (f"ISS runs {speed['iss_masks_per_s']:.0f} masks/s, {speed['ratio']:.2f} of raw forward "
                     f"throughput (goal >= {GOAL_THROUGHPUT_RATIO}); a 500-mask map takes {versus['iss_s']:.3f} s, "
                     f"{versus['ratio']:.2f} x Captum FeatureAblation's time for as many forward passes "
                     f"(goal <= {GOAL_TIME_RATIO})"),
        "throughput": speed, "versus_feature_ablation": versus, "scaling": scaled,
        "ratios": {"iss_vs_raw_forward": speed["ratio"],
                   "feature_ablation_vs_raw_forward": round(
                       versus["feature_ablation_evaluations"] / seconds["feature_ablation"] / speed["raw_forward_per_s"],
                       3),
                   "iss_time_vs_feature_ablation": versus["ratio"]},
        "faithfulness_frames": settings["frames"],
        "faithfulness": faithful, "machine": machine_info(load_before),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 2 frames, 2 baselines (checks the script)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--device", default=None,
                        help="cpu, cuda, cuda:N or auto (default: the HAI_DEVICE setting, CUDA when present)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
