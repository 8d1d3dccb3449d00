"""Simulated collaborators for the counting task and the schedules that change them over time.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with User-Specified
Requirements" (ICML 2026, arXiv:2602.17646). The guarantee needs no model of the human
(``docs/collab.md``, Method, "Guarantees"); these humans only exercise it, with shifts modelled on
the precursor's experiments (arXiv:2510.23476: noise-level phases, human-policy changes, population
changes).

**Parametric human** (labels are counts 0..K-1, so perception is ordinal):

- *Skill by difficulty.* The person perceives obs = y + σ(d)·z, z ~ N(0, 1), with
  σ(d) = noise_easy + (noise_hard − noise_easy)·d for the case difficulty d ∈ [0, 1].
- *Own noisy posterior.* Unnormalised weights w_j = exp(−(j − obs)² / (2(σ/overconfidence)²)),
  scaled to max 1 and floored at 1e-6 (nobody rules a count out completely).
- *Answer, set, confidence.* Answer = argmax w (first on ties); belief set H = {j : w_j >=
  belief_ratio · max w}; confidence = max w / Σ w (+ confidence_bias, clipped to [0, 1] when reported).
- *Revision after each AI set C* (reads it with probability ``attention``): with probability
  ``anchoring`` adopts the AI's top label in C outright (w_top <- 2 max w); otherwise multiplies the
  weights of the labels in C by exp(trust) (trust = log-likelihood bonus for being in the set).
- *Stopping.* After a revision that leaves the answer unchanged with confidence >= stop_confidence
  the person stops; otherwise the interaction goes on to the round limit.

**Adversarial human** (legal but hostile): knows the truth, the AI scores and the frozen
thresholds, and picks belief sets to trigger violations under the default rules: it holds the
truth when s(Y) > q^H (the AI must drop it: harm), drops it when s(Y) > q^C (the AI will not
supply it: complementarity failure), and when both are possible holds it in rounds 1..R−1 and
drops it in round R. It reports confidence 0, never revises and never stops early.

**Schedules** (``SCHEDULES``; each returns per-interaction parameter arrays): ``stationary``,
``drift``, ``abrupt_switch``, ``fatigue``, ``learning``, ``population_change``, ``adversarial``.

All randomness comes from a ``numpy.random.Generator`` passed in; nothing is global. Numbers that
the compiled simulator also uses (weights, trust factors, uniforms) are drawn here once, in
vectorised numpy, and shared by the reference and fast paths.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from engines.platform.files import echo
from engines.platform.registries import Registry

WEIGHT_FLOOR = 1e-6  # smallest relative weight of any count in a person's own posterior
ANCHOR_GAIN = 2.0  # an anchored label gets twice the current top weight: it becomes the answer

FLOAT_FIELDS = ("noise_easy", "noise_hard", "overconfidence", "confidence_bias", "belief_ratio",
                "attention", "trust", "anchoring", "stop_confidence")


@dataclass(frozen=True)
class HumanParams:
    """One simulated person. Defaults: a competent but noisy counter who trusts the AI moderately.

    Args:
        noise_easy, noise_hard: perception sd (in counts) on the easiest / hardest case.
        overconfidence: > 1 believes its perception is sharper than it is (tighter posterior).
        confidence_bias: added to the confidence it reports (not to the one it acts on).
        belief_ratio: a label is in H if its weight is at least this fraction of the top weight.
        attention: probability of reading the AI set in a round.
        trust: log-weight bonus for labels inside the AI set on each reading.
        anchoring: probability, per reading, of adopting the AI's top label in the set outright.
        stop_confidence: stops once an unchanged answer has at least this confidence.
        adversarial: replace the person by the adversary described in the module docstring.
    """

    # Perception (skill by difficulty).
    noise_easy: float = 0.15  # ~60% accuracy alone over uniform difficulty
    noise_hard: float = 1.0
    overconfidence: float = 1.0
    confidence_bias: float = 0.0
    belief_ratio: float = 0.5  # H ≈ counts within 1.2 believed sd of the perceived count
    # Interaction with the AI.
    attention: float = 0.9
    trust: float = 1.0  # e^1 ≈ 2.7x weight for labels in the set
    anchoring: float = 0.1
    stop_confidence: float = 0.8
    adversarial: bool = False

    def __post_init__(self):
        for name in FLOAT_FIELDS:
            if not math.isfinite(getattr(self, name)):
                raise ValueError(f"{name} must be finite, got {echo(getattr(self, name))}")
        if not 0 < self.noise_easy <= self.noise_hard:
            raise ValueError(f"need 0 < noise_easy <= noise_hard, got {echo(self.noise_easy)}, {echo(self.noise_hard)}")
        if self.overconfidence <= 0:
            raise ValueError(f"overconfidence must be > 0, got {echo(self.overconfidence)}")
        if not 0 < self.belief_ratio <= 1:
            raise ValueError(f"belief_ratio must be in (0, 1], got {echo(self.belief_ratio)}")
        for name in ("attention", "anchoring", "stop_confidence"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {echo(getattr(self, name))}")
        if self.trust < 0:
            raise ValueError(f"trust must be >= 0, got {echo(self.trust)}")


HUMAN_PRESETS: dict[str, HumanParams] = {
    "parametric": HumanParams(),
    "overtrusting": HumanParams(trust=2.5, anchoring=0.4, attention=1.0),
    "skeptic": HumanParams(trust=0.3, anchoring=0.0, attention=0.6),
    "expert": HumanParams(noise_easy=0.1, noise_hard=0.5, trust=0.5),
    "adversarial": HumanParams(adversarial=True),
}


def human_preset(name: str) -> HumanParams:
    if name not in HUMAN_PRESETS:
        raise ValueError(f"unknown human model {echo(name)} (known: {', '.join(HUMAN_PRESETS)})")
    return HUMAN_PRESETS[name]


# PER-INTERACTION PARAMETERS

@dataclass
class ParamTrack:
    """HumanParams for each of T interactions, as arrays (one field of HumanParams per array)."""

    noise_easy: np.ndarray
    noise_hard: np.ndarray
    overconfidence: np.ndarray
    confidence_bias: np.ndarray
    belief_ratio: np.ndarray
    attention: np.ndarray
    trust: np.ndarray
    anchoring: np.ndarray
    stop_confidence: np.ndarray
    adversarial: np.ndarray  # bool

    @classmethod
    def constant(cls, base: HumanParams, T: int) -> ParamTrack:
        arrays = {name: np.full(T, float(getattr(base, name))) for name in FLOAT_FIELDS}
        return cls(**arrays, adversarial=np.full(T, base.adversarial))

    def __len__(self) -> int:
        return len(self.noise_easy)

    def at(self, t: int) -> HumanParams:
        return HumanParams(**{name: float(getattr(self, name)[t]) for name in FLOAT_FIELDS},
                           adversarial=bool(self.adversarial[t]))

    def clipped(self) -> ParamTrack:
        """Keep every array inside HumanParams' valid ranges after a schedule has moved it."""
        self.noise_easy = np.maximum(self.noise_easy, 1e-3)
        self.noise_hard = np.maximum(self.noise_hard, self.noise_easy)
        self.overconfidence = np.maximum(self.overconfidence, 1e-3)
        self.belief_ratio = np.clip(self.belief_ratio, 1e-3, 1.0)
        for name in ("attention", "anchoring", "stop_confidence"):
            setattr(self, name, np.clip(getattr(self, name), 0.0, 1.0))
        self.trust = np.maximum(self.trust, 0.0)
        return self


