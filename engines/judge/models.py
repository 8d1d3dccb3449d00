"""Database tables of judge labeling: projects, their items, who holds which item, and the labels.

A project's queue is its ``labeling_item`` rows in a fixed, stratified order. An annotator
takes an item by *claiming* it (``labeling_claim``, unique per item and annotator, so nobody is
ever given the same item twice); a claim becomes done when its label is stored (one label per
claim), is skipped with a reason, or is released when the annotator went away (after
``release_after_minutes``), so the item returns to the queue for someone else. An item wants
``target_labels`` labels: 1, or the overlap k for the fraction of items chosen at import. Gold
items carry a known score, for the qualification quiz and the checks mixed into the queue.
Annotators are named by a string: ``user:<account id>`` for accounts, ``<panel>:<id>`` for
participants arriving from a panel link. An account with the annotator role labels a project only
when it is on the project's team (``labeling_member``, set by a researcher or an admin);
participants are admitted by their study instead.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, Index, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from engines.platform.models import utcnow


class LabelingProject(SQLModel, table=True):
    __tablename__ = "labeling_project"

    id: int | None = Field(default=None, primary_key=True)
    slug: str = Field(max_length=64, unique=True, index=True)
    title: str = Field(default="", max_length=200)
    guidelines: str = Field(default="", sa_column=Column(Text, nullable=False))  # markdown
    overlap_k: int = 2  # labels wanted on the overlap items
    overlap_fraction: float = 0.2  # share of (non-gold) items that get overlap_k labels
    gold_every: int = 20  # one gold check after this many labels (~5%); 0: none
    gold_min_accuracy: float = 0.8  # below it (after min_gold_checks), the annotator is paused
    min_gold_checks: int = 3
    quiz_size: int = 10  # gold items of the qualification quiz; 0: no quiz
    quiz_pass: float = 0.8
    release_after_minutes: float = 30.0
    is_open: bool = True
    created_at: datetime = Field(default_factory=utcnow)
    created_by: int | None = Field(default=None, foreign_key="user.id")


class LabelingItem(SQLModel, table=True):
    __tablename__ = "labeling_item"
    __table_args__ = (UniqueConstraint("project_id", "key", name="uq_labeling_item_key"),
                      Index("ix_labeling_item_queue", "project_id", "is_gold", "position"))

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="labeling_project.id", index=True)
    key: str = Field(max_length=512)
    position: int  # the queue order (stratified shuffle at import)
    target_labels: int = 1
    # Claims that hold one of the wanted places (open or done), moved with every claim change (a
    # relative update under the row's lock), so finding the next item reads this row instead of
    # counting claims.
    active_claims: int = 0
    is_gold: bool = False
    gold_score: int | None = None
    item: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))  # the Item, as imported


class LabelingClaim(SQLModel, table=True):
    """An item given to an annotator. ``status``: open | done | skipped | released."""

    __tablename__ = "labeling_claim"
    __table_args__ = (UniqueConstraint("item_id", "annotator", name="uq_labeling_claim_item_annotator"),
                      Index("ix_labeling_claim_annotator", "project_id", "annotator", "status"))

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="labeling_project.id", index=True)
    item_id: int = Field(foreign_key="labeling_item.id", index=True)
    annotator: str = Field(max_length=160)
    purpose: str = Field(default="queue", max_length=16)  # queue | gold | quiz
    status: str = Field(default="open", max_length=16, index=True)
    claimed_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    skip_reason: str | None = Field(default=None, max_length=500)


class HumanLabel(SQLModel, table=True):
    """One submitted label; at most one per claim, so a resent submit is stored once."""

    __tablename__ = "human_label"
    __table_args__ = (UniqueConstraint("claim_id", name="uq_human_label_claim"),)

    id: int | None = Field(default=None, primary_key=True)  # also the labelling order (seq)
    project_id: int = Field(foreign_key="labeling_project.id", index=True)
    item_id: int = Field(foreign_key="labeling_item.id", index=True)
    claim_id: int = Field(foreign_key="labeling_claim.id")
    annotator: str = Field(max_length=160, index=True)
    score: int
    flags: list = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    rationale: str = Field(default="", max_length=2000)
    ms_spent: int | None = None
    created_at: datetime = Field(default_factory=utcnow)


class Adjudication(SQLModel, table=True):
    __tablename__ = "labeling_adjudication"
    __table_args__ = (UniqueConstraint("item_id", name="uq_labeling_adjudication_item"),)

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="labeling_project.id", index=True)
    item_id: int = Field(foreign_key="labeling_item.id")
    score: int
    by: str = Field(max_length=160)
    note: str = Field(default="", max_length=2000)
    created_at: datetime = Field(default_factory=utcnow)


class LabelingMember(SQLModel, table=True):
    """An account on a project's team: annotator accounts label only the projects they are on."""

    __tablename__ = "labeling_member"
    __table_args__ = (UniqueConstraint("project_id", "user_id", name="uq_labeling_member_project_user"),)

    id: int | None = Field(default=None, primary_key=True)
    project_id: int = Field(foreign_key="labeling_project.id")  # the unique constraint's index leads with it
    user_id: int = Field(foreign_key="user.id", index=True)
    added_by: int | None = Field(default=None, foreign_key="user.id")
    added_at: datetime = Field(default_factory=utcnow)
