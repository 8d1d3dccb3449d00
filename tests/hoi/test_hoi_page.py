"""Research -> HOI-Edit in AppTest, on a three-item benchmark folder written by the browse tests and
registered as a data set: the leaderboard in the paper's layout, the item browser with each method's
edit, a folder the app does not own, and jobs started from the Run tab."""

from __future__ import annotations

import json
import shutil

import pytest

from engines.hoi.votes import Vote
from tests.apptest_driver import page_as
from tests.hoi.test_hoi_browse import folder  # noqa: F401 - the fixture

PAGE = "hoi_edit"


@pytest.fixture
def registered(sqlite_db, folder, data_dir):  # noqa: F811
    """The browse tests' folder, copied to ``datasets/hoi/bench`` of the test's data folder."""
    root = data_dir / "datasets" / "hoi" / "bench"
    shutil.copytree(folder, root, ignore=shutil.ignore_patterns("data", "*.db*"))
    return root


def _open(root):
    at = page_as(PAGE, "researcher")
    at.text_input(key="hoi-root").set_value(str(root)).run()
    return at


def test_leaderboard_and_item_browser(registered):
    at = _open(registered)
    assert not at.exception, at.exception
    board = at.dataframe[0].value
    assert list(board.index) == ["good"]
    assert round(float(board.loc["good", "L1 I"]), 4) == 0.7
    assert at.selectbox(key="hoi-split").value == "L1L2"
    captions = [c.value for c in at.caption]
    assert any(c.startswith("I 0.9000 · H 0.9000 · O 0.8000") for c in captions)  # item a.png by "good"
    assert "Not evaluated." in captions  # "plain" has no records
    assert any("Synthetic demo" in i.value for i in at.info)  # methods.json marks "good" offline


def test_sorting_by_score_puts_the_weaker_item_first(registered):
    at = _open(registered)
    at.selectbox(key="hoi-sort").set_value("score (low first)").run()
    assert not at.exception, at.exception
    assert any(c.startswith("I 0.5000") for c in (c.value for c in at.caption))  # b.png comes first


def test_arena_votes_are_rated(registered):
    votes = [Vote(float(t), "a.png", "good", "plain", "model_a").to_dict() for t in range(5)]
    (registered / "votes.jsonl").write_text("\n".join(json.dumps(v) for v in votes) + "\n")
    at = _open(registered)
    assert not at.exception, at.exception
    assert any("5 votes counted" in m.value for m in at.markdown)


def test_a_folder_the_app_does_not_own_is_refused_and_an_owned_one_must_read(sqlite_db, data_dir, tmp_path):
    at = page_as(PAGE, "researcher")
    for outside in (tmp_path / "nowhere", tmp_path, "/etc", data_dir, "datasets/hoi/../../.."):
        at.text_input(key="hoi-root").set_value(str(outside)).run()
        assert not at.exception, at.exception
        assert "is outside the folders the app reads from" in at.error[0].value, (outside, at.error[0].value)
        assert "datasets/hoi/" in at.error[0].value
    empty = data_dir / "datasets" / "hoi" / "empty"
    empty.mkdir(parents=True)
    at.text_input(key="hoi-root").set_value("datasets/hoi/empty").run()
    assert "no HOI-Edit annotation file" in at.error[0].value


def test_the_page_opens_on_the_shipped_demo(sqlite_db):
    from engines.hoi.demo import DEMO_DIR

    if not DEMO_DIR.is_dir():
        pytest.skip("the shipped demo is written by `python -m engines.hoi demo`")
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    assert at.text_input(key="hoi-root").value == "shipped/hoi/demo" and not at.error
    assert "offline-i2v-scpe" in at.dataframe[0].value.index


def test_an_evaluation_and_scpe_are_started_from_the_page_as_jobs(registered):
    from engines.platform import jobqueue

    at = _open(registered)
    at.selectbox(key="hoi-eval-method").set_value("plain")
    at.button[[b.label for b in at.button].index("Start the evaluation")].click().run()
    assert not at.exception, at.exception
    assert any(s.value.startswith("Queued evaluation #") for s in at.success)
    [job] = jobqueue.list_jobs()
    assert job.kind == "hoi.evaluate" and job.params["method"] == "plain"
    assert job.params["benchmark"] == "datasets/hoi/bench"
    assert at.selectbox(key="hoi-scpe-i2v").value == "offline"  # runs on any machine, no GPU needed
    at.button[[b.label for b in at.button].index("Start SCPE")].click().run()
    assert any(s.value.startswith("Queued SCPE #") for s in at.success)
    assert {j.kind for j in jobqueue.list_jobs()} == {"hoi.evaluate", "hoi.scpe"}


def test_an_undeclared_key_variable_typed_in_the_run_tab_is_refused(registered):
    from engines.platform import jobqueue

    at = _open(registered)
    at.selectbox(key="hoi-eval-judge").set_value("openai")
    at.text_input(key="hoi-eval-model").set_value("m")
    at.text_input(key="hoi-eval-key").set_value("HAI_DATABASE_URL")
    at.button[[b.label for b in at.button].index("Start the evaluation")].click().run()
    assert not at.exception, at.exception
    assert any("judge_options.api_key_env: 'HAI_DATABASE_URL' is not a variable declared" in e.value for e in at.error)
    assert jobqueue.list_jobs() == []
