"""A study participant as an annotator: items from the labeling queue, labels stored with the step.

The study's hooks run inside the participant's write transaction when one is under way
(``ctx.session``); the calls here work in it, so a label commits or rolls back with the step's
stored answer, and ``is_displayed`` sees the label just submitted.
"""

from __future__ import annotations

from typing import Any

from engines.judge import labeling


def annotator_of(ctx: Any) -> str:
    """Participants are annotators named by study and panel id (never mixed with accounts)."""
    return f"study:{ctx.study_slug}:{ctx.external_id}"


def current_item(ctx: Any) -> labeling.ItemToLabel | None:
    """The item this participant holds (claimed when first needed); None when none is left for them."""
    try:
        return labeling.next_item(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)
    except labeling.LabelingError:  # paused, closed or missing project: the study moves to its end
        return None


def has_item(ctx: Any) -> bool:
    """Whether another labeling round is due for this participant (a read: nothing is claimed)."""
    return labeling.has_item_for(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)


def store_label(ctx: Any, claim_id: int, score: int) -> None:
    labeling.submit_label(claim_id, annotator_of(ctx), score, session=ctx.session)
