"""The command line every area shares (engines.platform.area_cli): only the named command's module is
imported, so ``--help`` and a light command do not wait for another command's torch."""

from __future__ import annotations

import sys

import pytest

from engines.platform.area_cli import build_parser, named_command, run_command

COMMANDS = {
    "light": ("json", "dumps", "loads", "a command whose module is already at hand"),
    "heavy": ("hai_no_such_module_heavy", "add_arguments", "run", "a command whose module must not be imported"),
}


def test_the_named_command_is_found_after_the_areas_own_options():
    assert named_command(["--json", "light", "--x", "heavy"], COMMANDS) == {"light"}
    assert named_command(["--help"], COMMANDS) == set()
    assert named_command(["lihgt"], COMMANDS) == set()  # argparse refuses it with the choices


def test_help_lists_every_command_without_importing_any(capsys):
    with pytest.raises(SystemExit) as ended:
        run_command("prog", "an area", COMMANDS, ["--help"])
    assert ended.value.code == 0
    shown = capsys.readouterr().out
    assert "light" in shown and "heavy" in shown and "a command whose module must not be imported" in shown
    assert "hai_no_such_module_heavy" not in sys.modules


def test_a_mistyped_command_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit) as ended:
        run_command("prog", "an area", COMMANDS, ["hevy"])
    assert ended.value.code == 2
    assert "invalid choice: 'hevy' (choose from 'light', 'heavy')" in capsys.readouterr().err


def test_the_named_command_gets_its_options_and_the_others_stay_unimported():
    def add_arguments(parser):
        parser.add_argument("--size", type=int, default=3)

    def run(args):
        """Run the light command."""
        return {"size": args.size}

    module = type(sys)("hai_test_light_command")
    module.add_arguments, module.run = add_arguments, run
    sys.modules[module.__name__] = module
    try:
        commands = {"light": (module.__name__, "add_arguments", "run", "light"), "heavy": COMMANDS["heavy"]}
        args = build_parser("prog", "an area", commands, only={"light"}).parse_args(["light", "--size", "5", "--json"])
        assert args.run(args) == {"size": 5} and args.json is True
        with pytest.raises(ModuleNotFoundError):  # built in full, the heavy command's module is imported
            build_parser("prog", "an area", commands)
    finally:
        del sys.modules[module.__name__]
