"""Running rates, bound band, local rates and thresholds of one controller run, as arrays over t.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with User-Specified
Requirements" (ICML 2026, arXiv:2602.17646); measurements 1–2 of ``docs/collab.md``, Method,
"Baselines and measurements": the running (prefix) violation rate per constraint against its target
α, the finite-sample band [α, α + bound(t)] of the online controller, a rolling local rate, and the
thresholds q^H_t, q^C_t.

Three sources give the same ``RateTraces``: per-interaction errors (``traces_from_errors``; the
simulator's raw runs), a controller stream's stored updates (``traces_from_history``, or
``traces_from_audit`` for an audited stream with its delays), and the checkpoints a ``simulate``
result file keeps (``traces_from_result``). ``engines.collab.plots`` draws them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engines.collab import rates
from engines.collab.controller import ControllerState, latest_error_delay
from engines.collab.models import ControllerUpdate
from engines.collab.rates import DEFAULT_WINDOW, denominators, rolling_rate, running_rate
from engines.collab.result_files import CONSTRAINTS, SimulationResultFile
from engines.collab.store import StreamAudit, delay_of

# One delay D for the whole run, a (T,) array of per-t delays (``rates.bound_trace``), or either per constraint.
Delay = int | np.ndarray | Mapping[str, int | np.ndarray]


@dataclass
class RateTraces:
    """Running rates, bound, local rates and thresholds of one controller run, at times ``t`` (1-based).

    ``bound[name]`` is None for a run without a guarantee (the fixed baseline); entries may be
    inf where no interaction has counted yet.
    """

    label: str
    t: np.ndarray  # (T,)
    running: dict[str, np.ndarray]  # {"harm": (T,), "comp": (T,)}
    local: dict[str, np.ndarray]
    thresholds: dict[str, np.ndarray]
    target: dict[str, float]
    bound: dict[str, np.ndarray | None] = field(default_factory=dict)
    local_kind: str = "trailing"

    def upper(self, name: str) -> np.ndarray | None:
        """The band's upper edge α + bound(t) of constraint ``name`` (None without a guarantee)."""
        bound = self.bound.get(name)
        return None if bound is None else self.target[name] + np.asarray(bound, dtype=float)

    def frame(self) -> pd.DataFrame:
        data = {"t": self.t}
        for name in CONSTRAINTS:
            data[f"running_{name}"] = self.running[name]
            data[f"target_{name}"] = np.full(len(self.t), self.target[name])
            if self.bound.get(name) is not None:
                data[f"bound_{name}"] = self.bound[name]
            data[f"local_{name}"] = self.local[name]
            data[f"q_{name}"] = self.thresholds[name]
        return pd.DataFrame(data)

    def final(self) -> dict:
        """Final running rate, target, bound and whether the rate is within target + bound."""
        out = {}
        for name in CONSTRAINTS:
            rate = float(self.running[name][-1]) if len(self.t) else 0.0
            bound = self.bound.get(name)
            b = float(bound[-1]) if bound is not None and len(self.t) else None
            out[name] = {"rate": rate, "target": self.target[name], "bound": b,
                         "within": None if b is None else bool(rate <= self.target[name] + b + 1e-12)}
        return out


def _delay_of(delay: Delay, name: str) -> int | np.ndarray:
    return delay[name] if isinstance(delay, Mapping) else delay


def traces_from_errors(err: dict[str, np.ndarray], thresholds: dict[str, np.ndarray], state: ControllerState, *,
                       fired: dict[str, np.ndarray] | None = None, label: str = "stream",
                       window: int = DEFAULT_WINDOW, centred: bool = True, delay: Delay = 0) -> RateTraces:
    """Traces from per-interaction errors and the thresholds used, with the bound of ``state``'s controller.

    Args:
        err: {"harm": (T,) bool, "comp": (T,) bool} violations in update order.
        thresholds: {"harm": (T,), "comp": (T,)} thresholds in force during each interaction.
        state: a controller state of the run (its config, q1_* and π̂ give targets and bound).
        fired: firing indicators; needed in the conditional variant (denominator = firing count).
        window, centred: the local rate (``rolling_rate``).
        delay: the update delay the band allows for, passed to ``rates.bound_trace`` as it is: one
            int D for every t (e.g. the run's largest delay), or a (T,) int array of per-t delays
            (e.g. ``controller.latest_error_delay``); or a dict giving either per constraint.

    Returns:
        RateTraces labelled ``label``; ``bound`` is None for a constraint with η = 0.
    """
    cfg = state.config
    T = len(err["harm"])
    t = np.arange(1, T + 1)
    running, local, bound = {}, {}, {}
    for name, step_size, alpha, q1 in (("harm", state.step_harm, cfg.alpha_harm, state.q1_harm),
                                       ("comp", state.step_comp, cfg.alpha_comp, state.q1_comp)):
        e = np.asarray(err[name], dtype=float)
        n_t = denominators(T, fired[name] if (cfg.conditional and fired) else None)
        running[name] = running_rate(e, n_t)
        local[name] = rolling_rate(e, min(window, max(T, 1)), centred=centred) if T else np.zeros(0)
        bound[name] = rates.bound_trace(n_t, step_size, alpha, q1, cfg.score_bound, delay=_delay_of(delay, name))
    return RateTraces(label=label, t=t, running=running, local=local,
                      thresholds={k: np.asarray(v, dtype=float) for k, v in thresholds.items()},
                      target={"harm": cfg.alpha_harm, "comp": cfg.alpha_comp}, bound=bound,
                      local_kind="centred" if centred else "trailing")


