"""The AI's set of a round: the study's rules on the participant's answers so far, then the prediction set.

``round_masks`` builds the prefix z_{t,k} from the participant's answers, confidences and the sets
already shown (belief set = the single count entered) and evaluates the study's protect and supply
rules (``engines.collab.rules``) on it; ``ai_set`` is ``controller.prediction_set`` at the
interaction's frozen thresholds, as the sorted list of counts the page shows. ``mask_of`` and
``labels_of`` convert between the stored lists of counts and (K,) masks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from engines.collab.controller import prediction_set
from engines.collab.rules import Prefix, make_rule
from engines.collab.shapes import N_LABELS


def confidence_unit(confidence: int, scale_max: int = 5) -> float:
    """A 1..scale_max rating as a confidence in [0, 1] (1 -> 0, scale_max -> 1) for the rules' prefix."""
    return (float(confidence) - 1.0) / max(scale_max - 1, 1)


def mask_of(labels: Sequence[int] | None) -> np.ndarray:
    """(K,) bool mask of a list of counts (none: empty)."""
    mask = np.zeros(N_LABELS, dtype=bool)
    if labels:
        mask[list(labels)] = True
    return mask


def labels_of(mask: np.ndarray) -> list[int]:
    """The counts a (K,) mask holds, in increasing order."""
    return [int(y) for y in np.flatnonzero(np.asarray(mask, dtype=bool))]


def round_masks(protect_rule: Mapping[str, Any], supply_rule: Mapping[str, Any], answers: Sequence[int],
                confidences: Sequence[int], ai_sets: Sequence[Sequence[int]], scale_max: int = 5
                ) -> tuple[np.ndarray, np.ndarray]:
    """Protect and supply masks (K,) for round k = len(answers), from the prefix z_{t,k}.

    The participant enters one count per round, so the belief set H_{t,k} is that count alone.
    ``ai_sets`` are the sets shown after rounds 1..k-1; the rules are ``{"name": ..., "params": {...}}``.
    """
    k = len(answers)
    if k < 1 or len(confidences) != k or len(ai_sets) != k - 1:
        raise ValueError("round_masks needs k answers and confidences and k-1 earlier AI sets")
    belief = np.stack([mask_of([a]) for a in answers])
    prior = np.stack([mask_of(s) for s in ai_sets]) if ai_sets else np.zeros((0, N_LABELS), dtype=bool)
    prefix = Prefix(belief, np.asarray(answers, dtype=int),
                    np.asarray([confidence_unit(c, scale_max) for c in confidences], dtype=float), prior)
    protect = make_rule(protect_rule["name"], **(protect_rule.get("params") or {}))(prefix)
    supply = make_rule(supply_rule["name"], **(supply_rule.get("params") or {}))(prefix)
    return protect, supply


def ai_set(scores: np.ndarray, protect: np.ndarray, supply: np.ndarray, q_harm: float, q_comp: float) -> list[int]:
    """The counts the AI shows: ``controller.prediction_set`` as a sorted list of labels."""
    return labels_of(prediction_set(scores, protect, q_harm, q_comp, supply))


__all__ = ["ai_set", "confidence_unit", "labels_of", "mask_of", "round_masks"]
