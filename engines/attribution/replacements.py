"""What an intervened region is replaced with: blur (ISS's default), the mean image, noisy imputation.

ISS intervenes on a region by replacing it with a baseline image b(x) (``docs/attribution.md``,
Method, "Interventional masking and the ISS estimator"): ``x~ = M * x + (1 - M) * b(x)``.
Upstream blurs with ``cv2.GaussianBlur(orig, (0, 0), 10)``.
A faithfulness comparison needs other baselines too, or blur favours the method that was built on
it; the mean image and a noisy imputation (ROAD's remedy for the out-of-distribution artefact of
plain masking, Rong et al. 2022) are the two others.

Every function takes images (B, 3, H, W) as floats in [0, 1] and returns the baseline of the same
shape, independent of any mask, so one baseline serves every mask of a run.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

BLUR_SIGMA = 10.0  # upstream's default
NOISE_STD = 0.05  # noisy imputation: Gaussian noise on the blurred image (ROAD adds noise to its imputation)
REPLACEMENTS = ("blur", "mean", "noisy")


def gaussian_kernel(sigma: float, radius: int) -> torch.Tensor:
    """A normalised 1-D Gaussian of ``2 * radius + 1`` taps."""
    offsets = torch.arange(-radius, radius + 1, dtype=torch.float64)
    weights = torch.exp(-0.5 * (offsets / sigma) ** 2)
    return (weights / weights.sum()).float()


def gaussian_blur(images: torch.Tensor, sigma: float = BLUR_SIGMA) -> torch.Tensor:
    """Separable Gaussian blur with mirrored borders, as upstream's ``cv2.GaussianBlur(img, (k, k), sigma)``
    with ``k = 2 * round(3 * sigma) + 1``.

    OpenCV mirrors the border without repeating the edge pixel (BORDER_REFLECT_101, torch's
    "reflect"); on an image smaller than the kernel the radius is cut to what the mirror can reach.
    """
    if sigma <= 0:
        return images.clone()
    height, width = images.shape[-2:]
    radius = min(round(3 * sigma), height - 1, width - 1)
    if radius < 1:
        return images.clone()
    kernel = gaussian_kernel(sigma, radius).to(images.device, images.dtype)
    channels = images.shape[1]
    flat = images.reshape(-1, channels, height, width)
    horizontal = kernel.view(1, 1, 1, -1).repeat(channels, 1, 1, 1)
    vertical = kernel.view(1, 1, -1, 1).repeat(channels, 1, 1, 1)
    out = F.conv2d(F.pad(flat, (radius, radius, 0, 0), mode="reflect"), horizontal, groups=channels)
    out = F.conv2d(F.pad(out, (0, 0, radius, radius), mode="reflect"), vertical, groups=channels)
    return out.reshape(images.shape)


def mean_image(images: torch.Tensor, dataset_mean: torch.Tensor | None = None) -> torch.Tensor:
    """The data set's mean image when given (3, H, W), else each image's mean colour."""
    if dataset_mean is not None:
        return dataset_mean.to(images.device, images.dtype).expand_as(images).clone()
    return images.mean(dim=(-2, -1), keepdim=True).expand_as(images).clone()


def noisy_imputation(images: torch.Tensor, *, sigma: float = BLUR_SIGMA, noise_std: float = NOISE_STD,
                     seed: int = 0) -> torch.Tensor:
    """The blurred image plus fixed Gaussian noise, clipped to [0, 1] (seeded: the same noise for every mask)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    noise = torch.randn(images.shape, generator=generator).to(images.device, images.dtype)
    return (gaussian_blur(images, sigma) + noise_std * noise).clamp(0.0, 1.0)


def replacement(images: torch.Tensor, name: str, *, sigma: float = BLUR_SIGMA, seed: int = 0,
                dataset_mean: torch.Tensor | None = None) -> torch.Tensor:
    """The baseline ``name`` (one of ``REPLACEMENTS``) of ``images``."""
    if name == "blur":
        return gaussian_blur(images, sigma)
    if name == "mean":
        return mean_image(images, dataset_mean)
    if name == "noisy":
        return noisy_imputation(images, sigma=sigma, seed=seed)
    raise ValueError(f"unknown baseline {name!r}; choose one of {', '.join(REPLACEMENTS)}")
