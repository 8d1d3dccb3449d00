"""Online two-threshold controller for counterfactual harm and complementarity (``docs/collab.md``, Method).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646). Update rule: quantile tracking, the
P part of conformal PID control (Angelopoulos, Candès, Tibshirani 2023), one tracker per
constraint as in Rolling Risk Control (Feldman et al. 2023); initialisation and the conditional
variant follow the precursor's code (nooranisima/Human-AI-Collaborative-UQ, ``online_helpers.py``).

Per interaction t the thresholds (q^H_t, q^C_t) are frozen; in round k the AI shows

    C_{t,k} = {y : r^H_k(y)=1, s(y) <= q^H} ∪ {y : r^H_k(y)=0 or r^C_k(y)=1, s(y) <= q^C}

with scores s(y) = 1 - p_AI(y) in [0, B]. The second part is {y : r^H_k(y)=0, s <= q^C} plus the
labels that are both protected and supplied; for disjoint rules (every pair of built-ins) the
extra term adds nothing. When a custom pair overlaps, it keeps the supply error a function of q^C
alone in the sense the bound needs (q^C >= B forces it to 0). No rounding
and no top-1 fallback: the set may be empty, and it is monotone in both thresholds.

Violations (max over rounds of the activated omission):

    err^H_t = max_k 1{r^H_k(Y)=1, Y ∉ C_{t,k}},   err^C_t = max_k 1{r^C_k(Y)=1, Y ∉ C_{t,k}}.

Updates once Y_t is known: q_{t+1} = q_t + η(err_t − α), per constraint (``step``).

**Bound (proved here; tighter than the generic quantile-tracking (B + η + |q_1|)/(ηT)).**
Scores lie in [0, B], so q_t >= B puts every label with s <= q_t in the set: err_t = 0 and
q_{t+1} = q_t − ηα < q_t. If q_t < B then q_{t+1} <= q_t + η(1−α) < B + η(1−α). By induction
q_t <= M := max(q_1, B + η(1−α)) for all t. Summing the update telescopes: (1/T) Σ_t (err_t − α)
= (q_{T+1} − q_1)/(ηT), hence, for every sequence of humans, cases, rules and labels,

    (1/T) Σ_{t<=T} err_t <= α + max(0, B + η(1−α) − q_1) / (ηT).

Since B + η(1−α) − q_1 <= B + η + |q_1|, this implies that form. A two-sided
version does not hold in general: when the rule never fires on the truth (e.g. the human never
holds it), err_t = 0 whatever q_t, q_t drifts to −∞ and the rate is 0 < α. A lower bound needs
"the rule fires ⇒ q_t < 0 forces err_t = 1", true for disjoint rules whenever the rule fires on Y;
it then holds with the firing interactions as the denominator (the conditional variant below, or
the plain one when the rule fires in every interaction):

    (1/N) Σ_{fired} err_t >= α − max(0, q_1 + ηα) / (ηN)      (q_t >= min(q_1, −ηα) by the same induction).

**Delayed updates** (many participants on one stream). In a live study interaction t freezes
its thresholds when it starts and is applied when it finishes, so updates of interactions that
finished in between land first: its errors are computed with q_{f(t)}, an older state, with
d_t = t − f(t) updates in between (``store`` records f(t) − 1, the update count at the freeze). With D = max_t d_t the same argument
goes through: err_t = 1 needs q_{f(t)} < B, and each of the d_t intervening updates adds at most
η(1−α), so q_{t+1} < B + (D+1)η(1−α); hence

    (1/T) Σ_{t<=T} err_t <= α + max(0, B + (D+1)η(1−α) − q_1) / (ηT)      (``upper_bound(..., delay=D)``),

which is the bound above for D = 0. A study with a handful of overlapping participants has D of
a few units, so the price of concurrency is a few extra steps' worth of slack.

**Only the delay of the latest error counts** (``latest_error_delay``). One participant who
leaves a trial open for an hour gives the stream a huge D, and with it a useless band for
everyone. The maximum is not needed. Fix a constraint and a time τ, and let s <= τ be the latest
update with err_s = 1, with its own delay d_s. Then q_{f(s)} < B (the truth was left out, so
s(Y) > q_{f(s)}, and s(Y) <= B), each of the d_s updates between f(s) and s adds at most η(1−α), so
q_s < B + d_s η(1−α) and q_{s+1} < B + (d_s+1)η(1−α). Every update after s up to τ has err = 0,
so q only falls (or, conditional variant, stays): q_{τ+1} < B + (d_s+1)η(1−α). If there is no
error up to τ, q_{τ+1} <= q_1. The telescoping sum then gives, at every τ,

    (1/τ) Σ_{t<=τ} err_t <= α + max(0, B + (D_τ+1)η(1−α) − q_1) / (ητ),   D_τ = d_{s(τ)} (0 if no error yet),

so the band at τ needs only the delay of the latest error before τ, never the stream's maximum: a
long-delayed interaction widens the band only while it is the latest error, and only if it
errs at all. The same holds per firing interaction in the conditional variant (q moves only on
firing updates, and d_s over-counts those). ``rates.bound_trace`` takes these per-t delays.

**Scores** must lie in [0, B]: a NaN or out-of-range score breaks "q >= B shows every label", on
which every bound above rests, so the controller refuses it (``check_scores``) rather than
silently mis-set a threshold.

**Conditional variant** (``conditional=True``, as in the precursor): q moves only in interactions
where the rule fired on the truth in some round, with step η/π̂, π̂ = the firing fraction on the
calibration batch, frozen so the telescoping argument above applies verbatim with η/π̂ and the
number N of firing interactions: the rate *given that the rule fired* is held at α.

The state is a plain dataclass (``to_dict``/``from_dict``) and ``step(state, err_h, err_c)`` is a
pure function, so a server can persist one state per finished interaction. A fixed-threshold
baseline is the same controller with η = 0 after calibration (``fixed_baseline``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from engines.platform.files import echo


@dataclass(frozen=True)
class ControllerConfig:
    """Targets and step sizes of the two trackers.

    Args:
        alpha_harm: target rate of counterfactual harm (AI drops a protected truth).
        alpha_comp: target rate of complementarity failure (AI misses a truth it should supply).
        eta_harm, eta_comp: quantile-tracking step sizes; 0 freezes the threshold (fixed baseline).
        score_bound: B, scores lie in [0, B] (1 for s = 1 − p_AI(y)).
        q_harm_init, q_comp_init: q_1 when the controller is not calibrated.
        conditional: update only on interactions where the rule fired on the truth, step η/π̂.
    """

    # Targets: unconditional per-interaction violation rates.
    alpha_harm: float = 0.05
    alpha_comp: float = 0.05
    # Step sizes: the bound shrinks like 1/(ηT); larger η reacts faster to shifts.
    eta_harm: float = 0.05
    eta_comp: float = 0.05
    score_bound: float = 1.0  # s = 1 − p_AI(y) ∈ [0, 1]
    q_harm_init: float = 0.5
    q_comp_init: float = 0.5
    conditional: bool = False

    def __post_init__(self):
        for name in ("alpha_harm", "alpha_comp"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {echo(value)}")
        for name in ("eta_harm", "eta_comp"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0.0):
                raise ValueError(f"{name} must be a finite number >= 0 (0 = fixed threshold), got {echo(value)}")
        if not (math.isfinite(self.score_bound) and self.score_bound > 0):
            raise ValueError(f"score_bound must be a finite number > 0, got {echo(self.score_bound)}")
        for name in ("q_harm_init", "q_comp_init"):
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {echo(getattr(self, name))}")


@dataclass(frozen=True)
class ControllerState:
    """Everything the controller carries between interactions (JSON-serialisable).

    ``q_*`` are the thresholds for the next interaction, ``q1_*`` the initial ones (the bound needs
    them), ``pi_*`` the calibration firing fractions of the conditional variant (1 otherwise),
    ``t`` the number of finished interactions, ``n_err_*`` the violations and ``n_fired_*`` the
    interactions in which the rule fired on the truth.
    """

    config: ControllerConfig = field(default_factory=ControllerConfig)
    q_harm: float = 0.5
    q_comp: float = 0.5
    q1_harm: float = 0.5
    q1_comp: float = 0.5
    pi_harm: float = 1.0
    pi_comp: float = 1.0
    t: int = 0
    n_err_harm: int = 0
    n_err_comp: int = 0
    n_fired_harm: int = 0
    n_fired_comp: int = 0

    def __post_init__(self):
        for name in ("pi_harm", "pi_comp"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {echo(getattr(self, name))}")
        if min(self.t, self.n_err_harm, self.n_err_comp, self.n_fired_harm, self.n_fired_comp) < 0:
            raise ValueError("counts in a controller state must be >= 0")

    @classmethod
    def initial(cls, config: ControllerConfig | None = None) -> ControllerState:
        config = config or ControllerConfig()
        return cls(config=config, q_harm=config.q_harm_init, q_comp=config.q_comp_init,
                   q1_harm=config.q_harm_init, q1_comp=config.q_comp_init)

    # Effective steps: η, or η/π̂ in the conditional variant (π̂ frozen at calibration).
    @property
    def step_harm(self) -> float:
        return self.config.eta_harm / self.pi_harm

    @property
    def step_comp(self) -> float:
        return self.config.eta_comp / self.pi_comp

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> ControllerState:
        data = dict(data)
        config = ControllerConfig(**data.pop("config", {}))
        return cls(config=config, **data)


@dataclass(frozen=True)
class InteractionErrors:
    """Outcome of one interaction: the two violations, whether each rule fired on the truth, the sets shown."""

    err_harm: bool
    err_comp: bool
    fired_harm: bool
    fired_comp: bool
    sets: np.ndarray  # (R, K) bool, C_{t,1..R}


@dataclass(frozen=True)
class CalibrationBatch:
    """A calibration batch (e.g. a human-alone pilot) for ``calibrate``.

    Args:
        scores: (n, K) or (n, R, K) AI scores in [0, B].
        labels: (n,) true labels.
        protect, supply: (n, K) round-1 rule masks, or (n, R, K) masks of every round.
    """

    scores: np.ndarray
    labels: np.ndarray
    protect: np.ndarray
    supply: np.ndarray


# FUNCTIONS

def check_scores(scores: np.ndarray, score_bound: float | None = None, *, what: str = "scores") -> np.ndarray:
    """``scores`` as a float array, or ValueError if any is NaN or outside [0, B] (``score_bound``; None: only NaN).

    The message names the first bad entry's index and value.
    """
    scores = np.asarray(scores, dtype=float)
    bad = np.isnan(scores)
    if score_bound is not None:
        bad |= (scores < 0.0) | (scores > score_bound)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        index = where[0] if len(where) == 1 else where
        value = float(scores[where]) if scores.ndim else float(scores)
        span = f"[0, {score_bound:g}]" if score_bound is not None else "a number (not NaN)"
        raise ValueError(f"{what} must lie in {span}: got {echo(value)} at index {index}")
    return scores


def prediction_set(scores: np.ndarray, protect: np.ndarray, q_harm: float, q_comp: float,
                   supply: np.ndarray | None = None) -> np.ndarray:
    """C = {y : protect, s <= q_harm} ∪ {y : not protect (or supply), s <= q_comp}; (K,) bool.

    Ties count as inside (s <= q). Without ``supply`` the second part is {not protect, s <= q_comp}; with it,
    labels both protected and supplied also enter through q_comp (see the module docstring).
    A NaN score is refused (ValueError); ``OnlineController`` also checks the range [0, B].
    """
    scores = check_scores(scores)
    protect = np.asarray(protect, dtype=bool)
    via_comp = ~protect if supply is None else (~protect | np.asarray(supply, dtype=bool))
    return (protect & (scores <= q_harm)) | (via_comp & (scores <= q_comp))


def interaction_errors(scores: np.ndarray, label: int, protect: np.ndarray, supply: np.ndarray,
                       q_harm: float, q_comp: float) -> InteractionErrors:
    """Violations of one interaction: max over its rounds of the activated omission.

    Args:
        scores: (K,) scores fixed for the interaction, or (R, K) one row per round.
        label: the true label Y_t.
        protect, supply: (R, K) bool, the rule masks of rounds 1..R.
        q_harm, q_comp: the interaction's frozen thresholds.
    """
    protect = np.atleast_2d(np.asarray(protect, dtype=bool))
    supply = np.atleast_2d(np.asarray(supply, dtype=bool))
    scores = np.broadcast_to(np.asarray(scores, dtype=float), protect.shape)
    if supply.shape != protect.shape:
        raise ValueError(f"protect and supply masks must have the same shape, got {protect.shape} and {supply.shape}")
    sets = np.stack([prediction_set(scores[k], protect[k], q_harm, q_comp, supply[k]) for k in range(len(protect))])
    return errors_of_sets(sets, label, protect, supply)


def errors_of_sets(sets: np.ndarray, label: int, protect: np.ndarray, supply: np.ndarray) -> InteractionErrors:
    """The activated omissions of sets already shown: (R, K) sets and rule masks, whoever built the sets
    (the controller, or a rule-blind baseline)."""
    missed = ~sets[:, label]
    return InteractionErrors(
        err_harm=bool((protect[:, label] & missed).any()),
        err_comp=bool((supply[:, label] & missed).any()),
        fired_harm=bool(protect[:, label].any()),
        fired_comp=bool(supply[:, label].any()),
        sets=sets,
    )


def step(state: ControllerState, err_harm: bool, err_comp: bool,
         fired_harm: bool = True, fired_comp: bool = True) -> ControllerState:
    """The next state after one finished interaction: q <- q + η(err − α) per constraint (pure).

    In the conditional variant a threshold moves only if its rule fired on the truth
    (``fired_*``), with step η/π̂; otherwise ``fired_*`` only feeds the counts.
    """
    if (err_harm and not fired_harm) or (err_comp and not fired_comp):
        raise ValueError("a violation needs its rule to have fired on the truth (err implies fired)")
    cfg = state.config
    e_h, e_c = float(bool(err_harm)), float(bool(err_comp))
    q_harm, q_comp = state.q_harm, state.q_comp
    # Same arithmetic, same order as the compiled simulator (engines.collab.loop_fast): results are bit-identical.
    if fired_harm or not cfg.conditional:
        q_harm = q_harm + state.step_harm * (e_h - cfg.alpha_harm)
    if fired_comp or not cfg.conditional:
        q_comp = q_comp + state.step_comp * (e_c - cfg.alpha_comp)
    return dataclasses.replace(
        state, q_harm=q_harm, q_comp=q_comp, t=state.t + 1,
        n_err_harm=state.n_err_harm + int(bool(err_harm)), n_err_comp=state.n_err_comp + int(bool(err_comp)),
        n_fired_harm=state.n_fired_harm + int(bool(fired_harm)),
        n_fired_comp=state.n_fired_comp + int(bool(fired_comp)),
    )


def upper_bound(n: int, step_size: float, alpha: float, q1: float, score_bound: float, delay: int = 0) -> float:
    """max(0, B + (D+1)η(1−α) − q_1)/(η n): how far the mean violation over n interactions can exceed α.

    ``n`` counts all interactions (plain variant) or the firing ones (conditional variant, η = η/π̂).
    ``delay`` is D, the most updates applied between an interaction freezing its thresholds and its
    own update (0 when interactions run one after another; see "Delayed updates" above), or, at a
    given time, just the delay of the latest update with an error (``latest_error_delay``).
    Infinite for η = 0 (a fixed threshold has no guarantee) or n = 0.
    """
    if delay < 0:
        raise ValueError(f"delay must be >= 0, got {echo(delay)}")
    if step_size <= 0 or n <= 0:
        return math.inf
    return max(0.0, score_bound + (delay + 1) * step_size * (1.0 - alpha) - q1) / (step_size * n)


def latest_error_delay(errors: np.ndarray, delays: np.ndarray) -> np.ndarray:
    """D_τ for τ = 1..T: the delay of the latest update with an error at or before τ (0 before the first error).

    ``errors`` (T,) bool and ``delays`` (T,) int are in update order; the band at τ is
    ``upper_bound(n_τ, ..., delay=D_τ)`` (module docstring, "Only the delay of the latest error counts").

    Examples::

        >>> latest_error_delay(np.array([0, 1, 0, 0, 1, 0]), np.array([9, 3, 50, 7, 0, 8])).tolist()
        [0, 3, 3, 3, 0, 0]
    """
    errors = np.asarray(errors, dtype=bool)
    delays = np.asarray(delays, dtype=np.int64)
    if errors.shape != delays.shape or errors.ndim != 1:
        raise ValueError(f"errors and delays must be two (T,) arrays, got {errors.shape} and {delays.shape}")
    if (delays < 0).any():
        raise ValueError("delays must be >= 0")
    # Index of the latest error at or before each τ (-1: none yet), then its delay.
    latest = np.maximum.accumulate(np.where(errors, np.arange(len(errors)), -1)) if len(errors) else np.zeros(0, int)
    return np.where(latest >= 0, delays[np.maximum(latest, 0)], 0)


def lower_bound(n: int, step_size: float, alpha: float, q1: float) -> float:
    """max(0, q_1 + ηα)/(η n): how far the mean can fall below α, over the n interactions whose rule fired.

    Valid only when the protect and supply rules are disjoint on the truth and ``n`` counts
    firing interactions (conditional variant, or a rule that fires every time); see the module docstring.
    """
    if step_size <= 0 or n <= 0:
        return math.inf
    return max(0.0, q1 + step_size * alpha) / (step_size * n)


def conformal_threshold(values: np.ndarray, alpha: float, score_bound: float) -> float:
    """Split-conformal threshold q with P(v > q) <= α for a new exchangeable v: the ⌈(n+1)(1−α)⌉-th smallest.

    ``values`` are the critical scores (−inf where no violation is possible); the result is
    clipped to [0, B] (B when the rank exceeds n, i.e. too few points for the target).
    """
    values = np.sort(np.asarray(values, dtype=float))
    n = len(values)
    rank = math.ceil((n + 1) * (1.0 - alpha) - 1e-9)  # 1e-9: (n+1)(1−α) = 90.000000001 is rank 90
    if rank > n:
        return float(score_bound)
    return float(min(max(values[rank - 1], 0.0), score_bound))


def critical_scores(scores: np.ndarray, labels: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """Per case, the smallest threshold without a violation (for disjoint rules): max over the rounds
    where the rule fires on the truth of s_k(Y), or −inf if it never fires.

    Args:
        scores: (n, K) or (n, R, K); labels: (n,); masks: (n, K) round-1 or (n, R, K) every round.
    """
    labels = np.asarray(labels, dtype=np.int64)
    masks = np.asarray(masks, dtype=bool)
    masks = masks[:, None, :] if masks.ndim == 2 else masks
    n = len(labels)
    if masks.ndim != 3 or masks.shape[0] != n:
        raise ValueError(f"rule masks must be (n, K) or (n, R, K) with n = {n}, got {masks.shape}")
    scores = np.asarray(scores, dtype=float)
    scores = np.broadcast_to(scores[:, None, :] if scores.ndim == 2 else scores, masks.shape)
    rows = np.arange(n)
    fires = masks[rows, :, labels]  # (n, R)
    return np.where(fires, scores[rows, :, labels], -np.inf).max(axis=1)


def calibrate_critical(config: ControllerConfig, critical_harm: np.ndarray, critical_comp: np.ndarray) -> ControllerState:
    """Initial state from the calibration batch's critical scores (−inf: the rule never fired on the truth).

    q_1 is the split-conformal (1−α) quantile of the critical scores, so that a new exchangeable
    interaction violates with probability <= α at q_1. In the conditional variant the quantile is
    over the firing cases only and π̂ = their fraction (the step becomes η/π̂).
    """
    q1, pis = {}, {}
    for name, alpha, critical in (("harm", config.alpha_harm, critical_harm), ("comp", config.alpha_comp, critical_comp)):
        critical = np.asarray(critical, dtype=float)
        if len(critical) == 0:
            raise ValueError("the calibration batch is empty")
        if np.isnan(critical).any() or np.isposinf(critical).any():
            raise ValueError(f"{name} calibration scores must lie in [0, {config.score_bound}] "
                             "(or be -inf where the rule never fired): got NaN or +inf")
        if np.isfinite(critical).any() and (critical[np.isfinite(critical)].min() < 0
                                             or critical[np.isfinite(critical)].max() > config.score_bound):
            raise ValueError(f"calibration scores must lie in [0, {config.score_bound}]")
        fired = np.isfinite(critical)
        if config.conditional:
            if not fired.any():
                raise ValueError(f"the {name} rule never fires on the truth in the calibration batch: "
                                 "the conditional variant needs π̂ > 0")
            q1[name], pis[name] = conformal_threshold(critical[fired], alpha, config.score_bound), float(fired.mean())
        else:
            q1[name], pis[name] = conformal_threshold(critical, alpha, config.score_bound), 1.0
    return ControllerState(config=config, q_harm=q1["harm"], q_comp=q1["comp"], q1_harm=q1["harm"],
                           q1_comp=q1["comp"], pi_harm=pis["harm"], pi_comp=pis["comp"])


def calibrate(config: ControllerConfig, scores: np.ndarray, labels: np.ndarray, protect: np.ndarray,
              supply: np.ndarray) -> ControllerState:
    """Initial state from a calibration batch (e.g. a human-alone pilot): split-conformal q_1 per constraint.

    Args:
        scores: (n, K) or (n, R, K) AI scores in [0, B].
        labels: (n,) true labels.
        protect, supply: (n, K) round-1 masks or (n, R, K) masks of every round.
    """
    scores = check_scores(scores, config.score_bound, what="calibration scores")
    return calibrate_critical(config, critical_scores(scores, labels, protect),
                              critical_scores(scores, labels, supply))


def fixed_baseline(state: ControllerState) -> ControllerState:
    """The fixed-threshold baseline: the same (calibrated) state with η = 0, so it never moves."""
    config = dataclasses.replace(state.config, eta_harm=0.0, eta_comp=0.0)
    return dataclasses.replace(state, config=config)


# CONTROLLER

class OnlineController:
    """Stateful convenience wrapper over the pure functions above, for one stream of interactions.

    Example::

        ctl = OnlineController(ControllerConfig(alpha_harm=0.05, alpha_comp=0.1))
        ctl.calibrate(CalibrationBatch(scores, labels, protect, supply))  # optional: q_1 from a pilot
        c = ctl.prediction_set(scores, protect_mask, supply_mask)     # show in round k
        errs = ctl.interaction_errors(scores, y, protects, supplies)  # after the last round
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        ctl.violation_rates(), ctl.bound()
    """

    def __init__(self, config_or_state: ControllerConfig | ControllerState | None = None):
        if isinstance(config_or_state, ControllerState):
            self.state = config_or_state
        else:
            self.state = ControllerState.initial(config_or_state)

    def calibrate(self, batch: CalibrationBatch) -> None:
        """Restart from split-conformal thresholds fitted on ``batch`` (same config, counts reset)."""
        self.state = calibrate(self.config, batch.scores, batch.labels, batch.protect, batch.supply)

    @property
    def config(self) -> ControllerConfig:
        return self.state.config

    @property
    def thresholds(self) -> tuple[float, float]:
        """(q^H, q^C) for the next interaction."""
        return self.state.q_harm, self.state.q_comp

    def prediction_set(self, scores: np.ndarray, protect: np.ndarray, supply: np.ndarray | None = None) -> np.ndarray:
        """The set at the current thresholds; ValueError for a score that is NaN or outside [0, B]."""
        scores = check_scores(scores, self.config.score_bound)
        return prediction_set(scores, protect, self.state.q_harm, self.state.q_comp, supply)

    def interaction_errors(self, scores: np.ndarray, label: int, protect: np.ndarray,
                           supply: np.ndarray) -> InteractionErrors:
        scores = check_scores(scores, self.config.score_bound)
        return interaction_errors(scores, label, protect, supply, self.state.q_harm, self.state.q_comp)

    def update(self, err_harm: bool, err_comp: bool, fired_harm: bool = True, fired_comp: bool = True) -> None:
        self.state = step(self.state, err_harm, err_comp, fired_harm, fired_comp)

    def _denominators(self) -> tuple[int, int]:
        s = self.state
        return (s.n_fired_harm, s.n_fired_comp) if s.config.conditional else (s.t, s.t)

    def violation_rates(self) -> tuple[float, float]:
        """Running (harm, comp) violation rates; per firing interaction in the conditional variant."""
        n_h, n_c = self._denominators()
        return (self.state.n_err_harm / n_h if n_h else 0.0, self.state.n_err_comp / n_c if n_c else 0.0)

    def bound(self, n: int | None = None) -> tuple[float, float]:
        """(harm, comp) upper deviation bounds after ``n`` counted interactions (default: so far)."""
        s, cfg = self.state, self.state.config
        n_h, n_c = (n, n) if n is not None else self._denominators()
        return (upper_bound(n_h, s.step_harm, cfg.alpha_harm, s.q1_harm, cfg.score_bound),
                upper_bound(n_c, s.step_comp, cfg.alpha_comp, s.q1_comp, cfg.score_bound))

    def report(self) -> dict:
        """Running rates, targets and bounds (inf bounds as None, so the dict is valid JSON)."""
        rates, bounds = self.violation_rates(), self.bound()
        cfg = self.config
        return {
            "t": self.state.t,
            "thresholds": {"harm": self.state.q_harm, "comp": self.state.q_comp},
            "violation_rate": {"harm": rates[0], "comp": rates[1]},
            "target": {"harm": cfg.alpha_harm, "comp": cfg.alpha_comp},
            "bound": {"harm": _finite(bounds[0]), "comp": _finite(bounds[1])},
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None
