"""Benchmark of the HOI-Edit area (issue 12): opening the item browser, and arena ratings.

In one process:

- **item browser** on a 500-item x 8-method benchmark the script writes (upstream's annotation
  files, 512 x 384 PNG source images and edits, a records file per method): the *first view* is
  what the page does when it opens, from nothing cached: read the folder (items, methods,
  records, scores), list the split's items sorted by disagreement between the methods, build the
  first item's view and thumbnail its source and the 8 edits (goal: under 2 s). The *next item*
  is paging to another item with the folder already read: its view and 9 thumbnails (goal: under
  300 ms). Engine level: ``engines.hoi.browse`` without Streamlit; the page adds its own
  rendering on top.
- **ratings**: Bradley–Terry (and Elo) with 1,000 bootstrap resamples over 10,000 votes among 8
  methods with known strengths (goal: under 2 s); the recovered ranking is checked against the
  true order.

Median of ``--repeats`` timings (the first view is cold each time: a fresh thumbnail cache and a
fresh read). Prints one JSON line, writes the same object to ``bench/results/hoi.json`` (or
``--out``), progress on stderr.

    python bench/hoi.py            # 500 items x 8 methods, 10k votes, 1,000 resamples, 3 repeats
    python bench/hoi.py --quick    # 40 items x 3 methods, 500 votes, 50 resamples, 1 repeat
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._results import emit, machine_info  # noqa: E402

NAME = "hoi"
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
GOAL_FIRST_VIEW_S = 2.0
GOAL_NEXT_ITEM_S = 0.3
GOAL_RATINGS_S = 2.0
FULL = {"items": 500, "methods": 8, "votes": 10_000, "rounds": 1_000, "repeats": 3}
QUICK = {"items": 40, "methods": 3, "votes": 500, "rounds": 50, "repeats": 1}
IMAGE_SIZE = (512, 384)
TAGS = ("L1-interaction-relation_occur", "L1-interaction-relation_not_occur", "L1-interaction-relation_change_only",
        "L2-location_understanding-specific_pos_end", "L2-location_understanding-specific_pos_initial")


def _image(rng: np.random.Generator):
    from PIL import Image

    # noise compresses badly, as photographs do: decoding cost close to a real image's
    pixels = rng.integers(0, 255, size=(IMAGE_SIZE[1] // 4, IMAGE_SIZE[0] // 4, 3), dtype=np.uint8)
    return Image.fromarray(pixels).resize(IMAGE_SIZE)


def write_benchmark(folder: Path, items: int, methods: int, seed: int = 0) -> list[str]:
    """A benchmark folder in upstream's layout with ``methods`` methods' edits and records."""
    rng = np.random.default_rng(seed)
    names = [f"method-{m}" for m in range(methods)]
    annotations, records = {}, {name: {"method": name, "L1L2": {}} for name in names}
    (folder / "images" / "L1L2").mkdir(parents=True)
    for name in names:
        (folder / f"{name}_frames" / "L1L2").mkdir(parents=True)
    for index in range(items):
        key = f"item_{index:04d}.jpg"  # JPEG, as upstream's photographs
        tag = TAGS[index % len(TAGS)]
        question = "Is the cup on the shelf?" if tag.endswith("pos_end") else ""
        annotations[key] = {"instruction": "Make the person pick up the cup", "object": "cup",
                            "subject_bounding_box": [40, 40, 200, 360], "object_bounding_box": [180, 200, 260, 280],
                            "generated_question": "Has the person in the blue bounding box picked up the cup in the "
                                                  "red bounding box?", "tools": "", "tool_bboxes": [],
                            "tags_v6": f"{tag}", "question_v6": [question] if question else ""}
        _image(rng).save(folder / "images" / "L1L2" / key, quality=90)
        for name in names:
            _image(rng).save(folder / f"{name}_frames" / "L1L2" / key, quality=90)
            i = float(rng.uniform())
            records[name]["L1L2"][key] = {
                "max_yes_confidence": i, "mode": "confidence_first", "subject_identity_score": 1.0,
                "subject_quality_score": 0.9, "subject_similarity": 0.9, "object_identity_score": 1.0,
                "object_quality_score": 0.8, "object_similarity": 0.8, "reasoning": "synthetic",
                "qa": [{"question": question, "answer": "yes", "confidence": float(rng.uniform())}] if question else []}
    (folder / "collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json").write_text(json.dumps(annotations))
    (folder / "records").mkdir()
    for name in names:
        (folder / "records" / f"{name}.json").write_text(json.dumps(records[name]))
    return names


def _view_with_thumbnails(workspace, key: str, cache) -> int:
    from engines.hoi import browse

    view = browse.item_view(workspace, "L1L2", key)
    cache.get(view.item.image_path)
    shown = 1
    for output in view.outputs:
        if output.image_path is not None:
            cache.get(output.image_path)
            shown += 1
    return shown


def item_browser(folder: Path, repeats: int) -> dict:
    from engines.hoi import browse

    first, next_item, shown = [], [], 0
    for repeat in range(repeats + 1):  # the first round warms the imports and the file cache, not timed
        cache = browse.ThumbnailCache()
        started = time.perf_counter()
        workspace = browse.open_workspace(folder)
        items = browse.list_items(workspace, "L1L2", sort="disagreement between methods")
        shown = _view_with_thumbnails(workspace, items[0].key, cache)
        first_s = time.perf_counter() - started
        pages = []
        for item in items[1:6]:
            started = time.perf_counter()
            _view_with_thumbnails(workspace, item.key, cache)
            pages.append(time.perf_counter() - started)
        if repeat:
            first.append(first_s)
            next_item.append(statistics.median(pages))
        print(f"item browser: first view {first_s:.3f} s, next item {statistics.median(pages) * 1000:.0f} ms",
              file=sys.stderr, flush=True)
    first_s, next_s = statistics.median(first), statistics.median(next_item)
    return {"items": len(items), "methods": len(workspace.methods), "images_per_view": shown,
            "first_view_s": round(first_s, 4), "next_item_s": round(next_s, 4),
            "first_view_vs_goal": round(first_s / GOAL_FIRST_VIEW_S, 3),
            "next_item_vs_goal": round(next_s / GOAL_NEXT_ITEM_S, 3),
            "meets_first_view_goal": first_s < GOAL_FIRST_VIEW_S, "meets_next_item_goal": next_s < GOAL_NEXT_ITEM_S}


def synthetic_votes(n: int, methods: int, seed: int = 0):
    """``n`` votes among ``methods`` methods whose true Bradley–Terry strengths are evenly spaced
    (method-0 strongest), with ties and both-bad votes."""
    from engines.hoi.votes import Vote

    rng = np.random.default_rng(seed)
    strengths = np.linspace(1.0, -1.0, methods)
    votes = []
    for index in range(n):
        a, b = rng.choice(methods, size=2, replace=False)
        p_a = 1.0 / (1.0 + np.exp(strengths[b] - strengths[a]))
        draw = rng.uniform()
        winner = "tie" if draw < 0.08 else "tie (bothbad)" if draw < 0.12 else \
            ("model_a" if rng.uniform() < p_a else "model_b")
        votes.append(Vote(1_700_000_000.0 + index, f"item_{index % 500:04d}.jpg", f"method-{a}", f"method-{b}", winner))
    return votes


def ratings(votes: int, methods: int, rounds: int, repeats: int) -> dict:
    from engines.hoi.ratings import rate

    log = synthetic_votes(votes, methods)
    rate(log[:50], "bt", rounds=2)  # warm-up: the first call imports scikit-learn and scipy
    result = {}
    for method in ("bt", "elo"):
        times = []
        board = None
        for _ in range(repeats):
            started = time.perf_counter()
            board = rate(log, method, rounds=rounds, seed=0)
            times.append(time.perf_counter() - started)
        seconds = statistics.median(times)
        truth = [f"method-{m}" for m in range(methods)]
        result[method] = {"seconds": round(seconds, 4), "vs_goal": round(seconds / GOAL_RATINGS_S, 3),
                          "meets_goal": seconds < GOAL_RATINGS_S, "ranking": list(board.ratings),
                          "ranking_recovered": list(board.ratings) == truth}
        print(f"ratings ({method}): {seconds:.3f} s for {votes} votes x {rounds} resamples",
              file=sys.stderr, flush=True)
    return {"votes": votes, "methods": methods, "rounds": rounds, **result}


def run(args: argparse.Namespace) -> dict:
    settings = QUICK if args.quick else FULL
    repeats = args.repeats or settings["repeats"]
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="hai-bench-hoi-") as workdir:
        folder = Path(workdir)
        print(f"writing {settings['items']} items x {settings['methods']} methods…", file=sys.stderr, flush=True)
        started = time.perf_counter()
        write_benchmark(folder, settings["items"], settings["methods"])
        write_s = time.perf_counter() - started
        browser = item_browser(folder, repeats)
    rated = ratings(settings["votes"], settings["methods"], settings["rounds"], repeats)
    return {
        "benchmark": NAME, "quick": bool(args.quick), "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "repeats": repeats,
        "headline": (f"item browser on {browser['items']} items x {browser['methods']} methods: first view "
                     f"{browser['first_view_s']:.2f} s (goal < {GOAL_FIRST_VIEW_S:g} s), next item "
                     f"{browser['next_item_s'] * 1000:.0f} ms (goal < {GOAL_NEXT_ITEM_S * 1000:.0f} ms); "
                     f"Bradley-Terry with {rated['rounds']} resamples over {rated['votes']} votes "
                     f"{rated['bt']['seconds']:.2f} s (goal < {GOAL_RATINGS_S:g} s)"),
        "setup": {"write_benchmark_s": round(write_s, 1)},
        "item_browser": browser, "ratings": rated, "machine": machine_info(load_before),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 items x 3 methods, 500 votes, 50 resamples")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
