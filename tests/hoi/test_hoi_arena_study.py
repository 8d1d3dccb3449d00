"""The HOI-Edit arena as a participant study (studies/hoi_arena): the bot completes it headless and through
the page; names only after the stored vote; a vote counted once; the stored votes exported, read back and rated."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engines.hoi import arena
from engines.hoi.ratings import rate
from engines.hoi.votes import read_votes
from engines.platform import runtime, study_admin
from engines.platform.bots import run_bot, stored_responses
from engines.platform.export import export_study
from engines.platform.registry import get_protocol
from studies.hoi_arena import Battle, Consent, Instructions
from studies.hoi_arena.bot import PlayerBot
from tests.apptest_driver import new_participant_app, play
from tests.hoi.test_hoi_arena import LABELS, THREE, dense_outputs, write_benchmark

ROUNDS = 4
DEMO = Path(__file__).resolve().parents[2] / "assets" / "hoi" / "demo"


@pytest.fixture
def bench(data_dir: Path) -> Path:
    return write_benchmark(data_dir / "datasets" / "hoi" / "bench", dense_outputs(), labels=LABELS)


def frozen(bench: Path, **constants) -> dict:
    """A study config comparing the folder's methods as they are now (what the HOI-Edit page creates)."""
    return {"constants": {**arena.frozen_methods(bench), **constants}}


@pytest.fixture
def study(sqlite_db, bench) -> str:
    study_admin.create_study("arena", "hoi_arena", config=frozen(bench, ROUNDS=ROUNDS))
    return "arena"


def enter_and_consent(slug: str, external_id: str) -> int:
    participant = runtime.enter(slug, {"PROLIFIC_PID": external_id, "STUDY_ID": "s", "SESSION_ID": "x"}).participant_id
    for step in (Consent, Instructions):
        view = runtime.current_view(participant)
        assert view.step.step is step
        runtime.submit(participant, view.step.index, {"agree": True} if step is Consent else {})
    return participant


def test_the_bot_votes_on_every_pair_headless(study):
    bot = PlayerBot("votes_every_pair")
    report = run_bot(study, bot, "headless")
    assert report.status == "completed" and report.completion_code == "HOIARENA26"
    # Consent, instructions, then a vote and a reveal per pair.
    assert report.steps == 2 + 2 * ROUNDS and report.must_fail_checked == 3
    assert [number for number, _ in bot.votes] == [1, 2, 3, 4]
    assert [choice for _, choice in bot.votes] == ["A is better", "B is better", "Tie", "Both are bad"]


def test_the_bot_completes_it_through_the_page(study):
    at = new_participant_app(study, "through-page")
    bot = PlayerBot("votes_every_pair")
    accepted, _ = play(at, study, "through-page", bot)
    view = runtime.current_view(bot.participant_id)
    assert view.status == "completed" and accepted == 2 + 2 * ROUNDS
    assert "HOIARENA26" in [code.value for code in at.code]
    bot.check_stored([r.data for r in stored_responses(bot.participant_id)])


def test_names_appear_only_once_the_vote_is_stored(study, bench):
    participant = enter_and_consent(study, "p1")
    view = runtime.current_view(participant)
    assert view.step.step is Battle and view.template_vars["phase"] == "vote"
    assert {"name_a", "name_b", "choice"}.isdisjoint(view.template_vars)
    pair = arena.plan_pair(_plan(participant), 1)
    assert view.template_vars["edit_a"] == str(bench / f"{pair.model_a}_frames" / pair.split / pair.key)
    result = runtime.submit(participant, view.step.index, {"pair": 1, "choice": "B is better"})
    assert result.accepted and not result.duplicate
    reveal = runtime.current_view(participant)
    assert reveal.step.step is Battle and reveal.template_vars["phase"] == "reveal"
    label = {"bagel": "Bagel", "kontext": "FLUX.1 Kontext", "scpe": "scpe"}
    assert (reveal.template_vars["name_a"], reveal.template_vars["name_b"]) == (label[pair.model_a],
                                                                                label[pair.model_b])
    assert reveal.template_vars["choice"] == "B is better"
    # The vote sent again (a double click, or after seeing the names) stores nothing and changes nothing.
    again = runtime.submit(participant, view.step.index, {"pair": 1, "choice": "A is better"})
    assert again.duplicate
    votes = [r.data for r in stored_responses(participant) if arena.is_vote(r.data)]
    assert votes == [{"pair": 1, "choice": "B is better"}]
    # The reveal takes no vote.
    with pytest.raises(runtime.InvalidResponse) as refused:
        runtime.submit(participant, reveal.step.index, {"pair": 1, "choice": "Tie"})
    assert refused.value.errors == {"choice": "Your vote on this pair is already saved."}


def _plan(participant: int) -> dict:
    from engines.platform.db import read_session
    from engines.platform.models import Participant

    with read_session() as session:
        return session.get(Participant, participant).vars[arena.PLAN_KEY]


