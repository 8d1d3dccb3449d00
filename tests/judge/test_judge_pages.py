"""The annotator's pages in AppTest: label, skip, undo, reload; adjudicate; create a project."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from engines.judge import labeling
from engines.judge.items import Item
from engines.platform import auth
from tests.apptest_driver import ROOT

LABEL = str(ROOT / "pages" / "judge_label.py")


def _items(n: int) -> list[Item]:
    return [Item(key=f"m/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m",
                 attack="direct", generation=f"generation {i}", test_case=f"secret attack prompt {i}") for i in range(n)]


def _open(page: str, role: str = "annotator") -> tuple[AppTest, auth.Identity]:
    identity = auth.create_user(f"{role}1", "a-test-passphrase", role)
    at = AppTest.from_file(page, default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(identity)
    return at.run(), identity


def _texts(at: AppTest) -> list[str]:
    return [t.value for t in at.text]


def test_an_annotator_labels_by_button_and_the_next_item_appears(sqlite_db):
    labeling.create_project("p1", _items(2), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, identity = _open(LABEL)
    assert not at.exception
    first = next(t for t in _texts(at) if t.startswith("generation"))
    assert not any("secret attack prompt" in t for t in _texts(at))  # the attack stays hidden
    at.button(key="judge-score-4").click().run()
    second = next(t for t in _texts(at) if t.startswith("generation"))
    assert second != first
    (stored,) = [lb for item in labeling.labelled_items("p1") for lb in item.labels]
    assert (stored.annotator_id, stored.score) == (f"user:{identity.user_id}", 4)
    assert stored.ms_spent is not None and stored.ms_spent >= 0


def test_undo_brings_the_last_item_back_and_skip_needs_a_reason(sqlite_db):
    labeling.create_project("p1", _items(3), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, _ = _open(LABEL)
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
    at, _ = _open(LABEL)
    assert not at.exception, at.exception
    assert any(t.startswith("gold generation") for t in _texts(at))
    assert "judge-label-skip" not in [b.key for b in at.button]
    assert "Qualification items cannot be skipped: score each as well as you can." in [c.value for c in at.caption]


def test_a_reload_shows_the_same_item(sqlite_db):
    labeling.create_project("p1", _items(3), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    at, identity = _open(LABEL)
    shown = next(t for t in _texts(at) if t.startswith("generation"))
    again = AppTest.from_file(LABEL, default_timeout=60)  # a new browser session of the same account
    again.session_state["hai_token"] = auth.start_login_session(identity)
    again.run()
    assert next(t for t in _texts(again) if t.startswith("generation")) == shown


def test_with_no_open_project_the_page_says_so(sqlite_db):
    at, _ = _open(LABEL)
    assert [i.value for i in at.info] == [
        "No labeling project is open. A researcher creates one under Admin → Labeling projects."]


def test_the_adjudicator_decides_a_disagreement(sqlite_db):
    labeling.create_project("p1", _items(1), labeling.ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0,
                                                                      quiz_size=0))
    for annotator, score in (("a", 1), ("b", 4)):
        shown = labeling.next_item("p1", annotator)
        labeling.submit_label(shown.claim_id, annotator, score)
    at, identity = _open(str(ROOT / "pages" / "judge_adjudicate.py"), role="researcher")
    assert [m.value for m in at.metric] == ["1", "4"]
    at.button(key="judge-decide-3").click().run()
    assert labeling.labelled_items("p1")[0].adjudicated == {"score": 3, "by": f"user:{identity.user_id}"}
    assert [s.value for s in at.success] == ["No disagreement waits for a decision."]


def test_a_project_is_created_from_the_demo_set_on_the_page(sqlite_db):
    at, _ = _open(str(ROOT / "pages" / "judge_projects.py"), role="researcher")
    at.text_input(key="judge-new-slug").input("wave-a")
    at.radio(key="judge-new-source").set_value("The synthetic demo set")
    at.number_input(key="judge-new-quiz").set_value(5)
    at.form_submit_button[0].click().run()
    assert not at.exception
    assert [s.value for s in at.success] == ["Created labeling project 'wave-a' with 1,120 items."]
    progress = labeling.progress("wave-a")
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
    assert labeling.progress("demo-labeling").items == 1120
    assert load_demo_data() == []  # once only
