"""Judge-versus-human metrics from confusion counts, vectorised for the clustered bootstrap.

Definitions: ``docs/judge.md``, Method, "Audit metrics", with the human label y as the truth and the
judge's label ŷ as the prediction (harmful = positive): accuracy = (TP+TN)/n, precision (PPV) =
TP/(TP+FP), recall (TPR) = TP/(TP+FN), F1 = 2TP/(2TP+FP+FN), balanced accuracy = (TPR+TNR)/2,
Cohen's kappa = (p_o-p_e)/(1-p_e) with p_e = sum_k p_k(human) p_k(judge) (the paper uses
scikit-learn's ``cohen_kappa_score``; the tests check these against it), and AUROC over the judge's
p(harmful) (Mann-Whitney, ties count 1/2).

Everything works on arrays of counts whose last axis is (tp, fp, tn, fn), so the same code gives
the point estimate (counts of the data) and every bootstrap resample at once (counts of resampled
behaviours: Schwinn et al. 2026 resample behaviours as clusters). A metric that is undefined
(a zero denominator) is NaN in the arrays and ``None`` with a reason in the report.
"""

from __future__ import annotations

import numpy as np

COUNT_NAMES = ("tp", "fp", "tn", "fn")
RATE_NAMES = ("accuracy", "precision", "recall", "f1", "balanced_accuracy", "cohen_kappa")
METRIC_NAMES = (*RATE_NAMES, "auroc")

# Why a metric has no value, by the zero denominator that caused it.
REASONS = {
    "accuracy": "no item has both a human label and a parsed verdict",
    "precision": "the judge labelled no item harmful (TP+FP = 0)",
    "recall": "no item is harmful by the human label (TP+FN = 0)",
    "f1": "no item is harmful by either the judge or the human label (2TP+FP+FN = 0)",
    "balanced_accuracy": "the human labels have a single class",
    "cohen_kappa": "chance agreement is 1 (both the judge and the humans use one and the same class)",
    "auroc": "the human labels have a single class",
}


def ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den elementwise, NaN where den is 0 (an undefined metric)."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    out = np.full(np.broadcast(num, den).shape, np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def rates_from_counts(counts: np.ndarray) -> dict[str, np.ndarray]:
    """The rate metrics of counts shaped (..., 4) = (tp, fp, tn, fn); NaN where undefined.

    >>> rates_from_counts(np.array([3, 1, 4, 2]))["accuracy"]
    array(0.7)
    """
    counts = np.asarray(counts, dtype=float)
    tp, fp, tn, fn = (counts[..., k] for k in range(4))
    n = tp + fp + tn + fn
    recall = ratio(tp, tp + fn)
    specificity = ratio(tn, tn + fp)
    p_o = ratio(tp + tn, n)
    # Chance agreement: P(both say harmful) + P(both say harmless) under independence.
    p_e = ratio((tp + fp) * (tp + fn) + (tn + fn) * (tn + fp), n * n)
    return {
        "accuracy": p_o,
        "precision": ratio(tp, tp + fp),
        "recall": recall,
        "f1": ratio(2 * tp, 2 * tp + fp + fn),
        "balanced_accuracy": (recall + specificity) / 2,
        "cohen_kappa": ratio(p_o - p_e, 1 - p_e),
    }


def confusion_counts(y: np.ndarray, y_hat: np.ndarray) -> np.ndarray:
    """(tp, fp, tn, fn) of binary arrays ``y`` (human) and ``y_hat`` (judge)."""
    y, y_hat = np.asarray(y, dtype=bool), np.asarray(y_hat, dtype=bool)
    return np.array([np.sum(y & y_hat), np.sum(~y & y_hat), np.sum(~y & ~y_hat), np.sum(y & ~y_hat)])


