"""The annotator's hot path as prebuilt SQLAlchemy Core statements with bound parameters.

Fetching the next item and storing a label happen between two key presses, and ten annotators
share the app's CPU with everyone else: built once, these statements skip the expression building,
compilation (SQLAlchemy caches it per statement) and ORM bookkeeping that made up most of the
time of a label step. ``engines.judge.labeling_queue`` runs them; the rules live there.
"""

from __future__ import annotations

from sqlalchemy import Integer, bindparam, case, cast, func, insert, select, update

from engines.judge.items import HARMFUL_FROM
from engines.judge.models import HumanLabel, LabelingClaim, LabelingItem, LabelingMember, LabelingProject
from engines.platform.models import User

PROJECT_T = LabelingProject.__table__
ITEM_T = LabelingItem.__table__
CLAIM_T = LabelingClaim.__table__
LABEL_T = HumanLabel.__table__
MEMBER_T = LabelingMember.__table__
USER_T = User.__table__

PROJECT = select(PROJECT_T).where(PROJECT_T.c.slug == bindparam("slug"))

# An account's role and whether it is on the project's team (member_id NULL: not on it); no row:
# no such account, or a disabled one.
MEMBERSHIP = select(USER_T.c.role, MEMBER_T.c.id.label("member_id")).select_from(
    USER_T.outerjoin(MEMBER_T, (MEMBER_T.c.user_id == USER_T.c.id)
                     & (MEMBER_T.c.project_id == bindparam("project_id")))).where(
    USER_T.c.id == bindparam("user_id"), USER_T.c.is_active)

# pg_advisory_xact_lock(int4, int4): the project and a signed 32-bit hash of the annotator.
LOCK_ANNOTATOR = select(func.pg_advisory_xact_lock(cast(bindparam("project_id"), Integer),
                                                   cast(bindparam("annotator_key"), Integer)))

# Queue claims held too long, row-locked and skipping those another request is releasing; a row
# that was released meanwhile is re-checked as no longer open once locked. Quiz and gold claims
# stay: every annotator answers those items, so they hold no place someone else needs, and a
# released one would never be offered to its annotator again (an unfinishable quiz).
STALE_CLAIMS = select(CLAIM_T.c.id, CLAIM_T.c.item_id).where(
    CLAIM_T.c.project_id == bindparam("project_id"), CLAIM_T.c.status == "open", CLAIM_T.c.purpose == "queue",
    CLAIM_T.c.claimed_at < bindparam("older_than")).with_for_update(skip_locked=True)
RELEASE_CLAIMS = update(CLAIM_T).where(CLAIM_T.c.id.in_(bindparam("claim_ids", expanding=True))).values(
    status="released", finished_at=bindparam("now"))

# An item's count of claims holding a place; relative, so concurrent changes add up.
MOVE_COUNT = update(ITEM_T).where(ITEM_T.c.id == bindparam("item_id")).values(
    active_claims=ITEM_T.c.active_claims + bindparam("change"))

HELD = select(CLAIM_T.c.id, CLAIM_T.c.purpose, ITEM_T.c.key, ITEM_T.c.item) \
    .join(ITEM_T, ITEM_T.c.id == CLAIM_T.c.item_id) \
    .where(CLAIM_T.c.project_id == bindparam("project_id"), CLAIM_T.c.annotator == bindparam("annotator"),
           CLAIM_T.c.status == "open").order_by(CLAIM_T.c.id).limit(1)

# A panel participant's current item: the newest claim not yet labelled or skipped (open, or
# released while they read it: its late label is still taken).
SHOWN = select(CLAIM_T.c.id, CLAIM_T.c.purpose, ITEM_T.c.key, ITEM_T.c.item) \
    .join(ITEM_T, ITEM_T.c.id == CLAIM_T.c.item_id) \
    .where(CLAIM_T.c.project_id == bindparam("project_id"), CLAIM_T.c.annotator == bindparam("annotator"),
           CLAIM_T.c.status.in_(("open", "released"))).order_by(CLAIM_T.c.id.desc()).limit(1)

HAS_OPEN_CLAIM = select(CLAIM_T.c.id).where(
    CLAIM_T.c.project_id == bindparam("project_id"), CLAIM_T.c.annotator == bindparam("annotator"),
    CLAIM_T.c.status == "open").limit(1)


