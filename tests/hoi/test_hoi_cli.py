"""python -m engines.hoi: score a method's records on a benchmark folder, and rate methods from a
vote log, as the documented commands are written."""

from __future__ import annotations

import json

import pytest

from engines.hoi.__main__ import main
from tests.hoi.test_hoi_ratings import synthetic_votes
from tests.hoi.test_hoi_scoring import L1L2, L1L2_NAME, L3, L3_NAME, RECORDS


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_score_prints_the_paper_table_per_method(tmp_path, capsys):
    (tmp_path / L1L2_NAME).write_text(json.dumps(L1L2))
    (tmp_path / L3_NAME).write_text(json.dumps(L3))
    records = tmp_path / "toy.json"
    records.write_text(json.dumps(RECORDS))
    main(["score", "--benchmark", str(tmp_path), "--records", str(records), "--json"])
    result = _json(capsys)
    [method] = result["methods"]
    table = result["methods"][method]["paper_table"]
    assert [row["level"] for row in table] == ["L1", "L2", "L3"]
    assert "I+Q&A" not in table[0] and "I+Q&A" in table[1] and "I+Q&A" in table[2]
    main(["score", "--benchmark", str(tmp_path), "--records", str(records)])
    assert capsys.readouterr().out.startswith(f"{method}: L1 ")


def test_score_names_a_broken_records_file(tmp_path, capsys):
    (tmp_path / L1L2_NAME).write_text(json.dumps(L1L2))
    broken = tmp_path / "broken.json"
    broken.write_text('{"method": "x", "L1L2": {"a.jpg": {"max_yes_confidence": "high"}}}')
    with pytest.raises(SystemExit) as raised:
        main(["score", "--benchmark", str(tmp_path), "--records", str(broken)])
    assert raised.value.code == 2 and "broken.json" in capsys.readouterr().err


def test_ratings_rank_methods_by_their_true_strength(tmp_path, capsys):
    path = tmp_path / "votes.jsonl"
    votes = synthetic_votes(n=2000, seed=3)
    path.write_text("".join(json.dumps(vote.to_dict()) + "\n" for vote in votes))
    main(["ratings", "--votes", str(path), "--rounds", "100", "--json"])
    result = _json(capsys)
    ratings = result["ratings"]
    assert sorted(ratings, key=ratings.get) == ["m800", "m1000", "m1100", "m1300"]
    assert result["win_rate"]["m1300"]["m800"] > 0.8
    assert result["summary"].startswith("2000 votes (0 left out")
