"""What researchers see of a labeling project: its progress, the items whose labels disagree, the
adjudicator's decisions (Prodigy's ``review``), and the labelled items the audit and the exporters
read (``docs/judge.md``, Method, "Labeling protocol").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import case, func
from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.judge.items import HARMFUL_FROM, Item, Label
from engines.judge.labeling import RATIONALE_CHARS, LabelingError, project_row
from engines.judge.labeling_queue import AnnotatorStatus, annotator_status, check_score
from engines.judge.models import Adjudication, HumanLabel, LabelingClaim, LabelingItem
from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo


@dataclass
class ProjectProgress:
    items: int
    gold_items: int
    labels_wanted: int
    labels_done: int
    open_claims: int
    per_annotator: dict[str, AnnotatorStatus] = field(default_factory=dict)
    to_adjudicate: int = 0


def progress(slug: str, *, engine: Engine | None = None) -> ProjectProgress:
    with read_session(engine) as session:
        project = project_row(session, slug)
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
                                 {a: annotator_status(session, project, a) for a in sorted(annotators)})
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
        project = project_row(session, slug)
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
        project = project_row(session, slug, lock=True)
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
        project = project_row(session, slug)
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

