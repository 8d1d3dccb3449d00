"""Taking access away reaches a tab that is already open, on its next run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engines.platform import auth
from tests.apptest_driver import ROOT

ACCOUNTS = str(ROOT / "pages" / "accounts.py")
ACCOUNT = str(ROOT / "pages" / "account.py")


def _open_as_admin(page: str) -> tuple[AppTest, auth.Identity]:
    auth.create_user("root", "superuser-pw-1", "admin")  # so that "boss" is not the last admin
    boss = auth.create_user("boss", "head-of-lab-pw", "admin")
    at = AppTest.from_file(page, default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(boss)
    at.run()
    assert [t.value for t in at.title] == ["Accounts"], at.title
    return at, boss


def _refused(at: AppTest) -> bool:
    return "Accounts" not in [t.value for t in at.title] and (
        any("do not have access" in e.value for e in at.error) or any("Please log in" in w.value for w in at.warning))


@pytest.mark.parametrize("revoke", [
    lambda: auth.update_user("boss", role="annotator"),
    lambda: auth.update_user("boss", is_active=False),
    lambda: auth.set_password("boss", "reset-by-root-1", must_change=True),
])
def test_an_open_admin_tab_loses_the_accounts_page_when_access_is_taken_away(sqlite_db, revoke):
    at, _boss = _open_as_admin(ACCOUNTS)
    revoke()
    at.run()
    assert not at.exception
    assert _refused(at)


def test_a_logout_in_another_tab_ends_this_one(sqlite_db):
    at, boss = _open_as_admin(ACCOUNTS)
    auth.end_login_session(at.session_state["hai_token"])
    at.run()
    assert _refused(at)


def test_a_role_change_shows_that_their_logins_were_ended(sqlite_db):
    at, _boss = _open_as_admin(ACCOUNTS)
    rhea = auth.create_user("rhea", "correct horse", "researcher")
    token = auth.start_login_session(rhea)
    at.run()
    at.selectbox(key="edit-account").select("rhea")
    at.run()
    at.selectbox(key="edit-role").select("annotator")
    at.button(key="save-role").click()
    at.run()
    assert [s.value for s in at.success] == ["'rhea' is now annotator; their open logins were ended."]
    assert auth.identity_from_token(token) is None


def test_the_account_page_asks_for_the_current_password(sqlite_db):
    rhea = auth.create_user("rhea", "correct horse", "researcher")
    at = AppTest.from_file(ACCOUNT, default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(rhea)
    at.run()
    at.text_input(key="account-current").input("not my password")
    at.text_input(key="account-new").input("battery staple")
    at.text_input(key="account-again").input("battery staple")
    at.form_submit_button[0].click()
    at.run()
    assert [e.value for e in at.error] == ["The current password is wrong."]
    assert auth.authenticate("rhea", "correct horse").username == "rhea"


def test_the_login_form_says_when_the_account_is_locked(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    at = AppTest.from_file(str(ROOT / "pages" / "login.py"), default_timeout=60).run()
    for _ in range(5):
        at.text_input(key="login-username").input("rhea")
        at.text_input(key="login-password").input("a wrong guess")
        at.form_submit_button[0].click()
        at.run()
    at.text_input(key="login-password").input("correct horse")
    at.form_submit_button[0].click()
    at.run()
    assert [e.value for e in at.error] == ["Too many failed logins for this account. Try again in 15 minutes."]
    assert "hai_token" not in at.session_state


def test_the_login_cookie_is_strict_and_secure_over_https():
    from pages._access import cookie_assignment

    script = cookie_assignment("tok123", 1209600)
    assert script == ('document.cookie = "hai_session=tok123; path=/; max-age=1209600; SameSite=Strict" + '
                      "(location.protocol === 'https:' ? '; Secure' : '');")


def test_a_participant_sees_a_plain_message_not_a_traceback(demo_study, monkeypatch, caplog):
    from engines.platform import runtime
    from tests.apptest_driver import new_participant_app

    def broken(_participant_id):
        raise ValueError("bad widget value at /srv/hai/engines/platform/runtime.py line 312")

    monkeypatch.setattr(runtime, "current_view", broken)
    at = new_participant_app("demo", "p-broken")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "Something went wrong on our side. Your answers so far are saved: reload the page to go on. "
        "If it happens again, please contact the researcher through your panel."]
    assert "/srv/hai" in caplog.text  # the details are in the server's log
