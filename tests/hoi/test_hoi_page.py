"""Research -> HOI-Edit in AppTest, on a three-item benchmark folder written by the browse tests and
registered as a data set: the leaderboard in the paper's layout, the item browser with each method's
edit, a folder the app does not own, and jobs started from the Run tab."""

from __future__ import annotations

import json
import shutil

import pytest

from engines.hoi.offline.demo import DEMO_DIR
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


def _open(root, tab: str = "Leaderboard"):
    at = page_as(PAGE, "researcher")
    at.text_input(key="hoi-root").set_value(str(root)).run()
    return _tab(at, tab)


def _tab(at, name: str):
    """Open a tab as a click on it does: only the open tab's content runs."""
    at.session_state["hoi-tab"] = name
    return at.run()


def test_leaderboard_and_item_browser(registered):
    at = _open(registered)
    assert not at.exception, at.exception
    board = at.dataframe[0].value
    assert list(board.index) == ["good"]
    assert round(float(board.loc["good", "L1 I"]), 4) == 0.7
    assert at.selectbox(key="hoi-split").value == "L1L2"
    assert not [c for c in at.caption if c.value.startswith("I 0.9000")]  # the item browser is not run
    _tab(at, "Item browser")
    assert not at.exception, at.exception
    assert not at.dataframe  # the leaderboard is not run
    captions = [c.value for c in at.caption]
    assert any(c.startswith("I 0.9000 · H 0.9000 · O 0.8000") for c in captions)  # item a.png by "good"
    assert "Not evaluated." in captions  # "plain" has no records
    assert any("Synthetic demo" in i.value for i in at.info)  # methods.json marks "good" offline


def test_sorting_by_score_puts_the_weaker_item_first(registered):
    at = _open(registered, "Item browser")
    at.selectbox(key="hoi-sort").set_value("score (low first)").run()
    assert not at.exception, at.exception
    assert any(c.startswith("I 0.5000") for c in (c.value for c in at.caption))  # b.png comes first


def test_arena_votes_are_rated(registered):
    votes = [Vote(float(t), "a.png", "good", "plain", "model_a").to_dict() for t in range(5)]
    (registered / "votes.jsonl").write_text("\n".join(json.dumps(v) for v in votes) + "\n")
    at = _open(registered, "Arena results")
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
    # A benchmark whose item has a box with a number written as text: the researcher reads the file, the
    # item's key and the field.
    name = "collected_annotations_bboxes_v7_L3_questions_scoring_final.json"
    items = json.loads((DEMO_DIR / name).read_text(encoding="utf-8"))
    key = next(iter(items))
    items[key]["object_bounding_box"] = [1, 2, "3", 4]
    (empty / name).write_text(json.dumps(items), encoding="utf-8")
    at.text_input(key="hoi-root").set_value("datasets/hoi/empty").run()
    assert at.error[0].value == (f"The benchmark does not read: {empty / name}, key {key!r}: object_bounding_box: "
                                 "must be a box [x1, y1, x2, y2] of four numbers (got [1, 2, '3', 4])")


def test_the_page_opens_on_the_shipped_demo(sqlite_db):
    from engines.hoi.offline.demo import DEMO_DIR

    if not DEMO_DIR.is_dir():
        pytest.skip("the shipped demo is written by `python -m engines.hoi demo`")
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    assert at.text_input(key="hoi-root").value == "shipped/hoi/demo" and not at.error
    assert "offline-i2v-scpe" in at.dataframe[0].value.index


def test_an_evaluation_and_scpe_are_started_from_the_page_as_jobs(registered):
    from engines.platform import jobqueue

    at = _open(registered, "Run")
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

    at = _open(registered, "Run")
    at.selectbox(key="hoi-eval-judge").set_value("openai")
    at.text_input(key="hoi-eval-model").set_value("m")
    at.text_input(key="hoi-eval-key").set_value("HAI_DATABASE_URL")
    at.button[[b.label for b in at.button].index("Start the evaluation")].click().run()
    assert not at.exception, at.exception
    assert any("judge_options.api_key_env: 'HAI_DATABASE_URL' is not a variable declared" in e.value for e in at.error)
    assert jobqueue.list_jobs() == []


