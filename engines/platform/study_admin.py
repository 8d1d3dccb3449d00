"""Researcher-side study operations: create, open and close study instances, watch progress."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo
from engines.platform.models import Participant, ParticipantStatus, Study
from engines.platform.panels import study_link, validate_slug
from engines.platform.registry import get_protocol
from engines.platform.runtime import StudyError, UnknownStudy
from engines.platform.served_address import public_base_url
from engines.platform.study import jsonable_constants

CONFIG_KEYS = ("completion_code", "screened_out_code", "constants", "max_participants", "prolific_study_id")
MAX_PARTICIPANTS = 100_000
MAX_TITLE_LENGTH = 200
CODE_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,40}")  # Prolific codes are short and alphanumeric; they go into a URL
PROLIFIC_ID_PATTERN = re.compile(r"[A-Za-z0-9]{24}")  # Prolific's ids are 24 hex digits (MongoDB ObjectIds)


@dataclass(frozen=True)
class StudySummary:
    slug: str
    protocol: str
    title: str
    is_open: bool
    participants: int
    completed: int


@dataclass(frozen=True)
class ConditionProgress:
    condition: str
    active: int
    completed: int
    screened_out: int

    @property
    def total(self) -> int:
        return self.active + self.completed + self.screened_out


def parse_constants(text: str) -> dict[str, Any]:
    """Constants overrides typed as a JSON object (empty text: none); StudyError with line and column otherwise."""
    if not text or not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StudyError(f"Constants are not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}.") from None
    if not isinstance(value, dict):
        raise StudyError(f"Constants must be a JSON object like {{\"INTERACTIONS\": 10}}, got {type(value).__name__}.")
    return value


def default_constants(protocol: str) -> dict[str, Any]:
    """A protocol's constants as JSON-ready data (what ``parse_constants`` overrides)."""
    return jsonable_constants(get_protocol(protocol).constants())


def create_study(slug: str, protocol: str, *, title: str = "", config: dict[str, Any] | None = None,
                 is_open: bool = True, created_by: int | None = None, engine: Engine | None = None) -> Study:
    """Create a study instance of a registered protocol.

    Raises:
        LinkError: the slug is malformed. UnknownProtocol: no such protocol.
        StudyError: the slug is taken or the config names unknown keys or constants.
    """
    validate_slug(slug)
    proto = get_protocol(protocol)
    config = dict(config or {})
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise StudyError(f"Unknown study config keys: {', '.join(unknown)} (allowed: {', '.join(CONFIG_KEYS)}).")
    if len(title) > MAX_TITLE_LENGTH:
        raise StudyError(f"The title has {len(title):,} characters; participants see it on every page, so at most "
                         f"{MAX_TITLE_LENGTH} are allowed.")
    for key in ("completion_code", "screened_out_code"):
        code = config.get(key)
        if code is not None and not (isinstance(code, str) and CODE_PATTERN.fullmatch(code)):
            shown = f"{len(code):,} characters" if isinstance(code, str) else repr(code)
            raise StudyError(f"{key} must be 1 to 40 letters, digits, '-' or '_' (it goes into the panel's "
                             f"completion link), got {shown}.")
    cap = config.get("max_participants")
    if cap is not None and not (type(cap) is int and 1 <= cap <= MAX_PARTICIPANTS):
        raise StudyError(f"max_participants must be a whole number from 1 to {MAX_PARTICIPANTS:,}, got {echo(cap)}.")
    expected = config.get("prolific_study_id")
    if expected is not None and not (isinstance(expected, str) and PROLIFIC_ID_PATTERN.fullmatch(expected)):
        raise StudyError(f"prolific_study_id must be Prolific's study id (24 letters and digits), got {echo(expected)}.")
    try:
        constants = proto.checked_constants(config.get("constants"))
    except ValueError as exc:
        raise StudyError(f"Constants: {exc}") from None
    if not proto.condition_names(constants):
        raise StudyError("constants.CONDITIONS overrides the conditions with none: a study needs at least one.")
    with write_transaction(engine) as session:
        if session.exec(select(Study).where(Study.slug == slug)).first() is not None:
            raise StudyError(f"A study called '{slug}' already exists.")
        if proto.check_constants_in_database is not None:
            try:
                proto.check_constants_in_database(constants, session)
            except ValueError as exc:
                raise StudyError(f"Constants: {exc}") from None
        study = Study(slug=slug, protocol=proto.name, title=title or proto.title, config=config,
                      is_open=is_open, created_by=created_by)
        session.add(study)
        session.flush()
        return study


def set_open(slug: str, is_open: bool, *, engine: Engine | None = None) -> None:
    with write_transaction(engine) as session:
        study = session.exec(select(Study).where(Study.slug == slug)).first()
        if study is None:
            raise UnknownStudy(f"There is no study called '{slug}'.")
        study.is_open = is_open
        session.add(study)


def get_study(slug: str, *, engine: Engine | None = None) -> Study:
    with read_session(engine) as session:
        study = session.exec(select(Study).where(Study.slug == slug)).first()
        if study is None:
            raise UnknownStudy(f"There is no study called '{slug}'.")
        return study


def list_studies(*, engine: Engine | None = None) -> list[StudySummary]:
    with read_session(engine) as session:
        studies = session.exec(select(Study).order_by(Study.created_at)).all()
        counts = dict(session.exec(select(Participant.study_id, func.count()).group_by(Participant.study_id)).all())
        done = dict(session.exec(
            select(Participant.study_id, func.count())
            .where(Participant.status == ParticipantStatus.COMPLETED).group_by(Participant.study_id)
        ).all())
        return [StudySummary(s.slug, s.protocol, s.title, s.is_open, counts.get(s.id, 0), done.get(s.id, 0))
                for s in studies]


def progress(slug: str, *, engine: Engine | None = None) -> list[ConditionProgress]:
    """Participants per condition and status (every declared condition appears, even empty)."""
    study = get_study(slug, engine=engine)
    proto = get_protocol(study.protocol)
    with read_session(engine) as session:
        rows = session.exec(
            select(Participant.condition, Participant.status, func.count())
            .where(Participant.study_id == study.id).group_by(Participant.condition, Participant.status)
        ).all()
    table = {c: dict.fromkeys(ParticipantStatus.ALL, 0) for c in proto.condition_names(proto.constants_for(study.config))}
    for condition, status, n in rows:
        table.setdefault(condition, dict.fromkeys(ParticipantStatus.ALL, 0))[status] = n
    return [ConditionProgress(c, v["active"], v["completed"], v["screened_out"]) for c, v in table.items()]


def participant_links(slug: str, base_url: str | None = None, *, engine: Engine | None = None) -> dict[str, str]:
    """The study's link for each panel, with the panel's placeholders (raises ``UnknownStudy`` for no such study)."""
    with read_session(engine) as session:
        if session.exec(select(Study.id).where(Study.slug == slug)).first() is None:
            raise UnknownStudy(f"There is no study called '{slug}'.")
    base = base_url or public_base_url()
    return {panel: study_link(base, slug, panel) for panel in ("prolific", "mturk", "generic")}
