"""Logins resist guessing and revoked access ends at once: throttling, password policy, idle
timeout, the current password to change it, verified single sign-on."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest

from engines.platform import auth, login_throttle
from engines.platform.db import write_transaction
from engines.platform.models import LoginFailure, User


def _fail(username: str, times: int, address: str = "") -> None:
    for _ in range(times):
        with pytest.raises(auth.AuthError) as refused:
            auth.authenticate(username, "not the password", address=address)
        assert str(refused.value) == "Wrong username or password."


@pytest.fixture
def clock(monkeypatch):
    """A settable 'now' for the throttle and the login tokens."""
    now = {"t": datetime(2031, 5, 1, 9, 0, 0, tzinfo=UTC)}

    def set_to(t: datetime) -> None:
        now["t"] = t

    for module in (auth, login_throttle):
        monkeypatch.setattr(module, "utcnow", lambda: now["t"])
    set_to.start = now["t"]
    return set_to


# --- Guessing --------------------------------------------------------------------------------


def test_five_wrong_passwords_lock_the_username_even_against_the_right_one(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    _fail("rhea", 5)
    with pytest.raises(auth.LockedOut) as refused:
        auth.authenticate("rhea", "correct horse")
    assert str(refused.value) == "Too many failed logins for this account. Try again in 15 minutes."


def test_the_lockout_ends_when_the_fifth_most_recent_failure_leaves_the_window(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    _fail("rhea", 5)  # all at 09:00
    clock(clock.start + timedelta(minutes=14, seconds=59))
    with pytest.raises(auth.LockedOut) as refused:
        auth.authenticate("rhea", "correct horse")
    assert str(refused.value).endswith("Try again in 1 minute.")
    clock(clock.start + timedelta(minutes=15))
    assert auth.authenticate("rhea", "correct horse").username == "rhea"


def test_refused_attempts_do_not_extend_the_lockout(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    _fail("rhea", 5)
    for minute in (1, 5, 10, 14):  # a guesser keeps trying during the lockout
        clock(clock.start + timedelta(minutes=minute))
        with pytest.raises(auth.LockedOut):
            auth.authenticate("rhea", "another guess")
    clock(clock.start + timedelta(minutes=15))
    assert auth.authenticate("rhea", "correct horse").username == "rhea"


def test_four_failures_then_success_forgets_the_failures(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    _fail("rhea", 4)
    auth.authenticate("rhea", "correct horse")
    _fail("rhea", 4)  # counting starts again: four more do not lock
    assert auth.authenticate("rhea", "correct horse").username == "rhea"


def test_unknown_usernames_lock_the_same_way_so_the_lockout_reveals_no_account(any_db, clock):
    _fail("nobody", 5)
    with pytest.raises(auth.LockedOut) as refused:
        auth.authenticate("nobody", "anything")
    assert str(refused.value) == "Too many failed logins for this account. Try again in 15 minutes."


def test_the_username_count_ignores_case_and_surrounding_spaces(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    for typed in ("rhea", "RHEA", " Rhea", "rheA ", "rhea"):
        _fail(typed, 1)
    with pytest.raises(auth.LockedOut):
        auth.authenticate("rhea", "correct horse")


def test_twenty_failures_from_one_address_lock_that_address_for_every_username(any_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    for i in range(20):
        _fail(f"spray-{i}", 1, address="203.0.113.7")  # one guess per name: no username locks
    with pytest.raises(auth.LockedOut) as refused:
        auth.authenticate("rhea", "correct horse", address="203.0.113.7")
    assert str(refused.value) == "Too many failed logins for this network address. Try again in 15 minutes."
    # Another address is not affected, and the account itself is not locked.
    assert auth.authenticate("rhea", "correct horse", address="198.51.100.2").username == "rhea"


def test_behind_a_trusted_proxy_one_guesser_does_not_lock_out_everyone(any_db, clock):
    """Every request reaches the app from the proxy (127.0.0.1); the failures count under the
    address the proxy names, so twenty guesses lock the guesser's address, not the proxy's."""
    auth.create_user("rhea", "correct horse", "researcher")

    def through_proxy(client: str, forwarded: str | None = None) -> str:
        return login_throttle.client_address("127.0.0.1", forwarded or client, trusted="127.0.0.1")

    for i in range(20):
        # The guesser also claims another address in front of its own; only the proxy's entry counts.
        _fail(f"spray-{i}", 1, address=through_proxy("203.0.113.7", f"198.51.100.{i}, 203.0.113.7"))
    with pytest.raises(auth.LockedOut):
        auth.authenticate("rhea", "correct horse", address=through_proxy("203.0.113.7"))
    assert auth.authenticate("rhea", "correct horse", address=through_proxy("198.51.100.2")).username == "rhea"
    assert login_throttle.failure_count(address="127.0.0.1") == 0


def test_the_page_counts_failures_under_the_client_address(monkeypatch):
    """pages/_access.client_address hands Streamlit's peer and X-Forwarded-For headers to the engine."""
    from types import SimpleNamespace

    from streamlit.runtime.context import StreamlitHeaders

    from engines.platform.settings import reset_settings
    from pages import _access as access

    def seen(peer: str | None, *forwarded: str) -> str:
        headers = StreamlitHeaders([("X-Forwarded-For", value) for value in forwarded])
        monkeypatch.setattr(access, "st", SimpleNamespace(context=SimpleNamespace(ip_address=peer, headers=headers)))
        return access.client_address()

    monkeypatch.setenv("HAI_TRUSTED_PROXIES", "10.0.0.0/8")
    reset_settings()
    try:
        assert seen("198.51.100.7", "203.0.113.9") == "198.51.100.7"  # not a proxy: its header is ignored
        assert seen("10.0.0.5", "6.6.6.6", "203.0.113.9") == "203.0.113.9"  # two headers: the last entry
        assert seen(None, "203.0.113.9") == ""  # outside a browser session, or a loopback peer
    finally:
        monkeypatch.delenv("HAI_TRUSTED_PROXIES")
        reset_settings()


