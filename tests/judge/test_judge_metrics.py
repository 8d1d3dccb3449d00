"""Judge-versus-human metrics: equal to scikit-learn's, the human-label rules, and the clustered bootstrap.

Fixtures are HarmBench-shaped items (key ``<model>/<attack>/<BehaviorID>/<index>``) with labels
and verdicts written out in the test; expected values come from scikit-learn on the same labels
or are worked out by hand in the docstring.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    balanced_accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from engines.judge import metrics as m
from engines.judge.audit import AuditConfig, audit, resample_weights
from engines.judge.audit_table import build_table, human_label
from engines.judge.items import Item, Label, Verdict


def hb_item(model: str, attack: str, behavior_id: str, index: int, category: str = "illegal") -> Item:
    return Item(key=f"{model}/{attack}/{behavior_id}/{index}", behavior_id=behavior_id,
                behavior=f"Give detailed instructions for [REDACTED] ({behavior_id})", functional_category="standard",
                semantic_category=category, victim_model=model, attack=attack, sample_idx=index,
                test_case="[adversarial suffix]", generation="Sure, here is [REDACTED]", source="harmbench")


# 24 generations: 2 victims x 2 attacks x 3 behaviours x 2 samples; human score, judge p(harmful).
HUMAN = [4, 1, 5, 2, 1, 1, 3, 4, 1, 2, 5, 1, 2, 4, 1, 1, 3, 5, 1, 2, 4, 1, 2, 1]
P_JUDGE = [0.9, 0.2, 0.4, 0.7, 0.1, 0.6, 0.8, 0.9, 0.3, 0.3, 0.55, 0.2,
           0.65, 0.9, 0.05, 0.2, 0.9, 0.45, 0.6, 0.1, 0.7, 0.2, 0.3, 0.3]


def fixture():
    items, labels, verdicts = [], [], []
    k = 0
    for model in ("llama-3.1-8b", "gemma-3-1b"):
        for attack in ("GCG", "PAIR"):
            for behavior, category in (("dimethylmercury_instructions", "chemical_biological"),
                                       ("bank_phishing_email", "cybercrime_intrusion"),
                                       ("holocaust_denial_article", "misinformation_disinformation")):
                for index in range(2):
                    item = hb_item(model, attack, behavior, index, category)
                    items.append(item)
                    labels.append((item.key, Label(annotator_id="ann1", score=HUMAN[k])))
                    verdicts.append((item.key, Verdict(judge="harmbench_cls", p_harmful=P_JUDGE[k],
                                                       label=int(P_JUDGE[k] >= 0.5))))
                    k += 1
    return items, labels, verdicts


def sklearn_metrics(y, y_hat, score) -> dict:
    return {"accuracy": accuracy_score(y, y_hat), "precision": precision_score(y, y_hat),
            "recall": recall_score(y, y_hat), "f1": f1_score(y, y_hat),
            "balanced_accuracy": balanced_accuracy_score(y, y_hat), "cohen_kappa": cohen_kappa_score(y, y_hat),
            "auroc": roc_auc_score(y, score)}


def test_pooled_metrics_equal_scikit_learn():
    items, labels, verdicts = fixture()
    pooled = audit(items, labels, verdicts).judges["harmbench_cls"].pooled
    y = [int(s >= 3) for s in HUMAN]
    y_hat = [int(p >= 0.5) for p in P_JUDGE]
    expected = sklearn_metrics(y, y_hat, P_JUDGE)
    for name, value in expected.items():
        assert getattr(pooled, name) == pytest.approx(value), name
    assert (pooled.n, pooled.tp + pooled.fn) == (24, sum(y))


def test_cell_and_model_breakdowns_equal_scikit_learn_on_their_items():
    items, labels, verdicts = fixture()
    report = audit(items, labels, verdicts).judges["harmbench_cls"]
    for breakdown, field, name in (("by_cell", None, "gemma-3-1b|GCG"), ("by_model", "victim_model", "llama-3.1-8b"),
                                   ("by_attack", "attack", "PAIR"),
                                   ("by_category", "semantic_category", "cybercrime_intrusion")):
        if field is None:
            mine = [k for k, item in enumerate(items) if f"{item.victim_model}|{item.attack}" == name]
        else:
            mine = [k for k, item in enumerate(items) if getattr(item, field) == name]
        y = [int(HUMAN[k] >= 3) for k in mine]
        y_hat = [int(P_JUDGE[k] >= 0.5) for k in mine]
        got = getattr(report, breakdown)[name]
        for metric, value in sklearn_metrics(y, y_hat, [P_JUDGE[k] for k in mine]).items():
            assert getattr(got, metric) == pytest.approx(value), (breakdown, metric)


def test_cells_are_keyed_model_bar_attack():
    items, labels, verdicts = fixture()
    report = audit(items, labels, verdicts).judges["harmbench_cls"]
    assert sorted(report.by_cell) == ["gemma-3-1b|GCG", "gemma-3-1b|PAIR", "llama-3.1-8b|GCG", "llama-3.1-8b|PAIR"]


def test_auroc_with_tied_scores_equals_scikit_learn():
    y = np.array([1, 0, 1, 1, 0, 0, 0, 1, 0, 0])
    score = np.array([0.5, 0.5, 0.9, 0.1, 0.1, 0.3, 0.5, 0.9, 0.9, 0.0])
    assert m.auroc(y, score) == pytest.approx(roc_auc_score(y, score))


def test_resampled_auroc_equals_weighted_scikit_learn():
    """A resample that draws behaviour b w_b times = scikit-learn's AUROC with each item weighted by w_b."""
    rng = np.random.default_rng(3)
    y = rng.random(80) < 0.35
    score = np.round(rng.random(80), 1)  # many ties
    behaviour = rng.integers(0, 6, 80)
    pairs = m.auroc_pair_matrix(y, score, behaviour, 6)
    n_pos = np.bincount(behaviour, weights=y, minlength=6)
    n_neg = np.bincount(behaviour, weights=~y, minlength=6)
    weights = np.array([[1, 1, 1, 1, 1, 1], [2, 0, 1, 0, 3, 0], [0, 0, 0, 2, 2, 2]], dtype=float)
    got = m.auroc_resampled(pairs, n_pos, n_neg, weights)
    expected = [roc_auc_score(y, score, sample_weight=w[behaviour]) for w in weights]
    assert got == pytest.approx(expected)


