"""Displays of study steps drawn by code of their own (``Step.template``), registered by name."""

from __future__ import annotations

from collections.abc import Callable

# Custom step renderers, by ``Step.template`` name: fn(view) -> None.
STEP_RENDERERS: dict[str, Callable[..., None]] = {}
# Displays that draw their own progress (e.g. "Image 3 of 20 · round 2 of 3") instead of "Step n of m".
OWN_PROGRESS: set[str] = set()


def register_step_renderer(name: str, *, own_progress: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        STEP_RENDERERS[name] = fn
        if own_progress:
            OWN_PROGRESS.add(name)
        return fn

    return wrap


def shows_step_count(step) -> bool:
    """Whether the participant page draws "Step n of m" above this step (not when its display draws its own)."""
    return step.template not in OWN_PROGRESS
