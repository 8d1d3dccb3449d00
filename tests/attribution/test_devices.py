"""Every attribution entry point works where the model is (the device rule: inputs follow the model).

Without a GPU the second device is "meta": tensors with shapes and no data, on which torch refuses
to mix with CPU tensors and refuses to copy data back (``to_host`` turns a finished meta result
into zeros). A whole path that runs with the policy on the meta device and CPU inputs therefore
moved every input to the model and copied nothing back before its end: the mixed-device crashes of
a GPU run show here as errors. The same paths on a real GPU: ``test_attribution_cuda.py``.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
from torch import nn

from engines.attribution import baselines, explain
from engines.attribution.adapters import lerobot_policy, token_action_policy
from engines.attribution.baselines import METHODS, attribute, rise
from engines.attribution.configs import ExperimentConfig
from engines.attribution.env import sample_scene
from engines.attribution.experiment import run_experiment
from engines.attribution.faithfulness import cell_scores, curves, faithfulness_correlation
from engines.attribution.iss import iss
from engines.attribution.policies import ReachPolicy, load_policy, save_policy, torch_policy
from engines.attribution.policy_set import SHIPPED_DIR
from engines.attribution.replacements import replacement
from engines.platform import settings
from engines.platform.torch_device import model_device

META = torch.device("meta")
iss_module = importlib.import_module("engines.attribution.iss")  # the package's ``iss`` is the function


@pytest.fixture
def on_meta() -> ReachPolicy:
    return ReachPolicy().to(META).eval()


@pytest.fixture
def cuda_setting(monkeypatch):
    """``HAI_DEVICE=cuda`` (on a machine without a GPU, any work sent there fails)."""
    monkeypatch.setenv("HAI_DEVICE", "cuda")
    settings.reset_settings()
    yield
    settings.reset_settings()


def _image(seed: int = 0) -> torch.Tensor:
    return torch.rand((1, 3, 64, 64), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------- ISS


def test_iss_runs_where_the_policy_is_not_where_the_setting_says(cuda_setting):
    seen = []

    def policy(images):
        seen.append(images.device)
        return images.mean(dim=(1, 2, 3)).reshape(-1, 1, 1)

    result = iss(policy, _image(), grid=(4, 4), n_masks=20, batch_size=8)
    assert set(seen) == {torch.device("cpu")}  # a policy that does not say: where the images are
    assert result.pixel_map.device.type == "cpu"


def test_iss_with_the_policy_on_another_device_keeps_all_work_there_until_the_maps_are_done(on_meta, monkeypatch):
    upsampled_on = []
    real_upsample = iss_module.upsample

    def spy(keeps, size):
        upsampled_on.append(keeps.device)
        return real_upsample(keeps, size)

    monkeypatch.setattr(iss_module, "upsample", spy)
    progress = []
    context_seen = []

    def with_context(images, state):
        context_seen.append(state.device)
        return on_meta(images)

    policy = torch_policy(on_meta)
    result = iss(policy, _image(), grid=(7, 7), n_masks=130, batch_size=64, progress=lambda d, t: progress.append(d))
    # Every batch ran (a copy back per batch would have failed on the meta device at the first).
    assert progress == [64, 128, 130]
    assert upsampled_on == [META]  # the masks are made on the model's device, from grids drawn on the CPU
    assert result.pixel_map.shape == (1, 64, 64) and result.pixel_map.device.type == "cpu"
    assert result.keeps.device.type == "cpu" and result.divergences.shape == (1, 130)
    # Tensor context goes to the model's device too.
    from engines.attribution.policies import ModelPolicy

    iss(ModelPolicy(with_context, on_meta), _image(), grid=(2, 2), n_masks=4,
        context={"state": torch.zeros(1, 2)})
    assert set(context_seen) == {META}


def test_iss_gives_the_same_masks_for_a_seed_on_every_device(on_meta):
    on_cpu = iss(torch_policy(ReachPolicy().eval()), _image(), grid=(5, 5), n_masks=12, seed=4)
    elsewhere = iss(torch_policy(on_meta), _image(), grid=(5, 5), n_masks=12, seed=4)
    assert torch.equal(on_cpu.keeps, elsewhere.keeps)


def test_a_policy_that_returns_a_view_of_its_input_is_not_overwritten_by_the_next_batch():
    # The intervened images of every batch share one buffer; a policy whose actions are a view of its
    # input must still give each batch its own divergences.
    def view_policy(images):
        return images[:, :1, :1, :2]  # (n, 1, 1, 2): a view of the buffer

    image = torch.rand((1, 3, 4, 4), generator=torch.Generator().manual_seed(1))
    small = iss(view_policy, image, grid=(2, 2), n_masks=6, batch_size=2, baseline="mean")
    whole = iss(view_policy, image, grid=(2, 2), n_masks=6, batch_size=6, baseline="mean")
    assert torch.allclose(small.divergences, whole.divergences)


# ---------------------------------------------------------------- the baselines and faithfulness


@pytest.mark.parametrize("method", [m for m in METHODS if m not in ("feature_ablation", "shapley")])
def test_each_baseline_runs_with_the_model_on_another_device_and_returns_a_cpu_map(on_meta, method):
    pixel_map = attribute(method, on_meta, _image(), n_masks=20)
    assert pixel_map.shape == (64, 64) and pixel_map.device.type == "cpu"


@pytest.mark.parametrize("method", ["feature_ablation", "shapley"])
def test_captums_cell_methods_get_the_image_baseline_and_cells_on_the_models_device(on_meta, monkeypatch, method):
    # Captum reads the feature mask's values (which a meta tensor has not): check what it is handed.
    from captum.attr import FeatureAblation, ShapleyValueSampling

    handed = {}

    def fake_attribute(self, inputs, baselines=None, feature_mask=None, **kwargs):
        handed.update(inputs=inputs.device, baselines=baselines.device, cells=feature_mask.device,
                      output=self.forward_func(inputs).device)
        return torch.zeros_like(inputs)

    monkeypatch.setattr(FeatureAblation if method == "feature_ablation" else ShapleyValueSampling, "attribute",
                        fake_attribute)
    pixel_map = attribute(method, on_meta, _image(), n_masks=20)
    assert handed == {"inputs": META, "baselines": META, "cells": META, "output": META}
    assert pixel_map.device.type == "cpu"


def test_rise_alone_moves_the_image_to_the_policy(on_meta):
    assert rise(on_meta, _image(), n_masks=10).device.type == "cpu"


def test_faithfulness_builds_its_replaced_images_on_the_policys_device(on_meta):
    image = _image()
    replaced = replacement(image, "blur")  # on the CPU, as a caller makes it
    scores = cell_scores(torch.rand(64, 64), (7, 7))
    result = curves(torch_policy(on_meta), image, scores, replaced, (7, 7))
    assert len(result.morf) == len(result.lerf) == len(result.insertion) == 50
    value = faithfulness_correlation(torch_policy(on_meta), image, scores, replaced, (7, 7), runs=10)
    assert np.isnan(value)  # the meta policy's divergences come back as zeros: no correlation


def test_cell_scores_of_a_map_made_on_another_device_are_computed_on_the_cpu():
    scores = cell_scores(torch.ones(64, 64, device=META), (7, 7))
    assert scores.device.type == "cpu" and scores.shape == (49,)


# ---------------------------------------------------------------- a frame, an episode, the experiment


def test_a_frame_and_an_episode_are_explained_with_the_model_on_another_device(on_meta):
    frame = explain.scene_frame(1.0, 3)
    result = explain.explain_frame(on_meta, frame, baselines=("occlusion", "rise"), n_masks=20, n_boot=5)
    assert result.iss_map.shape == (64, 64) and set(result.baselines) == {"occlusion", "rise"}
    assert set(result.curves) == {"iss", "occlusion", "rise"}
    scene = sample_scene(np.random.default_rng(0), explain.TaskConfig(), 1.0)
    episode = explain.explain_episode(on_meta, scene, n_masks=8, time_stride=10)
    assert episode.pixel_maps.shape[0] == episode.steps + 1


def test_policies_load_onto_the_setting_s_device(monkeypatch, data_dir):
    from engines.attribution import policies

    asked = []

    def resolve(device=None):
        asked.append(device)
        return META if device is None else torch.device(device)

    monkeypatch.setattr(policies, "resolve_device", resolve)
    folder = data_dir / "datasets" / "attribution"
    folder.mkdir(parents=True)
    path = save_policy(ReachPolicy(), folder / "p.pt", {})
    model, _ = load_policy(path)
    assert asked == [None] and model_device(model) == META
    model, _ = load_policy(path, device="cpu")  # an explicit device wins
    assert model_device(model) == torch.device("cpu")


def test_the_experiment_loads_its_policies_onto_the_setting_s_device_and_runs_there(monkeypatch):
    from engines.attribution import policies

    monkeypatch.setattr(policies, "resolve_device",
                        lambda device=None: META if device is None else torch.device(device))
    config = ExperimentConfig(rhos=(0.5, 1.0), seeds=(0, 1), nmr_frames=1, n_masks=8, episodes=2,
                              methods=("iss", "iss_contrast", "occlusion"), permutations=5, bootstrap=5,
                              policy_dir=str(SHIPPED_DIR))
    result = run_experiment(config)
    assert [p["policy"] for p in result["policies"]] == ["loaded"] * 4


def test_training_asks_the_setting_for_its_device(monkeypatch):
    from engines.attribution import train
    from engines.attribution.configs import TrainConfig

    asked = []

    def resolve(device=None):
        asked.append(device)
        return torch.device("cpu")

    monkeypatch.setattr(train, "resolve_device", resolve)
    result = train.train_policy(TrainConfig(rho=1.0, seed=0, frames=64, epochs=1, batch_size=32))
    assert asked == [None] and model_device(result.model) == torch.device("cpu")


# ---------------------------------------------------------------- adapters


class RecordingFlow(nn.Module):
    """A LeRobot-shaped policy with weights: records the devices of what it is handed."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.devices: set = set()

    def predict_action_chunk(self, batch, noise=None):
        images = batch["observation.images.top"]
        self.devices |= {images.device, batch["observation.state"].device, noise.device}
        return images.mean(dim=(1, 2, 3))[:, None, None] * self.scale + noise


