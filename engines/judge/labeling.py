"""Labeling projects: the constants and errors of the labeling runtime, a project's settings, its
creation (the import of its items), opening and closing it, and finding it.

Follows the labeling protocol of ``docs/judge.md``, Method, "Labeling protocol". The annotator's
queue (claims, labels, skips, undo, panel plans) is ``engines.judge.labeling_queue``; what
researchers see of a project (progress, disagreements, adjudication, the labelled items) is
``engines.judge.review``.

A project's items are stored in batches of short write transactions (``IMPORT_BATCH`` rows each),
so that annotators' writes go on between them while a large set is imported; the project stays
hidden under a temporary name until its last batch is stored, and is removed if any batch fails.
"""

from __future__ import annotations

import contextlib
import random
import re
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, insert, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.judge.items import Item
from engines.judge.models import LabelingItem, LabelingMember, LabelingProject
from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo
from engines.platform.models import Role, utcnow

SLUG = re.compile(r"^[a-z0-9][a-z0-9\-]{0,62}$")
ACCOUNT = "user:"  # annotators with an account are named "user:<id>"; others came through a study
MAY_LABEL_ANY = (Role.ADMIN, Role.RESEARCHER)  # roles that label without being on a project's team
RATIONALE_CHARS = 2000  # HumanLabel.rationale's column size
IMPORT_BATCH = 1000  # items per write transaction when a project is created
# The slug of a project whose items are still being stored: SLUG never matches it, so no page,
# study or call by name finds the project before it is complete.
IMPORTING = "~importing-"
ABANDONED_IMPORT = timedelta(hours=6)  # a hidden import this old was cut off (the process died)


class LabelingError(ValueError):
    """A labeling operation that cannot go ahead; the message is safe to show."""


class AnnotatorPaused(LabelingError):
    """The annotator may not label now (failed the quiz, or gold accuracy below the threshold)."""


class NotAMember(LabelingError):
    """An annotator account that is not on the project's team."""


