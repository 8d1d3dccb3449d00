"""Command line of the collaboration engine: ``python -m engines.collab --help``.

Each command is a pair ``add_arguments(parser)`` / ``run(args) -> dict``: ``simulate`` and ``sweep``
in ``engines.collab.cli`` (their options come from the config dataclasses), ``train-counter`` in
``engines.collab.counter_training``. This file discovers the registries the way a job worker and
the app do (``engines.platform.discovery.discover_all``: a study's rule is known here too), then
dispatches and prints (``--json`` for scripts).
"""

from __future__ import annotations

from engines.platform.area_cli import run_command

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "train-counter": ("engines.collab.counter_training", "add_arguments", "run",
                      "train the shape-counting CNN and write its weights"),
    "simulate": ("engines.collab.cli", "add_simulate_arguments", "run_simulate",
                 "run T simulated interactions under online control"),
    "sweep": ("engines.collab.cli", "add_sweep_arguments", "run_sweep_command",
              "final human accuracy over a grid of targets"),
}


def main(argv: list[str] | None = None) -> None:
    run_command("python -m engines.collab", __doc__.splitlines()[0], COMMANDS, argv)


if __name__ == "__main__":
    main()
