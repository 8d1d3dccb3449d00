"""Behaviour cloning on the reaching task, and closed-loop evaluation in and out of distribution.

``python -m engines.attribution train --rho 0.95 --seed 0 --out policy.pt`` trains one policy
(seeded: the same command gives the same weights on the same machine) with a progress bar;
``evaluate`` runs it in closed loop with the cue as in training ("normal"), randomised ("random") or
absent ("none"), and measures the action error against the expert on held-out frames. The synthetic
test of ``docs/attribution.md`` (Method, "The experiment and its permutation test"): cue agreement
rho in {0.5, 0.9, 0.97, 0.99, 1} in the shipped set (``configs.RHOS``), MSE on the expert's action
chunks, success within 3 px in 30 steps.

Training runs on the ``HAI_DEVICE`` setting's device unless a device is given (the weights are
initialised on the CPU from the seed first, so every device starts from the same ones); the
evaluations run wherever the policy is. A seeded run gives the same weights on the same machine
and device; the CPU's and a GPU's differ in the last bits.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from engines.attribution.configs import CUE_MODES, TrainConfig
from engines.attribution.env import TaskConfig, dataset, expert_chunk, render, sample_scene
from engines.attribution.policies import ReachPolicy, parameter_count, save_policy, torch_policy
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.progress import Progress, ProgressBar
from engines.platform.torch_device import resolve_device, to_host


@dataclass
class TrainResult:
    model: ReachPolicy
    losses: list[float]  # mean training loss per epoch
    seconds: float
    config: TrainConfig


def train_policy(config: TrainConfig, task: TaskConfig = TaskConfig(),
                 progress: Progress | None = None, *, device=None) -> TrainResult:
    """Train one policy on ``config.frames`` expert frames; ``progress(epochs done, epochs, "epoch E of N:
    loss L")`` (``engines.platform.progress``) after each epoch.

    ``device``: where it trains (default the ``HAI_DEVICE`` setting's); the model stays there."""
    started = time.perf_counter()
    device = resolve_device(device)
    torch.manual_seed(config.seed)
    images, chunks, _ = dataset(config.frames, config.rho, seed=10_000 + config.seed, config=task)
    inputs, targets = torch.from_numpy(images).to(device), torch.from_numpy(chunks).to(device)
    model = ReachPolicy(task.horizon, 2, config.width).to(device)  # initialised on the CPU, then moved
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    generator = torch.Generator().manual_seed(config.seed)
    losses = []
    for epoch in range(config.epochs):
        order = torch.randperm(len(inputs), generator=generator).to(device)
        total = 0.0
        for start in range(0, len(order), config.batch_size):
            batch = order[start:start + config.batch_size]
            loss = torch.nn.functional.mse_loss(model(inputs[batch]), targets[batch])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            total += loss.item() * len(batch)
        losses.append(total / len(order))
        if progress is not None:
            progress(epoch + 1, config.epochs, f"epoch {epoch + 1} of {config.epochs}: loss {losses[-1]:.4f}")
    return TrainResult(model.eval(), losses, time.perf_counter() - started, config)


@torch.no_grad()
def action_error(policy, rho: float, cue: str, *, frames: int = 256, seed: int = 99,
                 task: TaskConfig = TaskConfig()) -> float:
    """Mean squared error of the policy's chunks against the expert's on fresh frames."""
    images, chunks, _ = dataset(frames, rho, seed=seed, config=task, cue=cue)
    predicted = to_host(policy(torch.from_numpy(images)))
    return float(torch.mean((predicted - torch.from_numpy(chunks)) ** 2))


def _closed_loop(scenes: list, first_moves: Callable[[list], np.ndarray], task: TaskConfig) -> float:
    """Share of ``scenes`` in which the agent gets within ``success_radius`` of the target in
    ``max_steps`` steps; ``first_moves(scenes)`` gives each scene's next move (N, 2) in units of
    ``max_step`` (the first move of its chunk). A finished episode stays where it is."""
    done = np.zeros(len(scenes), dtype=bool)
    for _ in range(task.max_steps):
        done |= [np.linalg.norm(scene.agent - scene.target) <= task.success_radius for scene in scenes]
        if done.all():
            break
        moves = first_moves(scenes) * task.max_step
        for index, scene in enumerate(scenes):
            if not done[index]:
                scene.agent = np.clip(scene.agent + moves[index], 0, task.size)
    done |= [np.linalg.norm(scene.agent - scene.target) <= task.success_radius for scene in scenes]
    return float(done.mean())


def _episodes(rho: float, cue: str, episodes: int, seed: int, task: TaskConfig) -> list:
    rng = np.random.default_rng(seed)
    return [sample_scene(rng, task, rho, cue) for _ in range(episodes)]


@torch.no_grad()
def success_rate(policy, rho: float, cue: str, *, episodes: int = 100, seed: int = 2026,
                 task: TaskConfig = TaskConfig()) -> float:
    """Closed-loop success of ``policy``, all episodes in one batch per step."""

    def first_moves(scenes: list) -> np.ndarray:
        images = torch.from_numpy(np.stack([render(scene, task) for scene in scenes]))
        return to_host(policy(images))[:, 0].numpy()

    return _closed_loop(_episodes(rho, cue, episodes, seed, task), first_moves, task)


def expert_success(rho: float, cue: str, *, episodes: int = 100, seed: int = 2026,
                   task: TaskConfig = TaskConfig()) -> float:
    """The scripted expert's success on the same episodes (the ceiling a policy can reach); it reads
    the state, not the image."""

    def first_moves(scenes: list) -> np.ndarray:
        return np.stack([expert_chunk(scene.agent, scene.target, task)[0] for scene in scenes])

    return _closed_loop(_episodes(rho, cue, episodes, seed, task), first_moves, task)


def evaluate(policy, rho: float, *, episodes: int = 100, frames: int = 256, task: TaskConfig = TaskConfig()) -> dict:
    """Success and action error with the cue as trained ("normal"), randomised and absent."""
    return {cue: {"success": success_rate(policy, rho, cue, episodes=episodes, task=task),
                  "action_mse": action_error(policy, rho, cue, frames=frames, task=task)} for cue in CUE_MODES}


# ------------------------------------------------------------------ command line


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    argparse_options(TrainConfig, parser)
    parser.add_argument("--quick", action="store_true", help="a small run for tests: 400 frames, 2 epochs")
    parser.add_argument("--episodes", type=int, default=100, help="closed-loop episodes per evaluation")
    parser.add_argument("--out", type=Path, required=True,
                        help="weights file to write (a .json sidecar beside it), in a folder under "
                             "datasets/attribution/ of the data folder")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run_train(args: argparse.Namespace) -> dict:
    """Train a reaching policy by behaviour cloning and evaluate it in and out of distribution."""
    from engines.attribution.paths import POLICY_SUFFIXES, output_path
    from engines.platform.files import FileRefused, echo

    config = TrainConfig(**{**option_values(TrainConfig, args), **({"frames": 400, "epochs": 2} if args.quick else {})})
    out = output_path(args.out, what="--out")  # checked before the minutes of training
    if out.suffix.lower() not in POLICY_SUFFIXES:
        raise FileRefused(f"--out: {echo(out.name)} is not a .pt or .pth file")
    with ProgressBar(f"training rho={config.rho} seed={config.seed}", "epoch", enabled=not args.no_progress) as bar:
        result = train_policy(config, progress=bar)
    episodes = 20 if args.quick else args.episodes
    scores = evaluate(torch_policy(result.model), config.rho, episodes=episodes, frames=64 if args.quick else 256)
    meta = {"train": asdict(config), "final_loss": result.losses[-1], "train_seconds": round(result.seconds, 1),
            "parameters": parameter_count(result.model), "evaluation": scores, "episodes": episodes}
    save_policy(result.model, out, meta)
    return {**meta, "path": str(out),
            "summary": (f"rho={config.rho} seed={config.seed}: loss {result.losses[-1]:.4f}, success in "
                        f"distribution {scores['normal']['success']:.0%}, cue random {scores['random']['success']:.0%}, "
                        f"no cue {scores['none']['success']:.0%} ({result.seconds:.0f} s) -> {out}")}
