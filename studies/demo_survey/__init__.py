"""Demo survey: rate three AI writing suggestions, with or without the AI's explanation.

A short study that exercises every part of the runtime: consent, instructions that depend on
the condition, a comprehension check with one retry, repeated rating trials, an attention
check that screens out on failure, a post-survey and a completion code. Synthetic content.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from engines.platform.study import Check, CompletionStep, ConsentStep, Constants, InfoStep, Step, StepContext


class C(Constants):
    NAME = "demo_survey"
    TITLE = "Rating AI writing suggestions (demo)"
    CONDITIONS: ClassVar = {
        "plain": {"show_explanation": False},
        "explained": {"show_explanation": True},
    }
    COMPLETION_CODE = "DEMO2026"
    SCREENED_OUT_CODE = "DEMOSCREEN"
    MAX_ATTENTION_FAILURES = 0
    ESTIMATED_MINUTES = 3
    # (original sentence, AI suggestion, AI explanation) - synthetic examples.
    ITEMS: ClassVar = (
        ("Their going to the park tomorrow.", "They're going to the park tomorrow.",
         "'Their' is possessive; the sentence needs the contraction of 'they are'."),
        ("The results was significant.", "The results were significant.",
         "'Results' is plural, so the verb must be plural too."),
        ("We discussed about the plan.", "We discussed the plan.",
         "'Discuss' takes a direct object; 'about' is redundant."),
    )


# RESPONSE SCHEMAS


class ComprehensionResponse(BaseModel):
    task: Literal["Rate how helpful each suggestion is", "Write my own sentences", "Count words"] = Field(
        title="What will you do in this study?")


class RatingResponse(BaseModel):
    helpfulness: int = Field(ge=1, le=7, title="How helpful is the AI's suggestion?",
                             description="1 = not at all helpful, 7 = extremely helpful",
                             json_schema_extra={"widget": "likert"})
    would_accept: bool = Field(default=False, title="I would accept this suggestion")


class AttentionResponse(BaseModel):
    answer: Literal["Strongly disagree", "Disagree", "Agree", "Strongly agree"] = Field(
        title="To show you are reading carefully, please select 'Disagree'.")


class SurveyResponse(BaseModel):
    age: int = Field(ge=18, le=99, title="Your age")
    ai_use: Literal["Never", "Monthly", "Weekly", "Daily"] = Field(title="How often do you use AI writing tools?")
    comments: str = Field(default="", max_length=500, title="Any comments? (optional)")


# FUNCTIONS


def item_for_round(ctx: StepContext) -> dict:
    original, suggestion, explanation = ctx.C.ITEMS[ctx.round_number - 1]
    shown = ctx.condition_params.get("show_explanation")
    return {"original": original, "suggestion": suggestion,
            "explanation": f"\n\n**Why:** {explanation}" if shown else ""}


def validate_constants(C) -> None:
    """Refuse ITEMS this study cannot show: 1..3 triples of (original, suggestion, explanation) texts."""
    items = C.ITEMS
    if not isinstance(items, (list, tuple)) or not 1 <= len(items) <= Rating.repeat:
        raise ValueError(f"ITEMS must list 1..{Rating.repeat} items, got {items!r}")
    for n, item in enumerate(items):
        if not (isinstance(item, (list, tuple)) and len(item) == 3 and all(isinstance(t, str) and t for t in item)):
            raise ValueError(f"ITEMS[{n}] must be [original, suggestion, explanation] (three texts), got {item!r}")
    if not isinstance(C.ESTIMATED_MINUTES, int) or C.ESTIMATED_MINUTES < 1:
        raise ValueError(f"ESTIMATED_MINUTES must be a whole number >= 1, got {C.ESTIMATED_MINUTES!r}")


# STEPS


class Consent(ConsentStep):
    title = "Consent"
    body = ("This is a demo study of HAI Studio. You will rate {n} AI writing suggestions "
            "(about {minutes} minutes). Your answers are stored with your panel id only. "
            "You can stop at any time by closing the page.")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"minutes": ctx.C.ESTIMATED_MINUTES, "n": len(ctx.C.ITEMS)}


class Instructions(InfoStep):
    title = "Instructions"
    body = ("You will see a sentence and an AI's suggested correction{explanation_note}. "
            "Rate how helpful each suggestion is from 1 to 7, and tick the box if you would accept it.")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        note = ", together with the AI's explanation" if ctx.condition_params.get("show_explanation") else ""
        return {"explanation_note": note}


class Comprehension(Step):
    title = "Quick check"
    Response = ComprehensionResponse
    reopen = Instructions
    check = Check(answers={"task": "Rate how helpful each suggestion is"}, max_attempts=2, on_fail="screen_out",
                  feedback="That is not what this study asks. Please read the instructions again (below).")


class Rating(Step):
    title = "Suggestion {round} of {total}"
    body = "**Original:** {original}\n\n**AI suggestion:** {suggestion}{explanation}"
    Response = RatingResponse
    repeat = len(C.ITEMS)  # an instance may list fewer ITEMS, not more (validate_constants)

    @staticmethod
    def is_displayed(ctx: StepContext) -> bool:
        return ctx.round_number <= len(ctx.C.ITEMS)

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {**item_for_round(ctx), "round": ctx.round_number, "total": len(ctx.C.ITEMS)}


class Attention(Step):
    title = "One more question"
    Response = AttentionResponse
    check = Check(answers={"answer": "Disagree"}, kind="attention", max_attempts=1, on_fail="continue")


class Survey(Step):
    title = "About you"
    Response = SurveyResponse
    submit_label = "Finish"


class Completion(CompletionStep):
    body = "Your answers are saved. Thank you for taking part!"


step_sequence = [Consent, Instructions, Comprehension, Rating, Attention, Survey, Completion]

from studies.demo_survey.bot import PlayerBot as PlayerBot  # noqa: E402 - the bot needs the steps above
