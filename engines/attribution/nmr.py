"""The Nuisance Mass Ratio: how much of a policy's attribution lies on task-irrelevant pixels.

Zhang et al. (ICML 2026) report that NMR measured in distribution predicts failure out of
distribution (r = -0.77 with OOD success). Two versions (``docs/attribution.md``, Method,
"Nuisance Mass Ratio"):

- the **mass** version, ``NMR = sum of the map over nuisance pixels / sum over all pixels`` (maps are
  non-negative; negative values are clipped to 0 first);
- upstream's **NMR@k** (``core/nmr.py``): the top k% pixels of the map (at least one; ``ceil``),
  ``NMR@k = 1 - fraction of them on relevant pixels``.

Each comes with its chance level, the nuisance share of the image (what a map that ignores the
image scores), and the lift, NMR / chance. A relevance mask marks the task-relevant pixels (agent,
target: upstream's labels > 0); everything else is nuisance. Bootstrap intervals resample the
(mask, divergence) pairs of an ISS run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from engines.attribution.iss import ISSResult, upsample
from engines.platform.torch_device import to_host


@dataclass(frozen=True)
class NMRValue:
    value: float
    chance: float  # the nuisance share of the pixels
    lift: float  # value / chance (inf when the whole image is relevant and value > 0)
    k: float | None  # percent of top pixels for NMR@k; None for the mass version
    ci_low: float | None = None
    ci_high: float | None = None


def _checked(attribution: torch.Tensor, relevance_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The map (float64) and the mask (bool) on the CPU, whatever device a map was made on."""
    attribution = to_host(torch.as_tensor(attribution)).to(torch.float64)
    relevant = to_host(torch.as_tensor(relevance_mask)).bool()
    if attribution.shape != relevant.shape:
        raise ValueError(f"the map {tuple(attribution.shape)} and the relevance mask {tuple(relevant.shape)} "
                         "must have the same shape")
    if not torch.isfinite(attribution).all():
        raise ValueError("the map has NaN or infinite values")
    return attribution, relevant


def nmr_value(attribution: torch.Tensor, relevance_mask: torch.Tensor, k: float | None = None) -> float:
    """NMR of one map (any shape; the mask alike): the mass version, or NMR@k with ``k`` percent."""
    attribution, relevant = _checked(attribution, relevance_mask)
    flat, flat_relevant = attribution.flatten(), relevant.flatten()
    if k is None:
        mass = flat.clamp(min=0.0)
        total = float(mass.sum())
        if total <= 0.0:
            return float("nan")  # a map of zeros says nothing: no ratio
        return float(mass[~flat_relevant].sum()) / total
    if not 0.0 < k <= 100.0:
        raise ValueError(f"k is a percentage of pixels in (0, 100], got {k}")
    count = min(flat.numel(), max(1, math.ceil(flat.numel() * k / 100.0)))
    top = torch.argsort(flat, descending=True, stable=True)[:count]  # ties: the earlier pixel
    return 1.0 - float(flat_relevant[top].double().mean())


def chance_level(relevance_mask: torch.Tensor) -> float:
    """The nuisance share of the pixels: a uniform (or random) map's expected NMR."""
    relevant = to_host(torch.as_tensor(relevance_mask)).bool()
    return 1.0 - float(relevant.double().mean())


def nmr(attribution: torch.Tensor, relevance_mask: torch.Tensor, k: float | None = None) -> NMRValue:
    """NMR with its chance level and lift (``engines.attribution.nmr(map, relevance_mask, k=None)``)."""
    value = nmr_value(attribution, relevance_mask, k)
    chance = chance_level(relevance_mask)
    lift = value / chance if chance > 0 else (math.inf if value > 0 else math.nan)
    return NMRValue(value, chance, lift, k)


def nmr_with_interval(result: ISSResult, relevance_mask: torch.Tensor, k: float | None = None, *, index: int = 0,
                      contrast: bool | None = None, n_boot: int = 1000, seed: int = 0,
                      confidence: float = 0.95) -> NMRValue:
    """NMR of image ``index`` of an ISS run, with a percentile bootstrap interval over its masks.

    ``contrast``: score the contrast map (the default for the mass version, whose plain map
    carries every cell's shared offset) or the plain map (the default for NMR@k, as upstream).
    Each resample draws the run's (mask, divergence) pairs with replacement and rebuilds the
    pixel map from them, so the interval holds the estimator's Monte-Carlo noise.
    """
    contrast = k is None if contrast is None else contrast
    shown = result.contrast_pixel_map if contrast else result.pixel_map
    point = nmr(shown[index], relevance_mask, k)
    n_masks = result.keeps.shape[0]
    masks = upsample(result.keeps, tuple(result.pixel_map.shape[-2:]))  # (N, H, W), as the run drew them
    p_keep = float(result.config.get("p_keep", 0.3))
    weights = (1.0 - masks) / (1.0 - p_keep) - (masks / p_keep if contrast else 0.0)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    values = []
    for _ in range(n_boot):
        draw = torch.randint(0, n_masks, (n_masks,), generator=generator)
        pixel_map = torch.einsum("n,nhw->hw", result.divergences[index, draw], weights[draw])
        values.append(nmr_value(pixel_map, relevance_mask, k))
    finite = torch.tensor([v for v in values if not math.isnan(v)], dtype=torch.float64)
    if len(finite) == 0:
        return point
    tail = (1.0 - confidence) / 2
    low, high = torch.quantile(finite, torch.tensor([tail, 1.0 - tail], dtype=torch.float64)).tolist()
    return NMRValue(point.value, point.chance, point.lift, k, low, high)


def episode_nmr(maps: torch.Tensor, relevance_masks: torch.Tensor, k: float | None = None) -> NMRValue:
    """The mean NMR over an episode's frames: maps and masks (T, H, W); frames whose map is all
    zero (no ratio) are left out of the mean."""
    if maps.ndim != 3 or maps.shape != relevance_masks.shape:
        raise ValueError(f"maps and masks must both be (T, H, W), got {tuple(maps.shape)} and "
                         f"{tuple(relevance_masks.shape)}")
    values = [nmr_value(maps[t], relevance_masks[t], k) for t in range(maps.shape[0])]
    finite = [v for v in values if not math.isnan(v)]
    value = sum(finite) / len(finite) if finite else math.nan
    chance = sum(chance_level(relevance_masks[t]) for t in range(maps.shape[0])) / maps.shape[0]
    return NMRValue(value, chance, value / chance if chance > 0 else math.nan, k)
