"""Command line of the judge area: ``python -m engines.judge --help``.

Each command is a pair ``add_arguments(parser)`` / ``run(args) -> dict`` in the module that does the
work: ``import`` and ``export`` in ``engines.judge.cli_data``, ``judge`` in ``engines.judge.judging``,
``audit`` in ``engines.judge.audit_cli``. Errors in the user's files (``JudgeDataError``, which
names the file, line and field) end the command with exit status 2 and the message alone.

    python -m engines.judge import harmbench --behaviors behaviors.csv \\
        --run MODEL ATTACK completions.json [--run ...] --out items.jsonl
    python -m engines.judge panel --study SLUG | --project SLUG [--items N] [--json]
    python -m engines.judge import jbb --artifact FILE --behaviors behaviors.csv --out items.jsonl
    python -m engines.judge judge --items items.jsonl --judge NAME [--backend ...] --out verdicts.csv
    python -m engines.judge audit --items items.jsonl --labels labels.csv --verdicts verdicts.csv \\
        [--human-rule majority|first] [--bootstrap N] --json
"""

from __future__ import annotations

from engines.platform.area_cli import run_command

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "panel": ("engines.judge.study.plan", "add_arguments", "run",
              "how many items each panel worker of a labeling study rates, and how many are gold"),
    "import": ("engines.judge.cli_data", "add_import_arguments", "run_import",
               "read HarmBench, JailbreakBench or generic files into items.jsonl"),
    "export": ("engines.judge.cli_data", "add_export_arguments", "run_export",
               "write items with their human labels back to HarmBench or JailbreakBench files"),
    "judge": ("engines.judge.judging", "add_arguments", "run",
              "run a safety judge over items and write its verdicts"),
    "audit": ("engines.judge.audit_cli", "add_arguments", "run",
              "measure judges against human labels: metrics, breakdowns, ASR inflation, agreement"),
}


def main(argv: list[str] | None = None) -> None:
    from engines.judge.items import JudgeDataError

    run_command("python -m engines.judge", __doc__.splitlines()[0], COMMANDS, argv, errors=(JudgeDataError, ValueError))


if __name__ == "__main__":
    main()
