"""The built-in reaching task, its policy files and its training, against hand-worked values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from engines.attribution.__main__ import main
from engines.attribution.configs import TrainConfig
from engines.attribution.env import (
    AGENT_COLOUR,
    CUE_COLOUR,
    TARGET_COLOUR,
    Scene,
    TaskConfig,
    cue_corner,
    expert_chunk,
    relevance_mask,
    render,
    sample_scene,
)
from engines.attribution.policies import PolicyFileError, ReachPolicy, load_policy, save_policy, torch_policy
from engines.attribution.train import expert_success, success_rate, train_policy
from tests.helpers import run_main

TASK = TaskConfig()


def test_the_expert_moves_straight_at_the_target_at_most_max_step_per_step():
    # 12 px to the right with steps of 4 px: three full steps, then stay.
    moves = expert_chunk(np.array([10.0, 10.0]), np.array([22.0, 10.0]), TASK)
    assert moves.tolist() == [[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    # A 3-4-5 triangle of 5 px: one full step of 4 px along (0.6, 0.8), then the last 1 px.
    moves = expert_chunk(np.array([0.0, 0.0]), np.array([3.0, 4.0]), TASK)
    assert np.allclose(moves[0], [0.6, 0.8]) and np.allclose(moves[1], [0.15, 0.2]) and np.allclose(moves[2], 0)


def test_the_scene_draws_agent_target_and_cue_where_they_are():
    scene = Scene(agent=np.array([12.0, 14.0]), target=np.array([30.0, 20.0]), cue=(50, 48), distractors=[])
    image = render(scene, TASK)
    assert image.shape == (3, 64, 64) and image.dtype == np.float32
    # The agent is a ring of width 1.5 inside radius 4: its rim is blue, its centre shows what lies under it.
    assert np.allclose(image[:, 14, 15], AGENT_COLOUR) and not np.allclose(image[:, 14, 12], AGENT_COLOUR)
    assert np.allclose(image[:, 20, 30], TARGET_COLOUR)
    assert np.allclose(image[:, 48, 50], CUE_COLOUR) and np.allclose(image[:, 55, 57], CUE_COLOUR)  # 8 x 8
    assert not np.allclose(image[:, 56, 58], CUE_COLOUR)
    mask = relevance_mask(scene, TASK)
    # The agent (radius 4 + 2) and target (5 + 2) disks: about pi r^2 pixels each; the cue is nuisance.
    assert abs(mask.sum() - np.pi * (6 ** 2 + 7 ** 2)) < 20 and not mask[48:56, 50:58].any()


def test_the_cue_maps_the_arena_onto_its_corner_region():
    # Target centres lie in [5 + 1, 64 - 22 - 5] = [6, 37] on both axes; the cue's corner moves in
    # [64 - 22, 64 - 8] = [42, 56]: the arena's corners map to the region's, its middle to the middle.
    assert cue_corner(np.array([6.0, 37.0]), TASK) == (42, 56)
    assert cue_corner(np.array([21.5, 6.0]), TASK) == (49, 42)
    assert cue_corner(np.array([-10.0, 99.0]), TASK) == (42, 56)  # outside the arena: clipped


def test_the_cue_maps_the_target_as_often_as_rho_says():
    rng = np.random.default_rng(0)
    agreeing = {rho: np.mean([(s := sample_scene(rng, TASK, rho)).cue == cue_corner(s.target, TASK)
                               for _ in range(400)]) for rho in (0.0, 0.8, 1.0)}
    assert agreeing[1.0] == 1.0 and 0.72 < agreeing[0.8] < 0.88 and agreeing[0.0] < 0.08
    assert sample_scene(rng, TASK, 1.0, cue="none").cue is None
    with pytest.raises(ValueError, match="cue must be"):
        sample_scene(rng, TASK, 1.0, cue="sometimes")


def test_the_expert_solves_every_episode_in_thirty_steps():
    assert expert_success(0.95, "normal", episodes=50) == 1.0


def test_training_is_seeded_and_lowers_the_loss():
    config = TrainConfig(rho=1.0, seed=3, frames=256, epochs=3, batch_size=64)
    first, again = train_policy(config, device="cpu"), train_policy(config, device="cpu")  # exact: the CPU
    assert first.losses[-1] < first.losses[0]
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                  again.model.state_dict().values(), strict=True))


@pytest.fixture
def folder(data_dir):
    """``datasets/attribution/`` of the test's data folder: where policies may be loaded from."""
    path = data_dir / "datasets" / "attribution"
    path.mkdir(parents=True)
    return path


