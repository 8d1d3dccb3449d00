"""Faithfulness of an attribution map: do the cells it ranks first really drive the policy?

For continuous actions the output is ISS's divergence D (mean squared change of the action chunk
against the unmasked image), not a class probability (``docs/attribution.md``, Method,
"Faithfulness tests"):

- **deletion / MoRF** (RISE; Samek et al.'s region perturbation): replace cells in the map's order,
  most relevant first; D should rise fast, so a larger area under the curve is better;
- **LeRF**: the same, least relevant first (should rise slowly); the gap MoRF - LeRF is positive
  for a faithful map;
- **insertion**: start from the replaced image and restore cells, most relevant first; D (against
  the original action) should fall fast, so a smaller area is better;
- **faithfulness correlation** (Bhatt et al. 2020, Quantus): over random subsets of cells, the
  Pearson correlation between the map's sum on the subset and D when the subset is replaced.

Cells are replaced whole (nearest, no blending), with the replacement image given (blur, mean,
noisy: ``engines.attribution.replacements``); use several, or blur favours ISS, which is built on
it. Curves are evaluated in batches, one forward pass per batch. Areas are means over the k = 0..G
points (the trapezoid rule on a unit interval, up to the end points' half weight).

Devices: the image, its replacement, the cell index and the replaced-cell sets go to the policy's
device (``engines.platform.torch_device.inputs_to``), the divergences stay there until all the
sets of a call are evaluated, then come back in one transfer; cell scores are host-side
bookkeeping (G numbers) and are computed on the CPU whatever device the map is on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats

from engines.attribution.baselines import cell_mask
from engines.attribution.iss import divergence
from engines.platform.torch_device import inputs_to, to_host


@dataclass(frozen=True)
class Curves:
    morf: np.ndarray  # D after replacing the k most relevant cells, k = 0..G
    lerf: np.ndarray  # ... the k least relevant
    insertion: np.ndarray  # D after restoring the k most relevant cells into the replaced image

    @property
    def morf_auc(self) -> float:
        return float(self.morf.mean())

    @property
    def lerf_auc(self) -> float:
        return float(self.lerf.mean())

    @property
    def insertion_auc(self) -> float:
        return float(self.insertion.mean())

    @property
    def gap(self) -> float:
        """MoRF area - LeRF area: positive when the map's order matters the right way."""
        return self.morf_auc - self.lerf_auc


def cell_scores(pixel_map: torch.Tensor, grid: tuple[int, int]) -> torch.Tensor:
    """The map's mean over each grid cell, flattened (G,) float64 on the CPU, cell g = row * columns + column."""
    cells = cell_mask(grid, tuple(pixel_map.shape[-2:]))[0, 0].flatten()
    flat = to_host(pixel_map).flatten().double()
    return torch.zeros(grid[0] * grid[1], dtype=torch.float64).index_add_(0, cells, flat) / torch.bincount(
        cells, minlength=grid[0] * grid[1]).double()


@torch.no_grad()
def _divergences(policy: Callable[..., torch.Tensor], image: torch.Tensor, replaced: torch.Tensor,
                 replace_sets: list[torch.Tensor], grid: tuple[int, int], batch_size: int) -> np.ndarray:
    """D for each set of replaced cells (bool (G,)) against the policy's action on ``image``, in
    batches on the policy's device; one transfer back at the end."""
    image, replaced = inputs_to(policy, image, replaced)
    reference = policy(image)
    cells = cell_mask(grid, tuple(image.shape[-2:]))[0, 0].flatten().to(image.device)
    chosen_all = torch.stack(replace_sets).to(image.device)  # (S, G), moved once
    values = []
    for start in range(0, len(replace_sets), batch_size):
        chosen = chosen_all[start:start + batch_size]  # (n, G)
        pixel_replaced = chosen[:, cells].view(len(chosen), 1, *image.shape[-2:]).to(image.dtype)
        batch = image[0] * (1.0 - pixel_replaced) + replaced[0] * pixel_replaced
        values.append(divergence(policy(batch), reference))
    return to_host(torch.cat(values)).double().numpy()


def curves(policy: Callable[..., torch.Tensor], image: torch.Tensor, scores: torch.Tensor, replaced: torch.Tensor,
           grid: tuple[int, int], *, batch_size: int = 64) -> Curves:
    """Deletion (MoRF and LeRF) and insertion curves of one image (1, 3, H, W) for per-cell ``scores`` (G,).

    The three curves' 3 (G + 1) sets are evaluated together, in full batches on the policy's device."""
    n_cells = grid[0] * grid[1]
    if scores.numel() != n_cells:
        raise ValueError(f"{scores.numel()} scores for a {grid[0]} x {grid[1]} grid")
    order = torch.argsort(to_host(scores).flatten(), descending=True, stable=True)

    def prefix_sets(ranking: torch.Tensor, invert: bool) -> list[torch.Tensor]:
        sets = []
        for k in range(n_cells + 1):
            chosen = torch.zeros(n_cells, dtype=torch.bool)
            chosen[ranking[:k]] = True
            sets.append(~chosen if invert else chosen)
        return sets

    sets = prefix_sets(order, False) + prefix_sets(order.flip(0), False) + prefix_sets(order, True)
    values = _divergences(policy, image, replaced, sets, grid, batch_size)
    morf, lerf, insertion = np.split(values, 3)
    return Curves(morf, lerf, insertion)


def faithfulness_correlation(policy: Callable[..., torch.Tensor], image: torch.Tensor, scores: torch.Tensor,
                             replaced: torch.Tensor, grid: tuple[int, int], *, runs: int = 100,
                             subset_size: int | None = None, seed: int = 0, batch_size: int = 64) -> float:
    """Pearson correlation, over ``runs`` random cell subsets, of the scores' sum and D with the subset replaced."""
    n_cells = grid[0] * grid[1]
    size = subset_size or max(1, n_cells // 4)
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(runs):
        chosen = torch.zeros(n_cells, dtype=torch.bool)
        chosen[torch.from_numpy(rng.choice(n_cells, size=size, replace=False))] = True
        sets.append(chosen)
    values = _divergences(policy, image, replaced, sets, grid, batch_size)
    flat = to_host(scores).flatten()
    sums = np.array([float(flat[chosen].sum()) for chosen in sets])
    if np.std(sums) == 0 or np.std(values) == 0:
        return float("nan")
    return float(stats.pearsonr(sums, values).statistic)


@dataclass(frozen=True)
class PairedTest:
    median_difference: float  # median over frames of (method a - method b)
    statistic: float
    p_value: float
    frames: int


def paired_test(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> PairedTest:
    """Wilcoxon signed-rank test of two methods' per-frame scores (e.g. deletion areas)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"two equal-length lists of per-frame scores are needed, got {a.shape} and {b.shape}")
    difference = a - b
    if np.all(difference == 0):
        return PairedTest(0.0, 0.0, 1.0, len(a))
    result = stats.wilcoxon(a, b)
    return PairedTest(float(np.median(difference)), float(result.statistic), float(result.pvalue), len(a))