def test_the_pairs_are_drawn_at_consent_and_kept(study, bench):
    participant = enter_and_consent(study, "p2")
    plan = _plan(participant)
    seed = arena.participant_seed(study, "p2")
    assert plan == arena.draw_plan(bench, [], ROUNDS, seed, labels={**LABELS, "scpe": "scpe"})
    assert [p["number"] for p in plan["pairs"]] == [1, 2, 3, 4]
    # Later changes to the folder do not change what the participant sees.
    (bench / "methods.json").unlink()
    view = runtime.current_view(participant)
    assert view.template_vars["edit_a"] == arena.vote_page(plan, 1)["edit_a"]


def test_stored_votes_export_read_back_and_rate(study, tmp_path):
    votes_cast = {}
    for external_id in ("v1", "v2"):
        report = run_bot(study, PlayerBot("votes_every_pair"), external_id)
        assert report.status == "completed"
        votes_cast[external_id] = runtime.find_participant(study, external_id)
    # Hand mapping of each stored vote: the plan says which method was on the left (A).
    expected = []
    for participant in votes_cast.values():
        plan = _plan(participant)
        for row in stored_responses(participant):
            if arena.is_vote(row.data):
                pair = arena.plan_pair(plan, row.data["pair"])
                left, right = (pair.second, pair.first) if pair.swapped else (pair.first, pair.second)
                winner = {"A is better": "model_a", "B is better": "model_b", "Tie": "tie",
                          "Both are bad": "tie (bothbad)"}[row.data["choice"]]
                expected.append((row.submitted_at.timestamp(), f"{pair.split}/{pair.key}", left, right, winner))
    expected.sort()
    content = arena.export_votes(study)
    rows = [json.loads(line) for line in content.decode().splitlines()]
    assert [(r["tstamp"], r["item_id"], r["model_a"], r["model_b"], r["winner"]) for r in rows] == expected
    assert len(rows) == 2 * ROUNDS and all(r["anony"] is True for r in rows)
    exported = export_study(study).files["hoi_arena_votes.jsonl"]
    assert exported == content
    path = tmp_path / "votes.jsonl"
    path.write_bytes(content)
    log = read_votes(path)
    assert len(log) == 2 * ROUNDS and log.n_left_out == 0
    board = arena.study_ratings(study, "bt", rounds=20)
    assert board.ratings == rate(log, "bt", rounds=20).ratings
    assert board.n_votes == 2 * ROUNDS


def test_a_study_without_votes_has_an_empty_board(study):
    assert arena.arena_studies() == [study]
    board = arena.study_ratings(study, "elo", rounds=10)
    assert (board.ratings, board.n_votes) == ({}, 0)
    assert arena.export_votes(study) == b""
    with pytest.raises(arena.ArenaError, match="there is no study 'nope'"):
        arena.study_votes("nope")


@pytest.mark.parametrize(("constants", "message"), [
    ({"ROUNDS": 0}, "ROUNDS must be a whole number from 1 to 50"),
    ({"ROUNDS": 51}, "ROUNDS must be a whole number from 1 to 50"),
    ({"METHODS": ["kontext"], "LABELS": {"kontext": "K"}},
     "METHODS must list two or more different methods .*; BENCHMARK has edits of bagel, kontext, scpe"),
    ({"METHODS": [], "LABELS": {}}, "METHODS must list two or more different methods"),
    ({"METHODS": ["kontext", "kontext"]}, "METHODS must list two or more different methods"),
    ({"METHODS": ["kontext", "wan22"], "LABELS": {"kontext": "K", "wan22": "W"}},
     "BENCHMARK: .* no output folder for wan22"),
    ({"LABELS": {"bagel": "Bagel", "kontext": "FLUX.1 Kontext"}},
     r"LABELS must name each method of METHODS once .*: no name for 'scpe'; the folder's names now: "
     r'\{"bagel": "Bagel", "kontext": "FLUX.1 Kontext", "scpe": "scpe"\}'),
    ({"LABELS": {"bagel": "B", "kontext": "K", "scpe": "S", "wan22": "W"}}, "names 'wan22', which METHODS does not"),
    ({"LABELS": {"bagel": "B", "kontext": "K", "scpe": " "}}, "no name for 'scpe'"),
])
def test_constants_the_study_cannot_run_with_are_refused(sqlite_db, bench, constants, message):
    with pytest.raises(runtime.StudyError, match=message):
        study_admin.create_study("bad", "hoi_arena", config=frozen(bench, **constants))


def test_a_missing_benchmark_folder_is_refused(sqlite_db, data_dir):
    with pytest.raises(runtime.StudyError, match="BENCHMARK: .*benchmark folder"):
        study_admin.create_study("bad", "hoi_arena", config={"constants": {
            "BENCHMARK": str(data_dir / "datasets" / "hoi" / "none")}})


