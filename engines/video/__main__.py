"""Command line of the video area: ``python -m engines.video --help``.

    python -m engines.video generate --out DIR [--minutes N] [--videos K]
    python -m engines.video train-inspector [--out assets/video/frame_model.pt] [--quick]
    python -m engines.video run --videos DIR --questions FILE.jsonl [--agent gated|coupled] \\
        [--max-steps S] [--max-frames F] --out traj.jsonl [--json]
    python -m engines.video eval traj.jsonl --json
    python -m engines.video sweep --videos DIR --questions FILE.jsonl [--budgets 2,4,8] --out DIR
    python -m engines.video demo [--out assets/video/demo]
"""

from __future__ import annotations

from engines.platform.area_cli import run_command

# name: (module, its add_arguments, its run, help)
COMMANDS = {
    "generate": ("engines.video.cli", "add_generate_arguments", "run_generate",
                 "write a synthetic long-video benchmark (videos, subtitles, LVBench questions)"),
    "train-inspector": ("engines.video.cli", "add_train_arguments", "run_train",
                        "train the offline inspector's frame model and write its report"),
    "run": ("engines.video.cli", "add_run_arguments", "run_agent",
            "answer questions about long videos with the gated agent or the coupled baseline"),
    "eval": ("engines.video.cli", "add_eval_arguments", "run_eval",
             "accuracy and temporal and semantic groundedness of a run, overall and by budget"),
    "sweep": ("engines.video.cli", "add_sweep_arguments", "run_sweep_command",
              "run both agents at several step budgets and check the paper's claims"),
    "demo": ("engines.video.cli", "add_demo_arguments", "run_demo",
             "write the shipped demo: synthetic videos, their index, questions and a budget sweep"),
}


def main(argv: list[str] | None = None) -> None:
    from engines.video.decode import VideoError
    from engines.video.questions import QuestionFormatError
    from engines.video.trajectory import TrajectoryFormatError

    run_command("python -m engines.video", __doc__.splitlines()[0], COMMANDS, argv,
                errors=(VideoError, QuestionFormatError, TrajectoryFormatError, ValueError, FileNotFoundError))


if __name__ == "__main__":
    main()
