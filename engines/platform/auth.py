"""Accounts for researchers, annotators and admins; participants never log in.

Passwords are hashed with Argon2id through ``argon2-cffi``. A browser login is a random token
kept in a cookie; the database stores only its SHA-256, so a leaked database cannot log anyone in.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import delete, select

from engines.platform.db import read_session, write_transaction
from engines.platform.models import LoginSession, Role, User, utcnow

_HASHER = PasswordHasher()
_USERNAME = re.compile(r"^[A-Za-z0-9_.@+\-]{2,64}$")  # e-mail addresses allowed, for OIDC
MIN_PASSWORD_LENGTH = 8
LOGIN_DAYS = 14


class AuthError(ValueError):
    """Bad credentials or an invalid account operation; the message is safe to show."""


@dataclass(frozen=True)
class Identity:
    """The logged-in account, as pages see it (no ORM object leaks into session state)."""

    user_id: int
    username: str
    role: str
    display_name: str = ""

    def can(self, *roles: str) -> bool:
        return self.role == Role.ADMIN or self.role in roles


def _identity(user: User) -> Identity:
    return Identity(user.id, user.username, user.role, user.display_name)


def hash_password(password: str) -> str:
    return _HASHER.hash(password)


def _check_new_account(username: str, password: str, role: str) -> None:
    if not _USERNAME.match(username or ""):
        raise AuthError("Username must be 2-64 letters, digits or _.@+- characters.")
    if role not in Role.ALL:
        raise AuthError(f"Unknown role {role!r}; choose one of {', '.join(Role.ALL)}.")
    if len(password or "") < MIN_PASSWORD_LENGTH:
        raise AuthError(f"Password must have at least {MIN_PASSWORD_LENGTH} characters.")


def create_user(username: str, password: str, role: str, *, display_name: str = "",
                must_change_password: bool = False, engine: Engine | None = None) -> Identity:
    _check_new_account(username, password, role)
    with write_transaction(engine) as session:
        if session.exec(select(User).where(User.username == username)).first() is not None:
            raise AuthError(f"An account named {username!r} already exists.")
        user = User(username=username, password_hash=hash_password(password), role=role,
                    display_name=display_name, must_change_password=must_change_password)
        session.add(user)
        session.flush()
        return _identity(user)


def authenticate(username: str, password: str, *, engine: Engine | None = None) -> Identity:
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        # Verify against a dummy hash for unknown users too, so timing does not reveal accounts.
        stored = user.password_hash if user is not None else _DUMMY_HASH
        try:
            _HASHER.verify(stored, password or "")
        except (VerificationError, InvalidHashError):
            raise AuthError("Wrong username or password.") from None
        if user is None or not user.is_active:
            raise AuthError("Wrong username or password.")
        if _HASHER.check_needs_rehash(user.password_hash):
            user.password_hash = hash_password(password)
        user.last_login_at = utcnow()
        session.add(user)
        return _identity(user)


def set_password(username: str, password: str, *, engine: Engine | None = None) -> None:
    if len(password or "") < MIN_PASSWORD_LENGTH:
        raise AuthError(f"Password must have at least {MIN_PASSWORD_LENGTH} characters.")
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise AuthError(f"No account named {username!r}.")
        user.password_hash = hash_password(password)
        user.must_change_password = False
        session.add(user)
        session.exec(delete(LoginSession).where(LoginSession.user_id == user.id))


def update_user(username: str, *, role: str | None = None, is_active: bool | None = None,
                engine: Engine | None = None) -> None:
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise AuthError(f"No account named {username!r}.")
        demoting = (role is not None and role != Role.ADMIN) or is_active is False
        if user.role == Role.ADMIN and demoting:
            admins = session.exec(select(User).where(User.role == Role.ADMIN, User.is_active == True)).all()  # noqa: E712
            if len(admins) <= 1:
                raise AuthError("This is the last active admin account; keep it an active admin.")
        if role is not None:
            if role not in Role.ALL:
                raise AuthError(f"Unknown role {role!r}; choose one of {', '.join(Role.ALL)}.")
            user.role = role
        if is_active is not None:
            user.is_active = is_active
            if not is_active:
                session.exec(delete(LoginSession).where(LoginSession.user_id == user.id))
        session.add(user)


def list_users(*, engine: Engine | None = None) -> list[User]:
    with read_session(engine) as session:
        return list(session.exec(select(User).order_by(User.username)).all())


def has_admin(*, engine: Engine | None = None) -> bool:
    with read_session(engine) as session:
        return session.exec(select(User.id).where(User.role == Role.ADMIN)).first() is not None


def ensure_admin(username: str, password: str | None, *, engine: Engine | None = None) -> str | None:
    """Create the first admin when none exists.

    With ``password`` (from ``HAI_ADMIN_PASSWORD``) that password is used. Without it a one-time
    password is generated, returned for the caller to print, and must be changed at first login.
    Returns the generated password, or None when nothing was generated.
    """
    if has_admin(engine=engine):
        return None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    create_user(username, password, Role.ADMIN, display_name="Administrator",
                must_change_password=generated is not None, engine=engine)
    return generated


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start_login_session(identity: Identity, *, engine: Engine | None = None) -> str:
    """Issue a browser login token (to put in a cookie)."""
    token = secrets.token_urlsafe(32)
    with write_transaction(engine) as session:
        session.add(LoginSession(token_hash=_token_hash(token), user_id=identity.user_id,
                                 expires_at=utcnow() + timedelta(days=LOGIN_DAYS)))
    return token


def identity_from_token(token: str | None, *, engine: Engine | None = None) -> Identity | None:
    if not token:
        return None
    with read_session(engine) as session:
        row = session.exec(select(LoginSession).where(LoginSession.token_hash == _token_hash(token))).first()
        if row is None or row.expires_at < utcnow():
            return None
        user = session.get(User, row.user_id)
        if user is None or not user.is_active:
            return None
        return _identity(user)


def end_login_session(token: str | None, *, engine: Engine | None = None) -> None:
    if not token:
        return
    with write_transaction(engine) as session:
        session.exec(delete(LoginSession).where(LoginSession.token_hash == _token_hash(token)))


def identity_for_username(username: str, *, engine: Engine | None = None) -> Identity | None:
    """The active account named ``username`` (case-insensitive), for identities vouched for by OIDC."""
    with read_session(engine) as session:
        user = session.exec(select(User).where(func.lower(User.username) == (username or "").lower(),
                                               User.is_active == True)).first()  # noqa: E712
        return _identity(user) if user is not None else None


def must_change_password(user_id: int, *, engine: Engine | None = None) -> bool:
    with read_session(engine) as session:
        user = session.get(User, user_id)
        return bool(user and user.must_change_password)


_DUMMY_HASH = _HASHER.hash("not-a-real-password")
