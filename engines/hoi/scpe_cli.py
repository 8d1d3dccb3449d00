"""The ``scpe`` command: learn an SCPE playbook on a benchmark, generate each item's video with an I2V
model and keep the selected frame (``engines.hoi.scpe`` holds the method itself).

``add_scpe_arguments(parser)`` / ``run_scpe_command(args) -> dict`` for ``engines.platform.area_cli``.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from engines.hoi.benchmark import SPLITS
from engines.hoi.playbook import load_playbook
from engines.hoi.roles import make
from engines.hoi.scpe import SCPEConfig, run_scpe
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.files import echo
from engines.platform.progress import ProgressBar


def add_scpe_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", type=Path, required=True,
                        help="the folder with the upstream annotation JSONs and images/<split>/<key>: "
                             "datasets/hoi/<name> of the data folder, or shipped/hoi/demo")
    parser.add_argument("--i2v", type=Path, required=True,
                        help='a JSON file naming the I2V role and its options, e.g. {"role": "offline"} or '
                             '{"role": "gradio", "url": "http://gpu-box:7860"}')
    parser.add_argument("--out", type=Path, required=True,
                        help="where <method>_frames, _strips, _traces, playbook.json and scpe_run.json go: a "
                             "folder under datasets/hoi/ of the data folder (the benchmark's own folder adds the "
                             "method to it)")
    parser.add_argument("--judge", default="offline", help="the VLM judge's registered name (analyzer and selector)")
    parser.add_argument("--refiner", default="offline", help="the prompt refiner's registered name")
    parser.add_argument("--playbook", type=Path, default=None,
                        help="the seed playbook (default assets/hoi/playbook_seed.json; upstream's "
                             "scpe/data/playbook_seed_en.json works as is)")
    parser.add_argument("--split", choices=SPLITS, default=None, help="one split only (default: every split found)")
    argparse_options(SCPEConfig, parser)
    parser.add_argument("--no-progress", action="store_true")


def read_role_config(path: str | Path) -> tuple[str, dict[str, Any]]:
    """The role name and options of a JSON file ``{"role": NAME, ...options}``.

    Raises:
        ValueError: the file is missing, not JSON, not an object, or has no ``role`` text; naming the file.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the role config ({exc.strerror or exc})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(data, dict):
        raise ValueError(f'{path}: expected a JSON object such as {{"role": "offline"}}, got {type(data).__name__}')
    role = data.get("role")
    if not isinstance(role, str) or not role.strip():
        raise ValueError(f'{path}: "role" must name a registered I2V role, got {echo(role)}')
    return role.strip(), {key: value for key, value in data.items() if key != "role"}


def run_scpe_command(args: argparse.Namespace) -> dict:
    """Learn an SCPE playbook on a benchmark and edit its items with an I2V model and frame selection."""
    import engines.hoi.backends  # noqa: F401 - registers the role names
    from engines.hoi.benchmark import load_benchmark
    from engines.hoi.folders import benchmark_folder, input_file, output_path
    config = SCPEConfig(**option_values(SCPEConfig, args))
    benchmark = load_benchmark(benchmark_folder(args.benchmark))
    out = output_path(args.out, what="--out")
    role, options = read_role_config(input_file(args.i2v, what="--i2v", suffixes=(".json",)))
    i2v = make("i2v", role, **options)
    judge = make("judge", args.judge)
    refiner = make("refiner", args.refiner)
    seed_playbook = load_playbook(None if args.playbook is None else
                                  input_file(args.playbook, what="--playbook", suffixes=(".json",)))
    items = benchmark.items(args.split)
    with ProgressBar("SCPE", "item", enabled=not args.no_progress) as bar:
        result = run_scpe(benchmark, items, i2v, judge, refiner, config, out, playbook=seed_playbook,
                          progress=lambda done, total, message: bar(done, total, message[-60:]))
    counts = result.counts()
    learned = sum(summary.added for summary in result.epochs)
    return {
        "out": str(result.out_dir), "method": config.method_name, "config": asdict(config),
        "roles": {"i2v": role, "judge": args.judge, "refiner": args.refiner}, "counts": counts,
        "epochs": [asdict(summary) for summary in result.epochs], "normalize": asdict(result.normalize),
        "playbook": result.playbook.counts(), "seconds": result.seconds,
        "items": [{"key": item.key, "split": item.split, "status": item.status, "tries": item.tries,
                   "frame": str(item.frame_path) if item.frame_path else None, "frame_index": item.frame_index}
                  for item in result.items],
        "summary": (f"SCPE {config.method_name}: {counts['written']}/{counts['items']} frames written to "
                    f"{result.out_dir} ({counts.get('ok_pass', 0)} passed the analyzer); {learned} playbook "
                    f"entries learned in {config.epochs} epoch(s), {result.normalize.moved_to_pitfalls} moved to "
                    f"pitfalls; {result.seconds:.1f} s"),
    }
