"""The Interventional Significance Score: which image regions causally drive a policy's actions.

"Embodied Interpretability: Linking Causal Understanding to Generalization in Vision-Language-
Action Models" (Zhang et al., ICML 2026; arXiv 2605.00321; code ``robot-future/vla-explain``,
``core/iss.py``):

1. draw ``n_masks`` Bernoulli keep-grids Z_i (each cell kept with probability ``p_keep``);
2. upsample each to the image, bilinear (``cv2.INTER_LINEAR``, no random shift unlike RISE): M_i;
3. intervene: ``x_i = x * M_i + b(x) * (1 - M_i)`` with b a Gaussian blur (sigma 10);
4. D_i = mean squared change of the action chunk against the unmasked action;
5. ISS(u) = sum_i D_i (1 - M_i(u)) / (n_masks (1 - p_keep)) ("fixed-denominator normalisation").

Estimator and intervals (``docs/attribution.md``, Method, "Interventional masking and the ISS
estimator" and "The contrast map"): per cell g, Y_i(g) = D_i (1 - Z_ig) / (1 - p) has mean ISS(g)
exactly (the masks are i.i.d. and E[1 - Z_ig] = 1 - p), so the mean of Y is unbiased and mean +-
t_{N-1} s_Y / sqrt(N) is its 95% interval. The contrast variant dISS(g) = E[D | Z_g = 0] - E[D | Z_g
= 1], estimated by mean D_i ((1 - Z_ig)/(1 - p) - Z_ig / p), removes the offset that the other
blurred cells add to every cell.

Masks are evaluated in batches, one forward pass per batch, on the policy's device (the device
rule of ``engines.platform.torch_device``: inputs follow the model; a policy that does not say
where it is runs where the images are). Everything stays there until the maps are done: the masks
are upsampled on the device from the Bernoulli grids (drawn on the CPU from the seed, so the same
seed gives the same masks on every device), the actions of all masks are kept there, and the
summary is computed there; the result comes back to the CPU in one transfer. A seed fixes the
masks, so a map is reproducible.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from scipy import stats

from engines.attribution.replacements import BLUR_SIGMA, REPLACEMENTS, replacement
from engines.platform.progress import Progress
from engines.platform.torch_device import model_device, resolve_device, to_host

Policy = Callable[..., torch.Tensor]  # images (B, 3, H, W) in [0, 1] (+ context) -> actions (B, horizon, dim)
CONFIDENCE = 0.95
# Upsampled masks are made in blocks of at most this many bytes: a block of 64 x 64 masks holds
# 16,384 of them, one of 224 x 224 about 1,300; beyond a block, memory stays flat as n_masks grows.
MASK_BLOCK_BYTES = 256 * 2 ** 20


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
    action dimension first (the paper's per-dimension std; upstream's code uses 1)."""
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
        device: Any = None, progress: Progress | None = None) -> ISSResult:
    """ISS maps of ``images`` (B, 3, H, W, floats in [0, 1]) for ``policy``, with Captum's calling shape.

    ``context``: keyword arguments the policy takes besides the images (instruction, state), each
    with a leading batch axis of B: a tensor, or a list such as one instruction string per image.
    Image b's masks are all scored with entry b of every context (repeated for every mask), never
    another image's. ``device``: where the work
    runs; default the policy's (``model_device``), else the images'. ``progress(done, total)`` is
    called after every batch of masks (it costs no synchronisation with the device). The result
    is on the CPU.
    """
    grid = tuple(grid)
    _check(images, grid, n_masks, p_keep, baseline)
    device = _work_device(policy, images, device)
    images = images.to(device, torch.float32)
    batch, _, height, width = images.shape
    context = _context(context, batch, device)
    keeps = bernoulli_grids(n_masks, grid, p_keep, seed)  # on the CPU: the same masks on every device
    on_device = keeps.to(device)
    replaced = replacement(images, baseline, sigma=blur_sigma, seed=seed)
    changes = images - replaced  # x * M + b(x) * (1 - M) = b(x) + M * (x - b(x)): one fused op per batch
    references = _forward(policy, images, context, batch_size)
    divergences = torch.empty((batch, n_masks), device=device)
    kept = torch.zeros((batch, height * width), device=device)  # sum_i D_i M_i, per image
    # One buffer for every batch of intervened images: no new allocation per forward pass.
    buffer = torch.empty((min(batch_size, n_masks), 3, height, width), device=device)
    block = _block_size(n_masks, height, width, batch_size)
    done, total = 0, batch * n_masks
    for first in range(0, n_masks, block):
        masks = upsample(on_device[first:first + block], (height, width))  # (n, H, W), built on the device
        for b in range(batch):
            own = {name: value[b:b + 1] for name, value in context.items()}
            actions = []
            for start in range(0, len(masks), batch_size):
                chunk = masks[start:start + batch_size, None]  # (n, 1, H, W)
                intervened = torch.addcmul(replaced[b], chunk, changes[b], out=buffer[:len(chunk)])
                repeated = {name: _repeat(value, len(chunk)) for name, value in own.items()}
                out = policy(intervened, **repeated)  # kept on the device: no sync per batch
                if out.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr():
                    out = out.clone()  # a view of its input: the next batch would overwrite it
                actions.append(out)
                done += len(chunk)
                if progress is not None:
                    progress(done, total)
            values = divergence(torch.cat(actions).float(), references[b:b + 1].float(), action_scale)
            divergences[b, first:first + len(masks)] = values
            kept[b] += values @ masks.reshape(len(masks), height * width)
    result = _summary(divergences, on_device, kept.view(batch, height, width), p_keep, config={
        "grid": list(grid), "n_masks": n_masks, "p_keep": p_keep, "baseline": baseline, "seed": seed,
        "blur_sigma": blur_sigma})
    return _on_host(result, keeps)