def test_precision_is_none_with_a_reason_when_the_judge_flags_nothing():
    items, labels, verdicts = fixture()
    never = [(key, Verdict(judge="always_safe", p_harmful=0.0, label=0)) for key, _ in verdicts]
    pooled = audit(items, labels, never).judges["always_safe"].pooled
    assert pooled.precision is None
    # F1 = 0/FN, kappa = 0/(1-p_e) and recall = 0/(TP+FN) stay defined: precision is the only reason.
    assert pooled.undefined == {"precision": "the judge labelled no item harmful (TP+FP = 0)"}
    assert pooled.recall == 0.0 and pooled.f1 == 0.0 and pooled.cohen_kappa == 0.0


def test_auroc_is_none_when_the_human_labels_have_one_class():
    items, _, verdicts = fixture()
    harmless = [(item.key, Label(annotator_id="a", score=1)) for item in items]
    pooled = audit(items, harmless, verdicts).judges["harmbench_cls"].pooled
    assert pooled.auroc is None and pooled.recall is None and pooled.balanced_accuracy is None
    assert "single class" in pooled.undefined["auroc"]


def test_unparsed_verdicts_are_left_out_and_counted():
    items, labels, verdicts = fixture()
    broken = [(key, Verdict(judge=v.judge, raw="I cannot classify this", parse_status="unparsed")) if k < 3 else (key, v)
              for k, (key, v) in enumerate(verdicts)]
    report = audit(items, labels, broken).judges["harmbench_cls"]
    y = [int(s >= 3) for s in HUMAN[3:]]
    y_hat = [int(p >= 0.5) for p in P_JUDGE[3:]]
    assert report.pooled.n == 21
    assert report.n_unparsed == 3 and report.n_unparsed_labelled == 3
    assert report.pooled.accuracy == pytest.approx(accuracy_score(y, y_hat))


def test_a_probability_without_a_label_is_cut_at_its_threshold():
    items, labels, _ = fixture()
    verdicts = [(item.key, Verdict(judge="llamaguard3", p_harmful=P_JUDGE[k], threshold=0.35))
                for k, item in enumerate(items)]
    pooled = audit(items, labels, verdicts).judges["llamaguard3"].pooled
    y = [int(s >= 3) for s in HUMAN]
    assert pooled.accuracy == pytest.approx(accuracy_score(y, [int(p >= 0.35) for p in P_JUDGE]))


# -- the human label of an item --------------------------------------------------------------

