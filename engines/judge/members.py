"""Project teams: which annotator accounts label which labeling project.

An account with the annotator role sees and labels only the projects whose team it is on; a
researcher or an admin adds and removes members (Admin → Labeling projects, or an invitation),
and may label any project. Every labeling call checks it (``labeling_queue.may_label``), not only the
pages' project lists. Participants of a panel study are no accounts: the study that names the
project admits them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.judge import labeling, labeling_queue
from engines.judge.models import LabelingClaim, LabelingMember, LabelingProject
from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo
from engines.platform.models import User

MAX_NAMES = 200  # one form's worth


@dataclass(frozen=True)
class Member:
    username: str
    role: str
    is_active: bool
    added_at: datetime


def add_members(slug: str, usernames: list[str], *, added_by: int | None = None,
                engine: Engine | None = None) -> list[str]:
    """Put these accounts on the project's team; returns the names that were not on it yet.

    Raises:
        labeling.LabelingError: no such project, too many names, or a name with no account (then
            nobody is added, so a typo does not leave half the team on).
    """
    names = list(dict.fromkeys(name.strip() for name in usernames if name and name.strip()))
    if not names:
        raise labeling.LabelingError("Give at least one username.")
    if len(names) > MAX_NAMES:
        raise labeling.LabelingError(f"{len(names)} names given; add at most {MAX_NAMES} at a time.")
    with write_transaction(engine) as session:
        project = labeling.project_row(session, slug, lock=True)
        users = {user.username: user for user in session.exec(select(User).where(User.username.in_(names))).all()}
        unknown = [name for name in names if name not in users]
        if unknown:
            raise labeling.LabelingError(f"No account is called {echo(unknown[0])}"
                                         + (f" (nor {len(unknown) - 1} other name(s))" if len(unknown) > 1 else "")
                                         + ": nobody was added. Invite new people instead.")
        on_team = set(session.exec(select(LabelingMember.user_id).where(
            LabelingMember.project_id == project.id)).all())
        added = [name for name in names if users[name].id not in on_team]
        session.add_all(LabelingMember(project_id=project.id, user_id=users[name].id, added_by=added_by)
                        for name in added)
        return added


def remove_member(slug: str, username: str, *, engine: Engine | None = None) -> bool:
    """Take an account off the project's team; whether it was on it. The items it holds open go
    back to the queue at once (its labels stay)."""
    with write_transaction(engine) as session:
        project = labeling.project_row(session, slug, lock=True)
        row = session.exec(select(LabelingMember).join(User, User.id == LabelingMember.user_id).where(
            LabelingMember.project_id == project.id, User.username == username)).first()
        if row is None:
            return False
        annotator = f"{labeling.ACCOUNT}{row.user_id}"
        for claim in session.exec(select(LabelingClaim).where(
                LabelingClaim.project_id == project.id, LabelingClaim.annotator == annotator,
                LabelingClaim.status == "open")).all():
            labeling_queue._count(session, claim.item_id, -1)
            session.delete(claim)
        session.delete(row)
        return True


def members_of(slug: str, *, engine: Engine | None = None) -> list[Member]:
    """The project's team, by username."""
    with read_session(engine) as session:
        project = labeling.project_row(session, slug)
        rows = session.exec(select(User.username, User.role, User.is_active, LabelingMember.added_at)
                            .join(LabelingMember, LabelingMember.user_id == User.id)
                            .where(LabelingMember.project_id == project.id).order_by(User.username)).all()
    return [Member(*row) for row in rows]


def teams(*, engine: Engine | None = None) -> dict[str, list[str]]:
    """Every visible project's team: slug -> usernames (who is on what)."""
    with read_session(engine) as session:
        rows = session.exec(select(LabelingProject.slug, User.username)
                            .join(LabelingMember, LabelingMember.project_id == LabelingProject.id)
                            .join(User, User.id == LabelingMember.user_id)
                            .order_by(LabelingProject.slug, User.username)).all()
    result: dict[str, list[str]] = {project.slug: [] for project in labeling.list_projects(engine=engine)}
    for slug, username in rows:
        if slug in result:
            result[slug].append(username)
    return result


def projects_to_label(user_id: int, role: str, *, engine: Engine | None = None) -> list[LabelingProject]:
    """The open projects this account may label: all of them for researchers and admins, the
    projects whose team it is on for annotators."""
    projects = [project for project in labeling.list_projects(engine=engine) if project.is_open]
    if role in labeling.MAY_LABEL_ANY:
        return projects
    with read_session(engine) as session:
        mine = set(session.exec(select(LabelingMember.project_id).where(LabelingMember.user_id == user_id)).all())
    return [project for project in projects if project.id in mine]
