"""The video area's commands: generate a benchmark, train the inspector, run the agent, score runs.

Each is ``add_*_arguments(parser)`` / ``run_*(args) -> dict`` for ``engines.platform.area_cli``.
The options of a command's parameters come from its config dataclass (``SyntheticConfig``,
``InspectorTrainConfig``, ``AgentConfig``, ``SweepConfig``; ``engines.platform.config_schema``),
where each is declared once, with the jobs' parameters; this module adds what only a command line
has: files, ``--quick``, ``--resume``, the roles by name, ``--no-progress``.
"""

from __future__ import annotations

import argparse
import functools
from dataclasses import asdict
from pathlib import Path

from engines.platform.config_schema import argparse_options, option_values
from engines.platform.files import echo
from engines.platform.progress import ProgressBar
from engines.video.agent import AgentConfig
from engines.video.backends import roles_for

# ------------------------------------------------------------------ generate


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.video.synthetic import SyntheticConfig

    parser.add_argument("--out", type=Path, required=True, help="folder to write the videos and questions.jsonl into")
    argparse_options(SyntheticConfig, parser)
    parser.add_argument("--no-progress", action="store_true")


def run_generate(args: argparse.Namespace) -> dict:
    """Write a synthetic long-video benchmark: videos, subtitles, scripts and LVBench questions."""
    from engines.video.synthetic import SyntheticConfig, generate

    config = SyntheticConfig(**option_values(SyntheticConfig, args))
    with ProgressBar("rendering", "frame", enabled=not args.no_progress) as bar:
        scripts = generate(args.out, config, bar)
    questions = sum(len(s.questions) for s in scripts)
    return {"out": str(args.out), "videos": [s.video_id for s in scripts], "questions": questions,
            "config": asdict(config),
            "summary": f"{len(scripts)} video(s) of {config.minutes:g} min and {questions} questions in {args.out}"}


# ------------------------------------------------------------------ train-inspector

QUICK_TRAIN = {"clips": 120, "held_out_clips": 40, "epochs": 1}  # --quick: a small run for tests


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.video.offline.train_inspector import InspectorTrainConfig
    from engines.video.roles import FRAME_MODEL

    parser.add_argument("--out", type=Path, default=FRAME_MODEL, help="weights file (REPORT.md is written beside it)")
    argparse_options(InspectorTrainConfig, parser)
    parser.add_argument("--quick", action="store_true", help=f"a small run for tests: {QUICK_TRAIN['clips']} clips, "
                        f"{QUICK_TRAIN['epochs']} epoch")
    parser.add_argument("--no-progress", action="store_true")


def run_train(args: argparse.Namespace) -> dict:
    """Train the offline inspector's frame model on clips through the benchmark's codec."""
    from engines.video.offline.train_inspector import InspectorTrainConfig, train_and_save

    config = InspectorTrainConfig(**{**option_values(InspectorTrainConfig, args), **(QUICK_TRAIN if args.quick else {})})
    with ProgressBar("training the frame model", "epoch", enabled=not args.no_progress) as bar:
        report = train_and_save(config, args.out, bar)
    accuracy = ", ".join(f"{name} {value:.0%}" for name, value in report["held_out_accuracy"].items())
    return {**report, "path": str(args.out), "summary": f"wrote {args.out}; held-out accuracy: {accuracy}"}


# ------------------------------------------------------------------ run


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.video.index import SEARCH_MODES

    parser.add_argument("--videos", type=Path, required=True, help="folder of <video_key>.mp4 (and .srt) files")
    parser.add_argument("--questions", type=Path, required=True,
                        help="questions, one per line in LVBench's flat shape (uid, question, answer, "
                             "question_type, time_reference, video_key)")
    argparse_options(AgentConfig, parser)
    parser.add_argument("--planner", default=None, help="default: heuristic (coupled-heuristic for --agent coupled); "
                        "llm-endpoint or llm-transformers with --planner-arg")
    parser.add_argument("--planner-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the planner, e.g. base_url=http://127.0.0.1:8000/v1, model=NAME, path=DIR")
    parser.add_argument("--inspector", default="pixels",
                        help="pixels (offline, general perception), frame-model (offline, the synthetic videos' own "
                             "network), clip or vlm-transformers (with --inspector-arg path=DIR)")
    parser.add_argument("--inspector-arg", action="append", default=[], metavar="KEY=VALUE",
                        help="an option of the inspector, e.g. path=DIR")
    parser.add_argument("--captioner", default="pixels", help="pixels (offline) or frame-model")
    parser.add_argument("--frame-model", type=Path, default=None,
                        help="weights of the frame-model inspector and captioner (default: the shipped ones)")
    parser.add_argument("--search", choices=SEARCH_MODES, default="bm25")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--out", type=Path, required=True, help="trajectories, one JSON object per line")
    parser.add_argument("--resume", action="store_true", help="keep the trajectories already in --out, run the rest")
    parser.add_argument("--no-progress", action="store_true")


