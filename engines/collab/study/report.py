"""What the Participants page shows about a running collaboration study, from its stored data.

Per interaction (``stored.interaction_rows``, typed records): the participant's first answer (human alone,
before any AI set), the final answer, the truth, the sets shown. Summaries: accuracy human alone
vs final and mean set size by condition, the same over the interaction index, and one row per
participant (measurements 3–4 of ``docs/collab.md``, Method).
"""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
from sqlalchemy.engine import Engine

from engines.collab.study.stored import interaction_rows
from engines.platform.csv_safety import frame_csv_bytes

COLUMNS = ["participant_id", "external_id", "condition", "phase", "interaction", "human_alone_correct",
           "final_correct", "changed_answer", "rounds_used", "mean_set_size", "err_harm", "err_comp"]
NO_STREAM = "no AI"  # the phase of an interaction without a controller stream


def interactions_frame(study_slug: str, *, engine: Engine | None = None) -> pd.DataFrame:
    """One row per finished interaction (interactions still in progress are left out)."""
    rows = []
    for row in interaction_rows(study_slug, engine=engine):
        record = row.record
        if record.final_answer is None or record.true_count is None:
            continue
        sets = record.ai_sets
        first = record.first_answer
        rows.append({
            "participant_id": row.participant_id, "external_id": row.external_id,
            "condition": row.condition, "phase": record.stream_phase or NO_STREAM,
            "interaction": record.index + 1,
            "human_alone_correct": first == record.true_count,
            "final_correct": record.final_answer == record.true_count,
            "changed_answer": first != record.final_answer,
            "rounds_used": record.final_round or len(record.rounds),
            "mean_set_size": sum(len(s) for s in sets) / len(sets) if sets else None,
            "err_harm": record.err_harm, "err_comp": record.err_comp,
        })
    return pd.DataFrame(rows, columns=COLUMNS)


def interactions_csv(study_slug: str, *, engine: Engine | None = None) -> bytes:
    """``interactions_frame`` as CSV, text cells neutralised for spreadsheets (``engines.platform.csv_safety``)."""
    return frame_csv_bytes(interactions_frame(study_slug, engine=engine))


def by_condition(frame: pd.DataFrame) -> pd.DataFrame:
    """Accuracy human alone vs final, set size and violations per condition and stream phase.

    Phases apart: the calibration batch runs every AI condition at the same starting thresholds, so
    only the "online" rows compare the controlled conditions (and only they are covered by the bound).
    """
    if frame.empty:
        return pd.DataFrame(columns=["condition", "phase", "participants", "interactions", "accuracy_human_alone",
                                     "accuracy_final", "mean_set_size", "harm_rate", "comp_rate"])
    grouped = frame.groupby(["condition", "phase"], sort=False)
    return pd.DataFrame({
        "participants": grouped["participant_id"].nunique(),
        "interactions": grouped.size(),
        "accuracy_human_alone": grouped["human_alone_correct"].mean().round(3),
        "accuracy_final": grouped["final_correct"].mean().round(3),
        "mean_set_size": grouped["mean_set_size"].mean().round(2),
        "harm_rate": grouped["err_harm"].mean().round(3),
        "comp_rate": grouped["err_comp"].mean().round(3),
    }).reset_index()


def per_participant(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame(columns=["external_id", "condition", "interactions", "accuracy_human_alone",
                                     "accuracy_final", "changed_answers"])
    grouped = frame.groupby(["external_id", "condition"])
    return pd.DataFrame({
        "interactions": grouped.size(),
        "accuracy_human_alone": grouped["human_alone_correct"].mean().round(3),
        "accuracy_final": grouped["final_correct"].mean().round(3),
        "changed_answers": grouped["changed_answer"].sum(),
    }).reset_index()


def accuracy_over_time_figure(frame: pd.DataFrame) -> go.Figure:
    """Accuracy (human alone and final) by interaction index, one line per condition."""
    if frame.empty:
        return go.Figure().update_layout(title="No finished interactions yet")
    long = (frame.groupby(["condition", "interaction"])[["human_alone_correct", "final_correct"]].mean()
            .reset_index().melt(id_vars=["condition", "interaction"], var_name="answer", value_name="accuracy"))
    long["answer"] = long["answer"].map({"human_alone_correct": "human alone (round 1)", "final_correct": "final"})
    figure = px.line(long, x="interaction", y="accuracy", color="condition", line_dash="answer", markers=True,
                     title="Accuracy by interaction")
    return figure.update_yaxes(range=[0, 1.05])
