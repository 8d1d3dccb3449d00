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
    result = annotator_agreement([[1], [4], []])
    assert result.kappa_binary is None and result.alpha_nominal is None
    assert result.undefined["kappa_binary"] == "no item has two labels"


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
