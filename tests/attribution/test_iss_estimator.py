"""ISS against answers worked out by hand: exact expectations over every mask of a small grid,
the closed form of a linear policy's cell weights, and the reproducibility the API promises.

Images as large as their grid make each upsampled mask the grid itself (bilinear resizing to
the same size is the identity), so D of every keep pattern can be written down directly.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from scipy import ndimage, stats

from engines.attribution import iss
from engines.attribution.iss import bernoulli_grids, divergence, summarise, upsample
from engines.attribution.replacements import gaussian_blur

P_KEEP = 0.3
Q = 1.0 - P_KEEP  # probability that a cell is dropped (replaced)


def _linear_policy(weights: torch.Tensor):
    """action = sum over pixels and channels of w * x, one step, one dimension."""

    def policy(images: torch.Tensor) -> torch.Tensor:
        return (images * weights).sum(dim=(1, 2, 3)).reshape(-1, 1, 1)

    return policy


def _cell_effects(image: torch.Tensor, weights: torch.Tensor) -> np.ndarray:
    """c_g: how much the action moves when cell g (one pixel here) is replaced by the mean colour."""
    baseline = image.mean(dim=(-2, -1), keepdim=True)
    return ((baseline - image) * weights).sum(dim=0).flatten().double().numpy()


def _exact_iss(c: np.ndarray) -> np.ndarray:
    """E[D (1 - z_g)] / (1 - p) by enumerating every keep pattern z (D = (sum_h c_h d_h)^2, d = 1 - z)."""
    expected = np.zeros(len(c))
    for dropped in itertools.product([0, 1], repeat=len(c)):
        d = np.array(dropped)
        probability = np.prod(np.where(d == 1, Q, P_KEEP))
        divergence = float(c @ d) ** 2
        expected += probability * divergence * d / Q
    return expected


def _setup(seed: int = 0, size: int = 2):
    generator = torch.Generator().manual_seed(seed)
    image = torch.rand((3, size, size), generator=generator)
    weights = torch.randn((3, size, size), generator=generator)
    return image, weights


def test_the_mean_over_seeds_matches_the_exact_expectation_of_every_mask():
    image, weights = _setup()
    exact = _exact_iss(_cell_effects(image, weights))
    runs = torch.stack([iss(_linear_policy(weights), image[None], grid=(2, 2), n_masks=40, p_keep=P_KEEP,
                            baseline="mean", seed=seed).grid_map[0].flatten() for seed in range(200)]).double()
    mean, spread = runs.mean(dim=0).numpy(), runs.std(dim=0).numpy()
    assert np.all(np.abs(mean - exact) < 4 * spread / np.sqrt(len(runs)))


def test_the_95_percent_intervals_cover_the_exact_value_about_95_percent_of_the_time():
    image, weights = _setup(1)
    exact = torch.tensor(_exact_iss(_cell_effects(image, weights)))
    covered = []
    for seed in range(100):
        result = iss(_linear_policy(weights), image[None], grid=(2, 2), n_masks=60, p_keep=P_KEEP, baseline="mean",
                     seed=seed)
        covered.append(((result.ci_low[0].flatten() <= exact) & (exact <= result.ci_high[0].flatten())).double())
    rate = float(torch.stack(covered).mean())
    assert 0.88 <= rate <= 0.99  # 400 intervals; a t interval of skewed samples covers a little under 95%


def test_a_linear_policy_gives_the_known_cell_weights():
    # D = (sum_h c_h d_h)^2, so E[D | d_g = 1] - E[D | d_g = 0] = c_g^2 + 2 q c_g sum_{h != g} c_h.
    image, weights = _setup(2, size=3)
    c = _cell_effects(image, weights)
    contrast = c ** 2 + 2 * Q * c * (c.sum() - c)
    plain = _exact_iss(c)
    result = iss(_linear_policy(weights), image[None], grid=(3, 3), n_masks=20_000, p_keep=P_KEEP, baseline="mean",
                 seed=3, batch_size=2_000)
    scale = np.abs(plain).max()
    assert np.allclose(result.grid_map[0].flatten().numpy(), plain, atol=0.03 * scale)
    assert np.allclose(result.contrast_grid_map[0].flatten().numpy(), contrast, atol=0.05 * scale)
    # With the grid as large as the image, the pixel map is the grid map.
    assert torch.allclose(result.pixel_map[0], result.grid_map[0], atol=1e-5)


def test_the_same_seed_gives_the_same_map_whatever_the_batch_size():
    image, weights = _setup(3, size=8)
    first = iss(_linear_policy(weights), image[None], grid=(4, 4), n_masks=50, seed=5, batch_size=7)
    again = iss(_linear_policy(weights), image[None], grid=(4, 4), n_masks=50, seed=5, batch_size=64)
    other = iss(_linear_policy(weights), image[None], grid=(4, 4), n_masks=50, seed=6)
    assert torch.allclose(first.pixel_map, again.pixel_map) and torch.equal(first.keeps, again.keeps)
    assert not torch.equal(first.keeps, other.keeps)
    assert first.config == {"grid": [4, 4], "n_masks": 50, "p_keep": 0.3, "baseline": "blur", "seed": 5,
                            "blur_sigma": 10.0}


def test_masks_made_in_several_blocks_give_the_map_of_one_block(monkeypatch):
    # Beyond MASK_BLOCK_BYTES the masks are upsampled block by block (memory stays flat as n_masks
    # grows); the sums over blocks are the sums over all masks.
    import importlib

    module = importlib.import_module("engines.attribution.iss")  # the package's ``iss`` is the function
    image, weights = _setup(6, size=8)
    whole = iss(_linear_policy(weights), torch.stack([image, image.flip(-1)]), grid=(4, 4), n_masks=50, seed=2,
                batch_size=4)
    monkeypatch.setattr(module, "MASK_BLOCK_BYTES", 4 * 8 * 8 * 8)  # 8 masks: 7 blocks, the last one short
    assert module._block_size(50, 8, 8, 4) == 8
    done = []
    blocked = iss(_linear_policy(weights), torch.stack([image, image.flip(-1)]), grid=(4, 4), n_masks=50, seed=2,
                  batch_size=4, progress=lambda d, t: done.append((d, t)))
    for name in ("pixel_map", "contrast_pixel_map"):  # float32 sums in another order: rounding apart
        ours, theirs = getattr(blocked, name), getattr(whole, name)
        assert torch.allclose(ours, theirs, rtol=0, atol=1e-5 * float(theirs.abs().max())), name
    assert torch.equal(blocked.divergences, whole.divergences)
    assert [d for d, _ in done] == sorted(d for d, _ in done) and done[-1] == (100, 100)


def test_each_image_of_a_batch_gets_its_own_map():
    image, weights = _setup(4, size=2)
    both = iss(_linear_policy(weights), torch.stack([image, image.flip(-1)]), grid=(2, 2), n_masks=30,
               baseline="mean")
    alone = iss(_linear_policy(weights), image.flip(-1)[None], grid=(2, 2), n_masks=30, baseline="mean")
    assert torch.allclose(both.grid_map[1], alone.grid_map[0])
    assert both.divergences.shape == (2, 30)


def test_the_action_scale_divides_each_dimension_before_squaring():
    weights = torch.ones((3, 2, 2))

    def two_dims(images):
        total = (images * weights).sum(dim=(1, 2, 3))
        return torch.stack([total, 10 * total], dim=-1)[:, None, :]  # the second dimension moves 10 times more

    image = torch.rand((1, 3, 2, 2), generator=torch.Generator().manual_seed(0))
    raw = iss(two_dims, image, grid=(2, 2), n_masks=20, baseline="mean")
    scaled = iss(two_dims, image, grid=(2, 2), n_masks=20, baseline="mean", action_scale=torch.tensor([1.0, 10.0]))
    # Unscaled D = (d^2 + 100 d^2) / 2; scaled = (d^2 + d^2) / 2: a ratio of 101 / 2.
    assert torch.allclose(raw.divergences, scaled.divergences * 101 / 2, rtol=1e-4)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"images": torch.zeros(3, 8, 8)}, "images must be (B, 3, H, W)"),
    ({"n_masks": 1}, "n_masks must be at least 2"),
    ({"p_keep": 1.0}, "p_keep must be strictly between 0 and 1"),
    ({"grid": (0, 7)}, "grid must be two positive sizes"),
    ({"baseline": "black"}, "unknown baseline 'black'; choose one of blur, mean, noisy"),
])
def test_bad_arguments_are_named(kwargs, message):
    arguments = {"images": torch.zeros(1, 3, 8, 8), **kwargs}
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        iss(lambda x: x.mean(dim=(1, 2, 3)).reshape(-1, 1, 1), **arguments)


def test_the_blur_is_scipys_gaussian_filter_with_mirrored_borders():
    image = torch.rand((1, 3, 40, 30), generator=torch.Generator().manual_seed(0))
    ours = gaussian_blur(image, 2.5)[0].numpy()
    # scipy's "mirror" is OpenCV's BORDER_REFLECT_101; truncate=3 gives upstream's radius round(3 sigma).
    theirs = np.stack([ndimage.gaussian_filter(image[0, c].double().numpy(), 2.5, mode="mirror", truncate=3.0)
                       for c in range(3)])
    assert np.allclose(ours, theirs, atol=1e-5)


@pytest.mark.parametrize("shape", [(1, 1, 8, 8), (1, 4, 8, 8)])
def test_images_with_other_than_three_channels_are_refused(shape):
    with pytest.raises(ValueError, match=r"images must be \(B, 3, H, W\)"):
        iss(lambda x: x.mean(dim=(1, 2, 3)).reshape(-1, 1, 1), torch.zeros(shape))


@pytest.mark.parametrize("p_keep", [0.0, -0.1, 1.5])
def test_a_keep_probability_outside_the_open_interval_is_refused(p_keep):
    with pytest.raises(ValueError, match="p_keep must be strictly between 0 and 1"):
        iss(lambda x: x.mean(dim=(1, 2, 3)).reshape(-1, 1, 1), torch.zeros(1, 3, 2, 2), p_keep=p_keep)


def test_the_smallest_valid_settings_run_a_one_row_grid_with_two_masks():
    image, weights = _setup(5, size=2)
    result = iss(_linear_policy(weights), image[None], grid=(1, 2), n_masks=2, baseline="mean")
    assert result.grid_map.shape == (1, 1, 2) and result.keeps.shape == (2, 1, 2)
    assert result.pixel_map.shape == (1, 2, 2)


def test_a_cell_is_kept_exactly_when_its_uniform_draw_is_below_p_keep():
    # bernoulli_grids keeps a cell iff u < p for u ~ U[0, 1) from a generator seeded with ``seed``;
    # with p set to the draw itself the cell is dropped (u < u is false), so P(keep) is exactly p.
    draws = torch.rand((1, 1, 3), generator=torch.Generator().manual_seed(11))
    assert bernoulli_grids(1, (1, 3), float(draws[0, 0, 1]), seed=11)[0, 0, 1].item() == 0.0


def test_masks_are_upsampled_with_half_pixel_centres_as_opencv_does():
    # cv2.resize INTER_LINEAR of [0, 1] to 4 pixels samples at source x = (x + 0.5) / 2 - 0.5 =
    # -0.25, 0.25, 0.75, 1.25 (clamped): 0, 0.25, 0.75, 1; corner-aligned sampling would give thirds.
    out = upsample(torch.tensor([[[0.0, 1.0]]]), (1, 4))
    assert torch.allclose(out, torch.tensor([[[0.0, 0.25, 0.75, 1.0]]]))


@pytest.mark.parametrize(("grid", "size"), [((7, 7), (64, 64)), ((5, 9), (48, 80)), ((3, 2), (3, 2)), ((4, 4), (2, 7))])
def test_masks_match_torchs_own_bilinear_resizing_in_both_directions(grid, size):
    # A second method: F.interpolate's 2-D bilinear kernel (half-pixel centres), also when a side shrinks.
    keeps = bernoulli_grids(6, grid, 0.3, seed=4)
    expected = torch.nn.functional.interpolate(keeps[:, None], size=size, mode="bilinear", align_corners=False)[:, 0]
    out = upsample(keeps, size)
    assert out.shape == (6, *size) and torch.allclose(out, expected, atol=1e-6)


def test_a_second_row_of_cells_is_spread_over_its_own_rows():
    # Rows and columns weigh separately: a grid of two rows [0; 1] resized to 4 x 1 is 0, 0.25, 0.75, 1 down the column.
    out = upsample(torch.tensor([[[0.0], [1.0]]]), (4, 1))
    assert torch.allclose(out, torch.tensor([[[0.0], [0.25], [0.75], [1.0]]]))


def test_the_action_scale_follows_the_actions_device_and_precision():
    # A scale kept on the CPU must still divide actions that live elsewhere (here the meta device).
    on_meta = torch.zeros((2, 1, 2), device="meta")
    assert divergence(on_meta, on_meta, torch.tensor([1.0, 2.0])).device.type == "meta"
    # A float64 scale does not promote float32 actions: D stays in the actions' precision.
    actions = torch.tensor([[[2.0, 4.0]]])
    d = divergence(actions, torch.zeros_like(actions), torch.tensor([2.0, 4.0], dtype=torch.float64))
    assert d.dtype == torch.float32 and d.item() == pytest.approx(1.0)  # ((2/2)^2 + (4/4)^2) / 2


def test_summarise_by_hand_on_three_masks_of_two_cells():
    # p = 0.5, D = (2, 4, 6) for one image and (1, 1, 1) for another, keep grids (1 = kept):
    # Z1 = [1, 0], Z2 = [0, 1], Z3 = [0, 0]; the image is as large as the grid, so M_i = Z_i.
    keeps = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]], [[0.0, 0.0]]])
    divergences = torch.tensor([[2.0, 4.0, 6.0], [1.0, 1.0, 1.0]])
    result = summarise(divergences, keeps, keeps.clone(), 0.5)
    # Y_i(g) = D_i (1 - Z_ig) / 0.5: cell 0 -> (0, 8, 12), cell 1 -> (4, 0, 12); image 2: (0, 2, 2), (2, 0, 2).
    y = torch.tensor([[[0.0, 8.0, 12.0], [4.0, 0.0, 12.0]], [[0.0, 2.0, 2.0], [2.0, 0.0, 2.0]]])
    mean = y.mean(dim=-1)
    sd = ((y - mean[..., None]) ** 2).sum(dim=-1).div(3 - 1).sqrt()  # per cell, N - 1 in the denominator
    half = stats.t.ppf(0.975, df=2) * sd / 3 ** 0.5  # t with N - 1 = 2 degrees of freedom
    assert torch.allclose(result.grid_map[:, 0], torch.tensor([[20 / 3, 16 / 3], [4 / 3, 4 / 3]]))
    assert torch.allclose(result.ci_low[:, 0], mean - half) and torch.allclose(result.ci_high[:, 0], mean + half)
    # dISS(g) = mean_i D_i ((1 - Z_ig) / 0.5 - Z_ig / 0.5): cell 0 -> (-4 + 8 + 12) / 3, cell 1 -> (4 - 8 + 12) / 3.
    contrast = torch.tensor([[16 / 3, 8 / 3], [2 / 3, 2 / 3]])
    assert torch.allclose(result.contrast_grid_map[:, 0], contrast)
    # With M = Z the pixel maps are the grid maps.
    assert torch.allclose(result.pixel_map[:, 0], result.grid_map[:, 0])
    assert torch.allclose(result.contrast_pixel_map[:, 0], contrast)


def test_the_contrast_pixel_map_weighs_kept_and_dropped_masses_by_their_own_probabilities():
    # p = 0.25, one mask Z = [1, 0], D = 3 (N = 1 is fine for summarise): dropped cell 3 / 0.75 = 4,
    # kept cell -3 / 0.25 = -12; a second mask Z = [0, 0], D = 0 adds nothing but makes N = 2.
    keeps = torch.tensor([[[1.0, 0.0]], [[0.0, 0.0]]])
    result = summarise(torch.tensor([[3.0, 0.0]]), keeps, keeps.clone(), 0.25)
    assert torch.allclose(result.contrast_pixel_map[0, 0], torch.tensor([-12.0 / 2, 4.0 / 2]))
    assert torch.allclose(result.pixel_map[0, 0], torch.tensor([0.0, 2.0]))