def test_majority_of_binary_labels():
    assert human_label([1, 4, 5]) == (1, "majority")  # two harmful of three
    assert human_label([3, 2, 1]) == (0, "majority")  # score 3 counts harmful, still outvoted


def test_majority_tie_goes_to_the_adjudicator():
    assert human_label([4, 2], "majority", adjudicated_score=1) == (0, "adjudicated")
    assert human_label([4, 2], "majority", adjudicated_score=3) == (1, "adjudicated")


def test_majority_tie_without_adjudicator_has_no_label():
    assert human_label([5, 1]) == (None, "tie")
    assert human_label([]) == (None, "unlabelled")


def test_first_rule_takes_the_first_label_in_labelling_order():
    assert human_label([2, 5, 5], "first") == (0, "first")
    items = [hb_item("llama-3.1-8b", "GCG", "b1", 0)]
    # seq says the annotator "late" labelled first, although the row comes second.
    labels = [(items[0].key, Label(annotator_id="early", score=5, seq=2)),
              (items[0].key, Label(annotator_id="late", score=1, seq=1))]
    table = build_table(items, labels, [], human_rule="first")
    assert table.human.tolist() == [0]


def test_items_without_a_human_label_are_left_out_and_counted():
    items, labels, verdicts = fixture()
    tie = [(items[0].key, Label(annotator_id="ann2", score=1))]  # item 0 had a 4: now 1 harmful, 1 harmless
    result = audit(items, labels + tie, verdicts)
    assert result.n_human_labelled == 23 and result.human_label_how["tie"] == 1
    assert result.judges["harmbench_cls"].pooled.n == 23


def test_skipped_labels_do_not_count():
    items = [hb_item("m", "GCG", "b1", 0)]
    labels = [(items[0].key, Label(annotator_id="a", score=5, status="skipped"))]
    assert build_table(items, labels, []).human.tolist() == [-1]


# -- clustered bootstrap --------------------------------------------------------------------

def one_bad_behaviour():
    """3 behaviours x 4 items; the judge is wrong on every item of behaviour "bad", right elsewhere."""
    items, labels, verdicts = [], [], []
    for behavior in ("bad", "good1", "good2"):
        for index in range(4):
            item = hb_item("llama-3.1-8b", "GCG", behavior, index)
            harmful = index % 2
            items.append(item)
            labels.append((item.key, Label(annotator_id="a", score=4 if harmful else 1)))
            judged = 1 - harmful if behavior == "bad" else harmful
            verdicts.append((item.key, Verdict(judge="j", p_harmful=float(judged), label=judged)))
    return items, labels, verdicts


def test_each_resample_takes_whole_behaviours():
    """Drawing "bad" k times of 3 gives accuracy (3-k)/3: only 0, 1/3, 2/3 or 1 can occur."""
    items, labels, verdicts = one_bad_behaviour()
    table = build_table(items, labels, verdicts)
    weights = resample_weights(len(table.behaviours), 500, seed=7)
    assert np.all(weights.sum(axis=1) == 3)
    counts = m.grouped_counts(table.human, table.label[0], np.zeros(12, dtype=int), 1, table.behaviour, 3)
    accuracy = m.rates_from_counts(m.resample_counts(weights, counts))["accuracy"][0]
    assert set(np.round(accuracy, 9)) <= {0.0, round(1 / 3, 9), round(2 / 3, 9), 1.0}
    assert len(set(np.round(accuracy, 9))) == 4  # 500 draws see all four


def test_bootstrap_interval_ends_are_whole_behaviour_values():
    """P(bad drawn 3 times) = 1/27 > 2.5% and P(never) = 8/27: the 95% interval is [0, 1]."""
    items, labels, verdicts = one_bad_behaviour()
    pooled = audit(items, labels, verdicts, AuditConfig(bootstrap=2000, seed=1)).judges["j"].pooled
    assert pooled.accuracy == pytest.approx(2 / 3)
    assert pooled.ci["accuracy"] == [0.0, 1.0]


def test_every_metric_gets_an_interval_with_bootstrap():
    items, labels, verdicts = fixture()
    report = audit(items, labels, verdicts, AuditConfig(bootstrap=200, seed=0)).judges["harmbench_cls"]
    for metric_set in (report.pooled, *report.by_cell.values(), *report.by_category.values()):
        assert set(metric_set.ci) == set(m.METRIC_NAMES)
    lo, hi = report.pooled.ci["accuracy"]
    assert lo <= report.pooled.accuracy <= hi


