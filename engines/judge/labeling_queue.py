"""The annotator's queue of a labeling project: claims, labels, skips, undo, and panel plans.

Follows the labeling protocol of ``docs/judge.md``, Method, "Labeling protocol": a qualification
quiz on gold items (the paper's workers first passed a 10-item quiz), gold checks mixed into the
queue with a pause threshold (Potato's test questions), overlap k on a fraction of the items
(Argilla's ``min_submitted``, Prodigy's ``annotations_per_task``), work stealing that never gives an
item twice to one annotator, and release of items whose annotator left. Annotators see only the
original behaviour, its context and the generation: judge verdicts, the attack and other labels
stay hidden (anchoring; the paper's annotators saw the unaltered prompt and the generation).

Only the project's team labels it: an account with the annotator role must be a member
(``engines.judge.members``; researchers and admins may label any project); participants of a
panel study are admitted by the study that names the project. Every labeling call checks it.

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
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, select

from engines.judge import labeling_sql as sql
from engines.judge.items import FLAGS
from engines.judge.labeling import (
    ACCOUNT,
    MAY_LABEL_ANY,
    RATIONALE_CHARS,
    AnnotatorPaused,
    LabelingError,
    NotAMember,
    project_row,
    visible,
)
from engines.judge.models import Adjudication, HumanLabel, LabelingClaim, LabelingItem, LabelingProject
from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo
from engines.platform.models import utcnow


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
    project = visible(connection.execute(sql.PROJECT, {"slug": slug}).first(), slug)
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


def annotator_status(session: Session, project, annotator: str) -> AnnotatorStatus:
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
        status = annotator_status(session, project, annotator)
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
        status = annotator_status(session, project, annotator)
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
        return _to_label(row.id, row.purpose, row, annotator_status(session, project, annotator), project)


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
        project = project_row(session, slug)
        gold = session.exec(select(func.count()).select_from(LabelingItem).where(
            LabelingItem.project_id == project.id, LabelingItem.is_gold)).one()
    checks = gold_checks_among(items, project.gold_every, int(gold) - project.quiz_size)
    return PanelPlan(slug, project.quiz_size, items, checks, project.gold_every, project.quiz_pass)


# ------------------------------------------------------------------ an annotator's counts


def status_of(slug: str, annotator: str, *, session: Session | None = None,
              engine: Engine | None = None) -> AnnotatorStatus:
    """The annotator's counts in the project (``session``: read inside a study step's transaction,
    which sees the label it has just stored)."""
    with (contextlib.nullcontext(session) if session is not None else read_session(engine)) as session:
        project = project_row(session, slug)
        return annotator_status(session, project, annotator)


