"""Database tables of the platform (SQLModel over SQLAlchemy 2).

Everything a person did lives here, not in Streamlit's session state: accounts and login
sessions, study instances, participants with their condition and progress, every step response
and every failed check attempt, and background jobs. Times are timezone-aware UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, MetaData, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

# Stable constraint names, so Alembic migrations stay reviewable on SQLite and PostgreSQL alike.
SQLModel.metadata.naming_convention = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata: MetaData = SQLModel.metadata


def utcnow() -> datetime:
    """Current time, timezone-aware UTC (SQLModel's UTCDateTime stores and returns UTC)."""
    return datetime.now(UTC)


def _json_column() -> Any:
    return Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class Role:
    """Account roles. Participants are not accounts: they arrive by link."""

    ADMIN = "admin"
    RESEARCHER = "researcher"
    ANNOTATOR = "annotator"
    ALL = (ADMIN, RESEARCHER, ANNOTATOR)


class User(SQLModel, table=True):
    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, unique=True, max_length=64)
    password_hash: str
    role: str = Field(max_length=16)
    display_name: str = ""
    is_active: bool = True
    must_change_password: bool = False
    # A one-time password someone else chose (an invitation, an admin's reset) stops working then;
    # None: the password does not expire (the account's own, or the first admin's).
    password_expires_at: datetime | None = None
    created_at: datetime = Field(default_factory=utcnow)
    last_login_at: datetime | None = None
    # The single sign-on provider's subject id ("sub"), bound at the first OIDC login: an e-mail
    # address can change hands, the subject does not.
    oidc_subject: str | None = Field(default=None, max_length=255, unique=True, index=True)


class LoginSession(SQLModel, table=True):
    """A browser's login, referenced by a cookie that holds the token (only its hash is stored)."""

    id: int | None = Field(default=None, primary_key=True)
    token_hash: str = Field(index=True, unique=True, max_length=64)
    user_id: int = Field(foreign_key="user.id", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime
    last_seen_at: datetime = Field(default_factory=utcnow)  # for the idle timeout


class LoginFailure(SQLModel, table=True):
    """One failed login, counted per typed username and per client address to slow down guessing."""

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(index=True, max_length=255)  # lower-cased as typed, known account or not
    address: str = Field(default="", index=True, max_length=64)
    failed_at: datetime = Field(default_factory=utcnow, index=True)


class Study(SQLModel, table=True):
    """One running instance of a protocol from ``studies/``, reachable at ``?study=<slug>``."""

    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(index=True, unique=True, max_length=64)
    protocol: str = Field(max_length=64)
    title: str = ""
    is_open: bool = True
    config: dict = _json_column()
    created_at: datetime = Field(default_factory=utcnow)
    created_by: int | None = Field(default=None, foreign_key="user.id")


class ParticipantStatus:
    ACTIVE = "active"
    COMPLETED = "completed"
    SCREENED_OUT = "screened_out"
    ALL = (ACTIVE, COMPLETED, SCREENED_OUT)


class Participant(SQLModel, table=True):
    __table_args__ = (UniqueConstraint("study_id", "external_id"),)

    id: int | None = Field(default=None, primary_key=True)
    study_id: int = Field(foreign_key="study.id")  # looked up through the unique constraint's index
    external_id: str = Field(max_length=128)
    panel: str = Field(max_length=16)
    panel_params: dict = _json_column()
    condition: str = Field(max_length=64)
    status: str = Field(default=ParticipantStatus.ACTIVE, max_length=16, index=True)
    step_index: int = 0
    step_shown_at: datetime | None = None
    attention_failures: int = 0
    started_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    completion_code: str | None = None
    vars: dict = _json_column()


class StepResponse(SQLModel, table=True):
    """The accepted answer to one step instance; at most one per participant and step index."""

    # The unique constraint's index leads with participant_id: it serves look-ups by participant too.
    __table_args__ = (UniqueConstraint("participant_id", "step_index"),)

    id: int | None = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="participant.id")
    step_index: int
    step_name: str = Field(max_length=64)
    round_number: int = 1
    data: dict = _json_column()
    attempts: int = 1
    shown_at: datetime | None = None
    submitted_at: datetime = Field(default_factory=utcnow)
    duration_s: float | None = None


class StepAttempt(SQLModel, table=True):
    """A submission of a checked step (comprehension or attention) that failed its check."""

    __table_args__ = (UniqueConstraint("participant_id", "step_index", "attempt"),)  # also the look-up by participant

    id: int | None = Field(default=None, primary_key=True)
    participant_id: int = Field(foreign_key="participant.id")
    step_index: int
    attempt: int
    data: dict = _json_column()
    wrong_fields: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class JobStatus:
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    FINISHED = (SUCCEEDED, FAILED, CANCELLED)


class Job(SQLModel, table=True):
    """Background work with persisted progress, log, result and failure reason."""

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=64, index=True)
    params: dict = _json_column()
    status: str = Field(default=JobStatus.QUEUED, max_length=16, index=True)
    progress: float = 0.0
    message: str = ""
    log: str = Field(default="", sa_column=Column(Text, nullable=False))
    result: dict = _json_column()
    result_path: str | None = None
    error: str | None = Field(default=None, sa_column=Column(Text))
    cancel_requested: bool = False
    submitted_by: int | None = Field(default=None, foreign_key="user.id")
    worker: str | None = None
    code_version: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    heartbeat_at: datetime | None = None


def register_all_tables() -> None:
    """Import every ``engines.<area>.models`` module so all tables are on ``metadata`` (Alembic)."""
    from engines.platform.discovery import import_area_modules

    import_area_modules("models")
