"""The attribution paths on a GPU: the model on CUDA, inputs made on the CPU as a caller makes them.

Marked ``cuda``: skipped without a CUDA device, run by ``make gpu-check``. Values are compared with
the CPU's under ``exact_float32`` (TF32 off), where float32 on both sides agrees to rounding; the
same paths without a GPU, on the meta device: ``test_devices.py``.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

from engines.attribution import explain
from engines.attribution.adapters import lerobot_policy
from engines.attribution.baselines import METHODS, attribute
from engines.attribution.env import sample_scene
from engines.attribution.faithfulness import cell_scores, curves
from engines.attribution.iss import iss
from engines.attribution.policies import load_policy, torch_policy
from engines.attribution.policy_set import SHIPPED_DIR
from engines.attribution.replacements import replacement
from engines.platform.torch_device import exact_float32, model_device

pytestmark = pytest.mark.cuda

POLICY = SHIPPED_DIR / "reach-rho1-seed0.pt"


@pytest.fixture(scope="module")
def models():
    cpu, _ = load_policy(POLICY, device="cpu")
    gpu, _ = load_policy(POLICY, device="cuda")
    return cpu, gpu


def _frame() -> torch.Tensor:
    return torch.from_numpy(explain.scene_frame(1.0, 5).image)[None]


def _close(gpu: torch.Tensor, cpu: torch.Tensor, relative: float) -> bool:
    return float((gpu - cpu).abs().max()) <= relative * max(float(cpu.abs().max()), 1e-12)


def test_iss_on_cuda_matches_the_cpu_to_1e_5_relative(models):
    cpu, gpu = models
    with exact_float32():
        on_cpu = iss(torch_policy(cpu), _frame(), n_masks=300, seed=2)
        on_gpu = iss(torch_policy(gpu), _frame(), n_masks=300, seed=2)
    assert on_gpu.pixel_map.device.type == "cpu" and torch.equal(on_gpu.keeps, on_cpu.keeps)
    assert _close(on_gpu.pixel_map, on_cpu.pixel_map, 1e-5)
    assert _close(on_gpu.contrast_pixel_map, on_cpu.contrast_pixel_map, 1e-5)
    assert _close(on_gpu.divergences, on_cpu.divergences, 1e-5)


def test_iss_beyond_a_block_of_masks_matches_one_block(models, monkeypatch):
    _, gpu = models
    module = importlib.import_module("engines.attribution.iss")  # the package's ``iss`` is the function
    with exact_float32():
        whole = iss(torch_policy(gpu), _frame(), n_masks=256, seed=1)
        monkeypatch.setattr(module, "MASK_BLOCK_BYTES", 64 * 64 * 4 * 64)  # blocks of 64 masks
        blocked = iss(torch_policy(gpu), _frame(), n_masks=256, seed=1)
    assert _close(blocked.pixel_map, whole.pixel_map, 1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_each_baseline_runs_on_cuda_and_matches_the_cpu(models, method):
    cpu, gpu = models
    with exact_float32():
        on_cpu = attribute(method, cpu, _frame(), n_masks=100, seed=3)
        on_gpu = attribute(method, gpu, _frame(), n_masks=100, seed=3)
    assert on_gpu.device.type == "cpu" and torch.isfinite(on_gpu).all()
    assert _close(on_gpu, on_cpu, 1e-4)


def test_faithfulness_curves_on_cuda_match_the_cpu(models):
    cpu, gpu = models
    image = _frame()
    replaced = replacement(image, "blur")
    scores = cell_scores(torch.rand(64, 64, generator=torch.Generator().manual_seed(0)), (7, 7))
    with exact_float32():
        on_cpu = curves(torch_policy(cpu), image, scores, replaced, (7, 7))
        on_gpu = curves(torch_policy(gpu), image.cuda(), scores.cuda(), replaced, (7, 7))  # inputs anywhere
    assert np.allclose(on_gpu.morf, on_cpu.morf, rtol=1e-4, atol=1e-9)
    assert np.allclose(on_gpu.insertion, on_cpu.insertion, rtol=1e-4, atol=1e-9)


def test_a_frame_and_an_episode_are_explained_on_cuda(models):
    cpu, gpu = models
    frame = explain.scene_frame(1.0, 7)
    with exact_float32():
        on_cpu = explain.explain_frame(cpu, frame, baselines=("occlusion",), n_masks=100, n_boot=20)
        on_gpu = explain.explain_frame(gpu, frame, baselines=("occlusion",), n_masks=100, n_boot=20)
    assert on_gpu.nmr_mass.value == pytest.approx(on_cpu.nmr_mass.value, rel=1e-4)
    scene = sample_scene(np.random.default_rng(1), explain.TaskConfig(), 1.0)
    episode = explain.explain_episode(gpu, scene, n_masks=50)
    assert episode.pixel_maps.shape[0] == episode.steps + 1 and np.isfinite(episode.pixel_maps).all()


def test_the_lerobot_adapter_runs_a_gpu_policy_on_cpu_images():
    class Flow(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.ones(()))

        def predict_action_chunk(self, batch, noise=None):
            images = batch["observation.images.top"]
            return images.mean(dim=(1, 2, 3))[:, None, None] * self.scale + batch["observation.state"].sum() + noise

    policy = lerobot_policy(Flow().cuda(), state=torch.ones(1, 2), noise_shape=(1, 3, 2))
    assert model_device(policy).type == "cuda"
    result = iss(policy, torch.rand(1, 3, 32, 32), grid=(4, 4), n_masks=40)
    assert result.pixel_map.device.type == "cpu" and torch.isfinite(result.pixel_map).all()