def _check_video_keys(questions, source: Path) -> None:
    """A question's video is ``<videos>/<video key>.mp4``: a key that is not a plain file name (a
    separator, ``..``) would name a file outside ``--videos``, so it is refused before anything is read."""
    for question in questions:
        key = question.video_id
        if key in (".", "..") or any(sep in key for sep in ("/", "\\", "\x00")):
            raise ValueError(f"{source}: question {echo(question.uid)} names the video key {echo(key)}, which is "
                             "not a file name inside --videos")


def _options(pairs: list[str]) -> dict[str, str]:
    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"a role option is KEY=VALUE, got {pair!r}")
        options[key.strip()] = value
    return options


def run_agent(args: argparse.Namespace) -> dict:
    """Answer the questions with the agent and write one trajectory per question."""
    from engines.video.agent import run_all
    from engines.video.loaders import read_questions
    from engines.video.metrics import summarise, with_metrics
    from engines.video.trajectory import append_jsonl, read_jsonl

    config = AgentConfig(**option_values(AgentConfig, args))
    questions = read_questions(args.questions)[:args.limit]
    _check_video_keys(questions, args.questions)
    missing = sorted({q.video_id for q in questions if not (args.videos / f"{q.video_id}.mp4").is_file()})
    if missing:
        raise ValueError(f"{args.videos}: no video for {len(missing)} question video key(s), e.g. "
                         f"{missing[0]}.mp4")
    done = read_jsonl(args.out) if args.resume and args.out.is_file() else []
    if not args.resume and args.out.exists():
        args.out.unlink()
    finished = {t.uid for t in done}
    todo = [q for q in questions if q.uid not in finished]
    planner_name = args.planner or ("coupled-heuristic" if args.agent == "coupled" else "heuristic")
    roles = roles_for(planner_name, args.inspector, args.captioner, args.search, args.frame_model,
                      planner_options=_options(args.planner_arg), inspector_options=_options(args.inspector_arg))
    with ProgressBar(f"{args.agent} agent", "question", enabled=not args.no_progress) as bar:
        new = run_all(todo, lambda q: str(args.videos / f"{q.video_id}.mp4"), roles, config, progress=bar,
                      on_done=lambda t: append_jsonl(with_metrics(t), args.out))
    summary = summarise(done + new)
    return {"out": str(args.out), "questions": len(questions), "ran": len(new), "config": asdict(config),
            "planner": planner_name, "inspector": args.inspector, "metrics": summary,
            "summary": _line(summary, f"{args.agent} agent, {len(new)} question(s) run; trajectories in {args.out}")}


# ------------------------------------------------------------------ eval


def add_eval_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trajectories", type=Path, help="a trajectories file written by run")


def run_eval(args: argparse.Namespace) -> dict:
    """Accuracy and groundedness of a run, overall and by budget."""
    from engines.video.metrics import by_budget, summarise
    from engines.video.trajectory import read_jsonl

    trajectories = read_jsonl(args.trajectories)
    overall = summarise(trajectories)
    budgets = {f"steps={steps},frames={frames}": value for (steps, frames), value in by_budget(trajectories).items()}
    return {"trajectories": str(args.trajectories), "overall": overall, "by_budget": budgets,
            "summary": _line(overall, str(args.trajectories))}


def _line(summary: dict, head: str) -> str:
    def pct(key: str) -> str:
        value = summary.get(key)
        return "n/a" if value is None else f"{value:.0%}"
    return (f"{head}: {summary['n']} questions, accuracy {pct('accuracy')}, grounded accuracy "
            f"{pct('grounded_accuracy')}, misaligned-correct {pct('misaligned_correct_rate')}, "
            f"TG {pct('TG_rate')}, SG {pct('SG_rate')}")


