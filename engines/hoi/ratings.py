"""Arena ratings from pairwise votes: online Elo, Bradley–Terry, bootstrap intervals, win fractions.

Reference: GenAI-Arena (Jiang et al. 2024), ``arena_elo/elo_rating/elo_analysis.py`` and
``clean_battle_data.py`` (``docs/hoi.md``, "Method: Ratings"). A vote says which of two
anonymous edits was better: ``winner`` is "model_a", "model_b", "tie" or "tie (bothbad)".

- Online Elo (upstream ``compute_elo``): in vote order, E_a = 1 / (1 + base ** ((R_b - R_a) / scale)),
  R_a += K (S_a - E_a), R_b += K (1 - S_a - E_b), with S_a = 1, 0 or 0.5 for either kind of tie;
  K = 4, scale = 400, base = 10, everyone starts at 1000.
- Bradley–Terry (upstream ``compute_elo_mle_with_tie``): P(a beats b) = 1 / (1 + base ** ((R_b - R_a) / scale)),
  fitted by maximum likelihood as a logistic regression without intercept on rows x = +log(base) at a,
  -log(base) at b; upstream duplicates every vote, so a win counts twice and a tie (either kind) once
  for each side. Ratings are scale * coef + initial, shifted so that their mean is ``initial``
  (upstream instead pins one named model: "llama-13b" to 800 in GenAI-Arena's copy, FastChat's later
  one "mixtral-8x7b-instruct-v0.1" to 1114; neither model is in an editing arena, and a pinned model
  would make the scale depend on who took part).
- Bootstrap (upstream ``get_bootstrap_result``): ratings over vote sets resampled with replacement,
  summarised by the median and the 2.5 and 97.5 percentiles; a model missing from a resample has no
  rating in that round (upstream's NaN). ``rate``'s leaderboard shows each model's bootstrap median
  with the 2.5 and 97.5 percentiles of the same rounds, for either method, as upstream's interval
  plot does (``visualize_bootstrap_scores``). Upstream's table instead puts the full-data
  Bradley–Terry fit beside the bootstrap interval; where the fit has no finite maximum (a model that
  never lost) the solver stops at a point the resamples' solves need not bracket, so that rating
  can lie outside its own interval. The full-data fit is kept as ``Ratings.fit``.
- Win fractions (upstream ``compute_pairwise_win_fraction``): among the battles of two models that
  were not ties, the share the row model won.

Votes cast after the two models' names were shown (``anony`` false) are left out, as upstream
leaves them out of its leaderboard ("a vote does not count if identity was revealed"), and counted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from engines.hoi.votes import Vote, VoteLog

METHODS = ("elo", "bt")


# FUNCTIONS: ratings


def _sorted(ratings: dict[str, float]) -> dict[str, float]:
    """Highest rating first, then by name."""
    return dict(sorted(ratings.items(), key=lambda kv: (-kv[1], kv[0])))


def elo(
    votes: Iterable[Vote], *, k: float = 4, scale: float = 400, base: float = 10, initial: float = 1000
) -> dict[str, float]:
    """Online Elo in the order of ``votes`` (upstream ``compute_elo``).

    Args:
        votes: the votes, oldest first (every vote given counts, whatever its ``anony``).
        k: the update step K.
        scale, base: a difference of ``scale`` points means odds of ``base`` to 1.
        initial: the rating of a model before its first battle.

    Returns:
        model -> rating, highest first.

    Examples::

        >>> elo([Vote(0, "i1", "x", "y", "model_a")])
        {'x': 1002.0, 'y': 998.0}
    """
    rating: dict[str, float] = {}
    for v in votes:
        ra, rb = rating.get(v.model_a, initial), rating.get(v.model_b, initial)
        ea = 1 / (1 + base ** ((rb - ra) / scale))
        eb = 1 / (1 + base ** ((ra - rb) / scale))
        sa = 1.0 if v.winner == "model_a" else 0.0 if v.winner == "model_b" else 0.5
        rating[v.model_a] = ra + k * (sa - ea)
        rating[v.model_b] = rb + k * (1 - sa - eb)
    return _sorted(rating)


@dataclass
class _BTDesign:
    """Upstream's logistic-regression rows, built once; resamples change only the row weights.

    Every pair of models that met, in name order (a vote of b against a is the mirror image of a vote
    of a against b, so which side a model was shown on cannot matter), has two rows, x = +log(base)
    at the first model and -log(base) at the second: "first won" (y = 1) and "second won" (y = 0).
    Upstream duplicates every vote and counts a tie as one win each way, so a vote weighs 2 on the
    winner's row, and a tie (either kind) 1 on each row. Votes are grouped by (pair, outcome), the unit
    of resampling.
    """

    models: list[str]
    x: np.ndarray  # (2P, M): the P pairs' "first won" rows, then their "second won" rows
    y: np.ndarray  # (2P,)
    pair_models: np.ndarray  # (P, 2) model indices, first < second
    group_pair: np.ndarray  # (G,) the pair of each (pair, outcome) group
    group_first: np.ndarray  # (G,) weight per vote on the pair's "first won" row: 2, 0 or 1 (tie)
    group_second: np.ndarray  # (G,) weight per vote on the "second won" row: 0, 2 or 1
    group_votes: np.ndarray  # (G,) votes in each group

    def weights(self, group_votes: np.ndarray) -> np.ndarray:
        """Row weights (2P,) for the given votes per group."""
        p = len(self.pair_models)
        first = np.bincount(self.group_pair, weights=group_votes * self.group_first, minlength=p)
        second = np.bincount(self.group_pair, weights=group_votes * self.group_second, minlength=p)
        return np.concatenate([first, second])


def _bt_design(votes: Sequence[Vote], base: float) -> _BTDesign:
    models = sorted({v.model_a for v in votes} | {v.model_b for v in votes})
    index = {m: i for i, m in enumerate(models)}
    m = len(models)
    a = np.array([index[v.model_a] for v in votes], dtype=np.int64)
    b = np.array([index[v.model_b] for v in votes], dtype=np.int64)
    outcome = np.array(
        [0 if v.winner == "model_a" else 1 if v.winner == "model_b" else 2 for v in votes], dtype=np.int64
    )
    flip = a > b  # put the pair in name order; a win of a becomes a win of the second
    first, second = np.where(flip, b, a), np.where(flip, a, b)
    outcome = np.where(flip & (outcome < 2), 1 - outcome, outcome)
    keys, group_votes = np.unique((first * m + second) * 3 + outcome, return_counts=True)
    pair_keys, group_pair = np.unique(keys // 3, return_inverse=True)
    group_outcome = keys % 3
    pair_models = np.stack([pair_keys // m, pair_keys % m], axis=1)
    half = np.zeros((len(pair_keys), m))
    half[np.arange(len(pair_keys)), pair_models[:, 0]] = math.log(base)
    half[np.arange(len(pair_keys)), pair_models[:, 1]] = -math.log(base)
    return _BTDesign(
        models=models,
        x=np.concatenate([half, half]),
        y=np.concatenate([np.ones(len(pair_keys)), np.zeros(len(pair_keys))]),
        pair_models=pair_models,
        group_pair=group_pair,
        group_first=np.array([2.0, 0.0, 1.0])[group_outcome],
        group_second=np.array([0.0, 2.0, 1.0])[group_outcome],
        group_votes=group_votes,
    )


def _bt_model():
    from sklearn.linear_model import LogisticRegression

    # FastChat's later copy of upstream: LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6)
    # (GenAI-Arena's copy keeps the default C=1.0, an L2 penalty that pulls every rating towards the
    # mean). C=inf is scikit-learn >= 1.8's spelling of no penalty. Newton-Cholesky instead of
    # upstream's lbfgs: the same maximum, in 3-5 steps; ~7x faster per bootstrap round here.
    return LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000, solver="newton-cholesky")


def _bt_fit(design: _BTDesign, group_votes: np.ndarray, *, scale: float, initial: float, model=None) -> np.ndarray:
    """Ratings (M,) for the given votes per group, the mean ``initial``; NaN for a model without a vote.

    Only differences are identified: each connected set of models (who met whom) has one model held
    at 0 (its column dropped, so the Hessian is not singular), then is shifted to mean ``initial``.
    Models that never met, directly or through others, are on unrelated scales; with one connected
    set (any real arena) this is just the mean anchor chosen in place of upstream's named model.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(design.models)
    weights = design.weights(group_votes)
    p = len(design.pair_models)
    pairs = design.pair_models[weights[:p] + weights[p:] > 0]  # the pairs that met, (P', 2)
    present = np.zeros(m, dtype=bool)
    present[pairs.ravel()] = True
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(m, m))
    _, component = connected_components(graph, directed=False)
    free = present.copy()
    for c in np.unique(component[present]):
        free[np.flatnonzero(component == c)[0]] = False  # the first model of each set is the reference
    coef = np.zeros(m)
    model = model or _bt_model()
    model.fit(design.x[:, free], design.y, sample_weight=weights)
    coef[free] = model.coef_[0]
    ratings = scale * coef
    for c in np.unique(component[present]):
        members = component == c
        ratings[members] += initial - ratings[members].mean()
    ratings[~present] = np.nan
    return ratings