def test_failures_outside_the_window_are_forgotten_in_the_database(any_db, clock):
    _fail("rhea", 3)
    clock(clock.start + timedelta(minutes=16))
    _fail("rhea", 1)  # recording a new failure sweeps the old ones
    assert login_throttle.failure_count("rhea") == 1
    from sqlmodel import select

    from engines.platform.db import read_session

    with read_session() as session:
        assert len(session.exec(select(LoginFailure)).all()) == 1


def test_the_password_hash_is_checked_outside_the_write_transaction(sqlite_db, monkeypatch):
    """A participant's write must not wait for a login's Argon2 check (0.1 s, 64 MiB): while the
    password is being verified, another thread's write transaction goes through."""
    auth.create_user("rhea", "correct horse", "researcher")
    real = auth._HASHER
    other_write_done = threading.Event()
    written_during_the_check = []

    class HasherWatchingWrites:
        def check_needs_rehash(self, stored):
            return real.check_needs_rehash(stored)

        def verify(self, stored, password):
            return verify_while_someone_writes(stored, password)

    def verify_while_someone_writes(stored, password):
        def write():
            with write_transaction() as session:
                session.add(LoginFailure(username="participant-write", address=""))
            other_write_done.set()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(timeout=10)  # with the write slot held by the login, this waits in vain
        written_during_the_check.append(other_write_done.is_set())
        return real.verify(stored, password)

    monkeypatch.setattr(auth, "_HASHER", HasherWatchingWrites())
    auth.authenticate("rhea", "correct horse")
    assert written_during_the_check == [True]


# --- Passwords -------------------------------------------------------------------------------


@pytest.mark.parametrize("password", ["password", "Password1", "iloveyou", "qwertyuiop", "PASSW0RD"])
def test_common_and_breached_passwords_are_refused_everywhere(sqlite_db, password):
    message = "This password is on a list of common or breached passwords; choose another."
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("rhea", password, "researcher")
    assert str(refused.value) == message
    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError) as refused:
        auth.set_password("rhea", password)
    assert str(refused.value) == message
    with pytest.raises(auth.AuthError) as refused:
        auth.change_own_password("rhea", "correct horse", password)
    assert str(refused.value) == message
    assert auth.authenticate("rhea", "correct horse").username == "rhea"  # nothing changed


def test_the_username_is_not_a_password(sqlite_db):
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("rhea.silva", "RHEA.SILVA", "researcher")
    assert str(refused.value) == "The password must not be the username."


def test_a_password_that_contains_the_username_is_refused_wherever_one_is_set(sqlite_db):
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("rita", "ritarita", "researcher")
    assert str(refused.value) == "The password must not contain the username."
    auth.create_user("rita", "correct horse", "researcher")
    for set_it in (lambda: auth.set_password("rita", "Rita-2031!", must_change=True),
                   lambda: auth.change_own_password("rita", "correct horse", "my-RITA-pass")):
        with pytest.raises(auth.AuthError) as refused:
            set_it()
        assert str(refused.value) == "The password must not contain the username."
    assert auth.authenticate("rita", "correct horse").username == "rita"  # nothing changed


def test_changing_ones_password_needs_the_current_one(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError) as refused:
        auth.change_own_password("rhea", "a stolen session", "attacker-chosen-1")
    assert str(refused.value) == "The current password is wrong."
    with pytest.raises(auth.AuthError):
        auth.authenticate("rhea", "attacker-chosen-1")
    auth.change_own_password("rhea", "correct horse", "battery staple")
    assert auth.authenticate("rhea", "battery staple").username == "rhea"


