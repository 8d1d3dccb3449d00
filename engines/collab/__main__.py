"""Command line of the collaboration engine: ``python -m engines.collab --help``.

Each command lives in its own module, which exposes ``add_arguments(parser)`` and
``run(args) -> dict``; this file only dispatches and prints (``--json`` for scripts).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

COMMANDS = {
    "train-counter": ("engines.collab.counter_training", "train the shape-counting CNN and write its weights"),
    "simulate": ("engines.collab.simulate", "run T simulated interactions under online control"),
    "sweep": ("engines.collab.sweep", "final human accuracy over a grid of targets"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engines.collab", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        command = sub.add_parser(name, help=help_text, description=(module.__doc__ or help_text).strip().splitlines()[0])
        module.add_arguments(command)
        command.set_defaults(module=module)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        result = args.module.run(args)
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
