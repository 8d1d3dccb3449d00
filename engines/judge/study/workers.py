"""``workers.csv`` of a judge-labeling study's export: each panel worker as an annotator.

One row per participant: their status and screening result (as in ``participants.csv``), how their
qualification quiz went, how many items of the queue they labelled, how their gold checks went,
and whether the project paused them. The labels themselves are in the study's ``responses.csv``
and in the labeling project (annotator ``study:<study>:<panel id>``).
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.judge import labeling, labeling_queue
from engines.judge.study.queue import annotator_name
from engines.platform.csv_safety import csv_bytes
from engines.platform.db import read_session
from engines.platform.export import screening_reason
from engines.platform.models import Participant, ParticipantStatus
from engines.platform.registry import get_protocol
from engines.platform.study_admin import get_study

WORKER_COLUMNS = ["participant_id", "external_id", "status", "screened_out", "screening_reason", "quiz_done",
                  "quiz_correct", "quiz_passed", "items_labelled", "gold_checks", "gold_correct", "paused"]


def workers_csv(slug: str, *, engine: Engine | None = None) -> bytes:
    """The CSV described in the module docstring, for the study ``slug``."""
    study = get_study(slug, engine=engine)
    protocol = get_protocol(study.protocol)
    constants = protocol.constants_for(study.config)
    with read_session(engine) as session:
        participants = session.exec(select(Participant).where(Participant.study_id == study.id)
                                    .order_by(Participant.id)).all()
        rows = [_row(session, participant, slug, constants, protocol) for participant in participants]
    return csv_bytes(WORKER_COLUMNS, rows)


def _row(session, participant: Participant, slug: str, constants, protocol) -> dict:
    try:
        status = labeling_queue.status_of(constants.PROJECT, annotator_name(slug, participant.external_id), session=session)
    except labeling.LabelingError:  # the project was deleted: the study's own columns remain
        status = None
    row = {"participant_id": participant.id, "external_id": participant.external_id, "status": participant.status,
           "screened_out": participant.status == ParticipantStatus.SCREENED_OUT,
           "screening_reason": screening_reason(participant, protocol, constants, None)}
    if status is not None:
        row |= {"quiz_done": status.quiz_done, "quiz_correct": status.quiz_correct,
                "quiz_passed": "" if status.quiz_passed is None else status.quiz_passed,
                "items_labelled": status.labelled - status.quiz_done - status.gold_checks,
                "gold_checks": status.gold_checks, "gold_correct": status.gold_correct, "paused": status.paused or ""}
    return row

