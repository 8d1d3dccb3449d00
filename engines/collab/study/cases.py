"""The AI's view of a study image: the shipped CNN's probabilities over the counts 0..9.

``trial_case`` runs the shipped counter (``engines.collab.counter``) on an interaction's image and
returns it with the image's truth as a ``TrialCase``; its scores s(y) = 1 - p_AI(y) are what the
controller's sets are built from. The model and the cases are cached per process, and torch is
imported only here, on first use.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from engines.collab.study.images import shape_task


@dataclass(frozen=True)
class TrialCase:
    """One interaction's image with its truth and the AI's probabilities over the counts 0..9."""

    seed: int
    difficulty: float
    question: str
    count: int
    probs: tuple[float, ...]

    @property
    def scores(self) -> np.ndarray:
        """s(y) = 1 - p_AI(y), in [0, 1]."""
        return 1.0 - np.asarray(self.probs, dtype=float)


@functools.lru_cache(maxsize=4096)
def trial_case(seed: int, difficulty: float) -> TrialCase:
    """The image's truth and the shipped CNN's probabilities (cached: the page asks on every rerun)."""
    from engines.collab.counter import load_counter, predict_proba  # torch: imported on first use only

    task = shape_task(seed, difficulty)
    with _single_thread():
        probs = predict_proba(load_counter(), task.image[None])[0]
    return TrialCase(seed=seed, difficulty=difficulty, question=task.question, count=int(task.count),
                     probs=tuple(float(p) for p in probs))


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch on this thread alone for the block (the previous thread count is restored after).

    One 64 px image through the small CNN takes 2-6 ms on one thread; spread over torch's intra-op
    pool it waits on the pool's threads instead, 10-180 ms when the machine has other work (a web
    server, a browser). With torch's OpenMP backend the setting is per calling thread, so the
    training jobs running elsewhere in the process keep their threads.
    """
    import torch

    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = ["TrialCase", "trial_case"]
