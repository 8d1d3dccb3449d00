"""The labeling runtime: projects, the annotator's queue, labels, skips, undo, adjudication.

Follows the labeling protocol of ``docs/judge.md``, Method, "Labeling protocol": a qualification
quiz on gold items (the paper's workers first passed a 10-item quiz), gold checks mixed into the
queue with a pause threshold (Potato's test questions), overlap k on a fraction of the items
(Argilla's ``min_submitted``, Prodigy's ``annotations_per_task``), work stealing that never gives an
item twice to one annotator, release of items whose annotator left, and an adjudication queue when
labels disagree (Prodigy's ``review``). Annotators see only the original behaviour, its context and
the generation: judge verdicts, the attack and other labels stay hidden (anchoring; the paper's
annotators saw the unaltered prompt and the generation).

Only the project's team labels it: an account with the annotator role must be a member
(``engines.judge.members``; researchers and admins may label any project); participants of a
panel study are admitted by the study that names the project. Every labeling call checks it.

A project's items are stored in batches of short write transactions (``IMPORT_BATCH`` rows each),
so that annotators' writes go on between them while a large set is imported; the project stays
hidden under a temporary name until its last batch is stored, and is removed if any batch fails.

Every change runs in one write transaction, and concurrent annotators (threads, processes, app
servers on PostgreSQL) keep the invariants: overlap met and not exceeded by the queue, no item
twice to one annotator (a unique constraint as well), one label per claim (a resent submit
returns the stored label). The locks are as narrow as those invariants allow, so that annotators
do not wait on each other: an annotator's own requests run one at a time (a transaction-level
advisory lock per project and annotator on PostgreSQL; SQLite serialises all writers anyway),
and an item is claimed under its own row lock, skipping rows another annotator is claiming
(``FOR UPDATE SKIP LOCKED``, the usual database-queue pattern).
"""

from __future__ import annotations

import contextlib
import random
import re
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import case, delete, func, insert, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.judge import labeling_sql as sql
from engines.judge.items import FLAGS, HARMFUL_FROM, Item, Label
from engines.judge.models import Adjudication, HumanLabel, LabelingClaim, LabelingItem, LabelingMember, LabelingProject
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


@dataclass(frozen=True)
class ItemToLabel:
    """What the annotator sees of one item (nothing that would anchor the label)."""

    claim_id: int
    key: str
    behavior: str
    context_string: str
    generation: str
    purpose: str  # queue | gold | quiz
    labelled: int  # labels this annotator has given in the project
    quiz_left: int = 0


@dataclass(frozen=True)
class AnnotatorStatus:
    labelled: int
    skipped: int
    gold_checks: int
    gold_correct: int
    quiz_done: int
    quiz_correct: int
    quiz_passed: bool | None  # None: quiz not finished (or no quiz)
    paused: str | None  # why, when the annotator may not label

    @property
    def gold_accuracy(self) -> float | None:
        return self.gold_correct / self.gold_checks if self.gold_checks else None


@dataclass
class ProjectProgress:
    items: int
    gold_items: int
    labels_wanted: int
    labels_done: int
    open_claims: int
    per_annotator: dict[str, AnnotatorStatus] = field(default_factory=dict)
    to_adjudicate: int = 0


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
        project = _lock_project(session, slug)
        project.is_open = is_open
        session.add(project)


def _project(session: Session, slug: str) -> LabelingProject:
    """The project ``slug``, or LabelingError saying there is none (one being imported is not there yet)."""
    project = session.exec(select(LabelingProject).where(LabelingProject.slug == slug)).first()
    if project is None or project.slug.startswith(IMPORTING):
        raise LabelingError(f"There is no labeling project called {echo(slug)}.")
    return project


def get_project(slug: str, *, engine: Engine | None = None) -> LabelingProject:
    with read_session(engine) as session:
        return _project(session, slug)


