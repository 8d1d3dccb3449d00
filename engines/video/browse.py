"""What the video inspector page shows of a run, computed here so that the page stays a view:
trajectories with their metrics, the filters, one row per question, and the frames of a step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engines.video.decode import VideoError, open_video
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
    """Every question of a trajectories file with its metrics (computed here, not trusted from the file)."""
    return [Entry(t, question_metrics(t)) for t in read_jsonl(path)]


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


def step_frames(trajectory: Trajectory, step: Step, limit: int = 12) -> list[tuple[str, np.ndarray]]:
    """Up to ``limit`` of the frames an inspection looked at (evenly chosen), captioned by time;
    empty when the video is no longer readable."""
    times = [frame.t for frame in step.frames]
    if not times:
        return []
    chosen = [times[round(k * (len(times) - 1) / max(limit - 1, 1))] for k in range(min(limit, len(times)))]
    try:
        with open_video(trajectory.video_path) as reader:
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
