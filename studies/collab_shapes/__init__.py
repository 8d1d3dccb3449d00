"""Counting shapes with an AI: multi-round human-AI collaboration under an online two-threshold controller.

The crowdsourced "pictorial reasoning" study (after Noorani et al., ICML 2026, arXiv:2602.17646;
``docs/collab.md``, Method). Each participant does ``C.INTERACTIONS`` interactions of up to ``C.ROUNDS``
rounds: they see an image ("How many triangles?") and enter a count and a confidence; the AI then
shows its set of likely counts; they revise; and so on until they mark an answer final (round 1
cannot be final when there is an AI, the last round always is). Feedback (``C.FEEDBACK``) follows
each interaction. Consent, instructions with a worked example, a comprehension check, an
attention check before and after the trials, a post-survey (trust, workload) and a completion code
frame the trials.

Conditions (``C.CONDITIONS``): ``online`` (the controller's thresholds move after every finished
interaction), ``fixed`` (the same sets with thresholds frozen at their initial values, η = 0),
``no_ai`` (no set: human alone). One controller stream per condition, key "<study slug>:<condition>",
shared by all its participants (``engines.collab.store``).

Design, in the order the data flows (``Trial.after_submit`` hands each submitted round to
``engines.collab.study.rounds.submit_round``, one engine call that does the steps below in the step's
write transaction):

- Image: seed = sha256("{C.IMAGE_SEED}:{slug}:{external id}:{interaction index}") (63 bits), difficulty
  drawn from the seed in ``C.DIFFICULTY``; the AI is the shipped CNN on that image.
- Calibration batch: a condition's first ``calibration_interactions`` finished interactions (over all
  its participants) run at ``q_*_init`` and only record their outcome; the stream then fits q_1 on
  them (split-conformal, ``engines.collab.store``) and the controller starts from it.
- Frozen thresholds: when round 1 of interaction t is submitted, the engine reads the stream's
  current (q^H, q^C) and update count (``frozen_seq``) in the same write transaction and stores them
  with the interaction; every set of the interaction uses them. Nothing shown before that depends on
  the thresholds. Updates of other participants landing before this one's are its delay, which the
  stream's audit turns into the delay-aware bound.
- Sets: the set of round k is computed once, when round k is submitted, from the prefix (the
  participant's answers and confidences of rounds 1..k and the sets already shown) with the rules
  ``C.PROTECT_RULE``/``C.SUPPLY_RULE`` and ``controller.prediction_set``; it is stored, and round k+1
  displays the stored set, so the set seen is the set stored. No set follows a final answer.
- Errors and update: when an answer is final, ``controller.interaction_errors`` over the rounds whose
  set was shown (max over rounds of the activated omission) gives (err^H, err^C), and
  ``store.record_interaction`` (idempotent per "<participant id>:<interaction index>") applies it to
  the condition's stream in the same transaction as the answer (``online`` and ``fixed``; the fixed
  stream has η = 0, so it only counts violations).
- Stored: each round's typed answer (answer, confidence, final) as a step response; the derived
  data in the participant's vars under ``collab.interactions[i]`` (``engines.collab.study.record``):
  seed, difficulty, mode, stream, frozen q_harm/q_comp and frozen_seq, per round {answer,
  confidence, protect, supply, ai_set}, and at the end final_round, final_answer, true_count,
  correct, err/fired flags and the stream update's seq, phase and thresholds after it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import BaseModel, Field, create_model

from engines.collab.rules import Prefix, register_rule
from engines.collab.study.cases import trial_case
from engines.collab.study.conditions import CONFIG_KEYS, calibration_size, initial_state
from engines.collab.study.images import trial_question
from engines.collab.study.record import InteractionRecord
from engines.collab.study.rounds import (
    RoundsConfig,
    image_of,
    interaction_log,
    interaction_record,
    mode_of,
    submit_round,
)
from engines.platform.study import Check, CompletionStep, ConsentStep, Constants, InfoStep, Step, StepContext


class C(Constants):
    NAME = "collab_shapes"
    TITLE = "Counting shapes with an AI"
    COMPLETION_CODE = "SHAPES2026"
    SCREENED_OUT_CODE = "SHAPESSCREEN"
    MAX_ATTENTION_FAILURES = 1  # screened out after failing both attention checks
    ESTIMATED_MINUTES = None  # None: derived from INTERACTIONS and ROUNDS (estimated_minutes)
    INTERACTIONS = 20
    ROUNDS = 3
    CONFIDENCE_MAX = 5
    # Online first: least-filled assignment breaks ties by this order.
    CONDITIONS: ClassVar = {
        # q_*_init serve the calibration batch (its first calibration_interactions interactions); then q_1
        # is the split-conformal fit on that batch: online moves from there, fixed stays there.
        "online": {"mode": "online", "alpha_harm": 0.1, "alpha_comp": 0.1, "eta_harm": 0.05, "eta_comp": 0.05,
                   "q_harm_init": 0.9, "q_comp_init": 0.8, "calibration_interactions": 40},
        "fixed": {"mode": "fixed", "alpha_harm": 0.1, "alpha_comp": 0.1, "q_harm_init": 0.9, "q_comp_init": 0.8,
                  "calibration_interactions": 40},
        "no_ai": {"mode": "none"},
    }
    PROTECT_RULE: ClassVar = {"name": "human_holds", "params": {}}
    SUPPLY_RULE: ClassVar = {"name": "human_lacks", "params": {}}
    FEEDBACK = "truth"  # "truth": the correct count after each interaction; "none": no feedback
    IMAGE_SEED = 2026
    DIFFICULTY: ClassVar = (0.4, 1.0)  # image difficulty range (0 easy .. 1 hard), drawn per image
    IMAGE_SCALE = 5  # 64 px images shown at 320 px
    # Worked example on the instructions page (a fixed image and an example set).
    EXAMPLE_SEED = 12
    EXAMPLE_DIFFICULTY = 0.3


# RESPONSE SCHEMAS


TASK_CHOICES = ("How many triangles are in the image", "How many shapes are in the image",
                "Which shape appears most often")


def rounds_choice(rounds: int) -> str:
    """The right answer to "How many rounds can one image take?" when an image takes at most ``rounds``."""
    return "1" if rounds == 1 else f"Up to {rounds}"


@functools.cache
def comprehension_response(rounds: int) -> type[BaseModel]:
    """The comprehension check's schema for an instance whose images take at most ``rounds`` rounds.

    The right choice names the instance's own number of rounds; the wrong ones stay wrong for any number.
    """
    choices = ("1", rounds_choice(max(rounds, 2)), "As many as I like")
    return create_model(
        "ComprehensionResponse",
        task=(Literal[TASK_CHOICES], Field(title="What do you enter in each round?")),
        rounds=(Literal[choices], Field(title="How many rounds can one image take?")),
    )


ComprehensionResponse = comprehension_response(C.ROUNDS)


class TrialResponse(BaseModel):
    # The page asks "How many triangles?" above the image; the field is the answer to it.
    answer: int = Field(ge=0, le=9, title="Your count", description="a whole number from 0 to 9")
    confidence: int = Field(ge=1, le=5, title="How confident are you?",
                            description="1 = guessing, 5 = certain", json_schema_extra={"widget": "likert"})
    final: bool = Field(default=False, title="This is my final answer")


class AttentionResponse(BaseModel):
    answer: Literal["Never", "Rarely", "Sometimes", "Often", "Always"] = Field(
        title="To show you are reading carefully, please select 'Rarely'.")


class SurveyResponse(BaseModel):
    trust: int = Field(ge=1, le=7, title="How much did you trust the AI's suggestions?",
                       description="1 = not at all, 7 = completely (if you saw none, answer 1)",
                       json_schema_extra={"widget": "likert"})
    workload: int = Field(ge=1, le=7, title="How mentally demanding was the task?",
                          description="1 = very low, 7 = very high", json_schema_extra={"widget": "likert"})
    comments: str = Field(default="", max_length=500, title="Any comments? (optional)")


# FUNCTIONS


# A rule of this study's own, registered like the built-ins (engines.collab.rules): researchers pick it
# by name ("near_count") in the study's constants or on the New study page, never as code.
@dataclass(frozen=True)
class NearCountParams:
    width: int = field(default=1, metadata={"help": "protect the counts within ± width of the answer",
                                            "min": 0, "max": 3})

    def __post_init__(self):
        if isinstance(self.width, bool) or not isinstance(self.width, int) or not 0 <= self.width <= 3:
            raise ValueError(f"near_count: width must be a whole number 0..3, got {self.width!r}")


@register_rule("near_count", params=NearCountParams, role="protect")
def near_count(prefix: Prefix, params: NearCountParams) -> np.ndarray:
    """Protect the counts within ``width`` of the participant's current count.

    People who miscount are usually off by one, so a set that keeps the neighbours of their count
    does not take the truth away from a near miss. It overlaps the default supply rule (the
    neighbours are counts the participant lacks); the controller allows overlapping rules.
    """
    labels = np.arange(prefix.n_labels)
    return np.abs(labels - prefix.answers[-1]) <= params.width



def estimated_minutes(C) -> int:
    """Minutes announced on the consent page: ``C.ESTIMATED_MINUTES``, or about 12 s per round plus 3 min.

    Derived from the instance's INTERACTIONS and ROUNDS unless set, so a shorter instance does not
    announce the default's 15 minutes (20 images of at most 3 rounds).
    """
    if C.ESTIMATED_MINUTES is not None:
        return int(C.ESTIMATED_MINUTES)
    return 3 + math.ceil(C.INTERACTIONS * C.ROUNDS / 5)


def slot(round_number: int) -> tuple[int, int]:
    """(interaction index from 0, round from 1) of the trial step's ``round_number`` (1-based)."""
    return (round_number - 1) // C.ROUNDS, (round_number - 1) % C.ROUNDS + 1


