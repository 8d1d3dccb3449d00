"""The simulation loop, one interaction at a time over the public objects (``run_reference``).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.
Per interaction t: the thresholds frozen for it; in each of up to R rounds the collaborator states
an answer, a belief set and a confidence, the protect/supply rules (``engines.collab.rules``) label
the prefix, the AI shows the two-threshold set (``engines.collab.controller``) and the collaborator
reads it and revises or stops. The truth is then revealed, the violations counted and the
thresholds updated.

Whoever plays the human is a ``Collaborator``: the parametric and adversarial people of
``engines.collab.humans`` (``run_parametric``, the reference twin of ``loop_fast.run_fast``,
bit-identical to it) or a language model (``engines.collab.llm_human.LLMCollaborator``, run by
``engines.collab.llm_simulate``). The AI's scores may change from round to round (an LLM case
reveals its evidence round by round); the parametric cases keep theirs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from engines.collab.ai_sources import AICases
from engines.collab.controller import ControllerState, InteractionErrors, OnlineController, errors_of_sets
from engines.collab.humans import AdversarialHuman, HumanDraws, ParametricHuman, ParamTrack
from engines.collab.rules import Prefix, Rule
from engines.collab.trace import RunTrace
from engines.platform.progress import Progress


@runtime_checkable
class Collaborator(Protocol):
    """The human of one interaction, as the loop sees it.

    ``answer``/``belief_set``/``confidence`` describe the current round; ``see`` shows it the
    round's AI set and moves it to the next round. After the last set, ``answer`` is the final one.
    """

    def answer(self) -> int:
        """The current answer (a label index)."""
        ...

    def belief_set(self) -> np.ndarray:
        """(K,) bool: the labels it considers plausible now."""
        ...

    def confidence(self) -> float:
        """The confidence it reports now, in [0, 1]."""
        ...

    def see(self, shown_set: np.ndarray, ai_top: int) -> bool:
        """Read the AI set (``ai_top``: the AI's best label in it, -1 if empty) and revise; True to stop."""
        ...


CollaboratorFactory = Callable[[int, tuple[float, float]], Collaborator]
"""(t, (q_harm, q_comp) frozen for t) -> the collaborator of interaction t (only an adversary reads the thresholds)."""

RoundScores = Callable[[int, int], np.ndarray]
"""(t, k) -> (K,) the AI's scores s(y) = 1 − p_AI(y) in round k (1-based) of interaction t."""


def frozen_index(t: int, overlap: int) -> int:
    """The number of updates applied when interaction t (from 0) froze its thresholds, with ``overlap``
    participants in flight who finish in the order they started: t − overlap + 1 (0 for the first ones),
    so its update lands min(t, overlap − 1) updates late."""
    return max(t - overlap + 1, 0)


def play_rounds(collaborator: Collaborator, show: Callable[[Prefix], tuple[np.ndarray, int]],
                rounds: int) -> list[int]:
    """The rounds of one interaction: answer, ``show(prefix)`` -> (AI set, its top label), see; repeat.

    Stops once the collaborator says so or after ``rounds`` sets. Returns the answers
    a_1..a_{n+1}: one per set shown, then the final one.
    """
    beliefs, answers, confidences, ai_sets = [], [], [], []
    for _ in range(rounds):
        answers.append(collaborator.answer())
        beliefs.append(collaborator.belief_set())
        confidences.append(collaborator.confidence())
        prefix = Prefix(np.array(beliefs), np.array(answers), np.array(confidences, dtype=float),
                        np.array(ai_sets, dtype=bool).reshape(len(ai_sets), len(beliefs[0])))
        shown, ai_top = show(prefix)
        ai_sets.append(shown)
        if collaborator.see(shown, ai_top):
            break
    return answers + [collaborator.answer()]


@dataclass
class ControllerAI:
    """The AI of one interaction: in round k, the set of ``controller`` (at the interaction's frozen
    thresholds) from the protect/supply rules on the prefix, or with ``plain`` the rule-blind set
    {y : s(y) <= q^C} (the matched conformal baseline). It keeps the sets shown and the rule masks,
    which is all ``errors`` needs."""

    scores_of: Callable[[int], np.ndarray]  # round k (1-based) -> (K,) scores
    protect: Rule
    supply: Rule
    controller: OnlineController
    plain: bool = False
    protects: list[np.ndarray] = field(default_factory=list)  # per round shown
    supplies: list[np.ndarray] = field(default_factory=list)
    sets: list[np.ndarray] = field(default_factory=list)

    def __call__(self, prefix: Prefix) -> tuple[np.ndarray, int]:
        s = self.scores_of(prefix.round)
        protect, supply = self.protect(prefix), self.supply(prefix)
        shown = s <= self.controller.state.q_comp if self.plain else self.controller.prediction_set(s, protect, supply)
        self.protects.append(protect)
        self.supplies.append(supply)
        self.sets.append(shown)
        inside = np.flatnonzero(shown)
        return shown, int(inside[np.argmin(s[inside])]) if len(inside) else -1

    def errors(self, label: int) -> InteractionErrors:
        """The interaction's violations once the truth ``label`` is revealed, from the sets
        actually shown (the controller's sets are not drawn a second time)."""
        return errors_of_sets(np.array(self.sets), label, np.array(self.protects), np.array(self.supplies))


@dataclass(frozen=True)
class Finished:
    """One finished interaction, as ``run_reference`` hands it to ``on_interaction``."""

    t: int
    collaborator: Collaborator
    answers: list[int]  # a_1..a_{n+1}, the last one final
    errors: InteractionErrors
    q_harm: float  # the thresholds it used
    q_comp: float


def run_reference(labels: np.ndarray, ai_scores: RoundScores, collaborator: CollaboratorFactory, protect: Rule,
                  supply: Rule, state: ControllerState, rounds: int, *, progress: Progress | None = None,
                  on_interaction: Callable[[Finished], None] | None = None, overlap: int = 1,
                  plain: bool = False) -> RunTrace:
    """T = len(labels) interactions, one at a time; runs any registered rule (custom ones included).

    Args:
        labels: (T,) the true labels, revealed after each interaction.
        ai_scores: the AI's scores per interaction and round; ``collaborator``: who plays the human.
        protect, supply: the rules; state: the controller's starting state; rounds: R.
        progress: ``progress(t + 1, T)`` after each interaction; ``on_interaction`` with its ``Finished``.
        overlap: with P > 1, interaction t shows sets and counts errors with the thresholds frozen
            P − 1 updates earlier (``frozen_index``), while its update applies to the live state: P
            participants in flight on one stream, as in a crowdsourced study.
        plain: show the rule-blind set {y : s(y) <= q^C} instead (``controller.errors_of_sets``
            counts its errors), for the matched conformal baseline.
    """
    ctl = OnlineController(state)
    out = RunTrace.empty(len(labels), state)
    live = []  # thresholds after 0, 1, 2, ... updates
    for t in range(len(labels)):
        y = int(labels[t])
        live.append(ctl.thresholds)
        q_h, q_c = live[frozen_index(t, overlap)]
        frozen = OnlineController(dataclasses.replace(ctl.state, q_harm=q_h, q_comp=q_c))
        ai = ControllerAI(functools.partial(ai_scores, t), protect, supply, frozen, plain)
        person = collaborator(t, (q_h, q_c))
        answers = play_rounds(person, ai, rounds)
        errors = ai.errors(y)
        ctl.update(errors.err_harm, errors.err_comp, errors.fired_harm, errors.fired_comp)
        out.record(t, errors, answers, y, q_h, q_c)
        if on_interaction is not None:
            on_interaction(Finished(t, person, answers, errors, q_h, q_c))
        if progress is not None:
            progress(t + 1, len(labels))
    out.final_state = ctl.state
    return out


def parametric_collaborators(labels: np.ndarray, scores: np.ndarray, draws: HumanDraws, params: ParamTrack,
                             rounds: int) -> CollaboratorFactory:
    """The people of ``engines.collab.humans`` over pre-drawn randomness: interaction t's parameters
    (``params.at(t)``) and draws, or the adversary, who knows the truth, the scores and the thresholds."""

    def collaborator(t: int, thresholds: tuple[float, float]) -> Collaborator:
        person = params.at(t)
        if person.adversarial:
            return AdversarialHuman(int(labels[t]), scores[t], *thresholds, rounds)
        return ParametricHuman(person, draws.weights[t], draws.trust_factor[t], draws.u_attend[t], draws.u_anchor[t])

    return collaborator


def run_parametric(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
                   state: ControllerState, rounds: int, progress: Progress | None = None, overlap: int = 1,
                   plain: bool = False) -> RunTrace:
    """``run_reference`` with the parametric people and the same scores in every round: the reference
    twin of ``loop_fast.run_fast`` (same arguments, bit-identical results)."""
    scores = cases.scores  # (T, K)
    return run_reference(cases.labels, lambda t, k: scores[t],
                         parametric_collaborators(cases.labels, scores, draws, params, rounds), protect, supply,
                         state, rounds, progress=progress, overlap=overlap, plain=plain)
