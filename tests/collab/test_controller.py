"""Controller: sets and errors by hand, update arithmetic, calibration, JSON state, and the bound (hypothesis)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engines.collab.controller import (
    CalibrationBatch,
    ControllerConfig,
    ControllerState,
    OnlineController,
    calibrate,
    conformal_threshold,
    fixed_baseline,
    interaction_errors,
    lower_bound,
    prediction_set,
    step,
    upper_bound,
)

T_ = True
F_ = False


# Sets and errors with hand-picked scores and thresholds

def test_two_threshold_set_by_hand():
    scores = np.array([0.1, 0.5, 0.9, 0.3, 0.2])
    protect = np.array([T_, T_, T_, F_, F_])
    # protected labels pass at s <= 0.6, the others at s <= 0.2 (ties inside)
    np.testing.assert_array_equal(prediction_set(scores, protect, 0.6, 0.2), [T_, T_, F_, F_, T_])
    np.testing.assert_array_equal(prediction_set(scores, protect, 0.5, 0.3), [T_, T_, F_, T_, T_])
    np.testing.assert_array_equal(prediction_set(scores, protect, -0.1, -0.1), [F_] * 5)  # empty set allowed
    np.testing.assert_array_equal(prediction_set(scores, protect, 1.0, 1.0), [T_] * 5)


def test_overlapping_supply_enters_through_the_comp_threshold():
    scores = np.array([0.4, 0.4])
    protect = np.array([T_, T_])
    supply = np.array([T_, F_])  # label 0 is both protected and supplied
    np.testing.assert_array_equal(prediction_set(scores, protect, 0.1, 0.5), [F_, F_])  # the paper's set
    np.testing.assert_array_equal(prediction_set(scores, protect, 0.1, 0.5, supply), [T_, F_])


def test_set_is_monotone_in_both_thresholds():
    rng = np.random.default_rng(0)
    for _ in range(200):
        scores, protect, supply = rng.random(6), rng.random(6) < 0.5, rng.random(6) < 0.5
        qh, qc = rng.random(2)
        base = prediction_set(scores, protect, qh, qc, supply)
        assert not (base & ~prediction_set(scores, protect, qh + 0.1, qc, supply)).any()
        assert not (base & ~prediction_set(scores, protect, qh, qc + 0.1, supply)).any()


def test_interaction_errors_take_the_max_over_rounds():
    scores = np.array([0.2, 0.7, 0.4])
    y = 1  # s(Y) = 0.7
    # Round 1: the human holds Y (protected) -> Y needs s <= q_harm = 0.6: dropped -> harm.
    # Round 2: the human lost Y (supplied)   -> Y needs s <= q_comp = 0.8: shown -> no complementarity failure.
    protect = np.array([[F_, T_, F_], [T_, F_, F_]])
    supply = ~protect
    errs = interaction_errors(scores, y, protect, supply, q_harm=0.6, q_comp=0.8)
    assert (errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp) == (True, False, True, True)
    np.testing.assert_array_equal(errs.sets, [[T_, F_, T_], [T_, T_, T_]])
    errs = interaction_errors(scores, y, protect, supply, q_harm=0.7, q_comp=0.6)  # ties are inside
    assert (errs.err_harm, errs.err_comp) == (False, True)
    errs = interaction_errors(scores, y, protect[:1], supply[:1], q_harm=0.0, q_comp=0.0)  # round 1 only
    assert (errs.err_harm, errs.err_comp, errs.fired_comp) == (True, False, False)


def test_per_round_scores_and_shape_errors():
    scores = np.array([[0.9, 0.1], [0.1, 0.9]])  # (R, K): the AI's view changes between rounds
    errs = interaction_errors(scores, 0, np.array([[T_, F_], [T_, F_]]), np.array([[F_, T_], [F_, T_]]), 0.5, 0.5)
    assert errs.err_harm and not errs.err_comp
    with pytest.raises(ValueError, match="same shape"):
        interaction_errors(scores, 0, np.ones((2, 2), bool), np.ones((1, 2), bool), 0.5, 0.5)


# Update arithmetic

def test_step_is_quantile_tracking():
    state = ControllerState.initial(ControllerConfig(alpha_harm=0.05, alpha_comp=0.2, eta_harm=0.1, eta_comp=0.5,
                                                     q_harm_init=0.5, q_comp_init=0.25))
    nxt = step(state, err_harm=True, err_comp=False)
    assert nxt.q_harm == pytest.approx(0.5 + 0.1 * 0.95) and nxt.q_comp == pytest.approx(0.25 - 0.5 * 0.2)
    assert (nxt.t, nxt.n_err_harm, nxt.n_err_comp, nxt.n_fired_harm, nxt.n_fired_comp) == (1, 1, 0, 1, 1)
    assert state.q_harm == 0.5 and state.t == 0  # pure: the old state is untouched
    nxt2 = step(nxt, err_harm=False, err_comp=False, fired_harm=False, fired_comp=False)
    assert nxt2.q_harm == pytest.approx(0.595 - 0.005)  # plain variant moves even when the rule did not fire
    with pytest.raises(ValueError, match="err implies fired"):
        step(state, True, False, fired_harm=False)


def test_conditional_variant_moves_only_when_the_rule_fired_with_step_eta_over_pi():
    config = ControllerConfig(alpha_harm=0.1, alpha_comp=0.1, eta_harm=0.1, eta_comp=0.1, conditional=True)
    state = dataclasses.replace(ControllerState.initial(config), pi_harm=0.5, pi_comp=0.25)
    nxt = step(state, False, False, fired_harm=False, fired_comp=True)
    assert nxt.q_harm == state.q_harm
    assert nxt.q_comp == pytest.approx(0.5 - (0.1 / 0.25) * 0.1)
    nxt = step(state, True, False, fired_harm=True, fired_comp=False)
    assert nxt.q_harm == pytest.approx(0.5 + 0.2 * 0.9)


def test_fixed_baseline_never_moves_and_has_no_bound():
    ctl = OnlineController(fixed_baseline(ControllerState.initial()))
    for err in (True, False, True):
        ctl.update(err, err)
    assert ctl.thresholds == (0.5, 0.5)
    assert ctl.bound() == (math.inf, math.inf)
    assert ctl.report()["bound"] == {"harm": None, "comp": None}
    assert ctl.violation_rates() == (pytest.approx(2 / 3), pytest.approx(2 / 3))


# Bound formula

def test_bound_formula_and_the_spec_form_it_implies():
    # max(0, B + η(1−α) − q1) / (ηT)
    assert upper_bound(100, 0.05, 0.1, 0.5, 1.0) == pytest.approx((1 + 0.05 * 0.9 - 0.5) / (0.05 * 100))
    assert upper_bound(10, 0.1, 0.1, 5.0, 1.0) == 0.0  # q1 above B + η: the rate can only fall below α
    assert upper_bound(10, 0.0, 0.1, 0.5, 1.0) == math.inf
    assert lower_bound(100, 0.05, 0.1, 0.5) == pytest.approx((0.5 + 0.005) / 5)
    rng = np.random.default_rng(1)
    for _ in range(1000):
        T, eta, alpha, q1, B = rng.integers(1, 1000), rng.uniform(1e-3, 1), rng.uniform(0.01, 0.99), \
            rng.uniform(-3, 3), rng.uniform(0.1, 3)
        assert upper_bound(T, eta, alpha, q1, B) <= (B + eta + abs(q1)) / (eta * T) + 1e-12


def test_bound_is_attained_up_to_one_step():
    """The truth is always protected with s(Y) = B: the rate overshoots by (B − q1)/(ηT) before settling."""
    cfg = ControllerConfig(alpha_harm=0.1, eta_harm=0.1, q_harm_init=0.0)
    ctl = OnlineController(cfg)
    excess = []
    for _ in range(100):
        errs = ctl.interaction_errors(np.array([1.0, 0.0]), 0, np.array([[T_, F_]]), np.array([[F_, T_]]))
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        excess.append(ctl.state.n_err_harm - 0.1 * ctl.state.t)  # Σ(err − α)
    slack = (1.0 + 0.1 * 0.9 - 0.0) / 0.1
    assert (1.0 - 0.0) / 0.1 <= max(excess) <= slack + 1e-9


# Calibration

def test_conformal_threshold_by_hand():
    values = np.arange(1, 10) / 10  # 0.1 .. 0.9, n = 9
    assert conformal_threshold(values, 0.2, 1.0) == pytest.approx(0.8)  # rank ⌈10·0.8⌉ = 8
    assert conformal_threshold(values, 0.05, 1.0) == 1.0  # rank 10 > n: B
    assert conformal_threshold(np.array([-np.inf, -np.inf, 0.3]), 0.5, 1.0) == 0.0  # rank 2 is −inf: clipped to 0
    assert conformal_threshold(np.arange(1, 91) / 100, 0.1 + 1e-17, 1.0) == pytest.approx(0.82)  # ⌈91·0.9⌉=82


def test_calibrate_by_hand():
    scores = np.array([[0.2, 0.8], [0.5, 0.5], [0.3, 0.7], [0.6, 0.4]])
    labels = np.array([0, 0, 1, 1])  # s(Y) = 0.2, 0.5, 0.7, 0.4
    protect = np.array([[T_, F_], [F_, T_], [F_, T_], [F_, T_]])  # fires on Y in cases 0, 2, 3
    supply = ~protect  # fires on Y in case 1
    state = calibrate(ControllerConfig(alpha_harm=0.5, alpha_comp=0.5), scores, labels, protect, supply)
    # harm: critical [0.2, −inf, 0.7, 0.4], rank ⌈5·0.5⌉ = 3 -> 0.4; comp: [−inf, 0.5, −inf, −inf] -> rank 3 = −inf -> 0
    assert (state.q_harm, state.q_comp, state.q1_harm, state.pi_harm) == (pytest.approx(0.4), 0.0, pytest.approx(0.4), 1.0)
    cond = calibrate(ControllerConfig(alpha_harm=0.5, alpha_comp=0.5, conditional=True), scores, labels, protect,
                     supply)
    # firing cases only: harm [0.2, 0.4, 0.7], rank ⌈4·0.5⌉ = 2 -> 0.4, π̂ = 3/4; comp [0.5], rank 1 -> 0.5, π̂ = 1/4
    assert (cond.q_harm, cond.pi_harm, cond.q_comp, cond.pi_comp) == (pytest.approx(0.4), 0.75, 0.5, 0.25)
    with pytest.raises(ValueError, match="never fires"):
        calibrate(ControllerConfig(conditional=True), scores, labels, protect, np.zeros_like(protect))
    ctl = OnlineController(ControllerConfig(alpha_harm=0.5, alpha_comp=0.5))
    ctl.calibrate(CalibrationBatch(scores, labels, protect, supply))
    assert ctl.state == state
    # Multi-round batches: the critical score is the truth's score in the rounds where the rule fires.
    rounds = np.stack([protect, ~protect], axis=1)  # (n, 2, K): in round 2 the human flips
    both = calibrate(ControllerConfig(alpha_harm=0.2, alpha_comp=0.2), scores, labels, rounds, ~rounds)
    # every case fires both rules: critical = s(Y) = [0.2, 0.5, 0.7, 0.4], rank ⌈5·0.8⌉ = 4 -> 0.7
    assert (both.q_harm, both.q_comp) == (pytest.approx(0.7), pytest.approx(0.7))


# State serialisation and validation

def test_state_json_round_trip_and_resume():
    cfg = ControllerConfig(alpha_harm=0.07, alpha_comp=0.2, eta_harm=0.03, eta_comp=0.4, conditional=True)
    state = dataclasses.replace(ControllerState.initial(cfg), pi_harm=0.8)
    for e in (True, False, False):
        state = step(state, e, not e)
    restored = ControllerState.from_dict(json.loads(json.dumps(state.to_dict())))
    assert restored == state
    assert step(restored, True, True) == step(state, True, True)  # one transaction per interaction


@pytest.mark.parametrize("kwargs, message", [
    (dict(alpha_harm=0.0), r"alpha_harm must be in \(0, 1\)"),
    (dict(alpha_comp=1.0), r"alpha_comp must be in \(0, 1\)"),
    (dict(eta_harm=-0.1), "eta_harm must be a finite number >= 0"),
    (dict(eta_comp=math.inf), "eta_comp must be a finite number >= 0"),
    (dict(score_bound=0.0), "score_bound must be a finite number > 0"),
    (dict(q_harm_init=math.nan), "q_harm_init must be finite"),
])
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ControllerConfig(**kwargs)


def test_state_validation():
    with pytest.raises(ValueError, match=r"pi_harm must be in \(0, 1\]"):
        ControllerState(pi_harm=0.0)
    with pytest.raises(ValueError, match="counts"):
        ControllerState(t=-1)


# The guarantee, for arbitrary and adversarial sequences (hypothesis)

@st.composite
def configs(draw, conditional=False):
    B = draw(st.sampled_from([1.0, 2.5]))
    return ControllerConfig(
        alpha_harm=draw(st.floats(0.01, 0.5)), alpha_comp=draw(st.floats(0.01, 0.5)),
        eta_harm=draw(st.floats(0.005, 1.0)), eta_comp=draw(st.floats(0.005, 1.0)), score_bound=B,
        q_harm_init=draw(st.floats(-1.0, 3.0)), q_comp_init=draw(st.floats(-1.0, 3.0)), conditional=conditional)


def _just_above(q: float, B: float) -> float:
    """A score in [0, B] that the threshold q leaves out, when one exists."""
    return float(min(B, max(0.0, np.nextafter(q, np.inf))))


@st.composite
def sequences(draw, B: float, max_T: int = 150):
    """T interactions of up to 3 rounds over K labels: scores, rule masks, labels and an attack plan.

    The attack plan is adaptive: it is applied against the thresholds of the moment (``_attacked``).
    """
    K = draw(st.integers(2, 5), label="K")
    T = draw(st.integers(1, max_T), label="T")
    score = st.one_of(st.sampled_from([0.0, B / 2, B]), st.floats(0.0, B))
    return dict(
        K=K, T=T,
        rounds=draw(hnp.arrays(np.int64, T, elements=st.integers(1, 3)), label="rounds"),
        labels=draw(hnp.arrays(np.int64, T, elements=st.integers(0, K - 1)), label="labels"),
        scores=draw(hnp.arrays(float, (T, 3, K), elements=score), label="scores"),
        protect=draw(hnp.arrays(bool, (T, 3, K)), label="protect"),
        supply=draw(hnp.arrays(bool, (T, 3, K)), label="supply"),
        attacks=draw(hnp.arrays(np.int64, T, elements=st.integers(0, 3)), label="attacks"),
    )


def _attacked(seq: dict, t: int, ctl: OnlineController, disjoint: bool, always_fire: bool = False):
    """Interaction t, with its attack aimed at the current thresholds: 1 harm, 2 complementarity, 3 both."""
    B = ctl.config.score_bound
    R, y, attack = int(seq["rounds"][t]), int(seq["labels"][t]), int(seq["attacks"][t])
    scores, protect, supply = (seq[k][t, :R].copy() for k in ("scores", "protect", "supply"))
    if disjoint:
        supply &= ~protect
    if attack == 3 and R == 1:
        attack = 1  # one round cannot hold and lack the truth at once
    q_h, q_c = ctl.thresholds
    if attack in (1, 3):  # hold the truth where the AI must drop it
        protect[0, y], supply[0, y] = True, False
        scores[:, y] = _just_above(q_h, B)
    if attack in (2, 3):  # lack the truth where the AI will not supply it
        protect[-1, y], supply[-1, y] = False, True
        if attack == 2:
            scores[:, y] = _just_above(q_c, B)
    if always_fire and not protect[:, y].any():
        protect[0, y], supply[0, y] = True, False
    return ctl.interaction_errors(scores, y, protect, supply)


@settings(max_examples=150, deadline=None)
@given(cfg=configs(), data=st.data())
def test_violation_rate_never_exceeds_target_plus_bound(cfg, data):
    seq = data.draw(sequences(cfg.score_bound))
    ctl = OnlineController(cfg)
    for t in range(1, seq["T"] + 1):
        errs = _attacked(seq, t - 1, ctl, disjoint=False)  # overlapping rules allowed: the upper bound still holds
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        rate_h, rate_c = ctl.violation_rates()
        bound_h, bound_c = ctl.bound(t)
        assert rate_h <= cfg.alpha_harm + bound_h + 1e-9, (t, rate_h, ctl.state)
        assert rate_c <= cfg.alpha_comp + bound_c + 1e-9, (t, rate_c, ctl.state)


@settings(max_examples=100, deadline=None)
@given(cfg=configs(conditional=True), pi=st.floats(0.2, 1.0), data=st.data())
def test_conditional_variant_is_two_sided_over_firing_interactions(cfg, pi, data):
    seq = data.draw(sequences(cfg.score_bound))
    ctl = OnlineController(dataclasses.replace(ControllerState.initial(cfg), pi_harm=pi, pi_comp=pi))
    s = ctl.state
    for t in range(seq["T"]):
        errs = _attacked(seq, t, ctl, disjoint=True)
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        rate_h, rate_c = ctl.violation_rates()
        for rate, n, alpha, q1, eta in ((rate_h, ctl.state.n_fired_harm, cfg.alpha_harm, s.q1_harm, s.step_harm),
                                        (rate_c, ctl.state.n_fired_comp, cfg.alpha_comp, s.q1_comp, s.step_comp)):
            if n:
                assert rate <= alpha + upper_bound(n, eta, alpha, q1, cfg.score_bound) + 1e-9
                assert rate >= alpha - lower_bound(n, eta, alpha, q1) - 1e-9


@settings(max_examples=60, deadline=None)
@given(cfg=configs(), data=st.data())
def test_plain_variant_lower_bound_when_the_rule_fires_every_time(cfg, data):
    seq = data.draw(sequences(cfg.score_bound, max_T=120))
    ctl = OnlineController(cfg)
    for t in range(1, seq["T"] + 1):
        errs = _attacked(seq, t - 1, ctl, disjoint=True, always_fire=True)
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        rate_h = ctl.violation_rates()[0]
        assert rate_h >= cfg.alpha_harm - lower_bound(t, cfg.eta_harm, cfg.alpha_harm, cfg.q_harm_init) - 1e-9


def test_plain_variant_has_no_lower_bound_when_the_rule_never_fires():
    """The two-sided form of the guarantee fails: a human who never holds the truth makes harm impossible."""
    cfg = ControllerConfig(alpha_harm=0.1, eta_harm=0.1)
    ctl = OnlineController(cfg)
    for _ in range(1000):
        errs = ctl.interaction_errors(np.array([0.9, 0.1]), 0, np.array([[F_, T_]]), np.array([[T_, F_]]))
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
    assert ctl.violation_rates()[0] == 0.0
    assert 0.0 < cfg.alpha_harm - lower_bound(1000, 0.1, 0.1, 0.5)
    assert ctl.thresholds[0] == pytest.approx(0.5 - 1000 * 0.1 * 0.1)  # drifts down without limit


# Delayed updates: many participants on one stream (thresholds frozen before others' updates land)

@settings(max_examples=120, deadline=None)
@given(cfg=configs(), max_delay=st.integers(0, 12), data=st.data())
def test_delayed_updates_stay_within_the_delay_aware_bound(cfg, max_delay, data):
    seq = data.draw(sequences(cfg.score_bound))
    delays = data.draw(hnp.arrays(np.int64, seq["T"], elements=st.integers(0, max_delay)), label="delays")
    ctl = OnlineController(cfg)
    states = [ctl.state]  # states[i]: the thresholds after i updates
    worst = 0
    for t in range(seq["T"]):
        d = int(min(delays[t], t))  # interaction t froze its thresholds d updates ago
        worst = max(worst, d)
        errs = _attacked(seq, t, OnlineController(states[t - d]), disjoint=False)
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        states.append(ctl.state)
        rate_h, rate_c = ctl.violation_rates()
        s = ctl.state
        assert rate_h <= cfg.alpha_harm + upper_bound(t + 1, s.step_harm, cfg.alpha_harm, s.q1_harm,
                                                      cfg.score_bound, delay=worst) + 1e-9
        assert rate_c <= cfg.alpha_comp + upper_bound(t + 1, s.step_comp, cfg.alpha_comp, s.q1_comp,
                                                      cfg.score_bound, delay=worst) + 1e-9


def test_delay_breaks_the_textbook_bound_but_not_the_delay_aware_one():
    # 100 participants all freeze q_1 = 0 before any of them finishes, and each misses the truth.
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.1, eta_harm=0.05, eta_comp=0.05, q_harm_init=0.0,
                           q_comp_init=0.0)
    ctl = OnlineController(cfg)
    frozen = ctl.state
    for _ in range(100):
        errs = interaction_errors(np.array([1.0, 1.0]), 0, np.array([[True, False]]), np.array([[False, False]]),
                                  frozen.q_harm, frozen.q_comp)
        assert errs.err_harm
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
    rate = ctl.violation_rates()[0]
    assert rate == 1.0
    assert rate > 0.1 + upper_bound(100, 0.05, 0.1, 0.0, 1.0)  # textbook bound (no delay): 0.31
    assert rate <= 0.1 + upper_bound(100, 0.05, 0.1, 0.0, 1.0, delay=99)
    with pytest.raises(ValueError, match="delay must be >= 0"):
        upper_bound(10, 0.05, 0.1, 0.0, 1.0, delay=-1)


def test_the_delay_aware_bound_is_attained_when_d_plus_one_interactions_freeze_just_below_b():
    """D + 1 participants freeze q_1 = B − ε before any of them finishes; each holds the truth at s(Y) = B.

    Spec §5 (delayed updates): (1/T) Σ err_t <= α + max(0, B + (D+1)η(1−α) − q_1)/(ηT).
    Here B = 1, η = 0.25, α = 0.5, D = 3, T = D + 1 = 4, q_1 = 1 − ε with ε = 2^-20 (all exact in binary):

    - every interaction froze q_1 < B = s(Y), so the truth is left out: err_t = 1, rate = 1;
    - the band: (1 + 4 · 0.25 · 0.5 − (1 − ε))/(0.25 · 4) = (0.5 + ε)/1 = 0.5 + ε;
    - α + band = 1 + ε: the rate sits ε below the bound, which is therefore attained as ε → 0;
    - the same with D − 1 = 2 would give (0.375 + ε), α + band = 0.875 + ε < 1: the D + 1 is needed,
      and a looser band (e.g. 2D + 1: 0.875 + ε, α + band = 1.375 + ε) is not attained.
    """
    eps = 2.0 ** -20
    cfg = ControllerConfig(alpha_harm=0.5, alpha_comp=0.5, eta_harm=0.25, eta_comp=0.25, q_harm_init=1.0 - eps,
                           q_comp_init=1.0 - eps)
    ctl = OnlineController(cfg)
    frozen = ctl.state  # all four froze the initial state: the k-th update lands k − 1 updates late, D = 3
    for _ in range(4):
        errs = interaction_errors(np.array([1.0, 0.0]), 0, np.array([[T_, F_]]), np.array([[F_, T_]]),
                                  frozen.q_harm, frozen.q_comp)
        assert errs.err_harm
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
    rate = ctl.violation_rates()[0]
    assert rate == 1.0
    band = upper_bound(4, 0.25, 0.5, 1.0 - eps, 1.0, delay=3)
    assert band == pytest.approx(0.5 + eps, rel=0, abs=1e-15)  # by hand, above
    assert 0.5 + band - rate == pytest.approx(eps, rel=0, abs=1e-15)  # attained up to ε
    assert rate > 0.5 + upper_bound(4, 0.25, 0.5, 1.0 - eps, 1.0, delay=2)  # one delay fewer: violated


# The band at t needs only the delay of the latest error before t

@settings(max_examples=120, deadline=None)
@given(cfg=configs(), max_delay=st.integers(0, 40), data=st.data())
def test_delayed_updates_stay_within_the_latest_error_delay_bound(cfg, max_delay, data):
    """Adversarial cases and adversarial delays: at every t the rate stays within the band whose D is
    the delay of the latest update with an error up to t (a tighter band than the stream's maximum)."""
    from engines.collab.controller import latest_error_delay

    seq = data.draw(sequences(cfg.score_bound))
    delays = data.draw(hnp.arrays(np.int64, seq["T"], elements=st.integers(0, max_delay)), label="delays")
    ctl = OnlineController(cfg)
    states = [ctl.state]  # states[i]: the thresholds after i updates
    used, err_h, err_c = [], [], []
    for t in range(seq["T"]):
        d = int(min(delays[t], t))  # interaction t froze its thresholds d updates ago
        used.append(d)
        errs = _attacked(seq, t, OnlineController(states[t - d]), disjoint=False)
        ctl.update(errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp)
        states.append(ctl.state)
        err_h.append(errs.err_harm)
        err_c.append(errs.err_comp)
        s = ctl.state
        d_h = int(latest_error_delay(np.array(err_h), np.array(used))[-1])
        d_c = int(latest_error_delay(np.array(err_c), np.array(used))[-1])
        rate_h, rate_c = ctl.violation_rates()
        assert rate_h <= cfg.alpha_harm + upper_bound(t + 1, s.step_harm, cfg.alpha_harm, s.q1_harm,
                                                      cfg.score_bound, delay=d_h) + 1e-9
        assert rate_c <= cfg.alpha_comp + upper_bound(t + 1, s.step_comp, cfg.alpha_comp, s.q1_comp,
                                                      cfg.score_bound, delay=d_c) + 1e-9


def test_one_slow_participant_without_an_error_does_not_widen_the_band():
    """Worked example: an interaction left open for 10,000 updates ends without an error; the band
    keeps D = 0 (the latest error had no delay), where the maximum would give D = 10,000."""
    from engines.collab.controller import latest_error_delay

    errors = np.array([1, 0, 1, 0, 0], dtype=bool)
    delays = np.array([0, 0, 0, 10_000, 0])
    assert latest_error_delay(errors, delays).tolist() == [0, 0, 0, 0, 0]
    # The same slow interaction with an error is the latest error until the next one.
    errors[3] = True
    assert latest_error_delay(errors, delays).tolist() == [0, 0, 0, 10_000, 10_000]
    # By hand: B = 1, η = 0.05, α = 0.1, q_1 = 0.5, t = 5: (1 + (D+1)·0.045 − 0.5)/(0.05·5).
    assert upper_bound(5, 0.05, 0.1, 0.5, 1.0, delay=0) == pytest.approx(0.545 / 0.25)
    assert upper_bound(5, 0.05, 0.1, 0.5, 1.0, delay=10_000) == pytest.approx((0.5 + 10_001 * 0.045) / 0.25)
    with pytest.raises(ValueError, match="two \\(T,\\) arrays"):
        latest_error_delay(errors, delays[:3])


def test_bound_trace_takes_per_t_delays():
    from engines.collab.rates import bound_trace

    n_t = np.array([1.0, 2.0, 4.0])
    per_t = bound_trace(n_t, 0.05, 0.1, 0.5, 1.0, delay=np.array([0, 2, 0]))
    # By hand: (1 + (D+1)·0.045 − 0.5)/0.05/n_t
    np.testing.assert_allclose(per_t, [0.545 / 0.05, (0.5 + 3 * 0.045) / 0.05 / 2, 0.545 / 0.05 / 4])
    np.testing.assert_allclose(bound_trace(n_t, 0.05, 0.1, 0.5, 1.0, delay=2), [(0.5 + 3 * 0.045) / 0.05 / n for n in n_t])
    with pytest.raises(ValueError, match="per-t delays must have the shape"):
        bound_trace(n_t, 0.05, 0.1, 0.5, 1.0, delay=np.array([0, 1]))


# Scores outside [0, B] and NaN are refused

@pytest.mark.parametrize("bad, value, index", [
    (np.array([0.2, np.nan, 0.1]), "nan", 1),
    (np.array([0.2, 1.5, 0.1]), "1.5", 1),
    (np.array([-0.01, 0.5, 0.1]), "-0.01", 0),
])
def test_controller_refuses_scores_outside_the_range(bad, value, index):
    ctl = OnlineController(ControllerConfig())
    protect = np.array([T_, F_, F_])
    message = rf"must lie in \[0, 1\]: got {value} at index {index}"
    with pytest.raises(ValueError, match=message):
        ctl.prediction_set(bad, protect)
    with pytest.raises(ValueError, match=message):
        ctl.interaction_errors(bad, 0, protect[None], ~protect[None])
    with pytest.raises(ValueError, match=rf"calibration scores must lie in \[0, 1\]: got {value} at index \(0, {index}\)"):
        calibrate(ControllerConfig(), bad[None], np.array([0]), protect[None], ~protect[None])


def test_a_nan_score_never_silently_enters_or_leaves_the_set():
    with pytest.raises(ValueError, match="not NaN"):
        prediction_set(np.array([np.nan, 0.2]), np.array([T_, F_]), 0.5, 0.5)
    from engines.collab.controller import calibrate_critical

    with pytest.raises(ValueError, match="got NaN or \\+inf"):  # NaN must not pass as "the rule never fired"
        calibrate_critical(ControllerConfig(), np.array([0.2, np.nan]), np.array([0.2, 0.3]))
