"""NMR on maps whose answer is known: by hand on tiny maps, chance for a uniform map, near 0 for a
policy that reads only the target, near 1 for one that reads only a nuisance cue."""

from __future__ import annotations

import math

import pytest
import torch

from engines.attribution import episode_nmr, iss, nmr, nmr_with_interval

SIZE, GRID = 16, (4, 4)  # 4 x 4 pixel cells


def _block(top: int, left: int, size: int = 4) -> torch.Tensor:
    mask = torch.zeros(SIZE, SIZE, dtype=torch.bool)
    mask[top:top + size, left:left + size] = True
    return mask


TARGET = _block(4, 4)  # the task-relevant region: one grid cell
CUE = _block(12, 12)  # a nuisance patch in the corner


def _reader(region: torch.Tensor):
    """A policy whose 2-D action is the mean colour of ``region`` (and whatever moves it)."""

    def policy(images: torch.Tensor) -> torch.Tensor:
        inside = images[:, :, region]  # (B, 3, pixels)
        return torch.stack([inside[:, 0].mean(-1), inside[:, 1:].mean((-2, -1))], dim=-1)[:, None, :]

    return policy


def _scene() -> torch.Tensor:
    generator = torch.Generator().manual_seed(0)
    image = 0.2 + 0.1 * torch.rand((1, 3, SIZE, SIZE), generator=generator)  # a dim textured background
    image[0, :, TARGET] = torch.tensor([0.9, 0.1, 0.1])[:, None]
    image[0, :, CUE] = torch.tensor([0.1, 0.9, 0.1])[:, None]
    return image


def test_mass_and_top_k_by_hand():
    attribution = torch.tensor([[4.0, 3.0], [2.0, 1.0]])
    relevant = torch.tensor([[True, False], [False, False]])
    assert nmr(attribution, relevant).value == pytest.approx(6 / 10)  # (3 + 2 + 1) / 10 on nuisance
    assert nmr(attribution, relevant, k=25).value == 0.0  # the top pixel (4) is relevant
    assert nmr(attribution, relevant, k=50).value == pytest.approx(0.5)  # top 2: 4 (relevant) and 3
    assert nmr(attribution, relevant, k=1).value == 0.0  # at least one pixel, rounded up
    value = nmr(attribution, relevant)
    assert (value.chance, value.lift) == (0.75, pytest.approx(0.6 / 0.75))
    # Negative attributions carry no mass.
    assert nmr(torch.tensor([[4.0, -3.0], [0.0, 0.0]]), relevant).value == 0.0


def test_a_uniform_map_scores_the_nuisance_share_of_the_image():
    value = nmr(torch.ones(SIZE, SIZE), TARGET)
    assert value.value == pytest.approx(1 - 16 / 256) == value.chance and value.lift == pytest.approx(1.0)


def test_a_policy_that_reads_only_the_target_has_an_nmr_near_zero():
    result = iss(_reader(TARGET), _scene(), grid=GRID, n_masks=400, seed=0)
    # Upstream's NMR@k on the plain map: its top pixels are on the target (at most 1 of the 13 off it,
    # the Monte-Carlo noise of 400 masks).
    assert nmr(result.pixel_map[0], TARGET, k=5).value <= 1 / 13
    # The contrast map's mass stays well under chance; bilinear masks spill real credit onto the
    # target's neighbours (dropping a neighbour cell blurs the target's edge pixels) and the other
    # cells add Monte-Carlo noise, so it is not 0.
    value = nmr_with_interval(result, TARGET, n_boot=200)
    assert value.lift < 0.8 and value.ci_low <= value.value <= value.ci_high < value.chance
    # The plain map's mass sits near chance: every pixel carries the offset of the other cells.
    assert nmr(result.pixel_map[0], TARGET).lift > 0.9


def test_a_policy_that_reads_only_a_nuisance_cue_has_an_nmr_near_one():
    result = iss(_reader(CUE), _scene(), grid=GRID, n_masks=400, seed=0)
    value = nmr(result.contrast_pixel_map[0], TARGET)
    assert value.value > 0.95 and value.lift > 1.0
    assert nmr(result.pixel_map[0], TARGET, k=10).value == 1.0


def test_the_contrast_map_finds_the_cell_the_policy_reads():
    result = iss(_reader(CUE), _scene(), grid=GRID, n_masks=400, seed=0)
    assert int(result.contrast_grid_map[0].argmax()) == 3 * 4 + 3  # the bottom-right cell holds the cue
    assert int(result.grid_map[0].argmax()) == 3 * 4 + 3


def test_episode_nmr_is_the_mean_over_frames_with_zero_maps_left_out():
    relevant = torch.tensor([[True, False]])
    maps = torch.stack([torch.tensor([[1.0, 1.0]]), torch.tensor([[1.0, 0.0]]), torch.zeros(1, 2)])
    value = episode_nmr(maps, relevant.expand(3, 1, 2))
    assert value.value == pytest.approx((0.5 + 0.0) / 2) and value.chance == 0.5


def test_mismatched_shapes_and_bad_k_are_refused():
    with pytest.raises(ValueError, match="must have the same shape"):
        nmr(torch.ones(4, 4), torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"k is a percentage of pixels in \(0, 100\], got 0"):
        nmr(torch.ones(4, 4), TARGET[:4, :4], k=0)
    assert math.isnan(nmr(torch.zeros(2, 2), torch.ones(2, 2, dtype=torch.bool)).value)
