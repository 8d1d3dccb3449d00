"""Research -> HOI-Edit in AppTest, on a three-item benchmark folder written by the browse tests:
the leaderboard in the paper's layout, the item browser with each method's edit, a wrong folder."""

from __future__ import annotations

import json

from engines.hoi.votes import Vote
from tests.apptest_driver import page_as
from tests.hoi.test_hoi_browse import folder  # noqa: F401 - the fixture

PAGE = "hoi_edit"


def _open(root):
    at = page_as(PAGE, "researcher")
    at.text_input(key="hoi-root").set_value(str(root)).run()
    return at


def test_leaderboard_and_item_browser(sqlite_db, folder):  # noqa: F811
    at = _open(folder)
    assert not at.exception, at.exception
    board = at.dataframe[0].value
    assert list(board.index) == ["good"]
    assert round(float(board.loc["good", "L1 I"]), 4) == 0.7
    assert at.selectbox(key="hoi-split").value == "L1L2"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("I 0.9000 · H 0.9000 · O 0.8000") for c in captions)  # item a.png by "good"
    assert "Not evaluated." in captions  # "plain" has no records
    assert any("Synthetic demo" in i.value for i in at.info)  # methods.json marks "good" offline


def test_sorting_by_score_puts_the_weaker_item_first(sqlite_db, folder):  # noqa: F811
    at = _open(folder)
    at.selectbox(key="hoi-sort").set_value("score (low first)").run()
    assert not at.exception, at.exception
    assert any(c.startswith("I 0.5000") for c in (c.value for c in at.caption))  # b.png comes first


def test_arena_votes_are_rated(sqlite_db, folder):  # noqa: F811
    votes = [Vote(float(t), "a.png", "good", "plain", "model_a").to_dict() for t in range(5)]
    (folder / "votes.jsonl").write_text("\n".join(json.dumps(v) for v in votes) + "\n")
    at = _open(folder)
    assert not at.exception, at.exception
    assert any("5 votes counted" in m.value for m in at.markdown)


def test_a_wrong_folder_says_what_is_wrong(sqlite_db, tmp_path):
    at = _open(tmp_path / "nowhere")
    assert [e.value for e in at.error][0].startswith(f"{tmp_path / 'nowhere'} is not a folder")
    at.text_input(key="hoi-root").set_value(str(tmp_path)).run()
    assert "no HOI-Edit annotation file" in at.error[0].value


def test_an_evaluation_and_scpe_are_started_from_the_page_as_jobs(sqlite_db, folder):  # noqa: F811
    from engines.platform import jobqueue

    at = _open(folder)
    at.selectbox(key="hoi-eval-method").set_value("plain")
    at.button[[b.label for b in at.button].index("Start the evaluation")].click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Queued evaluation #") for s in at.success)
    [job] = jobqueue.list_jobs()
    assert job.kind == "hoi.evaluate" and job.params["method"] == "plain"
    at.button[[b.label for b in at.button].index("Start SCPE")].click().run()
    assert any(s.value.startswith("Queued SCPE #") for s in at.success)
    assert {j.kind for j in jobqueue.list_jobs()} == {"hoi.evaluate", "hoi.scpe"}