def _context(context: dict | None, batch: int, device: torch.device) -> dict:
    """The context with its tensors on ``device``; every value must hold one entry per image."""
    checked = {}
    for name, value in (context or {}).items():
        batched = isinstance(value, torch.Tensor) and value.ndim > 0 or isinstance(value, (list, tuple))
        if not batched or len(value) != batch:
            found = f"{len(value)} entries" if batched else f"one {type(value).__name__}"
            raise ValueError(f"context {name!r} must hold one entry per image ({batch}), got {found}")
        checked[name] = value.to(device) if isinstance(value, torch.Tensor) else list(value)
    return checked


def _repeat(value: torch.Tensor | list, count: int) -> torch.Tensor | list:
    """One image's context entry (a batch of one) repeated ``count`` times: a tensor as a view, a
    list's entry copied."""
    if isinstance(value, torch.Tensor):
        return value.expand(count, *value.shape[1:])
    return value * count


def _work_device(policy: Policy, images: torch.Tensor, device: Any) -> torch.device:
    """Where a run works: ``device`` when given, else the policy's device, else the images'."""
    if device is not None:
        return resolve_device(device)
    found = model_device(policy)
    return images.device if found is None else found


def _forward(policy: Policy, images: torch.Tensor, context: dict, batch_size: int) -> torch.Tensor:
    """The policy's actions on the unmasked images, ``batch_size`` images per forward pass."""
    return torch.cat([policy(images[start:start + batch_size],
                             **{name: value[start:start + batch_size] for name, value in context.items()})
                      for start in range(0, images.shape[0], batch_size)])


def _block_size(n_masks: int, height: int, width: int, batch_size: int) -> int:
    """Masks upsampled at once: as many as ``MASK_BLOCK_BYTES`` holds, in whole batches, at least one batch."""
    fits = MASK_BLOCK_BYTES // (4 * height * width)
    return min(n_masks, max(batch_size, fits // batch_size * batch_size))


def _on_host(result: ISSResult, keeps: torch.Tensor) -> ISSResult:
    """The result's tensors on the CPU, copied once each at the end of a run; ``keeps``, the grids as
    drawn on the CPU, need no copy."""
    return ISSResult(*(to_host(getattr(result, name)) for name in (
        "grid_map", "pixel_map", "ci_low", "ci_high", "contrast_grid_map", "contrast_pixel_map", "divergences")),
        keeps=keeps, config=result.config)


def summarise(divergences: torch.Tensor, keeps: torch.Tensor, masks: torch.Tensor, p_keep: float,
              config: dict | None = None) -> ISSResult:
    """The maps and intervals from the divergences (B, N) of the grids ``keeps`` (N, gh, gw) and their
    upsampled ``masks`` (N, H, W), on the divergences' device."""
    n_masks, height, width = masks.shape
    masks = masks.to(divergences.device, divergences.dtype)
    kept = (divergences @ masks.reshape(n_masks, height * width)).view(-1, height, width)  # sum_i D_i M_i
    return _summary(divergences, keeps, kept, p_keep, config)


def _summary(divergences: torch.Tensor, keeps: torch.Tensor, kept: torch.Tensor, p_keep: float,
             config: dict | None = None) -> ISSResult:
    """The maps and intervals from the divergences (B, N), the grids ``keeps`` (N, gh, gw) and the
    kept-mass sums ``kept`` (B, H, W) = sum_i D_i M_i, all computed where the divergences are.

    Both pixel maps come from that one product: sum_i D_i (1 - M_i) = sum_i D_i - sum_i D_i M_i, so
    no (N, H, W) temporaries (1 - M) are built."""
    n_masks = keeps.shape[0]
    keeps = keeps.to(divergences.device, divergences.dtype)
    dropped = 1.0 - keeps  # (N, gh, gw)
    samples = divergences[:, :, None, None] * dropped / (1.0 - p_keep)  # Y_i(g): (B, N, gh, gw)
    grid_map = samples.mean(dim=1)
    spread = samples.std(dim=1, unbiased=True)
    half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df=n_masks - 1)) * spread / n_masks ** 0.5
    contrast = torch.einsum("bn,ngh->bgh", divergences, dropped / (1.0 - p_keep) - keeps / p_keep) / n_masks
    dropped_sum = divergences.sum(dim=1)[:, None, None] - kept  # sum_i D_i (1 - M_i)
    pixel_map = dropped_sum / (n_masks * (1.0 - p_keep))
    contrast_pixels = (dropped_sum / (1.0 - p_keep) - kept / p_keep) / n_masks
    return ISSResult(grid_map, pixel_map, grid_map - half, grid_map + half, contrast, contrast_pixels,
                     divergences, keeps, dict(config or {}))