# SCHEDULES

@dataclass(frozen=True)
class ScheduleConfig:
    """How the population of humans changes over the T interactions.

    Args:
        name: one of ``SCHEDULES``.
        switch_at: fraction of T at which abrupt changes happen.
        strength: scales the size of every shift (0 = stationary).
        block: interactions per participant (participants are drawn per block).
        adversarial_fraction: share of participants after the switch who are adversarial.
    """

    name: str = "stationary"
    switch_at: float = 0.5
    strength: float = 1.0
    block: int = 20  # the pictorial study's 20 interactions per participant
    adversarial_fraction: float = 1.0

    def __post_init__(self):
        if self.name not in SCHEDULES:
            raise ValueError(f"unknown schedule {echo(self.name)} (known: {', '.join(SCHEDULES)})")
        if not 0.0 < self.switch_at < 1.0:
            raise ValueError(f"switch_at must be in (0, 1), got {echo(self.switch_at)}")
        if not (math.isfinite(self.strength) and self.strength >= 0):
            raise ValueError(f"strength must be a finite number >= 0, got {echo(self.strength)}")
        if self.block < 1:
            raise ValueError(f"block must be >= 1, got {echo(self.block)}")
        if not 0.0 <= self.adversarial_fraction <= 1.0:
            raise ValueError(f"adversarial_fraction must be in [0, 1], got {echo(self.adversarial_fraction)}")


