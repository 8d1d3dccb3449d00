"""One frame explained: a policy's action, its ISS map with intervals, NMR, and the baselines' maps.

What the Attribution page shows for the frame a researcher picks (a scene of the reaching task,
or an uploaded camera image), and what a script would call for the same answer. ISS and its
contrast map come from one run of ``iss`` (``docs/attribution.md``, Method); NMR is upstream's NMR@k
on the plain map and the mass NMR on the contrast map, with a bootstrap interval over the run's
masks; each baseline's map is scored with NMR@k like upstream's comparison table.

The work runs on the model's device (where ``load_policy`` put it: the ``HAI_DEVICE`` setting's);
frames come from the CPU and are moved there, and every map and number comes back to the CPU.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from engines.attribution.baselines import METHODS as BASELINES
from engines.attribution.baselines import attribute
from engines.attribution.env import Scene, TaskConfig, relevance_mask, render, sample_scene
from engines.attribution.episode import iss_episode
from engines.attribution.faithfulness import Curves, cell_scores, curves
from engines.attribution.iss import iss
from engines.attribution.nmr import NMRValue, chance_level, nmr, nmr_value, nmr_with_interval
from engines.attribution.policies import ReachPolicy, torch_policy
from engines.attribution.replacements import replacement
from engines.platform.files import owned_path
from engines.platform.torch_device import to_host

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


class ImageFileError(ValueError):
    """An image that cannot be read; the message names the file."""


@dataclass
class Frame:
    """An image (3, H, W) floats in [0, 1], its task-relevance mask (H, W) if known, and its scene."""

    image: np.ndarray
    relevance: np.ndarray | None
    scene: Scene | None = None
    source: str = ""


@dataclass
class FrameExplanation:
    action: np.ndarray  # the policy's chunk on the clean image (horizon, dim)
    iss_map: np.ndarray  # (H, W) plain ISS, upstream's map
    contrast_map: np.ndarray  # (H, W) dISS = E[D | dropped] - E[D | kept]
    grid_map: np.ndarray  # (gh, gw)
    ci_low: np.ndarray  # (gh, gw) 95% interval per cell
    ci_high: np.ndarray
    nmr_at_k: NMRValue | None  # plain map, top k% pixels (None without a relevance mask)
    nmr_mass: NMRValue | None  # contrast map, with its bootstrap interval
    baselines: dict[str, np.ndarray] = field(default_factory=dict)  # method -> (H, W)
    baseline_nmr: dict[str, NMRValue | None] = field(default_factory=dict)
    curves: dict[str, Curves] = field(default_factory=dict)  # method -> deletion/insertion curves over cells
    seconds: dict[str, float] = field(default_factory=dict)


def scene_frame(rho: float, seed: int, cue: str = "normal", task: TaskConfig = TaskConfig()) -> Frame:
    """A start scene of the reaching task: the ``seed`` fixes it, ``cue`` as in ``sample_scene``."""
    scene = sample_scene(np.random.default_rng(seed), task, rho, cue)
    return Frame(render(scene, task), relevance_mask(scene, task), scene,
                 f"reaching task, rho={rho:g}, scene {seed}, cue {cue}")


def image_frame(path: str | Path, label: str, size: int = 64) -> Frame:
    """A picture (an upload kept by ``store_upload``, which checked it is a PNG or JPEG within the
    pixel limit) as a frame of the policy's input size; no relevance mask. ``label`` names it.

    Raises:
        FileRefused: ``path`` is not an image file inside the folders the app owns.
        ImageFileError: not an image Pillow can read.
    """
    from PIL import Image, UnidentifiedImageError

    path = owned_path(path, what="the frame's image", suffixes=IMAGE_SUFFIXES)
    try:
        with Image.open(path) as opened:
            picture = opened.convert("RGB").resize((size, size), Image.Resampling.BILINEAR)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ImageFileError(f"{label}: not an image file Pillow can read ({type(exc).__name__})") from None
    image = np.asarray(picture, dtype=np.float32).transpose(2, 0, 1) / 255.0
    return Frame(image, None, None, f"uploaded {label}, resized to {size} x {size}")


def explain_frame(model: ReachPolicy, frame: Frame, *, baselines: tuple[str, ...] = (), grid: int = 7,
                  n_masks: int = 300, p_keep: float = 0.3, baseline: str = "blur", k: float = 10.0,
                  seed: int = 0, n_boot: int = 300) -> FrameExplanation:
    """ISS of one frame (plain and contrast maps, intervals), NMR, and each requested baseline's map."""
    unknown = [m for m in baselines if m not in BASELINES]
    if unknown:
        raise ValueError(f"unknown baseline {unknown[0]!r}; choose from {', '.join(BASELINES)}")
    image = torch.from_numpy(np.ascontiguousarray(frame.image, dtype=np.float32))[None]
    policy = torch_policy(model)
    started = time.perf_counter()
    result = iss(policy, image, grid=(grid, grid), n_masks=n_masks, p_keep=p_keep, baseline=baseline, seed=seed)
    seconds = {"iss": time.perf_counter() - started}
    relevant = None if frame.relevance is None else torch.from_numpy(frame.relevance)
    explanation = FrameExplanation(  # the ISS result is on the CPU already
        action=to_host(policy(image))[0].numpy(),
        iss_map=result.pixel_map[0].numpy(), contrast_map=result.contrast_pixel_map[0].numpy(),
        grid_map=result.grid_map[0].numpy(), ci_low=result.ci_low[0].numpy(), ci_high=result.ci_high[0].numpy(),
        nmr_at_k=None if relevant is None else nmr(result.pixel_map[0], relevant, k),
        nmr_mass=None if relevant is None else nmr_with_interval(result, relevant, None, n_boot=n_boot, seed=seed),
        seconds=seconds)
    for method in baselines:
        started = time.perf_counter()
        pixel_map = attribute(method, model, image, grid=(grid, grid), n_masks=n_masks, p_keep=p_keep,
                              baseline=baseline, seed=seed)
        explanation.seconds[method] = time.perf_counter() - started
        explanation.baselines[method] = pixel_map.numpy()  # attribute returns maps on the CPU
        explanation.baseline_nmr[method] = None if relevant is None else nmr(pixel_map, relevant, k)
    # Faithfulness: replace cells in each map's order under the same replacement the maps used.
    replaced = replacement(image, baseline, seed=seed)
    maps = {"iss": result.pixel_map[0], **{m: torch.from_numpy(v) for m, v in explanation.baselines.items()}}
    for method, pixel_map in maps.items():
        explanation.curves[method] = curves(policy, image, cell_scores(pixel_map, (grid, grid)), replaced, (grid, grid))
    return explanation


