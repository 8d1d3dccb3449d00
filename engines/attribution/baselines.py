"""Standard attribution methods on the same policy and grid as ISS, through Captum, plus RISE.

What each explains (``docs/attribution.md``, Method, "Baselines compared"): a vector action chunk
has no single output, so the perturbation methods explain the scalar D(x') = mean squared change of
the chunk against the unmasked one, exactly ISS's divergence, and report how much D grows when a
cell is replaced (Captum's FeatureAblation and Occlusion return f(x) - f(x'), which is -D(x'); the
sign is turned so that larger means more important, like ISS). D and its gradient are both zero at x
itself, so the gradient methods (Saliency, IntegratedGradients, Grad-CAM) explain each action output
in turn and sum the absolute attributions over outputs; IntegratedGradients integrates from the same
replacement image ISS uses.

Budget matching: Occlusion (window and stride of one cell), FeatureAblation (the cells as the
feature mask) and ShapleyValueSampling (n_samples permutations, each G + 1 forward passes) all
perturb the same G cells as ISS; ``shapley_samples_for(n_masks, grid)`` gives the permutation
count whose forward passes match an ISS run of ``n_masks`` masks. RISE (Petsiuk et al. 2018) is
not in Captum: its estimator is E[D(x ⊙ M) * M(u)] / E[M] with the same masks as ISS, implemented
here from ISS's batched evaluation.

Devices: the image, its replacement, the cells' feature mask and RISE's masks go to the policy's
device (``engines.platform.torch_device.inputs_to``); every map comes back on the CPU.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from engines.attribution.iss import bernoulli_grids, divergence, upsample
from engines.attribution.replacements import BLUR_SIGMA, replacement
from engines.platform.torch_device import inputs_to, to_host

METHODS = ("occlusion", "feature_ablation", "shapley", "integrated_gradients", "saliency", "grad_cam", "rise")
GRADIENT_METHODS = ("integrated_gradients", "saliency", "grad_cam")


def cell_mask(grid: tuple[int, int], size: tuple[int, int]) -> torch.Tensor:
    """(1, 1, H, W) integer feature mask: the index of each pixel's grid cell (nearest, as Captum wants)."""
    rows = torch.div(torch.arange(size[0]) * grid[0], size[0], rounding_mode="floor")
    cols = torch.div(torch.arange(size[1]) * grid[1], size[1], rounding_mode="floor")
    return (rows[:, None] * grid[1] + cols[None, :])[None, None]


def shapley_samples_for(n_masks: int, grid: tuple[int, int]) -> int:
    """Permutations of ShapleyValueSampling whose forward passes (G + 1 each) match ``n_masks``."""
    return max(1, round(n_masks / (grid[0] * grid[1] + 1)))


class DivergenceModel(nn.Module):
    """x' -> D(x') against the policy's action on ``reference`` (one image): Captum's scalar output."""

    def __init__(self, policy: Callable[..., torch.Tensor], reference: torch.Tensor,
                 action_scale: torch.Tensor | None = None):
        super().__init__()
        self.policy, self.action_scale = policy, action_scale
        with torch.no_grad():
            self.reference = policy(inputs_to(policy, reference))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return divergence(self.policy(inputs_to(self.policy, images)), self.reference, self.action_scale)


