"""The shape-counting task generator: determinism, label space, difficulty knobs, descriptions."""

from __future__ import annotations

import re

import numpy as np
import pytest
from PIL import Image

from engines.collab.shapes import (
    DIFFICULTY_PRESETS,
    LABELS,
    MAX_COUNT,
    N_LABELS,
    ShapeTaskConfig,
    config_for_difficulty,
    generate_batch,
    generate_task,
    to_png_bytes,
)


def test_label_space():
    assert MAX_COUNT == 9 and N_LABELS == 10 and LABELS == tuple(range(10))


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard", 0.3])
def test_same_seed_same_task(difficulty):
    a, b = generate_task(11, difficulty), generate_task(11, difficulty)
    assert np.array_equal(a.image, b.image)
    assert a.count == b.count and a.shapes == b.shapes and a.describe() == b.describe()


def test_different_seeds_differ():
    images = [generate_task(seed, "medium").image for seed in range(5)]
    assert all(not np.array_equal(images[0], other) for other in images[1:])


def test_image_format_and_question():
    task = generate_task(3, "easy")
    assert task.image.dtype == np.uint8 and task.image.shape == (64, 64)
    assert task.question == "How many triangles?"
    assert task.difficulty == 0.0


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_count_in_label_space_and_equals_targets_drawn(difficulty):
    config = DIFFICULTY_PRESETS[difficulty]
    for seed in range(30):
        task = generate_task(seed, difficulty)
        assert task.count in LABELS
        assert config.n_targets[0] <= task.count <= config.n_targets[1]
        assert task.count == sum(s.kind == "triangle" for s in task.shapes)
        assert all(s.kind == "triangle" or s.kind in config.distractor_kinds for s in task.shapes)


def test_targets_are_drawn_where_recorded():
    # A noise-free image with only targets: every recorded centre is brighter than the background.
    config = ShapeTaskConfig(n_targets=(5, 5), n_distractors=(0, 0), contrast=(0.8, 0.8))
    task = generate_task(4, config)
    background = np.median(task.image)
    for shape in task.shapes:
        assert task.image[int(shape.y), int(shape.x)] > background + 100


def test_zero_targets_possible():
    task = generate_task(0, ShapeTaskConfig(n_targets=(0, 0), n_distractors=(2, 2)))
    assert task.count == 0 and len(task.shapes) == 2


def test_harder_means_more_distractors_noise_and_clutter():
    def distractors(difficulty):
        return np.mean([sum(s.kind != "triangle" for s in generate_task(seed, difficulty).shapes) for seed in range(40)])

    assert distractors("easy") < distractors("medium") < distractors("hard")
    easy, hard = DIFFICULTY_PRESETS["easy"], DIFFICULTY_PRESETS["hard"]
    assert easy.noise_std < hard.noise_std and easy.clutter_lines < hard.clutter_lines
    assert easy.size[0] > hard.size[0] and easy.overlap_prob < hard.overlap_prob


def test_noise_std_shows_in_pixel_statistics():
    # Background pixels of an empty canvas: their spread is the noise (255 * std, clipped at 0).
    def spread(noise_std):
        config = ShapeTaskConfig(n_targets=(0, 0), n_distractors=(0, 0), noise_std=noise_std)
        return float(generate_task(1, config).image.astype(float).std())

    assert spread(0.0) == 0.0
    assert 0.5 * 255 * 0.1 < spread(0.1) < 1.2 * 255 * 0.1
    assert spread(0.2) > 1.5 * spread(0.1)


def test_continuous_difficulty_interpolates_presets():
    assert config_for_difficulty(0.0) == DIFFICULTY_PRESETS["easy"]
    assert config_for_difficulty(0.5) == DIFFICULTY_PRESETS["medium"]
    assert config_for_difficulty(1.0) == DIFFICULTY_PRESETS["hard"]
    mid = config_for_difficulty(0.75)
    assert DIFFICULTY_PRESETS["medium"].noise_std < mid.noise_std < DIFFICULTY_PRESETS["hard"].noise_std
    with pytest.raises(ValueError):
        config_for_difficulty(1.5)


def test_config_validation():
    with pytest.raises(ValueError, match="n_targets"):
        ShapeTaskConfig(n_targets=(0, 12))
    with pytest.raises(ValueError, match="target"):
        ShapeTaskConfig(distractor_kinds=("triangle",))
    with pytest.raises(ValueError):
        generate_task(0, "impossible")