@dataclass
class EpisodeExplanation:
    frames: np.ndarray  # (T, 3, H, W) the closed-loop rollout
    relevance: np.ndarray  # (T, H, W)
    pixel_maps: np.ndarray  # (T, H, W) ISS, computed every ``time_stride`` frames and interpolated
    contrast_maps: np.ndarray
    keyframes: list[int]
    nmr_mass: list[float]  # per frame, contrast map
    nmr_at_k: list[float]  # per frame, NMR@k of the plain map
    chance: list[float]  # per frame, the nuisance share of the pixels
    success: bool
    steps: int


@torch.no_grad()
def rollout(model: ReachPolicy, scene: Scene, task: TaskConfig = TaskConfig()) -> tuple[np.ndarray, np.ndarray, bool]:
    """The policy in closed loop from ``scene`` (copied): frames (T, 3, H, W), relevance (T, H, W), success.
    The episode ends when the agent is within ``success_radius`` or after ``max_steps`` moves; each
    frame goes to the model's device and its move comes back."""
    policy = torch_policy(model)
    agent = np.array(scene.agent, dtype=float)
    frames, masks = [], []
    for _ in range(task.max_steps + 1):
        current = Scene(agent.copy(), scene.target, scene.cue, scene.distractors)
        frames.append(render(current, task))
        masks.append(relevance_mask(current, task))
        if np.linalg.norm(agent - scene.target) <= task.success_radius:
            return np.stack(frames), np.stack(masks), True
        move = to_host(policy(torch.from_numpy(frames[-1])[None]))[0, 0].numpy() * task.max_step
        agent = np.clip(agent + move, 0, task.size)
    return np.stack(frames), np.stack(masks), False


def explain_episode(model: ReachPolicy, scene: Scene, *, time_stride: int = 10, grid: int = 7, n_masks: int = 300,
                    p_keep: float = 0.3, baseline: str = "blur", k: float = 10.0, seed: int = 0,
                    task: TaskConfig = TaskConfig()) -> EpisodeExplanation:
    """Roll the policy out from ``scene`` and map every frame (ISS every ``time_stride`` frames,
    interpolated between, as upstream), with NMR per frame."""
    frames, masks, success = rollout(model, scene, task)
    episode = iss_episode(torch_policy(model), torch.from_numpy(frames), time_stride=time_stride,
                          grid=(grid, grid), n_masks=n_masks, p_keep=p_keep, baseline=baseline, seed=seed)
    relevant = torch.from_numpy(masks)
    return EpisodeExplanation(
        frames, masks, episode.pixel_maps.numpy(), episode.contrast_maps.numpy(), episode.keyframes,
        [nmr_value(episode.contrast_maps[t], relevant[t]) for t in range(len(frames))],
        [nmr_value(episode.pixel_maps[t], relevant[t], k) for t in range(len(frames))],
        [chance_level(relevant[t]) for t in range(len(frames))], success, len(frames) - 1)


def nmr_point(value: NMRValue | None) -> str:
    """'0.42', or 'n/a' when there is no relevance mask or no mass."""
    return "n/a" if value is None or math.isnan(value.value) else f"{value.value:.2f}"


def nmr_text(value: NMRValue | None) -> str:
    """'0.42 (95% CI 0.35-0.50; chance 0.91)' or 'n/a' when there is no relevance mask or no mass."""
    if value is None or math.isnan(value.value):
        return "n/a"
    interval = "" if value.ci_low is None else f"95% CI {value.ci_low:.2f}–{value.ci_high:.2f}; "
    return f"{nmr_point(value)} ({interval}chance {value.chance:.2f})"


def nmr_detail(value: NMRValue | None) -> str:
    """The interval and chance level alone: '95% CI 0.35–0.50 · chance 0.91' (or why there is no NMR)."""
    if value is None:
        return "no relevance mask for this frame"
    if math.isnan(value.value):
        return "no attribution mass"
    interval = "" if value.ci_low is None else f"95% CI {value.ci_low:.2f}–{value.ci_high:.2f} · "
    return f"{interval}chance {value.chance:.2f}"
