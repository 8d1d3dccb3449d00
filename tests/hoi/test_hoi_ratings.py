"""Arena ratings (engines/hoi/ratings.py): Elo by hand, Bradley–Terry against closed forms, an independent
likelihood maximiser and synthetic votes of known strengths, bootstrap intervals, win fractions, the vote log."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError
from scipy.optimize import minimize
from scipy.stats import binom

from engines.hoi.ratings import (
    Ratings,
    battle_counts,
    bootstrap,
    bradley_terry,
    elo,
    rate,
    win_rate_matrix,
)
from engines.hoi.votes import Vote, VoteFormatError, VoteLog, read_votes

# Known strengths for synthetic votes; BT ratings are anchored at mean 1000, so the truth to compare
# with is these shifted by -50 (their mean is 1050).
TRUE = {"m800": 800.0, "m1000": 1000.0, "m1100": 1100.0, "m1300": 1300.0}
TRUE_CENTRED = {m: r - np.mean(list(TRUE.values())) + 1000 for m, r in TRUE.items()}


def v(a: str, b: str, winner: str, t: float = 0.0, anony: bool = True) -> Vote:
    return Vote(tstamp=t, item_id="item-1", model_a=a, model_b=b, winner=winner, anony=anony)


def synthetic_votes(n: int = 5000, seed: int = 0, tie_rate: float = 0.0) -> list[Vote]:
    """n votes between uniformly drawn pairs, A beating B with the BT probability of TRUE."""
    rng = np.random.default_rng(seed)
    names = list(TRUE)
    votes = []
    for t in range(n):
        i, j = rng.choice(len(names), size=2, replace=False)
        p_a = 1 / (1 + 10 ** ((TRUE[names[j]] - TRUE[names[i]]) / 400))
        if rng.random() < tie_rate:
            winner = "tie"
        else:
            winner = "model_a" if rng.random() < p_a else "model_b"
        votes.append(v(names[i], names[j], winner, t=float(t)))
    return votes


# Elo


def test_elo_three_votes_by_hand():
    # K=4, scale 400, base 10, everyone at 1000; E_a = 1 / (1 + 10 ** ((R_b - R_a) / 400)).
    # 1. A beats B: E_A = 0.5, so A = 1000 + 4 (1 - 0.5) = 1002, B = 1000 + 4 (0 - 0.5) = 998.
    # 2. B (998) ties C (1000): E_B = 1 / (1 + 10 ** (2 / 400)) = 1 / (1 + 1.0115795) = 0.4971218;
    #    B = 998 + 4 (0.5 - 0.4971218) = 998.0115128; E_C = 0.5028782, C = 1000 + 4 (0.5 - 0.5028782)
    #    = 999.9884872.
    # 3. C (model_a, 999.9884872) beats A (1002): E_C = 1 / (1 + 10 ** (2.0115128 / 400))
    #    = 1 / (1 + 1.0116465) = 0.4971052; C = 999.9884872 + 4 (1 - 0.4971052) = 1002.0000663;
    #    E_A = 0.5028948, A = 1002 + 4 (0 - 0.5028948) = 999.9884209.
    votes = [v("A", "B", "model_a", 1), v("B", "C", "tie", 2), v("C", "A", "model_a", 3)]
    ratings = elo(votes)
    assert ratings == pytest.approx({"A": 999.9884209, "B": 998.0115128, "C": 1002.0000663}, abs=1e-6)
    assert list(ratings) == ["C", "A", "B"]  # highest first
    assert sum(ratings.values()) == pytest.approx(3000)  # Elo moves points, never creates them


@pytest.mark.parametrize("tie", ["tie", "tie (bothbad)"])
def test_elo_tie_scores_one_half(tie):
    # Equal ratings and S = 0.5 = E: nobody moves.
    assert elo([v("A", "B", tie)]) == {"A": 1000.0, "B": 1000.0}
    # After A beat B (1002 / 998) a tie gives the lower one 4 (0.5 - E_B), E_B = 1 / (1 + 10 ** (4 / 400)).
    e_b = 1 / (1 + 10 ** (4 / 400))
    ratings = elo([v("A", "B", "model_a"), v("B", "A", tie)])
    assert ratings["B"] == pytest.approx(998 + 4 * (0.5 - e_b), abs=1e-9)
    assert ratings["A"] == pytest.approx(1002 - 4 * (0.5 - e_b), abs=1e-9)


def test_elo_parameters():
    # K=32 (FastChat's first value): a first win moves 16 points each way; scale and base change E only.
    assert elo([v("A", "B", "model_b")], k=32, initial=1500) == {"B": 1516.0, "A": 1484.0}
    # From 1016 / 984 with scale 200, base e: E_A = 1 / (1 + e ** (-32 / 200)).
    e_a = 1 / (1 + math.exp(-32 / 200))
    ratings = elo([v("A", "B", "model_a"), v("A", "B", "model_a")], k=32, scale=200, base=math.e)
    assert ratings["A"] == pytest.approx(1016 + 32 * (1 - e_a))


def test_elo_is_online_in_vote_order():
    votes = [v("A", "B", "model_a"), v("A", "B", "model_b")]
    # Order matters: the second vote is scored against the ratings the first one left.
    assert elo(votes)["A"] != pytest.approx(elo(votes[::-1])["A"])


# Bradley–Terry


def test_bradley_terry_two_models_closed_form():
    # Two models: the MLE satisfies 10 ** ((R_x - R_y) / 400) = wins_x / wins_y, here 30 / 10.
    votes = [v("x", "y", "model_a")] * 20 + [v("y", "x", "model_b")] * 10 + [v("x", "y", "model_b")] * 10
    ratings = bradley_terry(votes)
    half = 400 * math.log10(3) / 2  # 95.4242509
    assert ratings == pytest.approx({"x": 1000 + half, "y": 1000 - half}, abs=0.01)


@pytest.mark.parametrize("tie", ["tie", "tie (bothbad)"])
def test_bradley_terry_tie_is_one_win_each_way(tie):
    # Upstream doubles the votes: a win counts twice, a tie once for each side. 30 wins, 10 losses and
    # 10 ties: odds (2*30 + 10) / (2*10 + 10) = 70 / 30.
    votes = [v("x", "y", "model_a")] * 30 + [v("x", "y", "model_b")] * 10 + [v("x", "y", tie)] * 10
    diff = 400 * math.log10(70 / 30)  # 147.19
    assert bradley_terry(votes) == pytest.approx({"x": 1000 + diff / 2, "y": 1000 - diff / 2}, abs=0.01)


def _independent_bt_mle(votes: list[Vote]) -> dict[str, float]:
    """Maximise upstream's doubled-vote log-likelihood directly (BFGS), one model held at 0, mean 1000."""
    models = sorted({x.model_a for x in votes} | {x.model_b for x in votes})
    idx = {m: i for i, m in enumerate(models)}

    def nll(free):
        r = np.concatenate([[0.0], free])
        total = 0.0
        for x in votes:
            d = math.log(10) * (r[idx[x.model_a]] - r[idx[x.model_b]]) / 400
            log_p_a, log_p_b = -np.logaddexp(0, -d), -np.logaddexp(0, d)
            if x.winner == "model_a":
                total -= 2 * log_p_a
            elif x.winner == "model_b":
                total -= 2 * log_p_b
            else:
                total -= log_p_a + log_p_b
        return total

    res = minimize(nll, np.zeros(len(models) - 1), method="BFGS", options={"gtol": 1e-8})
    r = np.concatenate([[0.0], res.x])
    return dict(zip(models, r - r.mean() + 1000, strict=True))