class FlatActions(nn.Module):
    """x -> the action chunk flattened to (B, horizon * dim), for per-output gradient methods."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.module(images).flatten(1)


def _per_output(method, images: torch.Tensor, n_outputs: int, **kwargs) -> torch.Tensor:
    """Sum over action outputs of |attribution| (a vector action has no single target)."""
    total = None
    for target in range(n_outputs):
        part = method.attribute(images, target=target, **kwargs).abs()
        total = part if total is None else total + part
    return total


def attribute(method: str, policy_module: nn.Module, image: torch.Tensor, *, grid: tuple[int, int] = (7, 7),
              n_masks: int = 500, p_keep: float = 0.3, baseline: str = "blur", seed: int = 0,
              blur_sigma: float = BLUR_SIGMA, batch_size: int = 64, ig_steps: int = 32,
              grad_cam_layer: nn.Module | None = None) -> torch.Tensor:
    """The pixel map (H, W), on the CPU, of ``method`` for one image (1, 3, H, W) and a torch-module
    policy; the work runs on the policy's device, wherever the image comes from.

    Perturbation methods replace cells with the ``baseline`` image ISS uses; the map is summed
    over colour channels (gradient methods: absolute values).
    """
    from captum.attr import (
        FeatureAblation,
        IntegratedGradients,
        LayerAttribution,
        LayerGradCam,
        Occlusion,
        Saliency,
        ShapleyValueSampling,
    )

    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if image.ndim != 4 or image.shape[0] != 1:
        raise ValueError(f"one image (1, 3, H, W) at a time, got shape {tuple(image.shape)}")
    policy_module.eval()
    image = inputs_to(policy_module, image)
    if method == "rise":
        return rise(policy_module, image, grid=grid, n_masks=n_masks, p_keep=p_keep, seed=seed, baseline=baseline,
                    blur_sigma=blur_sigma, batch_size=batch_size)
    height, width = image.shape[-2:]
    replaced = replacement(image, baseline, sigma=blur_sigma, seed=seed)
    if method in GRADIENT_METHODS:
        flat = FlatActions(policy_module)
        with torch.no_grad():
            n_outputs = flat(image).shape[1]
        inputs = image.clone().requires_grad_(True)
        if method == "saliency":
            return to_host(_per_output(Saliency(flat), inputs, n_outputs, abs=True)[0].sum(0))
        if method == "integrated_gradients":
            return to_host(_per_output(IntegratedGradients(flat), inputs, n_outputs, baselines=replaced,
                                       n_steps=ig_steps)[0].sum(0))
        layer = grad_cam_layer if grad_cam_layer is not None else _last_conv(policy_module)
        cam = _per_output(LayerGradCam(flat, layer), inputs, n_outputs, relu_attributions=True)
        return to_host(LayerAttribution.interpolate(cam, (height, width), interpolate_mode="bilinear")[0, 0])
    model = DivergenceModel(policy_module, image)
    cells = cell_mask(grid, (height, width)).to(image.device)
    with torch.no_grad():
        if method == "occlusion":
            window = (3, max(1, height // grid[0]), max(1, width // grid[1]))
            attribution = Occlusion(model).attribute(image, sliding_window_shapes=window, strides=window,
                                                     baselines=replaced, perturbations_per_eval=batch_size)
        elif method == "feature_ablation":
            attribution = FeatureAblation(model).attribute(image, baselines=replaced, feature_mask=cells,
                                                           perturbations_per_eval=batch_size)
        else:
            # Captum draws the permutations from torch's global generator: seed a private fork of it,
            # so the map is reproducible and the caller's random state is left alone.
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(seed)
                attribution = ShapleyValueSampling(model).attribute(
                    image, baselines=replaced, feature_mask=cells,
                    n_samples=shapley_samples_for(n_masks, grid), perturbations_per_eval=batch_size)
    # Captum: D(x) - D(x') = -D(x') for ablation and occlusion (D(x) = 0); Shapley's values are the
    # marginal contributions of letting a cell keep its original pixels, -(gain in D when replaced).
    return to_host(-attribution[0].sum(0) / image.shape[1])


def _last_conv(module: nn.Module) -> nn.Module:
    convolutions = [m for m in module.modules() if isinstance(m, nn.Conv2d)]
    if not convolutions:
        raise ValueError("Grad-CAM needs a convolution layer; pass grad_cam_layer")
    return convolutions[-1]


@torch.no_grad()
def rise(policy: Callable[..., torch.Tensor], image: torch.Tensor, *, grid: tuple[int, int] = (7, 7),
         n_masks: int = 500, p_keep: float = 0.3, seed: int = 0, baseline: str = "blur",
         blur_sigma: float = BLUR_SIGMA, batch_size: int = 64) -> torch.Tensor:
    """RISE's map E[f | pixel u kept] ~ sum_i f_i M_i(u) / (n_masks p_keep), with the same masks as ISS.

    RISE's score f must be high when the evidence is kept (a class probability in the original);
    for an action it is the negative divergence, f_i = -D_i: keeping what the policy reads leaves
    its action close to the original. (With D itself the map would credit the pixels whose keeping
    goes with the largest changes, the opposite ranking.) With the same masks the map ranks pixels
    as ISS does, since sum_i D_i M_i = sum_i D_i - sum_i D_i (1 - M_i): RISE here is ISS's
    kept-side estimate, not an independent method.

    The masks are made on the policy's device from grids drawn on the CPU (the same on every
    device); the map comes back on the CPU."""
    image = inputs_to(policy, image)
    height, width = image.shape[-2:]
    keeps = bernoulli_grids(n_masks, tuple(grid), p_keep, seed)
    masks = upsample(keeps.to(image.device), (height, width))
    replaced = replacement(image, baseline, sigma=blur_sigma, seed=seed)
    reference = policy(image)
    total = torch.zeros(height, width, device=image.device)
    for start in range(0, n_masks, batch_size):
        chunk = masks[start:start + batch_size, None]
        values = divergence(policy(image[0] * chunk + replaced[0] * (1.0 - chunk)), reference)
        total -= torch.einsum("n,nhw->hw", values.float(), chunk[:, 0])
    return to_host(total / (n_masks * p_keep))