def require_open_project(slug: str, *, session: Session | None = None, engine: Engine | None = None) -> None:
    """Raises LabelingError (a ValueError) when ``slug`` names no project, or a closed one."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        try:
            project = _project(session, slug)
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


# ------------------------------------------------------------------ the annotator's queue


@contextlib.contextmanager
def _writing(session: Session | None, engine: Engine | None) -> Iterator[Session]:
    # A study step's hooks already run inside the participant's write transaction (ctx.session):
    # work in it, so the label commits with the step's answer (a second transaction would wait on
    # SQLite's write lock held by the first).
    if session is not None:
        yield session
    else:
        with write_transaction(engine) as own:
            yield own


def _lock_project(session: Session, slug: str) -> LabelingProject:
    project = session.exec(select(LabelingProject).where(LabelingProject.slug == slug).with_for_update()).first()
    if project is None or project.slug.startswith(IMPORTING):
        raise LabelingError(f"There is no labeling project called {echo(slug)}.")
    return project


def may_label(session: Session, project_id: int, annotator: str) -> bool:
    """Whether ``annotator`` may label the project: an account must be an active researcher or
    admin, or on the project's team; a study participant (not ``user:``) was admitted by its study."""
    if not annotator.startswith(ACCOUNT):
        return True
    user_id = annotator.removeprefix(ACCOUNT)
    if not user_id.isdigit():
        return False
    row = session.connection().execute(sql.MEMBERSHIP, {"project_id": project_id, "user_id": int(user_id)}).first()
    return row is not None and (row.role in MAY_LABEL_ANY or row.member_id is not None)


def _require_member(session: Session, project, annotator: str) -> None:
    """Raises NotAMember unless ``annotator`` may label ``project`` (a row with ``id`` and ``slug``)."""
    if not may_label(session, project.id, annotator):
        raise NotAMember(f"You are not on the team of the labeling project '{project.slug}': a researcher adds "
                         "annotators to a project under Admin → Labeling projects.")


def _annotator_project(session: Session, slug: str, annotator: str):
    """The project's row, with this annotator's requests in it serialised (two tabs, a double
    click) while other annotators go on: a transaction-level advisory lock keyed by project and
    annotator on PostgreSQL. SQLite runs one writer at a time, which serialises them already."""
    connection = session.connection()
    project = connection.execute(sql.PROJECT, {"slug": slug}).first()
    if project is None or project.slug.startswith(IMPORTING):
        raise LabelingError(f"There is no labeling project called {echo(slug)}.")
    _require_member(session, project, annotator)
    if connection.dialect.name == "postgresql":
        # A collision of the 32-bit hash only makes two annotators wait on each other.
        connection.execute(sql.LOCK_ANNOTATOR, {"project_id": project.id,
                                                "annotator_key": zlib.crc32(annotator.encode()) - (1 << 31)})
    return project


def _count(session: Session, item_id: int, change: int) -> None:
    """Move an item's count of claims holding a place (``LabelingItem.active_claims``)."""
    session.connection().execute(sql.MOVE_COUNT, {"item_id": item_id, "change": change})


def _release_stale(session: Session, project) -> bool:
    """Release the project's queue claims held past ``release_after_minutes``; whether there were any.

    An item whose annotator went away goes back to the queue (for others: the claim row stays,
    so it never comes back to the same person). Quiz and gold claims are kept (see
    ``sql.STALE_CLAIMS``): the annotator finds the same item after a long pause."""
    connection = session.connection()
    limit = utcnow() - timedelta(minutes=project.release_after_minutes)
    stale = connection.execute(sql.STALE_CLAIMS, {"project_id": project.id, "older_than": limit}).all()
    if not stale:
        return False
    connection.execute(sql.RELEASE_CLAIMS, {"claim_ids": [claim.id for claim in stale], "now": utcnow()})
    connection.execute(sql.MOVE_COUNT, [{"item_id": claim.item_id, "change": -1} for claim in stale])
    return True


