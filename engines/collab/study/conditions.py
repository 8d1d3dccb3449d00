"""A condition's parameters read as the controller's settings (``C.CONDITIONS`` of the study).

A condition is a dict such as ``{"mode": "online", "alpha_harm": 0.1, ..., "calibration_interactions": 40}``:
``controller_config`` takes the controller's keys (``CONFIG_KEYS``), ``initial_state`` gives q_1
(``mode="fixed"`` freezes it: η = 0) and ``calibration_size`` the size of the calibration batch.
``rounds.submit_round`` opens the condition's stream with them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from engines.collab.controller import ControllerConfig, ControllerState
from engines.platform.files import echo

CONFIG_KEYS = ("alpha_harm", "alpha_comp", "eta_harm", "eta_comp", "q_harm_init", "q_comp_init", "conditional")


def controller_config(params: Mapping[str, Any]) -> ControllerConfig:
    """The controller config of a condition's parameters (the keys in ``CONFIG_KEYS``; others ignored)."""
    return ControllerConfig(**{k: params[k] for k in CONFIG_KEYS if k in params})


def calibration_size(params: Mapping[str, Any]) -> int:
    """How many of a condition's first interactions form its calibration batch (``calibration_interactions``, default 0)."""
    size = params.get("calibration_interactions", 0)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"calibration_interactions must be a whole number >= 0, got {echo(size)}")
    return size


def initial_state(params: Mapping[str, Any]) -> ControllerState:
    """q_1 from the condition's ``q_harm_init``/``q_comp_init``; ``mode="fixed"`` forces η = 0."""
    config = controller_config(params)
    if params.get("mode") == "fixed":
        config = dataclasses.replace(config, eta_harm=0.0, eta_comp=0.0)
    return ControllerState.initial(config)


__all__ = ["CONFIG_KEYS", "calibration_size", "controller_config", "initial_state"]
