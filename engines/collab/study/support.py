"""Helpers of the crowdsourced shape-counting study (``studies/collab_shapes``): images, the AI, rules, rows.

- Deterministic images: ``interaction_seed`` hashes (seed base, study slug, external id,
  interaction index) into a seed, so a participant sees the same image after a refresh and two
  participants see different ones; ``interaction_difficulty`` draws the difficulty from it.
- The AI: ``trial_case`` generates the image and runs the shipped CNN on it (model and cases
  cached per process; torch is imported only here, on first use).
- The controller: ``initial_state`` and ``calibration_size`` read a condition's parameters;
  ``rounds.submit_round`` opens the stream with ``engines.collab.store.open_stream`` *inside the
  step's open write transaction* (``store.ensure_stream`` opens one of its own, which would wait
  forever on SQLite's write lock held by a step's ``after_submit``).
- Rules: ``round_masks`` builds the prefix z_{t,k} from the participant's answers so far (belief
  set = the single count entered) and evaluates the study's protect and supply rules on it.
- Stored records: ``interaction_rows`` (a study's) and ``participant_interactions`` (one
  participant's) read the typed records (``record``) back from the participants' vars.

No Streamlit here (layering): the renderer in ``pages/_renderers/collab_trial.py`` calls these.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.collab.controller import ControllerConfig, ControllerState, prediction_set
from engines.collab.rules import Prefix, make_rule
from engines.collab.shapes import N_LABELS, generate_task, to_png_bytes
from engines.collab.study.record import InteractionLog, StudyInteraction
from engines.platform.db import read_session
from engines.platform.files import echo
from engines.platform.models import Participant, Study

CONFIG_KEYS = ("alpha_harm", "alpha_comp", "eta_harm", "eta_comp", "q_harm_init", "q_comp_init", "conditional")


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


def interaction_seed(seed_base: int | str, study_slug: str, external_id: str, index: int) -> int:
    """A 63-bit image seed from sha256("{seed_base}:{study_slug}:{external_id}:{index}")."""
    digest = hashlib.sha256(f"{seed_base}:{study_slug}:{external_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def interaction_difficulty(seed: int, low: float, high: float) -> float:
    """Difficulty in [low, high], drawn from the image seed (rounded to 3 decimals, stable in JSON)."""
    u = np.random.default_rng([seed, 1]).uniform()
    return round(float(low + (high - low) * u), 3)


@functools.lru_cache(maxsize=4096)
def _task(seed: int, difficulty: float):
    return generate_task(seed, difficulty)


@functools.lru_cache(maxsize=4096)
def trial_case(seed: int, difficulty: float) -> TrialCase:
    """The image's truth and the shipped CNN's probabilities (cached: the page asks on every rerun)."""
    from engines.collab.counter import load_counter, predict_proba  # torch: imported on first use only

    task = _task(seed, difficulty)
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


@functools.lru_cache(maxsize=512)
def trial_png(seed: int, difficulty: float, scale: int = 5) -> bytes:
    """PNG bytes of the interaction's image, enlarged ``scale`` times (nearest neighbour)."""
    return to_png_bytes(_task(seed, difficulty).image, scale=scale)


def trial_question(seed: int, difficulty: float) -> str:
    return _task(seed, difficulty).question


def controller_config(params: Mapping[str, Any]) -> ControllerConfig:
    """The controller config of a condition's parameters (the keys in ``CONFIG_KEYS``; others ignored)."""
    return ControllerConfig(**{k: params[k] for k in CONFIG_KEYS if k in params})


def calibration_size(params: Mapping[str, Any]) -> int:
    """How many of a condition's first interactions form its calibration batch (``calibration_interactions``, default 0)."""
    size = params.get("calibration_interactions", 0)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise ValueError(f"calibration_interactions must be a whole number >= 0, got {echo(size)}")
    return size


def initial_state(params: Mapping[str, Any]) -> ControllerState:
    """q_1 from the condition's ``q_harm_init``/``q_comp_init``; ``mode="fixed"`` forces η = 0."""
    config = controller_config(params)
    if params.get("mode") == "fixed":
        config = dataclasses.replace(config, eta_harm=0.0, eta_comp=0.0)
    return ControllerState.initial(config)


def confidence_unit(confidence: int, scale_max: int = 5) -> float:
    """A 1..scale_max rating as a confidence in [0, 1] (1 -> 0, scale_max -> 1) for the rules' prefix."""
    return (float(confidence) - 1.0) / max(scale_max - 1, 1)


def mask_of(labels: Sequence[int] | None) -> np.ndarray:
    """(K,) bool mask of a list of counts (none: empty)."""
    mask = np.zeros(N_LABELS, dtype=bool)
    if labels:
        mask[list(labels)] = True
    return mask


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


def interaction_rows(study_slug: str, *, engine: Engine | None = None) -> list[StudyInteraction]:
    """One typed row per started interaction of the study's participants, from their stored vars.

    The platform export (``engines.platform.export``) has the typed answers but not participant
    vars; this gives the derived data (image seed, frozen thresholds, sets shown, truth, errors,
    stream seq) for analysis. ``StudyInteraction.to_row`` flattens a row (rounds stay a list of dicts).
    """
    rows = []
    with read_session(engine) as session:
        participants = session.exec(
            select(Participant).join(Study, Study.id == Participant.study_id)
            .where(Study.slug == study_slug).order_by(Participant.id)).all()
        for participant in participants:
            for record in InteractionLog.from_vars(participant.vars):
                rows.append(StudyInteraction(participant_id=participant.id, external_id=participant.external_id,
                                             condition=participant.condition, record=record))
    return rows


def participant_interactions(participant_id: int, *, engine: Engine | None = None) -> InteractionLog:
    """The typed interactions stored for one participant (empty for an unknown participant)."""
    with read_session(engine) as session:
        participant = session.get(Participant, participant_id)
        return InteractionLog.from_vars(participant.vars if participant is not None else None)


def labels_of(mask: np.ndarray) -> list[int]:
    return [int(y) for y in np.flatnonzero(np.asarray(mask, dtype=bool))]


__all__ = [
    "TrialCase", "ai_set", "calibration_size", "confidence_unit", "controller_config", "initial_state", "interaction_difficulty",
    "interaction_rows", "interaction_seed", "labels_of", "mask_of", "participant_interactions", "round_masks",
    "trial_case", "trial_png", "trial_question",
]
