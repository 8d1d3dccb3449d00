"""The study's interaction records read back from the database (participants' stored vars).

``interaction_rows`` gives one typed row per started interaction of a study's participants (for
the Participants page's report and the study's export); ``participant_interactions`` the records
of one participant. Both read the typed records (``record``) the trial step stored.
"""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.collab.study.record import InteractionLog, StudyInteraction
from engines.platform.db import read_session
from engines.platform.models import Participant, Study


def interaction_rows(study_slug: str, *, engine: Engine | None = None) -> list[StudyInteraction]:
    """One typed row per started interaction of the study's participants, from their stored vars.

    The platform export (``engines.platform.export``) has the typed answers but not participant
    vars; this gives the derived data (image seed, frozen thresholds, sets shown, truth, errors,
    stream seq) for analysis. ``StudyInteraction.to_row`` flattens a row (rounds stay a list of dicts).
    """
    rows = []
    with read_session(engine) as session:
        participants = session.exec(
            select(Participant).join(Study, Study.id == Participant.study_id)
            .where(Study.slug == study_slug).order_by(Participant.id)).all()
        for participant in participants:
            for record in InteractionLog.from_vars(participant.vars):
                rows.append(StudyInteraction(participant_id=participant.id, external_id=participant.external_id,
                                             condition=participant.condition, record=record))
    return rows


def participant_interactions(participant_id: int, *, engine: Engine | None = None) -> InteractionLog:
    """The typed interactions stored for one participant (empty for an unknown participant)."""
    with read_session(engine) as session:
        participant = session.get(Participant, participant_id)
        return InteractionLog.from_vars(participant.vars if participant is not None else None)


__all__ = ["interaction_rows", "participant_interactions"]
