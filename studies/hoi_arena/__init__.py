"""The HOI-Edit arena: participants compare two anonymous edits of the same photo and instruction.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``) ranks editing methods by pairwise human votes
besides HOI-Eval's scores, after GenAI-Arena's image-editing arena
(``fastchat/serve/gradio_block_arena_anony_ie.py``; ``docs/hoi.md``, "Method: Arena pairing"). Each
participant votes on ``C.ROUNDS`` pairs drawn from the benchmark folder ``C.BENCHMARK`` (the methods
``C.METHODS``): the source photo with its instruction, edits A and B side by side (the
sides swapped at random), and the buttons "A is better", "B is better", "Tie" and "Both are bad".
Only after the vote is stored does the next page name the two methods, with *Next* to go on.

What a study compares is fixed when it is created, in its constants: the folder (``C.BENCHMARK``,
a folder the app owns: ``shipped/hoi/demo``, ``datasets/hoi/<name>`` or ``jobs/<id>``), the
methods (``C.METHODS``, two or more, each named) and the name each is revealed under
(``C.LABELS``). A method whose edits reach the folder later (a run written into it, say) joins only
studies created after it; a label changed in ``methods.json`` later changes no running study. The
Studies page lists these constants before a study is created, and Research -> HOI-Edit shows
each arena study's methods and creates one from the methods chosen there
(``engines.hoi.arena.frozen_methods``).

Design:

- The pairs (``engines.hoi.arena.draw_plan``: seeded by study and participant, balanced over
  method pairs, no item twice in a row) are drawn when the participant consents and stored in
  their variables, so a reload, a restart or a change to the folder never changes what they see.
- One step class, ``Battle``, alternates the two pages of a pair: its odd rounds are votes, its
  even rounds the reveals, so a reveal is a step of its own, reached only once the vote is stored
  (and a vote sent again after it, say by a double click, is refused by the runtime as a step
  already answered).
- A vote is stored as the step's answer ``{"pair": n, "choice": <button>}``; ``export_files`` adds
  every vote of the study as ``hoi_arena_votes.jsonl`` for ``python -m engines.hoi ratings --votes``.
"""

from __future__ import annotations

import json
import math
from typing import ClassVar

from pydantic import BaseModel, Field

from engines.hoi import arena
from engines.platform.files import echo
from engines.platform.study import CompletionStep, ConsentStep, Constants, InfoStep, Step, StepContext


class C(Constants):
    NAME = "hoi_arena"
    TITLE = "Which photo edit is better?"
    CONDITIONS: ClassVar = {"arena": {}}
    COMPLETION_CODE = "HOIARENA26"
    ESTIMATED_MINUTES = 0  # 0: derived from ROUNDS (estimated_minutes)
    # A HOI-Edit benchmark folder with <method>_frames/, as the HOI-Edit page names it (a folder the
    # app owns; "assets/hoi/demo", the form older studies stored, still names the shipped demo).
    BENCHMARK = "shipped/hoi/demo"
    ROUNDS = 10  # pairs each participant votes on
    # The methods compared, fixed for the study: two or more with edits in BENCHMARK.
    METHODS: ClassVar = ("offline-drift", "offline-faithful", "offline-i2v", "offline-i2v-scpe", "offline-noisy",
                         "offline-timid")
    # The name each method is revealed under after the vote, fixed for the study (one per method).
    LABELS: ClassVar = {
        "offline-drift": "Offline editor (identity drift)",
        "offline-faithful": "Offline editor (faithful)",
        "offline-i2v": "Offline I2V (plain prompt)",
        "offline-i2v-scpe": "Offline I2V + SCPE",
        "offline-noisy": "Offline editor (noisy)",
        "offline-timid": "Offline editor (timid)",
    }


MAX_ROUNDS = 50  # Battle.repeat / 2: an instance may lower ROUNDS below this, not raise it above


# RESPONSE SCHEMAS


class BattleResponse(BaseModel):
    # Which pair the page showed (set by the page, not typed): an answer meant for another pair is refused.
    pair: int = Field(ge=1, le=MAX_ROUNDS, title="Pair")
    # The button pressed; none on the reveal page, which only moves on.
    choice: arena.Choice | None = Field(default=None, title="Which edit is better?")


