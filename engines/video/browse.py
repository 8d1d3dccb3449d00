"""What the video inspector page shows of a run, computed here so that the page stays a view:
trajectories with their metrics, the filters, one row per question, the frames of a step and
where the player starts.

A run file and the video a trajectory names are opened only through ``engines.video.library``
(``run_file``, ``video_file``): a trajectory is a file anyone could have written, so its
``video_path`` is resolved (relative to the run file's own folder when relative) inside the folders
the app owns, or refused."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.platform.files import FileRefused, loads_json, owned_path, shown_path
from engines.video.decode import VideoError, open_video
from engines.video.library import run_file, video_file
from engines.video.metrics import QuestionMetrics, question_metrics
from engines.video.spans import format_time
from engines.video.trajectory import Step, Trajectory, read_jsonl

FILTERS = ("all", "correct", "wrong", "misaligned-correct", "grounded", "not temporally grounded",
           "not semantically grounded")


@dataclass(frozen=True)
class Entry:
    """One question of a run: its trajectory and metrics."""

    trajectory: Trajectory
    metrics: QuestionMetrics

    @property
    def label(self) -> str:
        m, t = self.metrics, self.trajectory
        mark = "✓" if m.correct else ("✗" if m.correct is False else "·")
        stem = t.question.splitlines()[0]
        return f"{mark} {t.uid}: {stem[:70]}{'…' if len(stem) > 70 else ''}"


def load_run(path: str | Path) -> list[Entry]:
    """Every question of a trajectories file with its metrics (computed here, not trusted from the file).

    Raises:
        FileRefused: the file is not a ``.jsonl`` file inside the folders the app owns.
        TrajectoryFormatError: a line is not a trajectory (the message names the file as shown to people).
    """
    resolved = run_file(path)
    return [Entry(t, question_metrics(t)) for t in read_jsonl(resolved, name=shown_path(resolved))]


def trajectory_video(trajectory: Trajectory, run: str | Path) -> Path:
    """The video ``trajectory`` names, resolved from the folder of its run file ``run`` when relative.

    Raises:
        FileRefused: not a video file inside the folders the app owns (the file is not opened).
    """
    folder = run_file(run).parent
    return video_file(trajectory.video_path, what="the trajectory's video_path", base=folder)


def keep(entry: Entry, which: str, mode: str = "any") -> bool:
    """Whether ``entry`` passes the filter ``which`` (one of FILTERS) and the final mode ``mode``."""
    m = entry.metrics
    if mode != "any" and entry.trajectory.final.mode != mode:
        return False
    return {"all": True, "correct": m.correct is True, "wrong": m.correct is False,
            "misaligned-correct": m.misaligned_correct is True, "grounded": m.grounded is True,
            "not temporally grounded": m.TG is False, "not semantically grounded": m.SG is False}[which]


def options_text(trajectory: Trajectory) -> list[tuple[str, str, bool, bool]]:
    """(letter, option, is the ground truth, is the prediction) per option."""
    return [(letter, option, letter == trajectory.gt_answer, letter == trajectory.final.answer)
            for letter, option in zip(trajectory.option_letters, trajectory.options, strict=True)]


def step_title(step: Step) -> str:
    if step.action == "retrieve":
        return f"Step {step.i}: search “{step.args.get('query', '')}” ({len(step.hits)} hits)"
    if step.action == "inspect":
        spans = ", ".join(s.label() for s in step.spans)
        verdict = step.verdict
        said = "" if verdict is None else (f": {verdict.answer} at confidence {verdict.confidence:.2f}"
                                           if verdict.status == "ANSWER" else ": search more")
        return f"Step {step.i}: inspect {spans}{' (forced)' if step.forced else ''}{said}"
    return f"Step {step.i}: finish"


def sweep_summary(run: str | Path) -> dict | None:
    """The ``summary.json`` a sweep wrote beside the run file ``run``, or None when there is none.

    Raises:
        FileRefused: it is not a file inside the owned folders, nests too deeply, is not JSON, or
            lacks the sweep's ``questions`` and ``results`` by agent and budget.
    """
    candidate = run_file(run).parent / "summary.json"
    if not candidate.exists() and not candidate.is_symlink():
        return None
    path = owned_path(candidate, what="the sweep's summary.json", suffixes=(".json",))
    where = shown_path(path)
    summary = loads_json(path.read_text(encoding="utf-8"), where=where)
    results = summary.get("results") if isinstance(summary, dict) else None
    if not isinstance(results, dict) or not all(isinstance(by, dict) and all(isinstance(v, dict) for v in by.values())
                                                for by in results.values()):
        raise FileRefused(f"{where}: not a sweep's summary (results by agent and step budget).")
    return summary


def step_frames(video: Path, step: Step, limit: int = 12) -> list[tuple[str, np.ndarray]]:
    """Up to ``limit`` of the frames an inspection looked at (evenly chosen), captioned by time;
    empty when the video is no longer readable. ``video`` is the trajectory's video as
    :func:`trajectory_video` resolved it."""
    times = [frame.t for frame in step.frames]
    if not times:
        return []
    chosen = [times[round(k * (len(times) - 1) / max(limit - 1, 1))] for k in range(min(limit, len(times)))]
    try:
        with open_video(video) as reader:
            frames = reader.frames_at(chosen)
    except VideoError:
        return []
    return [(format_time(t), frame) for t, frame in zip(chosen, frames, strict=True)]


def metric_tiles(entry: Entry) -> list[tuple[str, str]]:
    """(label, value) of the page's metric tiles."""
    m, t = entry.metrics, entry.trajectory

    def flag(value) -> str:
        return "n/a" if value is None else ("yes" if value else "no")

    def share(value) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    return [("Correct", flag(m.correct)), ("tIoU", share(m.tIoU)), ("Coverage", share(m.coverage)),
            ("Temporally grounded", flag(m.TG)), ("Semantically grounded", flag(m.SG)),
            ("Steps", f"{len(t.steps)} of {t.budget.get('max_steps', '?')}"), ("Frames", str(t.frames_used))]


@dataclass(frozen=True)
class Player:
    """Where the page's video player starts and stops, whether it starts by itself, and what it says.

    A span chosen on the timeline plays at once: ``autoplay``, and ``muted`` because browsers let
    only a muted video start by itself. With no span chosen the player waits at 0 s for a press on play.
    """

    start: int
    end: int | None
    autoplay: bool
    muted: bool
    caption: str


def player(span: tuple[float, float] | None) -> Player:
    """The player for the timeline span clicked (``[start, end]`` seconds), or for none."""
    if span is None:
        return Player(0, None, False, False, "Playing from 0 s when you press play; click a span of the timeline "
                                             "to play it.")
    start, end = float(span[0]), float(span[1])
    return Player(int(start), int(end) + 1, True, True,
                  f"Playing from {start:.0f} s to {end:.0f} s (muted so that it can start by itself: unmute it "
                  "in the player).")
