"""The shipped HOI-Edit demo, end to end: ``python -m engines.hoi demo``.

Every view of the page works offline on it. In order, all with the project's offline roles
(``engines.hoi.offline``), seeded:

1. the synthetic benchmark and the image editors' and the plain I2V's outputs
   (:func:`engines.hoi.offline.demo_data.generate_demo`);
2. SCPE (``engines.hoi.scpe``) on the plain I2V: one learning epoch from the plain videos, then
   the final pass with the learned playbook, as method ``offline-i2v-scpe`` with its frame strips
   and traces;
3. HOI-Eval (``engines.hoi.evaluate``) of every method into ``records/<method>.json``;
4. ``votes.jsonl``: simulated arena votes (synthetic voters who prefer the edit with the higher
   HOI-Eval item score, through a Bradley–Terry choice with ties), so the arena tab has data
   before any participant votes.

Synthetic throughout, and labelled so on the page: it shows how the tools work, not how real
models do.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from pathlib import Path

from engines.hoi.offline import demo_data
from engines.platform.settings import REPO_ROOT

DEMO_DIR = REPO_ROOT / "assets" / "hoi" / "demo"
COMMAND = "python -m engines.hoi demo"
SCPE_METHOD = "offline-i2v-scpe"
VOTES = 400


def simulated_votes(root: Path, n: int = VOTES, *, seed: int = 0) -> list[dict]:
    """``n`` arena votes on the folder's evaluated methods: a random item and pair, sides at random,
    the winner drawn with P(a) = 1 / (1 + exp(-(s_a - s_b) / 0.15)) from the item scores s, a tie
    when the scores are within 0.05 (a third of those "both bad" when both are below 0.3)."""
    from engines.hoi import browse

    workspace = browse.open_workspace(root)
    rng = random.Random(seed)
    methods = sorted(workspace.scores)
    items = workspace.benchmark.items()
    votes = []
    for index in range(n):
        item = rng.choice(items)
        a, b = rng.sample(methods, 2)
        sa = browse.item_score(workspace, a, item) or 0.0
        sb = browse.item_score(workspace, b, item) or 0.0
        if abs(sa - sb) < 0.05:
            winner = "tie (bothbad)" if max(sa, sb) < 0.3 and rng.random() < 1 / 3 else "tie"
        else:
            winner = "model_a" if rng.random() < 1 / (1 + math.exp(-(sa - sb) / 0.15)) else "model_b"
        votes.append({"tstamp": 1_764_547_200.0 + 97.0 * index, "item_id": f"{item.split}/{item.key}",
                      "model_a": a, "model_b": b, "winner": winner, "anony": True})
    return votes


def build_demo(root: str | Path = DEMO_DIR, *, seed: int = 0, items_per_tag: int = 3, progress=None) -> dict:
    """Write the whole demo into ``root`` (its old contents are replaced); returns what was made."""
    import shutil

    from engines.hoi import backends
    from engines.hoi.benchmark import load_benchmark
    from engines.hoi.evaluate import evaluate_method
    from engines.hoi.playbook import load_playbook
    from engines.hoi.scpe import SCPEConfig, run_scpe

    say = progress or (lambda line: None)
    started = time.perf_counter()
    root = Path(root)
    if root.exists():
        shutil.rmtree(root)
    summary = demo_data.generate_demo(root, items_per_tag=items_per_tag, seed=seed, progress=say)
    benchmark = load_benchmark(root)
    scpe = run_scpe(benchmark, benchmark.items(), backends.make("i2v", "offline"), backends.make("judge", "offline"),
                    backends.make("refiner", "offline"),
                    SCPEConfig(epochs=1, seed=seed, method_name=SCPE_METHOD, baseline_method=demo_data.I2V_METHOD),
                    root, playbook=load_playbook())
    demo_data.add_method(root, SCPE_METHOD, {
        "kind": "i2v", "label": "Offline I2V + SCPE", "offline": True,
        "description": "the offline I2V steered by a playbook SCPE learned from the plain I2V's failures; the "
                       "offline judge picks the frame"})
    say(f"{SCPE_METHOD}: {scpe.counts()['written']} frames")
    methods = [*summary.methods, SCPE_METHOD]
    tables = {}
    for method in methods:
        result = evaluate_method(benchmark, method, root / f"{method}_frames", backends.make("grounder", "offline"),
                                 backends.make("judge", "offline"), out=root / "records" / f"{method}.json",
                                 resume=False)
        tables[method] = result["paper_table"]
        say(result["summary"])
    votes = simulated_votes(root, seed=seed)
    (root / "votes.jsonl").write_text("".join(json.dumps(v) + "\n" for v in votes), encoding="utf-8")
    say(f"{len(votes)} simulated votes")
    return {"root": str(root), "items": summary.items, "methods": methods, "paper_tables": tables,
            "votes": len(votes), "seconds": round(time.perf_counter() - started, 1)}


def demo_folder(path: str | Path) -> Path:
    """Where ``demo --out`` may write (the folder is replaced): the shipped demo itself (to regenerate
    it), or a new folder under the data folder's ``datasets/hoi/`` or ``jobs/``; an existing folder
    there only when it holds a benchmark (never a folder of other things).

    Raises:
        FileRefused: anywhere else, naming the path.
    """
    from engines.hoi.benchmark import ANNOTATION_FILES
    from engines.hoi.folders import FileRefused, output_path

    if Path(path).expanduser().resolve() == DEMO_DIR.resolve():
        return DEMO_DIR
    target = output_path(path, what="--out")
    if target.exists() and not any((target / name).is_file() for name in ANNOTATION_FILES.values()):
        raise FileRefused(f"--out: {target.name!r} exists and is not a benchmark folder; the demo replaces its "
                          "folder, so give a new one")
    return target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, default=DEMO_DIR,
                        help="the demo folder (replaced): the shipped demo, or a new folder under datasets/hoi/ "
                             "of the data folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--items-per-tag", type=int, default=3, help="items drawn per recipe (14 recipes)")


def run(args: argparse.Namespace) -> dict:
    """The shipped demo: benchmark, offline methods, SCPE, HOI-Eval records and simulated votes."""
    import sys

    result = build_demo(demo_folder(args.out), seed=args.seed, items_per_tag=args.items_per_tag,
                        progress=lambda line: print(line, file=sys.stderr, flush=True))
    l1 = {m: t[0].get("I") for m, t in result["paper_tables"].items()}
    ranked = ", ".join(f"{m} {v:.3f}" for m, v in sorted(l1.items(), key=lambda kv: -(kv[1] or 0)))
    return {**result, "summary": f"{sum(result['items'].values())} items, {len(result['methods'])} methods, "
                                 f"{result['votes']} votes in {result['root']} ({result['seconds']:.0f} s); L1 I: {ranked}"}
