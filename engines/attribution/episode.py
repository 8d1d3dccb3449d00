"""ISS over an episode: maps every ``time_stride`` frames, linearly interpolated in between.

Upstream (``robot-future/vla-explain``, ``configs/xicm_episode.yaml``)
computes ISS on every 10th frame of an episode and interpolates the maps between them, since
neighbouring frames of a rollout look alike and one map costs hundreds of forward passes. The
last frame is always computed, so nothing is extrapolated. The episode's NMR is then the mean over
its frames (``nmr.episode_nmr``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engines.attribution.iss import ISSResult, Policy, iss

TIME_STRIDE = 10  # upstream's default


@dataclass
class EpisodeISS:
    pixel_maps: torch.Tensor  # (T, H, W): ISS, computed or interpolated
    contrast_maps: torch.Tensor  # (T, H, W): dISS likewise
    keyframes: list[int]  # the frames computed
    result: ISSResult  # the run over the keyframes (batch axis = keyframes), with intervals


def keyframes(n_frames: int, time_stride: int = TIME_STRIDE) -> list[int]:
    """0, stride, 2 stride, ... and the last frame."""
    if n_frames < 1 or time_stride < 1:
        raise ValueError(f"need at least one frame and a stride of at least 1, got {n_frames} and {time_stride}")
    frames = list(range(0, n_frames, time_stride))
    return frames if frames[-1] == n_frames - 1 else [*frames, n_frames - 1]


def interpolate_maps(maps: torch.Tensor, frames: list[int], n_frames: int) -> torch.Tensor:
    """Maps (K, H, W) at the increasing ``frames`` -> (n_frames, H, W), linear between neighbours."""
    if len(frames) != maps.shape[0] or frames[0] != 0 or frames[-1] != n_frames - 1:
        raise ValueError("the maps must be given at increasing frames from the first to the last")
    out = torch.empty((n_frames, *maps.shape[1:]), dtype=maps.dtype)
    for index in range(len(frames) - 1):
        start, end = frames[index], frames[index + 1]
        weights = torch.arange(end - start + 1, dtype=maps.dtype) / (end - start)  # 0 .. 1
        out[start:end + 1] = (1 - weights)[:, None, None] * maps[index] + weights[:, None, None] * maps[index + 1]
    if len(frames) == 1:
        out[0] = maps[0]
    return out


def iss_episode(policy: Policy, frames: torch.Tensor, *, time_stride: int = TIME_STRIDE, context: dict | None = None,
                **iss_options) -> EpisodeISS:
    """ISS of an episode's ``frames`` (T, 3, H, W): one ``iss`` run over the keyframes (the same masks
    for each, as a seed fixes them), interpolated to every frame. ``context`` values (tensors or
    lists) have a leading axis of T, each keyframe scored with its own entry; ``iss_options`` are
    ``iss``'s (grid, n_masks, p_keep, baseline, seed, ...)."""
    chosen = keyframes(frames.shape[0], time_stride)
    own = {name: value[chosen] if isinstance(value, torch.Tensor) else [value[i] for i in chosen]
           for name, value in (context or {}).items()}
    result = iss(policy, frames[chosen], context=own, **iss_options)
    return EpisodeISS(interpolate_maps(result.pixel_map, chosen, frames.shape[0]),
                      interpolate_maps(result.contrast_pixel_map, chosen, frames.shape[0]), chosen, result)
