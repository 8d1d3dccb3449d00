"""Adapters: other kinds of policies in ISS's shape, images (B, 3, H, W) in [0, 1] -> actions (B, horizon, dim).

- ``lerobot_policy``: a LeRobot policy (``predict_action_chunk(batch, noise=...)`` on a batch keyed
  ``observation.images.<camera>``, ``observation.state``, ``task``), with one fixed flow-matching
  noise repeated over the batch, as upstream's ``policies/lerobot_pi05.py`` does, so that action
  changes come from the intervention alone (``docs/attribution.md``, Method, "Interventional
  masking and the ISS estimator"). LeRobot itself is not a dependency (it needs torchvision): any
  object with that method works, lerobot's included.
- ``token_action_policy``: a transformers vision-to-text model whose actions are tokens, as
  OpenVLA: each action dimension is one of ``n_bins`` tokens at the end of the vocabulary, the
  bin centres span [-1, 1] and unnormalise with the checkpoint's q01/q99 statistics. Decoded
  greedily, one token per dimension; ``readout="expected"`` returns the mean of each dimension under
  the model's distribution over the bins instead of the chosen bin, so that small interventions
  give small action changes (the arg-max readout is a step function of the image).

Both return a ``ModelPolicy``: the images, and what the adapter adds (state, noise, prompt ids, the
normalisation and the bins), go to the wrapped model's device, wherever the images come from;
``model_device`` of the adapter is the model's (``engines.platform.torch_device``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F

from engines.attribution.policies import ModelPolicy

Policy = Callable[..., torch.Tensor]


def lerobot_policy(policy, *, camera: str = "observation.images.top", state: torch.Tensor | None = None,
                   task: str | None = None, noise_shape: Sequence[int] | None = None, seed: int = 0) -> Policy:
    """``policy.predict_action_chunk`` as an ISS policy: the images go in as ``camera``, ``state``
    (1, state_dim) and ``task`` are repeated for every image, and, when ``noise_shape`` (1, chunk,
    action_dim) is given, one noise drawn from ``seed`` is repeated for every image (drawn on the
    CPU, so the same noise on every device). A policy that is no torch module and has no ``device``
    gets the images where they are."""
    accepts_noise = "noise" in inspect.signature(policy.predict_action_chunk).parameters
    if noise_shape is not None and not accepts_noise:
        raise ValueError("noise_shape given, but this policy's predict_action_chunk takes no noise argument")
    noise = None
    if noise_shape is not None:
        if len(noise_shape) != 3 or noise_shape[0] != 1:
            raise ValueError(f"noise_shape must be (1, chunk, action_dim), got {tuple(noise_shape)}")
        noise = torch.randn(tuple(noise_shape), generator=torch.Generator().manual_seed(seed))

    def run(images: torch.Tensor, **context) -> torch.Tensor:
        # ModelPolicy has moved the images to the policy's device: what is added here joins them.
        count, device = images.shape[0], images.device
        batch = {camera: images}
        if state is not None:
            batch["observation.state"] = state.to(device).expand(count, *state.shape[1:])
        if task is not None:
            batch["task"] = [task] * count
        batch.update(context)
        kwargs = {} if noise is None else {"noise": noise.to(device).expand(count, *noise.shape[1:])}
        with torch.no_grad():
            actions = policy.predict_action_chunk(batch, **kwargs)
        return actions if actions.ndim == 3 else actions[:, None]  # one step -> a chunk of one

    return ModelPolicy(run, policy)


def bin_centres(n_bins: int = 256) -> torch.Tensor:
    """OpenVLA's action bins: ``n_bins`` edges evenly over [-1, 1], the n_bins - 1 midpoints as values."""
    edges = torch.linspace(-1.0, 1.0, n_bins)
    return (edges[:-1] + edges[1:]) / 2


def token_action_policy(model, *, prompt_ids: torch.Tensor, action_dim: int, low: Sequence[float],
                        high: Sequence[float], n_bins: int = 256, image_size: int | None = None,
                        image_mean: Sequence[float] = (0.5, 0.5, 0.5), image_std: Sequence[float] = (0.5, 0.5, 0.5),
                        readout: str = "argmax") -> Policy:
    """A transformers model (``model(pixel_values=..., input_ids=...)`` or, encoder-decoder,
    ``decoder_input_ids``) whose last ``n_bins`` vocabulary tokens are action bins, as an ISS policy
    returning (B, 1, action_dim) in the units ``low``/``high`` (q01/q99) set.

    Token t of a vocabulary of V means bin V - t (OpenVLA's ``ActionTokenizer``); its value is that
    bin's centre, clipped to the n_bins - 1 centres. Images are resized to ``image_size`` (the
    model's, when None) and normalised with ``image_mean``/``image_std``.
    """
    if readout not in ("argmax", "expected"):
        raise ValueError(f"readout must be 'argmax' or 'expected', got {readout!r}")
    config = model.config
    vocab = config.get_text_config().vocab_size if hasattr(config, "get_text_config") else config.vocab_size
    if getattr(config, "is_encoder_decoder", False):
        vocab = config.decoder.vocab_size
    size = image_size or _image_size(config)
    centres = bin_centres(n_bins)
    low_t, high_t = torch.tensor(low, dtype=torch.float32), torch.tensor(high, dtype=torch.float32)
    if low_t.shape != (action_dim,) or high_t.shape != (action_dim,):
        raise ValueError(f"low and high need {action_dim} values each (one per action dimension)")
    mean = torch.tensor(image_mean, dtype=torch.float32)[None, :, None, None]
    std = torch.tensor(image_std, dtype=torch.float32)[None, :, None, None]
    text_key = "decoder_input_ids" if getattr(config, "is_encoder_decoder", False) else "input_ids"
    # Bin index of each of the last n_bins - 1 tokens (token V - 1 - j is bin j + 1 -> centre j).
    action_tokens = torch.arange(vocab - (n_bins - 1), vocab)
    token_centre = centres[torch.clamp(vocab - action_tokens - 1, 0, n_bins - 2)]

    def run(images: torch.Tensor, **context) -> torch.Tensor:
        device = images.device  # the model's: ModelPolicy moved the images there
        pixels = F.interpolate(images.float(), size=(size, size), mode="bilinear", align_corners=False)
        pixels = (pixels - mean.to(device)) / std.to(device)
        tokens = prompt_ids.to(device).expand(images.shape[0], -1)
        values = []
        with torch.no_grad():
            for _ in range(action_dim):
                logits = model(pixel_values=pixels, **{text_key: tokens}, **context).logits[:, -1]
                action_logits = logits[:, action_tokens.to(device)]  # only action tokens may come out
                choice = action_logits.argmax(dim=-1)
                if readout == "argmax":
                    values.append(token_centre.to(device)[choice])
                else:
                    values.append(torch.softmax(action_logits, dim=-1) @ token_centre.to(device))
                tokens = torch.cat([tokens, action_tokens.to(device)[choice][:, None]], dim=1)
        normalised = torch.stack(values, dim=-1)  # (B, action_dim) in [-1, 1]
        actions = 0.5 * (normalised + 1.0) * (high_t.to(device) - low_t.to(device)) + low_t.to(device)
        return actions[:, None]

    return ModelPolicy(run, model)


def _image_size(config) -> int:
    for part in ("vision_config", "encoder"):
        sub = getattr(config, part, None)
        if sub is not None and getattr(sub, "image_size", None):
            return int(sub.image_size)
    if getattr(config, "image_size", None):
        return int(config.image_size)
    raise ValueError("the model's config names no image_size: pass image_size=")