def test_a_saved_policy_loads_and_wrong_files_are_refused(folder):
    tmp_path = folder
    model = ReachPolicy()
    path = save_policy(model, tmp_path / "p.pt", {"train": {"rho": 0.5}})
    loaded, meta = load_policy(path, device="cpu")  # compared exactly: on the CPU, where the model was made
    images = torch.rand(2, 3, 64, 64)
    assert torch.equal(loaded(images), model.eval()(images)) and meta["train"] == {"rho": 0.5}
    torch.save({"features.0.weight": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(PolicyFileError, match="not the reach-cnn-v1 policy"):
        load_policy(tmp_path / "other.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a torch file")
    with pytest.raises(PolicyFileError, match="junk.pt: not a weights file of tensors"):
        load_policy(tmp_path / "junk.pt")


class _Sneaky:
    def __reduce__(self):
        return (print, ("this ran",))


def test_a_weights_file_with_code_in_it_is_refused_not_run(folder, capsys):
    tmp_path = folder
    torch.save({"features.0.weight": _Sneaky()}, tmp_path / "sneaky.pt")
    with pytest.raises(PolicyFileError, match="not a weights file of tensors"):
        load_policy(tmp_path / "sneaky.pt")
    assert "this ran" not in capsys.readouterr().out


def test_the_train_command_writes_weights_that_load_and_reports_its_evaluation(folder, tmp_path, capsys):
    import json
    import subprocess
    import sys

    outside = run_main(main, ["train", "--quick", "--out", str(tmp_path / "policy.pt")], capsys)
    assert outside.returncode == 2 and "error: --out: " in outside.stderr and "is outside the folders the app writes to" in \
        outside.stderr and not (tmp_path / "policy.pt").exists()  # refused before any training
    out = folder / "policy.pt"
    proc = run_main(main, ["train", "--rho", "1", "--seed", "2", "--quick", "--no-progress", "--out", str(out),
                           "--json"], capsys)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["train"]["rho"] == 1.0 and report["train"]["frames"] == 400 and report["episodes"] == 20
    assert set(report["evaluation"]) == {"normal", "random", "none"}
    assert all(0.0 <= v["success"] <= 1.0 for v in report["evaluation"].values())
    model, meta = load_policy(out)
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
    # The command as a user types it, once, in its own process.
    bad = subprocess.run([sys.executable, "-m", "engines.attribution", "train", "--rho", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: rho must be from 0 to 1, got 2"


def test_the_train_set_command_trains_each_rho_and_seed_and_reports_them(folder, capsys):
    import json

    tmp_path = folder / "set"
    proc = run_main(main, ["train-set", "--quick", "--rhos", "0", "0.5", "--seeds", "3", "--out-dir", str(tmp_path),
                           "--json"], capsys)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert [(row["rho"], row["seed"], row["file"]) for row in report["policies"]] == [
        (0.0, 3, "reach-rho0-seed3.pt"), (0.5, 3, "reach-rho0.5-seed3.pt")]
    assert json.loads((tmp_path / "report.json").read_text())["policies"] == report["policies"]
    markdown = (tmp_path / "REPORT.md").read_text()
    assert "`python -m engines.attribution train-set --rhos 0 0.5 --seeds 3 --quick`" in markdown
    assert "| 0.5 | 3 |" in markdown and "`reach-rho0.5-seed3.pt`" in markdown
    model, meta = load_policy(tmp_path / "reach-rho0.5-seed3.pt")
    assert meta["train"]["rho"] == 0.5 and meta["train"]["seed"] == 3 and meta["train"]["frames"] == 300
    bad = run_main(main, ["train-set", "--rhos", "1.5", "--out-dir", str(tmp_path / "bad")], capsys)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: rhos: every rho is a probability in [0, 1], got 1.5"
    assert not (tmp_path / "bad").exists()  # refused before anything is written
    outside = run_main(main, ["train-set", "--quick", "--out-dir", str(folder.parents[2] / "elsewhere")], capsys)
    assert outside.returncode == 2 and "error: --out-dir: " in outside.stderr
    assert not (folder.parents[2] / "elsewhere").exists()


SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "attribution" / "policies"


def test_the_shipped_policies_load_and_their_report_tells_the_truth():
    import json

    report = json.loads((SHIPPED / "report.json").read_text())
    cells = {(row["rho"], row["seed"]) for row in report["policies"]}
    assert cells == {(rho, seed) for rho in (0.5, 0.9, 0.97, 0.99, 1.0) for seed in (0, 1, 2)}
    assert sorted(p.name for p in SHIPPED.glob("*.pt")) == sorted(row["file"] for row in report["policies"])
    # Re-evaluate one policy: the success the report states is the success it has.
    row = next(r for r in report["policies"] if (r["rho"], r["seed"]) == (1.0, 0))
    model, meta = load_policy(SHIPPED / row["file"], device="cpu")  # the report was measured on the CPU
    assert meta["evaluation"] == row["evaluation"]
    for cue in ("normal", "random"):
        measured = success_rate(torch_policy(model), 1.0, cue, episodes=report["episodes"])
        assert abs(measured - row["evaluation"][cue]["success"]) <= 0.02, cue


def test_the_shipped_set_holds_a_policy_that_leans_on_the_cue_and_none_at_rho_one_half():
    """What the experiment needs: policies that differ in how much they use the shortcut. Trained
    with the cue right half the time (rho = 0.5), none loses more than 10 points when it is
    randomised; some policy trained with it always right (rho = 1) loses at least 30."""
    import json

    report = json.loads((SHIPPED / "report.json").read_text())

    def drop(row):
        return row["evaluation"]["normal"]["success"] - row["evaluation"]["random"]["success"]

    assert all(drop(row) <= 0.10 for row in report["policies"] if row["rho"] == 0.5)
    assert max(drop(row) for row in report["policies"] if row["rho"] == 1.0) >= 0.30
