"""Accounts: hashing, login, roles, login tokens, the first admin."""

from datetime import timedelta

import pytest
from sqlmodel import select

from engines.platform import auth
from engines.platform.db import read_session, write_transaction
from engines.platform.models import LoginSession, User, utcnow


@pytest.mark.production_argon2
def test_password_is_hashed_with_argon2_and_verifies(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    with read_session() as session:
        stored = session.exec(select(User)).one().password_hash
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    assert auth.authenticate("rhea", "correct horse").role == "researcher"
    with pytest.raises(auth.AuthError, match="Wrong username or password"):
        auth.authenticate("rhea", "wrong password")
    with pytest.raises(auth.AuthError, match="Wrong username or password"):
        auth.authenticate("nobody", "correct horse")


@pytest.mark.parametrize(("username", "password", "role", "match"), [
    ("x", "longenough", "researcher", "Username"),
    ("ok_name", "short", "researcher", "at least 8"),
    ("ok_name", "longenough", "superuser", "Unknown role"),
])
def test_bad_accounts_are_refused(sqlite_db, username, password, role, match):
    with pytest.raises(auth.AuthError, match=match):
        auth.create_user(username, password, role)
    assert auth.list_users() == []


def test_duplicate_username_refused(sqlite_db):
    auth.create_user("ann", "labeller-secret-1", "annotator")
    with pytest.raises(auth.AuthError, match="already exists"):
        auth.create_user("ann", "labeller-secret-2", "researcher")


def test_first_admin_one_time_password_must_be_changed(sqlite_db):
    generated = auth.ensure_admin("admin", None)
    assert generated and len(generated) >= 12
    assert auth.ensure_admin("admin", None) is None  # only once
    identity = auth.authenticate("admin", generated)
    assert identity.role == "admin" and auth.must_change_password(identity.user_id)
    auth.set_password("admin", "a new password")
    assert not auth.must_change_password(identity.user_id)


def test_admin_password_from_settings_is_used(sqlite_db, monkeypatch, capsys):
    """`bootstrap` creates the first admin with HAI_ADMIN_USERNAME / HAI_ADMIN_PASSWORD (nothing printed);
    like a generated one, that password must be changed at the first login."""
    from engines.platform import settings
    from engines.platform.__main__ import main

    monkeypatch.setenv("HAI_ADMIN_USERNAME", "boss")
    monkeypatch.setenv("HAI_ADMIN_PASSWORD", "from-env-secret")
    settings.reset_settings()
    main(["--json", "bootstrap", "--no-demo"])
    assert "one_time_password" not in capsys.readouterr().out
    identity = auth.authenticate("boss", "from-env-secret")
    assert identity.role == "admin" and auth.must_change_password(identity.user_id)


def test_login_token_survives_refresh_and_ends_on_logout_or_deactivation(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher")
    token = auth.start_login_session(identity)
    assert auth.identity_from_token(token) == identity
    assert auth.identity_from_token("forged") is None
    auth.end_login_session(token)
    assert auth.identity_from_token(token) is None
    token = auth.start_login_session(identity)
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.update_user("rhea", is_active=False)
    assert auth.identity_from_token(token) is None
    with pytest.raises(auth.AuthError):
        auth.authenticate("rhea", "correct horse")


def _account(username: str, role: str = "researcher") -> auth.Identity:
    """An account row written directly (no Argon2 hashing: these tests never check a password)."""
    with write_transaction() as session:
        user = User(username=username, password_hash="not-checked-here", role=role)
        session.add(user)
        session.flush()
        return auth.Identity(user.id, username, role)


def test_expired_login_token_no_longer_logs_in(any_db):
    identity = _account("rhea")
    token = auth.start_login_session(identity)
    assert auth.identity_from_token(token) == identity  # valid while it has not expired
    with write_transaction() as session:
        row = session.exec(select(LoginSession).where(LoginSession.user_id == identity.user_id)).one()
        row.expires_at = utcnow() - timedelta(minutes=1)
        session.add(row)
    assert auth.identity_from_token(token) is None


def test_changing_a_password_logs_out_every_session_of_that_account(any_db):
    identity = _account("rhea")
    laptop = auth.start_login_session(identity)
    phone = auth.start_login_session(identity)
    auth.set_password("rhea", "a new password")
    assert (auth.identity_from_token(laptop), auth.identity_from_token(phone)) == (None, None)


def test_changing_a_password_keeps_other_accounts_logged_in(any_db):
    rhea = _account("rhea")
    ann = _account("ann", "annotator")
    auth.start_login_session(rhea)
    ann_token = auth.start_login_session(ann)
    auth.set_password("rhea", "a new password")
    assert auth.identity_from_token(ann_token) == ann


def test_last_admin_cannot_be_demoted(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", role="researcher")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", is_active=False)


def test_roles_can():
    admin = auth.Identity(1, "a", "admin")
    annotator = auth.Identity(2, "b", "annotator")
    assert admin.can("researcher") and annotator.can("annotator") and not annotator.can("researcher")


def _claims(sub="sub-1", email="rhea@lab.org", verified=True):
    return {"sub": sub, "email": email, "email_verified": verified}


def test_oidc_verified_email_maps_to_the_account_of_that_name(sqlite_db):
    auth.create_user("Rhea@Lab.org", "password-123", "researcher")
    assert auth.identity_for_oidc(_claims()).role == "researcher"
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc(_claims(sub="sub-2", email="someone@else.org"))
    assert str(refused.value) == ("HAI Studio has no account named 'someone@else.org'. Ask an admin to create one "
                                  "(its username is your e-mail address).")
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.update_user("Rhea@Lab.org", is_active=False)
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc(_claims())
    assert str(refused.value) == "The account 'Rhea@Lab.org' is deactivated."


# --- Exact messages, boundaries and defaults a user sees -------------------------------------


@pytest.mark.parametrize("username", ["", None, "x", "a" * 65, "has space"])
def test_bad_username_is_refused_with_the_rule_spelled_out(sqlite_db, username):
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user(username, "longenough", "researcher")
    assert str(refused.value) == "Username must be 2-64 letters, digits or _.@+- characters."
    assert auth.list_users() == []


def test_unknown_role_message_lists_the_roles(sqlite_db):
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("ok_name", "longenough", "superuser")
    assert str(refused.value) == "Unknown role 'superuser'; choose one of admin, researcher, annotator."


def test_password_of_exactly_the_minimum_length_is_accepted(sqlite_db):
    assert auth.MIN_PASSWORD_LENGTH == 8
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("short", "1234567", "researcher")
    assert str(refused.value) == "Password must have at least 8 characters."
    identity = auth.create_user("exact", "x7#kq2pz", "researcher")
    assert auth.authenticate("exact", "x7#kq2pz") == identity


def test_set_password_length_boundary_and_messages(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError) as refused:
        auth.set_password("rhea", "1234567")
    assert str(refused.value) == "Password must have at least 8 characters."
    auth.set_password("rhea", "87654321")
    assert auth.authenticate("rhea", "87654321").username == "rhea"
    with pytest.raises(auth.AuthError) as refused:
        auth.set_password("ghost", "long enough")
    assert str(refused.value) == "No account named 'ghost'."


def test_create_user_defaults(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher")
    assert identity.display_name == ""
    assert not auth.must_change_password(identity.user_id)
    (user,) = auth.list_users()
    assert (user.username, user.role, user.display_name, user.must_change_password, user.is_active) == (
        "rhea", "researcher", "", False, True)


def test_display_name_and_forced_password_change_are_kept(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher", display_name="Rhea Silva",
                                must_change_password=True)
    assert identity == auth.Identity(identity.user_id, "rhea", "researcher", "Rhea Silva")
    assert auth.must_change_password(identity.user_id)
    assert auth.authenticate("rhea", "correct horse").display_name == "Rhea Silva"
    token = auth.start_login_session(identity)
    assert auth.identity_from_token(token).display_name == "Rhea Silva"
    assert auth.identity_for_oidc(_claims(email="RHEA")).display_name == "Rhea Silva"
    assert auth.list_users()[0].display_name == "Rhea Silva"


def test_wrong_password_and_inactive_account_get_the_same_exact_message(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    auth.create_user("boss", "head-of-lab-pw", "admin")
    for username, password in [("rhea", "wrong password"), ("nobody", "correct horse"), ("rhea", None)]:
        with pytest.raises(auth.AuthError) as refused:
            auth.authenticate(username, password)
        assert str(refused.value) == "Wrong username or password."
    auth.update_user("rhea", is_active=False)
    with pytest.raises(auth.AuthError) as refused:
        auth.authenticate("rhea", "correct horse")  # right password, but the account is off
    assert str(refused.value) == "Wrong username or password."


def test_login_records_the_time(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    assert auth.list_users()[0].last_login_at is None
    before = utcnow()
    auth.authenticate("rhea", "correct horse")
    after = utcnow()
    last = auth.list_users()[0].last_login_at
    assert last is not None
    assert before <= last <= after


@pytest.mark.production_argon2
def test_login_upgrades_a_hash_made_with_weaker_settings(sqlite_db):
    from argon2 import PasswordHasher

    weak = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash("old secret!")
    with write_transaction() as session:
        session.add(User(username="legacy", password_hash=weak, role="researcher"))
    assert auth.authenticate("legacy", "old secret!").username == "legacy"
    stored = auth.list_users()[0].password_hash
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert auth.authenticate("legacy", "old secret!").username == "legacy"  # still the same password


def test_users_are_listed_by_username(sqlite_db):
    for name in ["zoe", "amy", "mia"]:
        _account(name)
    assert [user.username for user in auth.list_users()] == ["amy", "mia", "zoe"]


# --- update_user ------------------------------------------------------------------------------


def test_update_user_changes_role_and_refuses_unknown(sqlite_db):
    auth.create_user("rhea", "correct horse", "researcher")
    auth.update_user("rhea", role="annotator")
    assert auth.authenticate("rhea", "correct horse").role == "annotator"
    with pytest.raises(auth.AuthError) as refused:
        auth.update_user("rhea", role="superuser")
    assert str(refused.value) == "Unknown role 'superuser'; choose one of admin, researcher, annotator."
    assert auth.list_users()[0].role == "annotator"
    with pytest.raises(auth.AuthError) as refused:
        auth.update_user("ghost", role="annotator")
    assert str(refused.value) == "No account named 'ghost'."


def test_last_admin_message_and_harmless_updates_allowed(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    with pytest.raises(auth.AuthError) as refused:
        auth.update_user("boss", role="annotator")
    assert str(refused.value) == "This is the last active admin account; keep it an active admin."
    auth.update_user("boss", role="admin")  # keeping the last admin an active admin is fine
    auth.update_user("boss", is_active=True)
    assert auth.authenticate("boss", "head-of-lab-pw").role == "admin"


def test_other_active_users_do_not_count_as_admins(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", role="researcher")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", is_active=False)


def test_inactive_admins_do_not_count(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.create_user("old_boss", "head-of-lab-pw", "admin")
    auth.update_user("old_boss", is_active=False)  # allowed: boss is still an active admin
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", is_active=False)
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", role="annotator")


def test_one_of_two_active_admins_can_be_demoted(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.create_user("deputy", "head-of-lab-pw", "admin")
    auth.update_user("deputy", role="researcher")
    assert auth.authenticate("deputy", "head-of-lab-pw").role == "researcher"
    auth.create_user("deputy2", "head-of-lab-pw", "admin")
    auth.update_user("deputy2", is_active=False)
    with pytest.raises(auth.AuthError):
        auth.authenticate("deputy2", "head-of-lab-pw")


def test_deactivation_logs_out_only_that_account(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    rhea = auth.create_user("rhea", "correct horse", "researcher")
    ann = auth.create_user("ann", "labeller-pw-9", "annotator")
    rhea_token = auth.start_login_session(rhea)
    ann_token = auth.start_login_session(ann)
    auth.update_user("ann", is_active=True)  # already active: nothing changes, still logged in
    assert auth.identity_from_token(ann_token) == ann
    auth.update_user("rhea", is_active=False)
    assert auth.identity_from_token(rhea_token) is None
    assert auth.identity_from_token(ann_token) == ann
    auth.update_user("rhea", is_active=True)  # re-activation does not revive the old login
    assert auth.identity_from_token(rhea_token) is None
    assert auth.authenticate("rhea", "correct horse") == rhea


# --- Tokens, one-time passwords, OIDC names --------------------------------------------------


def test_token_and_one_time_password_lengths(sqlite_db):
    token = auth.start_login_session(auth.create_user("rhea", "correct horse", "researcher"))
    assert len(token) == 43  # 32 random bytes, URL-safe base64 without padding
    generated = auth.ensure_admin("admin", None)
    assert len(generated) == 16  # 12 random bytes
    identity = auth.authenticate("admin", generated)
    assert identity.display_name == "Administrator"


def test_admin_from_settings_is_called_administrator(sqlite_db):
    assert auth.ensure_admin("boss", "from-env-secret") is None
    identity = auth.authenticate("boss", "from-env-secret")
    assert (identity.role, identity.display_name) == ("admin", "Administrator")
    assert auth.must_change_password(identity.user_id)


def test_login_lasts_fourteen_days_to_the_microsecond(sqlite_db, monkeypatch):
    from datetime import UTC, datetime

    from engines.platform import settings

    monkeypatch.setenv("HAI_LOGIN_IDLE_MINUTES", str(30 * 24 * 60))  # only the absolute limit here
    settings.reset_settings()
    start = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    identity = _account("rhea")
    monkeypatch.setattr(auth, "utcnow", lambda: start)
    token = auth.start_login_session(identity)
    monkeypatch.setattr(auth, "utcnow", lambda: start + timedelta(days=14))
    assert auth.identity_from_token(token) == identity  # the last valid instant
    monkeypatch.setattr(auth, "utcnow", lambda: start + timedelta(days=14, microseconds=1))
    assert auth.identity_from_token(token) is None


def test_token_of_an_account_switched_off_directly_no_longer_logs_in(sqlite_db):
    identity = _account("rhea")
    token = auth.start_login_session(identity)
    with write_transaction() as session:  # e.g. by hand in the database, leaving the login row
        user = session.get(User, identity.user_id)
        user.is_active = False
        session.add(user)
    assert auth.identity_from_token(token) is None


def test_empty_oidc_email_matches_no_account(sqlite_db):
    _account("xxxx")
    _account("XXXX_")
    for email in ("", None):
        with pytest.raises(auth.OidcRefused):
            auth.identity_for_oidc(_claims(email=email))
    assert auth.identity_for_oidc(_claims(email="XXXX")).username == "xxxx"


# --- The engine argument ----------------------------------------------------------------------



def test_every_function_uses_the_engine_it_is_given(other_engine):
    other = {"engine": other_engine}
    auth.create_user("boss", "head-of-lab-pw", "admin")  # the default database has an admin
    auth.create_user("rhea", "default-pw", "researcher")  # and its own rhea
    assert not auth.has_admin(**other)
    generated = auth.ensure_admin("root", None, **other)
    assert generated is not None
    assert auth.has_admin(**other)
    root = auth.authenticate("root", generated, **other)
    assert auth.must_change_password(root.user_id, **other)
    rhea = auth.create_user("rhea", "other-pw-1", "researcher", **other)
    auth.create_user("zed", "other-pw-1", "annotator", **other)
    assert [user.username for user in auth.list_users(**other)] == ["rhea", "root", "zed"]
    assert [user.username for user in auth.list_users()] == ["boss", "rhea"]
    auth.set_password("root", "changed-pw", **other)
    assert not auth.must_change_password(root.user_id, **other)
    assert auth.authenticate("root", "changed-pw", **other) == root
    token = auth.start_login_session(rhea, **other)
    assert auth.identity_from_token(token, **other) == rhea
    assert auth.identity_from_token(token) is None
    auth.end_login_session(token, **other)
    assert auth.identity_from_token(token, **other) is None
    auth.update_user("zed", role="researcher", **other)
    assert auth.identity_for_oidc(_claims(email="ZED"), **other).role == "researcher"
    with pytest.raises(auth.OidcRefused):
        auth.identity_for_oidc(_claims(sub="sub-2", email="zed"))
    auth.update_user("rhea", is_active=False, **other)
    assert auth.identity_from_token(auth.start_login_session(rhea, **other), **other) is None
    assert auth.authenticate("rhea", "default-pw").role == "researcher"  # untouched in the default
    with pytest.raises(auth.AuthError):
        auth.authenticate("root", "changed-pw")


def test_ensure_admin_on_an_engine_writes_there(other_engine):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    assert auth.ensure_admin("root", "superuser-pw-1", engine=other_engine) is None
    assert [u.username for u in auth.list_users(engine=other_engine)] == ["root"]
    assert [u.username for u in auth.list_users()] == ["boss"]


# --- Exact messages and edges the checks above leave open ---------------------------------------


def test_a_username_may_use_every_allowed_character(sqlite_db):
    identity = auth.create_user("Rhea.Silva+hai_2-x@lab.org", "correct horse", "researcher")
    assert identity.username == "Rhea.Silva+hai_2-x@lab.org"
    assert auth.create_user("ab", "correct horse", "researcher").username == "ab"  # 2 characters
    assert auth.create_user("c" * 64, "correct horse", "researcher").username == "c" * 64


def test_duplicate_username_message_names_the_account(sqlite_db):
    _account("ann")
    with pytest.raises(auth.AuthError) as refused:
        auth.create_user("ann", "labeller-secret-2", "researcher")
    assert str(refused.value) == "An account named 'ann' already exists."


def test_an_unreadable_stored_hash_is_a_wrong_password_and_counts_as_a_failure(sqlite_db):
    from engines.platform import login_throttle

    _account("rhea")  # its password_hash is no Argon2 hash at all
    with pytest.raises(auth.AuthError) as refused:
        auth.authenticate("rhea", "not-checked-here", address="203.0.113.7")
    assert str(refused.value) == "Wrong username or password."
    assert login_throttle.failure_count("rhea") == 1
    assert login_throttle.failure_count(address="203.0.113.7") == 1


def test_wrong_current_passwords_count_for_the_client_address(sqlite_db):
    from engines.platform import login_throttle

    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError):
        auth.change_own_password("rhea", "a guess", "attacker-chosen-1", address="203.0.113.7")
    assert login_throttle.failure_count(address="203.0.113.7") == 1


def test_a_changed_password_is_no_longer_one_to_change(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher", must_change_password=True)
    auth.change_own_password("rhea", "correct horse", "battery staple")
    assert not auth.must_change_password(identity.user_id)


def test_changing_ones_password_uses_the_engine_it_is_given(other_engine):
    auth.create_user("rhea", "default-pw", "researcher")
    rhea = auth.create_user("rhea", "other-pw-1", "researcher", engine=other_engine)
    assert auth.change_own_password("rhea", "other-pw-1", "other-pw-2", engine=other_engine) == rhea
    assert auth.authenticate("rhea", "other-pw-2", engine=other_engine) == rhea
    assert auth.authenticate("rhea", "default-pw").username == "rhea"  # untouched in the default


def test_setting_the_same_role_again_keeps_the_account_logged_in(sqlite_db):
    rhea = _account("rhea")
    token = auth.start_login_session(rhea)
    auth.update_user("rhea", role="researcher")
    assert auth.identity_from_token(token) == rhea


def test_raising_a_role_ends_the_accounts_logins(sqlite_db):
    rhea = _account("rhea")
    token = auth.start_login_session(rhea)
    auth.update_user("rhea", role="admin")
    assert auth.identity_from_token(token) is None
    assert auth.list_users()[0].role == "admin"


def test_a_login_ending_right_now_is_not_swept_by_a_new_one(sqlite_db, monkeypatch):
    """A login is valid up to and including its expiry instant (see the fourteen-day test), so starting
    another login at that very instant must keep it."""
    from datetime import UTC, datetime

    from engines.platform import settings

    monkeypatch.setenv("HAI_LOGIN_IDLE_MINUTES", str(30 * 24 * 60))
    settings.reset_settings()
    start = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    rhea = _account("rhea")
    monkeypatch.setattr(auth, "utcnow", lambda: start)
    first = auth.start_login_session(rhea)
    monkeypatch.setattr(auth, "utcnow", lambda: start + timedelta(days=14))
    auth.start_login_session(rhea)
    assert auth.identity_from_token(first) == rhea


@pytest.fixture
def idle_ten_minutes(sqlite_db, monkeypatch):
    """Logins end after 10 idle minutes; ``at(t)`` sets auth's clock to 12:00 + t."""
    from datetime import UTC, datetime

    from engines.platform import settings

    monkeypatch.setenv("HAI_LOGIN_IDLE_MINUTES", "10")
    settings.reset_settings()
    start = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)

    def at(offset: timedelta) -> None:
        monkeypatch.setattr(auth, "utcnow", lambda: start + offset)

    return at


def test_a_use_a_minute_and_a_second_in_restarts_the_idle_clock(idle_ten_minutes):
    rhea = _account("rhea")
    idle_ten_minutes(timedelta(0))
    token = auth.start_login_session(rhea)
    idle_ten_minutes(timedelta(minutes=1, seconds=1))
    assert auth.identity_from_token(token) == rhea  # recorded: more than a minute since the last record
    idle_ten_minutes(timedelta(minutes=11))  # 10 min after the start, 9:59 after the use
    assert auth.identity_from_token(token) == rhea


def test_a_use_exactly_a_minute_in_is_not_recorded(idle_ten_minutes):
    """The last activity is written only when more than a minute has passed since it was last written."""
    rhea = _account("rhea")
    idle_ten_minutes(timedelta(0))
    token = auth.start_login_session(rhea)
    idle_ten_minutes(timedelta(minutes=1))
    assert auth.identity_from_token(token) == rhea
    idle_ten_minutes(timedelta(minutes=10, microseconds=1))  # idle since the start's record
    assert auth.identity_from_token(token) is None


def test_ending_no_login_does_nothing(sqlite_db):
    rhea = _account("rhea")
    token = auth.start_login_session(rhea)
    auth.end_login_session(None)
    auth.end_login_session("")
    assert auth.identity_from_token(token) == rhea
    assert auth.identity_from_token("") is None


def test_an_unknown_account_has_no_password_to_change(sqlite_db):
    assert auth.must_change_password(12345) is False


def test_a_login_without_a_subject_gets_the_exact_message(sqlite_db):
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc({"email": "rhea@lab.org", "email_verified": True})
    assert str(refused.value) == "The sign-on provider sent no subject id; ask an admin to check its configuration."


def test_an_unverified_email_gets_the_exact_message(sqlite_db):
    _account("rhea@lab.org")
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc(_claims(verified=False))
    assert str(refused.value) == ("The sign-on provider has not verified the e-mail address 'rhea@lab.org'; "
                                  "verify it there, then log in again.")


def test_a_bound_account_logs_in_by_its_subject_even_with_an_unverified_email(sqlite_db):
    rhea = _account("rhea@lab.org")
    auth.identity_for_oidc(_claims())
    assert auth.identity_for_oidc({"sub": "sub-1"}) == rhea
    with read_session() as session:
        assert session.exec(select(User)).one().oidc_subject == "sub-1"


def test_a_bound_account_that_was_deactivated_is_refused_by_subject(sqlite_db):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    _account("rhea@lab.org")
    auth.identity_for_oidc(_claims())
    auth.update_user("rhea@lab.org", is_active=False)
    with pytest.raises(auth.OidcRefused) as refused:
        auth.identity_for_oidc({"sub": "sub-1"})
    assert str(refused.value) == "The account 'rhea@lab.org' is deactivated."


def test_the_username_is_not_a_new_password_either(sqlite_db):
    auth.create_user("rhea.silva", "correct horse", "researcher")
    with pytest.raises(auth.AuthError) as refused:
        auth.set_password("rhea.silva", "Rhea.Silva")
    assert str(refused.value) == "The password must not be the username."
    with pytest.raises(auth.AuthError) as refused:
        auth.change_own_password("rhea.silva", "correct horse", "RHEA.SILVA")
    assert str(refused.value) == "The password must not be the username."
    assert auth.authenticate("rhea.silva", "correct horse").username == "rhea.silva"  # nothing changed


def test_a_wrong_current_password_without_an_address_is_counted_without_one(sqlite_db):
    from engines.platform import login_throttle

    auth.create_user("rhea", "correct horse", "researcher")
    with pytest.raises(auth.AuthError):
        auth.change_own_password("rhea", "a guess", "attacker-chosen-1")
    assert login_throttle.failure_count(address="") == 1


def test_a_login_row_records_its_start_last_use_and_end(sqlite_db, monkeypatch):
    from datetime import UTC, datetime

    start = datetime(2030, 1, 1, 12, 0, 0, tzinfo=UTC)
    rhea = _account("rhea")
    monkeypatch.setattr(auth, "utcnow", lambda: start)
    auth.start_login_session(rhea)
    with read_session() as session:
        login = session.exec(select(LoginSession)).one()
    times = (login.created_at, login.last_seen_at, login.expires_at)
    assert [t.replace(tzinfo=UTC) for t in times] == [start, start, datetime(2030, 1, 15, 12, 0, 0, tzinfo=UTC)]


def test_use_through_another_engine_restarts_the_idle_clock_there(other_engine, idle_ten_minutes):
    rhea = auth.create_user("rhea", "other-pw-1", "researcher", engine=other_engine)
    idle_ten_minutes(timedelta(0))
    token = auth.start_login_session(rhea, engine=other_engine)
    idle_ten_minutes(timedelta(minutes=5))
    assert auth.identity_from_token(token, engine=other_engine) == rhea  # recorded in the other database
    idle_ten_minutes(timedelta(minutes=14))
    assert auth.identity_from_token(token, engine=other_engine) == rhea


def test_a_wrong_password_without_an_address_is_counted_without_one(sqlite_db):
    from engines.platform import login_throttle

    _account("rhea")
    with pytest.raises(auth.AuthError):
        auth.authenticate("rhea", "a guess")
    assert login_throttle.failure_count(address="") == 1


def test_the_lockout_is_read_from_the_engine_it_is_given(other_engine):
    auth.create_user("rhea", "other-pw-1", "researcher", engine=other_engine)
    for _ in range(5):
        with pytest.raises(auth.AuthError):
            auth.authenticate("rhea", "a guess", engine=other_engine)
    with pytest.raises(auth.LockedOut):
        auth.authenticate("rhea", "other-pw-1", engine=other_engine)


def test_a_login_on_another_engine_forgets_the_failures_there(other_engine):
    auth.create_user("rhea", "other-pw-1", "researcher", engine=other_engine)
    for _ in range(4):
        with pytest.raises(auth.AuthError):
            auth.authenticate("rhea", "a guess", engine=other_engine)
    auth.authenticate("rhea", "other-pw-1", engine=other_engine)
    for _ in range(4):  # four more: still not five in a row
        with pytest.raises(auth.AuthError):
            auth.authenticate("rhea", "a guess", engine=other_engine)
    assert auth.authenticate("rhea", "other-pw-1", engine=other_engine).username == "rhea"


def test_a_login_on_another_engine_returns_and_stamps_that_engines_account(other_engine):
    auth.create_user("boss", "head-of-lab-pw", "admin")  # user id 1 in the default database
    root = auth.create_user("root", "superuser-pw-1", "admin", engine=other_engine)  # user id 1 there
    assert auth.authenticate("root", "superuser-pw-1", engine=other_engine) == root
    assert auth.list_users(engine=other_engine)[0].last_login_at is not None
    assert auth.list_users()[0].last_login_at is None
