"""The built-in reaching task, its policy files and its training, against hand-worked values."""

from __future__ import annotations

import numpy as np
import pytest
import torch

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
from engines.attribution.policies import PolicyFileError, ReachPolicy, load_policy, save_policy
from engines.attribution.train import TrainConfig, expert_success, train_policy

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
    assert np.allclose(image[:, 14, 12], AGENT_COLOUR) and np.allclose(image[:, 20, 30], TARGET_COLOUR)
    assert np.allclose(image[:, 48, 50], CUE_COLOUR) and np.allclose(image[:, 57, 59], CUE_COLOUR)
    mask = relevance_mask(scene, TASK)
    # The agent (radius 4 + 2) and target (5 + 2) disks: about pi r^2 pixels each; the cue is nuisance.
    assert abs(mask.sum() - np.pi * (6 ** 2 + 7 ** 2)) < 20 and not mask[48:58, 50:60].any()


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
    first, again = train_policy(config), train_policy(config)
    assert first.losses[-1] < first.losses[0]
    assert all(torch.equal(a, b) for a, b in zip(first.model.state_dict().values(),
                                                  again.model.state_dict().values(), strict=True))


def test_a_saved_policy_loads_and_wrong_files_are_refused(tmp_path):
    model = ReachPolicy()
    path = save_policy(model, tmp_path / "p.pt", {"train": {"rho": 0.5}})
    loaded, meta = load_policy(path)
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


def test_a_weights_file_with_code_in_it_is_refused_not_run(tmp_path, capsys):
    torch.save({"features.0.weight": _Sneaky()}, tmp_path / "sneaky.pt")
    with pytest.raises(PolicyFileError, match="not a weights file of tensors"):
        load_policy(tmp_path / "sneaky.pt")
    assert "this ran" not in capsys.readouterr().out


def test_the_train_command_writes_weights_that_load_and_reports_its_evaluation(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "policy.pt"
    proc = subprocess.run([sys.executable, "-m", "engines.attribution", "train", "--rho", "1", "--seed", "2",
                           "--quick", "--no-progress", "--out", str(out), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["train"]["rho"] == 1.0 and report["train"]["frames"] == 400 and report["episodes"] == 20
    assert set(report["evaluation"]) == {"normal", "random", "none"}
    assert all(0.0 <= v["success"] <= 1.0 for v in report["evaluation"].values())
    model, meta = load_policy(out)
    assert meta["parameters"] == sum(p.numel() for p in model.parameters())
    bad = subprocess.run([sys.executable, "-m", "engines.attribution", "train", "--rho", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.strip() == "error: rho is a probability, got 2.0"
