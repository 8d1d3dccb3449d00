"""The collaboration study's own export files: interactions, controller-stream histories and their audit.

Added to the platform's study export (``engines.platform.export``) through the study module's
``export_files`` hook, so one zip holds the answers, the derived interaction records and, per
condition stream, every threshold update in the order it was applied, with its phase
(calibration / excluded / online), delay and the audit of the guarantee (Noorani et al.,
ICML 2026, arXiv:2602.17646; the audit is ``engines.collab.store.audit_report``).

Files:
- ``interactions.csv``: one row per started interaction (``record.InteractionRecord``: seed,
  difficulty, frozen thresholds and ``frozen_seq``, the rounds as JSON, final answer, truth, errors,
  the stream update's seq and phase);
- ``controller_updates.csv``: one row per stream update (key, seq, interaction, phase, delay, s(Y),
  errors, thresholds before and after);
- ``controller_streams.json``: per stream, the audit (calibration fit, phase counts, delays,
  running rates, targets, the delay-aware and the textbook bound), or the reason the audit failed;
  the audit also checks each participant's record (the thresholds it was shown and the update
  count it froze them at) against the history (``audit_study_stream``).
"""

from __future__ import annotations

import json

from sqlalchemy.engine import Engine

from engines.collab import store
from engines.collab.study.record import StudyInteraction
from engines.collab.study.rounds import interaction_key
from engines.collab.study.stored import interaction_rows
from engines.platform.csv_safety import csv_bytes

INTERACTION_COLUMNS = ["participant_id", "external_id", "condition", "index", "seed", "difficulty", "mode", "stream",
                       "q_harm", "q_comp", "frozen_seq", "calibrating", "rounds", "final_round", "final_answer",
                       "true_count", "correct", "err_harm", "err_comp", "fired_harm", "fired_comp", "stream_seq",
                       "stream_phase", "q_harm_after", "q_comp_after"]
UPDATE_COLUMNS = ["stream", "condition", "seq", "interaction_key", "participant_id", "phase", "frozen_seq", "delay",
                  "score_true", "err_harm", "err_comp", "fired_harm", "fired_comp", "q_harm_before", "q_comp_before",
                  "q_harm_after", "q_comp_after", "created_at"]


def frozen_claims(rows: list[StudyInteraction], key: str) -> list[store.FrozenClaim]:
    """What each participant's record says its interactions on stream ``key`` were shown, for the audit.

    Records without ``frozen_seq`` (written before it was stored) cannot be placed in the
    history and are left out.
    """
    return [store.FrozenClaim(where=f"participant {row.participant_id} ({row.external_id}), interaction "
                                    f"{row.record.index + 1}",
                              frozen_seq=row.record.frozen_seq, q_harm=row.record.q_harm, q_comp=row.record.q_comp,
                              interaction_key=interaction_key(row.participant_id, row.record.index))
            for row in rows if row.record.stream == key and row.record.frozen_seq is not None]


def audit_study_stream(study_slug: str, key: str, *, engine: Engine | None = None,
                       rows: list[StudyInteraction] | None = None) -> store.StreamAudit:
    """``store.audit_report`` of one of the study's streams, with its participants' records as claims."""
    rows = interaction_rows(study_slug, engine=engine) if rows is None else rows
    return store.audit_report(key, engine=engine, claims=frozen_claims(rows, key))


def audit_stream(stream: store.StreamInfo, *, engine: Engine | None = None) -> store.StreamAudit:
    """The audit of a listed stream (``store.list_streams``): with its study's participants' records as
    claims when it belongs to a study, the stream alone otherwise."""
    if stream.study_slug is None:
        return store.audit_report(stream.key, engine=engine)
    return audit_study_stream(stream.study_slug, stream.key, engine=engine)


def study_files(study_slug: str, *, engine: Engine | None = None) -> dict[str, bytes]:
    """The three files of the module docstring for ``study_slug``."""
    typed = interaction_rows(study_slug, engine=engine)
    interactions = [row.to_row() for row in typed]
    updates, audits = [], {}
    for stream in store.list_streams(study=study_slug, engine=engine):
        key, condition = stream.key, stream.condition
        try:
            report = audit_study_stream(study_slug, key, engine=engine, rows=typed)
        except store.StreamError as exc:  # a broken history must still export, with the reason
            audits[key] = {"condition": condition, "audit": None, "audit_error": str(exc)}
            rows = store.history(key, engine=engine)
        else:
            audits[key] = {"condition": condition, "audit": report.to_dict()}
            rows = report.history
        for u in rows:
            updates.append({"stream": key, "condition": condition, "seq": u.seq, "interaction_key": u.interaction_key,
                            "participant_id": u.participant_id, "phase": u.phase, "frozen_seq": u.frozen_seq,
                            "delay": store.delay_of(u) if u.frozen_seq is not None else None,
                            "score_true": u.score_true, "err_harm": u.err_harm, "err_comp": u.err_comp,
                            "fired_harm": u.fired_harm, "fired_comp": u.fired_comp,
                            "q_harm_before": u.q_harm_before, "q_comp_before": u.q_comp_before,
                            "q_harm_after": u.q_harm_after, "q_comp_after": u.q_comp_after,
                            "created_at": u.created_at.isoformat() if u.created_at else None})
    return {
        "interactions.csv": csv_bytes(INTERACTION_COLUMNS, interactions, extra="ignore"),
        "controller_updates.csv": csv_bytes(UPDATE_COLUMNS, updates, extra="ignore"),
        "controller_streams.json": json.dumps(audits, indent=2, sort_keys=True, default=str).encode(),
    }


__all__ = ["INTERACTION_COLUMNS", "UPDATE_COLUMNS", "audit_stream", "audit_study_stream", "frozen_claims", "study_files"]
