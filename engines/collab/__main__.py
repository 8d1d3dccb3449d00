"""Command line of the collaboration engine: ``python -m engines.collab --help``.

Each command is a pair ``add_arguments(parser)`` / ``run(args) -> dict``: ``simulate`` and ``sweep``
in ``engines.collab.cli`` (their options come from the config dataclasses), ``train-counter`` in
``engines.collab.counter_training``. This file discovers the registries the way a job worker and
the app do (``engines.platform.discovery.discover_all``: a study's rule is known here too), then
dispatches and prints (``--json`` for scripts).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from engines.platform.discovery import discover_all

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "train-counter": ("engines.collab.counter_training", "add_arguments", "run",
                      "train the shape-counting CNN and write its weights"),
    "simulate": ("engines.collab.cli", "add_simulate_arguments", "run_simulate",
                 "run T simulated interactions under online control"),
    "sweep": ("engines.collab.cli", "add_sweep_arguments", "run_sweep_command",
              "final human accuracy over a grid of targets"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engines.collab", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, add_name, run_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        run = getattr(module, run_name)
        command = sub.add_parser(name, help=help_text, description=(run.__doc__ or help_text).strip().splitlines()[0])
        getattr(module, add_name)(command)
        command.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> None:
    discover_all()  # before the parser: registered names (schedules, rules) may come from studies
    args = build_parser().parse_args(argv)
    try:
        result = args.run(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        summary = result.get("summary") if isinstance(result, dict) else None
        print(summary if summary else json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
