"""Command line of the attribution area: ``python -m engines.attribution --help``.

    python -m engines.attribution train --rho 0.95 --seed 0 --out policy.pt [--quick]
    python -m engines.attribution train-set [--quick] [--out-dir DIR] [--workers 2]
    python -m engines.attribution experiment [--quick] [--policy-dir DIR | --train] --json
"""

from __future__ import annotations

from engines.platform.area_cli import run_command

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "train": ("engines.attribution.train", "add_train_arguments", "run_train",
              "train a reaching policy by behaviour cloning and evaluate it in and out of distribution"),
    "train-set": ("engines.attribution.policy_set", "add_arguments", "run",
                  "train the shipped set of policies (each rho x seed) and write their report"),
    "experiment": ("engines.attribution.experiment", "add_arguments", "run",
                   "correlate in-distribution NMR with out-of-distribution failure across policies"),
}


def main(argv: list[str] | None = None) -> None:
    # A policy file's error (``policies.PolicyFileError``) is a ValueError: it ends the command with its message.
    run_command("python -m engines.attribution", __doc__.splitlines()[0], COMMANDS, argv, errors=(ValueError,))


if __name__ == "__main__":
    main()
