"""Policy adapters with tiny models: a LeRobot-shaped policy with fixed noise, and a transformers
vision-to-text model with OpenVLA-style action tokens (built from config, randomly initialised)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engines.attribution.adapters import bin_centres, lerobot_policy, token_action_policy
from engines.attribution.iss import iss


class FlowPolicy(nn.Module):
    """LeRobot's contract: predict_action_chunk(batch, noise=None) -> (B, chunk, action_dim). The
    action is the mean square of the left half of the image plus the state plus the noise."""

    def __init__(self):
        super().__init__()
        self.seen: list[dict] = []

    def predict_action_chunk(self, batch: dict, noise: torch.Tensor | None = None) -> torch.Tensor:
        self.seen.append({key: (value.shape if torch.is_tensor(value) else value) for key, value in batch.items()})
        images = batch["observation.images.front"]
        left = (images[..., : images.shape[-1] // 2] ** 2).mean(dim=(1, 2, 3))  # (B,)
        if noise is None:
            noise = torch.randn(images.shape[0], 3, 2)
        return left[:, None, None] + batch["observation.state"].sum(-1)[:, None, None] + noise


def test_a_lerobot_policy_gets_its_batch_keys_and_one_fixed_noise():
    model = FlowPolicy()
    policy = lerobot_policy(model, camera="observation.images.front", state=torch.ones(1, 4), task="pick the cube",
                            noise_shape=(1, 3, 2), seed=5)
    images = torch.rand(6, 3, 16, 16)
    first, again = policy(images), policy(images)
    assert first.shape == (6, 3, 2) and torch.equal(first, again)  # the same noise every call
    seen = model.seen[0]
    assert seen["observation.state"] == (6, 4) and seen["task"] == ["pick the cube"] * 6
    # Same image, same noise: identical actions across the batch; the state adds 4.
    expected = (images[:, :, :, :8] ** 2).mean(dim=(1, 2, 3))[:, None, None] + 4.0
    noise = torch.randn((1, 3, 2), generator=torch.Generator().manual_seed(5))
    assert torch.allclose(first, expected + noise)


def test_with_fixed_noise_iss_credits_only_what_the_policy_reads():
    policy = lerobot_policy(FlowPolicy(), camera="observation.images.front", state=torch.zeros(1, 1),
                            noise_shape=(1, 3, 2))
    image = torch.zeros(1, 3, 28, 28)
    image[..., 4:10, 4:10] = 1.0  # a bright patch in the left half, which the policy reads
    image[..., 4:10, 18:24] = 1.0  # and one in the right half, which it ignores
    result = iss(policy, image, grid=(4, 4), n_masks=200, seed=1)
    left_patch = result.contrast_pixel_map[0, 4:10, 4:10].mean()
    right_patch = result.contrast_pixel_map[0, 4:10, 18:24].mean()
    assert left_patch > 10 * abs(right_patch)
    # Without fixed noise, an unchanged image already moves the actions: the map would be noise.
    loose = lerobot_policy(FlowPolicy(), camera="observation.images.front", state=torch.zeros(1, 1))
    assert not torch.equal(loose(image), loose(image))


def test_noise_shapes_are_checked():
    with pytest.raises(ValueError, match=r"noise_shape must be \(1, chunk, action_dim\)"):
        lerobot_policy(FlowPolicy(), noise_shape=(2, 3, 2))

    class NoNoise:
        def predict_action_chunk(self, batch):
            return torch.zeros(1, 1, 2)

    with pytest.raises(ValueError, match="takes no noise argument"):
        lerobot_policy(NoNoise(), noise_shape=(1, 1, 2))


def test_openvla_bins_are_the_midpoints_of_256_edges_over_minus_one_to_one():
    centres = bin_centres(256)
    assert centres.shape == (255,)
    assert centres[0].item() == pytest.approx(-1 + 1 / 255) and centres[127].item() == pytest.approx(0.0, abs=1e-6)


class ChosenToken(nn.Module):
    """A stand-in whose next-token logits peak at one chosen token id: checks the token -> action map."""

    def __init__(self, vocab: int, token: int):
        super().__init__()
        self.config = type("Config", (), {"vocab_size": vocab, "image_size": 8, "is_encoder_decoder": False})()
        self.token = token

    def forward(self, pixel_values, input_ids):
        logits = torch.zeros(pixel_values.shape[0], input_ids.shape[1], self.config.vocab_size)
        logits[..., self.token] = 10.0
        return type("Out", (), {"logits": logits})()


@pytest.mark.parametrize(("token", "normalised"), [(999, -1 + 1 / 255), (1000 - 128, 0.0), (1000 - 255, 1 - 1 / 255)])
def test_an_action_token_becomes_its_bins_centre_in_the_checkpoints_units(token, normalised):
    # Vocabulary of 1000: token 999 is bin 1 (centre index 0), token 872 bin 128 (centre 0), token 745 bin 255.
    policy = token_action_policy(ChosenToken(1000, token), prompt_ids=torch.tensor([[1, 2]]), action_dim=2,
                                 low=[0.0, -2.0], high=[10.0, 2.0])
    action = policy(torch.rand(3, 3, 16, 16))
    assert action.shape == (3, 1, 2)
    expected = [0.5 * (normalised + 1) * 10.0, 0.5 * (normalised + 1) * 4.0 - 2.0]
    assert torch.allclose(action, torch.tensor(expected).expand(3, 1, 2), atol=1e-5)


def _tiny_vision_to_text():
    from transformers import GPT2Config, GPT2LMHeadModel, VisionEncoderDecoderModel, ViTConfig, ViTModel

    torch.manual_seed(0)
    encoder = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=32, num_hidden_layers=1,
                                 num_attention_heads=2, intermediate_size=64), add_pooling_layer=False)
    decoder = GPT2LMHeadModel(GPT2Config(vocab_size=400, n_embd=32, n_layer=1, n_head=2, n_positions=32,
                                         add_cross_attention=True))
    return VisionEncoderDecoderModel(encoder=encoder, decoder=decoder).eval()


def test_a_transformers_vision_to_text_model_with_action_tokens_runs_under_iss():
    model = _tiny_vision_to_text()
    common = {"prompt_ids": torch.tensor([[0]]), "action_dim": 3, "low": [-1.0, -1.0, 0.0], "high": [1.0, 1.0, 1.0],
              "n_bins": 64}
    greedy = token_action_policy(model, **common)
    expected = token_action_policy(model, **common, readout="expected")
    image = torch.rand(1, 3, 24, 24)
    action = greedy(image)
    assert action.shape == (1, 1, 3) and torch.equal(action, greedy(image))  # greedy: deterministic
    assert bool(((action >= torch.tensor([-1.0, -1.0, 0.0])) & (action <= 1.0)).all())
    # Every greedy value is one of the bin centres, unnormalised; the expected readout lies between them.
    centres = bin_centres(64)
    assert torch.isclose(centres, action[0, 0, 0]).any()  # dimension 0 spans [-1, 1]: no unnormalising
    result = iss(expected, image, grid=(3, 3), n_masks=24, seed=0)
    assert result.pixel_map.shape == (1, 24, 24) and float(result.pixel_map.sum()) > 0


def test_a_wrong_readout_or_statistics_are_refused():
    with pytest.raises(ValueError, match="readout must be"):
        token_action_policy(ChosenToken(10, 9), prompt_ids=torch.tensor([[0]]), action_dim=1, low=[0], high=[1],
                            readout="sample")
    with pytest.raises(ValueError, match="low and high need 2 values each"):
        token_action_policy(ChosenToken(10, 9), prompt_ids=torch.tensor([[0]]), action_dim=2, low=[0], high=[1])
