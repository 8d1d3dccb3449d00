"""How many items each worker of a panel labeling study rates, and how many of them are gold.

For the researcher, before recruiting: ``python -m engines.judge panel --study SLUG`` (a study of
the ``judge_labeling`` protocol: its ``PROJECT`` and ``ITEMS``) or ``--project SLUG [--items N]``
(a project, with the protocol's default ``ITEMS`` unless given); the labeling projects page
shows ``project_summary`` under each project. The numbers come from ``labeling_queue.panel_plan``.
"""

from __future__ import annotations

import argparse
from typing import Any

from sqlalchemy.engine import Engine

from engines.judge import labeling_queue
from engines.platform.registry import get_protocol
from engines.platform.runtime import UnknownStudy
from engines.platform.study_admin import get_study

PROTOCOL = "judge_labeling"
# The line ``python -m engines.judge`` lists this command by (its COMMANDS entry).
COMMAND = ("engines.judge.study.plan", "add_arguments", "run",
           "how many items each panel worker of a labeling study rates, and how many are gold")


def study_plan(slug: str, *, engine: Engine | None = None) -> labeling_queue.PanelPlan:
    """The plan of the study ``slug`` (its constants, with the study's overrides).

    Raises:
        ValueError: no such study, one of another protocol, or one whose project is gone.
    """
    try:
        study = get_study(slug, engine=engine)
    except UnknownStudy as exc:
        raise ValueError(str(exc)) from None
    if study.protocol != PROTOCOL:
        raise ValueError(f"The study '{slug}' is a {study.protocol} study, not a {PROTOCOL} one.")
    constants = get_protocol(PROTOCOL).constants_for(study.config)
    return labeling_queue.panel_plan(constants.PROJECT, constants.ITEMS, engine=engine)


def project_summary(project: str, *, engine: Engine | None = None) -> str:
    """What a panel study over ``project`` with the protocol's default ``ITEMS`` gives each worker:
    the sentence the labeling projects page shows."""
    items = get_protocol(PROTOCOL).C.ITEMS
    plan = labeling_queue.panel_plan(project, items, engine=engine)
    return f"A panel study over this project with ITEMS = {items} (the default): {plan.summary()}"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--study", help=f"a study of the {PROTOCOL} protocol (its PROJECT and ITEMS)")
    which.add_argument("--project", help="a labeling project")
    parser.add_argument("--items", type=int, default=None,
                        help=f"with --project: items per worker after the quiz (default: the {PROTOCOL} protocol's)")


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Say how many items each worker of a panel labeling study rates, and how many are gold."""
    if args.study is not None:
        if args.items is not None:
            raise ValueError("--items goes with --project; a study's ITEMS is its own (set when it was created).")
        plan = study_plan(args.study)
    else:
        items = get_protocol(PROTOCOL).C.ITEMS if args.items is None else args.items
        if items < 1:
            raise ValueError(f"--items must be 1 or more, got {items}.")
        plan = labeling_queue.panel_plan(args.project, items)
    return {"project": plan.project, "quiz": plan.quiz, "items": plan.items, "new": plan.new,
            "gold_checks": plan.gold_checks, "gold": plan.gold, "rounds": plan.rounds, "gold_every": plan.gold_every,
            "summary": plan.summary()}
