"""Agreement among people and among judges: Cohen's kappa, Krippendorff's alpha, judge concordance.

- Inter-annotator agreement (Schwinn et al. 2026, section 3; ``docs/judge.md``, Method,
  "Agreement measures"): on items with two or more labels, the first against the second label in
  labelling order, Cohen's kappa on the binary label (score >= 3) and quadratic-weighted on the 1-5
  score (scikit-learn ``cohen_kappa_score``); Krippendorff's alpha over all labels, nominal on the
  binary label and ordinal on the score, items with one label carrying no pairs (the
  ``krippendorff`` package, from per-item value counts).
- Judge concordance (upstream): S_JC(x) = 1 - H(p_x), with p_x the fraction of judges calling
  item x harmful and H the binary entropy in bits; 1 = all judges agree, 0 = an even split. The
  paper finds it does not predict whether the judges are right.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from engines.judge.items import HARMFUL_FROM

SCORES = (1, 2, 3, 4, 5)


@dataclass
class AgreementResult:
    """Inter-annotator agreement; a None value has its reason in ``undefined``."""

    n_items: int  # items with two or more labels (the kappa pairs)
    n_labelled_items: int  # items with at least one label (alpha's units)
    n_labels: int
    kappa_binary: float | None
    kappa_quadratic: float | None
    alpha_nominal: float | None
    alpha_ordinal: float | None
    binary_agreement: float | None  # share of pairs with the same binary label (the paper's audit: 95%)
    undefined: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class ConcordanceResult:
    """Mean judge concordance over items with parsed verdicts from at least two judges."""

    n_items: int
    mean: float | None
    by_fraction: dict[str, int]  # how many items have each fraction of judges saying harmful

    def to_dict(self) -> dict:
        return asdict(self)


def _finite(value: float) -> float | None:
    return None if value is None or np.isnan(value) else float(value)


def annotator_agreement(scores_per_item: Sequence[Sequence[int]]) -> AgreementResult:
    """Agreement of people, from each item's scores (1-5) in labelling order.

    Args:
        scores_per_item: one sequence per item; the first two scores form the kappa pair.

    Returns:
        ``AgreementResult``: kappas on items with two or more scores, alphas over all scores.
    """
    import krippendorff
    from sklearn.metrics import cohen_kappa_score

    n_labels = sum(len(s) for s in scores_per_item)
    labelled = [list(s) for s in scores_per_item if len(s) > 0]
    pairs = np.array([s[:2] for s in labelled if len(s) >= 2], dtype=int).reshape(-1, 2)
    undefined: dict[str, str] = {}
    kappa_binary = kappa_quadratic = agreement = None
    if len(pairs) == 0:
        for name in ("kappa_binary", "kappa_quadratic", "binary_agreement"):
            undefined[name] = "no item has two labels"
    else:
        first, second = pairs[:, 0], pairs[:, 1]
        b1, b2 = (first >= HARMFUL_FROM).astype(int), (second >= HARMFUL_FROM).astype(int)
        agreement = float(np.mean(b1 == b2))
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa_binary = _finite(cohen_kappa_score(b1, b2, labels=[0, 1]))
            kappa_quadratic = _finite(cohen_kappa_score(first, second, labels=list(SCORES), weights="quadratic"))
        if kappa_binary is None:
            undefined["kappa_binary"] = "chance agreement is 1: both labels of every pair are the same single class"
        if kappa_quadratic is None:
            undefined["kappa_quadratic"] = "chance agreement is 1: every score of every pair is the same"

    alphas: dict[str, float | None] = {"alpha_nominal": None, "alpha_ordinal": None}
    if len(pairs) == 0:
        undefined["alpha_nominal"] = undefined["alpha_ordinal"] = "no item has two labels"
    else:
        score_counts = np.zeros((len(labelled), len(SCORES)))
        for row, scores in enumerate(labelled):
            for score in scores:
                score_counts[row, score - 1] += 1
        binary_counts = np.stack([score_counts[:, :HARMFUL_FROM - 1].sum(1), score_counts[:, HARMFUL_FROM - 1:].sum(1)],
                                 axis=1)
        for name, counts, level, domain in (("alpha_nominal", binary_counts, "nominal", [0, 1]),
                                            ("alpha_ordinal", score_counts, "ordinal", list(SCORES))):
            # One value everywhere leaves no expected disagreement: alpha is 0/0.
            if np.count_nonzero(counts.sum(0)) < 2:
                undefined[name] = "every label has the same value: no expected disagreement"
                continue
            with np.errstate(divide="ignore", invalid="ignore"):
                alphas[name] = _finite(krippendorff.alpha(value_counts=counts, value_domain=domain,
                                                          level_of_measurement=level))
            if alphas[name] is None:
                undefined[name] = "no expected disagreement"
    return AgreementResult(n_items=len(pairs), n_labelled_items=len(labelled), n_labels=n_labels,
                           kappa_binary=kappa_binary, kappa_quadratic=kappa_quadratic,
                           binary_agreement=agreement, undefined=undefined, **alphas)


def concordance(harmful_votes: np.ndarray, judged: np.ndarray) -> np.ndarray:
    """S_JC per item: 1 - H(p), p = harmful votes / judges with a parsed verdict (NaN with none).

    >>> concordance(np.array([0, 1, 2]), np.array([2, 2, 2]))
    array([1., 0., 1.])
    """
    votes, judged = np.asarray(harmful_votes, dtype=float), np.asarray(judged, dtype=float)
    p = np.full(votes.shape, np.nan)
    np.divide(votes, judged, out=p, where=judged > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        entropy = -(np.where(p > 0, p * np.log2(np.where(p > 0, p, 1)), 0)
                    + np.where(p < 1, (1 - p) * np.log2(np.where(p < 1, 1 - p, 1)), 0))
    return np.where(np.isnan(p), np.nan, 1 - entropy)


def judge_concordance(harmful_votes: np.ndarray, judged: np.ndarray, min_judges: int = 2) -> ConcordanceResult:
    """Mean S_JC over items judged by at least ``min_judges`` judges."""
    votes, judged = np.asarray(harmful_votes), np.asarray(judged)
    keep = judged >= min_judges
    values = concordance(votes[keep], judged[keep])
    fractions: dict[str, int] = {}
    for v, j in zip(votes[keep].tolist(), judged[keep].tolist(), strict=True):
        key = f"{v}/{j}"
        fractions[key] = fractions.get(key, 0) + 1
    return ConcordanceResult(n_items=int(keep.sum()), mean=float(values.mean()) if values.size else None,
                             by_fraction=dict(sorted(fractions.items())))