# FUNCTIONS


def estimated_minutes(C) -> int:
    """Minutes announced on the consent page: ``C.ESTIMATED_MINUTES``, or about 20 s per pair plus 2 minutes."""
    return int(C.ESTIMATED_MINUTES) or 2 + math.ceil(C.ROUNDS / 3)


def validate_constants(C) -> None:
    """Reject constants this study cannot run with, before anyone enters: the folder must be one
    the app owns and offer pairs of the named methods, and each method must have its name."""
    if isinstance(C.ROUNDS, bool) or not isinstance(C.ROUNDS, int) or not 1 <= C.ROUNDS <= MAX_ROUNDS:
        raise ValueError(f"ROUNDS must be a whole number from 1 to {MAX_ROUNDS}, got {echo(C.ROUNDS)}")
    if isinstance(C.ESTIMATED_MINUTES, bool) or not isinstance(C.ESTIMATED_MINUTES, int) or C.ESTIMATED_MINUTES < 0:
        raise ValueError(f"ESTIMATED_MINUTES must be a whole number (0: derived), got {echo(C.ESTIMATED_MINUTES)}")
    if not isinstance(C.BENCHMARK, str) or not C.BENCHMARK.strip():
        raise ValueError(f"BENCHMARK must name a benchmark folder, got {echo(C.BENCHMARK)}")
    try:
        root = arena.benchmark_root(C.BENCHMARK)
    except arena.ArenaError as exc:
        raise ValueError(f"BENCHMARK: {exc}") from None
    methods = C.METHODS
    if (not isinstance(methods, list | tuple) or len(methods) < 2 or len(set(methods)) != len(methods)
            or not all(isinstance(m, str) and m for m in methods)):
        raise ValueError(f"METHODS must list two or more different methods with edits in BENCHMARK (a study's "
                         f"methods are fixed when it is created), got {echo(methods)}{_found(root)}")
    labels = C.LABELS
    if not isinstance(labels, dict):
        raise ValueError(f"LABELS must be an object {{method: name shown after the vote}}, got {echo(labels)}")
    missing = [m for m in methods if not isinstance(labels.get(m), str) or not labels[m].strip()]
    extra = sorted(set(labels) - set(methods), key=str)
    if missing or extra:
        problem = (f"no name for {', '.join(map(echo, missing))}" if missing
                   else f"names {', '.join(map(echo, extra))}, which METHODS does not list")
        raise ValueError(f"LABELS must name each method of METHODS once (the names are fixed when the study is "
                         f"created): {problem}{_suggested_labels(root, methods)}")
    try:
        arena.read_candidates(root, methods, labels)
    except ValueError as exc:  # ArenaError and BenchmarkFormatError say what is wrong and where
        raise ValueError(f"BENCHMARK: {exc}") from None


def _found(root) -> str:
    """What the folder offers, for a message: "; BENCHMARK has edits of a, b"."""
    try:
        found = arena.output_methods(root)
    except ValueError:
        return ""
    return f"; BENCHMARK has edits of {', '.join(found)}" if found else ""


def _suggested_labels(root, methods) -> str:
    """The folder's own names for ``methods`` (``methods.json``), as LABELS to copy into a message."""
    try:
        known = arena.read_method_labels(root)
    except ValueError:
        return ""
    names = {m: known.get(m, m) for m in methods if isinstance(m, str)}
    return f"; the folder's names now: {json.dumps(names)}"


def compared_methods(C) -> dict[str, str]:
    """method -> the name it is revealed under, as the study's constants fix them."""
    return {method: C.LABELS.get(method, method) for method in C.METHODS}


def plan_of(ctx: StepContext) -> dict:
    """The participant's pairs, stored when they consented ({} before)."""
    return ctx.vars.get(arena.PLAN_KEY) or {}


def pair_number(ctx: StepContext) -> int:
    """The pair of a Battle round: rounds 2n-1 (the vote) and 2n (the reveal) show pair n."""
    return (ctx.round_number + 1) // 2


def is_vote_round(ctx: StepContext) -> bool:
    return ctx.round_number % 2 == 1