def test_the_lerobot_adapter_hands_images_state_and_noise_to_the_policy_s_device():
    model = RecordingFlow().to(META)
    policy = lerobot_policy(model, state=torch.zeros(1, 4), noise_shape=(1, 3, 2))
    assert model_device(policy) == META
    result = iss(policy, _image(), grid=(2, 2), n_masks=4)
    assert model.devices == {META} and result.pixel_map.device.type == "cpu"


class RecordingTokens(nn.Module):
    """A vision-to-text stand-in with weights: logits on the input's device, devices recorded."""

    def __init__(self, vocab: int = 300):
        super().__init__()
        self.config = type("Config", (), {"vocab_size": vocab, "image_size": 8, "is_encoder_decoder": False})()
        self.bias = nn.Parameter(torch.zeros(vocab))
        self.devices: set = set()

    def forward(self, pixel_values, input_ids):
        self.devices |= {pixel_values.device, input_ids.device}
        return type("Out", (), {"logits": self.bias.expand(pixel_values.shape[0], input_ids.shape[1], -1)})()


def test_the_token_adapter_hands_pixels_and_prompt_to_the_model_s_device():
    model = RecordingTokens().to(META)
    policy = token_action_policy(model, prompt_ids=torch.tensor([[1, 2]]), action_dim=2, low=[0, 0], high=[1, 1])
    assert model_device(policy) == META
    actions = policy(torch.rand(2, 3, 16, 16))
    assert actions.shape == (2, 1, 2) and actions.device == META and model.devices == {META}


def test_baselines_module_keeps_the_device_rule_for_a_plain_callable_too():
    # A plain function says nothing about its device: the image stays where it is.
    seen = []

    def policy(images):
        seen.append(images.device)
        return images.mean(dim=(1, 2, 3)).reshape(-1, 1, 1)

    baselines.rise(policy, _image(), n_masks=4)
    assert set(seen) == {torch.device("cpu")}