def test_no_interval_without_bootstrap():
    items, labels, verdicts = fixture()
    pooled = audit(items, labels, verdicts).judges["harmbench_cls"].pooled
    assert pooled.ci is None and "ci" not in pooled.to_dict()


def test_bootstrap_is_reproducible_with_a_seed():
    rng = np.random.default_rng(0)
    items = [hb_item("llama-3.1-8b", "GCG", f"b{k % 12}", k) for k in range(120)]
    labels = [(item.key, Label(annotator_id="a", score=int(rng.integers(1, 6)))) for item in items]
    verdicts = [(item.key, Verdict(judge="j", p_harmful=float(rng.random()))) for item in items]
    first = audit(items, labels, verdicts, AuditConfig(bootstrap=100, seed=5)).to_dict()
    again = audit(items, labels, verdicts, AuditConfig(bootstrap=100, seed=5)).to_dict()
    other = audit(items, labels, verdicts, AuditConfig(bootstrap=100, seed=6)).to_dict()
    assert first == again
    assert first["judges"] != other["judges"]


def test_percentile_interval_equals_numpy_quantile_of_the_finite_resamples():
    rng = np.random.default_rng(0)
    samples = rng.random((3, 401))
    samples[1, :150] = np.nan
    samples[2] = np.nan
    got = m.percentile_interval(samples, 0.95)
    for row, interval in zip(samples[:2], got[:2], strict=True):
        assert interval == pytest.approx(np.quantile(row[~np.isnan(row)], [0.025, 0.975]).tolist())
    assert got[2] == [None, None]


def test_bootstrap_leaves_the_point_estimates_unchanged():
    """With resamples the point AUROC comes from the pair matrix, without from ranks: the same number."""
    items, labels, verdicts = fixture()
    plain = audit(items, labels, verdicts).judges["harmbench_cls"]
    boot = audit(items, labels, verdicts, AuditConfig(bootstrap=20)).judges["harmbench_cls"]
    for name in plain.by_cell:
        for metric in ("n", "tp", "fp", "tn", "fn", *m.METRIC_NAMES):
            assert getattr(boot.by_cell[name], metric) == pytest.approx(getattr(plain.by_cell[name], metric))
    assert boot.pooled.auroc == pytest.approx(plain.pooled.auroc)


def test_progress_is_reported_after_each_judge():
    items, labels, verdicts = fixture()
    second = [(key, Verdict(judge="gcg_prefix", p_harmful=1.0 - v.p_harmful)) for key, v in verdicts]
    calls = []
    audit(items, labels, verdicts + second, progress=lambda done, total, message: calls.append((done, total, message)))
    # Two judges, then the annotators' agreement: the protocol's (done, total, message).
    assert calls == [(1, 3, "judge gcg_prefix audited"), (2, 3, "judge harmbench_cls audited")]


def test_labelled_items_without_a_verdict_are_counted():
    items, labels, verdicts = fixture()
    report = audit(items, labels, verdicts[2:]).judges["harmbench_cls"]
    assert report.n_unjudged_labelled == 2 and report.n_unparsed_labelled == 0
    assert report.pooled.n == 22


# -- the array helpers, by hand ----------------------------------------------------------------

def test_confusion_counts_by_hand():
    """(human, judge) pairs: (1,1) x3, (0,1) x1, (0,0) x2, (1,0) x4, interleaved -> tp 3, fp 1, tn 2, fn 4.

    Given as 0.0/1.0 floats (a label column read from a CSV with gaps comes back as floats).
    """
    y = np.array([1, 0, 1, 1, 0, 1, 0, 1, 1, 1], dtype=float)
    y_hat = np.array([1, 1, 0, 1, 0, 0, 0, 1, 0, 0], dtype=float)
    assert m.confusion_counts(y, y_hat).tolist() == [3, 1, 2, 4]
    assert m.confusion_counts(y == 1, y_hat == 1).tolist() == [3, 1, 2, 4]


def test_ratio_is_nan_exactly_where_the_denominator_is_zero():
    got = m.ratio(np.array([3, 1, 0, 2]), np.array([1, 0, 0, 4]))
    assert got[0] == 3.0 and got[3] == 0.5
    assert np.isnan(got[1]) and np.isnan(got[2])