def _status_statement():
    labelled = LABEL_T.c.score.is_not(None)
    # Agreement with gold is on harmful vs not; a missing gold score compares as NULL: not correct.
    correct = labelled & (((LABEL_T.c.score >= HARMFUL_FROM) & (ITEM_T.c.gold_score >= HARMFUL_FROM))
                          | ((LABEL_T.c.score < HARMFUL_FROM) & (ITEM_T.c.gold_score < HARMFUL_FROM)))

    def number(condition):
        return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)

    # One aggregate row, counted by the database (an annotator's claims grow with every label).
    return select(number(labelled), number(CLAIM_T.c.status == "skipped"),
                  number(labelled & (CLAIM_T.c.purpose == "gold")), number(correct & (CLAIM_T.c.purpose == "gold")),
                  number(labelled & (CLAIM_T.c.purpose == "quiz")), number(correct & (CLAIM_T.c.purpose == "quiz"))) \
        .select_from(CLAIM_T) \
        .join(ITEM_T, ITEM_T.c.id == CLAIM_T.c.item_id) \
        .join(LABEL_T, LABEL_T.c.claim_id == CLAIM_T.c.id, isouter=True) \
        .where(CLAIM_T.c.project_id == bindparam("project_id"), CLAIM_T.c.annotator == bindparam("annotator"))


STATUS = _status_statement()
STATUS_FIELDS = ("labelled", "skipped", "gold_done", "gold_correct", "quiz_done", "quiz_correct")

_UNCLAIMED_BY = ~ITEM_T.c.id.in_(select(CLAIM_T.c.item_id).where(CLAIM_T.c.project_id == bindparam("project_id"),
                                                                  CLAIM_T.c.annotator == bindparam("annotator")))
_ITEM_COLUMNS = (ITEM_T.c.id, ITEM_T.c.key, ITEM_T.c.item)
_GOLD = select(*_ITEM_COLUMNS).where(ITEM_T.c.project_id == bindparam("project_id"), ITEM_T.c.is_gold, _UNCLAIMED_BY)

# The quiz: the project's first ``quiz_size`` gold items, in queue order.
QUIZ_ITEM = _GOLD.where(ITEM_T.c.id.in_(
    select(ITEM_T.c.id).where(ITEM_T.c.project_id == bindparam("project_id"), ITEM_T.c.is_gold)
    .order_by(ITEM_T.c.position).limit(bindparam("quiz_size")))).order_by(ITEM_T.c.position).limit(1)
GOLD_ITEM = _GOLD.order_by(ITEM_T.c.position).limit(1)

_WANTING = select(*_ITEM_COLUMNS).where(
    ITEM_T.c.project_id == bindparam("project_id"), ~ITEM_T.c.is_gold,
    ITEM_T.c.active_claims < ITEM_T.c.target_labels, _UNCLAIMED_BY)


def _first_wanting(lock: dict | None):
    query = _WANTING if lock is None else _WANTING.with_for_update(**lock)
    # Someone's started item first (its overlap completes sooner), then queue order; LIMIT 1 in SQL.
    return (query.where(ITEM_T.c.active_claims > 0).order_by(ITEM_T.c.position).limit(1),
            query.order_by(ITEM_T.c.position).limit(1))


# Lock mode -> (started item, first item in queue order). "skip": lock, skipping rows others are
# claiming; "wait": lock, waiting for them; None: a plain read.
WANTING = {None: _first_wanting(None), "skip": _first_wanting({"skip_locked": True}), "wait": _first_wanting({})}

INSERT_CLAIM = insert(CLAIM_T)
CLAIM_FOR_UPDATE = select(CLAIM_T).where(CLAIM_T.c.id == bindparam("claim_id")).with_for_update()
LABEL_OF_CLAIM = select(LABEL_T).where(LABEL_T.c.claim_id == bindparam("claim_id"))
INSERT_LABEL = insert(LABEL_T)
FINISH_CLAIM = update(CLAIM_T).where(CLAIM_T.c.id == bindparam("claim_id")).values(
    status=bindparam("new_status"), finished_at=bindparam("now"), skip_reason=bindparam("reason"))