def test_describe_lists_shapes_without_stating_the_count():
    for seed in range(20):
        task = generate_task(seed, "hard")
        text = task.describe()
        assert not re.search(r"\d+\s+triangles", text)
        assert "triangles" not in text  # not even in words ("seven triangles")
        # Enough to count: one line per shape, each naming its kind.
        assert text.count("- a ") == len(task.shapes)
        kinds = re.findall(r"^- a (?:small|medium-sized|large) (?:faint|grey|bright) (\w+)", text, flags=re.M)
        assert sorted(kinds) == sorted(s.kind for s in task.shapes)
        assert kinds.count("triangle") == task.count


AMBIGUOUS = re.compile(r"^- a (?:small|medium-sized|large) (?:faint|grey|bright) shape .*hard to make out: "
                       r"maybe an? (\w+) or an? (\w+)$", re.M)
CLEAR = re.compile(r"^- a (?:small|medium-sized|large) (?:faint|grey|bright) (\w+) ", re.M)


def test_perceived_descriptions_are_ambiguous_on_hard_images_only():
    hard = [generate_task(seed, "hard") for seed in range(30)]
    easy = [generate_task(seed, "easy") for seed in range(30)]
    assert not any(any(t.hard_to_make_out()) for t in easy)
    assert all(t.describe("perceived") == t.describe() for t in easy)  # nothing to hide on easy images
    n_vague = 0
    for task in hard:
        text = task.describe("perceived")
        assert text == generate_task(task.seed, "hard").describe("perceived")  # deterministic
        vague = task.unclear_kinds()
        assert sorted(vague) == [i for i, h in enumerate(task.hard_to_make_out()) if h]
        n_vague += len(vague)
        pairs = AMBIGUOUS.findall(text)
        clear = [k for k in CLEAR.findall(text) if k != "shape"]
        assert len(pairs) == len(vague) and len(clear) + len(pairs) == len(task.shapes)
        # Each vague shape is named with its true kind and a look-alike; the clear ones exactly.
        assert sorted(tuple(sorted(p)) for p in pairs) == sorted(tuple(sorted(v)) for v in vague.values())
        assert all(task.shapes[i].kind in pair and pair[0] != pair[1] for i, pair in vague.items())
        clear_triangles = clear.count("triangle")
        maybe_triangles = sum("triangle" in p for p in pairs)
        assert clear_triangles <= task.count <= clear_triangles + maybe_triangles
        # Other lines never give a vague shape's kind away.
        for i in vague:
            s = task.shapes[i]
            assert f"the {s.kind} at ({s.x:.0f}, {s.y:.0f})" not in text
    assert n_vague >= 0.1 * sum(len(t.shapes) for t in hard)  # ~16% of the shapes on hard images
    with pytest.raises(ValueError, match="detail must be one of"):
        hard[0].describe("blurry")


def test_batch_is_deterministic_and_matches_single_tasks():
    images, counts, difficulty = generate_batch(5, 12)
    again = generate_batch(5, 12)
    assert np.array_equal(images, again.images) and np.array_equal(counts, again.counts)
    assert images.shape == (12, 64, 64) and images.dtype == np.uint8
    assert counts.dtype == np.int64 and difficulty.dtype == np.float32
    assert ((difficulty >= 0) & (difficulty <= 1)).all() and len(set(difficulty.tolist())) == 12
    prefix = generate_batch(5, 4)  # the first images do not depend on n
    assert np.array_equal(prefix.images, images[:4])
    assert not np.array_equal(generate_batch(6, 12).images, images)


def test_batch_difficulty_forms():
    fixed = generate_batch(0, 5, "hard")
    assert (fixed.difficulty == 1.0).all()
    assert np.array_equal(generate_batch(0, 5, np.float32(1.0)).images, fixed.images)
    listed = generate_batch(0, 3, [0.0, 0.5, 1.0])
    assert listed.difficulty.tolist() == [0.0, 0.5, 1.0]
    drawn = generate_batch(0, 6, lambda rng, n: rng.beta(5, 1, n))
    assert drawn.difficulty.min() > 0.0
    with pytest.raises(ValueError):
        generate_batch(0, 3, [0.1, 0.2])


def test_png_bytes_roundtrip():
    import io

    image = generate_task(2, "easy").image
    png = to_png_bytes(image)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(png))), image)
    assert Image.open(io.BytesIO(to_png_bytes(image, scale=3))).size == (192, 192)