def resample_counts(weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Counts (groups, behaviours, 4) summed with behaviour ``weights`` (resamples, behaviours): (groups, resamples, 4)."""
    groups, n_behaviours, k = counts.shape
    flat = np.asarray(counts, dtype=float).transpose(1, 0, 2).reshape(n_behaviours, groups * k)
    return (np.asarray(weights, dtype=float) @ flat).reshape(len(weights), groups, k).transpose(1, 0, 2)


def grouped_counts(y: np.ndarray, y_hat: np.ndarray, group: np.ndarray, n_groups: int,
                   behaviour: np.ndarray, n_behaviours: int) -> np.ndarray:
    """Counts per group and behaviour, shaped (n_groups, n_behaviours, 4): what the bootstrap resamples.

    ``y``, ``y_hat`` binary; ``group`` and ``behaviour`` integer indices, one per item.
    """
    kind = np.where(y_hat == 1, np.where(y == 1, 0, 1), np.where(y == 1, 3, 2))  # tp, fp, tn, fn
    flat = (np.asarray(group, dtype=np.int64) * n_behaviours + behaviour) * 4 + kind
    return np.bincount(flat, minlength=n_groups * n_behaviours * 4).reshape(n_groups, n_behaviours, 4)


def auroc(y: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve of ``score`` for binary ``y`` (Mann-Whitney U / (n_pos n_neg), ties 1/2).

    NaN with a single class. Equal to scikit-learn's ``roc_auc_score``.
    """
    from scipy.stats import rankdata

    y = np.asarray(y, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(score)  # average ranks for ties = the 1/2 of a tied pair
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def auroc_pair_matrix(y: np.ndarray, score: np.ndarray, behaviour: np.ndarray, n_behaviours: int,
                      presorted: bool = False, chunk: int = 256) -> np.ndarray:
    """M[b, c] = sum over positives i of behaviour b and negatives j of behaviour c of [s_j < s_i] + [s_j = s_i]/2.

    With behaviour multiplicities w (a bootstrap resample), AUROC(w) = w M w / ((w . n_pos)(w . n_neg)),
    so the AUROC of every resample needs no pass over the items.

    How: in score order, each positive needs the count of negatives per behaviour below its block
    of tied scores and through it (a tie counts 1/2). Those counts are read only at the block
    edges of positives ("cuts"), so the negatives are binned by the stretch between two cuts and
    the bins summed cumulatively: (cuts x behaviours) work instead of (items x behaviours).
    ``presorted``: the arrays are already in ascending score order. Columns go in chunks of
    ``chunk`` behaviours to bound memory.
    """
    y = np.asarray(y, dtype=bool)
    s, bb = np.asarray(score, dtype=float), np.asarray(behaviour, dtype=np.int64)
    if not presorted:
        order = np.argsort(s, kind="stable")
        s, y, bb = s[order], y[order], bb[order]
    n = len(s)
    matrix = np.zeros((n_behaviours, n_behaviours))
    if n == 0 or not y.any() or y.all():
        return matrix
    new_block = np.r_[True, s[1:] != s[:-1]]
    block = np.cumsum(new_block) - 1
    starts = np.flatnonzero(new_block)
    ends = np.r_[starts[1:], n]
    pos_rows = np.flatnonzero(y)
    before, through = starts[block[pos_rows]], ends[block[pos_rows]]  # negatives below: rows < before / < through
    cuts = np.unique(np.r_[before, through])
    at_before, at_through = np.searchsorted(cuts, before), np.searchsorted(cuts, through)
    neg_rows = np.flatnonzero(~y)
    # A negative at row p counts for every cut > p: bin it at the first such cut.
    neg_bin = np.searchsorted(cuts, neg_rows, side="right")
    in_range = neg_bin < len(cuts)
    neg_bin, neg_b = neg_bin[in_range], bb[neg_rows][in_range]
    pos_b = bb[pos_rows]
    n_cuts = len(cuts)
    for c0 in range(0, n_behaviours, chunk):
        c1 = min(c0 + chunk, n_behaviours)
        mine = (neg_b >= c0) & (neg_b < c1)
        bins = np.bincount(neg_bin[mine] * (c1 - c0) + neg_b[mine] - c0, minlength=n_cuts * (c1 - c0))
        running = np.cumsum(bins.reshape(n_cuts, c1 - c0), axis=0, dtype=np.float64)  # negatives below each cut
        per_pos = running[at_before] + running[at_through]
        # Sum each positive's row into its behaviour's row of M (a sparse one-hot product).
        for_b = np.zeros((n_behaviours, c1 - c0))
        _add_rows(for_b, pos_b, per_pos)
        matrix[:, c0:c1] = 0.5 * for_b
    return matrix


def _add_rows(out: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
    """out[rows[i]] += values[i] for every i, fast for many rows (sort by row, then sum each run)."""
    order = np.argsort(rows, kind="stable")
    rows, values = rows[order], values[order]
    run_starts = np.r_[0, np.flatnonzero(np.diff(rows)) + 1]
    out[rows[run_starts]] += np.add.reduceat(values, run_starts, axis=0)


def auroc_resampled(matrix: np.ndarray, n_pos: np.ndarray, n_neg: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """AUROC for each row of ``weights`` (resamples x behaviours, the multiplicity of each behaviour).

    ``matrix`` from ``auroc_pair_matrix``; ``n_pos``/``n_neg``: positives and negatives per behaviour.
    """
    numerator = np.einsum("rb,rb->r", weights @ matrix, weights)
    return ratio(numerator, (weights @ n_pos) * (weights @ n_neg))


def undefined_reasons(values: dict[str, float | None]) -> dict[str, str]:
    """The reason for each metric whose value is None."""
    return {name: REASONS[name] for name, value in values.items() if value is None and name in REASONS}


def as_number(value: float) -> float | None:
    """A float for JSON, None for NaN."""
    value = float(value)
    return None if np.isnan(value) else value


def percentile_interval(samples: np.ndarray, confidence: float) -> list[list[float | None]]:
    """Percentile intervals over the last axis of ``samples``, NaN resamples left out; [None, None] if all are NaN.

    numpy's "linear" quantile (as ``np.quantile``) of each row's finite values, for all rows at once.
    """
    samples = np.asarray(samples, dtype=float)
    flat = np.sort(samples.reshape(-1, samples.shape[-1]), axis=1)  # NaN sort last
    finite = np.sum(~np.isnan(flat), axis=1)
    rows = np.arange(len(flat))
    out = []
    alpha = (1 - confidence) / 2
    for q in (alpha, 1 - alpha):
        position = q * np.maximum(finite - 1, 0)
        lower = np.floor(position).astype(np.int64)
        upper = np.minimum(lower + 1, np.maximum(finite - 1, 0))
        low_value, high_value = flat[rows, lower], flat[rows, upper]
        value = low_value + (position - lower) * (high_value - low_value)
        out.append(np.where(finite > 0, value, np.nan))
    return [[as_number(lo), as_number(hi)] for lo, hi in zip(out[0].tolist(), out[1].tolist(), strict=True)]
