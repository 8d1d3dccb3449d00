"""The annotator's pages in AppTest: label, skip, undo, reload; adjudicate; create a project. Annotator
accounts are put on the project's team first (``members.add_members``): only the team labels."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from streamlit.testing.v1 import AppTest

from engines.judge import labeling, labeling_queue, members, review
from engines.judge.items import Item
from engines.platform import auth
from engines.platform.settings import get_settings
from tests.apptest_driver import ROOT

LABEL = str(ROOT / "pages" / "judge_label.py")


def _items(n: int) -> list[Item]:
    return [Item(key=f"m/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m",
                 attack="direct", generation=f"generation {i}", test_case=f"secret attack prompt {i}") for i in range(n)]


def _open(page: str, role: str = "annotator", team: str | None = None) -> tuple[AppTest, auth.Identity]:
    """``page`` run as a new account with ``role``, on the team of the project ``team`` (if given)."""
    identity = auth.create_user(f"{role}1", "a-test-passphrase", role)
    if team is not None:
        members.add_members(team, [identity.username])
    at = AppTest.from_file(page, default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(identity)
    return at.run(), identity


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_an_annotator_labels_by_button_and_the_next_item_appears(sqlite_db):
    labeling.create_project("p1", _items(2), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, identity = _open(LABEL, team="p1")
    assert not at.exception
    first = next(t for t in _texts(at) if t.startswith("generation"))
    assert not any("secret attack prompt" in t for t in _texts(at))  # the attack stays hidden
    at.button(key="judge-score-4").click().run()
    second = next(t for t in _texts(at) if t.startswith("generation"))
    assert second != first
    (stored,) = [lb for item in review.labelled_items("p1") for lb in item.labels]
    assert (stored.annotator_id, stored.score) == (f"user:{identity.user_id}", 4)
    assert stored.ms_spent is not None and stored.ms_spent >= 0


def test_undo_brings_the_last_item_back_and_skip_needs_a_reason(sqlite_db):
    labeling.create_project("p1", _items(3), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, _ = _open(LABEL, team="p1")
    first = next(t for t in _texts(at) if t.startswith("generation"))
    at.button(key="judge-score-2").click().run()
    at.button(key="judge-label-undo").click().run()
    assert next(t for t in _texts(at) if t.startswith("generation")) == first
    at.button(key="judge-label-skip").click().run()
    assert [e.value for e in at.error] == ["Please say why you skip this item."]
    at.text_input(key=next(k for k in at.session_state if str(k).startswith("judge-skip-reason-"))).input("empty")
    at.button(key="judge-label-skip").click().run()
    assert next(t for t in _texts(at) if t.startswith("generation")) != first


def test_a_qualification_item_offers_no_skip(sqlite_db):
    gold = [Item(key=f"m/direct/g{i}/0", behavior_id=f"g{i}", behavior="gold", victim_model="m", attack="direct",
                 generation=f"gold generation {i}", is_gold=True, gold_score=1) for i in range(2)]
    labeling.create_project("p1", _items(2) + gold, labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0,
                                                                              quiz_size=2, quiz_pass=0.5))
    at, _ = _open(LABEL, team="p1")
    assert not at.exception, at.exception
    assert any(t.startswith("gold generation") for t in _texts(at))
    assert "judge-label-skip" not in [b.key for b in at.button]
    assert "Qualification items cannot be skipped: score each as well as you can." in [c.value for c in at.caption]


def test_a_reload_shows_the_same_item(sqlite_db):
    labeling.create_project("p1", _items(3), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, identity = _open(LABEL, team="p1")
    shown = next(t for t in _texts(at) if t.startswith("generation"))
    again = AppTest.from_file(LABEL, default_timeout=60)  # a new browser session of the same account
    again.session_state["hai_token"] = auth.start_login_session(identity)
    again.run()
    assert next(t for t in _texts(again) if t.startswith("generation")) == shown


def test_with_no_open_project_the_page_says_so(sqlite_db):
    at, _ = _open(LABEL)
    assert [i.value for i in at.info] == [
        "No open labeling project has you on its team. A researcher creates projects and adds annotators under "
        "Admin → Labeling projects."]


def test_the_adjudicator_decides_a_disagreement(sqlite_db):
    labeling.create_project("p1", _items(1), labeling.ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0,
                                                                      quiz_size=0))
    for annotator, score in (("a", 1), ("b", 4)):
        shown = labeling_queue.next_item("p1", annotator)
        labeling_queue.submit_label(shown.claim_id, annotator, score)
    at, identity = _open(str(ROOT / "pages" / "judge_adjudicate.py"), role="researcher")
    assert [m.value for m in at.metric] == ["1", "4"]
    at.button(key="judge-decide-3").click().run()
    assert review.labelled_items("p1")[0].adjudicated == {"score": 3, "by": f"user:{identity.user_id}"}
    assert [s.value for s in at.success] == ["No disagreement waits for a decision."]


def test_a_project_is_created_from_the_demo_set_on_the_page(sqlite_db):
    at, _ = _open(str(ROOT / "pages" / "judge_projects.py"), role="researcher")
    at.text_input(key="judge-new-slug").input("wave-a")
    at.radio(key="judge-new-source").set_value("The synthetic demo set")
    at.number_input(key="judge-new-quiz").set_value(5)
    at.form_submit_button[0].click().run()
    assert not at.exception
    assert [s.value for s in at.success] == [
        "Created labeling project 'wave-a' with 1,120 items. Add annotators to its team below."]
    progress = review.progress("wave-a")
    assert (progress.items, progress.gold_items) == (1120, 40)
    assert labeling.get_project("wave-a").quiz_size == 5


def test_a_bad_project_name_is_refused_on_the_page(sqlite_db):
    at, _ = _open(str(ROOT / "pages" / "judge_projects.py"), role="researcher")
    at.text_input(key="judge-new-slug").input("Wave A")
    at.radio(key="judge-new-source").set_value("The synthetic demo set")
    at.form_submit_button[0].click().run()
    assert [e.value for e in at.error] == [
        "'Wave A' is not a valid project name: use lowercase letters, digits and dashes."]
    assert labeling.list_projects() == []


def test_make_run_loads_the_demo_labeling_project(sqlite_db):
    from engines.platform.demo import load_demo_data

    created = load_demo_data()
    assert "judge-labeling" in created and "labeling project demo-labeling" in created
    assert review.progress("demo-labeling").items == 1120
    assert load_demo_data() == []  # once only


def _jsonl(items: list[Item]) -> bytes:
    return "".join(item.model_dump_json() + "\n" for item in items).encode()


def _create_from_upload(name: str, data: bytes, slug: str = "wave-u") -> AppTest:
    at, _ = _open(str(ROOT / "pages" / "judge_projects.py"), role="researcher")
    at.text_input(key="judge-new-slug").input(slug)
    at.number_input(key="judge-new-quiz").set_value(0)
    at.file_uploader(key="judge-new-upload").upload(name, data)
    at.form_submit_button[0].click().run()
    assert not at.exception, at.exception
    return at


def test_an_uploaded_items_file_is_never_written_under_the_browsers_name(sqlite_db):
    escaped = Path(tempfile.gettempdir()) / f"escaped-{uuid.uuid4().hex}.jsonl"
    at = _create_from_upload(f"../{escaped.name}", _jsonl(_items(3)))
    try:
        assert not escaped.exists()  # the name was a label only, never joined to a folder
    finally:
        escaped.unlink(missing_ok=True)
    assert [s.value for s in at.success] == [
        "Created labeling project 'wave-u' with 3 items. Add annotators to its team below."]
    assert review.progress("wave-u").items == 3


def test_a_bad_line_of_an_uploaded_items_file_is_named_by_the_file_and_line(sqlite_db):
    at = _create_from_upload("my items.jsonl", _jsonl(_items(1)) + b'{"key": "x"}\n')
    (error,) = [e.value for e in at.error]
    assert error.startswith("my items.jsonl, line 2: behavior_id: "), error
    assert str(get_settings().data_dir) not in error
    assert labeling.list_projects() == []


def test_the_team_is_shown_and_added_to_on_the_projects_page(sqlite_db):
    labeling.create_project("p1", _items(1), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    auth.create_user("ann-a", "a-test-passphrase", "annotator")
    at, _ = _open(str(ROOT / "pages" / "judge_projects.py"), role="researcher")
    assert "Nobody is on this project's team yet: annotator accounts cannot label it until you add them." in [
        i.value for i in at.info]
    at.text_area(key="judge-team-names").input("ann-a")
    next(b for b in at.button if b.label == "Add to the team").click().run()
    assert [s.value for s in at.success] == ["Added ann-a to the team of 'p1'."]
    team = next(d.value for d in at.dataframe if "username" in d.value.columns)
    assert list(team["username"]) == ["ann-a"]
    overview = next(d.value for d in at.dataframe if "team" in d.value.columns)
    assert overview.to_dict("records") == [{"project": "p1", "team": "ann-a"}]
    at.button(key="judge-team-remove").click().run()
    assert members.members_of("p1") == []


def test_an_annotator_off_the_team_is_offered_no_project_even_by_link(sqlite_db):
    labeling.create_project("p1", _items(2), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    labeling.create_project("p2", _items(2), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, identity = _open(LABEL)  # on no team
    assert [i.value for i in at.info] == [
        "No open labeling project has you on its team. A researcher creates projects and adds annotators under "
        "Admin → Labeling projects."]
    assert not any(t.startswith("generation") for t in _texts(at))
    members.add_members("p2", [identity.username])
    linked = AppTest.from_file(LABEL, default_timeout=60)
    linked.session_state["hai_token"] = auth.start_login_session(identity)
    linked.query_params["project"] = "p1"
    linked.run()
    assert linked.selectbox(key="judge-label-project").options == ["p2 (p2)"]
    assert [w.value for w in linked.warning] == [
        "The link names a project you are not on the team of, or one that is closed; ask the researcher who "
        "invited you."]


def test_a_rationale_over_the_limit_is_kept_in_the_box_and_the_label_is_not_saved(sqlite_db):
    labeling.create_project("p1", _items(2), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, _ = _open(LABEL, team="p1")
    first = next(t for t in _texts(at) if t.startswith("generation"))
    box = at.text_input(key=next(k for k in at.session_state if str(k).startswith("judge-rationale-")))
    assert "2,000 characters" in box.label and box.max_chars in (None, 0)  # the limit is stated, not enforced by cutting
    long = "because " * 300  # 2,400 characters, as a paste would bring them
    box.input(long).run()
    assert [w.value for w in at.warning] == [
        "The rationale has 2,400 characters; shorten it to 2,000 before scoring."]
    at.button(key="judge-score-3").click().run()
    assert [e.value for e in at.error] == [
        "The rationale has 2,400 characters; at most 2,000 are allowed. Shorten it, then score the item again: "
        "nothing was saved."]
    assert [lb for item in review.labelled_items("p1") for lb in item.labels] == []  # not saved with it emptied
    assert next(t for t in _texts(at) if t.startswith("generation")) == first  # still the same item
    box = at.text_input(key=next(k for k in at.session_state if str(k).startswith("judge-rationale-")))
    assert box.value == long  # what was typed is still there to shorten
    box.input(long[:2000]).run()
    at.button(key="judge-score-3").click().run()
    (stored,) = [lb for item in review.labelled_items("p1") for lb in item.labels]
    assert (stored.score, stored.rationale) == (3, long[:2000])