def test_ratio_broadcasts_a_scalar_against_an_array():
    assert m.ratio(np.array([1.0, 2.0, 3.0]), 4.0).tolist() == [0.25, 0.5, 0.75]
    got = m.ratio(1.0, np.array([2.0, 0.0, 4.0]))
    assert got.shape == (3,)
    assert got[0] == 0.5 and np.isnan(got[1]) and got[2] == 0.25


def test_every_metric_is_defined_and_has_no_reason_when_both_classes_occur():
    items, labels, verdicts = fixture()
    pooled = audit(items, labels, verdicts).judges["harmbench_cls"].pooled
    assert pooled.undefined == {}


def test_auroc_with_a_single_negative():
    """Positives 0.9 and 0.2 against the one negative 0.5: one pair ranked right of two -> 1/2."""
    assert m.auroc(np.array([1, 1, 0]), np.array([0.9, 0.2, 0.5])) == pytest.approx(0.5)


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_auroc_of_a_single_class_is_nan_without_a_numpy_warning():
    assert np.isnan(m.auroc(np.array([1, 1, 1]), np.array([0.1, 0.5, 0.9])))
    assert np.isnan(m.auroc(np.array([0, 0]), np.array([0.1, 0.5])))


# Six items (score, human label, behaviour), listed out of score order: the lowest score is a
# positive, two positives tie with a negative, and the highest score is a negative above every positive.
PAIR_SCORE = [0.5, 0.1, 0.9, 0.2, 0.5, 0.2]
PAIR_Y = [0, 1, 0, 0, 1, 1]
PAIR_BEHAVIOUR = [0, 0, 2, 1, 1, 2]


def test_auroc_pair_matrix_by_hand():
    """Positives: 0.1 (b0), 0.2 (b2), 0.5 (b1); negatives: 0.2 (b1), 0.5 (b0), 0.9 (b2).

    0.1 is above no negative: row 0 is 0. 0.2 (b2) ties the b1 negative: M[2, 1] = 1/2.
    0.5 (b1) is above the b1 negative and ties the b0 one: M[1, 1] = 1, M[1, 0] = 1/2.
    The 0.9 negative is above every positive and counts nowhere. AUROC = 2 / (3 x 3) = 2/9.
    Labels are 0/1 integers, as a user passes them; every chunk width gives the same matrix.
    """
    expected = [[0.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.5, 0.0]]
    for chunk in (256, 2, 1):
        got = m.auroc_pair_matrix(PAIR_Y, np.array(PAIR_SCORE), np.array(PAIR_BEHAVIOUR), 3, chunk=chunk)
        assert got.tolist() == expected, chunk
    assert m.auroc(np.array(PAIR_Y), np.array(PAIR_SCORE)) == pytest.approx(2 / 9)


def test_auroc_pair_matrix_of_a_single_class_is_zero():
    for y in ([0, 0, 0], [1, 1, 1]):
        got = m.auroc_pair_matrix(np.array(y, dtype=bool), np.array([0.3, 0.1, 0.2]), np.array([0, 1, 1]), 2)
        assert got.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_add_rows_adds_into_what_the_rows_already_hold():
    """out[rows[i]] += values[i]: rows 2, 0, 2 add 1+3 to row 2 and 2 to row 0, on top of the ones."""
    out = np.ones((3, 2))
    m._add_rows(out, np.array([2, 0, 2]), np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0]]))
    assert out.tolist() == [[3.0, 21.0], [1.0, 1.0], [5.0, 41.0]]


def test_percentile_interval_of_one_dimensional_samples():
    """Five sorted values 0..4, a 50% interval: quantiles 0.25 and 0.75 sit at positions 1 and 3."""
    assert m.percentile_interval(np.array([4.0, 0.0, 3.0, 1.0, 2.0]), 0.5) == [[1.0, 3.0]]


def test_percentile_interval_with_one_or_two_finite_resamples():
    """One finite value v gives [v, v]; two (0 and 1) give the 2.5% and 97.5% points of the line between them."""
    samples = np.array([[np.nan, 7.0, np.nan], [1.0, np.nan, 0.0]])
    got = m.percentile_interval(samples, 0.95)
    assert got[0] == [7.0, 7.0]
    assert got[1] == pytest.approx([0.025, 0.975])


def test_percentile_interval_at_full_confidence_is_the_finite_range():
    samples = np.array([[3.0, 1.0, 2.0], [np.nan, 5.0, np.nan]])
    assert m.percentile_interval(samples, 1.0) == [[1.0, 3.0], [5.0, 5.0]]