# ------------------------------------------------------------------ sweep and the shipped demo


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.video.sweep import SweepConfig

    parser.add_argument("--videos", type=Path, required=True, help="folder of <video_key>.mp4 (and .srt) files")
    parser.add_argument("--questions", type=Path, required=True, help="questions in LVBench's flat shape")
    argparse_options(SweepConfig, parser)
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--out", type=Path, required=True, help="folder for the run files and summary.json")
    parser.add_argument("--offline", choices=("pixels", "frame-model"), default="pixels",
                        help="the offline inspector and captioner (frame-model: the synthetic videos' own network)")
    parser.add_argument("--frame-model", type=Path, default=None, help="weights of --offline frame-model")
    parser.add_argument("--no-progress", action="store_true")


def _video_file(videos: Path, question) -> str:
    return str(videos / f"{question.video_id}.mp4")


def _sweep_roles(planners: dict[str, str], search: str, frame_model: Path | None, offline: str, agent: str):
    return roles_for(planners[agent], offline, offline, search, frame_model)


def _sweep(videos: Path, questions_path: Path, config, out: Path, limit: int | None, frame_model: Path | None,
           show_progress: bool, offline: str = "pixels") -> dict:
    from engines.video.loaders import read_questions
    from engines.video.sweep import run_sweep

    questions = read_questions(questions_path)[:limit]
    _check_video_keys(questions, questions_path)
    planners = {"gated": "heuristic", "coupled": "coupled-heuristic"}
    # Module-level callables, not lambdas: the cells may run in other processes (engines.platform.fanout).
    with ProgressBar("sweep", "question", enabled=show_progress) as bar:
        return run_sweep(questions, functools.partial(_video_file, videos),
                         functools.partial(_sweep_roles, planners, config.search, frame_model, offline),
                         config, out, bar)


def _claims_line(summary: dict) -> str:
    c = summary["claims"]
    parts = [f"{summary['questions']} questions"]
    if "gated_grounded_accuracy_higher" in c:
        g, k = summary["results"]["gated"][str(c["budget_compared"])], summary["results"]["coupled"][str(c["budget_compared"])]
        parts.append(f"at {c['budget_compared']} steps grounded accuracy gated {g['grounded_accuracy']:.0%} vs coupled "
                     f"{k['grounded_accuracy']:.0%}, misaligned-correct {g['misaligned_correct_rate']:.0%} vs "
                     f"{k['misaligned_correct_rate']:.0%}")
    if "gated_accuracy_by_budget" in c:
        parts.append("gated accuracy by budget " + ", ".join(f"{b}: {a:.0%}" for b, a in c["gated_accuracy_by_budget"].items()))
    return "; ".join(parts)


def run_sweep_command(args: argparse.Namespace) -> dict:
    """Run both agents at several step budgets and check the paper's claims."""
    from engines.video.sweep import SweepConfig

    config = SweepConfig(**option_values(SweepConfig, args))
    offline = "frame-model" if args.frame_model is not None else args.offline
    summary = _sweep(args.videos, args.questions, config, args.out, args.limit, args.frame_model,
                     not args.no_progress, offline)
    return {**summary, "summary": _claims_line(summary)}


DEMO_SETTINGS = {"minutes": 10.0, "videos": 3, "seed": 7}


def add_demo_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.video.roles import ASSETS

    parser.add_argument("--out", type=Path, default=ASSETS / "demo", help="folder of the shipped demo")
    parser.add_argument("--no-progress", action="store_true")


def run_demo(args: argparse.Namespace) -> dict:
    """Write the shipped demo: synthetic videos with their index, questions, and a budget sweep."""
    from engines.video import backends
    from engines.video.index import load_or_build
    from engines.video.roles import FRAME_MODEL
    from engines.video.sweep import SweepConfig
    from engines.video.synthetic import SyntheticConfig, generate

    scripts = generate(args.out, SyntheticConfig(**DEMO_SETTINGS))
    captioner = backends.captioner("frame-model")
    for script in scripts:
        load_or_build(args.out / f"{script.video_id}.mp4", captioner)
    summary = _sweep(args.out, args.out / "questions.jsonl", SweepConfig(), args.out / "runs", None, FRAME_MODEL,
                     not args.no_progress, "frame-model")
    return {**summary, "summary": f"demo in {args.out}: " + _claims_line(summary)}