def test_bradley_terry_matches_an_independent_likelihood_maximiser():
    votes = (
        [v("a", "b", "model_a")] * 7
        + [v("b", "a", "model_a")] * 3
        + [v("b", "c", "model_a")] * 5
        + [v("c", "b", "tie")] * 4
        + [v("c", "a", "tie (bothbad)")] * 2
        + [v("a", "c", "model_b")] * 2
        + [v("c", "a", "model_b")] * 6
        + [v("d", "a", "model_a")] * 3
        + [v("d", "c", "model_b")] * 4
        + [v("b", "d", "tie")] * 3
    )
    assert bradley_terry(votes) == pytest.approx(_independent_bt_mle(votes), abs=0.05)


def test_bradley_terry_recovers_known_strengths():
    # 5,000 votes from TRUE (800/1000/1100/1300). Over 40 seeds the estimates' SD was 7-9 points and
    # the largest error 32; tolerance 35 points for this seed.
    ratings = bradley_terry(synthetic_votes())
    assert list(ratings) == ["m1300", "m1100", "m1000", "m800"]
    assert ratings == pytest.approx(TRUE_CENTRED, abs=35)
    assert np.mean(list(ratings.values())) == pytest.approx(1000)  # the anchor: mean = initial


def test_bradley_terry_bootstrap_intervals_cover_the_truth():
    votes = synthetic_votes()
    boot = bootstrap(votes, "bt", rounds=200, seed=0)
    assert list(boot.columns) == ["median", "lower", "upper", "rounds"]
    assert list(boot.index) == ["m1300", "m1100", "m1000", "m800"]
    assert (boot["rounds"] == 200).all()
    inside = [boot.at[m, "lower"] <= TRUE_CENTRED[m] <= boot.at[m, "upper"] for m in TRUE]
    assert sum(inside) >= 3
    width = boot["upper"] - boot["lower"]
    assert ((width > 5) & (width < 80)).all()  # about ±2 SD of 7-9 points
    point = bradley_terry(votes)
    assert all(boot.at[m, "lower"] <= point[m] <= boot.at[m, "upper"] for m in TRUE)


