"""The HOI-Edit area's model roles by name: every module that registers a role is imported here,
so the command line, the jobs and the page see the same set.

- ``adapters``: the judge ``openai`` (an OpenAI-compatible multimodal endpoint) and the grounder
  ``transformers`` (a zero-shot detector such as OWLv2 or Grounding DINO from a local folder);
- ``generation``: image editors and I2V models through diffusers pipelines (``diffusers``);
- ``serve``: the same, called on a Gradio server (``gradio``; ``python -m engines.hoi serve``);
- ``offline.grounder_judge`` and ``offline.generation``: the deterministic offline defaults
  (``offline``: grounder and judge; editors, I2V, refiner) that run the pipeline on the shipped
  synthetic demo; ``offline.tiny_pipelines.tiny_role``: a tiny random diffusers pipeline
  (``serve --tiny``).

This is the one module outside ``engines.hoi.offline`` that imports it (checked by
``tests/hoi/test_hoi_offline_fence.py``): the real path picks an offline stand-in by name, here.
The roles and their protocols are described in ``engines.hoi.roles``.
"""

from __future__ import annotations

from engines.hoi import adapters, generation, serve  # noqa: F401  (register the roles)
from engines.hoi.offline import generation as offline_generation  # noqa: F401  (register the offline roles)
from engines.hoi.offline import grounder_judge  # noqa: F401  (register the offline roles)
from engines.hoi.offline.tiny_pipelines import tiny_role
from engines.hoi.roles import KINDS, make, names

__all__ = ["KINDS", "make", "names", "tiny_role"]
