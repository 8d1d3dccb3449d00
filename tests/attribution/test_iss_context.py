"""ISS scores every image of a batch with its own context (instruction, state), never another image's.

The policy reads one pixel, chosen by the instruction, and turns it into an action with a gain and
an offset taken from the state. Images as large as their 2 x 2 grid make every upsampled mask the
grid itself, and the "mean" replacement puts each image's mean colour in a dropped cell, so the
divergence of mask i for image b is written down by hand:

    D_i = (gain_b * (m - s_g))^2 * (1 - z_ig),   g = the cell image b's instruction names,

with s_g the channel sum of pixel g and m the mean of s over the pixels. The offset cancels only
when the unmasked reference was computed with the same context as the masked images.
"""

from __future__ import annotations

import pytest
import torch

from engines.attribution import iss
from engines.attribution.adapters import lerobot_policy
from engines.attribution.episode import iss_episode

P_KEEP = 0.3
Q = 1.0 - P_KEEP
N_MASKS = 24
SEED = 3
CELLS = {"top left": 0, "top right": 1, "bottom left": 2, "bottom right": 3}


def _image(sums: list[float]) -> torch.Tensor:
    """A 2 x 2 image (3, 2, 2) whose pixel g has channel sum ``sums[g]`` (each channel a third of it)."""
    return (torch.tensor(sums, dtype=torch.float32) / 3).reshape(1, 2, 2).expand(3, 2, 2).clone()


