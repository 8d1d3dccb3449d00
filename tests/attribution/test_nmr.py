"""NMR on maps whose answer is known: by hand on tiny maps, chance for a uniform map, near 0 for a
policy that reads only the target, near 1 for one that reads only a nuisance cue."""

from __future__ import annotations

import math

import pytest
import torch

from engines.attribution import episode_nmr, iss, nmr, nmr_with_interval
from engines.attribution.iss import summarise, upsample

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


def test_errors_name_the_shapes_and_the_bad_values():
    with pytest.raises(ValueError, match=r"^the map \(4, 4\) and the relevance mask \(3, 4\) must have the same shape$"):
        nmr(torch.ones(4, 4), torch.ones(3, 4, dtype=torch.bool))
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match=r"^the map has NaN or infinite values$"):
            nmr(torch.tensor([[1.0, bad]]), torch.tensor([[True, False]]))


def test_a_half_precision_map_is_summed_without_overflow():
    # 60000 + 60000 overflows float16 (max 65504); the ratio is still one half.
    attribution = torch.tensor([[60000.0, 60000.0]], dtype=torch.float16)
    assert nmr(attribution, torch.tensor([[True, False]])).value == pytest.approx(0.5)


def test_top_k_counts_pixels_by_rounding_up_and_accepts_all_of_them():
    attribution = torch.tensor([[4.0, 3.0], [2.0, 1.0]])
    relevant = torch.tensor([[True, False], [False, False]])
    # 25.2% of 4 pixels is 1.008 pixels: rounded up, the top 2 (4 relevant, 3 nuisance).
    assert nmr(attribution, relevant, k=25.2).value == pytest.approx(0.5)
    # k = 100 takes every pixel: the nuisance share of the image.
    full = nmr(attribution, relevant, k=100)
    assert full.value == pytest.approx(0.75) and full.k == 100
    with pytest.raises(ValueError, match="k is a percentage"):
        nmr(attribution, relevant, k=100.5)


def test_ties_in_top_k_go_to_the_earlier_pixel():
    # A flat 100 x 100 map: the top 1% (100 pixels) is the first row, the only nuisance row.
    relevant = torch.ones(100, 100, dtype=torch.bool)
    relevant[0] = False
    assert nmr(torch.ones(100, 100), relevant, k=1).value == 1.0


def test_a_wholly_relevant_image_has_no_chance_level_and_no_lift():
    value = nmr(torch.tensor([[1.0, 2.0]]), torch.ones(1, 2, dtype=torch.bool))
    assert value.value == 0.0 and value.chance == 0.0 and math.isnan(value.lift)


def _summary(keeps: torch.Tensor, divergences: torch.Tensor, p_keep: float, width: int, config: dict | None = None):
    masks = upsample(keeps, (1, width))
    return summarise(divergences, keeps, masks, p_keep, config=config)


def test_the_interval_collapses_onto_the_point_when_every_mask_is_the_same():
    # Two copies of the keep grid [1, 0] on a 1 x 4 image: bilinear masks M = (1, 0.75, 0.25, 0), so
    # every resample rebuilds the same map. Pixel 2 is relevant.
    relevant = torch.tensor([[False, False, True, False]])
    keeps = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]]])
    result = _summary(keeps, torch.ones(1, 2), 0.5, 4, config={"p_keep": 0.5})
    # Contrast, p = 0.5: (1 - M) / 0.5 - M / 0.5 = 2 - 4M = (-2, -1, 1, 2) -> mass (0, 0, 1, 2): 2 / 3 off pixel 2.
    value = nmr_with_interval(result, relevant, n_boot=50)
    assert value.value == pytest.approx(2 / 3) and value.ci_low == pytest.approx(2 / 3) == value.ci_high
    assert value.k is None
    # Plain, p = 0.5: (1 - M) / 0.5 = (0, 0.5, 1.5, 2): 2.5 of 4 off pixel 2.
    plain = nmr_with_interval(result, relevant, contrast=False, n_boot=50)
    assert plain.value == pytest.approx(0.625) and plain.ci_low == pytest.approx(0.625) == plain.ci_high
    # NMR@25 reads the plain map by default: its top pixel (3) is nuisance.
    top = nmr_with_interval(result, relevant, k=25, n_boot=50)
    assert (top.value, top.ci_low, top.ci_high, top.k) == (1.0, 1.0, 1.0, 25)
    # Without p_keep in the config the run's default 0.3 applies: (1 - M) / 0.7 - M / 0.3 gives
    # (-10/3, -15/7, 5/21, 10/7) -> mass 5/21 on pixel 2 and 30/21 on pixel 3: 6/7 off pixel 2.
    default = nmr_with_interval(_summary(keeps, torch.ones(1, 2), 0.3, 4), relevant, n_boot=50)
    assert default.value == pytest.approx(6 / 7) and default.ci_low == pytest.approx(6 / 7) == default.ci_high


