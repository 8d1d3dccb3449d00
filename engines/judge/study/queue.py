"""A study participant as an annotator: items from the labeling queue, labels stored with the step.

The study's hooks get the participant's database session (``ctx.session``): the write transaction
that moves them on (``on_enter`` claims the round's item there, ``after_submit`` stores the label
with the step's answer, ``is_displayed`` sees the label just submitted), or the read that draws
the page (``vars_for_template`` only reads the item claimed).

Each labeling round is one item: the project's quiz first, then ``ITEMS`` items of the queue with
gold checks at the project's rate (``labeling_queue.panel_plan``). A worker whose quiz fails is
screened out there: ``after_submit`` records why in the participant variable
``SCREENED_OUT_BECAUSE``, which ends the study for them with the screened-out code.
"""

from __future__ import annotations

from typing import Any

from engines.judge import labeling, labeling_queue
from engines.platform.study import SCREENED_OUT_BECAUSE

PLAN_CACHE = "judge-panel-plan"  # key of the plan in the session's ``info`` (one read per transaction)


def annotator_name(study_slug: str, external_id: str) -> str:
    """Participants are annotators named by study and panel id (never mixed with accounts)."""
    return f"study:{study_slug}:{external_id}"


def annotator_of(ctx: Any) -> str:
    """The annotator a step's participant is (``annotator_name``)."""
    return annotator_name(ctx.study_slug, ctx.external_id)


def plan(ctx: Any) -> labeling_queue.PanelPlan | None:
    """What this study gives each worker (quiz, items, gold checks); None when the project is gone.

    The runtime asks every labeling round whether it may still be shown, each with a context of
    its own but the same session: the plan is read once per transaction and kept in ``session.info``.
    """
    session = ctx.session
    key = (PLAN_CACHE, ctx.C.PROJECT, ctx.C.ITEMS)
    if session is not None and key in session.info:
        return session.info[key]
    try:
        found = labeling_queue.panel_plan(ctx.C.PROJECT, ctx.C.ITEMS, session=session)
    except labeling.LabelingError:
        found = None
    if session is not None:
        session.info[key] = found
    return found


def may_have_round(ctx: Any) -> bool:
    """Whether the round ``ctx.round_number`` can still come (a read without the queue): within
    the plan's quiz and items. What the page's step count asks about every round ahead."""
    planned = plan(ctx)
    return planned is not None and ctx.round_number <= planned.rounds


def round_due(ctx: Any) -> bool:
    """Whether the labeling round ``ctx.round_number`` is shown: it is within the plan (a round
    is one label: the quiz's, then the items') and the queue has an item for this worker now."""
    return may_have_round(ctx) and has_item(ctx)


def claim_item(ctx: Any) -> None:
    """On entering a labeling round (in the step's write transaction): claim the item it shows."""
    try:
        labeling_queue.next_item(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)
    except labeling.LabelingError:  # paused, closed or missing project: the page shows no item
        pass


def current_item(ctx: Any) -> labeling_queue.ItemToLabel | None:
    """The item this participant was given and has not rated yet (a read); None when there is none."""
    return labeling_queue.shown_item(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)


def has_item(ctx: Any) -> bool:
    """Whether another labeling round is due for this participant (a read: nothing is claimed)."""
    return labeling_queue.has_item_for(ctx.C.PROJECT, annotator_of(ctx), session=ctx.session)


def position(ctx: Any, item: labeling_queue.ItemToLabel) -> dict[str, Any]:
    """Where the worker is, for the page: "Qualification item 3 of 10", then "Response 4 of at most 20".

    Gold checks count as responses (the worker is never told which items are checks)."""
    planned = plan(ctx)
    quiz = planned.quiz if planned is not None else 0
    if item.purpose == "quiz":
        return {"phase": "quiz", "number": quiz - item.quiz_left + 1, "of": quiz}
    return {"phase": "items", "number": max(1, ctx.round_number - quiz), "of": ctx.C.ITEMS}


def store_label(ctx: Any, claim_id: int, score: int) -> None:
    """Store the label with the step's answer; a worker whose quiz has just failed is screened out."""
    annotator = annotator_of(ctx)
    labeling_queue.submit_label(claim_id, annotator, score, session=ctx.session)
    status = labeling_queue.status_of(ctx.C.PROJECT, annotator, session=ctx.session)
    if status.quiz_passed is False:
        ctx.vars[SCREENED_OUT_BECAUSE] = (
            f"failed the qualification quiz: {status.quiz_correct} of {status.quiz_done} items rated as expected, "
            f"{plan(ctx).quiz_pass:.0%} needed")


def check_project(C: Any, session: Any, max_rounds: int) -> None:
    """At study creation: ``PROJECT`` names an open labeling project (else participants would be paid
    for a study with nothing to label), and its quiz and ``ITEMS`` fit the study's ``max_rounds``
    labeling rounds. Raises ValueError saying which."""
    labeling.require_open_project(C.PROJECT, session=session)
    planned = labeling_queue.panel_plan(C.PROJECT, C.ITEMS, session=session)
    if planned.rounds > max_rounds:
        raise ValueError(f"ITEMS: the project '{C.PROJECT}' has a quiz of {planned.quiz} items, and with ITEMS = "
                         f"{C.ITEMS} a worker would rate {planned.rounds}: at most {max_rounds} fit the study. "
                         f"Set ITEMS to {max_rounds - planned.quiz} or fewer.")
