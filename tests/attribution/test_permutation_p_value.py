"""The experiment's permutation p-value is two-sided: a strong negative correlation is as significant
as a strong positive one (the paper's claim is a negative correlation of NMR with OOD success).

The exact p-value is computed here by enumerating every reordering of y (n <= 7) with Spearman's
rho written out as the Pearson correlation of average ranks; the experiment's Monte-Carlo value
(1 + #{|rho*| >= |rho|}) / (permutations + 1) must agree with it within its sampling error.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from engines.attribution.experiment import spearman

PERMUTATIONS = 1000


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: the Pearson correlation of the (average) ranks."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    return float(rx @ ry / math.sqrt((rx @ rx) * (ry @ ry)))


def _exact_two_sided(x: np.ndarray, y: np.ndarray) -> float:
    """P(|rho(x, y permuted)| >= |rho(x, y)|) over all n! orders of y, each equally likely.

    Reordering y reorders its ranks, so the ranks are centred once and every order's rho is one row
    of a matrix product."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    orders = np.array(list(itertools.permutations(range(len(y)))))
    rhos = ry[orders] @ rx / math.sqrt((rx @ rx) * (ry @ ry))
    return float(np.mean(np.abs(rhos) >= abs(_rho(x, y)) - 1e-9))


def _agrees(p_value: float, exact: float) -> bool:
    """Within four standard errors of the Monte-Carlo estimate (and its +1 correction) of ``exact``."""
    mean = (1 + PERMUTATIONS * exact) / (PERMUTATIONS + 1)
    return abs(p_value - mean) <= 4 * math.sqrt(exact * (1 - exact) / PERMUTATIONS) + 1 / (PERMUTATIONS + 1)


X = np.array([0.61, 0.68, 0.70, 0.72, 0.73, 0.75, 0.76])  # NMR of seven policies
Y_NEGATIVE = np.array([0.97, 0.95, 0.80, 0.88, 0.62, 0.50, 0.34])  # OOD success: falls as NMR rises, one swap


def test_the_exact_reference_by_hand():
    # The ranks of y are 7, 6, 4, 5, 3, 2, 1 against 1..7 (the reversed order with one adjacent swap):
    # d = -6, -4, -1, -1, 2, 4, 6, sum d^2 = 110, rho = 1 - 6 * 110 / (7 * 48) = -0.9642857...
    assert _rho(X, Y_NEGATIVE) == pytest.approx(1 - 6 * 110 / 336)
    assert _rho(X, Y_NEGATIVE) == pytest.approx(stats.spearmanr(X, Y_NEGATIVE).statistic)
    # |rho| >= 0.964 needs sum d^2 <= 2 or >= 110 (it is always even, at most 112): the identity and
    # its 6 adjacent swaps, and their 7 mirror images: 14 of 5040 orders.
    assert _exact_two_sided(X, Y_NEGATIVE) == pytest.approx(14 / 5040)


def test_a_strong_negative_correlation_gets_a_small_two_sided_p_value():
    result = spearman(X, Y_NEGATIVE, permutations=PERMUTATIONS, bootstrap=50, seed=0)
    assert result["rho"] == pytest.approx(-0.9642857142857143)
    exact = _exact_two_sided(X, Y_NEGATIVE)  # 14 / 5040 = 0.0028
    assert result["p_permutation"] < 0.01  # a one-sided test of rho > 0 would give about 1
    assert _agrees(result["p_permutation"], exact), (result["p_permutation"], exact)


def test_the_p_value_does_not_depend_on_the_sign_of_the_correlation():
    negative = spearman(X, Y_NEGATIVE, permutations=PERMUTATIONS, bootstrap=50, seed=1)
    positive = spearman(X, -Y_NEGATIVE, permutations=PERMUTATIONS, bootstrap=50, seed=1)
    assert positive["rho"] == pytest.approx(-negative["rho"])
    # The same seed draws the same reorderings; each null rho just changes sign with y.
    assert positive["p_permutation"] == pytest.approx(negative["p_permutation"])


@pytest.mark.parametrize("y", [
    np.array([5.0, 4.0, 3.0, 2.0, 1.0, 0.0]),  # a perfect negative: 2 of 720 orders reach |rho| = 1
    np.array([3.0, 1.0, 2.0, 0.0, -1.0]),  # moderate negative, n = 5
    np.array([0.9, 0.9, 0.5, 0.6, 0.1, 0.2, 0.1]),  # negative with ties (average ranks)
    np.array([0.2, 0.9, 0.1, 0.8, 0.4, 0.5, 0.3]),  # weak: p near 1 either way
])
def test_the_p_value_matches_the_exact_two_sided_permutation_p_value(y):
    x = X[:len(y)]
    result = spearman(x, y, permutations=PERMUTATIONS, bootstrap=50, seed=2)
    exact = _exact_two_sided(x, y)
    assert _agrees(result["p_permutation"], exact), (result["p_permutation"], exact)
