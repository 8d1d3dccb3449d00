"""Tests of ``engines.hoi.browse`` and ``engines.hoi.plots``: what the HOI-Edit page shows.

A three-item benchmark in upstream's layout with two methods' edits, one method evaluated; every
expected score below is worked out by hand from the records written here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from engines.hoi import browse, plots
from engines.hoi.ratings import rate, win_rate_matrix
from engines.hoi.votes import Vote

OCCUR = "L1-interaction-relation_occur"
END = "L2-location_understanding-specific_pos_end"
REASONING = "L3-reasoning_process"
L1L2_FILE = "collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json"
L3_FILE = "collected_annotations_bboxes_v7_L3_questions_scoring_final.json"


def _item(tags: str, questions) -> dict:
    return {"instruction": "Make the person pick up the cup", "object": "cup",
            "subject_bounding_box": [1, 1, 20, 40], "object_bounding_box": [15, 30, 22, 38],
            "generated_question": "Has the person in the blue bounding box picked up the cup in the red bounding box?",
            "tools": "", "tool_bboxes": [], "tags_v6": tags, "question_v6": questions}


def _record(i: float, h: float = 0.9, o: float = 0.8, qa=(), **extra) -> dict:
    return {"max_yes_confidence": i, "mode": "confidence_first", "subject_identity_score": 1.0,
            "subject_quality_score": h, "subject_similarity": h, "object_identity_score": 1.0,
            "object_quality_score": o, "object_similarity": o, "qa": list(qa), **extra}


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / L1L2_FILE).write_text(json.dumps({
        "a.png": _item(OCCUR, ""),
        "b.png": _item(f"{OCCUR}, {END}", ["Is the cup on the shelf?"]),
    }))
    (tmp_path / L3_FILE).write_text(json.dumps({"c.png": _item(REASONING, ["Is the lid off?"])}))
    for split, keys in (("L1L2", ("a.png", "b.png")), ("L3", ("c.png",))):
        (tmp_path / "images" / split).mkdir(parents=True)
        for key in keys:
            Image.new("RGB", (64, 48), "white").save(tmp_path / "images" / split / key)
            for method in ("good", "plain"):
                folder = tmp_path / f"{method}_frames" / split
                folder.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (64, 48), "grey").save(folder / key)
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "good.json").write_text(json.dumps({
        "method": "good",
        "L1L2": {"a.png": _record(0.9, reasoning="the hand holds the cup", person_box=[1, 1, 20, 40]),
                 "b.png": _record(0.5, qa=[{"question": "Is the cup on the shelf?", "answer": "yes",
                                            "confidence": 0.25}])},
        "L3": {"c.png": _record(0.7, qa=[{"question": "Is the lid off?", "answer": "no", "confidence": 0.0}])},
    }))
    # an I2V method: strip of three frames, the trace chose the second
    strip = tmp_path / "good_strips" / "L1L2" / "a"
    strip.mkdir(parents=True)
    for index in range(3):
        Image.new("RGB", (32, 24), (index * 80, 0, 0)).save(strip / f"frame_{index:02d}.png")
    traces = tmp_path / "good_traces" / "L1L2"
    traces.mkdir(parents=True)
    (traces / "a.json").write_text(json.dumps({"image_name": "a.png", "status": "ok",
                                               "selection": {"best_frame_index": 1}}))
    (tmp_path / "methods.json").write_text(json.dumps({"good": {"kind": "i2v", "label": "Good I2V", "offline": True}}))
    return tmp_path


def test_workspace_finds_methods_and_scores_only_the_evaluated(folder):
    ws = browse.open_workspace(folder)
    assert sorted(ws.methods) == ["good", "plain"]
    assert ws.methods["good"].kind == "i2v" and ws.methods["plain"].kind == "image_edit"
    assert list(ws.scores) == ["good"]
    rows = browse.leaderboard_rows(ws)
    assert len(rows) == 1
    row = rows[0]
    # L1 items a, b: I = (0.9 + 0.5) / 2; H = 0.9; L2 (item b, tag end): min(0.5, 0.25) = 0.25
    assert row["L1 I"] == pytest.approx(0.7)
    assert row["L1 H"] == pytest.approx(0.9)
    assert row["L2 I+Q&A"] == pytest.approx(0.25)
    # L3 (item c): the answer is "no", so I+Q&A = min(0.7, 0) = 0
    assert row["L3 I"] == pytest.approx(0.7) and row["L3 I+Q&A"] == pytest.approx(0.0)


def test_item_scores_sorting_and_filters(folder):
    ws = browse.open_workspace(folder)
    a = ws.benchmark.get("L1L2", "a.png")
    b = ws.benchmark.get("L1L2", "b.png")
    assert browse.item_score(ws, "good", a) == pytest.approx(0.9)
    assert browse.item_score(ws, "good", b) == pytest.approx((0.5 + 0.25) / 2)  # mean over its two tags
    assert browse.item_score(ws, "plain", a) is None
    low_first = browse.list_items(ws, "L1L2", methods=["good"], sort="score (low first)")
    assert [i.key for i in low_first] == ["b.png", "a.png"]
    assert [i.key for i in browse.list_items(ws, "L1L2", level_or_tag="L2")] == ["b.png"]
    assert [i.key for i in browse.list_items(ws, "L1L2", level_or_tag=OCCUR)] == ["a.png", "b.png"]
    # one method scored: no disagreement to sort by, so file order is kept
    assert [i.key for i in browse.list_items(ws, "L1L2", sort="disagreement between methods")] == ["a.png", "b.png"]
    with pytest.raises(ValueError, match="unknown sort"):
        browse.list_items(ws, "L1L2", sort="alphabetical")
    assert browse.level_filters(ws, "L1L2") == ["L1", "L2", OCCUR, END]


def test_item_view_carries_outputs_reasoning_strip_and_choice(folder):
    ws = browse.open_workspace(folder)
    view = browse.item_view(ws, "L1L2", "a.png")
    good, plain = view.outputs
    assert good.image_path == folder / "good_frames" / "L1L2" / "a.png"
    assert good.reasoning == "the hand holds the cup" and good.person_box == [1, 1, 20, 40]
    assert [p.name for p in good.strip] == ["frame_00.png", "frame_01.png", "frame_02.png"]
    assert good.selected_frame == 1
    assert plain.record is None and plain.score is None and plain.strip == []


def test_an_unreadable_records_file_is_reported_not_fatal(folder):
    (folder / "records" / "plain.json").write_text('{"method": "plain", "L1L2": {"a.png": {"max_yes_confidence": "high"}}}')
    ws = browse.open_workspace(folder)
    assert "plain" not in ws.scores
    assert len(ws.problems) == 1 and "a.png" in ws.problems[0] and "max_yes_confidence" in ws.problems[0]


def test_thumbnails_are_cached_and_shrunk(folder):
    cache = browse.ThumbnailCache(max_entries=1)
    path = folder / "images" / "L1L2" / "a.png"
    first = cache.get(path, size=32)
    assert first.size == (32, 24)
    assert cache.get(path, size=32) is first
    cache.get(folder / "images" / "L1L2" / "b.png", size=32)
    assert len(cache) == 1  # the least recently used was dropped


def test_figures_carry_the_numbers(folder):
    ws = browse.open_workspace(folder)
    figure = plots.leaderboard_figure(browse.leaderboard_rows(ws))
    assert [trace.name for trace in figure.data] == ["L1 · I", "L2 · I+Q&A", "L3 · I+Q&A"]
    assert figure.data[0].y[0] == pytest.approx(0.7)
    votes = [Vote(float(t), "a.png", "good", "plain", "model_a") for t in range(6)] + \
            [Vote(10.0, "b.png", "plain", "good", "tie")]
    board = rate(votes, "elo", rounds=20)
    frame = plots.ratings_frame(board)
    assert list(frame["method"]) == ["good", "plain"] and list(frame["rank"]) == [1, 2]
    heat = plots.win_rate_figure(win_rate_matrix(votes))
    assert heat.data[0].z.shape == (2, 2)
    over_time = plots.votes_over_time_figure(votes)
    assert {trace.name for trace in over_time.data} == {"a win", "tie"}
    assert max(over_time.data[0].y) == 6
