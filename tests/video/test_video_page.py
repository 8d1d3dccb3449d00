"""Research -> Video inspector in AppTest: the shipped demo run it opens on, the question's tiles and
timeline, the filters, the player (waiting for play, or playing a clicked span by itself, muted),
and a question asked as a job. Uploads and the files the page may open: test_video_owned_files.py."""

from __future__ import annotations

import json

import pytest

from engines.platform import jobqueue
from engines.video import browse, library
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


def test_the_player_waits_for_play_until_a_span_is_chosen_then_starts_there_muted(sqlite_db):
    at = page_as(PAGE, "researcher")
    [video] = at.get("video")
    assert (video.proto.start_time, video.proto.autoplay, video.proto.muted) == (0, False, False)
    assert any(c.value.startswith("Playing from 0 s when you press play") for c in at.caption)
    chosen = browse.player((12.4, 27.6))
    # Browsers start a video by itself only when it is muted: autoplay always comes with muted.
    assert (chosen.start, chosen.end, chosen.autoplay, chosen.muted) == (12, 28, True, True)
    assert chosen.caption.startswith("Playing from 12 s to 28 s") and "unmute" in chosen.caption


def test_a_span_clicked_on_the_timeline_plays_there_by_itself(sqlite_db):
    at = page_as(PAGE, "researcher")
    uid = at.selectbox(key="video-question").value.trajectory.uid
    # What a click on a bar of the timeline hands the page: the bar's [start, end] as customdata.
    at.session_state[f"video-timeline-{uid}"] = {"selection": {"points": [{"customdata": [30.0, 45.0]}]}}
    at.run()
    assert not at.exception, at.exception
    [video] = at.get("video")
    assert (video.proto.start_time, video.proto.end_time, video.proto.autoplay, video.proto.muted) == (30, 46, True, True)
