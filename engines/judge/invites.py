"""Inviting annotators to a labeling project: an annotator account each, with a temporary password
to change at the first login, and the link to the project's Label page.

People who already have an account that may label (annotator, researcher or admin) are listed with
the link and keep their password. A list with a name that cannot be an account is refused as a
whole before any account is made, so a typo does not leave half the team invited.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from urllib.parse import quote

from sqlalchemy.engine import Engine

from engines.judge import labeling
from engines.platform import auth
from engines.platform.models import Role
from engines.platform.settings import get_settings

MAX_INVITES = 100  # one form's worth; Argon2 hashes each password (tens of ms)
LABEL_PAGE = "judge-label"


@dataclass(frozen=True)
class Invitation:
    username: str
    link: str
    temporary_password: str | None  # None: the account existed; its password is unchanged


def label_link(slug: str, base_url: str | None = None) -> str:
    """The Label page with the project chosen (``?project=``)."""
    base = (base_url or get_settings().public_base_url).rstrip("/")
    return f"{base}/{LABEL_PAGE}?project={quote(slug)}"


def parse_usernames(text: str) -> list[str]:
    """Names one per line (or separated by commas or spaces), blanks and repeats dropped, order kept."""
    names = [name.strip() for line in (text or "").splitlines() for name in line.replace(",", " ").split()]
    return list(dict.fromkeys(name for name in names if name))


def invite_annotators(slug: str, usernames: list[str], *, base_url: str | None = None,
                      engine: Engine | None = None) -> list[Invitation]:
    """Create annotator accounts (temporary passwords, changed at first login) for the new names.

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
    existing = {user.username: user for user in auth.list_users(engine=engine)}
    link = label_link(slug, base_url)
    for name in usernames:
        user = existing.get(name)
        if user is None:
            try:
                auth.check_username(name)
            except auth.AuthError as exc:
                raise auth.AuthError(f"{name!r}: {exc} Nobody was invited.") from None
        elif not user.is_active:
            raise auth.AuthError(f"The account {name!r} is disabled; an admin can enable it under Admin → Accounts.")
    invitations = []
    for name in usernames:
        if name in existing:
            invitations.append(Invitation(name, link, None))
            continue
        password = secrets.token_urlsafe(12)  # 16 characters; a person types it once
        auth.create_user(name, password, Role.ANNOTATOR, must_change_password=True, engine=engine)
        invitations.append(Invitation(name, link, password))
    return invitations
