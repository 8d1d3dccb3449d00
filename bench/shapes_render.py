"""Benchmark: shape-counting images generated per second (``engines.collab.shapes``).

Requirement (moved here from a unit test, which must not time anything): at least 100 images/s
from ``generate_batch`` in one process, i.e. the 500-image batch in under 5 s, so that the
counter's ~10,000 training images are drawn in well under a minute.

Timed, after one warm-up batch:

- ``batch`` (the headline): ``generate_batch(seed, n)`` with each image's difficulty ~ U[0, 1];
- ``batch_easy`` / ``batch_hard``: the same at the "easy" and "hard" presets (fewer / more shapes);
- ``png_scale5``: ``to_png_bytes(image, scale=5)`` per image, what a participant's page sends.

Each figure is the median of ``--repeats`` runs. Prints one JSON line to stdout, writes the same
object (indented) to ``bench/results/shapes_render.json`` (or ``--out``), progress on stderr.

    python bench/shapes_render.py            # n = 500 images, 5 repeats
    python bench/shapes_render.py --quick    # n = 50 images, 2 repeats
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

# Needs the repository on sys.path.
from bench._results import emit, machine_info  # noqa: E402

NAME = "shapes_render"
GOAL_PER_S = 100  # 500 images in 5 s
FULL_N, QUICK_N = 500, 50
PNG_SCALE = 5  # studies.collab_shapes: 64 px images shown at 320 px
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=f"Shape-counting images generated per second. Goal: >= {GOAL_PER_S:,}/s.")
    parser.add_argument("--quick", action="store_true", help=f"small run for tests: n = {QUICK_N:,}")
    parser.add_argument("--n", type=int, default=None, help=f"images per timed batch (default {FULL_N:,})")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per figure (default 5; --quick: 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.n is not None and args.n < 1:
        parser.error("--n must be >= 1")
    if args.repeats is not None and args.repeats < 1:
        parser.error("--repeats must be >= 1")
    return args


def _median_s(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def run(args: argparse.Namespace) -> dict:
    from engines.collab.shapes import generate_batch, to_png_bytes
    from engines.platform.provenance import code_version

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    n = args.n or (QUICK_N if args.quick else FULL_N)
    repeats = args.repeats or (2 if args.quick else 5)

    def row(seconds: float, count: int) -> dict:
        return {"images": count, "median_s": round(seconds, 5), "images_per_s": round(count / seconds, 1),
                "ratio_to_goal": round(count / seconds / GOAL_PER_S, 3)}

    print(f"{NAME}: warm-up", file=sys.stderr)
    warm = time.perf_counter()
    images = generate_batch(args.seed, min(n, 20)).images
    warm_s = time.perf_counter() - warm
    results = {}
    for label, difficulty in (("batch", None), ("batch_easy", "easy"), ("batch_hard", "hard")):
        print(f"{NAME}: {label}, {repeats} x {n} images", file=sys.stderr)
        results[label] = row(_median_s(lambda d=difficulty: generate_batch(args.seed, n, d), repeats), n)
    print(f"{NAME}: png at scale {PNG_SCALE}", file=sys.stderr)
    batch = generate_batch(args.seed, n).images
    results["png_scale5"] = row(_median_s(lambda: [to_png_bytes(image, scale=PNG_SCALE) for image in batch],
                                          repeats), n)
    headline = {**results["batch"], "pass": results["batch"]["images_per_s"] >= GOAL_PER_S}
    return {
        "benchmark": NAME,
        "requirement": f">= {GOAL_PER_S:,} images/s from generate_batch (500 images in 5 s), one process",
        "headline": {"label": "generate_batch, difficulty ~ U[0, 1]", **headline},
        "goal": {"images_per_s": GOAL_PER_S, "met": headline["pass"]},
        "results": results,
        "warmup_s": round(warm_s, 3),
        "sanity": {"image_shape": list(images.shape[1:]), "dtype": str(images.dtype)},
        "config": {"quick": args.quick, "n": n, "repeats": repeats, "seed": args.seed, "png_scale": PNG_SCALE},
        "machine": machine_info(round(load_before, 2)),
        "code_version": code_version(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
