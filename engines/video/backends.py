"""The video agent's model roles by name: the offline stand-ins and the adapters register
themselves (``engines.video.offline``, ``engines.video.adapters``); this module looks them up, and
is the one module outside ``engines/video/offline/`` that imports the stand-ins.

The roles and their protocols are described in ``engines.video.roles``.
"""

from __future__ import annotations

from pathlib import Path

from engines.video import adapters  # noqa: F401  (registers the adapters)
from engines.video.offline import heuristics, pixels, pixels_inspector  # noqa: F401  (register the offline roles)
from engines.video.roles import CAPTIONERS, INSPECTORS, PLANNERS, Captioner, Inspector, Planner, Roles


def _make(table: dict, kind: str, name: str, **options):
    if name not in table:
        raise ValueError(f"unknown {kind} {name!r}; choose one of {', '.join(sorted(table))}")
    return table[name](**options)


def planner(name: str = "heuristic", **options) -> Planner:
    return _make(PLANNERS, "planner", name, **options)


def inspector(name: str = "pixels", **options) -> Inspector:
    return _make(INSPECTORS, "inspector", name, **options)


def captioner(name: str = "pixels", **options) -> Captioner:
    return _make(CAPTIONERS, "captioner", name, **options)


def names(kind: str) -> list[str]:
    return sorted({"planner": PLANNERS, "inspector": INSPECTORS, "captioner": CAPTIONERS}[kind])


def roles_for(planner_name: str, inspector_name: str, captioner_name: str, search: str,
              frame_model: Path | None = None, *, planner_options: dict | None = None,
              inspector_options: dict | None = None):
    """The roles of a run; each video's index is built once (and cached beside the video).
    ``*_options`` are passed to the role's factory (an endpoint's ``base_url`` and ``model``, a
    model folder's ``path``)."""
    from engines.video.index import Retriever, load_or_build

    weights = {"weights": frame_model} if frame_model is not None else {}
    describe = captioner(captioner_name, **(weights if captioner_name == "frame-model" else {}))
    retrievers: dict[str, Retriever] = {}

    def retriever_for(video_path: str) -> Retriever:
        if video_path not in retrievers:
            retrievers[video_path] = Retriever(load_or_build(video_path, describe), mode=search)
        return retrievers[video_path]

    look = inspector(inspector_name, **(weights if inspector_name == "frame-model" else {}),
                     **(inspector_options or {}))
    return Roles(planner(planner_name, **(planner_options or {})), look, retriever_for)
