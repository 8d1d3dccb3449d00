"""One-time passwords someone else chose (an invitation, an admin's reset) stop working after
``invitation_hours``; only someone who knows the password learns that it expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from engines.platform import auth, login_throttle
from engines.platform.db import write_transaction
from engines.platform.models import User
from engines.platform.settings import reset_settings
from tests.apptest_driver import APP, page_as

START = datetime(2031, 5, 1, 9, 0, 0, tzinfo=UTC)
DAYS_3 = timedelta(hours=72)
EXPIRED = "This one-time password has expired. Ask for a new invitation (or an admin for a new password)."


@pytest.fixture
def clock(monkeypatch):
    """A settable 'now' for the accounts and the throttle, starting at 09:00."""
    now = {"t": START}
    for module in (auth, login_throttle):
        monkeypatch.setattr(module, "utcnow", lambda: now["t"])

    def set_to(t: datetime) -> None:
        now["t"] = t

    return set_to


def test_a_one_time_password_works_until_it_expires_and_then_says_so(any_db, clock):
    auth.create_user("ann", "one-time-9fz2", "annotator", must_change_password=True, expires_after=DAYS_3)
    clock(START + DAYS_3 - timedelta(seconds=1))
    assert auth.authenticate("ann", "one-time-9fz2").username == "ann"
    clock(START + DAYS_3)
    with pytest.raises(auth.PasswordExpired) as refused:
        auth.authenticate("ann", "one-time-9fz2", address="203.0.113.7")
    assert str(refused.value) == EXPIRED
    # The right password is no guess: nothing is counted against the account or the address.
    assert login_throttle.failure_count("ann") == 0


def test_a_wrong_password_for_an_expired_account_reveals_nothing_more(any_db, clock):
    auth.create_user("ann", "one-time-9fz2", "annotator", must_change_password=True, expires_after=DAYS_3)
    clock(START + DAYS_3 + timedelta(hours=1))
    with pytest.raises(auth.AuthError) as refused:
        auth.authenticate("ann", "a-guess-at-it")
    assert type(refused.value) is auth.AuthError and str(refused.value) == "Wrong username or password."
    assert login_throttle.failure_count("ann") == 1


def test_the_lifetime_is_the_invitation_hours_setting(monkeypatch):
    assert auth.one_time_password_lifetime() == DAYS_3  # the default
    monkeypatch.setenv("HAI_INVITATION_HOURS", "1.5")
    reset_settings()
    try:
        assert auth.one_time_password_lifetime() == timedelta(minutes=90)
    finally:
        monkeypatch.delenv("HAI_INVITATION_HOURS")
        reset_settings()


def test_a_password_one_chooses_oneself_does_not_expire(any_db, clock):
    auth.create_user("ann", "one-time-9fz2", "annotator", must_change_password=True, expires_after=DAYS_3)
    clock(START + timedelta(hours=1))
    auth.change_own_password("ann", "one-time-9fz2", "my-own-choice-7")
    clock(START + timedelta(days=400))
    assert auth.authenticate("ann", "my-own-choice-7").username == "ann"


def test_an_expired_password_cannot_be_changed_and_says_why(any_db, clock):
    auth.create_user("ann", "one-time-9fz2", "annotator", must_change_password=True, expires_after=DAYS_3)
    clock(START + DAYS_3)
    with pytest.raises(auth.PasswordExpired):
        auth.change_own_password("ann", "one-time-9fz2", "my-own-choice-7")


def test_an_admin_reset_expires_and_a_later_reset_without_expiry_does_not(any_db, clock):
    auth.create_user("ann", "my-own-choice-7", "annotator")
    auth.set_password("ann", "reset-by-admin-4", must_change=True, expires_after=DAYS_3)
    clock(START + DAYS_3)
    with pytest.raises(auth.PasswordExpired):
        auth.authenticate("ann", "reset-by-admin-4")
    auth.set_password("ann", "set-on-the-command-line")  # the operator's own, typed at the server
    clock(START + timedelta(days=400))
    assert auth.authenticate("ann", "set-on-the-command-line").username == "ann"


def test_the_first_admins_password_does_not_expire(any_db, clock):
    generated = auth.ensure_admin("admin", None)
    clock(START + timedelta(days=400))
    assert auth.authenticate("admin", generated).username == "admin"


def test_the_login_page_tells_the_holder_of_an_expired_password_to_ask_again(sqlite_db):
    auth.create_user("ann", "one-time-9fz2", "annotator", must_change_password=True, expires_after=DAYS_3)
    with write_transaction() as session:
        user = session.exec(select(User).where(User.username == "ann")).one()
        user.password_expires_at = datetime.now(UTC) - timedelta(minutes=1)
        session.add(user)
    at = page_as(APP, None)
    at.text_input(key="login-username").input("ann")
    at.text_input(key="login-password").input("wrong-guess-1")
    at.form_submit_button[0].click()
    at.run()
    assert [e.value for e in at.error] == ["Wrong username or password."]
    at.text_input(key="login-password").input("one-time-9fz2")
    at.form_submit_button[0].click()
    at.run()
    assert [e.value for e in at.error] == [EXPIRED]
    assert "hai_identity" not in at.session_state
