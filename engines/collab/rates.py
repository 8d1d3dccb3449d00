"""Running and local violation rates and the bound over time, shared by the simulator and the pages.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with User-Specified
Requirements" (ICML 2026, arXiv:2602.17646); measurement 1 of ``docs/collab.md``, Method,
"Baselines and measurements": the running (prefix) violation rate against the target with the
band α + bound(t), and a rolling local rate. Plain numpy over per-interaction error arrays.
"""

from __future__ import annotations

import numpy as np

from engines.collab.controller import upper_bound
from engines.platform.files import echo

DEFAULT_WINDOW = 500  # the precursor's rolling window W


def denominators(T: int, fired: np.ndarray | None = None) -> np.ndarray:
    """n_t for t = 1..T: t itself, or the running count of interactions whose rule fired (conditional variant)."""
    if fired is None:
        return np.arange(1, T + 1, dtype=float)
    return np.cumsum(np.asarray(fired, dtype=float))


def running_rate(errors: np.ndarray, denominators: np.ndarray | None = None) -> np.ndarray:
    """Prefix violation rate: (1/n_t) Σ_{s<=t} err_s, with n_t = t (or ``denominators``, e.g. firing counts).

    Examples::

        >>> running_rate(np.array([1, 0, 0, 1])).tolist()
        [1.0, 0.5, 0.3333333333333333, 0.5]
    """
    errors = np.asarray(errors, dtype=float)
    n_t = np.arange(1, len(errors) + 1) if denominators is None else np.asarray(denominators, dtype=float)
    return np.divide(np.cumsum(errors), n_t, out=np.zeros(len(errors)), where=n_t > 0)


def rolling_rate(errors: np.ndarray, window: int = DEFAULT_WINDOW, centred: bool = True) -> np.ndarray:
    """Local violation rate over a window of ``window`` interactions (shorter at the edges).

    ``centred``: interactions t − ⌊W/2⌋ … t + ⌈W/2⌉ − 1 (the precursor's plots); otherwise the
    trailing window t − W + 1 … t (what ``simulate`` reports as ``local_*``; usable live).
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {echo(window)}")
    errors = np.asarray(errors, dtype=float)
    T = len(errors)
    cum = np.concatenate([[0.0], np.cumsum(errors)])  # cum[i] = Σ_{s<i} err_s
    idx = np.arange(T)
    if centred:
        lo, hi = np.maximum(idx - window // 2, 0), np.minimum(idx - window // 2 + window, T)
    else:
        lo, hi = np.maximum(idx - window + 1, 0), idx + 1
    return (cum[hi] - cum[lo]) / np.maximum(hi - lo, 1)


def bound_trace(n_t: np.ndarray, step_size: float, alpha: float, q1: float, score_bound: float,
                delay: int | np.ndarray = 0) -> np.ndarray | None:
    """bound(t) = ``upper_bound(n_t, ..., delay)`` for every t (inf before anything counted); None for η = 0.

    ``delay``: one D for every t (the run's largest delay), or a (T,) array of per-t delays, the
    delay of the latest error at or before t (``controller.latest_error_delay``), which gives the
    tighter band that a live stream with one slow participant needs.
    """
    if step_size <= 0:
        return None
    n_t = np.asarray(n_t, dtype=float)
    if np.ndim(delay) == 0:
        # upper_bound(n) = upper_bound(1)/n: one call, then vectorised.
        per_one = upper_bound(1, step_size, alpha, q1, score_bound, delay=int(delay))
    else:
        delay = np.asarray(delay, dtype=np.int64)
        if delay.shape != n_t.shape:
            raise ValueError(f"per-t delays must have the shape of n_t {n_t.shape}, got {delay.shape}")
        # One upper_bound(1, ...) per distinct delay (it refuses a negative one), spread over the t's having it.
        distinct, where = np.unique(delay, return_inverse=True)
        per_one = np.array([upper_bound(1, step_size, alpha, q1, score_bound, delay=int(d)) for d in distinct])[where]
    return np.divide(per_one, n_t, out=np.full(len(n_t), np.inf), where=n_t > 0)


__all__ = ["DEFAULT_WINDOW", "bound_trace", "denominators", "rolling_rate", "running_rate"]
