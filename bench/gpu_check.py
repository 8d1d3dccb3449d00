"""`make gpu-check`: the CUDA-marked tests and the GPU benchmarks in one run, under 5 minutes on one GPU.

Writes ``bench/results/gpu.json`` (or ``--out``)::

    {"device": "cuda:0 (NVIDIA H200)", "checks": {name: {"ok": bool, ...}, ...},
     "ratios": {"iss_vs_raw_forward": ..., ...}, ...}

The checks (docs/design.md, "Devices"):

- ``cuda_tests``: ``pytest -m cuda`` over the files that hold CUDA-marked tests (skipped without a GPU);
- ``iss_matches_cpu``: an ISS map with the policy on the device against the CPU's, TF32 off (1e-5 relative);
- ``attribution_baselines``: the 7 baselines with the policy on the device and the frame on the CPU;
- ``explain``: a frame (with faithfulness curves) and an episode explained with the policy on the device;
- ``iss_throughput``: ISS's mask evaluations per second against raw batched forward passes over masked
  images (goal at least 0.8), Captum's FeatureAblation likewise, and ISS at more masks (no fall);
- ``half_precision``: the tiny InstructPix2Pix, SVD and Wan pipelines in float16 and bfloat16 against
  float32, mean difference per pixel in 1/255 (goal at most 1 and 2), and with CPU offload (GPU only);
- ``counter``: the counting CNN's probabilities on the device against the CPU's and the shipped scores,
  a seeded training run twice (bit for bit), and its training speed against 2 CPU threads (GPU only).

Without a GPU the same checks run on the CPU, and ``device`` says "cpu (no CUDA device)"
(``device_detail`` says why). One check failing does not stop the others; the exit status is 0 when
every check is ok. The result is also printed as one JSON line.

    python bench/gpu_check.py                 # the GPU when there is one
    python bench/gpu_check.py --device cpu    # the CPU path on any machine
    python bench/gpu_check.py --device cpu --quick   # every check at smaller sizes (the test suite's run)
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._results import emit, machine_info  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the tiny pipelines are built here: nothing is downloaded

DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "gpu.json"
CUDA_TEST_FILES = ("tests/platform/test_torch_device.py", "tests/attribution/test_attribution_cuda.py",
                   "tests/collab/test_counter.py", "tests/hoi/test_hoi_tiny_pipelines_precision.py")
ISS_RELATIVE = 1e-5  # ISS on the device against the CPU, TF32 off
BASELINE_RELATIVE = 1e-4  # a baseline's map likewise (Captum's sums and gradients: more operations)
GOAL_ISS_RATIO = 0.8  # ISS mask evaluations per second / raw forward passes of the same batches
GOAL_SCALING = 0.8  # ISS's rate at the most masks / at 500: no fall as the mask count grows
HALF_BOUNDS = {"float16": 1.0, "bfloat16": 2.0}  # mean |half - float32| per pixel, in 1/255
PROMPT = "the person picks up the cup"
# Mask counts, bootstrap resamples and timing repeats: the full run's, and --quick's (every check still runs,
# on fewer masks and one timing repeat; the suite's test runs it so).
FULL = {"iss_masks": 500, "baseline_masks": 200, "frame_masks": 200, "boot": 50, "episode_masks": 100, "repeats": 5,
        "scaling_counts": (500, 2000)}
QUICK = {"iss_masks": 100, "baseline_masks": 50, "frame_masks": 50, "boot": 10, "episode_masks": 25, "repeats": 1,
         "scaling_counts": (500, 1000)}


def check(name: str, checks: dict, work: Callable[[], dict]) -> None:
    """Run one check; its figures (and "ok") into ``checks[name]``, an exception as ok: false."""
    started = time.perf_counter()
    print(f"{name}…", file=sys.stderr, flush=True)
    try:
        checks[name] = work()
    except Exception as exc:  # noqa: BLE001 - a failed check is a result, the others still run
        checks[name] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:1000],
                        "traceback": traceback.format_exc(limit=-4)[-2000:]}
    checks[name]["seconds"] = round(time.perf_counter() - started, 2)
    print(f"{name}: {'ok' if checks[name]['ok'] else 'FAILED'} ({checks[name]['seconds']} s)", file=sys.stderr,
          flush=True)


def cuda_tests(on_gpu: bool) -> dict:
    """``pytest -m cuda`` in a child process; the counts from its JUnit report."""
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "cuda.xml"
        proc = subprocess.run([sys.executable, "-m", "pytest", "-m", "cuda", "-p", "no:randomly", "-q",
                               "-p", "no:cacheprovider", f"--junitxml={report}", *CUDA_TEST_FILES],
                              cwd=REPO_ROOT, capture_output=True, text=True, timeout=240)
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        if report.exists():
            for suite in ElementTree.parse(report).getroot().iter("testsuite"):
                for key in counts:
                    counts[key] += int(suite.get(key, 0))
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    result = {"ok": proc.returncode in (0, 5) and not counts["failures"] and not counts["errors"]
              and (passed > 0 or not on_gpu), "passed": passed, "failed": counts["failures"] + counts["errors"],
              "skipped": counts["skipped"], "files": list(CUDA_TEST_FILES)}
    if not on_gpu:
        result["note"] = "no CUDA device: the CUDA-marked tests are skipped; the checks below ran on the CPU"
    if result["failed"] or proc.returncode not in (0, 1, 5):
        result["output_tail"] = (proc.stdout + proc.stderr)[-3000:]
    return result


def _relative(a, b) -> float:
    scale = max(float(b.abs().max()), 1e-12)
    return float((a - b).abs().max()) / scale


def _policies(device):
    from engines.attribution.policies import load_policy
    from engines.attribution.policy_set import SHIPPED_DIR

    path = SHIPPED_DIR / "reach-rho1-seed0.pt"
    return load_policy(path, device="cpu")[0], load_policy(path, device=device)[0]


def _frame():
    import torch

    from engines.attribution.explain import scene_frame

    return torch.from_numpy(scene_frame(1.0, 5).image)[None]  # on the CPU, as a caller makes it


def iss_matches_cpu(device, sizes: dict = FULL) -> dict:
    from engines.attribution.iss import iss
    from engines.attribution.policies import torch_policy
    from engines.platform.torch_device import exact_float32

    cpu, here = _policies(device)
    with exact_float32():
        reference = iss(torch_policy(cpu), _frame(), n_masks=sizes["iss_masks"], seed=1)
        measured = iss(torch_policy(here), _frame(), n_masks=sizes["iss_masks"], seed=1)
    errors = {name: _relative(getattr(measured, name), getattr(reference, name))
              for name in ("pixel_map", "contrast_pixel_map", "divergences")}
    return {"ok": max(errors.values()) <= ISS_RELATIVE, "relative_error": errors, "bound": ISS_RELATIVE}


def attribution_baselines(device, sizes: dict = FULL) -> dict:
    import torch

    from engines.attribution.baselines import METHODS, attribute
    from engines.platform.torch_device import exact_float32

    cpu, here = _policies(device)
    errors, finite = {}, {}
    with exact_float32():
        for method in METHODS:
            measured = attribute(method, here, _frame(), n_masks=sizes["baseline_masks"], seed=2)
            finite[method] = bool(torch.isfinite(measured).all()) and measured.device.type == "cpu"
            errors[method] = _relative(measured, attribute(method, cpu, _frame(), n_masks=sizes["baseline_masks"], seed=2))
    return {"ok": all(finite.values()) and max(errors.values()) <= BASELINE_RELATIVE, "methods": list(METHODS),
            "relative_error_vs_cpu": errors, "bound": BASELINE_RELATIVE}


def explain_paths(device, sizes: dict = FULL) -> dict:
    import numpy as np

    from engines.attribution import explain
    from engines.attribution.env import TaskConfig, sample_scene

    _, here = _policies(device)
    frame = explain.explain_frame(here, explain.scene_frame(1.0, 7), baselines=("occlusion", "rise"),
                                  n_masks=sizes["frame_masks"], n_boot=sizes["boot"])
    episode = explain.explain_episode(here, sample_scene(np.random.default_rng(0), TaskConfig(), 1.0),
                                      n_masks=sizes["episode_masks"])
    ok = bool(np.isfinite(frame.iss_map).all() and np.isfinite(episode.pixel_maps).all()
              and set(frame.curves) == {"iss", "occlusion", "rise"})
    return {"ok": ok, "frame_nmr_mass": frame.nmr_mass.value, "frame_seconds": frame.seconds,
            "episode_steps": episode.steps}


def iss_throughput(device, ratios: dict, sizes: dict = FULL) -> dict:
    from bench.attribution import (
        against_feature_ablation,
        round_robin_medians,
        scaling,
        throughput,
        timed_works,
    )

    _, here = _policies(device)
    image = _frame().to(device)
    seconds = round_robin_medians(timed_works(here, image, device), repeats=sizes["repeats"])
    speed, versus = throughput(seconds), against_feature_ablation(seconds)
    counts = (*sizes["scaling_counts"], 8000) if device.type == "cuda" else sizes["scaling_counts"]
    scaled = scaling(here, image, counts)
    ratios["iss_vs_raw_forward"] = speed["ratio"]
    ratios["feature_ablation_vs_raw_forward"] = round(
        versus["feature_ablation_evaluations"] / seconds["feature_ablation"] / speed["raw_forward_per_s"], 3)
    ratios["iss_time_vs_feature_ablation"] = versus["ratio"]
    ratios[f"iss_{counts[-1]}_vs_{counts[0]}_masks"] = scaled["ratio_largest_to_smallest"]
    return {"ok": speed["ratio"] >= GOAL_ISS_RATIO and scaled["ratio_largest_to_smallest"] >= GOAL_SCALING,
            "throughput": speed, "versus_feature_ablation": versus, "scaling": scaled,
            "goals": {"iss_vs_raw_forward_at_least": GOAL_ISS_RATIO, "scaling_at_least": GOAL_SCALING}}


def half_precision(device, ratios: dict) -> dict:
    import numpy as np
    from PIL import Image

    import engines.hoi.generation  # noqa: F401 - registers the diffusers roles
    from engines.hoi.offline.tiny_pipelines import save_tiny, tiny_config
    from engines.hoi.roles import make

    source = Image.new("RGB", (40, 30), (200, 30, 30))
    source.paste((20, 20, 220), (0, 0, 20, 30))

    def frames(name: str, folder: Path, **changes) -> np.ndarray:
        config = {k: v for k, v in tiny_config(name, folder, device=str(device)).items() if k != "role"} | changes
        role = make("editor" if config["task"] == "edit" else "i2v", "diffusers", **config)
        if config["task"] == "edit":
            return np.asarray(role.edit(source, PROMPT, seed=3), dtype=np.float64)[None]
        return np.stack([np.asarray(f, dtype=np.float64) for f in role.generate(source, PROMPT, num_frames=5, seed=3)])

    distances: dict = {}
    ok = True
    with tempfile.TemporaryDirectory() as root:
        for name in ("instruct-pix2pix", "svd", "wan"):
            folder = Path(root) / name
            save_tiny(name, folder)
            reference = frames(name, folder)
            row = {}
            for dtype, bound in HALF_BOUNDS.items():
                row[dtype] = round(float(np.abs(frames(name, folder, dtype=dtype) - reference).mean()), 3)
                ok &= row[dtype] <= bound
            if device.type == "cuda" and name != "wan":
                placed = frames(name, folder, dtype="float16")
                row["float16_offload_vs_placed"] = round(float(np.abs(
                    frames(name, folder, dtype="float16", offload=True) - placed).mean()), 3)
                ok &= row["float16_offload_vs_placed"] <= HALF_BOUNDS["float16"]
            distances[name] = row
    for name, row in distances.items():
        for dtype in HALF_BOUNDS:
            ratios[f"{name}_{dtype}_vs_float32_per_255"] = row[dtype]
    result = {"ok": bool(ok), "mean_abs_difference_per_255": distances, "bounds_per_255": HALF_BOUNDS}
    if device.type != "cuda":
        result["note"] = "on the CPU; CPU offload needs an accelerator and was not run"
    return result


def counter(device, ratios: dict) -> dict:
    import numpy as np
    import torch

    from engines.collab.counter import DEFAULT_WEIGHTS, load_counter, predict_proba
    from engines.collab.counter_config import QUICK, TrainConfig
    from engines.collab.counter_training import train_counter
    from engines.collab.shapes import generate_batch

    scores = np.load(DEFAULT_WEIGHTS.parent / "counter_scores.npz")
    first = generate_batch(int(scores["seed"]), 64)
    here = predict_proba(load_counter(device=device), first.images)
    versus_cpu = float(np.abs(here - predict_proba(load_counter(device="cpu"), first.images)).max())
    versus_shipped = float(np.abs(here - scores["probs"][:64]).max())
    with tempfile.TemporaryDirectory() as folder:
        config = TrainConfig(**QUICK, device=str(device))
        for name in ("a.pt", "b.pt"):
            train_counter(config, Path(folder) / name, quick=True)
        a, b = (torch.load(Path(folder) / name, weights_only=True)["state_dict"] for name in ("a.pt", "b.pt"))
        reproducible = all(torch.equal(a[key], b[key]) for key in a)
        result = {"probabilities_max_abs_vs_cpu": versus_cpu, "probabilities_max_abs_vs_shipped": versus_shipped,
                  "training_bit_reproducible": reproducible}
        if device.type == "cuda":
            sizes = {**QUICK, "train_size": 8192, "epochs": 2, "batch_size": 128}
            times = {}
            for where in ("cpu", str(device)):
                report = train_counter(TrainConfig(**sizes, device=where, threads=2), Path(folder) / f"{where}.pt")
                times[where] = report["train_time_s"]
            result["train_seconds"] = times
            ratios["counter_train_speedup_vs_2_cpu_threads"] = round(times["cpu"] / max(times[str(device)], 0.05), 2)
        else:
            result["note"] = "no CUDA device: the training speed against the CPU was not measured"
    result["ok"] = versus_cpu <= 1e-5 and versus_shipped <= 1e-4 and reproducible
    return result


def run(args: argparse.Namespace) -> dict:
    import torch

    from engines.platform.torch_device import describe_device, no_cuda_reason, resolve_device

    started = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    device = resolve_device(args.device or "auto")
    on_gpu = device.type == "cuda"
    sizes = QUICK if args.quick else FULL
    checks: dict = {}
    ratios: dict = {}
    check("cuda_tests", checks, lambda: cuda_tests(torch.cuda.is_available()))
    check("iss_matches_cpu", checks, lambda: iss_matches_cpu(device, sizes))
    check("attribution_baselines", checks, lambda: attribution_baselines(device, sizes))
    check("explain", checks, lambda: explain_paths(device, sizes))
    check("iss_throughput", checks, lambda: iss_throughput(device, ratios, sizes))
    check("half_precision", checks, lambda: half_precision(device, ratios))
    check("counter", checks, lambda: counter(device, ratios))
    failed = [name for name, result in checks.items() if not result["ok"]]
    return {
        "benchmark": "gpu_check", "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "device": describe_device(device), "device_detail": no_cuda_reason() if not on_gpu else None,
        "torch": torch.__version__, "torch_cuda": torch.version.cuda, "ok": not failed, "quick": bool(args.quick),
        "summary": (f"{len(checks) - len(failed)} of {len(checks)} checks ok on {describe_device(device)}"
                    + (f"; failed: {', '.join(failed)}" if failed else "")),
        "checks": checks, "ratios": ratios, "seconds": round(time.perf_counter() - started, 1),
        "machine": machine_info(load_before),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cuda, cuda:N, cpu or auto (default auto: CUDA when present)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--quick", action="store_true",
                        help="every check at smaller sizes: fewer masks, fewer resamples, one timing repeat")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = emit(lambda: run(args), args.out)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