def test_bradley_terry_bootstrap_percentiles_follow_the_binomial():
    # Two models, x won 300 of 400: a resample's wins W ~ Binomial(400, 0.75) and its ratings are
    # 1000 ± 200 log10(W / (400 - W)), so the 2.5 / 50 / 97.5 percentiles are that function of the
    # binomial's (W = 283 / 300 / 316). One W is ~2 points here; tolerance 2.5 (the 5th percentile,
    # W = 286, would be 3.2 points off).
    votes = [v("x", "y", "model_a")] * 300 + [v("y", "x", "model_a")] * 100
    boot = bootstrap(votes, "bt", rounds=400, seed=0)

    def x_rating(w):
        return 1000 + 200 * math.log10(w / (400 - w))

    lower, median, upper = (x_rating(binom.ppf(q, 400, 0.75)) for q in (0.025, 0.5, 0.975))
    assert boot.at["x", "lower"] == pytest.approx(lower, abs=2.5)
    assert boot.at["x", "median"] == pytest.approx(median, abs=2.5)
    assert boot.at["x", "upper"] == pytest.approx(upper, abs=2.5)
    assert boot.at["y", "median"] == pytest.approx(2000 - boot.at["x", "median"])


def test_bradley_terry_fits_without_warnings():
    # One reference model per connected set keeps the Hessian invertible (no fallback to lbfgs),
    # also with two sets of models that never met.
    votes = [v("x", "y", "model_a")] * 3 + [v("x", "y", "model_b"), v("p", "q", "model_a"), v("q", "p", "tie")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ratings = bradley_terry(votes)
        bootstrap(votes, "bt", rounds=20)
    # Each set is centred on 1000 by itself: their scales are unrelated.
    assert ratings["x"] + ratings["y"] == pytest.approx(2000) and ratings["p"] + ratings["q"] == pytest.approx(2000)
    assert ratings["p"] - ratings["q"] == pytest.approx(400 * math.log10(3 / 1), abs=0.01)  # odds (2 + 1) / 1


def test_bradley_terry_ignores_which_side_a_model_was_shown_on():
    votes = synthetic_votes(n=600, seed=3, tie_rate=0.2)
    swapped = [x.swapped() for x in votes]
    assert swapped[0].model_a == votes[0].model_b
    assert bradley_terry(swapped) == pytest.approx(bradley_terry(votes), abs=1e-9)
    pd.testing.assert_frame_equal(bootstrap(swapped, "bt", rounds=20), bootstrap(votes, "bt", rounds=20))
    # Order does not matter either (unlike Elo).
    assert bradley_terry(votes[::-1]) == pytest.approx(bradley_terry(votes), abs=1e-6)


def test_bradley_terry_scale_base_initial():
    votes = [v("x", "y", "model_a")] * 3 + [v("x", "y", "model_b")]
    # Odds 3: R_x - R_y = scale * log_base(3).
    ratings = bradley_terry(votes, scale=100, base=math.e, initial=0)
    assert ratings == pytest.approx({"x": 50 * math.log(3), "y": -50 * math.log(3)}, abs=1e-3)


def test_bradley_terry_unbeaten_model_is_finite_and_far_ahead():
    ratings = bradley_terry([v("x", "y", "model_a")] * 3)
    assert all(math.isfinite(r) for r in ratings.values())
    assert ratings["x"] - ratings["y"] > 1000


# Bootstrap


def test_elo_bootstrap_recovers_ranking_and_is_seeded():
    votes = synthetic_votes(n=3000)
    boot = bootstrap(votes, "elo", rounds=100, seed=1)
    assert list(boot.index) == ["m1300", "m1100", "m1000", "m800"]
    assert (boot["lower"] <= boot["median"]).all() and (boot["median"] <= boot["upper"]).all()
    pd.testing.assert_frame_equal(boot, bootstrap(votes, "elo", rounds=100, seed=1))
    assert not boot.equals(bootstrap(votes, "elo", rounds=100, seed=2))


@pytest.mark.parametrize("vote", [v("A", "B", "model_a"), v("B", "A", "model_a")])
def test_elo_bootstrap_round_is_online_elo_of_its_resample(vote):
    # Every vote alike: each resample is the same sequence, so every round (vectorised over rounds)
    # must equal the online Elo of that sequence (checked by hand above), on both sides' updates.
    votes = [vote] * 20
    boot = bootstrap(votes, "elo", rounds=5)
    online = elo(votes)
    assert online[vote.model_a] > 1020 > 980 > online[vote.model_b]
    for m in ("A", "B"):
        assert boot.at[m, "lower"] == pytest.approx(online[m], abs=1e-9)
        assert boot.at[m, "upper"] == pytest.approx(online[m], abs=1e-9)


def test_elo_bootstrap_replays_resamples_in_random_order():
    # 30 wins of A then 30 of B: online Elo in this order ends with B ahead (recent votes weigh more);
    # resampled and shuffled, the two are even, the median difference near 0.
    votes = [v("A", "B", "model_a", t) for t in range(30)] + [v("A", "B", "model_b", 30 + t) for t in range(30)]
    online = elo(votes)
    assert online["B"] - online["A"] > 5
    boot = bootstrap(votes, "elo", rounds=400, seed=0)
    assert abs(boot.at["A", "median"] - boot.at["B", "median"]) < 3


@pytest.mark.parametrize("method", ["elo", "bt"])
def test_bootstrap_model_absent_from_a_resample_has_no_rating_there(method):
    # One vote in 50 involves z: each resample misses it with probability (49/50)^50 = 0.364.
    votes = [v("x", "y", "model_a" if i % 3 else "model_b", i) for i in range(49)] + [v("z", "x", "model_a", 49)]
    boot = bootstrap(votes, method, rounds=150, seed=0)
    assert boot.at["x", "rounds"] == 150
    assert 70 < boot.at["z", "rounds"] < 120  # 150 * 0.636 = 95 expected, SD 6
    assert boot.notna().all().all()


def test_bootstrap_arguments():
    with pytest.raises(ValueError, match="method"):
        bootstrap([v("x", "y", "tie")], "trueskill")
    with pytest.raises(ValueError, match="rounds"):
        bootstrap([v("x", "y", "tie")], "bt", rounds=0)
    assert bootstrap([], "bt").empty and elo([]) == {} and bradley_terry([]) == {}


# Tables


def test_win_rate_matrix_and_battle_counts_by_hand():
    votes = [
        v("A", "B", "model_a"),
        v("B", "A", "model_b"),  # A wins from the right
        v("A", "B", "model_a"),
        v("A", "B", "model_b"),
        v("A", "B", "tie"),  # left out of the fractions
        v("B", "C", "model_a"),
        v("C", "B", "tie (bothbad)"),
    ]
    wr = win_rate_matrix(votes)
    # A-B: A won 3 of 4 non-tie battles; B-C: B won 1 of 1; A and C never met.
    expected = pd.DataFrame(
        [[np.nan, 3 / 4, np.nan], [1 / 4, np.nan, 1.0], [np.nan, 0.0, np.nan]],
        index=["A", "B", "C"],
        columns=["A", "B", "C"],
    )
    # Ordered by mean win fraction: A 0.75, B (0.25 + 1) / 2 = 0.625, C 0.
    assert list(wr.index) == ["A", "B", "C"] == list(wr.columns)
    np.testing.assert_allclose(wr.to_numpy(), expected.to_numpy())

    counts = battle_counts(votes)
    assert counts.loc["A", "B"] == counts.loc["B", "A"] == 5
    assert counts.loc["B", "C"] == 2 and counts.loc["A", "C"] == 0 and counts.loc["A", "A"] == 0
    no_ties = battle_counts(votes, include_ties=False)
    assert no_ties.loc["A", "B"] == 4 and no_ties.loc["B", "C"] == 1


def test_win_rate_matrix_orders_by_mean_win_fraction():
    votes = [v("weak", "strong", "model_b")] * 3 + [v("mid", "weak", "model_a"), v("strong", "mid", "model_a")]
    assert list(win_rate_matrix(votes).index) == ["strong", "mid", "weak"]


# Vote log


def write_lines(path, rows) -> None:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")


def test_read_votes_both_shapes(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_lines(
        path,
        [
            {"tstamp": 1.0, "item_id": "i1", "model_a": "x", "model_b": "y", "winner": "model_a", "anony": True},
            "",  # blank lines are skipped
            # GenAI-Arena's raw log: names hidden ("" public names), taken from states.
            {
                "tstamp": 2.0,
                "type": "rightvote",
                "models": ["", ""],
                "states": [{"conv_id": "c9", "model_name": "y"}, {"conv_id": "c10", "model_name": "z"}],
                "ip": "",
            },
            {"tstamp": 3.0, "type": "chat", "model": "x", "state": {}},  # not a vote: skipped
            {"tstamp": 4.0, "type": "bothbad_vote", "models": ["z", "x"], "anony": True, "item_id": "i4"},
            {"tstamp": 5.0, "question_id": "q5", "model_a": "x", "model_b": "z", "winner": "tie", "anony": True},
        ],
    )
    log = read_votes(path)
    assert isinstance(log, VoteLog) and len(log) == 4 and log.n_left_out == 0 and log.n_skipped == 1
    assert log[0] == Vote(1.0, "i1", "x", "y", "model_a", True)
    assert log[1] == Vote(2.0, "c9", "y", "z", "model_b", True)
    assert log[2] == Vote(4.0, "i4", "z", "x", "tie (bothbad)", True)
    assert log[3].item_id == "q5" and log[3].winner == "tie"
    assert [x.tstamp for x in log] == [1.0, 2.0, 4.0, 5.0]  # iterates over the votes, file order
    assert elo(log) == elo(log.votes)


def test_read_votes_leaves_out_and_counts_revealed_votes(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_lines(
        path,
        [
            {"tstamp": 1, "item_id": "i1", "model_a": "x", "model_b": "y", "winner": "model_a", "anony": True},
            {"tstamp": 2, "item_id": "i1", "model_a": "x", "model_b": "y", "winner": "model_b", "anony": False},
            # Upstream: public names shown before the vote (the named arena) -> not anonymous.
            {"tstamp": 3, "type": "leftvote", "models": ["y", "x"], "states": [{"conv_id": "c"}, {"conv_id": "d"}]},
        ],
    )
    log = read_votes(path)
    assert len(log) == 1 and log.n_left_out == 2
    board = rate(log, "bt", rounds=10)
    assert board.n_votes == 1 and board.n_left_out == 2
    # Votes given directly: anony false ones are left out by rate too, and counted.
    board = rate([v("x", "y", "model_a"), v("x", "y", "model_b", anony=False)], "elo", rounds=10)
    assert board.n_votes == 1 and board.n_left_out == 1 and board.counts == {"x": 1, "y": 1}


GOOD = {"tstamp": 1, "item_id": "i1", "model_a": "x", "model_b": "y", "winner": "model_a", "anony": True}


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ({**GOOD, "winner": "left"}, "winner",
         "must be one of 'model_a', 'model_b', 'tie' or 'tie (bothbad)' (got 'left')"),
        ({**GOOD, "model_b": "x"}, "model_b", "compared with itself"),
        ({k: x for k, x in GOOD.items() if k != "tstamp"}, "tstamp", "is missing"),
        ({k: x for k, x in GOOD.items() if k != "item_id"}, "item_id", "is missing"),
        ({k: x for k, x in GOOD.items() if k != "anony"}, "anony", "is missing"),
        ({**GOOD, "anony": "yes"}, "anony", "must be true or false (got 'yes')"),
        ({**GOOD, "tstamp": "noon"}, "tstamp", "must be a number (got 'noon')"),
        ({**GOOD, "model_a": ""}, "model_a", "must hold at least 1 character(s)"),
        (
            {"tstamp": 1, "type": "tievote", "models": ["", ""], "states": [{"conv_id": "c"}, {}]},
            "states[0].model_name",
            "is missing",
        ),
        ({"tstamp": 1, "type": "leftvote", "models": ["x"]}, "models", "two names"),
        ({"tstamp": 1, "type": "leftvote", "models": ["x", "x"], "anony": True, "item_id": "i"}, "model_b", "itself"),
    ],
)
def test_read_votes_errors_name_file_line_and_field(tmp_path, row, field, message):
    path = tmp_path / "votes.jsonl"
    write_lines(path, [GOOD, row])
    with pytest.raises(VoteFormatError) as info:
        read_votes(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 2, field)
    assert str(err).startswith(f"{path}, line 2: {field}: ") and message in str(err)


def test_read_votes_bad_json_names_the_line(tmp_path):
    path = tmp_path / "votes.jsonl"
    write_lines(path, [GOOD, GOOD, '{"tstamp": 1,'])
    with pytest.raises(VoteFormatError, match=r"votes\.jsonl, line 3: not valid JSON \(") as info:
        read_votes(path)
    assert info.value.line == 3
    write_lines(path, [GOOD, "[" * 100 + "]" * 100])  # hostile nesting is refused before it is parsed
    with pytest.raises(VoteFormatError, match=r"votes\.jsonl, line 2: the JSON nests deeper than"):
        read_votes(path)


def test_vote_checks_itself():
    with pytest.raises(ValidationError, match="Input should be 'model_a', 'model_b', 'tie' or 'tie \\(bothbad\\)'"):
        Vote(0, "i", "x", "y", "model_c")
    with pytest.raises(ValidationError, match="compared with itself"):
        Vote(0, "i", "x", "x", "tie")
    assert v("x", "y", "tie (bothbad)").is_tie and not v("x", "y", "model_a").is_tie
    assert v("x", "y", "model_a").swapped() == v("y", "x", "model_b")
    assert v("x", "y", "model_a").to_dict()["winner"] == "model_a"


# Leaderboard


def test_rate_bt_and_to_json():
    votes = synthetic_votes(n=2000, seed=5)
    board = rate(votes, "bt", rounds=50, seed=0)
    assert isinstance(board, Ratings) and board.method == "bt"
    assert board.fit == bradley_terry(votes)  # the full-data fit, kept beside the board
    boot = bootstrap(votes, "bt", rounds=50, seed=0)
    assert board.ratings == pytest.approx(boot["median"].to_dict())
    assert list(board.ratings) == ["m1300", "m1100", "m1000", "m800"]
    assert all(lo <= board.ratings[m] <= hi for m, (lo, hi) in board.intervals.items())
    assert sum(board.counts.values()) == 2 * len(votes)
    assert board.online == elo(votes)
    data = json.loads(board.to_json())
    assert data["method"] == "bt" and data["n_votes"] == 2000 and data["n_left_out"] == 0
    assert data["ratings"]["m1300"] == pytest.approx(board.ratings["m1300"], abs=1e-3)
    assert data["intervals"]["m800"] == pytest.approx(list(board.intervals["m800"]), abs=1e-3)
    assert data["fit"]["m800"] == pytest.approx(board.fit["m800"], abs=1e-3)


# Each vote set has a model without a finite maximum-likelihood rating (it never lost, or never won):
# the full-data fit stops where its solver does, which its resamples' fits need not bracket.
UNBOUNDED = {
    "a beats b thrice, b ties c": [("a", "b", "model_a")] * 3 + [("b", "c", "tie")],
    "a beats b once, b ties c thrice": [("a", "b", "model_a")] + [("b", "c", "tie")] * 3,
    "b beats a thrice, b ties c": [("a", "b", "model_b")] * 3 + [("b", "c", "tie")],
}


@pytest.mark.parametrize("method", ["bt", "elo"])
@pytest.mark.parametrize("case", [*UNBOUNDED, "synthetic"])
def test_every_rating_lies_inside_its_own_interval(case, method):
    votes = synthetic_votes(n=300, seed=8, tie_rate=0.1) if case == "synthetic" else [
        v(a, b, winner, t=float(t)) for t, (a, b, winner) in enumerate(UNBOUNDED[case])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unbounded fits warn that they stopped
        board = rate(votes, method, rounds=100, seed=0)
    assert set(board.ratings) == set(board.intervals) and board.ratings
    outside = {m: (r, board.intervals[m]) for m, r in board.ratings.items()
               if not board.intervals[m][0] <= r <= board.intervals[m][1]}
    assert not outside
    # The page's table rounds the three numbers alike, so they stay in order there too.
    from engines.hoi.plots import ratings_frame

    table = ratings_frame(board)
    assert ((table["95% low"] <= table["rating"]) & (table["rating"] <= table["95% high"])).all()


def test_rate_elo_reports_the_bootstrap_median():
    votes = synthetic_votes(n=1000, seed=6)
    board = rate(votes, "elo", rounds=30, seed=4)
    boot = bootstrap(votes, "elo", rounds=30, seed=4)
    assert board.ratings == pytest.approx(boot["median"].to_dict())
    with pytest.raises(ValueError, match="method"):
        rate(votes, "glicko")


def test_bootstrap_batched_fit_equals_one_fit_per_round():
    """The bootstrap's batched Newton solve lands on the same maximum as fitting each resample alone
    with scikit-learn (upstream's way), also when a resample loses a pair (then fitted alone)."""
    import numpy as np

    from engines.hoi import ratings as r

    votes = [Vote(float(t), f"i{t}", a, b, w) for t, (a, b, w) in enumerate(
        [("x", "y", "model_a")] * 7 + [("x", "y", "model_b")] * 3 + [("y", "z", "model_a")] * 5
        + [("y", "z", "tie")] * 2 + [("y", "z", "model_b")] * 2 + [("x", "z", "model_b")] + [("x", "z", "model_a")] * 2)]
    design = r._bt_design(votes, 10)
    counts = np.random.default_rng(3).multinomial(len(votes), design.group_votes / len(votes), size=40)
    _, batched = r._bt_rounds(votes, 40, np.random.default_rng(3), scale=400, base=10, initial=1000)
    one_by_one = np.stack([r._bt_fit(design, c, scale=400, initial=1000) for c in counts])
    finite = np.isfinite(one_by_one).all(axis=1) & (np.abs(one_by_one - 1000) < 900).all(axis=1)
    assert finite.sum() >= 20  # most resamples have a finite maximum
    assert np.allclose(batched[finite], one_by_one[finite], atol=0.05)
