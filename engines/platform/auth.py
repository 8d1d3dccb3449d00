"""Accounts for researchers, annotators and admins; participants never log in.

Passwords are hashed with Argon2id through ``argon2-cffi``. A browser login is a random token
kept in a cookie; the database stores only its SHA-256, so a leaked database cannot log anyone in.
Every page run checks the token, the account's state and its role against the database
(``identity_from_token``), so a logout, a deactivation or a lowered role reaches open tabs at
once. Failed logins are throttled (``login_throttle``), and new passwords must pass
``password_policy``. A one-time password that someone else chose (an invitation, an admin's reset)
stops working after ``invitation_hours`` unless its owner has replaced it.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import delete, select, update

from engines.platform import login_throttle
from engines.platform.db import read_session, write_transaction
from engines.platform.models import LoginSession, Role, User, utcnow
from engines.platform.password_policy import MIN_PASSWORD_LENGTH, WeakPassword, check_new_password  # noqa: F401 (re-exported)
from engines.platform.settings import get_settings

_HASHER = PasswordHasher()
_USERNAME = re.compile(r"^[A-Za-z0-9_.@+\-]{2,64}$")  # e-mail addresses allowed, for OIDC
LOGIN_DAYS = 14
SEEN_EVERY = timedelta(minutes=1)  # a login's last activity is written at most this often



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


def _checked_password(password: str | None, username: str) -> str:
    try:
        return check_new_password(password, username)
    except WeakPassword as exc:
        raise AuthError(str(exc)) from None


def check_username(username: str) -> str:
    """The username, if it can name an account.

    Raises:
        AuthError: it cannot (the message names it and says what a username is).
    """
    if not _USERNAME.match(username or ""):
        raise AuthError("Username must be 2-64 letters, digits or _.@+- characters.")
    return username


def _check_new_account(username: str, password: str, role: str) -> None:
    check_username(username)
    if role not in Role.ALL:
        raise AuthError(f"Unknown role {role!r}; choose one of {', '.join(Role.ALL)}.")
    _checked_password(password, username)


def one_time_password_lifetime() -> timedelta:
    """How long a one-time password someone else chose stays valid (``invitation_hours``)."""
    return timedelta(hours=get_settings().invitation_hours)


def _expiry(expires_after: timedelta | None) -> datetime | None:
    return None if expires_after is None else utcnow() + expires_after


def create_user(username: str, password: str, role: str, *, display_name: str = "",
                must_change_password: bool = False, expires_after: timedelta | None = None,
                engine: Engine | None = None) -> Identity:
    """A new account. ``expires_after``: the password is a one-time one that stops working then
    (``one_time_password_lifetime()`` for invitations); None: it does not expire."""
    _check_new_account(username, password, role)
    with write_transaction(engine) as session:
        if session.exec(select(User).where(User.username == username)).first() is not None:
            raise AuthError(f"An account named {username!r} already exists.")
        user = User(username=username, password_hash=hash_password(password), role=role,
                    display_name=display_name, must_change_password=must_change_password,
                    password_expires_at=_expiry(expires_after))
        session.add(user)
        session.flush()
        return _identity(user)


class LockedOut(AuthError):
    """Too many failed logins: attempts are refused for a while, the password unchecked."""


class PasswordExpired(AuthError):
    """The right one-time password, after it expired. Only someone who knows the password learns
    this; anyone else gets the wrong-password message."""

    def __init__(self) -> None:
        super().__init__("This one-time password has expired. Ask for a new invitation (or an admin for a new "
                         "password).")


def authenticate(username: str, password: str, *, address: str = "", engine: Engine | None = None) -> Identity:
    """The account whose password this is; AuthError (or LockedOut) otherwise.

    ``address`` is the client's network address, for the per-address failure count. The Argon2
    check (0.1 s, 64 MiB) runs outside any transaction, so a guesser never holds the write slot
    that participants' answers need; only the outcome is written, in a short transaction.
    """
    locked = login_throttle.lockout(username, address, engine=engine)
    if locked is not None:
        raise LockedOut(locked.message())
    with read_session(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        found = (user.id, user.password_hash, user.is_active, user.password_expires_at) if user is not None else None
    # Verify against a dummy hash for unknown users too, so timing does not reveal accounts.
    stored = found[1] if found is not None else _DUMMY_HASH
    try:
        _HASHER.verify(stored, password or "")
        if found is None or not found[2]:
            raise VerificationError
    except (VerificationError, InvalidHashError):
        login_throttle.record_failure(username, address, engine=engine)
        raise AuthError("Wrong username or password.") from None
    if found[3] is not None and found[3] <= utcnow():
        # Checked after the password, so the expiry tells nothing to someone who does not know it.
        raise PasswordExpired
    login_throttle.clear_failures(username, engine=engine)
    with write_transaction(engine) as session:
        user = session.get(User, found[0])
        if _HASHER.check_needs_rehash(user.password_hash):
            user.password_hash = hash_password(password)
        user.last_login_at = utcnow()
        session.add(user)
        return _identity(user)


def set_password(username: str, password: str, *, must_change: bool = False, expires_after: timedelta | None = None,
                 engine: Engine | None = None) -> None:
    """Set an account's password and end all its logins.

    ``must_change``: the password is a temporary one (an admin's reset), to be changed at the
    next login. ``expires_after``: it stops working then; None: it does not expire.
    """
    _checked_password(password, username)
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise AuthError(f"No account named {username!r}.")
        user.password_hash = hash_password(password)
        user.must_change_password = must_change
        user.password_expires_at = _expiry(expires_after)
        session.add(user)
        session.exec(delete(LoginSession).where(LoginSession.user_id == user.id))


def change_own_password(username: str, current: str, new: str, *, address: str = "",
                        engine: Engine | None = None) -> Identity:
    """A logged-in user changes their password: the current one is asked for, so that a stolen
    session cannot become a permanent takeover. Wrong current passwords count as failed logins."""
    try:
        identity = authenticate(username, current, address=address, engine=engine)
    except (LockedOut, PasswordExpired):
        raise
    except AuthError:
        raise AuthError("The current password is wrong.") from None
    if current == new:
        raise AuthError("The new password must differ from the current one.")
    set_password(username, new, engine=engine)
    return identity


def update_user(username: str, *, role: str | None = None, is_active: bool | None = None,
                engine: Engine | None = None) -> None:
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.username == username)).first()
        if user is None:
            raise AuthError(f"No account named {username!r}.")
        user_role_before = user.role
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
        if (role is not None and role != user_role_before) or is_active is False:
            # Open tabs would lose the old rights on their next run anyway; ending the logins makes
            # the person log in again under the new ones.
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
    password is generated, returned for the caller to print. Either way it must be changed at
    first login: a password kept in an environment file is no better than a printed one.
    Returns the generated password, or None when nothing was generated.
    """
    if has_admin(engine=engine):
        return None
    generated = None
    if not password:
        generated = password = secrets.token_urlsafe(12)
    create_user(username, password, Role.ADMIN, display_name="Administrator", must_change_password=True,
                engine=engine)
    return generated


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def start_login_session(identity: Identity, *, engine: Engine | None = None) -> str:
    """Issue a browser login token (to put in a cookie); expired logins are swept on the way."""
    token = secrets.token_urlsafe(32)
    now = utcnow()
    with write_transaction(engine) as session:
        session.exec(delete(LoginSession).where(LoginSession.expires_at < now))
        session.add(LoginSession(token_hash=_token_hash(token), user_id=identity.user_id, created_at=now,
                                 last_seen_at=now, expires_at=now + timedelta(days=LOGIN_DAYS)))
    return token


def identity_from_token(token: str | None, *, engine: Engine | None = None) -> Identity | None:
    """The account a login token stands for, checked now: None once the login was ended, expired,
    sat idle longer than ``login_idle_minutes``, or the account was deactivated. The role is the
    account's current one. One indexed query; the last activity is written at most once a minute."""
    if not token:
        return None
    now = utcnow()
    with read_session(engine) as session:
        row = session.exec(select(LoginSession, User).join(User, User.id == LoginSession.user_id)
                           .where(LoginSession.token_hash == _token_hash(token))).first()
    if row is None:
        return None
    login, user = row
    idle = timedelta(minutes=get_settings().login_idle_minutes)
    if login.expires_at < now or login.last_seen_at < now - idle or not user.is_active:
        return None
    if login.last_seen_at < now - SEEN_EVERY:
        with write_transaction(engine) as session:
            session.exec(update(LoginSession).where(LoginSession.id == login.id).values(last_seen_at=now))
    return _identity(user)


def end_login_session(token: str | None, *, engine: Engine | None = None) -> None:
    if not token:
        return
    with write_transaction(engine) as session:
        session.exec(delete(LoginSession).where(LoginSession.token_hash == _token_hash(token)))


class OidcRefused(AuthError):
    """The provider vouched for someone HAI Studio will not log in; the message says why."""


def identity_for_oidc(claims: dict, *, engine: Engine | None = None) -> Identity:
    """The account an OpenID Connect login (the ID token's ``claims``) stands for.

    The first login binds the active account whose username is the verified e-mail address to the
    provider's subject id (``sub``); later logins go by the subject alone, so an address that
    changes hands at the provider does not carry the account with it.

    Raises:
        OidcRefused: the e-mail address is not verified, no account has it, the account is
            inactive, or it is already bound to another subject.
    """
    subject = str(claims.get("sub") or "")
    email = str(claims.get("email") or "")
    if not subject:
        raise OidcRefused("The sign-on provider sent no subject id; ask an admin to check its configuration.")
    with write_transaction(engine) as session:
        user = session.exec(select(User).where(User.oidc_subject == subject)).first()
        if user is None:
            if claims.get("email_verified") is not True:
                raise OidcRefused(f"The sign-on provider has not verified the e-mail address {email!r}; "
                                  "verify it there, then log in again.")
            user = session.exec(select(User).where(func.lower(User.username) == email.lower())).first()
            if user is None:
                raise OidcRefused(f"HAI Studio has no account named {email!r}. Ask an admin to create one "
                                  "(its username is your e-mail address).")
            if user.oidc_subject is not None:
                raise OidcRefused(f"The account {user.username!r} is bound to another sign-on identity.")
            user.oidc_subject = subject
            session.add(user)
        if not user.is_active:
            raise OidcRefused(f"The account {user.username!r} is deactivated.")
        return _identity(user)


def must_change_password(user_id: int, *, engine: Engine | None = None) -> bool:
    with read_session(engine) as session:
        user = session.get(User, user_id)
        return bool(user and user.must_change_password)


_DUMMY_HASH = _HASHER.hash("not-a-real-password")