@pytest.mark.parametrize("elsewhere", ["outside", "/etc", "datasets/hoi/../../../outside", "assets/../engines"])
def test_a_study_cannot_point_the_arena_at_a_folder_the_app_does_not_own(sqlite_db, tmp_path, elsewhere):
    outside = write_benchmark(tmp_path / "outside", dense_outputs(), labels=LABELS)
    folder = str(outside) if elsewhere == "outside" else elsewhere
    constants = {"BENCHMARK": folder, "METHODS": list(THREE), "LABELS": {m: m for m in THREE}}
    with pytest.raises(runtime.StudyError, match="BENCHMARK: .*benchmark folder"):
        study_admin.create_study("bad", "hoi_arena", config={"constants": constants})


def test_fewer_rounds_than_the_default_and_two_methods_only(sqlite_db, bench):
    study_admin.create_study("short", "hoi_arena", config={"constants": {
        "BENCHMARK": str(bench), "ROUNDS": 2, "METHODS": ["scpe", "kontext"],
        "LABELS": {"scpe": "SCPE", "kontext": "Kontext"}}})
    bot = PlayerBot("votes_every_pair")
    report = run_bot("short", bot, "short-1")
    assert report.status == "completed" and len(bot.votes) == 2
    assert {(v.model_a, v.model_b) for v in arena.study_votes("short")} <= {("kontext", "scpe"), ("scpe", "kontext")}


# What a study compares is fixed when it is created


@pytest.fixture
def demo_copy(data_dir: Path) -> Path:
    """The shipped demo's sources and edits, registered as ``datasets/hoi/demo-copy``: a folder runs may
    write into (the shipped one is read-only)."""
    target = data_dir / "datasets" / "hoi" / "demo-copy"
    shutil.copytree(DEMO, target, ignore=shutil.ignore_patterns("*_strips", "*_traces", "records", "votes.jsonl"))
    return target


def test_a_run_added_to_the_folder_later_joins_no_running_study(sqlite_db, demo_copy):
    # The study is created with the protocol's defaults (the folder aside): it compares the demo's
    # methods under their names then.
    study_admin.create_study("running", "hoi_arena", config={"constants": {"BENCHMARK": str(demo_copy), "ROUNDS": 20}})
    names_then = dict(arena.read_candidates(demo_copy).labels)
    # Mid-study, a test run's edits reach the folder, under a raw name, and a method is renamed.
    shutil.copytree(demo_copy / "offline-faithful_frames", demo_copy / "trial-scpe_frames")
    listed = json.loads((demo_copy / "methods.json").read_text())
    listed["offline-faithful"]["label"] = "Renamed later"
    (demo_copy / "methods.json").write_text(json.dumps(listed))

    shown_methods, revealed = set(), {}
    for external_id in ("late-1", "late-2", "late-3"):
        participant = enter_and_consent("running", external_id)
        plan = _plan(participant)
        for number in range(1, len(plan["pairs"]) + 1):
            pair = arena.plan_pair(plan, number)
            shown_methods |= {pair.first, pair.second}
            page = arena.reveal_page(plan, number, "Tie")
            revealed.update({pair.model_a: page["name_a"], pair.model_b: page["name_b"]})
    assert "trial-scpe" not in shown_methods and shown_methods <= set(names_then)
    assert revealed == {method: names_then[method] for method in revealed}
    assert "Renamed later" not in revealed.values() and "trial-scpe" not in revealed.values()
    # A study created after the run compares it, when asked to.
    later = arena.frozen_methods(demo_copy)
    assert "trial-scpe" in later["METHODS"] and later["LABELS"]["offline-faithful"] == "Renamed later"
    study_admin.create_study("later", "hoi_arena", config={"constants": {**later, "ROUNDS": 20}})
    assert "trial-scpe" in arena.study_comparison("later").labels


def test_a_study_shows_what_it_compares_before_it_opens(sqlite_db, bench):
    study_admin.create_study("closed", "hoi_arena", config=frozen(bench, ROUNDS=3, BENCHMARK=str(bench)),
                             is_open=False)
    comparison = arena.study_comparison("closed")
    assert comparison.is_open is False and comparison.rounds == 3
    assert comparison.benchmark == "datasets/hoi/bench"  # as the page shows it, not a server path
    assert comparison.labels == {"bagel": "Bagel", "kontext": "FLUX.1 Kontext", "scpe": "scpe"}


def test_the_default_compares_the_shipped_demos_methods_under_their_names(sqlite_db):
    constants = get_protocol("hoi_arena").constants()
    assert constants.BENCHMARK == "shipped/hoi/demo"
    frozen_now = arena.frozen_methods("shipped/hoi/demo")
    assert list(constants.METHODS) == frozen_now["METHODS"] and constants.LABELS == frozen_now["LABELS"]
    study_admin.create_study("default", "hoi_arena")
    assert arena.study_comparison("default").labels == frozen_now["LABELS"]


def test_the_repository_path_older_studies_stored_still_names_the_shipped_demo(sqlite_db):
    study_admin.create_study("older", "hoi_arena", config={"constants": {"BENCHMARK": "assets/hoi/demo", "ROUNDS": 2}})
    participant = enter_and_consent("older", "p-old")
    assert Path(_plan(participant)["root"]) == DEMO
