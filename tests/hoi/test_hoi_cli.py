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


def test_score_prints_the_paper_table_per_method(dataset, capsys):
    tmp_path = dataset
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


def test_score_names_a_broken_records_file(dataset, capsys):
    tmp_path = dataset
    (tmp_path / L1L2_NAME).write_text(json.dumps(L1L2))
    broken = tmp_path / "broken.json"
    broken.write_text('{"method": "x", "L1L2": {"a.jpg": {"max_yes_confidence": "high"}}}')
    with pytest.raises(SystemExit) as raised:
        main(["score", "--benchmark", str(tmp_path), "--records", str(broken)])
    assert raised.value.code == 2 and "broken.json" in capsys.readouterr().err


def test_ratings_rank_methods_by_their_true_strength(dataset, capsys):
    tmp_path = dataset
    path = tmp_path / "votes.jsonl"
    votes = synthetic_votes(n=2000, seed=3)
    path.write_text("".join(json.dumps(vote.to_dict()) + "\n" for vote in votes))
    main(["ratings", "--votes", str(path), "--rounds", "100", "--json"])
    result = _json(capsys)
    ratings = result["ratings"]
    assert sorted(ratings, key=ratings.get) == ["m800", "m1000", "m1100", "m1300"]
    assert result["win_rate"]["m1300"]["m800"] > 0.8
    assert result["summary"].startswith("2000 votes (0 left out")


@pytest.mark.parametrize("where", ["/etc", "data dir", "dotdot", "link out", "outside tmp"])
def test_a_benchmark_folder_outside_the_owned_folders_is_refused(dataset, data_dir, tmp_path, capsys, where):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / L1L2_NAME).write_text(json.dumps(L1L2))  # a readable benchmark, but not one the app owns
    (dataset / "link").symlink_to(outside, target_is_directory=True)
    folder = {"/etc": "/etc", "data dir": str(data_dir), "dotdot": f"{dataset}/../../../../elsewhere",
              "link out": str(dataset / "link"), "outside tmp": str(outside)}[where]
    records = dataset / "toy.json"
    records.write_text(json.dumps(RECORDS))
    with pytest.raises(SystemExit) as raised:
        main(["score", "--benchmark", folder, "--records", str(records)])
    assert raised.value.code == 2
    assert "--benchmark" in (err := capsys.readouterr().err) and "outside the folders the app reads from" in err


def test_records_and_votes_files_outside_the_owned_folders_are_refused(dataset, tmp_path, capsys):
    (dataset / L1L2_NAME).write_text(json.dumps(L1L2))
    records = tmp_path / "toy.json"
    records.write_text(json.dumps(RECORDS))
    with pytest.raises(SystemExit):
        main(["score", "--benchmark", str(dataset), "--records", str(records)])
    assert "--records" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["ratings", "--votes", "/etc/passwd"])
    assert "--votes" in capsys.readouterr().err


def test_the_shipped_demo_is_scored_by_its_shown_name(data_dir, capsys):
    from engines.hoi.offline.demo import DEMO_DIR

    if not DEMO_DIR.is_dir():
        pytest.skip("the shipped demo is written by `python -m engines.hoi demo`")
    main(["score", "--benchmark", "shipped/hoi/demo", "--records", "shipped/hoi/demo/records/offline-drift.json",
          "--json"])
    assert list(_json(capsys)["methods"]) == ["offline-drift"]


def test_the_demo_replaces_only_the_shipped_demo_or_a_new_folder_of_the_data_folder(data_dir, tmp_path):
    from engines.hoi.offline.demo import DEMO_DIR, demo_folder
    from engines.platform.files import FileRefused

    assert demo_folder(DEMO_DIR) == DEMO_DIR  # the regeneration command
    assert demo_folder("datasets/hoi/new-demo") == data_dir / "datasets" / "hoi" / "new-demo"
    for refused in ("/etc", str(tmp_path), str(data_dir), "datasets/hoi", "shipped/hoi", "datasets/hoi/../../.."):
        with pytest.raises(FileRefused, match="--out"):
            demo_folder(refused)
