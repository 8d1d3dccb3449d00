"""Inter-annotator agreement (Cohen's kappa, Krippendorff's alpha) and judge concordance.

Expected values: scikit-learn's ``cohen_kappa_score`` and the ``krippendorff`` package fed the
annotator x item matrix (a different input than the audit's per-item value counts), and small
cases worked out by hand in the tests.
"""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from engines.judge.agreement import annotator_agreement, concordance, judge_concordance
from engines.judge.audit import audit
from engines.judge.items import Item, Label, Verdict

# Scores of 12 items by up to three annotators (None = not labelled), in labelling order.
SCORES = [[1, 1, None], [5, 4, 4], [3, 2, None], [2, 2, 1], [4, 5, None], [1, 3, 2], [5, 5, None], [1, 1, 1],
          [2, 4, None], [4, 4, 5], [1, None, None], [3, 3, None]]


def per_item(rows):
    return [[s for s in row if s is not None] for row in rows]


def test_kappas_equal_scikit_learn_on_first_and_second_labels():
    result = annotator_agreement(per_item(SCORES))
    first = [row[0] for row in SCORES if row[1] is not None]
    second = [row[1] for row in SCORES if row[1] is not None]
    assert result.n_items == 11
    assert result.kappa_binary == pytest.approx(cohen_kappa_score([int(s >= 3) for s in first],
                                                                  [int(s >= 3) for s in second]))
    assert result.kappa_quadratic == pytest.approx(cohen_kappa_score(first, second, weights="quadratic"))


def test_alphas_equal_krippendorff_over_all_labels():
    result = annotator_agreement(per_item(SCORES))
    matrix = np.array([[np.nan if s is None else s for s in row] for row in SCORES], dtype=float).T  # coders x items
    binary = np.where(np.isnan(matrix), np.nan, (matrix >= 3).astype(float))
    assert result.alpha_ordinal == pytest.approx(krippendorff.alpha(reliability_data=matrix,
                                                                    level_of_measurement="ordinal"))
    assert result.alpha_nominal == pytest.approx(krippendorff.alpha(reliability_data=binary,
                                                                    level_of_measurement="nominal"))
    assert result.n_labels == 28 and result.n_labelled_items == 12


def test_binary_kappa_by_hand():
    """Pairs (first, second) binary: (1,1) x3, (0,0) x4, (1,0) x2, (0,1) x1 -> 10 pairs.

    p_o = 7/10. First says harmful 5/10, second 4/10: p_e = 0.5*0.4 + 0.5*0.6 = 0.5.
    kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4; the raw binary agreement is 0.7.
    """
    pairs = [[4, 5]] * 3 + [[1, 2]] * 4 + [[3, 1]] * 2 + [[2, 4]]
    result = annotator_agreement(pairs)
    p_o = 7 / 10
    p_e = 0.5 * 0.4 + 0.5 * 0.6
    assert result.kappa_binary == pytest.approx((p_o - p_e) / (1 - p_e))
    assert result.binary_agreement == pytest.approx(0.7)


def test_nominal_alpha_by_hand():
    """Items (harmful?): (1,1), (0,0), (1,0). Coincidences: o_11 = 2, o_00 = 2, o_01 = o_10 = 1; n = 6, n_0 = n_1 = 3.

    alpha = 1 - (n - 1) (o_01 + o_10) / (2 n_0 n_1)... written as 1 - D_o/D_e with
    D_o = 2/6 and D_e = 2 n_0 n_1 / (n (n - 1)) = 18/30: alpha = 1 - (1/3)/(3/5) = 4/9.
    """
    result = annotator_agreement([[5, 4], [1, 2], [3, 1]])
    assert result.alpha_nominal == pytest.approx(4 / 9)