def test_paging_through_items_reads_rates_and_encodes_nothing_twice(registered, monkeypatch):
    """What each click in the item browser costs: the folder is not read again, the other tabs' work
    (ratings, figures) is not done at all, and an image once encoded is never encoded again."""
    from PIL import Image

    from engines.hoi import browse, plots, ratings

    votes = [Vote(float(t), "a.png", "good", "plain", "model_a").to_dict() for t in range(5)]
    (registered / "votes.jsonl").write_text("\n".join(json.dumps(v) for v in votes) + "\n")
    calls = {"open_workspace": 0, "bootstrap": 0, "leaderboard_figure": 0, "save": 0}

    def counted(owner, name):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    counted(browse, "open_workspace")
    counted(ratings, "bootstrap")
    counted(plots, "leaderboard_figure")
    counted(Image.Image, "save")  # every encoding of an image, the page's or Streamlit's
    at = _open(registered, "Item browser")
    at.number_input(key="hoi-item").set_value(2).run()
    assert not at.exception, at.exception
    assert sum(len(image.value) for image in at.get("image")) >= 2  # the source and the edits
    browse.THUMBNAILS.warm([]).result()  # the next item's images, made in the background
    before = dict(calls)
    for position in (1, 2, 1, 2):
        at.number_input(key="hoi-item").set_value(position).run()
        assert not at.exception, at.exception
    browse.THUMBNAILS.warm([]).result()
    assert {name: calls[name] - before[name] for name in calls} == dict.fromkeys(calls, 0)


def test_the_next_items_images_are_made_before_it_is_asked_for(registered, monkeypatch):
    """While item 1 is shown, item 2's images are shrunk and encoded in the background, so paging to
    it encodes nothing in the page's own run."""
    import threading

    from engines.hoi import browse

    at = _open(registered, "Item browser")
    assert not at.exception, at.exception
    browse.THUMBNAILS.warm([]).result()
    encode = browse.ThumbnailCache._encode
    in_the_page = []

    def counted(image, item):
        if not threading.current_thread().name.startswith("hoi-thumbnails"):
            in_the_page.append(item)
        return encode(image, item)

    monkeypatch.setattr(browse.ThumbnailCache, "_encode", staticmethod(counted))
    at.number_input(key="hoi-item").set_value(2).run()
    assert not at.exception, at.exception
    assert sum(len(image.value) for image in at.get("image")) >= 2
    assert in_the_page == []
    browse.THUMBNAILS.warm([]).result()


def test_an_arena_study_is_created_closed_with_the_methods_chosen_and_lists_them(registered):
    from engines.hoi import arena
    from engines.platform import study_admin

    at = _open(registered, "Arena results")
    assert not at.exception, at.exception
    assert at.multiselect(key=f"hoi-arena-methods:{registered}").value == ["good", "plain"]
    at.text_input(key="hoi-arena-slug").set_value("arena-x")
    at.number_input(key="hoi-arena-rounds").set_value(3)
    at.button[[b.label for b in at.button].index("Create the study")].click().run()
    assert not at.exception, at.exception
    assert any("Created the arena study “arena-x”, closed" in s.value for s in at.success), [e.value for e in at.error]
    study = study_admin.get_study("arena-x")
    assert study.is_open is False
    assert study.config["constants"] == {"BENCHMARK": "datasets/hoi/bench", "METHODS": ["good", "plain"],
                                         "LABELS": {"good": "Good I2V", "plain": "plain"}, "ROUNDS": 3}
    # A method added to the folder afterwards is offered for the next study, not added to this one.
    shutil.copytree(registered / "plain_frames", registered / "trial-scpe_frames")
    at.run()
    assert "trial-scpe (trial-scpe)" in at.multiselect(key=f"hoi-arena-methods:{registered}").options
    assert arena.study_comparison("arena-x").labels == {"good": "Good I2V", "plain": "plain"}
    listed = at.dataframe[-1].value
    row = listed[listed["study"] == "arena-x"].iloc[0]
    assert not row["open"] and row["methods (name shown after the vote)"] == "good: Good I2V; plain: plain"
    # The chosen study's methods are shown above its ratings.
    at.selectbox(key="hoi-votes-source").set_value("arena-x").run()
    assert any("compares 2 methods on datasets/hoi/bench, fixed when it was created: Good I2V (good), plain"
               in c.value for c in at.caption), [c.value for c in at.caption]