def _reading_policy(images: torch.Tensor, instruction: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
    """action = gain * (channel sum of the pixel the one-hot ``instruction`` (n, 4) names) + offset;
    ``state`` (n, 2) is (gain, offset). One step, one dimension."""
    read = (images.sum(dim=1).flatten(1) * instruction).sum(dim=1)
    return (state[:, 0] * read + state[:, 1]).reshape(-1, 1, 1)


def _keeps() -> torch.Tensor:
    """The keep-grids of seed ``SEED``, drawn here as ISS documents it: a cell is kept when its uniform draw < p."""
    generator = torch.Generator().manual_seed(SEED)
    return (torch.rand((N_MASKS, 2, 2), generator=generator) < P_KEEP).double().reshape(N_MASKS, 4)


def _expected(effect: float, cell: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Divergences (N,), plain and contrast grid maps (4,) of an image whose read cell moves the action
    by ``effect`` when dropped."""
    z = _keeps()
    divergences = effect ** 2 * (1.0 - z[:, cell])
    plain = (divergences[:, None] * (1.0 - z)).mean(dim=0) / Q
    contrast = (divergences[:, None] * ((1.0 - z) / Q - z / P_KEEP)).mean(dim=0)
    return divergences, plain, contrast


def _assert_close(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert torch.allclose(ours.double(), theirs, rtol=1e-5, atol=1e-6), (ours, theirs)


@pytest.mark.parametrize("batch_size", [2, 7, 64])
def test_one_image_under_three_contexts_gets_three_maps_each_from_its_own_context(batch_size):
    # The same image three times: any difference between the rows comes from the context alone.
    sums = [0.3, 1.2, 2.1, 0.6]  # mean 1.05: dropping cell g moves the read value by 1.05 - s_g
    images = _image(sums)[None].expand(3, 3, 2, 2).clone()
    cells, gains, offsets = [0, 2, 3], [1.0, 2.0, -1.0], [0.0, 0.5, -1.0]
    instruction = torch.eye(4)[cells]
    state = torch.tensor([gains, offsets]).T
    result = iss(_reading_policy, images, grid=(2, 2), n_masks=N_MASKS, p_keep=P_KEEP, baseline="mean",
                 seed=SEED, batch_size=batch_size, context={"instruction": instruction, "state": state})
    # By hand: (gain * (1.05 - s_g))^2 = 0.5625, 4.41 and 0.2025 per dropped read cell.
    for b, (cell, gain, square) in enumerate(zip(cells, gains, [0.5625, 4.41, 0.2025], strict=True)):
        effect = gain * (1.05 - sums[cell])
        assert effect ** 2 == pytest.approx(square)
        divergences, plain, contrast = _expected(effect, cell)
        _assert_close(result.divergences[b], divergences)
        _assert_close(result.grid_map[b].flatten(), plain)
        _assert_close(result.contrast_grid_map[b].flatten(), contrast)
        assert int(result.contrast_grid_map[b].flatten().argmax()) == cell
    assert not torch.allclose(result.divergences[0], result.divergences[1])


def test_a_language_instruction_per_image_reaches_the_masks_of_that_image():
    # One instruction string per image, as a list: the language instruction of a VLA policy.
    seen = set()

    def policy(images: torch.Tensor, task: list[str]) -> torch.Tensor:
        assert isinstance(task, list) and len(task) == len(images)
        seen.update(task)
        cells = torch.tensor([CELLS[t] for t in task])
        return images.sum(dim=1).flatten(1).gather(1, cells[:, None]).reshape(-1, 1, 1)

    rows = [[0.3, 1.2, 2.1, 0.6], [2.4, 0.0, 0.9, 1.5], [0.6, 0.6, 2.7, 0.3]]  # means 1.05, 1.2, 1.05
    tasks = ["bottom left", "top left", "top right"]
    images = torch.stack([_image(r) for r in rows])
    result = iss(policy, images, grid=(2, 2), n_masks=N_MASKS, p_keep=P_KEEP, baseline="mean", seed=SEED,
                 batch_size=10, context={"task": tasks})
    assert seen == set(tasks)
    for b, (sums, task, mean) in enumerate(zip(rows, tasks, [1.05, 1.2, 1.05], strict=True)):
        cell = CELLS[task]
        divergences, plain, contrast = _expected(mean - sums[cell], cell)
        _assert_close(result.divergences[b], divergences)
        _assert_close(result.grid_map[b].flatten(), plain)
        _assert_close(result.contrast_grid_map[b].flatten(), contrast)


def test_the_lerobot_adapter_passes_each_images_task_and_state_from_the_context():
    class Reader(torch.nn.Module):
        """predict_action_chunk: the pixel ``task`` names, times the first state value."""

        def predict_action_chunk(self, batch: dict) -> torch.Tensor:
            images, state = batch["observation.images.top"], batch["observation.state"]
            cells = torch.tensor([CELLS[t] for t in batch["task"]])
            read = images.sum(dim=1).flatten(1).gather(1, cells[:, None])[:, 0]
            return (state[:, 0] * read)[:, None, None]

    sums = [0.3, 1.2, 2.1, 0.6]
    images = _image(sums)[None].expand(2, 3, 2, 2).clone()
    context = {"task": ["top right", "bottom right"], "observation.state": torch.tensor([[3.0], [-0.5]])}
    result = iss(lerobot_policy(Reader()), images, grid=(2, 2), n_masks=N_MASKS, p_keep=P_KEEP,
                 baseline="mean", seed=SEED, context=context)
    for b, (cell, gain) in enumerate([(1, 3.0), (3, -0.5)]):
        divergences, _, _ = _expected(gain * (1.05 - sums[cell]), cell)
        _assert_close(result.divergences[b], divergences)


def test_an_episode_scores_each_keyframe_with_that_frames_context():
    sums = [0.3, 1.2, 2.1, 0.6]
    frames = _image(sums)[None].expand(5, 3, 2, 2).clone()
    cells, gains = [0, 1, 2, 3, 0], [1.0, 5.0, 2.0, 4.0, -3.0]
    context = {"instruction": torch.eye(4)[cells], "state": torch.tensor([gains, [0.0, 1.0, 2.0, 3.0, 4.0]]).T}
    episode = iss_episode(_reading_policy, frames, time_stride=2, context=context, grid=(2, 2), n_masks=N_MASKS,
                          p_keep=P_KEEP, baseline="mean", seed=SEED)
    assert episode.keyframes == [0, 2, 4]
    for row, frame in enumerate(episode.keyframes):
        divergences, _, _ = _expected(gains[frame] * (1.05 - sums[cells[frame]]), cells[frame])
        _assert_close(episode.result.divergences[row], divergences)

    # A list context (one instruction per frame) is picked at the keyframes the same way.
    seen = []

    def policy(images, task):
        seen.append(task[0])
        return images.mean(dim=(1, 2, 3)).reshape(-1, 1, 1)

    iss_episode(policy, frames, time_stride=2, context={"task": ["a", "b", "c", "d", "e"]}, grid=(2, 2), n_masks=4)
    assert set(seen) == {"a", "c", "e"}


@pytest.mark.parametrize(("context", "found"), [({"state": torch.zeros(1, 2)}, "1 entries"),
                                                ({"task": ["only one"]}, "1 entries"),
                                                ({"task": "pick"}, "one str"),
                                                ({"state": torch.tensor(1.0)}, "one Tensor")])
def test_a_context_without_one_entry_per_image_is_refused_not_broadcast(context, found):
    name = next(iter(context))
    with pytest.raises(ValueError, match=f"context '{name}' must hold one entry per image \\(3\\), got {found}"):
        iss(lambda images, **_: images.mean(dim=(1, 2, 3)).reshape(-1, 1, 1), torch.rand(3, 3, 2, 2), grid=(2, 2),
            n_masks=4, context=context)