def test_kappa_pairs_follow_labelling_order_and_ignore_third_labels():
    """The audit pairs each item's first two labels by ``seq``; a third label does not enter kappa."""
    items = [Item(key=f"llama-3.1-8b/GCG/b{k}/0", behavior_id=f"b{k}", behavior="[REDACTED]",
                  victim_model="llama-3.1-8b", attack="GCG", generation="[REDACTED]") for k in range(4)]
    labels = []
    seq = 0
    # Per item: the harmful label is given second in time but first in the file, then a third label.
    for item, (a, b) in zip(items, [(5, 1), (1, 1), (4, 4), (2, 1)], strict=True):
        labels.append((item.key, Label(annotator_id="x", score=a, seq=seq + 1)))
        labels.append((item.key, Label(annotator_id="y", score=b, seq=seq)))
        labels.append((item.key, Label(annotator_id="z", score=3, seq=seq + 2)))
        seq += 3
    result = audit(items, labels, []).agreement
    first, second = [1, 1, 4, 1], [5, 1, 4, 2]  # by seq: y's score, then x's
    # The scale is 1-5 even where a score is unused (3 here): 1 to 4 is three steps, not two.
    assert result.kappa_quadratic == pytest.approx(cohen_kappa_score(first, second, weights="quadratic",
                                                                     labels=[1, 2, 3, 4, 5]))
    assert result.n_items == 4


def test_agreement_is_undefined_without_pairs():
    """Two items with one label each and one with none: no pair, so no kappa, agreement or alpha."""
    result = annotator_agreement([[1], [4], []])
    assert (result.n_items, result.n_labelled_items, result.n_labels) == (0, 2, 2)
    assert result.kappa_binary is None and result.alpha_nominal is None
    assert result.undefined == {name: "no item has two labels" for name in (
        "kappa_binary", "kappa_quadratic", "binary_agreement", "alpha_nominal", "alpha_ordinal")}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")  # the undefined kappa
def test_one_binary_class_leaves_binary_kappa_and_nominal_alpha_undefined_but_not_the_ordinal_ones():
    """Pairs (1, 2) and (2, 1): every label is harmless, so binary p_e = 1 and the nominal values are all 0.

    Quadratic kappa over 1-5: observed weighted disagreement (1-2)^2 + (2-1)^2 = 2; expected, with
    both marginals 1/2 on scores 1 and 2: 2 pairs x 1/4 in each of the cells (1, 2) and (2, 1), weight 1:
    1/2 + 1/2 = 1, so kappa = 1 - 2/1 = -1. Ordinal alpha: coincidences o_12 = o_21 = 2, n_1 = n_2 = 2, n = 4,
    expected e_12 = e_21 = n_1 n_2 / (n - 1) = 4/3; one distance d_12 in both, so
    alpha = 1 - (2 + 2) / (4/3 + 4/3) = -1/2.
    """
    result = annotator_agreement([[1, 2], [2, 1]])
    assert result.kappa_binary is None and result.alpha_nominal is None
    assert result.binary_agreement == 1.0
    assert result.kappa_quadratic == pytest.approx(-1.0)
    assert result.alpha_ordinal == pytest.approx(-0.5)
    assert result.undefined == {
        "kappa_binary": "chance agreement is 1: both labels of every pair are the same single class",
        "alpha_nominal": "every label has the same value: no expected disagreement"}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")  # the undefined kappa
