"""Deletion, insertion and faithfulness correlation on a linear policy: every point of each curve
is (sum of the replaced cells' effects)^2, written down by hand."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from engines.attribution.faithfulness import cell_scores, curves, faithfulness_correlation, paired_test
from engines.attribution.replacements import mean_image

GRID = (2, 2)


def _setup():
    generator = torch.Generator().manual_seed(4)
    image = torch.rand((1, 3, 2, 2), generator=generator)
    weights = torch.randn((3, 2, 2), generator=generator)
    replaced = mean_image(image)
    c = ((replaced[0] - image[0]) * weights).sum(0).flatten().double().numpy()

    def policy(images):
        return (images * weights).sum(dim=(1, 2, 3)).reshape(-1, 1, 1)

    return image, replaced, policy, c


def test_the_curves_are_the_squared_sums_of_the_cells_replaced():
    image, replaced, policy, c = _setup()
    scores = torch.tensor([0.4, 0.1, 0.3, 0.2])  # order: cells 0, 2, 3, 1
    result = curves(policy, image, scores, replaced, GRID)
    order = [0, 2, 3, 1]
    expected_morf = [c[order[:k]].sum() ** 2 for k in range(5)]
    expected_lerf = [c[order[::-1][:k]].sum() ** 2 for k in range(5)]
    expected_insertion = [c[[g for g in range(4) if g not in order[:k]]].sum() ** 2 for k in range(5)]
    assert np.allclose(result.morf, expected_morf, rtol=1e-5)
    assert np.allclose(result.lerf, expected_lerf, rtol=1e-5)
    assert np.allclose(result.insertion, expected_insertion, rtol=1e-5)
    assert result.morf_auc == pytest.approx(np.mean(expected_morf), rel=1e-5)
    assert result.gap == pytest.approx(np.mean(expected_morf) - np.mean(expected_lerf), rel=1e-5)


def test_the_true_effects_rank_better_than_their_reverse():
    image, replaced, policy, c = _setup()
    truth = torch.from_numpy(np.abs(c))
    good, bad = curves(policy, image, truth, replaced, GRID), curves(policy, image, -truth, replaced, GRID)
    assert good.gap > 0 > bad.gap
    assert good.insertion_auc <= bad.insertion_auc


def test_faithfulness_correlation_is_high_for_the_effects_and_refuses_a_flat_map():
    generator = torch.Generator().manual_seed(1)
    image = torch.rand((1, 3, 4, 4), generator=generator)
    weights = torch.rand((3, 4, 4), generator=generator)  # one sign: sums of effects order D

    def policy(images):
        return (images * weights).sum(dim=(1, 2, 3)).reshape(-1, 1, 1)

    replaced = torch.zeros_like(image)
    effects = (image[0] * weights).sum(0).flatten()
    assert faithfulness_correlation(policy, image, effects, replaced, (4, 4), runs=60) > 0.9
    assert np.isnan(faithfulness_correlation(policy, image, torch.ones(16), replaced, (4, 4), runs=20))


def test_cell_scores_average_each_cell():
    pixel_map = torch.arange(16.0).view(4, 4)
    assert cell_scores(pixel_map, (2, 2)).tolist() == [2.5, 4.5, 10.5, 12.5]


def test_paired_test_reports_the_median_difference_and_a_p_value():
    a = [0.9, 0.8, 0.85, 0.95, 0.7, 0.88, 0.91, 0.79]
    b = [x - 0.1 - 0.01 * i for i, x in enumerate(a)]
    result = paired_test(a, b)
    assert result.median_difference == pytest.approx(0.135) and result.p_value < 0.01 and result.frames == 8
    assert paired_test([1.0, 2.0], [1.0, 2.0]).p_value == 1.0
    with pytest.raises(ValueError, match="equal-length"):
        paired_test([1.0], [1.0, 2.0])
