"""Every page renders without an exception for every role, and refuses roles it does not allow.

Pages are discovered from ``pages/`` (their ``PAGE`` declarations), so a new page is covered
without touching this file.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engines.platform import auth, study_admin
from engines.platform.navigation import discover_pages
from tests.apptest_driver import APP, ROOT, page_as

PAGES = discover_pages()
ROLES = [None, "annotator", "researcher", "admin"]
DENIED = ("You do not have access to this page.", "Please log in to see this page.")


@pytest.fixture
def seeded(sqlite_db):
    study_admin.create_study("demo", "demo_survey")
    return sqlite_db


def _errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error] + [w.value for w in at.warning]


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r or "anonymous")
@pytest.mark.parametrize("spec", PAGES, ids=lambda s: s.path.stem)
def test_page_checks_role_itself(seeded, spec, role):
    """Run the page file directly (as if reached outside the menu): it renders or refuses, never crashes."""
    participate = spec.group == "Participate"
    link = {"study": "demo", "PROLIFIC_PID": f"smoke-{role}"} if participate else None
    at = page_as(spec.path, role, query_params=link)
    assert not at.exception, at.exception
    if participate or "public" in spec.roles:
        return
    denied = any(msg in DENIED for msg in _errors(at))
    assert denied == (not spec.allows(role)), (spec.title, role, _errors(at))
    if role is None and denied:  # an anonymous visitor gets the login form on the page itself
        assert [b.label for b in at.get("form_submit_button")] == ["Log in"]


@pytest.mark.parametrize("role", ROLES, ids=lambda r: r or "anonymous")
def test_navigation_shows_only_allowed_pages(seeded, role):
    at = page_as(APP, role)
    assert not at.exception, at.exception
    for spec in PAGES:
        if spec.group == "Participate":
            continue
        if spec.allows(role) and "public" not in spec.roles:
            at.switch_page(str(spec.path)).run()
            assert not at.exception, (spec.title, at.exception)
            assert not any(msg in DENIED for msg in _errors(at)), (spec.title, role)
    if role is None:
        assert [b.label for b in at.get("form_submit_button")] == ["Log in"]


def test_participant_link_sees_only_the_study(seeded):
    at = page_as(APP, "admin", query_params={"study": "demo", "PROLIFIC_PID": "p-smoke"})
    assert not at.exception
    assert [t.value for t in at.title] == ["Rating AI writing suggestions (demo)"]
    # Even with an admin login in this session, study-link mode registers no other page.
    with pytest.raises(ValueError, match=r"Known pages: \['.*participate.py'\]"):
        at.switch_page(str(ROOT / "pages" / "accounts.py"))


@pytest.mark.parametrize(("params", "message"), [
    ({"study": "ghost", "PROLIFIC_PID": "x"}, "There is no study called 'ghost'"),
    ({"study": "demo"}, "no participant id"),
    ({"study": "demo", "PROLIFIC_PID": "bad id!"}, "not a valid id"),
    ({"study": ["ghost", "demo"], "PROLIFIC_PID": "x"}, "The link repeats the parameter 'study'"),
    ({"study": "demo", "PROLIFIC_PID": "x", "workerId": "W1", "assignmentId": "A1"}, "more than one panel"),
])
def test_bad_study_links_show_clear_errors(seeded, params, message):
    at = page_as(APP, None, query_params=params)
    assert not at.exception
    assert any(message in e for e in _errors(at)), _errors(at)


def test_one_time_password_forces_the_account_page(seeded):
    generated = auth.ensure_admin("admin", None)
    identity = auth.authenticate("admin", generated)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(identity)
    at.run()
    assert [t.value for t in at.title] == ["My account"]
    assert any("one-time password" in w.value for w in at.warning)



def test_changing_the_one_time_password_keeps_the_login_and_brings_the_menu(seeded):
    from pages._access import TOKEN_KEY

    generated = auth.ensure_admin("admin", None)
    identity = auth.authenticate("admin", generated)
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state[TOKEN_KEY] = auth.start_login_session(identity)
    at.run()
    at.text_input(key="account-current").input(generated)
    at.text_input(key="account-new").input("a-new-password-1")
    at.text_input(key="account-again").input("a-new-password-1")
    at.form_submit_button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success] == ["Password changed."]
    assert not any("one-time password" in w.value for w in at.warning)
    # The login survives a reload: the cookie the run wrote holds a live token of this account.
    token = at.session_state[TOKEN_KEY]
    assert auth.identity_from_token(token).username == "admin"
    # And the menu is back: another page opens.
    at.switch_page(str(ROOT / "pages" / "jobs.py")).run()
    assert not at.exception and [t.value for t in at.title] == ["Jobs"]

def test_a_long_paste_is_kept_and_refused_with_its_length(seeded):
    """A paste longer than the limit is not silently dropped by the widget: the page shows the limit,
    refuses the answer with its length, and the text stays in the box to be shortened."""
    from engines.platform.runtime import current_view, find_participant, submit
    from pages._step_form import widget_key
    from tests.apptest_driver import new_participant_app

    at = new_participant_app("demo", "long-paste")
    pid = find_participant("demo", "long-paste")
    view = current_view(pid)
    answers = {"Consent": {"agree": True}, "Instructions": {},
               "Comprehension": {"task": "Rate how helpful each suggestion is"}, "Rating": {"helpfulness": 4},
               "Attention": {"answer": "Disagree"}}
    while view.step.name != "Survey":
        submit(pid, view.step.index, answers[view.step.name])
        view = current_view(pid)
    at.run()
    index = view.step.index
    assert any(c.value == "At most 500 characters." for c in at.caption)
    text = "word " * 124  # 620 characters
    at.number_input(key=widget_key(index, "age")).set_value(30)
    at.radio(key=widget_key(index, "ai_use")).set_value("Daily")
    at.text_area(key=widget_key(index, "comments")).input(text)  # 500 > 200 characters: a text area
    next(b for b in at.form_submit_button if b.form_id == f"form-{index}").click()
    at.run()
    assert not at.exception, at.exception
    assert any("at most 500 characters (it has 620); your text is kept" in e.value for e in at.error)
    assert current_view(pid).step.index == index
    assert at.text_area(key=widget_key(index, "comments")).value == text



def test_a_stale_second_tab_is_told_its_step_was_answered_elsewhere(seeded):
    """Two tabs on the same link: the first answers the consent; the second, still showing it, is
    told on its next run that the step was answered elsewhere and its entry not saved."""
    link = {"study": "demo", "PROLIFIC_PID": "p-two-tabs"}
    first, second = page_as(APP, None, query_params=link), page_as(APP, None, query_params=link)
    assert [s.value for s in second.subheader] == ["Consent"]
    first.checkbox[0].check()
    first.button[0].click()
    first.run()
    assert [s.value for s in first.subheader] == ["Instructions"]
    assert not first.info  # the tab that answered moves on without a notice
    second.checkbox[0].check()
    second.button[0].click()
    second.run()
    assert [s.value for s in second.subheader] == ["Instructions"]
    assert any("already answered in another tab or window" in i.value for i in second.info)
    second.run()
    assert not second.info  # said once