@dataclass(frozen=True)
class ProjectSettings:
    """What a researcher sets when creating a project (see ``LabelingProject`` for the meanings)."""

    title: str = ""
    guidelines: str = ""
    overlap_k: int = 2
    overlap_fraction: float = 0.2
    gold_every: int = 20
    gold_min_accuracy: float = 0.8
    min_gold_checks: int = 3
    quiz_size: int = 10
    quiz_pass: float = 0.8
    release_after_minutes: float = 30.0
    seed: int = 0

    def check(self) -> None:
        if not 1 <= self.overlap_k <= 10:
            raise LabelingError(f"overlap_k must be from 1 to 10, got {self.overlap_k}.")
        if not 0.0 <= self.overlap_fraction <= 1.0:
            raise LabelingError(f"overlap_fraction must be from 0 to 1, got {self.overlap_fraction}.")
        if self.gold_every < 0 or self.quiz_size < 0 or self.min_gold_checks < 1:
            raise LabelingError("gold_every and quiz_size must be 0 or more, min_gold_checks at least 1.")
        for name in ("gold_min_accuracy", "quiz_pass"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise LabelingError(f"{name} must be from 0 to 1, got {getattr(self, name)}.")
        if self.release_after_minutes <= 0:
            raise LabelingError("release_after_minutes must be positive.")
        if len(self.title) > 200:
            raise LabelingError(f"The title has {len(self.title)} characters; at most 200 are allowed.")


# ------------------------------------------------------------------ creating a project


def stratified_order(items: list[Item], seed: int) -> list[Item]:
    """Shuffle within each (victim model, attack, semantic category) stratum, then deal the strata
    round-robin, so that any prefix of the queue covers every cell about equally."""
    rng = random.Random(seed)
    strata: dict[tuple[str, str, str], list[Item]] = defaultdict(list)
    for item in items:
        strata[(item.victim_model, item.attack, item.semantic_category)].append(item)
    groups = [strata[k] for k in sorted(strata)]
    for group in groups:
        rng.shuffle(group)
    rng.shuffle(groups)
    ordered: list[Item] = []
    for i in range(max((len(g) for g in groups), default=0)):
        ordered += [g[i] for g in groups if i < len(g)]
    return ordered


def create_project(slug: str, items: list[Item], settings: ProjectSettings = ProjectSettings(), *,
                   created_by: int | None = None, engine: Engine | None = None) -> LabelingProject:
    """Create a project over ``items``; items with ``is_gold`` and a ``gold_score`` are the gold ones.

    The items go in as batches of ``IMPORT_BATCH`` rows, each its own short write transaction, so
    that a large import does not hold the database's write lock for long (on SQLite every writer
    waits for it). Until the last batch is in, the project has a hidden name (``IMPORTING``) and is
    closed; then one transaction gives it its name and opens it. If anything fails on the way, the
    partial project is deleted: a project is created whole or not at all.

    Raises:
        LabelingError: a malformed slug, a taken one, bad settings, duplicate keys, a gold item
            without its score, or fewer gold items than the quiz needs.
    """
    if not SLUG.match(slug or ""):
        raise LabelingError(f"{echo(slug)} is not a valid project name: use lowercase letters, digits and dashes.")
    settings.check()
    if not items:
        raise LabelingError("A project needs at least one item.")
    keys = [item.key for item in items]
    if len(set(keys)) != len(keys):
        seen: set[str] = set()
        duplicate = next(k for k in keys if k in seen or seen.add(k))
        raise LabelingError(f"The item key {echo(duplicate)} appears more than once.")
    gold = [item for item in items if item.is_gold]
    if any(item.gold_score is None for item in gold):
        missing = next(item.key for item in gold if item.gold_score is None)
        raise LabelingError(f"The gold item {echo(missing)} has no gold_score.")
    if settings.quiz_size > len(gold):
        raise LabelingError(f"The quiz needs {settings.quiz_size} gold items; the project has {len(gold)}.")
    rng = random.Random(settings.seed + 1)
    ordered = stratified_order(items, settings.seed)
    regular = [item.key for item in ordered if not item.is_gold]
    overlap = set(rng.sample(regular, round(settings.overlap_fraction * len(regular))))
    _remove_abandoned_imports(engine)
    project_id = _hidden_project(slug, settings, created_by, engine)
    try:
        for start in range(0, len(ordered), IMPORT_BATCH):
            rows = [_item_row(project_id, position, item, settings.overlap_k if item.key in overlap else 1)
                    for position, item in enumerate(ordered[start:start + IMPORT_BATCH], start=start)]
            with write_transaction(engine) as session:
                _store_items(session, rows)
        _publish(project_id, slug, engine)
    except BaseException:  # also an interrupt: no half project stays behind
        # The first error is the one to report; a leftover that cannot be deleted now stays hidden
        # and is deleted by a later creation (``_remove_abandoned_imports``).
        with contextlib.suppress(Exception):
            _discard(project_id, engine)
        raise
    return get_project(slug, engine=engine)


def _hidden_project(slug: str, settings: ProjectSettings, created_by: int | None, engine: Engine | None) -> int:
    """Insert the project row, closed and under a hidden name, after checking ``slug`` is free; its id."""
    with write_transaction(engine) as session:
        _refuse_taken(session, slug)
        project = LabelingProject(slug=f"{IMPORTING}{uuid.uuid4().hex}", created_by=created_by,
                                  **{k: v for k, v in settings.__dict__.items() if k != "seed"})
        project.is_open = False
        session.add(project)
        session.flush()
        return project.id


def _item_row(project_id: int, position: int, item: Item, target_labels: int) -> dict:
    """The ``labeling_item`` row of one item (verdicts and earlier labels stay out: no anchoring)."""
    return {"project_id": project_id, "key": item.key, "position": position, "is_gold": item.is_gold,
            "gold_score": item.gold_score, "active_claims": 0, "target_labels": target_labels,
            "item": item.model_dump(mode="json", exclude={"labels", "judges"})}


def _refuse_taken(session: Session, slug: str) -> None:
    if session.exec(select(LabelingProject.id).where(LabelingProject.slug == slug)).first() is not None:
        raise LabelingError(f"A labeling project called '{slug}' already exists.")


def _store_items(session: Session, rows: list[dict]) -> None:
    """One batch of a new project's items (one multi-row insert)."""
    session.connection().execute(insert(LabelingItem.__table__), rows)


def _publish(project_id: int, slug: str, engine: Engine | None) -> None:
    """Give a fully imported project its name and open it (one short transaction)."""
    try:
        with write_transaction(engine) as session:
            _refuse_taken(session, slug)  # someone may have taken the name while the items went in
            session.connection().execute(update(LabelingProject.__table__).where(
                LabelingProject.__table__.c.id == project_id).values(slug=slug, is_open=True))
    except IntegrityError:  # taken at the same moment by another import (the slug is unique)
        raise LabelingError(f"A labeling project called '{slug}' already exists.") from None


def _discard(project_id: int, engine: Engine | None) -> None:
    """Delete a project that was never published, and its items, in batches (short transactions)."""
    items = LabelingItem.__table__
    while True:
        with write_transaction(engine) as session:
            connection = session.connection()
            batch = connection.execute(select(items.c.id).where(items.c.project_id == project_id)
                                       .limit(IMPORT_BATCH)).scalars().all()
            if not batch:
                connection.execute(delete(LabelingMember.__table__).where(
                    LabelingMember.__table__.c.project_id == project_id))
                connection.execute(delete(LabelingProject.__table__).where(
                    LabelingProject.__table__.c.id == project_id))
                return
            connection.execute(delete(items).where(items.c.id.in_(batch)))


def _remove_abandoned_imports(engine: Engine | None) -> None:
    """Delete hidden projects whose import was cut off (a process that died mid-import)."""
    with read_session(engine) as session:
        abandoned = session.exec(select(LabelingProject.id).where(
            LabelingProject.slug.startswith(IMPORTING),
            LabelingProject.created_at < utcnow() - ABANDONED_IMPORT)).all()
    for project_id in abandoned:
        _discard(project_id, engine)


def set_open(slug: str, is_open: bool, *, engine: Engine | None = None) -> None:
    with write_transaction(engine) as session:
        project = project_row(session, slug, lock=True)
        project.is_open = is_open
        session.add(project)


def project_row(session: Session, slug: str, *, lock: bool = False) -> LabelingProject:
    """The project ``slug`` (``lock``: its row locked for the rest of the write transaction)."""
    query = select(LabelingProject).where(LabelingProject.slug == slug)
    return visible(session.exec(query.with_for_update() if lock else query).first(), slug)


def visible(project, slug: str):
    """``project`` (a row of the project ``slug``, or None), or LabelingError saying there is none: one
    being imported is not there yet."""
    if project is None or project.slug.startswith(IMPORTING):
        raise LabelingError(f"There is no labeling project called {echo(slug)}.")
    return project


def get_project(slug: str, *, engine: Engine | None = None) -> LabelingProject:
    with read_session(engine) as session:
        return project_row(session, slug)


def require_open_project(slug: str, *, session: Session | None = None, engine: Engine | None = None) -> None:
    """Raises LabelingError (a ValueError) when ``slug`` names no project, or a closed one."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        try:
            project = project_row(session, slug)
        except LabelingError:
            raise LabelingError(f"PROJECT names no labeling project: there is none called {echo(slug)}. Create it "
                                "under Admin → Labeling projects first.") from None
    if not project.is_open:
        raise LabelingError(f"PROJECT names the labeling project '{slug}', which is closed: reopen it first.")


def list_projects(*, engine: Engine | None = None) -> list[LabelingProject]:
    """Every project, oldest first (not those whose items are still being imported)."""
    with read_session(engine) as session:
        return list(session.exec(select(LabelingProject).where(~LabelingProject.slug.startswith(IMPORTING))
                                 .order_by(LabelingProject.created_at)).all())


