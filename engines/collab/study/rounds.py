"""One engine call per finished round of the collaboration study: freeze, rules, set, errors, stream update.

The trial step of ``studies/collab_shapes`` calls ``submit_round`` from its ``after_submit`` once per
submitted round. It runs inside the runtime's write transaction that stores the answer
(``ctx.session``), so everything below commits or rolls back with it (Noorani et al., ICML 2026,
arXiv:2602.17646, the online two-threshold controller with frozen thresholds per interaction):

- Round 1 of interaction t starts its record: the image (``images.interaction_seed``, difficulty
  drawn from the seed), the condition's mode and, with an AI, the stream's thresholds (q^H, q^C) and
  update count (``frozen_seq``) read now with ``store.open_stream`` on the step's session. Every set
  of the interaction uses them; updates of other participants landing before this one's are its delay.
- A round that is not final gets its set: the protect and supply masks on the prefix z_{t,k} (the
  answers and confidences of rounds 1..k and the sets already shown, ``sets.round_masks``) and
  ``controller.prediction_set`` at the frozen thresholds. It is stored, and round k+1 shows the stored
  set, so the set seen is the set stored. No set follows a final answer.
- A final answer records the outcome (final answer, truth, correct) and, when sets were shown, the
  interaction's errors (``controller.interaction_errors`` over the shown rounds: the max over rounds
  of the activated omission) and the stream update: ``store.record_interaction`` in the same
  transaction, idempotent per "<participant id>:<interaction index>", with ``frozen_seq`` and s(Y).

The typed record (``record.InteractionRecord``) goes back into ``ctx.vars`` under ``collab.interactions``.
``interaction_log`` and ``image_of`` are what the study's read-only hooks use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from engines.collab import store
from engines.collab.controller import interaction_errors
from engines.collab.study.cases import TrialCase, trial_case
from engines.collab.study.conditions import calibration_size, initial_state
from engines.collab.study.images import interaction_difficulty, interaction_seed
from engines.collab.study.record import VARS_KEY, InteractionLog, InteractionRecord, RoundRecord
from engines.collab.study.sets import ai_set, labels_of, mask_of, round_masks
from engines.platform.files import echo
from engines.platform.study import StepContext


@dataclass(frozen=True)
class RoundsConfig:
    """What a study instance's constants fix about its interactions.

    Args:
        rounds: rounds per interaction; the last one is always final.
        protect_rule, supply_rule: ``{"name": <registered rule>, "params": {...}}`` (``engines.collab.rules``).
        confidence_max: the top of the confidence scale (1..confidence_max), mapped to [0, 1] for the rules.
        image_seed: the base of every image seed (``images.interaction_seed``).
        difficulty: (low, high), the range image difficulties are drawn from.
    """

    rounds: int = 3
    protect_rule: Mapping[str, Any] = field(default_factory=lambda: {"name": "human_holds", "params": {}})
    supply_rule: Mapping[str, Any] = field(default_factory=lambda: {"name": "human_lacks", "params": {}})
    confidence_max: int = 5
    image_seed: int | str = 2026
    difficulty: tuple[float, float] = (0.4, 1.0)

    def __post_init__(self):
        if self.rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {echo(self.rounds)}")


class RoundAnswer(Protocol):
    """A submitted round: the study's response model has these fields."""

    answer: int
    confidence: int
    final: bool


def mode_of(ctx: StepContext) -> str:
    """The participant's condition mode: "online", "fixed" or "none" (no AI)."""
    return ctx.condition_params.get("mode", "none")


def stream_key(study_slug: str, condition: str) -> str:
    """One controller stream per condition, shared by its participants."""
    return f"{study_slug}:{condition}"


def interaction_key(participant_id: int, index: int) -> str:
    """The stream update's idempotency key: a resent final answer is not applied twice."""
    return f"{participant_id}:{index}"


def image_of(ctx: StepContext, config: RoundsConfig, index: int) -> tuple[int, float]:
    """(seed, difficulty) of the participant's interaction ``index``: the same after a refresh, another for anyone else."""
    seed = interaction_seed(config.image_seed, ctx.study_slug, ctx.external_id, index)
    low, high = config.difficulty
    return seed, interaction_difficulty(seed, low, high)


def interaction_log(ctx: StepContext) -> InteractionLog:
    """The participant's interactions so far, typed (``record.InteractionLog``)."""
    return InteractionLog.from_vars(ctx.vars)


def interaction_record(ctx: StepContext, index: int) -> InteractionRecord | None:
    """The participant's interaction ``index`` alone (None when not begun), without typing the whole log.

    ``is_displayed`` asks this for every trial slot ahead when the page counts the steps left.
    """
    stored = ((ctx.vars or {}).get(VARS_KEY) or {}).get("interactions") or []
    return InteractionRecord.model_validate(stored[index]) if 0 <= index < len(stored) else None


