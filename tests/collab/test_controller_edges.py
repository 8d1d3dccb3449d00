"""Controller edge cases: the stateful wrapper's set and report, calibration input checks, bounds at n = 0.

Every expected value is worked out by hand in the test (spec §5 formulas: the two-threshold set,
q <- q + η(err − α), the bound max(0, B + η(1−α) − q_1)/(ηn), the split-conformal rank
⌈(n+1)(1−α)⌉); numbers are chosen exact in binary so equality is exact.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from engines.collab.controller import (
    ControllerConfig,
    ControllerState,
    OnlineController,
    calibrate_critical,
    check_scores,
    critical_scores,
    interaction_errors,
    latest_error_delay,
    lower_bound,
    prediction_set,
    step,
    upper_bound,
)

T_ = True
F_ = False


def _exactly(message: str) -> str:
    """A pattern matching exactly ``message`` (pytest.raises searches, so anchor both ends)."""
    return "^" + re.escape(message) + "$"


# The stateful wrapper

def test_online_prediction_set_uses_the_current_thresholds_and_the_supply_rule():
    """q^H = 0.2, q^C = 0.6. Scores [0.1, 0.5, 0.9, 0.3, 0.7], protect [T, T, F, F, T], supply [F, T, F, F, F]:

    label 0 protected, 0.1 <= q^H: in; label 1 protected and supplied, 0.5 > q^H but <= q^C: in;
    label 2 unprotected, 0.9 > q^C: out; label 3 unprotected, 0.3 <= q^C: in; label 4 protected only,
    0.7 > q^H: out. Without the supply rule label 1 can only enter through q^H: out.
    """
    ctl = OnlineController(ControllerConfig(q_harm_init=0.2, q_comp_init=0.6))
    scores = np.array([0.1, 0.5, 0.9, 0.3, 0.7])
    protect = np.array([T_, T_, F_, F_, T_])
    supply = np.array([F_, T_, F_, F_, F_])
    np.testing.assert_array_equal(ctl.prediction_set(scores, protect, supply), [T_, T_, F_, T_, F_])
    np.testing.assert_array_equal(ctl.prediction_set(scores, protect), [T_, F_, F_, T_, F_])


def _two_updates() -> OnlineController:
    """α_H = 0.25, α_C = 0.5, η_H = 0.5, η_C = 0.25, q_1 = (0.5, 0.25); updates (harm error), (no error).

    q^H: 0.5 + 0.5·0.75 = 0.875, then 0.875 − 0.5·0.25 = 0.75.
    q^C: 0.25 − 0.25·0.5 = 0.125, then 0.125 − 0.125 = 0.0.
    """
    ctl = OnlineController(ControllerConfig(alpha_harm=0.25, alpha_comp=0.5, eta_harm=0.5, eta_comp=0.25,
                                            q_harm_init=0.5, q_comp_init=0.25))
    ctl.update(True, False)
    ctl.update(False, False)
    return ctl


def test_report_gives_rates_targets_thresholds_and_finite_bounds_by_hand():
    """Bounds (B = 1): harm (1 + 0.5·0.75 − 0.5)/(0.5·2) = 0.875; comp (1 + 0.25·0.5 − 0.25)/(0.25·2) = 1.75."""
    assert _two_updates().report() == {
        "t": 2,
        "thresholds": {"harm": 0.75, "comp": 0.0},
        "violation_rate": {"harm": 0.5, "comp": 0.0},
        "target": {"harm": 0.25, "comp": 0.5},
        "bound": {"harm": 0.875, "comp": 1.75},
    }


def test_bound_for_a_given_horizon_uses_that_horizon_not_the_count_so_far():
    """The same slack 0.875 divided by η·n: n = 4 gives 0.875/2 and 0.875/1; n omitted uses t = 2."""
    ctl = _two_updates()
    assert ctl.bound(4) == (0.4375, 0.875)
    assert ctl.bound() == (0.875, 1.75)


def test_violation_rates_are_zero_before_any_counted_interaction():
    assert OnlineController(ControllerConfig()).violation_rates() == (0.0, 0.0)
    cond = OnlineController(ControllerConfig(conditional=True))
    cond.update(False, False, fired_harm=False, fired_comp=False)  # counted, but no rule fired
    assert cond.state.t == 1 and cond.violation_rates() == (0.0, 0.0)


def test_state_without_a_config_entry_gets_the_default_config():
    state = ControllerState.from_dict({"q_harm": 0.25, "t": 3})
    assert state.config == ControllerConfig()
    assert (state.q_harm, state.q_comp, state.t) == (0.25, 0.5, 3)


def test_rule_masks_given_as_zero_one_numbers_count_as_booleans():
    """Masks read from a CSV come as 0.0/1.0: the same errors as the boolean masks.

    Round 1 protects Y = 1 with s(Y) = 0.7 > q^H = 0.6 (harm); round 2 supplies it with 0.7 <= q^C = 0.8.
    """
    protect = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    errs = interaction_errors(np.array([0.2, 0.7, 0.4]), 1, protect, 1.0 - protect, q_harm=0.6, q_comp=0.8)
    assert (errs.err_harm, errs.err_comp, errs.fired_harm, errs.fired_comp) == (True, False, True, True)


# Calibration inputs

def test_an_empty_calibration_batch_is_refused():
    with pytest.raises(ValueError, match=_exactly("the calibration batch is empty")):
        calibrate_critical(ControllerConfig(), np.array([]), np.array([]))


def test_a_one_case_batch_is_enough_to_fit():
    """n = 1, α = 0.5: rank ⌈2·0.5⌉ = 1, the single critical score."""
    state = calibrate_critical(ControllerConfig(alpha_harm=0.5, alpha_comp=0.5), np.array([0.25]), np.array([0.75]))
    assert (state.q_harm, state.q_comp) == (0.25, 0.75)


def test_a_missing_critical_score_is_refused_as_nan():
    with pytest.raises(ValueError, match=_exactly(
            "harm calibration scores must lie in [0, 1.0] (or be -inf where the rule never fired): got NaN or +inf")):
        calibrate_critical(ControllerConfig(), [0.2, None], [0.2, 0.3])


@pytest.mark.parametrize("critical", [[-0.1, 0.5], [0.5, 1.5]], ids=["below 0", "above B"])
def test_a_critical_score_outside_the_range_is_refused(critical):
    with pytest.raises(ValueError, match=_exactly("calibration scores must lie in [0, 1.0]")):
        calibrate_critical(ControllerConfig(), np.array(critical), np.array([0.2, 0.3]))


def test_critical_scores_at_the_ends_of_the_range_are_accepted():
    """[0, 1, 1] and [0, 0, 1] at α = 0.5: rank ⌈4·0.5⌉ = 2 -> 1.0 and 0.0."""
    state = calibrate_critical(ControllerConfig(alpha_harm=0.5, alpha_comp=0.5), np.array([0.0, 1.0, 1.0]),
                               np.array([0.0, 0.0, 1.0]))
    assert (state.q_harm, state.q_comp) == (1.0, 0.0)


def test_the_conditional_variant_names_the_rule_that_never_fires():
    with pytest.raises(ValueError, match=_exactly(
            "the comp rule never fires on the truth in the calibration batch: the conditional variant needs π̂ > 0")):
        calibrate_critical(ControllerConfig(conditional=True), np.array([0.2, 0.4]), np.array([-np.inf, -np.inf]))


def test_the_fitted_state_keeps_the_config_and_both_initial_thresholds():
    """n = 3, α = 0.5: rank 2 -> q^H = 0.4 of [0.2, 0.4, 0.6], q^C = 0.3 of [0.1, 0.3, 0.7]."""
    cfg = ControllerConfig(alpha_harm=0.5, alpha_comp=0.5, eta_harm=0.2, eta_comp=0.3)
    state = calibrate_critical(cfg, np.array([0.2, 0.4, 0.6]), np.array([0.1, 0.3, 0.7]))
    assert state == ControllerState(config=cfg, q_harm=0.4, q_comp=0.3, q1_harm=0.4, q1_comp=0.3)


def test_critical_scores_with_per_round_scores_take_the_max_over_firing_rounds():
    """(n, R, K) scores: case 0 fires on Y = 0 in both rounds -> max(0.2, 0.6); case 1 on Y = 1 in round 1
    only -> 0.7; case 2 never fires -> −inf."""
    scores = np.array([[[0.2, 0.8], [0.6, 0.4]], [[0.3, 0.7], [0.9, 0.1]], [[0.5, 0.5], [0.5, 0.5]]])
    masks = np.array([[[T_, F_], [T_, F_]], [[F_, T_], [F_, F_]], [[F_, F_], [F_, F_]]])
    np.testing.assert_array_equal(critical_scores(scores, np.array([0, 1, 0]), masks), [0.6, 0.7, -np.inf])


def test_critical_scores_accept_labels_stored_as_floats():
    """Labels from a float column (0.0, 1.0) index like integers: s(Y) = 0.2 and 0.5."""
    scores = np.array([[0.2, 0.8], [0.5, 0.5]])
    np.testing.assert_array_equal(critical_scores(scores, np.array([0.0, 1.0]), np.ones((2, 2), bool)), [0.2, 0.5])


@pytest.mark.parametrize("masks, shape", [(np.ones((3, 2), bool), "(3, 1, 2)"), (np.ones(2, bool), "(2,)")],
                         ids=["one row too many", "one-dimensional"])
def test_critical_scores_refuse_masks_of_the_wrong_shape(masks, shape):
    with pytest.raises(ValueError, match=_exactly(f"rule masks must be (n, K) or (n, R, K) with n = 2, got {shape}")):
        critical_scores(np.array([[0.2, 0.8], [0.5, 0.5]]), np.array([0, 1]), masks)


# Delays and bounds at the edges

def test_latest_error_delay_of_an_error_in_the_first_update_counts():
    assert latest_error_delay(np.array([1, 0, 0]), np.array([5, 0, 0])).tolist() == [5, 5, 5]


def test_latest_error_delay_is_zero_before_the_first_error():
    assert latest_error_delay(np.array([0, 1, 0]), np.array([7, 3, 9])).tolist() == [0, 3, 3]


def test_latest_error_delay_of_an_empty_stream_is_empty():
    assert latest_error_delay(np.array([], bool), np.array([], int)).tolist() == []


def test_latest_error_delays_are_whole_update_counts():
    delays = latest_error_delay(np.array([0, 1]), np.array([4.0, 2.0]))
    assert delays.dtype.kind == "i" and delays.tolist() == [0, 2]


def test_a_negative_delay_is_refused():
    with pytest.raises(ValueError, match=_exactly("delays must be >= 0")):
        latest_error_delay(np.array([0, 1]), np.array([0, -1]))


def test_no_bound_without_interactions_or_without_a_step():
    assert upper_bound(0, 0.05, 0.1, 0.5, 1.0) == math.inf
    assert lower_bound(0, 0.05, 0.1, 0.5) == math.inf
    assert lower_bound(10, 0.0, 0.1, 0.5) == math.inf


def test_lower_bound_after_one_interaction_by_hand():
    """max(0, q_1 + ηα)/(ηn) = (0.25 + 0.5·0.5)/(0.5·1) = 1."""
    assert lower_bound(1, 0.5, 0.5, 0.25) == 1.0


# Messages and validation a caller sees

def test_the_plain_set_names_a_nan_score():
    with pytest.raises(ValueError, match=_exactly("scores must lie in a number (not NaN): got nan at index 1")):
        prediction_set(np.array([0.2, np.nan]), np.array([T_, F_]), 0.5, 0.5)


def test_a_missing_score_is_refused_as_nan_and_named():
    ctl = OnlineController(ControllerConfig())
    with pytest.raises(ValueError, match=_exactly("scores must lie in [0, 1]: got nan at index 1")):
        ctl.prediction_set([0.2, None, 0.1], np.array([T_, F_, F_]))


def test_a_single_score_out_of_range_is_named_by_its_value():
    with pytest.raises(ValueError, match=r"^s\(Y\) must lie in \[0, 1\]: got 1\.5 at index"):
        check_scores(1.5, 1.0, what="s(Y)")


def test_the_plain_set_reads_zero_one_masks_as_booleans():
    """q^H = 0.2, q^C = 0.6, scores [0.1, 0.5, 0.3, 0.7]: protect [1, 1, 0, 1], supply [0, 1, 0, 0] as floats.

    Label 0 protected, 0.1 <= q^H: in; label 1 also supplied, 0.5 <= q^C: in; label 2 unprotected,
    0.3 <= q^C: in; label 3 protected only, 0.7 > q^H: out.
    """
    chosen = prediction_set(np.array([0.1, 0.5, 0.3, 0.7]), np.array([1.0, 1.0, 0.0, 1.0]), 0.2, 0.6,
                            np.array([0.0, 1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(chosen, [T_, T_, T_, F_])


def test_a_violation_without_its_rule_firing_is_refused_with_the_reason():
    with pytest.raises(ValueError, match=_exactly(
            "a violation needs its rule to have fired on the truth (err implies fired)")):
        step(ControllerState.initial(), False, True, fired_comp=False)


def test_a_calibration_firing_fraction_above_one_is_refused():
    with pytest.raises(ValueError, match=_exactly("pi_comp must be in (0, 1], got 1.5")):
        ControllerState(pi_comp=1.5)


@pytest.mark.parametrize("name", ["t", "n_err_harm", "n_err_comp", "n_fired_harm", "n_fired_comp"])
def test_every_negative_count_is_refused(name):
    with pytest.raises(ValueError, match=_exactly("counts in a controller state must be >= 0")):
        ControllerState(**{name: -1})
