"""Set up a collaboration study from the New study page: the condition table and rules as study constants.

A researcher designs the crowdsourced study of Noorani et al. (ICML 2026, arXiv:2602.17646) as
data: one row per condition (mode online / fixed / none, targets α, step sizes η, starting
thresholds and the calibration batch), the protect and supply rules picked from the registry with
typed parameters, interactions, rounds and feedback. ``study_constants`` turns that into the
constants overrides of ``studies/collab_shapes`` (``C.CONDITIONS``, ``C.PROTECT_RULE``, ...);
``create_collab_study`` creates the study, and the protocol's ``validate_constants`` has the last
word, so nothing reaches a participant that the study cannot run. No code is ever taken from the page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from engines.collab.study.conditions import CONFIG_KEYS
from engines.platform.files import echo

PROTOCOL = "collab_shapes"
MODES = ("online", "fixed", "none")
# The table's columns after name and mode; a fixed condition ignores η, a no-AI one everything.
NUMBER_COLUMNS = ("alpha_harm", "alpha_comp", "eta_harm", "eta_comp", "q_harm_init", "q_comp_init",
                  "calibration_interactions")
IGNORED = {"fixed": {"eta_harm", "eta_comp"}, "none": set(NUMBER_COLUMNS), "online": set()}


def condition_rows(conditions: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The protocol's conditions as editable rows (name, mode and every number column; None where unset)."""
    return [{"name": name, "mode": params.get("mode", "none"),
             **{col: params.get(col) for col in NUMBER_COLUMNS}} for name, params in conditions.items()]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def conditions_from_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``C.CONDITIONS`` from edited rows; ValueError naming the row for a blank or repeated name or a bad mode."""
    conditions: dict[str, dict[str, Any]] = {}
    for i, row in enumerate(rows, start=1):
        name = "" if _blank(row.get("name")) else str(row["name"]).strip()
        if not name:
            raise ValueError(f"condition row {i}: the name is empty")
        if name in conditions:
            raise ValueError(f"condition row {i}: the name {echo(name)} is used twice")
        mode = row.get("mode")
        if mode not in MODES:
            raise ValueError(f"condition {echo(name)}: mode must be one of {', '.join(MODES)}, got {echo(mode)}")
        params: dict[str, Any] = {"mode": mode}
        for col in NUMBER_COLUMNS:
            value = row.get(col)
            if col in IGNORED[mode] or _blank(value):
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise ValueError(f"condition {echo(name)}: {col} must be a number, got {echo(value)}") from None
            if col == "calibration_interactions":  # a count of interactions
                if not number.is_integer():
                    raise ValueError(f"condition {echo(name)}: calibration_interactions must be a whole number, "
                                     f"got {echo(value)}")
                number = int(number)
            params[col] = number
        conditions[name] = params
    if not conditions:
        raise ValueError("the study needs at least one condition")
    return conditions


def study_constants(*, conditions: Mapping[str, Mapping[str, Any]], protect_rule: str, protect_params: Mapping,
                    supply_rule: str, supply_params: Mapping, interactions: int, rounds: int,
                    feedback: str) -> dict[str, Any]:
    """The constants overrides of ``studies/collab_shapes`` for a study designed on the New study page."""
    unknown = {k for params in conditions.values() for k in params} - {"mode", "calibration_interactions", *CONFIG_KEYS}
    if unknown:
        raise ValueError(f"unknown condition settings: {sorted(unknown)}")
    return {
        "CONDITIONS": {name: dict(params) for name, params in conditions.items()},
        "PROTECT_RULE": {"name": protect_rule, "params": dict(protect_params)},
        "SUPPLY_RULE": {"name": supply_rule, "params": dict(supply_params)},
        "INTERACTIONS": int(interactions), "ROUNDS": int(rounds), "FEEDBACK": feedback,
    }


def create_collab_study(slug: str, constants: Mapping[str, Any], *, title: str = "", is_open: bool = True,
                        created_by: int | None = None):
    """Create the study (``study_admin.create_study``): StudyError / LinkError say what is wrong, nothing is stored then."""
    from engines.platform import study_admin

    return study_admin.create_study(slug, PROTOCOL, title=title, config={"constants": dict(constants)},
                                    is_open=is_open, created_by=created_by)


__all__ = ["MODES", "NUMBER_COLUMNS", "PROTOCOL", "condition_rows", "conditions_from_rows", "create_collab_study",
           "study_constants"]