def rounds_of(ctx: StepContext) -> int:
    return min(int(ctx.C.ROUNDS), C.ROUNDS)  # an instance may lower ROUNDS, not raise it (repeat is fixed)


def rounds_config(ctx: StepContext) -> RoundsConfig:
    """This instance's constants as the engine's rounds read them."""
    return RoundsConfig(rounds=rounds_of(ctx), protect_rule=ctx.C.PROTECT_RULE, supply_rule=ctx.C.SUPPLY_RULE,
                        confidence_max=ctx.C.CONFIDENCE_MAX, image_seed=ctx.C.IMAGE_SEED,
                        difficulty=tuple(ctx.C.DIFFICULTY))


def feedback_for(ctx: StepContext, record: InteractionRecord | None) -> str:
    if ctx.C.FEEDBACK != "truth" or record is None or not record.is_final:
        return ""
    verdict = "right" if record.correct else "not right"
    return (f"Previous image: the correct count was **{record.true_count}**; your final answer "
            f"{record.final_answer} was {verdict}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_constants(C) -> None:
    """Reject constants (a study instance's overrides included) this study cannot run with, before anyone enters."""
    from engines.collab.rules import make_rule

    most = Trial.repeat // Trial.rounds_declared
    if not 1 <= C.INTERACTIONS <= most:
        raise ValueError(f"INTERACTIONS must be 1..{most}, got {C.INTERACTIONS!r}")
    if not 1 <= C.ROUNDS <= Trial.rounds_declared:
        raise ValueError(f"ROUNDS must be 1..{Trial.rounds_declared}, got {C.ROUNDS!r}")
    if C.FEEDBACK not in ("truth", "none"):
        raise ValueError(f"FEEDBACK must be 'truth' or 'none', got {C.FEEDBACK!r}")
    scale_max = next(m.le for m in TrialResponse.model_fields["confidence"].metadata if hasattr(m, "le"))
    if C.CONFIDENCE_MAX != scale_max:
        raise ValueError(f"CONFIDENCE_MAX must match the confidence question's scale (1..5), got {C.CONFIDENCE_MAX!r}")
    if not (isinstance(C.IMAGE_SCALE, int) and 1 <= C.IMAGE_SCALE <= 12):
        raise ValueError(f"IMAGE_SCALE must be a whole number 1..12, got {C.IMAGE_SCALE!r}")
    minutes = C.ESTIMATED_MINUTES
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, int) or not 1 <= minutes <= 600):
        raise ValueError(f"ESTIMATED_MINUTES must be a whole number 1..600 or null (derived), got {minutes!r}")
    if C.MAX_ATTENTION_FAILURES is not None and C.MAX_ATTENTION_FAILURES < 0:
        raise ValueError(f"MAX_ATTENTION_FAILURES must be >= 0 or null, got {C.MAX_ATTENTION_FAILURES!r}")
    difficulty = C.DIFFICULTY
    if not (isinstance(difficulty, (list, tuple)) and len(difficulty) == 2 and all(map(_is_number, difficulty))
            and 0.0 <= difficulty[0] <= difficulty[1] <= 1.0):
        raise ValueError(f"DIFFICULTY must be [low, high] with 0 <= low <= high <= 1, got {difficulty!r}")
    if not (_is_number(C.EXAMPLE_DIFFICULTY) and 0.0 <= C.EXAMPLE_DIFFICULTY <= 1.0):
        raise ValueError(f"EXAMPLE_DIFFICULTY must be a number in [0, 1], got {C.EXAMPLE_DIFFICULTY!r}")
    for role, rule in (("PROTECT_RULE", C.PROTECT_RULE), ("SUPPLY_RULE", C.SUPPLY_RULE)):
        if not isinstance(rule, dict) or "name" not in rule or not isinstance(rule.get("params") or {}, dict):
            raise ValueError(f'{role} must be {{"name": <registered rule>, "params": {{...}}}}, got {rule!r}')
        try:
            make_rule(rule["name"], **(rule.get("params") or {}))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{role}: {exc}") from None
    allowed = {"mode", "calibration_interactions", *CONFIG_KEYS}
    for name, params in C.CONDITIONS.items():
        if not isinstance(params, dict):
            raise ValueError(f'CONDITIONS[{name!r}] must be an object like {{"mode": "online", ...}}, got {params!r}')
        unknown = sorted(set(params) - allowed)
        if unknown:
            raise ValueError(f"CONDITIONS[{name!r}]: unknown keys {unknown} (allowed: {sorted(allowed)})")
        if params.get("mode") not in ("online", "fixed", "none"):
            raise ValueError(f"CONDITIONS[{name!r}].mode must be 'online', 'fixed' or 'none', got {params.get('mode')!r}")
        if params["mode"] != "none":
            # Round 1 is the participant alone; an AI set needs a round after it.
            if C.ROUNDS < 2:
                raise ValueError(f"CONDITIONS[{name!r}] shows an AI set, which needs ROUNDS >= 2 (got {C.ROUNDS})")
            try:
                initial_state(params)
                calibration_size(params)
            except (ValueError, TypeError) as exc:
                raise ValueError(f"CONDITIONS[{name!r}]: {exc}") from None


