"""Accounts: hashing, login, roles, login tokens, the first admin."""

from datetime import timedelta

import pytest
from sqlmodel import select

from engines.platform import auth
from engines.platform.db import read_session, write_transaction
from engines.platform.models import LoginSession, User, utcnow


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
    auth.create_user("ann", "password1", "annotator")
    with pytest.raises(auth.AuthError, match="already exists"):
        auth.create_user("ann", "password2", "researcher")


def test_first_admin_one_time_password_must_be_changed(sqlite_db):
    generated = auth.ensure_admin("admin", None)
    assert generated and len(generated) >= 12
    assert auth.ensure_admin("admin", None) is None  # only once
    identity = auth.authenticate("admin", generated)
    assert identity.role == "admin" and auth.must_change_password(identity.user_id)
    auth.set_password("admin", "a new password")
    assert not auth.must_change_password(identity.user_id)


def test_admin_password_from_settings_is_used(sqlite_db, monkeypatch, capsys):
    """`bootstrap` creates the first admin with HAI_ADMIN_USERNAME / HAI_ADMIN_PASSWORD (no one-time password)."""
    from engines.platform import settings
    from engines.platform.__main__ import main

    monkeypatch.setenv("HAI_ADMIN_USERNAME", "boss")
    monkeypatch.setenv("HAI_ADMIN_PASSWORD", "from-env-secret")
    settings.reset_settings()
    main(["--json", "bootstrap", "--no-demo"])
    assert "one_time_password" not in capsys.readouterr().out
    identity = auth.authenticate("boss", "from-env-secret")
    assert identity.role == "admin" and not auth.must_change_password(identity.user_id)


def test_login_token_survives_refresh_and_ends_on_logout_or_deactivation(sqlite_db):
    identity = auth.create_user("rhea", "correct horse", "researcher")
    token = auth.start_login_session(identity)
    assert auth.identity_from_token(token) == identity
    assert auth.identity_from_token("forged") is None
    auth.end_login_session(token)
    assert auth.identity_from_token(token) is None
    token = auth.start_login_session(identity)
    auth.create_user("boss", "boss-password", "admin")
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
    auth.create_user("boss", "boss-password", "admin")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", role="researcher")
    with pytest.raises(auth.AuthError, match="last active admin"):
        auth.update_user("boss", is_active=False)


def test_roles_can():
    admin = auth.Identity(1, "a", "admin")
    annotator = auth.Identity(2, "b", "annotator")
    assert admin.can("researcher") and annotator.can("annotator") and not annotator.can("researcher")


def test_oidc_email_maps_to_the_account_of_that_name(sqlite_db):
    auth.create_user("Rhea@Lab.org", "password-123", "researcher")
    assert auth.identity_for_username("rhea@lab.org").role == "researcher"
    assert auth.identity_for_username("someone@else.org") is None
    auth.create_user("boss", "boss-password", "admin")
    auth.update_user("Rhea@Lab.org", is_active=False)
    assert auth.identity_for_username("rhea@lab.org") is None
