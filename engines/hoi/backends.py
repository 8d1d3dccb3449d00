"""The HOI-Edit area's model roles by name: every module that registers a role is imported here,
so the command line, the jobs and the page see the same set.

- ``offline`` and ``offline_generation``: the deterministic offline defaults (grounder and judge;
  editors, I2V, refiner) that run the pipeline on the shipped synthetic demo;
- ``adapters``: the judge ``openai`` (an OpenAI-compatible multimodal endpoint) and the grounder
  ``transformers`` (a zero-shot detector such as OWLv2 or Grounding DINO from a local folder);
- ``generation``: image editors and I2V models through diffusers pipelines (``diffusers``);
- ``serve``: the same, called on a Gradio server (``gradio``; ``python -m engines.hoi serve``).

The roles and their protocols are described in ``engines.hoi.roles``.
"""

from __future__ import annotations

from engines.hoi import adapters, generation, offline, offline_generation, serve  # noqa: F401  (register the roles)
from engines.hoi.roles import KINDS, make, names

__all__ = ["KINDS", "make", "names"]