# STEPS


class Consent(ConsentStep):
    title = "Consent"
    body = ("You are invited to a study on how people work with an AI on a counting task. You will count "
            "triangles in {n} small images (about {minutes} minutes). We store your answers with your panel id "
            "only. Taking part is voluntary; you can stop at any time by closing the page.")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"minutes": estimated_minutes(ctx.C), "n": ctx.C.INTERACTIONS}


class Instructions(InfoStep):
    title = "How it works"
    template = "collab_instructions"
    body = ("You will see {n} images, one at a time. For each image, count the **triangles** (ignore the other "
            "shapes) and say how sure you are, from 1 (guessing) to 5 (certain): type the number, pick your "
            "confidence, then press *Submit answer*.\n\n{ai_part}\n\n**Worked example.** {example}")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        example = trial_case(ctx.C.EXAMPLE_SEED, ctx.C.EXAMPLE_DIFFICULTY)
        if mode_of(ctx) == "none":
            ai_part = (f"You have up to {rounds_of(ctx)} rounds per image: you may check the image again and "
                       "revise your count, or tick *This is my final answer*.")
            text = f"This image has {example.count} triangles, so the right answer is {example.count}."
        else:
            ai_part = (f"After your first answer an AI shows its **set of likely counts** (for example "
                       "`3` `4`): counts it thinks could be right. You then revise your answer (or keep it) "
                       f"and may tick *This is my final answer*. An image takes at most {rounds_of(ctx)} rounds; "
                       "the AI can be wrong, and its set can even be empty when it is unsure.")
            top = sorted(range(len(example.probs)), key=lambda y: -example.probs[y])[:2]
            text = (f"Suppose you answered {example.count + 1}. The AI might show the set "
                    f"`{min(top)}` `{max(top)}`: it thinks the count is one of these. Looking again you find "
                    f"{example.count} triangles, change your answer to {example.count} and mark it final.")
        return {"n": ctx.C.INTERACTIONS, "ai_part": ai_part, "example": text,
                "example_seed": ctx.C.EXAMPLE_SEED, "example_difficulty": ctx.C.EXAMPLE_DIFFICULTY}