def test_the_interval_is_the_percentile_range_of_the_resampled_ratios():
    # Three masks of a 1 x 2 image (M = Z), plain map, pixel 1 relevant: mask 0 drops pixel 1, masks 1
    # and 2 drop pixel 0, each D = 1. A resample with J copies of mask 0 has NMR (3 - J) / 3, J ~ Bin(3, 1/3):
    # P(NMR = 0) = 1/27 (3.7%), P(NMR = 1/3) = 6/27, P(NMR = 2/3) = 12/27, P(NMR = 1) = 8/27.
    relevant = torch.tensor([[False, True]])
    keeps = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 1.0]]])
    result = _summary(keeps, torch.ones(1, 3), 0.5, 2, config={"p_keep": 0.5})
    value = nmr_with_interval(result, relevant, contrast=False, n_boot=10_000)
    assert value.value == pytest.approx(2 / 3)
    assert (value.ci_low, value.ci_high) == (0.0, 1.0)  # the 2.5% tail lies inside the 3.7% at 0
    # A 90.9% interval cuts 4.55% off each end: more than the 3.7% at 0, so its low end is 1/3.
    narrower = nmr_with_interval(result, relevant, contrast=False, n_boot=10_000, confidence=0.909)
    assert narrower.ci_low == pytest.approx(1 / 3) and narrower.ci_high == 1.0


def test_every_mask_can_be_drawn_and_resamples_without_a_ratio_are_left_out():
    relevant = torch.tensor([[False, True]])
    keeps = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])
    # Only mask 0 (D = 1) moves the action; it drops pixel 1, so every resample that holds it has NMR 0
    # and those of mask 1 alone (D = 0) give an all-zero map, no ratio.
    value = nmr_with_interval(_summary(keeps, torch.tensor([[1.0, 0.0]]), 0.5, 2), relevant, contrast=False,
                              n_boot=100)
    assert (value.value, value.ci_low, value.ci_high) == (0.0, 0.0, 0.0)
    # No mask moves the action: no ratio anywhere, and no interval.
    none = nmr_with_interval(_summary(keeps, torch.zeros(1, 2), 0.5, 2), relevant, n_boot=20)
    assert math.isnan(none.value) and none.ci_low is None and none.ci_high is None


def test_the_bootstrap_is_reproducible_from_its_own_seed():
    generator = torch.Generator().manual_seed(7)
    keeps = (torch.rand((20, 1, 4), generator=generator) < 0.5).float()
    result = _summary(keeps, torch.rand((1, 20), generator=generator), 0.5, 8, config={"p_keep": 0.5})
    relevant = torch.tensor([[False, False, True, True, False, False, False, False]])
    torch.manual_seed(1)
    first = nmr_with_interval(result, relevant, n_boot=200, seed=4)
    torch.manual_seed(2)  # the global generator plays no part
    again = nmr_with_interval(result, relevant, n_boot=200, seed=4)
    other = nmr_with_interval(result, relevant, n_boot=200, seed=5)
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    # The defaults: 1000 resamples from seed 0.
    assert nmr_with_interval(result, relevant) == nmr_with_interval(result, relevant, n_boot=1000, seed=0)


def test_episode_nmr_with_top_k_and_its_lift():
    relevant = torch.tensor([[[True, False]]]).expand(2, 1, 2)
    maps = torch.tensor([[[1.0, 3.0]], [[2.0, 1.0]]])
    # k = 50: one pixel per frame; frame 0's top is nuisance (1), frame 1's is relevant (0).
    top = episode_nmr(maps, relevant, k=50)
    assert (top.value, top.chance, top.lift, top.k) == (0.5, 0.5, 1.0, 50)
    # Mass: 3/4 and 1/3 on nuisance; lift = value / chance.
    mass = episode_nmr(maps, relevant)
    assert mass.value == pytest.approx((3 / 4 + 1 / 3) / 2) and mass.lift == pytest.approx(3 / 4 + 1 / 3)
    # Wholly relevant frames: no chance level, no lift; all-zero maps: no value at all.
    whole = episode_nmr(maps, torch.ones(2, 1, 2, dtype=torch.bool))
    assert whole.value == 0.0 and whole.chance == 0.0 and math.isnan(whole.lift)
    assert math.isnan(episode_nmr(torch.zeros(2, 1, 2), relevant).value)


def test_episode_nmr_wants_matching_time_stacks():
    with pytest.raises(ValueError, match=r"^maps and masks must both be \(T, H, W\), got \(2, 2\) and \(2, 2\)$"):
        episode_nmr(torch.ones(2, 2), torch.ones(2, 2, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"got \(2, 1, 2\) and \(3, 1, 2\)$"):
        episode_nmr(torch.ones(2, 1, 2), torch.ones(3, 1, 2, dtype=torch.bool))
