"""Interventional attribution for visuomotor policies: ISS heatmaps and the Nuisance Mass Ratio.

"Embodied Interpretability: Linking Causal Understanding to Generalization in Vision-Language-
Action Models" (Zhang, Xu, Dhafer, Yue, Dong, Hao; ICML 2026; arXiv 2605.00321; code
``robot-future/vla-explain``). The Interventional Significance Score (ISS) blurs random coarse
regions of a policy's camera image and credits each pixel with the change of the predicted action
chunk; the Nuisance Mass Ratio (NMR) is the share of that credit on task-irrelevant pixels, and in
the paper it predicts failure out of distribution. Method details, defaults, baselines and
tests: the "Method" section of the manual, ``docs/attribution.md``.

Public API, shaped like Captum's ``attribute``::

    from engines.attribution import iss, nmr
    result = iss(policy, images, grid=(7, 7), n_masks=500, p_keep=0.3, baseline="blur", seed=0)
    result.grid_map, result.pixel_map, result.ci_low, result.ci_high, result.contrast
    nmr(result.pixel_map[0], relevance_mask, k=None)    # the mass version; k=10: upstream NMR@10
    episode = iss_episode(policy, frames, time_stride=10)  # every 10th frame, interpolated between

Other kinds of policies (LeRobot's ``predict_action_chunk``, transformers models with action
tokens as OpenVLA) come in through ``engines.attribution.adapters``.
"""

import importlib
import sys
import types

# The public API is imported when first used, so that the area's light modules (its jobs, paths
# and tables, which every process discovers) do not pull torch and scipy in with the package.
_PUBLIC = {"EpisodeISS": "episode", "iss_episode": "episode", "ISSResult": "iss", "iss": "iss",
           "NMRValue": "nmr", "episode_nmr": "nmr", "nmr": "nmr", "nmr_with_interval": "nmr"}

__all__ = sorted(_PUBLIC)


class _PublicAPI(types.ModuleType):
    """The package, whose ``iss`` and ``nmr`` are the functions (as before), not their submodules."""

    def __getattribute__(self, name: str):
        module = _PUBLIC.get(name)
        if module is not None:
            return getattr(importlib.import_module(f"{__name__}.{module}"), name)
        return super().__getattribute__(name)


sys.modules[__name__].__class__ = _PublicAPI