class Comprehension(Step):
    title = "Quick check"
    Response = ComprehensionResponse
    reopen = Instructions
    check = Check(answers=lambda C: {"task": TASK_CHOICES[0], "rounds": rounds_choice(min(C.ROUNDS, Trial.rounds_declared))},
                  max_attempts=2, on_fail="screen_out",
                  feedback="Some answers are not right. Please read the instructions again (below) and retry.")

    @classmethod
    def response_model(cls, C) -> type[BaseModel]:
        return comprehension_response(min(C.ROUNDS, Trial.rounds_declared))

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"rounds": rounds_of(ctx)}


class AttentionBefore(Step):
    title = "Before we start"
    Response = AttentionResponse
    check = Check(answers={"answer": "Rarely"}, kind="attention", max_attempts=1, on_fail="continue")


class Trial(Step):
    """Round r of interaction i (``slot``); rounds after the final answer are skipped."""

    title = ""
    Response = TrialResponse
    repeat = C.INTERACTIONS * C.ROUNDS
    rounds_declared = C.ROUNDS  # an instance may lower ROUNDS and INTERACTIONS, not raise them
    template = "collab_trial"
    submit_label = "Submit answer"
    reopen = Instructions

    @staticmethod
    def is_displayed(ctx: StepContext) -> bool:
        index, rnd = slot(ctx.round_number)
        if index >= ctx.C.INTERACTIONS or rnd > rounds_of(ctx):
            return False
        if rnd == 1:
            return True
        record = interaction_record(ctx, index)
        return record is not None and not record.is_final and len(record.rounds) == rnd - 1

    @staticmethod
    def counts_as_step(ctx: StepContext) -> bool:
        # An image is one step of the study, however many rounds it takes.
        return slot(ctx.round_number)[1] == 1

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        index, rnd = slot(ctx.round_number)
        done = interaction_log(ctx)
        record = done.get(index)
        seed, difficulty = (record.seed, record.difficulty) if record else image_of(ctx, rounds_config(ctx), index)
        history = [{"answer": r.answer, "confidence": r.confidence, "ai_set": r.ai_set}
                   for r in (record.rounds if record else [])]
        mode = mode_of(ctx)
        return {
            "interaction": index + 1, "interactions": ctx.C.INTERACTIONS, "round": rnd, "rounds": rounds_of(ctx),
            "mode": mode, "seed": seed, "difficulty": difficulty, "question": trial_question(seed, difficulty),
            "history": history, "ai_set": history[-1]["ai_set"] if history else None,
            "can_finalise": not (rnd == 1 and mode != "none"), "last_round": rnd == rounds_of(ctx),
            "confidence_max": ctx.C.CONFIDENCE_MAX,
            "feedback": feedback_for(ctx, done[index - 1]) if rnd == 1 and 0 < index <= len(done) else "",
        }

    @staticmethod
    def validate(ctx: StepContext, response: BaseModel) -> dict[str, str]:
        _, rnd = slot(ctx.round_number)
        if rnd == 1 and response.final and mode_of(ctx) != "none":
            return {"final": "Please look at the AI's suggestion first; you can finalise from round 2."}
        if rnd == rounds_of(ctx) and not response.final:
            return {"final": "This is the last round for this image, so this answer is final."}
        return {}

    @staticmethod
    def after_submit(ctx: StepContext, response: BaseModel) -> None:
        index, rnd = slot(ctx.round_number)
        submit_round(ctx, rounds_config(ctx), index, rnd, response)


class AttentionAfter(Step):
    title = "Almost done"
    body = "{feedback}"
    Response = AttentionResponse
    check = Check(answers={"answer": "Rarely"}, kind="attention", max_attempts=1, on_fail="continue")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"feedback": feedback_for(ctx, interaction_log(ctx).last)}


class Survey(Step):
    title = "A few last questions"
    Response = SurveyResponse
    submit_label = "Finish"


class Completion(CompletionStep):
    body = "Your answers are saved. Thank you for taking part!"


# EXPORT


def export_files(slug: str, engine=None) -> dict[str, bytes]:
    """Interactions, controller-stream histories and their audit, added to the study's data export."""
    from engines.collab.study.export import study_files

    return study_files(slug, engine=engine)


step_sequence = [Consent, Instructions, Comprehension, AttentionBefore, Trial, AttentionAfter, Survey, Completion]

from studies.collab_shapes.bot import PlayerBot as PlayerBot  # noqa: E402 - the bot needs the steps above
