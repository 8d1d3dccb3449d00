"""The study's images: which image a participant sees, drawn the same way on every request.

``interaction_seed`` hashes (seed base, study slug, external id, interaction index) into a seed, so
a participant sees the same image after a refresh and two participants see different ones;
``interaction_difficulty`` draws the image's difficulty from that seed. ``shape_task`` generates
the image (cached per process: the page asks for it on every rerun), ``trial_png`` draws it and
``trial_question`` is what the participant is asked about it.
"""

from __future__ import annotations

import functools
import hashlib

import numpy as np

from engines.collab.shapes import ShapeTask, generate_task, to_png_bytes


def interaction_seed(seed_base: int | str, study_slug: str, external_id: str, index: int) -> int:
    """A 63-bit image seed from sha256("{seed_base}:{study_slug}:{external_id}:{index}")."""
    digest = hashlib.sha256(f"{seed_base}:{study_slug}:{external_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def interaction_difficulty(seed: int, low: float, high: float) -> float:
    """Difficulty in [low, high], drawn from the image seed (rounded to 3 decimals, stable in JSON)."""
    u = np.random.default_rng([seed, 1]).uniform()
    return round(float(low + (high - low) * u), 3)


@functools.lru_cache(maxsize=4096)
def shape_task(seed: int, difficulty: float) -> ShapeTask:
    """The generated image with its truth and question (``shapes.generate_task``, cached)."""
    return generate_task(seed, difficulty)


@functools.lru_cache(maxsize=512)
def trial_png(seed: int, difficulty: float, scale: int = 5) -> bytes:
    """PNG bytes of the interaction's image, enlarged ``scale`` times (nearest neighbour)."""
    return to_png_bytes(shape_task(seed, difficulty).image, scale=scale)


def trial_question(seed: int, difficulty: float) -> str:
    """What the participant is asked about the image ("How many triangles?")."""
    return shape_task(seed, difficulty).question


__all__ = ["interaction_difficulty", "interaction_seed", "shape_task", "trial_png", "trial_question"]