def _status(session: Session, project, annotator: str) -> AnnotatorStatus:
    row = session.connection().execute(sql.STATUS, {"project_id": project.id, "annotator": annotator}).one()
    counts = dict(zip(sql.STATUS_FIELDS, (int(value) for value in row), strict=True))
    quiz_passed = None
    if project.quiz_size and counts["quiz_done"] >= project.quiz_size:
        quiz_passed = counts["quiz_correct"] / counts["quiz_done"] >= project.quiz_pass
    paused = None
    if quiz_passed is False:
        paused = (f"You answered {counts['quiz_correct']} of {counts['quiz_done']} qualification items as expected; "
                  f"{project.quiz_pass:.0%} were needed.")
    elif counts["gold_done"] >= project.min_gold_checks and counts["gold_correct"] / counts["gold_done"] < project.gold_min_accuracy:
        paused = (f"Your answers to check items agree {counts['gold_correct']} of {counts['gold_done']} times, below "
                  f"{project.gold_min_accuracy:.0%}: labeling is paused until a researcher reviews it.")
    return AnnotatorStatus(counts["labelled"], counts["skipped"], counts["gold_done"], counts["gold_correct"],
                           counts["quiz_done"], counts["quiz_correct"], quiz_passed, paused)


def _to_label(claim_id: int, purpose: str, row, status: AnnotatorStatus, project) -> ItemToLabel:
    item = row.item
    quiz_left = max(0, project.quiz_size - status.quiz_done) if purpose == "quiz" else 0
    return ItemToLabel(claim_id, row.key, item.get("behavior", ""), item.get("context_string", ""),
                       item.get("generation", ""), purpose, status.labelled, quiz_left)


def _claim(session: Session, project, row, annotator: str, purpose: str) -> int:
    connection = session.connection()
    claim_id = connection.execute(sql.INSERT_CLAIM, {
        "project_id": project.id, "item_id": row.id, "annotator": annotator, "purpose": purpose, "status": "open",
        "claimed_at": utcnow(), "finished_at": None, "skip_reason": None}).inserted_primary_key[0]
    connection.execute(sql.MOVE_COUNT, {"item_id": row.id, "change": +1})
    return claim_id


def _claimed(session: Session, project, row, annotator: str, purpose: str, status: AnnotatorStatus) -> ItemToLabel:
    return _to_label(_claim(session, project, row, annotator, purpose), purpose, row, status, project)


def next_item(slug: str, annotator: str, *, session: Session | None = None,
              engine: Engine | None = None) -> ItemToLabel | None:
    """The item this annotator labels now: the one they hold (after a reload), a quiz item, a gold
    check, or the next item of the queue. None when nothing is left for them.

    Raises:
        AnnotatorPaused: the quiz was failed, or gold accuracy fell below the threshold.
        NotAMember: an annotator account that is not on the project's team.
        LabelingError: no such project, or it is closed.
    """
    if not annotator:
        raise LabelingError("An annotator is needed.")
    with _writing(session, engine) as session:
        project = _annotator_project(session, slug, annotator)
        if not project.is_open:
            raise LabelingError("This labeling project is closed.")
        released_any = _release_stale(session, project)
        connection = session.connection()
        mine = {"project_id": project.id, "annotator": annotator}
        held = connection.execute(sql.HELD, mine).first()
        status = _status(session, project, annotator)
        if held is not None:
            return _to_label(held.id, held.purpose, held, status, project)
        if status.paused:
            raise AnnotatorPaused(status.paused)
        if project.quiz_size and status.quiz_passed is None:
            row = connection.execute(sql.QUIZ_ITEM, {**mine, "quiz_size": project.quiz_size}).first()
            if row is not None:
                return _claimed(session, project, row, annotator, "quiz", status)
        # One gold check after every ``gold_every`` regular items (``gold_checks_among`` counts them).
        regular_done = status.labelled - status.quiz_done - status.gold_checks
        if project.gold_every and regular_done and regular_done % project.gold_every == 0 \
                and regular_done // project.gold_every > status.gold_checks:
            row = connection.execute(sql.GOLD_ITEM, mine).first()
            if row is not None:
                return _claimed(session, project, row, annotator, "gold", status)
        row = _available_row(session, project, annotator, claiming=True, may_wait=not released_any)
        if row is None:
            return None
        return _claimed(session, project, row, annotator, "queue", status)


