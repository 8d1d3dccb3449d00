"""The Interventional Significance Score: which image regions causally drive a policy's actions.

"Embodied Interpretability: Linking Causal Understanding to Generalization in Vision-Language-
Action Models" (Zhang et al., ICML 2026; code ``robot-future/vla-explain``, ``core/iss.py``):

1. draw ``n_masks`` Bernoulli keep-grids Z_i (each cell kept with probability ``p_keep``);
2. upsample each to the image, bilinear (``cv2.INTER_LINEAR``, no random shift unlike RISE): M_i;
3. intervene: ``x_i = x * M_i + b(x) * (1 - M_i)`` with b a Gaussian blur (sigma 10);
4. D_i = mean squared change of the action chunk against the unmasked action;
5. ISS(u) = sum_i D_i (1 - M_i(u)) / (n_masks (1 - p_keep)) ("fixed-denominator normalisation").

Estimator and intervals (``shared/specs/iss.md`` 6.2): per cell g, Y_i(g) = D_i (1 - Z_ig) /
(1 - p) has mean ISS(g) exactly (the masks are i.i.d. and E[1 - Z_ig] = 1 - p), so the mean of Y
is unbiased and mean +- t_{N-1} s_Y / sqrt(N) is its 95% interval. The contrast variant
dISS(g) = E[D | Z_g = 0] - E[D | Z_g = 1], estimated by mean D_i ((1 - Z_ig)/(1 - p) - Z_ig / p),
removes the offset that the other blurred cells add to every cell.

Masks are evaluated in batches, one forward pass per batch, on the device ``HAI_DEVICE`` names;
a seed fixes the masks, so a map is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from scipy import stats

from engines.attribution.replacements import BLUR_SIGMA, REPLACEMENTS, replacement
from engines.platform.torch_device import resolve_device

Policy = Callable[..., torch.Tensor]  # images (B, 3, H, W) in [0, 1] (+ context) -> actions (B, horizon, dim)
CONFIDENCE = 0.95


@dataclass
class ISSResult:
    """An ISS map of each image: per cell (the grid), per pixel, and the cells' 95% intervals.

    Shapes: ``grid_map``, ``ci_low``, ``ci_high``, ``contrast_grid_map`` (B, gh, gw); ``pixel_map``,
    ``contrast_pixel_map`` (B, H, W); ``divergences`` (B, n_masks); ``keeps`` (n_masks, gh, gw), the
    Bernoulli grids (1 = kept).

    Plain ISS is upstream's map: every pixel also carries the effect of the other ~70% of cells
    blurred with it, so a pixel the policy ignores still scores about (1 - p) of the total and the
    mass NMR of a plain map sits near the nuisance share; upstream's NMR@k reads only its top
    pixels. The contrast maps (dISS) remove that offset: use them for the mass NMR.
    """

    grid_map: torch.Tensor
    pixel_map: torch.Tensor
    ci_low: torch.Tensor
    ci_high: torch.Tensor
    contrast_grid_map: torch.Tensor
    contrast_pixel_map: torch.Tensor
    divergences: torch.Tensor
    keeps: torch.Tensor
    config: dict[str, Any] = field(default_factory=dict)


def bernoulli_grids(n_masks: int, grid: tuple[int, int], p_keep: float, seed: int) -> torch.Tensor:
    """``n_masks`` keep-grids (float 0/1) drawn with a private generator: the same seed, the same masks."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.rand((n_masks, *grid), generator=generator) < p_keep).float()


def _linear_weights(cells: int, pixels: int) -> torch.Tensor:
    """(pixels, cells): row u holds the weights 1-D linear resizing gives each cell at pixel u
    (half-pixel centres, as ``cv2.INTER_LINEAR``), read off by resizing the identity."""
    return F.interpolate(torch.eye(cells)[None], size=pixels, mode="linear", align_corners=False)[0].T