def bradley_terry(
    votes: Iterable[Vote], *, scale: float = 400, base: float = 10, initial: float = 1000
) -> dict[str, float]:
    """Bradley–Terry ratings by maximum likelihood (upstream ``compute_elo_mle_with_tie``).

    P(a beats b) = 1 / (1 + base ** ((R_b - R_a) / scale)); a tie of either kind counts as one win
    for each side, a win as two wins (upstream duplicates the votes). The ratings' mean is ``initial``.
    A model that never lost (or never won) has no finite maximum-likelihood rating; the solver stops
    where the gradient falls below its tolerance, some thousand points above (below) the others, as
    upstream's lbfgs does; its bootstrap interval shows it.

    Args:
        votes: the votes (every vote given counts, whatever its ``anony``; their order does not matter).
        scale, base: a difference of ``scale`` points means odds of ``base`` to 1.
        initial: the mean rating.

    Returns:
        model -> rating, highest first.

    Examples::

        >>> votes = [Vote(0, "i1", "x", "y", "model_a")] * 3 + [Vote(1, "i1", "x", "y", "model_b")]
        >>> {m: round(r, 1) for m, r in bradley_terry(votes).items()}  # 400 log10(3) apart
        {'x': 1095.4, 'y': 904.6}
    """
    votes = list(votes)
    if not votes:
        return {}
    design = _bt_design(votes, base)
    ratings = _bt_fit(design, design.group_votes, scale=scale, initial=initial)
    return _sorted({m: float(r) for m, r in zip(design.models, ratings, strict=True)})