def _available_row(session: Session, project, annotator: str, *, claiming: bool = False, may_wait: bool = True):
    """The next regular item (id, key, item) that still wants a label and that this annotator
    never held: one someone already started first (its overlap completes sooner), else the first
    in queue order. Both reads go by index (the started ones are few; the queue is read in
    position order).

    ``claiming``: lock the row as it is chosen, skipping rows other annotators are claiming
    (PostgreSQL re-checks a locked row against the condition, so the overlap is never exceeded).
    When every candidate is being claimed (the end of the queue), wait for them instead of
    answering "nothing left" too early, unless ``may_wait`` is false: a transaction that already
    holds item rows (it released stale claims) must not wait on others, or two could deadlock.
    """
    modes = (["skip", "wait"] if may_wait else ["skip"]) if claiming else [None]
    connection = session.connection()
    mine = {"project_id": project.id, "annotator": annotator}
    for mode in modes:
        for query in sql.WANTING[mode]:
            row = connection.execute(query, mine).first()
            if row is not None:
                return row
    return None


def has_item_for(slug: str, annotator: str, *, session: Session | None = None, engine: Engine | None = None) -> bool:
    """Whether ``next_item`` would give this annotator an item now, without claiming one (a read:
    study steps ask it to decide whether another labeling round is shown). Claims left open too
    long count as taken here until ``next_item`` releases them."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        connection = session.connection()
        project = connection.execute(sql.PROJECT, {"slug": slug}).first()
        if project is None or not project.is_open or not may_label(session, project.id, annotator):
            return False
        if connection.execute(sql.HAS_OPEN_CLAIM, {"project_id": project.id, "annotator": annotator}).first():
            return True
        status = _status(session, project, annotator)
        if status.paused:
            return False
        if project.quiz_size and status.quiz_passed is None:
            return True  # the quiz has quiz_size gold items, checked when the project was created
        return _available_row(session, project, annotator) is not None


def shown_item(slug: str, annotator: str, *, session: Session | None = None,
               engine: Engine | None = None) -> ItemToLabel | None:
    """The item ``next_item`` last gave this annotator and that they have not labelled or skipped
    (also when it was released meanwhile: ``submit_label`` still takes its label), without
    claiming anything: what a page that runs in a read shows. None when there is none."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        connection = session.connection()
        project = connection.execute(sql.PROJECT, {"slug": slug}).first()
        if project is None or not may_label(session, project.id, annotator):
            return None
        row = connection.execute(sql.SHOWN, {"project_id": project.id, "annotator": annotator}).first()
        if row is None:
            return None
        return _to_label(row.id, row.purpose, row, _status(session, project, annotator), project)


def _own_open_claim(session: Session, claim_id: int, annotator: str):
    """The claim, when it is this annotator's and they are (still) on the project's team."""
    claim = session.connection().execute(sql.CLAIM_FOR_UPDATE, {"claim_id": claim_id}).first()
    if claim is None or claim.annotator != annotator:
        raise LabelingError("This item is not yours to label; reload the page to get your next item.")
    if not may_label(session, claim.project_id, annotator):
        project = session.get(LabelingProject, claim.project_id)
        _require_member(session, project, annotator)
    return claim


def submit_label(claim_id: int, annotator: str, score: int, *, flags: list[str] | tuple[str, ...] = (),
                 rationale: str = "", ms_spent: int | None = None, session: Session | None = None,
                 engine: Engine | None = None) -> HumanLabel:
    """Store the label of a claimed item. A second submit of the same claim (a double click, a
    resent request) returns the label already stored and changes nothing."""
    check_score(score)
    unknown = [f for f in flags if f not in FLAGS]
    if unknown:
        raise LabelingError(f"Unknown flag {echo(unknown[0])}; the flags are {', '.join(FLAGS)}.")
    check_rationale(rationale)
    with _writing(session, engine) as session:
        claim = _own_open_claim(session, claim_id, annotator)
        connection = session.connection()
        if claim.status == "done":  # a done claim has its label (undo deletes both together)
            return HumanLabel(**connection.execute(sql.LABEL_OF_CLAIM, {"claim_id": claim.id}).one()._asdict())
        if claim.status == "skipped":
            raise LabelingError("You skipped this item; undo the skip to label it.")
        # A released claim still takes its label: the work was done, and losing it would be worse
        # than one label more than the overlap asked for.
        if claim.status == "released":
            _count(session, claim.item_id, +1)  # the late label holds a place again
        values = {"project_id": claim.project_id, "item_id": claim.item_id, "claim_id": claim.id,
                  "annotator": annotator, "score": score, "flags": list(flags), "rationale": rationale or "",
                  "ms_spent": None if ms_spent is None else max(0, int(ms_spent)), "created_at": utcnow()}
        label_id = connection.execute(sql.INSERT_LABEL, values).inserted_primary_key[0]
        connection.execute(sql.FINISH_CLAIM, {"claim_id": claim.id, "new_status": "done", "now": utcnow(),
                                              "reason": None})
        return HumanLabel(id=label_id, **values)