def upsample(keeps: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Grids (N, gh, gw) to soft masks (N, H, W), bilinear as ``cv2.resize(..., INTER_LINEAR)``.

    Bilinear resizing is separable, so it is two small matrix products, W_h Z W_w^T: the same
    values as ``F.interpolate(..., mode="bilinear")`` at a twentieth of its time for 500 masks of
    64 x 64, where it was a third of a map's time outside the policy."""
    rows = _linear_weights(keeps.shape[1], size[0]).to(keeps.dtype)
    columns = _linear_weights(keeps.shape[2], size[1]).to(keeps.dtype)
    return rows @ keeps @ columns.T


def divergence(actions: torch.Tensor, reference: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
    """Mean squared action change per sample over all non-batch axes; ``scale`` (dim,) divides each
    action dimension first (the spec's per-dimension std; upstream uses 1)."""
    change = actions - reference
    if scale is not None:
        change = change / scale.to(change.device, change.dtype)
    return change.pow(2).flatten(1).mean(dim=1)


def _check(images: torch.Tensor, grid: tuple[int, int], n_masks: int, p_keep: float, baseline: str) -> None:
    if images.ndim != 4 or images.shape[1] != 3:
        raise ValueError(f"images must be (B, 3, H, W), got shape {tuple(images.shape)}")
    if len(grid) != 2 or min(grid) < 1:
        raise ValueError(f"grid must be two positive sizes, got {grid}")
    if n_masks < 2:
        raise ValueError(f"n_masks must be at least 2 (an interval needs two), got {n_masks}")
    if not 0.0 < p_keep < 1.0:
        raise ValueError(f"p_keep must be strictly between 0 and 1, got {p_keep}")
    if baseline not in REPLACEMENTS:
        raise ValueError(f"unknown baseline {baseline!r}; choose one of {', '.join(REPLACEMENTS)}")


@torch.no_grad()
def iss(policy: Policy, images: torch.Tensor, *, grid: tuple[int, int] = (7, 7), n_masks: int = 500,
        p_keep: float = 0.3, baseline: str = "blur", seed: int = 0, batch_size: int = 64,
        blur_sigma: float = BLUR_SIGMA, action_scale: torch.Tensor | None = None, context: dict | None = None,
        device: Any = None, progress: Callable[[int, int], None] | None = None) -> ISSResult:
    """ISS maps of ``images`` (B, 3, H, W, floats in [0, 1]) for ``policy``, with Captum's calling shape.

    ``context``: keyword arguments the policy takes besides the images (instruction, state), each
    with a leading batch axis of B; they are repeated for every mask. ``progress(done, total)`` is
    called after every batch of masks.
    """
    grid = tuple(grid)
    _check(images, grid, n_masks, p_keep, baseline)
    device = resolve_device(device)
    images = images.to(device, torch.float32)
    batch, _, height, width = images.shape
    keeps = bernoulli_grids(n_masks, grid, p_keep, seed)
    masks = upsample(keeps, (height, width)).to(device)  # (N, H, W)
    replaced = replacement(images, baseline, sigma=blur_sigma, seed=seed)
    context = context or {}
    divergences = torch.empty(batch, n_masks)
    total = batch * n_masks
    # One buffer for every batch of intervened images: no 3 MB allocation per forward pass.
    buffer = torch.empty((min(batch_size, n_masks), 3, height, width), device=device)
    for b in range(batch):
        own = {name: value[b:b + 1] for name, value in context.items()}
        reference = policy(images[b:b + 1], **own)
        change = images[b] - replaced[b]  # x * M + b(x) * (1 - M) = b(x) + M * (x - b(x)): one fused op per batch
        for start in range(0, n_masks, batch_size):
            chunk = masks[start:start + batch_size, None]  # (n, 1, H, W)
            intervened = torch.addcmul(replaced[b], chunk, change, out=buffer[:len(chunk)])
            repeated = {name: value.expand(len(chunk), *value.shape[1:]) for name, value in own.items()}
            actions = policy(intervened, **repeated)
            divergences[b, start:start + len(chunk)] = divergence(actions, reference, action_scale).float().cpu()
            if progress is not None:
                progress(b * n_masks + start + len(chunk), total)
    return summarise(divergences, keeps, masks.cpu(), p_keep, config={
        "grid": list(grid), "n_masks": n_masks, "p_keep": p_keep, "baseline": baseline, "seed": seed,
        "blur_sigma": blur_sigma})


def summarise(divergences: torch.Tensor, keeps: torch.Tensor, masks: torch.Tensor, p_keep: float,
              config: dict | None = None) -> ISSResult:
    """The maps and intervals from the divergences (B, N) of the grids ``keeps`` (N, gh, gw) and their
    upsampled ``masks`` (N, H, W)."""
    n_masks = keeps.shape[0]
    dropped = 1.0 - keeps  # (N, gh, gw)
    samples = divergences[:, :, None, None] * dropped / (1.0 - p_keep)  # Y_i(g): (B, N, gh, gw)
    grid_map = samples.mean(dim=1)
    spread = samples.std(dim=1, unbiased=True)
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df=n_masks - 1)) * spread / n_masks ** 0.5
    contrast = torch.einsum("bn,ngh->bgh", divergences, dropped / (1.0 - p_keep) - keeps / p_keep) / n_masks
    # Both pixel maps from one product D @ M: sum_i D_i (1 - M_i) = sum_i D_i - (D @ M), so no (N, H, W)
    # temporaries (1 - M) are built; this product is most of the time ISS spends outside the policy.
    height, width = masks.shape[-2:]
    kept = (divergences @ masks.reshape(n_masks, height * width)).view(-1, height, width)  # sum_i D_i M_i
    dropped_sum = divergences.sum(dim=1)[:, None, None] - kept  # sum_i D_i (1 - M_i)
    pixel_map = dropped_sum / (n_masks * (1.0 - p_keep))
    contrast_pixels = (dropped_sum / (1.0 - p_keep) - kept / p_keep) / n_masks
    return ISSResult(grid_map, pixel_map, grid_map - half, grid_map + half, contrast, contrast_pixels,
                     divergences, keeps, dict(config or {}))
