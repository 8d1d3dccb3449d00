"""Policies: callables from images (B, 3, H, W) in [0, 1] to action chunks (B, horizon, dim).

The built-in one is a small CNN trained by behaviour cloning on the reaching task
(``engines.attribution.train``). Adapters wrap other policies in the same shape: a plain torch
module, and a stochastic policy given one fixed noise, so that every masked image is judged with
the same draw and the action changes come from the intervention alone (upstream's LeRobot adapter
repeats one fixed flow-matching noise for the same reason).

Devices (``engines.platform.torch_device``): a policy is loaded onto the ``HAI_DEVICE`` setting's
device (CUDA when present, by default); from then on its inputs follow it. A wrapped policy
(``ModelPolicy``) moves the images and tensor context it is given to its model's device and
answers ``model_device(policy)`` by asking the model, so ISS, the baselines and the faithfulness
curves put their images and masks where the model is.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from engines.platform.torch_device import model_device, resolve_device

ARCHITECTURE = "reach-cnn-v1"


class ReachPolicy(nn.Module):
    """Four strided convolutions, a linear head, tanh: about 50k parameters for 64 x 64 images."""

    def __init__(self, horizon: int = 4, action_dim: int = 2, width: int = 24):
        super().__init__()
        self.horizon, self.action_dim, self.width = horizon, action_dim, width
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 5, stride=2, padding=2), nn.ReLU(),
            nn.Conv2d(width, width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(2 * width, 2 * width, 3, stride=2, padding=1), nn.ReLU(),
        )
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(2 * width * 16, horizon * action_dim))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.head(self.features(images))).view(-1, self.horizon, self.action_dim)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def save_policy(model: ReachPolicy, path: str | Path, meta: dict) -> Path:
    """The weights as a state dict of tensors (``torch.save``), with a JSON sidecar of the architecture and ``meta``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({name: tensor.detach().cpu() for name, tensor in model.state_dict().items()}, path)
    sidecar = {"architecture": ARCHITECTURE, "horizon": model.horizon, "action_dim": model.action_dim,
               "width": model.width, **meta}
    path.with_suffix(".json").write_text(json.dumps(sidecar, indent=1, sort_keys=True), encoding="utf-8")
    return path


class PolicyFileError(ValueError):
    """Weights that cannot be the built-in architecture; the message says what is wrong."""


def load_policy(path: str | Path, *, label: str | None = None,
                device: str | torch.device | None = None) -> tuple[ReachPolicy, dict]:
    """The policy of ``path`` and its sidecar (``<name>.json`` beside it, when there is one), on
    ``device`` (default: the ``HAI_DEVICE`` setting's, ``resolve_device``).

    ``path`` must be a ``.pt``/``.pth`` file inside the folders the app owns
    (``engines.attribution.paths.policy_path``): a shipped policy, a job's, or an upload kept by
    ``store_upload``. Weights are read as tensors only (``weights_only=True``): a file that holds
    code is refused, never run. ``label`` names the file in messages (an upload's own name).

    Raises:
        FileRefused: a path outside the owned folders, or not a weights file there.
        PolicyFileError: not a weights file, or tensors of other names or shapes than the architecture's.
        RunFileError: a sidecar that is not a policy's sidecar (naming the field).
    """
    from engines.attribution.paths import policy_path
    from engines.attribution.run_files import read_sidecar
    from engines.platform.files import owned_path

    path = policy_path(path)
    name = label or path.name
    sidecar_path = path.with_suffix(".json")
    meta = {}
    if sidecar_path.exists():
        sidecar_path = owned_path(sidecar_path, what="the policy's sidecar", suffixes=(".json",))
        meta = read_sidecar(sidecar_path, name=f"{name}'s sidecar {sidecar_path.name}")
    return _load(path, name, meta, resolve_device(device)), meta


def _load(source, name: str, meta: dict, device) -> ReachPolicy:
    model = ReachPolicy(meta.get("horizon", 4), meta.get("action_dim", 2), meta.get("width", 24))
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - pickle errors, truncated files, code: all are "not weights"
        raise PolicyFileError(f"{name}: not a weights file of tensors ({type(exc).__name__}: "
                              f"{str(exc).splitlines()[0][:200]})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise PolicyFileError(f"{name}: expected a dict of tensors (a state dict)")
    expected = {key: tuple(t.shape) for key, t in model.state_dict().items()}
    found = {key: tuple(t.shape) for key, t in state.items()}
    if expected != found:
        missing = sorted(set(expected) - set(found))
        wrong = sorted(key for key in set(expected) & set(found) if expected[key] != found[key])
        detail = (f"missing {missing[0]}" if missing else
                  f"{wrong[0]} has shape {found[wrong[0]]}, expected {expected[wrong[0]]}" if wrong else
                  f"unexpected {sorted(set(found) - set(expected))[0]}")
        raise PolicyFileError(f"{name}: these weights are not the {ARCHITECTURE} policy ({detail})")
    model.load_state_dict(state)
    return model.to(device).eval()


class ModelPolicy:
    """A policy that runs ``model``: ``function(images, **context)`` with the images and the tensor
    context moved to the model's device first (the device rule: inputs follow the model).

    ``device`` asks the model on every call, so a model moved after wrapping is followed too, and
    ``model_device(policy)`` works on the wrapper as on the model."""

    def __init__(self, function: Callable[..., torch.Tensor], model) -> None:
        self.function, self.model = function, model

    @property
    def device(self) -> torch.device | None:
        return model_device(self.model)

    def __call__(self, images: torch.Tensor, **context) -> torch.Tensor:
        device = self.device
        if device is not None:
            images = images.to(device)
            context = {name: value.to(device) if isinstance(value, torch.Tensor) else value
                       for name, value in context.items()}
        return self.function(images, **context)


def torch_policy(model: nn.Module) -> ModelPolicy:
    """A torch module as a policy: evaluation mode, no gradients, inputs moved to its device."""
    model.eval()

    def forward(images: torch.Tensor, **context) -> torch.Tensor:
        with torch.no_grad():
            return model(images, **context)

    return ModelPolicy(forward, model)


def fixed_noise_policy(sample: Callable[..., torch.Tensor], noise: torch.Tensor,
                       model=None) -> Callable[..., torch.Tensor]:
    """A stochastic policy ``sample(images, noise=..., **context)`` with one fixed noise tensor (1, ...),
    repeated over the batch: every masked image meets the same draw. Given the ``model`` that
    ``sample`` runs, the images, context and noise go to its device; else the noise follows the images."""

    def policy(images: torch.Tensor, **context) -> torch.Tensor:
        with torch.no_grad():
            # Under ModelPolicy the images are on the model's device already: the noise joins them.
            drawn = noise.to(images.device)
            return sample(images, noise=drawn.expand(images.shape[0], *noise.shape[1:]), **context)

    return policy if model is None else ModelPolicy(policy, model)
