"""Background jobs of the video area: ``video.ask`` (one question, live, on a shipped or uploaded
video) and ``video.sweep`` (both agents over the demo questions at several step budgets).

The same functions the command line calls, in the job queue, with progress: a question's
trajectory lands in the job's folder as ``trajectory.jsonl``, a sweep's run files and summary in
``sweep/``. A job's video must be a video file inside the folders the app owns
(``library.video_file``): it is checked when the job is submitted and again when it runs, and the
result paths read back from the database are resolved inside the jobs folder before they are listed.
The agent's and the sweep's parameters are derived from ``AgentConfig`` and ``SweepConfig``, as the
command line's options are (``engines.platform.config_schema``): declared once, checked alike.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from engines.platform.config_schema import JobParams, job_model
from engines.platform.files import FileRefused, owned_path
from engines.platform.jobqueue import JobContext, list_jobs, register_job
from engines.platform.models import Job
from engines.platform.progress import job_progress
from engines.video.agent import AgentConfig, answer
from engines.video.library import DEMO, RunFile, run_file, video_file
from engines.video.loaders import read_questions
from engines.video.metrics import with_metrics
from engines.video.questions import Question
from engines.video.sweep import SweepConfig, run_sweep
from engines.video.trajectory import write_jsonl

ASK, SWEEP = "video.ask", "video.sweep"
PLANNERS = {"gated": "heuristic", "coupled": "coupled-heuristic"}


class _Question(JobParams):
    """What a ``video.ask`` job asks, and of which video; the agent's budget follows (``AgentConfig``)."""

    video: str = Field(title="A shipped demo video or an uploaded one", max_length=4096)
    question: str = Field(min_length=3, max_length=1000)
    options: list[str] = Field(min_length=2, max_length=5)

    @field_validator("options")
    @classmethod
    def _filled(cls, value: list[str]) -> list[str]:
        value = [option.strip() for option in value]
        if any(not option for option in value):
            raise ValueError("every option needs a text")
        return value

    @field_validator("video")
    @classmethod
    def _owned(cls, value: str) -> str:
        """A video inside the owned folders, resolved (a FileRefused is a ValueError: the job is refused)."""
        return str(video_file(value, what="the job's video"))


class AskParams(job_model(AgentConfig, name="AskFields", base=_Question, only=("agent", "max_steps", "max_frames"))):
    """Parameters of a ``video.ask`` job: the question, its video, and the agent's budget."""


def _roles(agent: str):
    from engines.video.backends import roles_for  # the offline models (torch): when a job runs

    return roles_for(PLANNERS[agent], "pixels", "pixels", "bm25")


@register_job(ASK, title="Video: ask a question about a long video", params=AskParams)
def ask_job(ctx: JobContext, **params) -> dict:
    """Index the video (once), then answer the question with the agent; writes trajectory.jsonl."""
    p = AskParams(**params)
    question = Question(uid=f"job-{ctx.job_id}", video_id=Path(p.video).stem, question=p.question,
                        options=tuple(p.options), answer=None, benchmark="synthetic"
                        if Path(p.video).parent == DEMO.resolve() else "lvbench")
    ctx.progress(0.05, "indexing the video (captions of every 16 s clip; once per video)")
    roles = _roles(p.agent)
    roles.retriever_for(p.video)
    ctx.progress(0.5, f"the {p.agent} agent is searching and inspecting")
    trajectory = with_metrics(answer(question, p.video, roles, p.config()))
    out = ctx.result_dir / "trajectory.jsonl"
    write_jsonl([trajectory], out)
    letter = trajectory.final.answer
    said = f"{letter} ({question.option_text(letter)})" if letter in question.letters else "no answer"
    return {"result_path": str(out), "answer": letter, "mode": trajectory.final.mode,
            "summary": f"{said}, {trajectory.final.mode.replace('_', ' ')}, after {len(trajectory.steps)} steps"}


class _DemoQuestions(JobParams):
    limit: int | None = Field(default=None, ge=1, le=1000, title="Only the first N demo questions")


class SweepParams(job_model(SweepConfig, name="SweepFields", base=_DemoQuestions, only=("budgets",))):
    """Parameters of a ``video.sweep`` job: the step budgets (``SweepConfig``) over the demo's questions."""

    @field_validator("budgets")
    @classmethod
    def _in_order(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(sorted(set(value)))  # each budget once, smallest first, as the summary lists them


@register_job(SWEEP, title="Video: both agents at several step budgets", params=SweepParams)
def sweep_job(ctx: JobContext, **params) -> dict:
    """The sweep of ``python -m engines.video sweep`` over the shipped demo; writes sweep/."""
    p = SweepParams(**params)
    questions = read_questions(DEMO / "questions.jsonl")[:p.limit]
    summary = run_sweep(questions, lambda q: str(DEMO / f"{q.video_id}.mp4"), _roles,
                        p.config(), ctx.result_dir / "sweep",
                        job_progress(ctx, 0.0, 0.98))
    return {"result_path": str(ctx.result_dir / "sweep"), "claims": summary["claims"],
            "summary": f"{len(questions)} questions at budgets {', '.join(map(str, p.budgets))}"}


def video_jobs(*, limit: int = 20) -> list[Job]:
    """The newest jobs of this area (any status)."""
    return list_jobs(kinds=[ASK, SWEEP], limit=limit)


def job_runs(*, limit: int = 50) -> list[RunFile]:
    """Trajectories files of finished jobs that are still there, newest first."""
    runs = []
    for job in list_jobs(kinds=[ASK, SWEEP], status="succeeded", limit=limit):
        if not job.result:
            continue
        try:
            runs += _runs_of(job)
        except FileRefused:
            continue  # removed since, or a result path outside the jobs folder: not listed, not opened
    return runs


def _runs_of(job: Job) -> list[RunFile]:
    """The run files of one finished job, its result path resolved inside the jobs folder."""
    result = str(job.result.get("result_path") or "")
    if job.kind == ASK:
        return [RunFile(f"job #{job.id}: {job.result.get('summary', '')}", run_file(result, folders=("jobs",)))]
    folder = owned_path(result, what="the sweep's folder", folders=("jobs",), kind="dir")
    return [RunFile(f"job #{job.id}: {p.stem}", run_file(p, folders=("jobs",))) for p in sorted(folder.glob("*.jsonl"))]