def _online(updates: Sequence[ControllerUpdate]) -> list[ControllerUpdate]:
    # Calibration-batch and excluded updates are left out: the guarantee (and t = 1, 2, ...) starts at the fit.
    return sorted((u for u in updates if u.phase == "online"), key=lambda u: u.seq)


def traces_from_history(updates: Sequence[ControllerUpdate], state: ControllerState, *, window: int = DEFAULT_WINDOW,
                        centred: bool = True, delay: Delay = 0) -> RateTraces:
    """Traces of a controller stream's online part from its stored updates (``store.history``) and a state of it.

    Calibration-batch and excluded updates are left out: the guarantee (and t = 1, 2, ...) starts at
    the fit. ``delay`` as in ``traces_from_errors``; an array has one entry per online update.
    """
    updates = _online(updates)
    err = {"harm": np.array([u.err_harm for u in updates], dtype=bool),
           "comp": np.array([u.err_comp for u in updates], dtype=bool)}
    fired = {"harm": np.array([u.fired_harm for u in updates], dtype=bool),
             "comp": np.array([u.fired_comp for u in updates], dtype=bool)}
    thresholds = {"harm": np.array([u.q_harm_before for u in updates], dtype=float),
                  "comp": np.array([u.q_comp_before for u in updates], dtype=float)}
    return traces_from_errors(err, thresholds, state, fired=fired, label="stream", window=window, centred=centred,
                              delay=delay)


def latest_error_delays(updates: Sequence[ControllerUpdate]) -> dict[str, np.ndarray]:
    """Per constraint, D_t of the stream's online updates: the delay of the latest update with an error up to t.

    The delay of an update is ``store.delay_of`` (0 where ``frozen_seq`` was not recorded); see
    ``controller.latest_error_delay`` for why only the latest error's delay enters the band.
    """
    updates = _online(updates)
    delays = np.array([delay_of(u) for u in updates], dtype=np.int64)
    return {name: latest_error_delay(np.array([getattr(u, f"err_{name}") for u in updates], dtype=bool), delays)
            for name in CONSTRAINTS}


def traces_from_audit(report: StreamAudit, *, window: int = DEFAULT_WINDOW, centred: bool = False) -> RateTraces:
    """Traces of an audited stream (``store.audit_report``), the band at t using the latest error's delay up to t.

    Trailing local rates by default: a live stream's later interactions are still to come.
    """
    return traces_from_history(report.history, report.state, window=window, centred=centred,
                               delay=latest_error_delays(report.history))


def traces_from_result(result: SimulationResultFile | dict, which: str = "online") -> RateTraces | None:
    """Traces of the ``online`` or ``fixed`` run of a ``simulate`` result (None if that run is absent).

    The result stores checkpoints only (``trace_points``), with trailing-window local rates; a
    bound stored as null (nothing counted yet) becomes inf.
    """
    if isinstance(result, dict):
        result = SimulationResultFile.from_json(result)
    run = getattr(result, which)
    if run is None:
        return None
    trace = run.trace

    def arr(values):
        return None if values is None else np.array([math.inf if v is None else v for v in values], dtype=float)

    return RateTraces(
        label=which, t=np.asarray(trace.t),
        running={n: arr(trace.violation(n)) for n in CONSTRAINTS},
        local={n: arr(trace.local(n)) for n in CONSTRAINTS},
        thresholds={n: arr(trace.threshold(n)) for n in CONSTRAINTS},
        target=dict(run.target),
        bound={n: arr(trace.bound(n)) for n in CONSTRAINTS}, local_kind="trailing")


__all__ = ["CONSTRAINTS", "RateTraces", "latest_error_delays", "traces_from_audit", "traces_from_errors",
           "traces_from_history", "traces_from_result"]