@dataclass
class ScheduleTrack:
    """A schedule's output: per-interaction parameters and where the shifts happen (for plots).

    ``hardness`` (T,) in [−1, 1] tilts the case difficulty (task-level shift, like the precursor's
    image-noise phases): a case at difficulty quantile u is replaced by one at u^exp(−2·hardness),
    so 0 keeps the task's own mix and 1 makes most cases hard. None means 0 throughout.
    """

    params: ParamTrack
    shift_points: list[int]
    description: str
    hardness: np.ndarray | None = None


ScheduleFn = Callable[[int, HumanParams, ScheduleConfig, np.random.Generator], ScheduleTrack]
SCHEDULES: Registry[ScheduleFn] = Registry("collab", "human schedules")


def register_schedule(name: str):
    def decorator(fn: ScheduleFn) -> ScheduleFn:
        if not fn.__doc__:
            raise ValueError(f"schedule {echo(name)} needs a docstring")
        return SCHEDULES.register(name)(fn)

    return decorator


def make_schedule(config: ScheduleConfig, T: int, base: HumanParams, rng: np.random.Generator) -> ScheduleTrack:
    """Per-interaction human parameters for T interactions under ``config``."""
    if T < 1:
        raise ValueError(f"T must be >= 1, got {echo(T)}")
    track = SCHEDULES[config.name](T, base, config, rng)
    track.params.clipped()
    track.hardness = np.zeros(T) if track.hardness is None else np.clip(track.hardness, -1.0, 1.0)
    return track


def _progress(T: int) -> np.ndarray:
    return np.arange(T) / max(T - 1, 1)  # u = t/(T−1) ∈ [0, 1]


@register_schedule("stationary")
def stationary(T, base, config, rng):
    """Every interaction with the same person type: no shift."""
    return ScheduleTrack(ParamTrack.constant(base, T), [], "stationary")


@register_schedule("drift")
def drift(T, base, config, rng):
    """Slow drift: cases get harder (hardness 0 → 0.6·strength, e.g. noisier images) and trust rises by strength."""
    p, u, s = ParamTrack.constant(base, T), _progress(T), config.strength
    p.trust = p.trust + s * u
    return ScheduleTrack(p, [], "cases drift harder, trust drifts up", hardness=0.6 * s * u)


@register_schedule("abrupt_switch")
def abrupt_switch(T, base, config, rng):
    """Abrupt policy switch at switch_at·T: from sets to a single answer (belief_ratio → 1), more trust and anchoring."""
    p, s = ParamTrack.constant(base, T), config.strength
    t0 = int(config.switch_at * T)
    after = slice(t0, T)
    p.belief_ratio[after] = base.belief_ratio + (1.0 - base.belief_ratio) * min(s, 1.0)
    p.trust[after] = base.trust + 1.0 * s
    p.anchoring[after] = base.anchoring + 0.3 * s
    return ScheduleTrack(p, [t0], "human policy switch: a single answer, more trust")


@register_schedule("fatigue")
def fatigue(T, base, config, rng):
    """Fatigue over one long session: noisier (up to (1 + strength)x), committing to single answers
    (overconfidence up to (1 + 2·strength)x), less attentive, and stopping sooner."""
    p, u, s = ParamTrack.constant(base, T), _progress(T), config.strength
    ramp = u ** 1.5  # fresh for a while, then tiring faster
    p.noise_easy = p.noise_easy * (1 + s * ramp)
    p.noise_hard = p.noise_hard * (1 + s * ramp)
    p.overconfidence = p.overconfidence * (1 + 2 * s * ramp)
    p.attention = p.attention * (1 - 0.5 * s * ramp)
    p.stop_confidence = p.stop_confidence * (1 - 0.4 * s * ramp)
    return ScheduleTrack(p, [], "fatigue: noisier, overconfident, less attentive, stops sooner")


