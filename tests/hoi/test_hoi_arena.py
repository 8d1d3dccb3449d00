"""The HOI-Edit arena's engine (engines/hoi/arena.py): candidates of a benchmark folder, a participant's pairs
(balanced, swapped, seeded, no item twice in a row), what the vote page hides, and votes as log rows."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
from PIL import Image

from engines.hoi.arena import (
    CHOICES,
    ArenaError,
    ArenaPair,
    benchmark_root,
    draw_pairs,
    draw_plan,
    participant_seed,
    plan_pair,
    read_candidates,
    reveal_page,
    vote_page,
    vote_row,
    votes_jsonl,
)
from engines.hoi.benchmark import ANNOTATION_FILES
from engines.hoi.ratings import rate, win_rate_matrix
from engines.hoi.votes import read_votes

THREE = ["bagel", "kontext", "scpe"]
LABELS = {"bagel": "Bagel", "kontext": "FLUX.1 Kontext"}  # scpe has no entry: its label is its name


def write_benchmark(root: Path, outputs: dict[str, list[str]], *, no_source: tuple[str, ...] = (),
                    labels: dict[str, str] | None = None) -> Path:
    """A benchmark folder in HOI-Edit's layout: ``outputs`` maps "<split>/<key>" to the methods that
    edited it (``<method>_frames/<split>/<key>``); every item has its source image unless in ``no_source``."""
    records: dict[str, dict] = {"L1L2": {}, "L3": {}}
    for shade, (item, methods) in enumerate(outputs.items()):
        split, key = item.split("/")
        records[split][key] = {
            "instruction": f"Make the person lift the cup ({item})", "object": "cup",
            "subject_bounding_box": [0, 0, 4, 8], "object_bounding_box": [4, 4, 8, 8],
            "generated_question": "Has the person in the blue bounding box lifted the cup in the red bounding box?",
            "tags_v6": "L1-interaction-relation_occur" if split == "L1L2" else "L3-non_rigid_change",
            "question_v6": "" if split == "L1L2" else ["Is the cup above the table?"],
        }
        folders = [f"{method}_frames" for method in methods] + ([] if item in no_source else ["images"])
        for number, folder in enumerate(folders):
            path = root / folder / split / key
            path.parent.mkdir(parents=True, exist_ok=True)
            Image.new("RGB", (8, 8), (30 * shade % 256, 60 * number % 256, 90)).save(path)
    for split, items in records.items():
        (root / ANNOTATION_FILES[split]).write_text(json.dumps(items))
    if labels is not None:
        (root / "methods.json").write_text(json.dumps(
            {m: {"kind": "image_edit", "label": label, "offline": True, "description": "synthetic"}
             for m, label in labels.items()}))
    return root


def dense_outputs() -> dict[str, list[str]]:
    """Four items that all three methods edited (every method pair shares four items)."""
    return {"L1L2/a.png": THREE, "L1L2/b.png": THREE, "L1L2/c.png": THREE, "L3/a.png": THREE}


@pytest.fixture
def datasets(data_dir: Path) -> Path:
    """Where benchmarks are registered: ``<data dir>/datasets/hoi``; the arena reads no other folder."""
    return data_dir / "datasets" / "hoi"


@pytest.fixture
def bench(datasets: Path) -> Path:
    """The dense items, plus one item edited by one method and one without its source image."""
    outputs = {**dense_outputs(), "L1L2/d.png": ["kontext"], "L1L2/e.png": ["bagel", "kontext"]}
    return write_benchmark(datasets / "bench", outputs, no_source=("L1L2/e.png",), labels=LABELS)


# Candidates


def test_candidates_are_the_items_two_methods_edited(bench):
    found = read_candidates(bench)
    assert found.methods == ("bagel", "kontext", "scpe")
    # The same key in both splits is two items; d (one method) and e (no source image) are left out.
    assert [item.item_id for item in found.items] == ["L1L2/a.png", "L1L2/b.png", "L1L2/c.png", "L3/a.png"]
    assert found.left_out == {"fewer than two methods' edits": 1, "no source image": 1}
    assert found.labels == {"bagel": "Bagel", "kontext": "FLUX.1 Kontext", "scpe": "scpe"}
    assert found.method_pairs() == [("bagel", "kontext"), ("bagel", "scpe"), ("kontext", "scpe")]
    first = found.items[0]
    assert first.source == bench / "images" / "L1L2" / "a.png"
    assert first.outputs["scpe"] == bench / "scpe_frames" / "L1L2" / "a.png"
    assert first.instruction == "Make the person lift the cup (L1L2/a.png)"


def test_chosen_methods_only(bench):
    found = read_candidates(bench, ["kontext", "bagel"])
    assert found.methods == ("bagel", "kontext")
    assert found.method_pairs() == [("bagel", "kontext")]
    assert all(set(item.outputs) == {"bagel", "kontext"} for item in found.items)
    assert len(found.items) == 4


def test_a_folder_the_arena_cannot_use_says_why(bench, datasets):
    with pytest.raises(ArenaError, match=r"no output folder for wan22 \(expected <method>_frames/; found: bagel, "
                                         r"kontext, scpe\)"):
        read_candidates(bench, ["kontext", "wan22"])
    with pytest.raises(ArenaError, match="two or more methods, found 1"):
        read_candidates(bench, ["kontext"])
    lonely = write_benchmark(datasets / "lonely", {"L1L2/a.png": ["bagel"], "L1L2/b.png": ["kontext"]})
    with pytest.raises(ArenaError, match="no item has edits of two of bagel, kontext"):
        read_candidates(lonely)
    (bench / "methods.json").write_text(json.dumps({"bagel": {"label": ""}}))
    with pytest.raises(ArenaError, match="methods.json: bagel.label: must not be empty"):
        read_candidates(bench)


def test_the_benchmark_is_a_folder_the_app_owns(bench, data_dir, tmp_path):
    demo = Path(__file__).resolve().parents[2] / "assets" / "hoi" / "demo"
    # As the page names it; and the repository path older studies stored, which names the same folder.
    assert benchmark_root("shipped/hoi/demo") == demo
    assert benchmark_root("assets/hoi/demo") == demo
    assert benchmark_root("datasets/hoi/bench") == bench == benchmark_root(str(bench))
    outside = write_benchmark(tmp_path / "outside", dense_outputs(), labels=LABELS)
    for elsewhere in (str(outside), "/etc", "datasets/hoi/../../../outside", "assets/../engines"):
        with pytest.raises(ArenaError, match="benchmark folder"):
            benchmark_root(elsewhere)
    with pytest.raises(ArenaError, match="benchmark folder"):
        read_candidates(outside)  # every reader of a folder goes through it


def test_labels_given_win_over_the_folders(bench):
    found = read_candidates(bench, None, {"bagel": "Method 1"})
    assert found.labels == {"bagel": "Method 1", "kontext": "FLUX.1 Kontext", "scpe": "scpe"}


# Drawing pairs


def test_method_pairs_are_balanced_in_whole_passes(bench):
    found = read_candidates(bench)
    # Three method pairs: 7 rounds = two whole passes and one pair more, 6 rounds = two passes.
    for rounds, counts in ((3, [1, 1, 1]), (6, [2, 2, 2]), (7, [2, 2, 3]), (10, [3, 3, 4])):
        for seed in range(20):
            pairs = draw_pairs(found, rounds, seed)
            drawn = Counter((pair.first, pair.second) for pair in pairs)
            assert sorted(drawn.values()) == counts and len(drawn) == 3
            assert [pair.number for pair in pairs] == list(range(1, rounds + 1))
            # The first three rounds are one pass: every method pair once.
            assert len({(pair.first, pair.second) for pair in pairs[:3]}) == 3


KEY = b"k" * 32  # an installation's arena key (tests/hoi/test_arena_assignment.py: the key itself)


def test_the_same_participant_draws_the_same_pairs(bench):
    found = read_candidates(bench)
    assert participant_seed("arena", "p1", KEY) == participant_seed("arena", "p1", KEY)
    assert participant_seed("arena", "p1", KEY) != participant_seed("arena", "p2", KEY)
    assert participant_seed("arena", "p1", KEY) != participant_seed("other-study", "p1", KEY)
    seed = participant_seed("arena", "p1", KEY)
    assert draw_pairs(found, 9, seed) == draw_pairs(found, 9, seed)
    sequences = {tuple(draw_pairs(found, 9, participant_seed("arena", f"p{i}", KEY))) for i in range(10)}
    assert len(sequences) > 1


def test_sides_are_swapped_by_a_fair_coin(bench):
    found = read_candidates(bench)
    pairs = [pair for seed in range(400) for pair in draw_pairs(found, 3, seed)]
    swapped = sum(pair.swapped for pair in pairs)
    # 1200 fair coins: 600 +- 17 (one standard deviation); 4 deviations either way.
    assert 532 <= swapped <= 668
    for pair in pairs:  # A is the left side: the second method when swapped
        assert (pair.model_a, pair.model_b) == ((pair.second, pair.first) if pair.swapped else (pair.first, pair.second))
        assert pair.first < pair.second


def test_no_item_twice_in_a_row_and_items_spread(bench):
    found = read_candidates(bench)
    for seed in range(50):
        items = [pair.item_id for pair in draw_pairs(found, 12, seed)]
        assert all(a != b for a, b in zip(items, items[1:], strict=False))
        # 12 rounds over 4 items, each chosen least-seen first: three times each.
        assert sorted(Counter(items).values()) == [3, 3, 3, 3]


def test_a_pair_sharing_one_item_is_moved_rather_than_repeat_it(datasets):
    # bagel and scpe share only L1L2/a.png; the other two pairs share a and one b each. The round
    # before (bagel, scpe) leaves a.png to it, and (bagel, scpe) never follows a round on a.png.
    outputs = {"L1L2/a.png": THREE, "L1L2/b.png": ["bagel", "kontext"], "L3/b.png": ["kontext", "scpe"]}
    found = read_candidates(write_benchmark(datasets / "sparse", outputs))
    assert found.items_of("bagel", "scpe") == [found.items[0]]
    for seed in range(100):
        pairs = draw_pairs(found, 3, seed)  # one pass over the three method pairs
        items = [pair.item_id for pair in pairs]
        assert all(a != b for a, b in zip(items, items[1:], strict=False)), (seed, items)
        assert sorted((p.first, p.second) for p in pairs) == [("bagel", "kontext"), ("bagel", "scpe"),
                                                              ("kontext", "scpe")]


def test_rounds_must_be_a_positive_whole_number(bench):
    found = read_candidates(bench)
    for rounds in (0, -1, 2.5, True):
        with pytest.raises(ArenaError, match="rounds must be a whole number of at least 1"):
            draw_pairs(found, rounds, 0)


# What the pages show


def test_vote_page_hides_the_names_and_the_reveal_shows_them(bench):
    plan = draw_plan(bench, None, 4, seed=3)
    assert json.loads(json.dumps(plan)) == plan  # stored as JSON with the participant
    pair = plan_pair(plan, 2)
    page = vote_page(plan, 2)
    assert set(page) == {"phase", "pair", "pairs", "instruction", "source", "edit_a", "edit_b"}
    assert (page["phase"], page["pair"], page["pairs"]) == ("vote", 2, 4)
    assert page["source"] == str(bench / "images" / pair.split / pair.key)
    assert page["edit_a"] == str(bench / f"{pair.model_a}_frames" / pair.split / pair.key)
    assert page["edit_b"] == str(bench / f"{pair.model_b}_frames" / pair.split / pair.key)
    shown = reveal_page(plan, 2, "Tie")
    label = {"bagel": "Bagel", "kontext": "FLUX.1 Kontext", "scpe": "scpe"}
    assert shown["phase"] == "reveal" and shown["choice"] == "Tie"
    assert (shown["name_a"], shown["name_b"]) == (label[pair.model_a], label[pair.model_b])
    with pytest.raises(ArenaError, match="no pair 5 in a plan of 4 pairs"):
        vote_page(plan, 5)
    with pytest.raises(ArenaError, match="unknown vote 'A wins'"):
        reveal_page(plan, 2, "A wins")


# Votes


def test_a_vote_maps_through_the_swap():
    swapped = ArenaPair(3, "L3", "a.png", "Lift the cup", first="bagel", second="kontext", swapped=True)
    straight = ArenaPair(4, "L1L2", "b.png", "Lift the cup", first="bagel", second="kontext", swapped=False)
    # Swapped: kontext was shown on the left, as A. "A is better" means kontext won.
    row = vote_row(swapped, "A is better", 1700000000.5)
    assert row.to_dict() == {"tstamp": 1700000000.5, "item_id": "L3/a.png", "model_a": "kontext",
                             "model_b": "bagel", "winner": "model_a", "anony": True}
    assert vote_row(swapped, "B is better", 1).winner == "model_b"  # bagel, on the right, won
    assert (vote_row(straight, "B is better", 2).model_b, vote_row(straight, "B is better", 2).winner) == (
        "kontext", "model_b")
    assert vote_row(straight, "Tie", 3).winner == "tie"
    assert vote_row(straight, "Both are bad", 4).winner == "tie (bothbad)"
    assert list(CHOICES) == ["A is better", "B is better", "Tie", "Both are bad"]
    with pytest.raises(ArenaError, match="pair 4: unknown vote 'a'"):
        vote_row(straight, "a", 0)


def test_votes_as_jsonl_read_back_and_rate(tmp_path):
    pair = ArenaPair(1, "L1L2", "a.png", "Lift the cup", first="bagel", second="kontext", swapped=True)
    # kontext (left, A) wins twice, bagel (right, B) once, one tie.
    votes = [vote_row(pair, choice, t) for t, choice in enumerate(["A is better", "A is better", "B is better", "Tie"])]
    path = tmp_path / "votes.jsonl"
    path.write_bytes(votes_jsonl(votes))
    log = read_votes(path)
    assert list(log) == votes and log.n_left_out == 0
    assert win_rate_matrix(log).loc["kontext", "bagel"] == pytest.approx(2 / 3)
    board = rate(log, "bt", rounds=20)
    # Bradley-Terry with upstream's counting: a win counts twice, a tie once each way, so kontext
    # has 2*2+1 = 5 wins to bagel's 2*1+1 = 3: 400 log10(5/3) points apart, around the mean 1000.
    gap = 400 * math.log10(5 / 3)
    assert board.fit["kontext"] == pytest.approx(1000 + gap / 2, abs=0.05)
    assert board.fit["bagel"] == pytest.approx(1000 - gap / 2, abs=0.05)
    assert board.n_votes == 4