def check_score(score: object) -> None:
    """Raises LabelingError unless ``score`` is a whole number from 1 to 5."""
    if not isinstance(score, int) or isinstance(score, bool) or not 1 <= score <= 5:
        raise LabelingError(f"The score must be a whole number from 1 to 5, got {echo(score)}.")


def check_rationale(rationale: str | None) -> None:
    """Raises LabelingError when the rationale is longer than the label can keep: the label is then
    not stored at all (a shortened or emptied rationale would change what the annotator said)."""
    if len(rationale or "") > RATIONALE_CHARS:
        raise LabelingError(f"The rationale has {len(rationale):,} characters; at most {RATIONALE_CHARS:,} are "
                            "allowed. Shorten it, then score the item again: nothing was saved.")


def skip(claim_id: int, annotator: str, reason: str, *, session: Session | None = None,
         engine: Engine | None = None) -> None:
    """Skip a claimed item with a reason; it goes back to the queue for others."""
    reason = (reason or "").strip()
    if not reason:
        raise LabelingError("Please say why you skip this item.")
    if len(reason) > 500:
        raise LabelingError(f"The reason has {len(reason):,} characters; at most 500 are allowed.")
    with _writing(session, engine) as session:
        claim = _own_open_claim(session, claim_id, annotator)
        if claim.status in ("done", "skipped"):
            return
        if claim.purpose == "quiz":
            # A skipped quiz item is never offered again, so the quiz could never be completed, and
            # an unfinished quiz neither qualifies nor pauses: the queue would open unqualified.
            raise LabelingError("Qualification items cannot be skipped: score it as well as you can.")
        if claim.status == "open":
            _count(session, claim.item_id, -1)
        session.connection().execute(sql.FINISH_CLAIM, {"claim_id": claim.id, "new_status": "skipped",
                                                        "now": utcnow(), "reason": reason})


def undo_last(slug: str, annotator: str, *, engine: Engine | None = None) -> str | None:
    """Take back this annotator's last label or skip in the project; the item is theirs again and
    comes next. Returns its key, or None when there is nothing to undo."""
    with write_transaction(engine) as session:
        project = _annotator_project(session, slug, annotator)
        claim = session.exec(select(LabelingClaim).where(
            LabelingClaim.project_id == project.id, LabelingClaim.annotator == annotator,
            LabelingClaim.status.in_(("done", "skipped"))).order_by(LabelingClaim.finished_at.desc(),
                                                                   LabelingClaim.id.desc()).limit(1)).first()
        if claim is None:
            return None
        if session.exec(select(Adjudication.id).where(Adjudication.item_id == claim.item_id)).first() is not None:
            raise LabelingError("This item was adjudicated already; its label can no longer be undone.")
        for label in session.exec(select(HumanLabel).where(HumanLabel.claim_id == claim.id)).all():
            session.delete(label)
        # Any other open claim of theirs goes back first, so the undone item is the one shown next.
        for other in session.exec(select(LabelingClaim).where(
                LabelingClaim.project_id == project.id, LabelingClaim.annotator == annotator,
                LabelingClaim.status == "open")).all():
            _count(session, other.item_id, -1)
            session.delete(other)
        if claim.status == "skipped":
            _count(session, claim.item_id, +1)
        claim.status = "open"
        claim.skip_reason = None
        claim.finished_at = None
        claim.claimed_at = utcnow()
        session.add(claim)
        return session.get(LabelingItem, claim.item_id).key


# ------------------------------------------------------------------ panel studies


