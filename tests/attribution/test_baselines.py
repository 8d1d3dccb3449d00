"""The Captum baselines and RISE on a linear policy, where each method's answer can be written down.

With a grid as large as the image every cell is one pixel and D(dropped set d) = (sum_h c_h d_h)^2,
c_h the action change when pixel h alone takes the replacement image (the mean colour here)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from engines.attribution.baselines import attribute, cell_mask, shapley_samples_for
from engines.attribution.policies import ReachPolicy

SIZE = 2  # a 2 x 2 image, a 2 x 2 grid: 4 cells


class Linear(nn.Module):
    def __init__(self, weights: torch.Tensor):
        super().__init__()
        self.weights = nn.Parameter(weights, requires_grad=False)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return (images * self.weights).sum(dim=(1, 2, 3)).reshape(-1, 1, 1)


def _setup(seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    image = torch.rand((1, 3, SIZE, SIZE), generator=generator)
    weights = torch.randn((3, SIZE, SIZE), generator=generator)
    c = ((image[0].mean(dim=(-2, -1), keepdim=True) - image[0]) * weights).sum(0).flatten().double().numpy()
    return image, Linear(weights), weights, c


def _map(method: str, **kwargs) -> tuple[np.ndarray, np.ndarray, torch.Tensor, torch.Tensor]:
    image, model, weights, c = _setup()
    result = attribute(method, model, image, grid=(SIZE, SIZE), baseline="mean", **kwargs)
    return result.flatten().double().numpy(), c, image, weights


@pytest.mark.parametrize("method", ["feature_ablation", "occlusion"])
def test_ablating_one_cell_scores_its_own_squared_effect(method):
    values, c, _, _ = _map(method)
    assert np.allclose(values, c ** 2, rtol=1e-4)


def test_shapley_values_of_the_quadratic_game_are_c_g_times_the_sum():
    # Marginal gain of dropping g after a random set S: c_g^2 + 2 c_g a_S, with E[a_S] = sum_{h != g} c_h / 2.
    values, c, _, _ = _map("shapley", n_masks=5 * 2000)  # 2,000 permutations of the 4 cells
    assert np.allclose(values, c * c.sum(), atol=0.05 * np.abs(c * c.sum()).max())
    again, _, _, _ = _map("shapley", n_masks=5 * 2000)
    assert np.array_equal(values, again)  # seeded: the same permutations every time


def test_rise_scores_the_negative_divergence_when_a_cell_is_kept():
    # RISE's score is high when the evidence is kept: f = -D, and
    # E[D | z_u = 1] = q sum_{h != u} c_h^2 + q^2 sum_{h != h', both != u} c_h c_h' (q = 0.7 dropped).
    values, c, _, _ = _map("rise", n_masks=20_000, batch_size=5_000)
    q = 0.7
    expected = []
    for u in range(len(c)):
        others = np.delete(c, u)
        expected.append(-(q * np.sum(others ** 2) + q ** 2 * (others.sum() ** 2 - np.sum(others ** 2))))
    assert np.allclose(values, expected, atol=0.03 * max(abs(e) for e in expected))
    # The cell with the largest effect |c_u| ranks first: keeping it keeps the action.
    assert np.argmax(values) == np.argmax(np.abs(c))


def test_saliency_and_integrated_gradients_of_a_linear_policy():
    values, _, image, weights = _map("saliency")
    assert np.allclose(values, weights.abs().sum(0).flatten().numpy(), rtol=1e-5)
    values, _, image, weights = _map("integrated_gradients", ig_steps=8)
    baseline = image[0].mean(dim=(-2, -1), keepdim=True)
    expected = ((image[0] - baseline) * weights).abs().sum(0).flatten().numpy()  # exact for a linear map
    assert np.allclose(values, expected, rtol=1e-4)


def test_grad_cam_on_the_reach_policy_is_a_non_negative_map_of_the_image_size():
    torch.manual_seed(0)
    result = attribute("grad_cam", ReachPolicy(), torch.rand(1, 3, 64, 64))
    assert result.shape == (64, 64) and float(result.min()) >= 0.0


def test_budgets_and_cells_match_iss():
    assert shapley_samples_for(500, (7, 7)) == 10  # 10 permutations x 50 passes = 500 forward passes
    mask = cell_mask((2, 3), (4, 6))[0, 0]
    assert mask.tolist() == [[0, 0, 1, 1, 2, 2], [0, 0, 1, 1, 2, 2], [3, 3, 4, 4, 5, 5], [3, 3, 4, 4, 5, 5]]
    with pytest.raises(ValueError, match="unknown method 'lime'"):
        attribute("lime", ReachPolicy(), torch.rand(1, 3, 64, 64))
