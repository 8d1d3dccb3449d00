"""Database tables of the online controller: one stream of thresholds per study condition.

The guarantee of the online controller is about the sequence of interactions in the order
their updates were applied, so that order is stored: every finished interaction appends one
``ControllerUpdate`` with its sequence number, its errors and the thresholds before and after,
inside the same transaction that advances the stream's state.

A stream may start with a calibration batch (``calibration_size`` > 0): its first interactions
run at the initial thresholds and only record their outcome (``phase="calibration"``); when the
batch is complete, split-conformal thresholds are fitted on it (``calibration`` keeps the fitted
state) and online updates start from them. ``frozen_seq`` (how many updates the stream had when
the interaction froze its thresholds) gives each update's delay, which enters the bound.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from engines.platform.models import utcnow


class ControllerStream(SQLModel, table=True):
    __tablename__ = "controller_stream"

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=160, unique=True, index=True)
    study_id: int | None = Field(default=None, foreign_key="study.id", index=True)
    condition: str | None = Field(default=None, max_length=64)
    initial_state: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    state: dict = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    updates: int = 0
    # Calibration batch: 0 = start online at initial_state; n = fit q_1 on the first n interactions.
    calibration_size: int = 0
    # Filled when the batch is complete: {"status": "fitted"|"failed", "seq": n, "state": {...}, "note": ...}.
    calibration: dict | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class ControllerUpdate(SQLModel, table=True):
    __tablename__ = "controller_update"
    __table_args__ = (
        # Named explicitly: the default convention names a unique constraint by its first column only.
        UniqueConstraint("stream_id", "seq", name="uq_controller_update_seq"),
        UniqueConstraint("stream_id", "interaction_key", name="uq_controller_update_interaction"),
    )

    id: int | None = Field(default=None, primary_key=True)
    stream_id: int = Field(foreign_key="controller_stream.id", index=True)
    seq: int
    interaction_key: str = Field(max_length=160)
    participant_id: int | None = Field(default=None, foreign_key="participant.id", index=True)
    err_harm: bool
    err_comp: bool
    fired_harm: bool = True
    fired_comp: bool = True
    # "calibration" (part of the batch), "excluded" (thresholds frozen before the fit, finished after:
    # recorded, not applied) or "online" (applied; counted by the guarantee).
    phase: str = Field(default="online", max_length=16)
    frozen_seq: int | None = None  # the stream's update count when the thresholds were frozen (None: not given)
    score_true: float | None = None  # s(Y) = 1 - p_AI(Y): what the calibration fit needs
    q_harm_before: float
    q_comp_before: float
    q_harm_after: float
    q_comp_after: float
    created_at: datetime = Field(default_factory=utcnow)