def gold_checks_among(items: int, gold_every: int, gold_left: int) -> int:
    """How many of an annotator's first ``items`` items after the quiz are gold checks.

    ``next_item`` gives a gold check after every ``gold_every`` regular items (regular, ..., gold,
    regular, ...: one in each run of ``gold_every + 1``) while the annotator has gold items left
    that they have not seen (``gold_left``: the project's gold items beyond the quiz)."""
    if gold_every <= 0 or items <= 0:
        return 0
    return max(0, min(items // (gold_every + 1), gold_left))


@dataclass(frozen=True)
class PanelPlan:
    """What each worker of a panel study over a project rates (``panel_plan``): the project's quiz
    first, then the study's ``items`` from the project's queue, gold checks mixed in at its rate."""

    project: str
    quiz: int  # qualification items, rated first: all gold (the project's quiz)
    items: int  # items after the quiz, at most (the study's ITEMS)
    gold_checks: int  # of those, gold checks at the project's rate
    gold_every: int  # the project's rate: one gold check after this many new items (0: none)
    quiz_pass: float  # share of the quiz to answer as expected to go on

    @property
    def new(self) -> int:
        """Items of the queue (not gold) a worker labels, at most."""
        return self.items - self.gold_checks

    @property
    def rounds(self) -> int:
        """Items a worker rates in all, at most: the quiz and the items after it."""
        return self.quiz + self.items

    @property
    def gold(self) -> int:
        """Gold items among them: the quiz and the gold checks."""
        return self.quiz + self.gold_checks

    def summary(self) -> str:
        """One paragraph for a researcher: how many items each worker gets and how many are gold."""
        checks = (f"{self.gold_checks} gold check{'s' * (self.gold_checks != 1)} (one after every "
                  f"{self.gold_every} new items)" if self.gold_every else "no gold checks (the project has none)")
        work = f"up to {self.items} items from the queue of '{self.project}': {self.new} new and {checks}"
        if not self.quiz:
            return f"Each worker rates {work}. In all at most {self.rounds} items, {self.gold} of them gold."
        return (f"Each worker first rates the project's {self.quiz} qualification items (all gold; "
                f"{self.quiz_pass:.0%} must agree with the known score, else the worker is screened out), then "
                f"{work}. In all at most {self.rounds} items, {self.gold} of them gold.")


def panel_plan(slug: str, items: int, *, session: Session | None = None, engine: Engine | None = None) -> PanelPlan:
    """What each worker of a panel study with ``ITEMS = items`` over project ``slug`` rates.

    Raises:
        LabelingError: no such project.
    """
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        project = _project(session, slug)
        gold = session.exec(select(func.count()).select_from(LabelingItem).where(
            LabelingItem.project_id == project.id, LabelingItem.is_gold)).one()
    checks = gold_checks_among(items, project.gold_every, int(gold) - project.quiz_size)
    return PanelPlan(slug, project.quiz_size, items, checks, project.gold_every, project.quiz_pass)


# ------------------------------------------------------------------ researchers


def status_of(slug: str, annotator: str, *, session: Session | None = None,
              engine: Engine | None = None) -> AnnotatorStatus:
    """The annotator's counts in the project (``session``: read inside a study step's transaction,
    which sees the label it has just stored)."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        project = _project(session, slug)
        return _status(session, project, annotator)


def progress(slug: str, *, engine: Engine | None = None) -> ProjectProgress:
    with read_session(engine) as session:
        project = _project(session, slug)
        items, gold, wanted = session.exec(
            select(func.count(), func.coalesce(func.sum(case((LabelingItem.is_gold, 1), else_=0)), 0),
                   func.coalesce(func.sum(case((LabelingItem.is_gold, 0), else_=LabelingItem.target_labels)), 0))
            .where(LabelingItem.project_id == project.id)).one()
        done = session.exec(select(func.count()).select_from(HumanLabel).join(LabelingItem, LabelingItem.id == HumanLabel.item_id)
                            .where(HumanLabel.project_id == project.id, ~LabelingItem.is_gold)).one()
        open_claims = session.exec(select(func.count()).select_from(LabelingClaim).where(
            LabelingClaim.project_id == project.id, LabelingClaim.status == "open")).one()
        annotators = session.exec(select(LabelingClaim.annotator).where(LabelingClaim.project_id == project.id)
                                  .distinct()).all()
        result = ProjectProgress(int(items), int(gold), int(wanted), int(done), int(open_claims),
                                 {a: _status(session, project, a) for a in sorted(annotators)})
    result.to_adjudicate = len(disagreements(slug, engine=engine))
    return result


@dataclass(frozen=True)
class Disagreement:
    key: str
    behavior: str
    context_string: str
    generation: str
    labels: tuple[tuple[str, int], ...]  # (annotator, score), in labelling order


def needs_adjudication(scores: list[int]) -> bool:
    """Labels disagree on harmful vs not, or their scores lie 2 or more apart."""
    if len(scores) < 2:
        return False
    return len({s >= HARMFUL_FROM for s in scores}) > 1 or max(scores) - min(scores) >= 2


def disagreements(slug: str, *, engine: Engine | None = None) -> list[Disagreement]:
    """Items whose labels call for an adjudicator and that have none yet, in queue order.

    Gold items are left out: every annotator answers them (quiz and checks), so their labels
    always differ somewhere, and their score is known already."""
    with read_session(engine) as session:
        project = _project(session, slug)
        rows = session.exec(
            select(LabelingItem, HumanLabel.annotator, HumanLabel.score)
            .join(HumanLabel, HumanLabel.item_id == LabelingItem.id)
            .where(LabelingItem.project_id == project.id, ~LabelingItem.is_gold,
                   ~LabelingItem.id.in_(select(Adjudication.item_id).where(Adjudication.project_id == project.id)))
            .order_by(LabelingItem.position, HumanLabel.id)).all()
    grouped: dict[int, tuple[LabelingItem, list[tuple[str, int]]]] = {}
    for row, annotator, score in rows:
        grouped.setdefault(row.id, (row, []))[1].append((annotator, score))
    return [Disagreement(row.key, row.item.get("behavior", ""), row.item.get("context_string", ""),
                         row.item.get("generation", ""), tuple(labels))
            for row, labels in grouped.values() if needs_adjudication([s for _, s in labels])]


def adjudicate(slug: str, key: str, score: int, by: str, *, note: str = "", engine: Engine | None = None) -> None:
    """Record the adjudicator's decision on an item (once; a second decision is refused; gold items
    have their known score instead)."""
    check_score(score)
    if len(note or "") > RATIONALE_CHARS:  # the column's size: refused whole, never cut
        raise LabelingError(f"The note has {len(note):,} characters; at most {RATIONALE_CHARS:,} are allowed.")
    with write_transaction(engine) as session:
        project = _lock_project(session, slug)
        row = session.exec(select(LabelingItem).where(LabelingItem.project_id == project.id,
                                                      LabelingItem.key == key)).first()
        if row is None:
            raise LabelingError(f"The project has no item {echo(key)}.")
        if row.is_gold:
            raise LabelingError(f"The item {echo(key)} is a gold item: its score is known, it is not adjudicated.")
        if session.exec(select(Adjudication.id).where(Adjudication.item_id == row.id)).first() is not None:
            raise LabelingError(f"The item {echo(key)} is adjudicated already.")
        session.add(Adjudication(project_id=project.id, item_id=row.id, score=score, by=by, note=note))


def labelled_items(slug: str, *, include_gold: bool = False, engine: Engine | None = None) -> list[Item]:
    """The project's items with their labels (in labelling order) and adjudications: what the
    audit and the exporters read."""
    with read_session(engine) as session:
        project = _project(session, slug)
        rows = session.exec(select(LabelingItem).where(LabelingItem.project_id == project.id)
                            .order_by(LabelingItem.position)).all()
        labels = session.exec(select(HumanLabel).where(HumanLabel.project_id == project.id)
                              .order_by(HumanLabel.id)).all()
        decisions = session.exec(select(Adjudication).where(Adjudication.project_id == project.id)).all()
    by_item: dict[int, list[Label]] = defaultdict(list)
    for label in labels:
        by_item[label.item_id].append(Label(annotator_id=label.annotator, score=label.score, flags=label.flags,
                                            rationale=label.rationale, ms_spent=label.ms_spent, seq=label.id))
    decided = {d.item_id: {"score": d.score, "by": d.by} for d in decisions}
    items = []
    for row in rows:
        if row.is_gold and not include_gold:
            continue
        items.append(Item.model_validate({**row.item, "labels": [lb.model_dump() for lb in by_item[row.id]],
                                          "adjudicated": decided.get(row.id)}))
    return items