def test_wrong_current_passwords_count_toward_the_lockout(sqlite_db, clock):
    auth.create_user("rhea", "correct horse", "researcher")
    for _ in range(5):
        with pytest.raises(auth.AuthError):
            auth.change_own_password("rhea", "guess", "attacker-chosen-1")
    with pytest.raises(auth.LockedOut):
        auth.change_own_password("rhea", "correct horse", "battery staple")


def test_the_new_password_must_differ_from_the_current_one(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError) as refused:
        auth.change_own_password("rhea", "correct horse", "correct horse")
    assert str(refused.value) == "The new password must differ from the current one."


def test_an_admin_reset_password_must_be_changed_and_ends_every_login(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher")
    token = auth.start_login_session(identity)
    auth.set_password("rhea", "temporary-pass-9", must_change=True)
    assert auth.identity_from_token(token) is None
    assert auth.must_change_password(identity.user_id)


# --- Revoked access ------------------------------------------------------------------------------


def test_a_role_changed_in_the_database_is_the_role_of_the_next_run(sqlite_db):
    identity = auth.create_user("boss", "head-of-lab-pw", "admin")
    token = auth.start_login_session(identity)
    with write_transaction() as session:  # e.g. by hand, leaving the login row in place
        user = session.get(User, identity.user_id)
        user.role = "annotator"
        session.add(user)
    assert auth.identity_from_token(token).role == "annotator"


def test_lowering_a_role_ends_that_accounts_logins(sqlite_db):
    auth.create_user("root", "superuser-pw-1", "admin")
    identity = auth.create_user("boss", "head-of-lab-pw", "admin")
    token = auth.start_login_session(identity)
    auth.update_user("boss", role="annotator")
    assert auth.identity_from_token(token) is None


def test_an_idle_login_ends_after_the_idle_timeout(sqlite_db, clock):
    identity = auth.create_user("rhea", "correct horse", "researcher")
    token = auth.start_login_session(identity)
    clock(clock.start + timedelta(minutes=119))
    assert auth.identity_from_token(token) == identity  # in use: the idle clock restarts here
    clock(clock.start + timedelta(minutes=119 + 120))
    assert auth.identity_from_token(token) == identity
    clock(clock.start + timedelta(minutes=119 + 240, microseconds=1))
    assert auth.identity_from_token(token) is None


def test_the_idle_timeout_follows_the_setting(sqlite_db, clock, monkeypatch):
    from engines.platform import settings

    monkeypatch.setenv("HAI_LOGIN_IDLE_MINUTES", "10")
    settings.reset_settings()
    token = auth.start_login_session(auth.create_user("rhea", "correct horse", "researcher"))
    clock(clock.start + timedelta(minutes=10, seconds=1))
    assert auth.identity_from_token(token) is None


def test_expired_logins_are_swept_when_a_new_one_starts(sqlite_db, clock):
    from sqlmodel import select

    from engines.platform.db import read_session
    from engines.platform.models import LoginSession

    identity = auth.create_user("rhea", "correct horse", "researcher")
    auth.start_login_session(identity)
    clock(clock.start + timedelta(days=15))
    auth.start_login_session(identity)
    with read_session() as session:
        assert len(session.exec(select(LoginSession)).all()) == 1


# --- Single sign-on ------------------------------------------------------------------------------


def test_an_unverified_email_does_not_log_in(sqlite_db):
    auth.create_user("rhea@lab.org", "correct horse", "researcher")
    for verified in (False, None, "true"):  # only a JSON true counts
        with pytest.raises(auth.OidcRefused) as refused:
            auth.identity_for_oidc({"sub": "s-1", "email": "rhea@lab.org", "email_verified": verified})
        assert "has not verified the e-mail address 'rhea@lab.org'" in str(refused.value)


def test_the_first_login_binds_the_subject_and_later_ones_go_by_it(sqlite_db):
    auth.create_user("rhea@lab.org", "correct horse", "researcher")
    first = auth.identity_for_oidc({"sub": "s-1", "email": "rhea@lab.org", "email_verified": True})
    # The provider later reports another address for the same person: still the same account.
    again = auth.identity_for_oidc({"sub": "s-1", "email": "rhea.silva@lab.org", "email_verified": False})
    assert again == first
    # And someone else who now holds the address at the provider does not get the account.
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc({"sub": "s-2", "email": "rhea@lab.org", "email_verified": True})
    assert str(refused.value) == "The account 'rhea@lab.org' is bound to another sign-on identity."


def test_a_login_without_a_subject_is_refused(sqlite_db):
    auth.create_user("rhea@lab.org", "correct horse", "researcher")
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc({"email": "rhea@lab.org", "email_verified": True})
    assert "no subject id" in str(refused.value)
