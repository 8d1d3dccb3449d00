"""Command line of the judge area: ``python -m engines.judge --help``.

Each command is a pair ``add_arguments(parser)`` / ``run(args) -> dict`` in the module that does the
work: ``import`` and ``export`` in ``engines.judge.cli_data``, ``judge`` in ``engines.judge.judging``,
``audit`` in ``engines.judge.audit_cli``. Errors in the user's files (``JudgeDataError``, which
names the file, line and field) end the command with exit status 2 and the message alone.

    python -m engines.judge import harmbench --behaviors behaviors.csv \\
        --run MODEL ATTACK completions.json [--run ...] --out items.jsonl
    python -m engines.judge import jbb --artifact FILE --behaviors behaviors.csv --out items.jsonl
    python -m engines.judge judge --items items.jsonl --judge NAME [--backend ...] --out verdicts.csv
    python -m engines.judge audit --items items.jsonl --labels labels.csv --verdicts verdicts.csv \\
        [--human-rule majority|first] [--bootstrap N] --json
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from engines.platform.discovery import discover_all

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "import": ("engines.judge.cli_data", "add_import_arguments", "run_import",
               "read HarmBench, JailbreakBench or generic files into items.jsonl"),
    "export": ("engines.judge.cli_data", "add_export_arguments", "run_export",
               "write items with their human labels back to HarmBench or JailbreakBench files"),
    "judge": ("engines.judge.judging", "add_arguments", "run",
              "run a safety judge over items and write its verdicts"),
    "audit": ("engines.judge.audit_cli", "add_arguments", "run",
              "measure judges against human labels: metrics, breakdowns, ASR inflation, agreement"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engines.judge", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, add_name, run_name, help_text) in COMMANDS.items():
        module = importlib.import_module(module_name)
        run = getattr(module, run_name)
        command = sub.add_parser(name, help=help_text, description=(run.__doc__ or help_text).strip().splitlines()[0])
        # ``--json`` is accepted after the command too, as the documented commands write it.
        command.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                             help="print one JSON object instead of a summary")
        getattr(module, add_name)(command)
        command.set_defaults(run=run)
    return parser


def main(argv: list[str] | None = None) -> None:
    from engines.judge.items import JudgeDataError

    discover_all()
    args = build_parser().parse_args(argv)
    try:
        result = args.run(args)
    except (JudgeDataError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if getattr(args, "json", False):
        print(json.dumps(result, default=str))
    else:
        summary = result.get("summary") if isinstance(result, dict) else None
        print(summary if summary else json.dumps(result, indent=2, default=str))


if __name__ == "__main__":
    main()
