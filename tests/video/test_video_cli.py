"""The command line end to end on small settings: generate a benchmark, train a quick frame model,
run both agents, score the run, sweep budgets; and the claims a sweep checks, on hand-made summaries."""

from __future__ import annotations

import json

import pytest

from engines.video.__main__ import main
from engines.video.sweep import SweepConfig, claims
from engines.video.trajectory import read_jsonl


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    main(["generate", "--out", str(root / "bench"), "--minutes", "2", "--videos", "2", "--seed", "5", "--no-progress"])
    main(["train-inspector", "--quick", "--out", str(root / "model" / "frame_model.pt"), "--no-progress"])
    return root


def test_generate_and_train_write_their_files(workspace):
    names = sorted(p.name for p in (workspace / "bench").iterdir())
    assert "questions.jsonl" in names and sum(n.endswith(".mp4") for n in names) == 2
    assert (workspace / "model" / "REPORT.md").read_text().startswith("# The offline inspector's frame model")


@pytest.mark.parametrize("agent", ["gated", "coupled"])
def test_run_then_eval_a_benchmark(workspace, capsys, agent):
    out = workspace / f"{agent}.jsonl"
    main(["run", "--videos", str(workspace / "bench"), "--questions", str(workspace / "bench" / "questions.jsonl"),
          "--agent", agent, "--max-steps", "3", "--frame-model", str(workspace / "model" / "frame_model.pt"),
          "--out", str(out), "--no-progress", "--json"])
    result = _json(capsys)
    questions = [json.loads(line) for line in (workspace / "bench" / "questions.jsonl").read_text().splitlines()]
    trajectories = read_jsonl(out)
    assert result["ran"] == len(questions) == len(trajectories) == result["metrics"]["n"]
    assert {t.agent for t in trajectories} == {agent} and all(t.budget["max_steps"] == 3 for t in trajectories)
    assert all(t.metrics is not None for t in trajectories)
    main(["eval", str(out), "--json"])
    scored = _json(capsys)
    assert scored["overall"]["n"] == len(questions) and list(scored["by_budget"]) == ["steps=3,frames=48"]
    # --resume keeps what is there and runs nothing more.
    main(["run", "--videos", str(workspace / "bench"), "--questions", str(workspace / "bench" / "questions.jsonl"),
          "--agent", agent, "--max-steps", "3", "--frame-model", str(workspace / "model" / "frame_model.pt"),
          "--out", str(out), "--resume", "--no-progress", "--json"])
    assert _json(capsys)["ran"] == 0 and len(read_jsonl(out)) == len(questions)


def test_a_missing_video_and_a_malformed_role_option_are_refused_with_the_reason(workspace, capsys, tmp_path):
    with pytest.raises(SystemExit) as raised:
        main(["run", "--videos", str(tmp_path), "--questions", str(workspace / "bench" / "questions.jsonl"),
              "--out", str(tmp_path / "t.jsonl"), "--no-progress"])
    assert raised.value.code == 2
    assert "no video for 2 question video key(s), e.g. synthetic-0005-000.mp4" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--videos", str(workspace / "bench"), "--questions", str(workspace / "bench" / "questions.jsonl"),
              "--planner", "llm-endpoint", "--planner-arg", "model", "--out", str(tmp_path / "t.jsonl"), "--no-progress"])
    assert "a role option is KEY=VALUE, got 'model'" in capsys.readouterr().err


def test_sweep_writes_a_file_per_agent_and_budget(workspace, capsys):
    out = workspace / "sweep"
    main(["sweep", "--videos", str(workspace / "bench"), "--questions", str(workspace / "bench" / "questions.jsonl"),
          "--budgets", "1,3", "--frame-model", str(workspace / "model" / "frame_model.pt"), "--out", str(out),
          "--no-progress", "--json"])
    result = _json(capsys)
    assert sorted(p.name for p in out.iterdir()) == ["coupled-steps1.jsonl", "coupled-steps3.jsonl", "gated-steps1.jsonl",
                                                     "gated-steps3.jsonl", "summary.json"]
    assert set(result["results"]) == {"gated", "coupled"} and set(result["results"]["gated"]) == {"1", "3"}
    assert set(result["claims"]) >= {"gated_grounded_accuracy_higher", "gated_accuracy_rises_with_budget"}


def _summary(accuracy, grounded, misaligned):
    return {"accuracy": accuracy, "grounded_accuracy": grounded, "misaligned_correct_rate": misaligned}


def test_claims_on_hand_made_summaries():
    results = {"gated": {2: _summary(0.5, 0.4, 0.1), 4: _summary(0.6, 0.5, 0.1), 8: _summary(0.7, 0.6, 0.1)},
               "coupled": {2: _summary(0.6, 0.2, 0.4), 8: _summary(0.6, 0.2, 0.4)}}
    found = claims(results)
    assert found["budget_compared"] == 8 and found["gated_grounded_accuracy_higher"] is True
    assert found["gated_misaligned_correct_lower"] is True and found["gated_accuracy_rises_with_budget"] is True
    # A dip on the way up is not "rising with the budget".
    results["gated"][4] = _summary(0.45, 0.5, 0.1)
    assert claims(results)["gated_accuracy_rises_with_budget"] is False
    assert claims({"gated": {2: _summary(0.5, 0.4, 0.1)}}) == {}


@pytest.mark.parametrize(("settings", "message"), [
    ({"budgets": ()}, "budgets must be step counts from 1 to 64, got ()"),
    ({"budgets": (0, 2)}, "budgets must be step counts from 1 to 64, got (0, 2)"),
    ({"agents": ("solo",)}, "agents must be some of gated, coupled, got ('solo',)"),
])
def test_sweep_settings_are_checked(settings, message):
    with pytest.raises(ValueError) as raised:
        SweepConfig(**settings)
    assert str(raised.value) == message