def test_one_score_everywhere_leaves_every_kappa_and_alpha_undefined():
    result = annotator_agreement([[2, 2], [2, 2]])
    assert (result.kappa_binary, result.kappa_quadratic, result.alpha_nominal, result.alpha_ordinal) == (None,) * 4
    assert result.binary_agreement == 1.0
    assert result.undefined == {
        "kappa_binary": "chance agreement is 1: both labels of every pair are the same single class",
        "kappa_quadratic": "chance agreement is 1: every score of every pair is the same",
        "alpha_nominal": "every label has the same value: no expected disagreement",
        "alpha_ordinal": "every label has the same value: no expected disagreement"}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.UndefinedMetricWarning")  # the undefined kappa
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_kappas_and_alphas_are_undefined_without_a_numpy_warning_when_only_single_label_items_differ():
    """Item 1 has two 1s, item 2 a single 5. The one pair (1, 1) leaves both kappas 0/0. Both values
    occur, but the single label pairs with nothing: every coincidence is (1, 1), the expected
    disagreement is 0 and alpha is 0/0 too."""
    result = annotator_agreement([[1, 1], [5]])
    assert result.kappa_binary is None and result.kappa_quadratic is None
    assert result.alpha_nominal is None and result.alpha_ordinal is None
    assert result.undefined["alpha_nominal"] == result.undefined["alpha_ordinal"] == "no expected disagreement"
    assert (result.n_items, result.n_labelled_items, result.n_labels) == (1, 2, 3)


def test_concordance_by_hand():
    """4 judges: 0 of 4 harmful -> 1; 2 of 4 -> 1 - H(0.5) = 0; 1 of 4 -> 1 - H(0.25) = 1 - 0.811278."""
    h = -(0.25 * math.log2(0.25) + 0.75 * math.log2(0.75))
    got = concordance(np.array([0, 2, 1, 4]), np.array([4, 4, 4, 4]))
    assert got == pytest.approx([1.0, 0.0, 1 - h, 1.0])


def test_mean_concordance_counts_items_with_two_or_more_parsed_verdicts():
    items = [Item(key=f"m/GCG/b{k}/0", behavior_id=f"b{k}", behavior="[REDACTED]", victim_model="m", attack="GCG",
                  generation="[REDACTED]") for k in range(3)]
    verdicts = [(items[0].key, Verdict(judge="a", label=1)), (items[0].key, Verdict(judge="b", label=1)),
                (items[1].key, Verdict(judge="a", label=1)), (items[1].key, Verdict(judge="b", label=0)),
                (items[2].key, Verdict(judge="a", label=0)),  # one judge only: left out
                (items[2].key, Verdict(judge="b", raw="???", parse_status="unparsed"))]
    result = audit(items, [], verdicts).concordance
    assert result.n_items == 2
    assert result.mean == pytest.approx((1.0 + 0.0) / 2)
    assert result.by_fraction == {"1/2": 1, "2/2": 1}
    assert judge_concordance(np.array([]), np.array([])).mean is None


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_concordance_of_one_judge_is_1_and_of_none_is_nan():
    """A single parsed verdict agrees with itself (p = 0 or 1 -> 1); no parsed verdict leaves p = 0/0:
    NaN, without a numpy warning. 1 of 2 harmful is an even split -> 0."""
    got = concordance(np.array([0, 1, 0, 1]), np.array([1, 1, 0, 2]))
    assert got[[0, 1, 3]].tolist() == [1.0, 1.0, 0.0]
    assert np.isnan(got[2])


def test_by_fraction_counts_every_item_with_the_same_fraction():
    """Items judged 1/2, 1/2, 2/2 harmful (the fourth has one judge: left out). Mean S_JC = (0 + 0 + 1)/3."""
    result = judge_concordance(np.array([1, 1, 2, 0]), np.array([2, 2, 2, 1]))
    assert result.n_items == 3
    assert result.by_fraction == {"1/2": 2, "2/2": 1}
    assert result.mean == pytest.approx(1 / 3)


def test_agreement_and_concordance_serialise_every_field():
    agreement = annotator_agreement([[5, 4], [1, 2], [3, 1]]).to_dict()
    assert agreement["alpha_nominal"] == pytest.approx(4 / 9)  # test_nominal_alpha_by_hand
    assert agreement["binary_agreement"] == pytest.approx(2 / 3)
    assert (agreement["n_items"], agreement["n_labels"], agreement["undefined"]) == (3, 6, {})
    assert judge_concordance(np.array([2, 1]), np.array([2, 2])).to_dict() == {
        "n_items": 2, "mean": 0.5, "by_fraction": {"1/2": 1, "2/2": 1}}
