"""Research -> Video inspector in AppTest: the shipped demo run it opens on, the question's tiles and
timeline, the filters, the steps, a wrong upload, and a question asked as a job."""

from __future__ import annotations

import json

import pytest

from engines.platform import jobqueue
from engines.video import library
from engines.video.jobs import ASK
from tests.apptest_driver import page_as

PAGE = "video_inspector"
pytestmark = pytest.mark.skipif(not library.demo_runs(), reason="the shipped demo is written by "
                                "`python -m engines.video demo`")


def _charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_the_page_opens_on_the_gated_agents_demo_run(sqlite_db):
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    run = at.selectbox(key="video-run")
    assert run.value.path.name == "gated-steps8.jsonl" and run.format_func(run.value) == "demo: gated agent, 8 steps"
    assert at.selectbox(key="video-filter").value == "all" and at.selectbox(key="video-mode").value == "any"
    assert any("Synthetic demo" in c.value for c in at.caption)
    labels = [m.label for m in at.metric]
    assert labels[:7] == ["Correct", "tIoU", "Coverage", "Temporally grounded", "Semantically grounded", "Steps",
                          "Frames"]
    titles = [c["layout"]["title"]["text"] for c in _charts(at)]
    assert titles[0] == "The agent's search over the video (click a span to play it)"
    timeline = _charts(at)[0]
    lanes = timeline["layout"]["yaxis"]["categoryarray"]
    assert lanes[-1] == "evidence (ground truth)" and lanes[-2].startswith("1 ")
    # Every bar carries its [start, end], which the player seeks to when clicked.
    assert all(len(point) == 2 for trace in timeline["data"] for point in trace["customdata"])


def test_the_filters_narrow_the_questions(sqlite_db):
    at = page_as(PAGE, "researcher")
    # The 8-step gated run answers every demo question: "wrong" leaves none, and says so.
    at.selectbox(key="video-filter").set_value("wrong").run()
    assert not at.exception and any("No question of this run matches “wrong”" in i.value for i in at.info)
    runs = library.demo_runs()
    at.selectbox(key="video-run").set_value(next(r for r in runs if r.path.name == "gated-steps2.jsonl")).run()
    assert not at.exception, at.exception
    wrong = at.selectbox(key="video-question").options
    assert 0 < len(wrong) < 15 and all(label.startswith("✗") for label in wrong)


def test_an_upload_that_is_not_a_video_is_refused(sqlite_db, tmp_path):
    with pytest.raises(library.UploadError, match=r"notes.mp4: not a video PyAV can read"):
        library.save_upload("notes.mp4", b"these are notes, not a video" * 10)
    with pytest.raises(library.UploadError, match=r"notes.txt: not a video file name"):
        library.save_upload("notes.txt", b"x")
    assert library.uploaded_videos() == []  # nothing half-kept


def test_asking_a_question_queues_a_job_with_the_form_values(sqlite_db):
    at = page_as(PAGE, "researcher")
    at.text_input(key="video-ask-question").set_value("What colour are the circles on screen?")
    at.text_area(key="video-ask-options").set_value("red\nblue\n\ngreen")
    submit = next(b for b in at.button if b.label == "Ask")
    submit.click().run()
    assert not at.exception, at.exception
    [job] = jobqueue.list_jobs(kind=ASK)
    assert job.params["options"] == ["red", "blue", "green"] and job.params["agent"] == "gated"
    assert job.params["video"].endswith(".mp4") and job.params["max_steps"] == 8


def test_an_upload_too_large_is_refused_before_anything_is_kept(sqlite_db, monkeypatch):
    monkeypatch.setattr(library, "MAX_UPLOAD_MB", 1)
    with pytest.raises(library.UploadError, match=r"big.mp4: 2 MB is more than the 1 MB allowed"):
        library.save_upload("big.mp4", b"\0" * 2_000_000)
    assert library.uploaded_videos() == []


def test_a_real_video_upload_is_kept_once(sqlite_db):
    data = library.demo_videos()[0].read_bytes()
    first = library.save_upload("clip.MP4", data)
    again = library.save_upload("another name.mp4", data)
    assert first == again and first.suffix == ".mp4" and library.uploaded_videos() == [first]
    assert library.allowed_video(first) == first.resolve()
