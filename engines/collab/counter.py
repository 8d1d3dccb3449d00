"""The AI collaborator of the shape-counting task: a small CNN giving a probability over counts.

In the paper's setting (Noorani et al., ICML 2026, arXiv:2602.17646; ``docs/collab.md``, Method) the
AI's score is s(z, y) = 1 - p_AI(y | z); this module provides p_AI for the pictorial task of
``engines.collab.shapes``. The network is trained by ``python -m engines.collab train-counter``
(``engines.collab.counter_training``); its weights ship in ``assets/collab/counter.pt``.

Architecture (counting-friendly): four conv layers produce a 16x16 map of local features; a
1x1 "density" layer scores each location, and the head **sums** (not averages) over space, so
the evidence for "one more triangle" adds up wherever it is. One temperature, fitted after
training on held-out images (temperature scaling, Guo et al. 2017), calibrates the softmax.

Examples::

    >>> from engines.collab.shapes import generate_batch
    >>> model = load_counter()  # doctest: +SKIP
    >>> probs = predict_proba(model, generate_batch(0, 4).images)  # doctest: +SKIP
    >>> probs.shape  # doctest: +SKIP
    (4, 10)
"""

from __future__ import annotations

import functools
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from torch import nn

from engines.collab.counter_config import CounterConfig
from engines.platform.settings import REPO_ROOT
from engines.platform.torch_device import exact_float32, resolve_device

DEFAULT_WEIGHTS = REPO_ROOT / "assets" / "collab" / "counter.pt"
WEIGHTS_FORMAT = 1  # bump when the saved dictionary's layout changes


def _conv(c_in: int, c_out: int, kernel: int = 3, stride: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, kernel, stride=stride, padding=kernel // 2, bias=False),
            nn.BatchNorm2d(c_out), nn.ReLU(inplace=True)]


class ShapeCounter(nn.Module):
    """Small CNN: (B, 1, H, W) float images in [0, 1] -> (B, n_labels) logits over counts."""

    def __init__(self, config: CounterConfig | None = None) -> None:
        super().__init__()
        self.config = config or CounterConfig()
        c1, c2, c3 = self.config.channels
        self.features = nn.Sequential(
            # A strided 5x5 stem: the images are antialiased, so little is lost at half
            # resolution, and full-resolution feature maps would triple the CPU cost.
            *_conv(1, c1, kernel=5, stride=2),  # (B, c1, H/2, W/2)
            *_conv(c1, c2), nn.MaxPool2d(2),  # (B, c2, H/4, W/4)
            *_conv(c2, c3), *_conv(c3, c3),  # (B, c3, H/4, W/4); receptive field ~ 30 px, a whole shape
        )
        self.density = nn.Sequential(nn.Conv2d(c3, self.config.density, 1), nn.ReLU(inplace=True))
        self.head = nn.Sequential(
            nn.Linear(self.config.density, self.config.hidden), nn.ReLU(inplace=True),
            nn.Dropout(self.config.dropout), nn.Linear(self.config.hidden, self.config.n_labels),
        )
        # Softmax temperature, fitted after training (1 = uncalibrated). A buffer, so it is
        # saved in the state dict but never touched by the optimiser.
        self.register_buffer("temperature", torch.ones(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.density(self.features(x))  # (B, D, h, w)
        # Sum over locations: count evidence adds up. Divided by a constant (16) only to keep
        # the activations in a friendly range; it does not change what the sum can express.
        pooled = h.sum(dim=(2, 3)) / 16.0  # (B, D)
        return self.head(pooled) / self.temperature  # (B, n_labels)


def n_parameters(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)




def save_counter(model: ShapeCounter, path: str | Path) -> Path:
    """Write the model as a plain dictionary (format, config, state dict): loadable with ``weights_only=True``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}
    torch.save({"format": WEIGHTS_FORMAT, "config": asdict(model.config), "state_dict": state}, path)
    return path


def load_counter(path: str | Path | None = None, device: str | torch.device | None = None) -> ShapeCounter:
    """The counting CNN with trained weights, in eval mode; cached per (path, device).

    Args:
        path: a file written by ``save_counter`` (default ``assets/collab/counter.pt``).
        device: torch device; default from the ``HAI_DEVICE`` setting (CPU without a GPU).

    Returns:
        A shared ``ShapeCounter`` -- treat it as read-only (do not train or move it).
    """
    path = Path(path) if path is not None else DEFAULT_WEIGHTS
    return _load_cached(str(path.resolve()), str(resolve_device(device)))


@functools.lru_cache(maxsize=8)
def _load_cached(path: str, device: str) -> ShapeCounter:
    if not Path(path).is_file():
        raise FileNotFoundError(f"no counter weights at {path}; train them with `python -m engines.collab train-counter`")
    saved = torch.load(path, map_location=device, weights_only=True)
    if not isinstance(saved, dict) or saved.get("format") != WEIGHTS_FORMAT:
        raise ValueError(f"{path} is not a counter weights file of format {WEIGHTS_FORMAT}")
    config = saved["config"]
    model = ShapeCounter(CounterConfig(**{**config, "channels": tuple(config["channels"])}))
    model.load_state_dict(saved["state_dict"])
    return model.to(device).eval()


def images_to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 images (n, H, W), (H, W) or (n, 1, H, W) -> float tensor (n, 1, H, W) in [0, 1]."""
    arr = np.asarray(images)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim == 4 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 3:
        raise ValueError(f"expected grayscale images (n, H, W), got shape {np.asarray(images).shape}")
    if arr.dtype != np.uint8:
        raise ValueError(f"expected uint8 images, got {arr.dtype}")
    return torch.from_numpy(arr.astype(np.float32) / 255.0).unsqueeze(1)


@torch.no_grad()
def predict_proba(model: ShapeCounter, images: np.ndarray, batch_size: int = 512) -> np.ndarray:
    """Probabilities over counts for uint8 images, in batches, without gradients, on the model's device.

    On a GPU the network runs with TF32 off (``exact_float32``): the probabilities are the float32
    ones the CPU gives, to float32 rounding, so the shipped held-out scores (made on the CPU) and
    the conformal thresholds computed from them hold on any device (TF32 moves them by about 1e-3).

    Args:
        model: a ``ShapeCounter`` (put in eval mode by ``load_counter``).
        images: uint8 (n, H, W) (or one (H, W) image).
        batch_size: images per forward pass.

    Returns:
        float64 array (n, N_LABELS); each row sums to 1.
    """
    x = images_to_tensor(images)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        with exact_float32():
            out = [torch.softmax(model(x[i:i + batch_size].to(device)).float(), dim=1).cpu()
                   for i in range(0, len(x), batch_size)]
    finally:
        model.train(was_training)
    probs = torch.cat(out).double().numpy() if out else np.zeros((0, model.config.n_labels))
    return probs / probs.sum(axis=1, keepdims=True) if len(probs) else probs


__all__ = [
    "DEFAULT_WEIGHTS", "CounterConfig", "ShapeCounter", "images_to_tensor", "load_counter", "n_parameters",
    "predict_proba", "resolve_device", "save_counter",
]