def _elo_rounds(
    votes: Sequence[Vote], rounds: int, rng: np.random.Generator, *, k: float, scale: float, base: float, initial: float
):
    """Online Elo over ``rounds`` resamples at once: (rounds, M) ratings, NaN where a model was absent.

    Each round's vote sequence is n draws with replacement, which also shuffles the order (upstream's
    ``battles.sample(frac=1.0, replace=True)``); step t updates every round's t-th drawn vote.
    """
    models = sorted({v.model_a for v in votes} | {v.model_b for v in votes})
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[v.model_a] for v in votes])
    b = np.array([index[v.model_b] for v in votes])
    sa = np.array([1.0 if v.winner == "model_a" else 0.0 if v.winner == "model_b" else 0.5 for v in votes])
    n = len(votes)
    ratings = np.full((rounds, len(models)), float(initial))
    seen = np.zeros((rounds, len(models)), dtype=bool)
    r = np.arange(rounds)
    chunk = max(1, 2**20 // rounds)  # draw the indices a block of steps at a time
    for t0 in range(0, n, chunk):
        drawn = rng.integers(0, n, size=(min(chunk, n - t0), rounds))  # (steps, rounds)
        for idx in drawn:
            ia, ib, s = a[idx], b[idx], sa[idx]
            ra, rb = ratings[r, ia], ratings[r, ib]
            ea = 1 / (1 + base ** ((rb - ra) / scale))
            eb = 1 / (1 + base ** ((ra - rb) / scale))
            ratings[r, ia] = ra + k * (s - ea)
            ratings[r, ib] = rb + k * (1 - s - eb)
            seen[r, ia] = seen[r, ib] = True
    ratings[~seen] = np.nan
    return models, ratings


def _bt_rounds(
    votes: Sequence[Vote], rounds: int, rng: np.random.Generator, *, scale: float, base: float, initial: float
):
    """Bradley–Terry over ``rounds`` resamples: (rounds, M) ratings, NaN where a model was absent.

    Resampling n votes with replacement gives each group (pair, outcome) a multinomial count with
    probabilities group size / n, so the design is built once and only the weights change.
    """
    design = _bt_design(votes, base)
    counts = rng.multinomial(len(votes), design.group_votes / len(votes), size=rounds)  # (rounds, G)
    ratings = np.full((rounds, len(design.models)), np.nan)
    weights = np.stack([design.weights(c) for c in counts])  # (rounds, 2P)
    p = len(design.pair_models)
    full = design.weights(design.group_votes)
    met = full[:p] + full[p:] > 0
    # A round in which every pair of the full data still met has the full data's connected sets, so
    # one batched Newton solve serves them all; any other round (or one Newton cannot settle: a
    # model that never lost) is fitted alone, as upstream, by scikit-learn.
    same = ((weights[:, :p] + weights[:, p:] > 0) == met).all(axis=1)
    batched, settled = _bt_newton(design, weights[same], met, scale=scale, initial=initial)
    rows = np.flatnonzero(same)
    ratings[rows[settled]] = batched[settled]
    model = _bt_model()
    for r in np.setdiff1d(np.arange(rounds), rows[settled]):
        ratings[r] = _bt_fit(design, counts[r], scale=scale, initial=initial, model=model)
    return design.models, ratings


def _bt_newton(design: _BTDesign, weights: np.ndarray, met: np.ndarray, *, scale: float, initial: float,
               iterations: int = 50, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """The Bradley–Terry maximum for many weightings of the same design at once: Newton's method on
    the weighted logistic likelihood, every round a step per iteration (one batched linear solve).

    The same maximum as :func:`_bt_fit` (the likelihood is strictly concave once a reference model
    per connected set is held at 0), about a hundred times faster over a thousand resamples. Returns
    the (R, M) ratings and which rounds settled (step below ``tol`` within ``iterations``).
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    m = len(design.models)
    pairs = design.pair_models[met]
    present = np.zeros(m, dtype=bool)
    present[pairs.ravel()] = True
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(m, m))
    _, component = connected_components(graph, directed=False)
    free = present.copy()
    for c in np.unique(component[present]):
        free[np.flatnonzero(component == c)[0]] = False
    x = design.x[:, free]  # (N, F)
    y = design.y
    rounds = len(weights)
    beta = np.zeros((rounds, x.shape[1]))
    settled = np.zeros(rounds, dtype=bool)
    active = np.ones(rounds, dtype=bool)
    for _ in range(iterations):
        if not active.any():
            break
        w = weights[active]
        prob = 1.0 / (1.0 + np.exp(-(beta[active] @ x.T)))  # (R', N)
        gradient = (w * (y - prob)) @ x  # (R', F)
        hessian = np.einsum("rn,nf,ng->rfg", w * prob * (1.0 - prob), x, x)
        try:
            step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        except np.linalg.LinAlgError:
            break  # a singular round: left unsettled, fitted alone
        beta[active] += step
        done = np.abs(step).max(axis=1) < tol
        index = np.flatnonzero(active)
        settled[index[done]] = True
        active[index[done]] = False
    coef = np.zeros((rounds, m))
    coef[:, free] = beta
    ratings = scale * coef
    for c in np.unique(component[present]):
        members = component == c
        ratings[:, members] += initial - ratings[:, members].mean(axis=1, keepdims=True)
    ratings[:, ~present] = np.nan
    settled &= np.isfinite(ratings[:, present]).all(axis=1)
    return ratings, settled


def bootstrap(
    votes: Iterable[Vote],
    method: Literal["elo", "bt"],
    *,
    rounds: int = 1000,
    seed: int = 0,
    scale: float = 400,
    base: float = 10,
    initial: float = 1000,
    k: float = 4,
) -> pd.DataFrame:
    """Bootstrap distribution of the ratings (upstream ``get_bootstrap_result``).

    Each round resamples the votes with replacement (n of n); Elo replays the resample in its drawn
    (random) order, Bradley–Terry refits. Percentiles interpolate linearly (pandas' ``quantile``, as
    upstream) over the rounds in which the model appears.

    Args:
        votes: the votes.
        method: "elo" (online Elo) or "bt" (Bradley–Terry).
        rounds: bootstrap rounds (upstream's leaderboard script: 100; its analysis default: 1000).
        seed: seeds ``numpy.random.default_rng``.
        scale, base, initial, k: as in ``elo`` and ``bradley_terry`` (``k`` for Elo only).

    Returns:
        DataFrame indexed by model, highest median first, with columns "median", "lower" (2.5th
        percentile), "upper" (97.5th) and "rounds" (the rounds in which the model appears).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    votes = list(votes)
    columns = ["median", "lower", "upper", "rounds"]
    if not votes:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="model"), dtype=float)
    rng = np.random.default_rng(seed)
    if method == "elo":
        models, samples = _elo_rounds(votes, rounds, rng, k=k, scale=scale, base=base, initial=initial)
    else:
        models, samples = _bt_rounds(votes, rounds, rng, scale=scale, base=base, initial=initial)
    df = pd.DataFrame(samples, columns=models)  # (rounds, M), upstream's bootstrap_df
    out = pd.DataFrame(
        {
            "median": df.quantile(0.5),
            "lower": df.quantile(0.025),
            "upper": df.quantile(0.975),
            "rounds": df.notna().sum().astype(int),
        }
    )
    out.index.name = "model"
    return out.sort_values(["median"], ascending=False, kind="stable")


# FUNCTIONS: tables


def _wins(votes: Sequence[Vote]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Models (by name), wins[i, j] = non-tie battles i won against j, ties[i, j] = ties of i and j."""
    models = sorted({v.model_a for v in votes} | {v.model_b for v in votes})
    index = {m: i for i, m in enumerate(models)}
    wins = np.zeros((len(models), len(models)), dtype=np.int64)
    ties = np.zeros_like(wins)
    for v in votes:
        a, b = index[v.model_a], index[v.model_b]
        if v.winner == "model_a":
            wins[a, b] += 1
        elif v.winner == "model_b":
            wins[b, a] += 1
        else:
            ties[a, b] += 1
            ties[b, a] += 1
    return models, wins, ties


def win_rate_matrix(votes: Iterable[Vote]) -> pd.DataFrame:
    """Fraction of non-tie battles the row model won against the column model (upstream's heatmap).

    Args:
        votes: the votes; ties of either kind are left out, as upstream's ``battles_no_ties``.

    Returns:
        Square DataFrame over every model in ``votes``, NaN where two models never had a non-tie
        battle (and on the diagonal); rows and columns ordered by mean win fraction, highest first
        (upstream's order), ties by name; ``M[a, b] + M[b, a] = 1`` wherever defined.
    """
    models, wins, _ = _wins(list(votes))
    total = wins + wins.T
    frac = np.full(wins.shape, np.nan)
    np.divide(wins, total, out=frac, where=total > 0)
    df = pd.DataFrame(frac, index=models, columns=models)
    with np.errstate(all="ignore"):
        mean = pd.Series(np.nanmean(frac, axis=1) if len(models) else [], index=models, dtype=float)
    order = sorted(models, key=lambda mdl: (-mean[mdl] if not np.isnan(mean[mdl]) else math.inf, mdl))
    df = df.loc[order, order]
    df.index.name, df.columns.name = "model", "opponent"
    return df


def battle_counts(votes: Iterable[Vote], *, include_ties: bool = True) -> pd.DataFrame:
    """Battles between each pair of models, whichever side each was shown on.

    Args:
        votes: the votes.
        include_ties: count ties of either kind too (upstream's battle-count heatmap counts only
            non-tie battles: ``include_ties=False``, the denominators of ``win_rate_matrix``).

    Returns:
        Symmetric DataFrame of counts over every model in ``votes``, in name order, 0 on the diagonal.
    """
    models, wins, ties = _wins(list(votes))
    counts = wins + wins.T + (ties if include_ties else 0)
    df = pd.DataFrame(counts, index=models, columns=models)
    df.index.name, df.columns.name = "model", "opponent"
    return df


# FUNCTIONS: leaderboard


@dataclass
class Ratings:
    """A leaderboard: ratings with bootstrap intervals and what they were computed from."""

    method: Literal["elo", "bt"]
    ratings: dict[str, float]  # highest first: the bootstrap median, always inside ``intervals``
    intervals: dict[str, tuple[float, float]]  # 2.5th and 97.5th percentiles of the same bootstrap rounds
    counts: dict[str, int]  # battles per model, ties included (upstream's num_battles)
    n_votes: int  # votes counted
    n_left_out: int  # votes cast with the names shown, not counted
    rounds: int = 1000
    seed: int = 0
    online: dict[str, float] = field(default_factory=dict)  # online Elo in vote order (upstream shows it too)
    fit: dict[str, float] = field(default_factory=dict)  # BT: the full-data maximum-likelihood fit; Elo: {}

    def to_json(self) -> str:
        def num(x: float) -> float | None:
            return None if x is None or not math.isfinite(x) else round(float(x), 4)

        return json.dumps(
            {
                "method": self.method,
                "ratings": {m: num(r) for m, r in self.ratings.items()},
                "intervals": {m: [num(lo), num(hi)] for m, (lo, hi) in self.intervals.items()},
                "counts": self.counts,
                "n_votes": self.n_votes,
                "n_left_out": self.n_left_out,
                "rounds": self.rounds,
                "seed": self.seed,
                "online": {m: num(r) for m, r in self.online.items()},
                "fit": {m: num(r) for m, r in self.fit.items()},
            },
            indent=2,
        )


def rate(
    votes: VoteLog | Iterable[Vote], method: Literal["elo", "bt"] = "bt", *, rounds: int = 1000, seed: int = 0
) -> Ratings:
    """Leaderboard of a vote log as upstream's ``report_elo_analysis_results`` computes it.

    Args:
        votes: a ``VoteLog`` (its ``n_left_out`` carries over) or votes; votes with ``anony`` false
            are left out here too and counted.
        method: "bt" (upstream's default) or "elo".
        rounds, seed: as in ``bootstrap``.

    Returns:
        ``Ratings``: each model's bootstrap median with the percentile interval of the same rounds
        (so every rating lies inside its interval); ``online`` is the online Elo in vote order and,
        for "bt", ``fit`` the full-data maximum-likelihood fit.

    Examples::

        >>> board = rate(read_votes("data/hoi/votes.jsonl"), "bt", rounds=100)  # doctest: +SKIP
        >>> board.intervals["model-x"]  # doctest: +SKIP
        (1021.3, 1104.9)
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    n_left_out = votes.n_left_out if isinstance(votes, VoteLog) else 0
    given = list(votes)
    counted = [v for v in given if v.anony]
    n_left_out += len(given) - len(counted)
    boot = bootstrap(counted, method, rounds=rounds, seed=seed)
    # The rating and its interval from the same bootstrap rounds: a median lies between the 2.5th
    # and the 97.5th percentile of its own rounds, whatever the fits did.
    ratings = _sorted({m: float(r) for m, r in boot["median"].items()})
    counts = battle_counts(counted).sum(axis=1)
    return Ratings(
        method=method,
        ratings=ratings,
        intervals={m: (float(boot.at[m, "lower"]), float(boot.at[m, "upper"])) for m in ratings},
        counts={m: int(counts[m]) for m in ratings},
        n_votes=len(counted),
        n_left_out=n_left_out,
        rounds=rounds,
        seed=seed,
        online=elo(counted),
        fit=bradley_terry(counted) if method == "bt" else {},
    )
