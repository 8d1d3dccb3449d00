"""The command line every area shares: ``python -m engines.<area> COMMAND ...``.

An area lists its commands as ``name: (module, add_arguments, run, help)``; each ``run(args)``
returns a dict, printed as one JSON object with ``--json`` (before or after the command) or as
its ``"summary"`` line otherwise. Registries are discovered first (``discover_all``), so a
study's rule or job is known to the command line as to the app; the errors an area names end
the command with exit status 2 and the message alone.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Collection, Mapping

from engines.platform.discovery import discover_all

Commands = Mapping[str, tuple[str, str, str, str]]


def build_parser(prog: str, description: str, commands: Commands,
                 only: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The area's parser; ``only``: the commands whose options are built (None: every one). The others
    are listed by name and help alone, so their modules (often torch) are not imported for a command
    that does not need them, or for ``--help``."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a summary")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, add_name, run_name, help_text) in commands.items():
        if only is not None and name not in only:
            sub.add_parser(name, help=help_text, description=help_text)
            continue
        module = importlib.import_module(module_name)
        run = getattr(module, run_name)
        command = sub.add_parser(name, help=help_text, description=(run.__doc__ or help_text).strip().splitlines()[0])
        getattr(module, add_name)(command)
        if "--json" not in command._option_string_actions:  # noqa: SLF001 - argparse has no public lookup
            # ``--json`` is accepted after the command too, as documented commands write it.
            command.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                                 help="print one JSON object instead of a summary")
        command.set_defaults(run=run)
    return parser


def named_command(argv: list[str], commands: Commands) -> set[str]:
    """The command ``argv`` names (its first word that is not an option; the area's own options take
    no value), as a set: empty when it names none (``--help``, or a mistyped name argparse will refuse)."""
    first = next((word for word in argv if not word.startswith("-")), None)
    return {first} if first in commands else set()


def run_command(prog: str, description: str, commands: Commands, argv: list[str] | None = None,
                errors: tuple[type[Exception], ...] = (ValueError,)) -> None:
    """Parse ``argv``, run the command, print its result; ``errors`` exit with status 2."""
    discover_all()  # before the parser: registered names (schedules, rules) may come from studies
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(prog, description, commands, only=named_command(argv, commands)).parse_args(argv)
    try:
        result = args.run(args)
    except errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if getattr(args, "json", False):
        print(json.dumps(result, default=str))
    else:
        summary = result.get("summary") if isinstance(result, dict) else None
        print(summary if summary else json.dumps(result, indent=2, default=str))