def begin_interaction(ctx: StepContext, config: RoundsConfig, index: int) -> InteractionRecord:
    """Start interaction ``index``: its image and, with an AI, the thresholds frozen now in ``ctx.session``."""
    seed, difficulty = image_of(ctx, config, index)
    mode = mode_of(ctx)
    record = InteractionRecord(index=index, seed=seed, difficulty=difficulty, mode=mode,
                               stream=None, q_harm=None, q_comp=None, rounds=[])
    if mode != "none":
        key = stream_key(ctx.study_slug, ctx.condition)
        params = ctx.condition_params
        snapshot = store.open_stream(ctx.session, key, initial_state(params), study_slug=ctx.study_slug,
                                     condition=ctx.condition, calibration_size=calibration_size(params))
        record.stream, record.q_harm, record.q_comp = key, snapshot.state.q_harm, snapshot.state.q_comp
        record.frozen_seq, record.calibrating = snapshot.updates, snapshot.calibrating
    return record


def submit_round(ctx: StepContext, config: RoundsConfig, index: int, rnd: int,
                 answer: RoundAnswer) -> InteractionRecord:
    """Record round ``rnd`` (from 1) of interaction ``index`` (from 0) and store the log in ``ctx.vars``.

    Runs in the step's write transaction (``ctx.session``): the stream is opened and, on a final
    answer, updated in it, so the answer, the frozen thresholds and the update commit together.
    The runtime stores a step once, so a resubmitted round never reaches here.

    Args:
        ctx: the trial step's context (participant, condition, vars, session).
        config: the instance's constants (``RoundsConfig``).
        index: the interaction, from 0.
        rnd: the round within it, from 1; round 1 starts the interaction.
        answer: the submitted answer, confidence and final flag; the last round is final regardless.

    Returns:
        The interaction's record after this round (also written to ``ctx.vars``).
    """
    log = interaction_log(ctx)
    if rnd == 1:
        log.start(begin_interaction(ctx, config, index))
    record = log[index]
    final = bool(answer.final) or rnd >= config.rounds
    record.rounds.append(RoundRecord(answer=answer.answer, confidence=answer.confidence))
    case = trial_case(record.seed, record.difficulty)
    if record.mode != "none" and not final:
        _show_set(record, config, case.scores)
    if final:
        _finish(ctx, record, rnd, answer.answer, case)
    log.write_to(ctx.vars)
    return record


def _show_set(record: InteractionRecord, config: RoundsConfig, scores: np.ndarray) -> None:
    """The set that follows the last round: rule masks on the prefix, then the set at the frozen thresholds."""
    rounds = record.rounds
    protect, supply = round_masks(
        config.protect_rule, config.supply_rule, [r.answer for r in rounds], [r.confidence for r in rounds],
        [r.ai_set for r in rounds[:-1]], scale_max=config.confidence_max)
    this = rounds[-1]
    this.protect, this.supply = labels_of(protect), labels_of(supply)
    this.ai_set = ai_set(scores, protect, supply, record.q_harm, record.q_comp)


def _finish(ctx: StepContext, record: InteractionRecord, rnd: int, final_answer: int, case: TrialCase) -> None:
    """The outcome and, when sets were shown, the errors and the stream update (in ``ctx.session``)."""
    record.final_round, record.final_answer = rnd, final_answer
    record.true_count, record.correct = case.count, final_answer == case.count
    shown = record.shown_rounds
    if record.mode == "none" or not shown:
        return
    errors = interaction_errors(case.scores, case.count, [mask_of(r.protect) for r in shown],
                                [mask_of(r.supply) for r in shown], record.q_harm, record.q_comp)
    update = store.record_interaction(
        record.stream, interaction_key(ctx.participant_id, record.index), err_harm=errors.err_harm,
        err_comp=errors.err_comp, fired_harm=errors.fired_harm, fired_comp=errors.fired_comp,
        participant_id=ctx.participant_id, frozen_seq=record.frozen_seq,
        score_true=float(case.scores[case.count]), session=ctx.session)
    record.err_harm, record.err_comp = errors.err_harm, errors.err_comp
    record.fired_harm, record.fired_comp = errors.fired_harm, errors.fired_comp
    record.stream_seq, record.stream_phase = update.seq, update.phase
    record.q_harm_after, record.q_comp_after = update.after.q_harm, update.after.q_comp


__all__ = ["RoundAnswer", "RoundsConfig", "begin_interaction", "image_of", "interaction_key", "interaction_log",
           "mode_of", "stream_key", "submit_round"]
