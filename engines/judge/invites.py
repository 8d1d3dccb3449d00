"""Inviting annotators to a labeling project: an annotator account each, with a one-time password
to change at the first login, and the link to the project's Label page.

The answer is the same whether a name has an account or not, so the form cannot be used to find out
who has one: every name gets a row with a one-time password and the link. A new name gets an
annotator account with that password; an annotator account whose one-time password expired unused
gets that new one instead; any other account (its owner's password, an account that is disabled or
not an annotator's) is left as it is, and its row's password logs no one in. One-time passwords stop
working after ``invitation_hours``. A list with a name that cannot be an account is refused as a whole
before any account is made, so a typo does not leave half the team invited.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import quote

from sqlalchemy.engine import Engine

from engines.judge import labeling, members
from engines.platform import auth
from engines.platform.files import echo
from engines.platform.models import Role, User, utcnow
from engines.platform.served_address import public_base_url

MAX_INVITES = 100  # one form's worth; Argon2 hashes each password (tens of ms)
LABEL_PAGE = "judge-label"


@dataclass(frozen=True)
class Invitation:
    username: str
    link: str
    temporary_password: str  # works for a new account or a renewed invitation; otherwise it logs no one in
    expires_at: datetime  # when the one-time password stops working


def label_link(slug: str, base_url: str | None = None) -> str:
    """The Label page with the project chosen (``?project=``)."""
    base = (base_url or public_base_url()).rstrip("/")
    return f"{base}/{LABEL_PAGE}?project={quote(slug)}"


def parse_usernames(text: str) -> list[str]:
    """Names one per line (or separated by commas or spaces), blanks and repeats dropped, order kept."""
    names = [name.strip() for line in (text or "").splitlines() for name in line.replace(",", " ").split()]
    return list(dict.fromkeys(name for name in names if name))


def _renews(user: User, now: datetime) -> bool:
    # Only an annotator account whose one-time password expired before anyone replaced it: nobody can
    # log in with it, so a new one takes nothing from anyone (never another role's account).
    return (user.role == Role.ANNOTATOR and user.is_active and user.must_change_password
            and user.password_expires_at is not None and user.password_expires_at <= now)


def invite_annotators(slug: str, usernames: list[str], *, base_url: str | None = None, added_by: int | None = None,
                      engine: Engine | None = None) -> list[Invitation]:
    """An invitation (the link and a one-time password) for each name, answered alike whether the
    name has an account or not (the module's docstring says what happens to each); every name is
    put on the project's team.

    Raises:
        labeling.LabelingError: no such project, or it is closed.
        auth.AuthError: no names, too many, or a name that cannot be an account (nothing is created).
    """
    project = labeling.get_project(slug, engine=engine)
    if not project.is_open:
        raise labeling.LabelingError(f"The project '{slug}' is closed; reopen it before inviting annotators.")
    if not usernames:
        raise auth.AuthError("Give at least one username (one per line).")
    if len(usernames) > MAX_INVITES:
        raise auth.AuthError(f"{len(usernames)} names given; invite at most {MAX_INVITES} at a time.")
    for name in usernames:
        try:
            auth.check_username(name)
        except auth.AuthError as exc:
            raise auth.AuthError(f"{echo(name)}: {exc} Nobody was invited.") from None
    existing = {user.username: user for user in auth.list_users(engine=engine)}
    link = label_link(slug, base_url)
    lifetime = auth.one_time_password_lifetime()
    now = utcnow()
    invitations = []
    for name in usernames:
        password = secrets.token_urlsafe(12)  # 16 characters; a person types it once
        user = existing.get(name)
        if user is None:
            auth.create_user(name, password, Role.ANNOTATOR, must_change_password=True, expires_after=lifetime,
                             engine=engine)
        elif _renews(user, now):
            auth.set_password(name, password, must_change=True, expires_after=lifetime, engine=engine)
        else:
            auth.hash_password(password)  # the same work as for the others, so the time tells nothing either
        invitations.append(Invitation(name, link, password, now + lifetime))
    members.add_members(slug, list(usernames), added_by=added_by, engine=engine)
    return invitations
