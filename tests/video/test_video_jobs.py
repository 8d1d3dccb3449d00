"""The video jobs in the queue: a question asked about a demo video end to end, a small sweep, and
parameters refused at submission (a file that is neither shipped nor uploaded among them)."""

from __future__ import annotations

import re

import pytest

from engines.platform import jobqueue
from engines.video import library
from engines.video.__main__ import main as video_main
from engines.video.jobs import ASK, SWEEP, job_runs
from engines.video.synthetic import read_script
from engines.video.trajectory import read_jsonl

pytestmark = pytest.mark.skipif(not library.demo_videos(), reason="the shipped demo is written by "
                                "`python -m engines.video demo`")


def _event_question():
    video = library.demo_videos()[0]
    event = next(e for e in read_script(video.with_suffix(".script.json")).events if e.topic)
    others = [c for c in ("red", "green", "blue", "yellow", "purple", "orange") if c != event.colour][:2]
    return video, event, [others[0], event.colour, others[1]]


def test_a_question_asked_as_a_job_is_answered_and_listed_among_the_runs(sqlite_db):
    video, event, options = _event_question()
    job_id = jobqueue.submit_job(ASK, {"video": str(video), "options": options, "question":
                                       f"What colour are the {event.shape}s on screen while the narrator talks "
                                       f"about the {event.topic}?"})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    [trajectory] = read_jsonl(job.result["result_path"])
    assert trajectory.final.answer == "B" and trajectory.final.mode == "gated" and job.result["answer"] == "B"
    assert job.result["summary"].startswith(f"B ({event.colour}), gated, after ")
    assert any(event.span.start - 8 <= span.start <= event.span.end for span in trajectory.authorising_spans)
    assert [r.label for r in job_runs()] == [f"job #{job_id}: {job.result['summary']}"]


def test_a_small_sweep_job_writes_its_runs(sqlite_db):
    job_id = jobqueue.submit_job(SWEEP, {"budgets": [2, 1, 2], "limit": 2})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    assert job.params["budgets"] == [1, 2] and job.result["summary"] == "2 questions at budgets 1, 2"  # sorted, once each
    assert sorted(r.path.name for r in job_runs()) == ["coupled-steps1.jsonl", "coupled-steps2.jsonl",
                                                       "gated-steps1.jsonl", "gated-steps2.jsonl"]


@pytest.mark.parametrize(("params", "message"), [
    ({"video": "/etc/passwd"}, "the job's video: '/etc/passwd' is outside the folders the app reads from"),
    ({"video": "assets/video/demo/questions.jsonl"}, "outside the folders"),
    ({"options": ["red"]}, "at least 2 items"),
    ({"options": ["red", "  "]}, "every option needs a text"),
    ({"max_steps": 0}, "greater than or equal to 1"),
])
def test_bad_questions_are_refused_when_submitted(sqlite_db, params, message):
    video, event, options = _event_question()
    base = {"video": str(video), "question": "What colour?", "options": options}
    with pytest.raises(jobqueue.JobError, match=message):
        jobqueue.submit_job(ASK, {**base, **params})


def test_bad_budgets_are_refused_when_submitted(sqlite_db):
    with pytest.raises(jobqueue.JobError, match=re.escape("budgets must be step counts from 1 to 64, got (0, 4)")):
        jobqueue.submit_job(SWEEP, {"budgets": [0, 4]})


@pytest.mark.parametrize("value", [0, 65])
def test_a_job_and_the_command_line_refuse_the_same_step_count_with_the_same_bounds(sqlite_db, tmp_path, capsys,
                                                                                    value):
    # One declaration (AgentConfig.max_steps, 1 to 64): the job refuses it when submitted, the command
    # line before it reads a question; 64 passes both.
    video, event, options = _event_question()
    ask = {"video": str(video), "question": "What colour?", "options": options}
    with pytest.raises(jobqueue.JobError, match="max_steps"):
        jobqueue.submit_job(ASK, {**ask, "max_steps": value})
    assert jobqueue.get_job(jobqueue.submit_job(ASK, {**ask, "max_steps": 64})).params["max_steps"] == 64
    with pytest.raises(SystemExit) as exit_:
        video_main(["run", "--videos", str(tmp_path), "--questions", str(tmp_path / "q.jsonl"), "--out",
                    str(tmp_path / "out.jsonl"), "--max-steps", str(value)])
    assert exit_.value.code == 2
    assert f"max_steps must be from 1 to 64, got {value}" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