def stored_choice(ctx: StepContext, number: int) -> str | None:
    """The button the participant pressed on pair ``number``, from their stored answers."""
    for answer in ctx.responses.get("Battle", []):
        if answer.get("pair") == number and answer.get("choice"):
            return answer["choice"]
    return None


# STEPS


class Consent(ConsentStep):
    title = "Consent"
    body = ("You are invited to a study on photo editing by AI systems. You will compare {rounds} pairs of edited "
            "photos and say which edit follows the instruction better (about {minutes} minutes). We store your "
            "votes with your panel id only. Taking part is voluntary; you can stop at any time by closing the page.")

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"rounds": ctx.C.ROUNDS, "minutes": estimated_minutes(ctx.C)}

    @staticmethod
    def after_submit(ctx: StepContext, response: BaseModel) -> None:  # noqa: ARG004 - hook signature
        # The pairs are drawn once, here, and kept with the participant: every later page and the
        # export read them, so a reload shows the same pair and a vote maps to the names it hid.
        # Only the study's own methods and names: a method whose edits reached the folder after the
        # study was created is not among them.
        seed = arena.participant_seed(ctx.study_slug, ctx.external_id)
        ctx.vars[arena.PLAN_KEY] = arena.draw_plan(ctx.C.BENCHMARK, list(ctx.C.METHODS), ctx.C.ROUNDS, seed,
                                                   labels=dict(ctx.C.LABELS))


class Instructions(InfoStep):
    title = "How it works"
    body = ("An AI was asked to edit a photo of a person following an instruction, such as *make the person pick up "
            "the cup*. You will see the original photo, the instruction, and two edits, **A** and **B**, made by "
            "two different AI systems. The systems stay anonymous until you vote.\n\n"
            "For each pair, press one button:\n\n"
            "- **A is better** or **B is better**: that edit follows the instruction better, with the person and "
            "the object still looking right;\n"
            "- **Tie**: both are about equally good;\n"
            "- **Both are bad**: neither follows the instruction.\n\n"
            "After your vote you will see which systems made the two edits; press *Next* to go on. "
            "There are {rounds} pairs.")
    submit_label = "Start"

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        return {"rounds": ctx.C.ROUNDS}


class Battle(Step):
    """Pair n: round 2n-1 is the vote, round 2n reveals the names (``pair_number``, ``is_vote_round``)."""

    title = ""
    Response = BattleResponse
    repeat = 2 * MAX_ROUNDS
    template = "hoi_arena_battle"
    submit_label = "Next"
    reopen = Instructions

    @staticmethod
    def is_displayed(ctx: StepContext) -> bool:
        number = pair_number(ctx)
        return number <= min(ctx.C.ROUNDS, len(plan_of(ctx).get("pairs", [])))

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict:
        number, plan = pair_number(ctx), plan_of(ctx)
        if is_vote_round(ctx):
            return arena.vote_page(plan, number)
        choice = stored_choice(ctx, number)
        if choice is None:  # cannot happen: the reveal follows its stored vote
            raise arena.ArenaError(f"pair {number}: no stored vote to reveal")
        return arena.reveal_page(plan, number, choice)

    @staticmethod
    def validate(ctx: StepContext, response: BaseModel) -> dict[str, str]:
        if response.pair != pair_number(ctx):
            return {"pair": "This page is out of date; please reload it."}
        if is_vote_round(ctx) and response.choice is None:
            return {"choice": "Please press one of the four buttons."}
        if not is_vote_round(ctx) and response.choice is not None:
            return {"choice": "Your vote on this pair is already saved."}
        return {}


class Done(CompletionStep):
    title = "Thank you"
    body = "Your votes are saved. Thank you for taking part!"


# EXPORT


def export_files(slug: str, engine=None) -> dict[str, bytes]:
    """Every vote of the study as JSONL, for ``python -m engines.hoi ratings --votes hoi_arena_votes.jsonl``."""
    return {"hoi_arena_votes.jsonl": arena.export_votes(slug, engine=engine)}


step_sequence = [Consent, Instructions, Battle, Done]

from studies.hoi_arena.bot import PlayerBot as PlayerBot  # noqa: E402 - the bot needs the steps above
