"""A study participant as an annotator: items from the labeling queue, labels stored with the step.

The study's hooks get the participant's database session (``ctx.session``): the write transaction
that moves them on (``on_enter`` claims the round's item there, ``after_submit`` stores the label
with the step's answer, ``is_displayed`` sees the label just submitted), or the read that draws
the page (``vars_for_template`` only reads the item claimed).
"""

from __future__ import annotations

from typing import Any

from engines.judge import labeling


def annotator_of(ctx: Any) -> str:
    """Participants are annotators named by study and panel id (never mixed with accounts)."""
    return f"study:{ctx.study_slug}:{ctx.external_id}"


def claim_item(ctx: Any) -> None:
    """On entering a labeling round (in the step's write transaction): claim the item it shows."""
    try:
        labeling.next_item(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)
    except labeling.LabelingError:  # paused, closed or missing project: the page shows no item
        pass


def current_item(ctx: Any) -> labeling.ItemToLabel | None:
    """The item this participant was given and has not rated yet (a read); None when there is none."""
    return labeling.shown_item(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)


def has_item(ctx: Any) -> bool:
    """Whether another labeling round is due for this participant (a read: nothing is claimed)."""
    return labeling.has_item_for(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)


def store_label(ctx: Any, claim_id: int, score: int) -> None:
    labeling.submit_label(claim_id, annotator_of(ctx), score, session=ctx.session)


def check_project(C: Any, session: Any) -> None:
    """At study creation: ``PROJECT`` names an open labeling project (else participants would be paid
    for a study with nothing to label). Raises ValueError saying which."""
    labeling.require_open_project(C.PROJECT, session=session)
