"""The video agent's model roles by name: the offline defaults and the adapters register
themselves (``engines.video.offline``, ``engines.video.adapters``); this module looks them up.

The roles and their protocols are described in ``engines.video.roles``.
"""

from __future__ import annotations

from engines.video import offline  # noqa: F401  (registers the offline defaults)
from engines.video.roles import CAPTIONERS, INSPECTORS, PLANNERS, Captioner, Inspector, Planner


def _make(table: dict, kind: str, name: str, **options):
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {', '.join(sorted(table))}")
    return table[name](**options)


def planner(name: str = "heuristic", **options) -> Planner:
    return _make(PLANNERS, "planner", name, **options)


def inspector(name: str = "frame-model", **options) -> Inspector:
    return _make(INSPECTORS, "inspector", name, **options)


def captioner(name: str = "frame-model", **options) -> Captioner:
    return _make(CAPTIONERS, "captioner", name, **options)


def names(kind: str) -> list[str]:
    return sorted({"planner": PLANNERS, "inspector": INSPECTORS, "captioner": CAPTIONERS}[kind])
