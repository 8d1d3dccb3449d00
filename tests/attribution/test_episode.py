"""ISS over an episode: keyframes every time_stride frames plus the last, maps interpolated between them."""

from __future__ import annotations

import pytest
import torch

from engines.attribution.episode import interpolate_maps, iss_episode, keyframes
from engines.attribution.iss import iss


def test_keyframes_are_every_stride_and_the_last_frame():
    assert keyframes(25, 10) == [0, 10, 20, 24]
    assert keyframes(21, 10) == [0, 10, 20]
    assert keyframes(1, 10) == [0]
    with pytest.raises(ValueError, match="stride of at least 1"):
        keyframes(5, 0)


def test_maps_between_keyframes_are_linear_in_time():
    maps = torch.stack([torch.zeros(2, 2), torch.full((2, 2), 10.0), torch.full((2, 2), 4.0)])
    out = interpolate_maps(maps, [0, 10, 13], 14)
    assert out.shape == (14, 2, 2)
    # Frame 3 is 3/10 of the way from 0 to 10; frame 12 is 2/3 of the way from 10 down to 4.
    assert out[3, 0, 0].item() == pytest.approx(3.0) and out[10, 1, 1].item() == pytest.approx(10.0)
    assert out[12, 0, 1].item() == pytest.approx(6.0) and out[13, 0, 0].item() == pytest.approx(4.0)


def test_an_episode_computes_its_keyframes_exactly_as_single_frames():
    torch.manual_seed(0)
    frames = torch.rand(12, 3, 16, 16)

    def policy(images, **_):  # reads the top-left quarter
        return images[:, :, :8, :8].mean(dim=(1, 2, 3))[:, None, None].expand(-1, 2, 2)

    episode = iss_episode(policy, frames, time_stride=5, grid=(4, 4), n_masks=30, seed=3)
    assert episode.keyframes == [0, 5, 10, 11] and episode.pixel_maps.shape == (12, 16, 16)
    alone = iss(policy, frames[5:6], grid=(4, 4), n_masks=30, seed=3)
    assert torch.allclose(episode.pixel_maps[5], alone.pixel_map[0], atol=1e-6)
    assert torch.allclose(episode.contrast_maps[5], alone.contrast_pixel_map[0], atol=1e-6)
    midway = (episode.pixel_maps[0] * 3 + episode.pixel_maps[5] * 2) / 5  # frame 2: 2/5 of the way
    assert torch.allclose(episode.pixel_maps[2], midway, atol=1e-6)
