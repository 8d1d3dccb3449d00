"""Messages about hostile input stay short: a trajectory, questions file, subtitle or time holding
thousands of characters where a short value belongs is refused with the value quoted cut to 120
characters (``echo``), never echoed whole; JSON nested too deeply is refused before it is parsed;
and a question's video key cannot name a file outside the command line's --videos folder."""

from __future__ import annotations

import json

import pytest

from engines.video import library
from engines.video.__main__ import main
from engines.video.loaders import read_lvbench_flat
from engines.video.questions import QuestionFormatError
from engines.video.spans import TimeFormatError, parse_time
from engines.video.subtitles import SubtitleFormatError, read_srt
from engines.video.trajectory import TrajectoryFormatError, read_jsonl

pytestmark = pytest.mark.skipif(not library.demo_runs(), reason="the shipped demo is written by "
                                "`python -m engines.video demo`")
HUGE = "A" * 20_000
MAX_MESSAGE = 400  # the file, line, field and the rule, plus at most 120 quoted characters


def _record() -> dict:
    return json.loads(library.demo_runs()[0].path.read_text().splitlines()[0])


def _short(message: str) -> None:
    assert len(message) < MAX_MESSAGE and "A" * 121 not in message and "…" in message, message[:500]


@pytest.mark.parametrize(("field", "value"), [("agent", HUGE), ("gt_spans", [[HUGE, 1.0]]), ("duration_s", HUGE),
                                              ("schema", HUGE)])
def test_a_trajectory_with_a_huge_bad_value_gets_a_short_message(tmp_path, field, value):
    record = {**_record(), field: value}
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps(record) + "\n")
    with pytest.raises(TrajectoryFormatError) as raised:
        read_jsonl(path)
    _short(str(raised.value))
    assert str(raised.value).startswith(f"{path}, line 1: ")


def test_a_trajectory_with_a_huge_unknown_field_gets_a_short_message(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text(json.dumps({**_record(), HUGE: 1}) + "\n")
    with pytest.raises(TrajectoryFormatError, match="is not a field of lvqa-traj/1") as raised:
        read_jsonl(path)
    _short(str(raised.value))


def test_a_trajectory_line_nested_too_deeply_is_refused_before_parsing(tmp_path):
    path = tmp_path / "run.jsonl"
    path.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(TrajectoryFormatError, match=r"run.jsonl, line 1: the JSON nests deeper than 64 levels"):
        read_jsonl(path)


def test_the_page_shows_a_broken_run_with_a_short_message(sqlite_db, monkeypatch):
    from engines.platform.settings import get_settings
    from engines.video import jobs as video_jobs
    from tests.apptest_driver import page_as

    folder = get_settings().data_dir / "jobs" / "3"
    folder.mkdir(parents=True)
    run = folder / "trajectory.jsonl"
    run.write_text(json.dumps({**_record(), "agent": HUGE}) + "\n")
    monkeypatch.setattr(library, "demo_runs", lambda: [library.RunFile("broken run", run)])
    monkeypatch.setattr(video_jobs, "job_runs", lambda **_: [])
    at = page_as("video_inspector", "researcher")
    assert not at.exception, at.exception
    [error] = [e.value for e in at.error]
    assert error.startswith("This run cannot be shown: jobs/3/trajectory.jsonl, line 1: agent: must be one of")
    _short(error)


def test_a_questions_file_with_a_huge_bad_value_gets_a_short_message(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text(json.dumps({"uid": "q1", "video_key": [HUGE], "question": "Q?\n(A) a\n(B) b", "answer": "A",
                                "question_type": [], "time_reference": ""}) + "\n")
    with pytest.raises(QuestionFormatError) as raised:
        read_lvbench_flat(path)
    _short(str(raised.value))


def test_a_questions_file_nested_too_deeply_is_refused_before_parsing(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text("{\"a\": " * 5_000 + "1" + "}" * 5_000 + "\n")
    with pytest.raises(QuestionFormatError, match="nests deeper than 64 levels"):
        read_lvbench_flat(path)


def test_a_subtitle_timing_and_a_time_with_huge_text_get_short_messages(tmp_path):
    srt = tmp_path / "talk.srt"
    srt.write_text(f"1\n00:00:01,000 --> {HUGE}\nhello\n")
    with pytest.raises(SubtitleFormatError) as raised:
        read_srt(srt)
    _short(str(raised.value))
    with pytest.raises(TimeFormatError) as raised:
        parse_time(HUGE)
    _short(str(raised.value))


@pytest.mark.parametrize("key", ["../../etc/passwd", "..", "sub/clip", "..\\secret"])
def test_a_video_key_naming_a_file_outside_the_videos_folder_is_refused(tmp_path, capsys, key):
    questions = tmp_path / "questions.jsonl"
    questions.write_text(json.dumps({"uid": "q1", "video_key": key, "question": "Q?\n(A) a\n(B) b", "answer": "A",
                                     "question_type": [], "time_reference": ""}) + "\n")
    with pytest.raises(SystemExit) as raised:
        main(["run", "--videos", str(tmp_path), "--questions", str(questions), "--out", str(tmp_path / "t.jsonl"),
              "--no-progress"])
    assert raised.value.code == 2
    assert f"question 'q1' names the video key {key!r}, which is not a file name inside --videos" in \
        capsys.readouterr().err
