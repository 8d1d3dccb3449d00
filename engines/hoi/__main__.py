"""Command line of the HOI-Edit area: ``python -m engines.hoi --help``.

    python -m engines.hoi demo
    python -m engines.hoi evaluate --benchmark DIR --method NAME [--judge openai --option judge.model=NAME] --json
    python -m engines.hoi score --benchmark DIR --records FILE --json
    python -m engines.hoi scpe --benchmark DIR --i2v CONFIG --out DIR [--epochs N] [--retries R] --json
    python -m engines.hoi arena-votes --study SLUG --out votes.jsonl
    python -m engines.hoi ratings --votes FILE --json
    python -m engines.hoi serve --config FILE [--host 127.0.0.1] [--port 7861]
"""

from __future__ import annotations

from engines.platform.area_cli import run_command

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "score": ("engines.hoi.cli", "add_score_arguments", "run_score",
              "HOI-Eval's scores of methods' evaluation records: per tag, per level and the paper's table"),
    "evaluate": ("engines.hoi.evaluate", "add_evaluate_arguments", "run_evaluate",
                 "HOI-Eval: judge a method's edited images and write its records (resumable)"),
    "scpe": ("engines.hoi.scpe_cli", "add_scpe_arguments", "run_scpe_command",
             "SCPE: learn a prompt playbook, generate each item's video with an I2V model, keep the selected frame"),
    "arena-votes": ("engines.hoi.cli", "add_arena_votes_arguments", "run_arena_votes",
                    "every stored vote of an arena study as JSONL, for ratings --votes"),
    "demo": ("engines.hoi.offline.demo", "add_arguments", "run",
             "the shipped synthetic demo: benchmark, offline methods, SCPE, HOI-Eval records, simulated votes"),
    "ratings": ("engines.hoi.cli", "add_ratings_arguments", "run_ratings",
                "Elo or Bradley-Terry ratings from arena votes, with bootstrap intervals and win rates"),
    "serve": ("engines.hoi.serve", "add_serve_arguments", "run_serve",
              "serve an editor or I2V model (a generation config, or a tiny random one) as a Gradio app"),
}


def main(argv: list[str] | None = None) -> None:
    from engines.hoi.benchmark import BenchmarkFormatError
    from engines.hoi.scoring import RecordFormatError
    from engines.hoi.votes import VoteFormatError

    run_command("python -m engines.hoi", __doc__.splitlines()[0], COMMANDS, argv,
                errors=(BenchmarkFormatError, RecordFormatError, VoteFormatError, ValueError, FileNotFoundError, ConnectionError))


if __name__ == "__main__":
    main()