@register_schedule("learning")
def learning(T, base, config, rng):
    """Learning: noise falls from (1 + strength)x to ~(1 − 0.4·strength)x on an exponential curve; trust falls."""
    p, u, s = ParamTrack.constant(base, T), _progress(T), config.strength
    factor = 1 + s * (1.4 * np.exp(-5 * u) - 0.4)
    p.noise_easy = p.noise_easy * factor
    p.noise_hard = p.noise_hard * factor
    p.trust = p.trust - 0.5 * s * (1 - np.exp(-5 * u))
    return ScheduleTrack(p, [], "learning: noise falls exponentially, trust falls")


@register_schedule("population_change")
def population_change(T, base, config, rng):
    """Participants of ``block`` interactions from population A, then from B after switch_at·T.

    A (careful): noise ×exp(N(0, 0.3²)) and trust ±0.3 around the base person. B (hasty, e.g. a
    different recruitment pool): noise ×1.3^strength more, overconfidence ×(1 + 1.5·strength),
    trust +0.5·strength, on top of the same individual spread.
    """
    p, s = ParamTrack.constant(base, T), config.strength
    t0 = int(config.switch_at * T)
    n_people = -(-T // config.block)
    person = np.arange(T) // config.block
    noise_mult = np.exp(rng.normal(0.0, 0.3, n_people))
    trust_shift = rng.normal(0.0, 0.3, n_people)
    in_b = np.zeros(n_people, dtype=bool)
    in_b[-(-t0 // config.block):] = True  # whole participants: the first one starting at or after t0
    noise_mult = np.where(in_b, noise_mult * 1.3 ** s, noise_mult)
    trust_shift = np.where(in_b, trust_shift + 0.5 * s, trust_shift)
    over_mult = np.where(in_b, 1 + 1.5 * s, 1.0)
    p.noise_easy = p.noise_easy * noise_mult[person]
    p.noise_hard = p.noise_hard * noise_mult[person]
    p.trust = p.trust + trust_shift[person]
    p.overconfidence = p.overconfidence * over_mult[person]
    first_b = int(np.argmax(in_b)) * config.block if in_b.any() else T
    return ScheduleTrack(p, [first_b] if first_b < T else [], "population change: careful, then hasty participants")


@register_schedule("adversarial")
def adversarial(T, base, config, rng):
    """After switch_at·T each participant (block) is the adversary with probability adversarial_fraction."""
    p = ParamTrack.constant(base, T)
    t0 = int(config.switch_at * T)
    n_people = -(-T // config.block)
    person = np.arange(T) // config.block
    hostile = rng.random(n_people) < config.adversarial_fraction
    p.adversarial = p.adversarial | ((np.arange(T) >= t0) & hostile[person])
    return ScheduleTrack(p, [t0], "adversarial participants after the switch")


# RANDOMNESS, DRAWN ONCE (shared by the reference and the compiled path)

@dataclass
class HumanDraws:
    """Pre-drawn randomness and derived numbers for T interactions of at most R rounds."""

    weights: np.ndarray  # (T, K) initial unnormalised posterior weights, max 1
    trust_factor: np.ndarray  # (T,) exp(trust)
    u_attend: np.ndarray  # (T, R) uniforms: reads the set in round k if < attention
    u_anchor: np.ndarray  # (T, R) uniforms: anchors in round k if < anchoring


def draw_humans(labels: np.ndarray, difficulty: np.ndarray, params: ParamTrack, rounds: int, n_labels: int,
                rng: np.random.Generator) -> HumanDraws:
    """Perception noise and per-round uniforms for every interaction, vectorised (shapes in comments)."""
    T = len(labels)
    z = rng.standard_normal(T)  # (T,)
    u_attend = rng.random((T, rounds))  # (T, R)
    u_anchor = rng.random((T, rounds))  # (T, R)
    sd = params.noise_easy + (params.noise_hard - params.noise_easy) * difficulty  # (T,)
    obs = labels + sd * z  # (T,)
    believed_sd = sd / params.overconfidence
    grid = np.arange(n_labels)[None, :]  # (1, K)
    log_w = -((grid - obs[:, None]) ** 2) / (2 * believed_sd[:, None] ** 2)  # (T, K)
    weights = np.maximum(np.exp(log_w - log_w.max(axis=1, keepdims=True)), WEIGHT_FLOOR)
    return HumanDraws(weights=np.ascontiguousarray(weights), trust_factor=np.exp(params.trust),
                      u_attend=u_attend, u_anchor=u_anchor)


# ONE PERSON IN ONE INTERACTION (each a loop_reference.Collaborator; engines.collab.loop_fast._kernel mirrors them)

def sum_in_label_order(weights: np.ndarray) -> float:
    # A plain left-to-right sum: numpy's sum is pairwise, which can differ in the last bit from
    # the compiled path's loop, and confidences are compared with thresholds.
    total = 0.0
    for w in weights:
        total += w
    return total


@dataclass
class ParametricHuman:
    """The parametric person of the module docstring, for one interaction (a ``loop_reference.Collaborator``).

    Call ``answer``/``belief_set``/``confidence`` for the current round, then ``see`` the AI set.
    """

    params: HumanParams
    weights: np.ndarray  # (K,) own posterior weights; copied, revised in place
    trust_factor: float
    u_attend: np.ndarray  # (R,)
    u_anchor: np.ndarray  # (R,)
    round: int = 0

    def __post_init__(self):
        self.weights = np.array(self.weights, dtype=float)

    def answer(self) -> int:
        return int(np.argmax(self.weights))  # first maximum on ties

    def belief_set(self) -> np.ndarray:
        return self.weights >= self.params.belief_ratio * self.weights.max()

    def own_confidence(self) -> float:
        return self.weights.max() / sum_in_label_order(self.weights)

    def confidence(self) -> float:
        """The reported confidence (own confidence + bias, clipped to [0, 1])."""
        return min(1.0, max(0.0, self.own_confidence() + self.params.confidence_bias))

    def see(self, ai_set: np.ndarray, ai_top: int) -> bool:
        """Read the round's AI set (``ai_top``: the AI's best label in it); revise; return True to stop."""
        before = self.answer()
        k = self.round
        if self.u_attend[k] < self.params.attention and ai_set.any():
            if self.u_anchor[k] < self.params.anchoring:
                self.weights[ai_top] = self.weights.max() * ANCHOR_GAIN
            else:
                self.weights[ai_set] *= self.trust_factor
        self.round += 1
        return self.answer() == before and self.own_confidence() >= self.params.stop_confidence


@dataclass
class AdversarialHuman:
    """The adversary of the module docstring for one interaction (knows Y, the scores and the thresholds).

    A ``loop_reference.Collaborator``: ``loop_reference.parametric_collaborators`` hands it the
    interaction's frozen thresholds.
    """

    label: int
    scores: np.ndarray  # (K,)
    q_harm: float
    q_comp: float
    rounds: int
    round: int = 0
    plan: list[bool] = field(default_factory=list)  # hold the truth in round k?

    def __post_init__(self):
        harm_possible = self.scores[self.label] > self.q_harm
        comp_possible = self.scores[self.label] > self.q_comp
        R = self.rounds
        if harm_possible and comp_possible:
            self.plan = [k < R - 1 or R == 1 for k in range(R)]
        elif comp_possible:
            self.plan = [False] * R
        else:
            self.plan = [True] * R

    def _k(self) -> int:
        return min(self.round, self.rounds - 1)  # after the last set it keeps its last answer

    def answer(self) -> int:
        return self.label if self.plan[self._k()] else decoy(self.label, len(self.scores))

    def belief_set(self) -> np.ndarray:
        mask = np.zeros(len(self.scores), dtype=bool)
        mask[self.answer()] = True
        return mask

    def confidence(self) -> float:
        return 0.0  # low confidence: supply rules that ask for it fire

    def see(self, ai_set: np.ndarray, ai_top: int) -> bool:
        self.round += 1
        return False


def decoy(label: int, n_labels: int) -> int:
    """The adversary's wrong answer: the next count (wrapping)."""
    return (label + 1) % n_labels
