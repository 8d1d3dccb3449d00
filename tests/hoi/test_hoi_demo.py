"""The shipped HOI-Edit demo (``python -m engines.hoi demo``): what the manual says of it is what its
files hold, and its simulated arena votes follow the item scores."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from engines.hoi import browse
from engines.hoi.demo import DEMO_DIR, SCPE_METHOD, simulated_votes
from engines.hoi.ratings import rate
from engines.hoi.votes import WINNERS, read_votes

pytestmark = pytest.mark.skipif(not DEMO_DIR.is_dir(), reason="the shipped demo is written by "
                                "`python -m engines.hoi demo`")


def test_the_shipped_records_give_the_manuals_table():
    workspace = browse.open_workspace(DEMO_DIR)
    rows = {row["method"]: row for row in browse.leaderboard_rows(workspace)}
    assert set(rows) == set(workspace.methods) and len(rows) == 6 and not workspace.problems
    # docs/hoi.md, "The shipped demo": SCPE lifts the plain offline I2V at every level
    assert round(rows[SCPE_METHOD]["L1 I"], 3) == 0.910 and round(rows["offline-i2v"]["L1 I"], 3) == 0.594
    for column in ("L1 I", "L2 I+Q&A", "L3 I+Q&A"):
        assert rows[SCPE_METHOD][column] > rows["offline-i2v"][column] + 0.2
    assert workspace.benchmark.split_counts() == {"L1L2": 30, "L3": 12}


def test_simulated_votes_are_seeded_and_follow_the_item_scores():
    votes = simulated_votes(DEMO_DIR, 300, seed=3)
    assert votes == simulated_votes(DEMO_DIR, 300, seed=3) and votes != simulated_votes(DEMO_DIR, 300, seed=4)
    assert {v["winner"] for v in votes} <= set(WINNERS) and all(v["anony"] for v in votes)
    wins = Counter()
    for v in votes:
        if v["winner"] in ("model_a", "model_b"):
            wins[v[v["winner"]]] += 1
    assert wins["offline-faithful"] > wins["offline-noisy"]


def test_the_shipped_votes_rank_the_faithful_editor_above_the_noisy_one():
    log = read_votes(DEMO_DIR / "votes.jsonl")
    board = rate(log, "bt", rounds=100)
    order = list(board.ratings)
    assert len(log) == 400 and order.index("offline-faithful") < order.index("offline-noisy")
    assert json.loads((DEMO_DIR / "methods.json").read_text())[SCPE_METHOD]["kind"] == "i2v"
