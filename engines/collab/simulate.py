"""Run T simulated interactions under online control and a fixed baseline: ``python -m engines.collab simulate``.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); spec ``shared/specs/collab.md`` §5.
Per interaction: a case (count y, difficulty, AI probabilities) and a simulated human
(``engines.collab.humans``); in each of up to R rounds the human states an answer and belief set,
the protect/supply rules (``engines.collab.rules``) label the prefix, the AI shows the
two-threshold set (``engines.collab.controller``), and the human revises or stops. The truth is
then revealed and the thresholds updated. The same draws run twice: under the online controller
and under the fixed-threshold baseline (η = 0), both starting from thresholds calibrated once on a
pilot batch (``prepare``: split-conformal on the human-alone first round, then refitted on replays
of the pilot's multi-round interactions).

Two implementations of the loop, with identical results (tested):

- ``reference``: one interaction at a time over the public objects (``Prefix``, ``Rule``,
  ``OnlineController``, ``ParametricHuman``); readable; runs custom rules.
- ``fast``: the same loop over pre-drawn arrays in one compiled function (numba, if installed:
  ~3M interactions/s on one core; the same function as plain Python otherwise, ~45k/s), for the
  built-in rules only: custom rules run on the reference path (``engine="auto"`` picks it).

All randomness is drawn beforehand in vectorised numpy and shared by both paths; the human's
weights are multiplied and summed in the same order in both, so results are bit-identical.

Tasks: "shapes" (the counting task; AI ``SyntheticAI`` or the CNN's held-out scores,
``PrecomputedAI``) and "medical" (the synthetic DDXPlus-style world's exact posterior,
``MedicalAI``, or real DDXPlus differentials, ``DDXPlusAI``); ``n_labels`` follows the task.
``--human llm`` (a language model as the human) runs in ``engines.collab.llm_simulate``.

    python -m engines.collab simulate --schedule drift --T 100000 --out runs/drift.json
    python -m engines.collab --json simulate --quick
    python -m engines.collab simulate --quick --task medical
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.collab.controller import (
    ControllerConfig,
    ControllerState,
    InteractionErrors,
    OnlineController,
    calibrate,
    calibrate_critical,
    errors_of_sets,
    fixed_baseline,
    upper_bound,
)
from engines.collab.humans import (
    ANCHOR_GAIN,
    HUMAN_PRESETS,
    SCHEDULES,
    AdversarialHuman,
    HumanDraws,
    ParametricHuman,
    ParamTrack,
    ScheduleConfig,
    draw_humans,
    human_preset,
    make_schedule,
)
from engines.collab.rates import bound_trace, denominators, rolling_rate, running_rate
from engines.collab.rules import Prefix, Rule, fast_encoding, make_rule

try:  # numba makes the fast path ~500x faster; without it the same function runs as plain Python
    from numba import njit

    COMPILED = True
except ImportError:  # pragma: no cover - exercised only where numba is absent
    COMPILED = False

    def njit(*args, **kwargs):
        return args[0] if args and callable(args[0]) else (lambda fn: fn)

N_LABELS = 10  # counts 0..9 in the shape-counting task
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_AI_SCORES = "assets/collab/counter_scores.npz"
TASKS = ("shapes", "medical")
LLM_HUMAN = "llm"  # --human llm: a language model plays the human (engines.collab.llm_simulate)
ENGINES = ("auto", "fast", "reference")
CASE_ORDERS = ("random", "age")
QUICK_T, QUICK_CALIBRATION = 2_000, 200


# AI SCORE SOURCES

@dataclass
class AICases:
    """n cases: true counts, difficulties and the AI's label probabilities."""

    probs: np.ndarray  # (n, K)
    labels: np.ndarray  # (n,) int
    difficulty: np.ndarray  # (n,) in [0, 1]
    age: np.ndarray | None = None  # (n,) patients' ages (medical task), for --case-order age

    def take(self, idx: np.ndarray) -> AICases:
        """The cases at ``idx``, in that order."""
        return AICases(self.probs[idx], self.labels[idx], self.difficulty[idx],
                       None if self.age is None else self.age[idx])

    @property
    def scores(self) -> np.ndarray:
        """s(y) = 1 − p_AI(y), in [0, 1] (B = 1)."""
        return np.clip(1.0 - self.probs, 0.0, 1.0)


@dataclass(frozen=True)
class SyntheticAI:
    """A parametric AI: it perceives y + σ(d)·z and reports the softmax posterior over counts.

    σ(d) = noise_easy + (noise_hard − noise_easy)·d, so accuracy falls with difficulty;
    logits_j = −(j − obs)² / (2(σ·temperature)²) (temperature > 1: under-confident). Cases have
    uniform counts and uniform difficulty.
    """

    n_labels: int = N_LABELS
    noise_easy: float = 0.1  # ~80% top-1 accuracy over uniform difficulty
    noise_hard: float = 0.7
    temperature: float = 1.0

    def __post_init__(self):
        if self.n_labels < 2:
            raise ValueError(f"n_labels must be >= 2, got {self.n_labels!r}")
        if not 0 < self.noise_easy <= self.noise_hard:
            raise ValueError(f"need 0 < noise_easy <= noise_hard, got {self.noise_easy!r}, {self.noise_hard!r}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {self.temperature!r}")

    def draw(self, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
        labels = rng.integers(0, self.n_labels, n)
        difficulty = tilt(rng.random(n), hardness)
        sd = self.noise_easy + (self.noise_hard - self.noise_easy) * difficulty
        obs = labels + sd * rng.standard_normal(n)
        grid = np.arange(self.n_labels)[None, :]
        logits = -((grid - obs[:, None]) ** 2) / (2 * (sd[:, None] * self.temperature) ** 2)  # (n, K)
        probs = np.exp(logits - logits.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
        return AICases(probs=probs, labels=labels, difficulty=difficulty)


@dataclass
class PrecomputedAI:
    """Held-out scores of a trained model (the counting CNN): ``probs`` (n, K), ``labels`` (n,), ``difficulty`` (n,).

    ``draw`` resamples rows with replacement, so T may exceed the file's n.
    """

    path: Path
    n_labels: int = N_LABELS
    cases: AICases = field(init=False)

    def __post_init__(self):
        self.path = Path(self.path)
        if not self.path.is_file():
            raise ValueError(f"AI scores file not found: {self.path} (train the counter first: "
                             "python -m engines.collab train-counter), or use --ai synthetic")
        with np.load(self.path) as data:
            missing = {"probs", "labels", "difficulty"} - set(data.files)
            if missing:
                raise ValueError(f"{self.path} lacks array(s) {sorted(missing)}")
            probs, labels, difficulty = (np.asarray(data[k]) for k in ("probs", "labels", "difficulty"))
        n = len(labels)
        if probs.shape != (n, self.n_labels) or difficulty.shape != (n,) or n == 0:
            raise ValueError(f"{self.path}: expected probs (n, {self.n_labels}), labels (n,), difficulty (n,) "
                             f"with n > 0, got {probs.shape}, {labels.shape}, {difficulty.shape}")
        if labels.min() < 0 or labels.max() >= self.n_labels:
            raise ValueError(f"{self.path}: labels must lie in 0..{self.n_labels - 1}")
        self.cases = AICases(probs=probs.astype(float), labels=labels.astype(np.int64),
                             difficulty=np.clip(difficulty.astype(float), 0.0, 1.0))

    def draw(self, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
        return resample(self.cases, n, rng, hardness)


def resample(pool: AICases, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
    """n rows of ``pool`` with replacement: uniformly, or the rows at tilted difficulty quantiles (``tilt``)."""
    if hardness is None:
        idx = rng.integers(0, len(pool.labels), n)
    else:  # the case at the tilted difficulty quantile
        by_difficulty = np.argsort(pool.difficulty, kind="stable")
        rank = (tilt(rng.random(n), hardness) * len(by_difficulty)).astype(np.int64)
        idx = by_difficulty[np.minimum(rank, len(by_difficulty) - 1)]
    return pool.take(idx)


def confidence_difficulty(probs: np.ndarray) -> np.ndarray:
    """(1 − max p)·K/(K − 1) per row of (n, K) probabilities: 0 when the AI is certain, 1 when it is uniform."""
    k = probs.shape[1]
    return np.clip((1.0 - probs.max(axis=1)) * k / (k - 1), 0.0, 1.0)


@dataclass(frozen=True)
class MedicalAI:
    """The medical task's AI: the exact Bayes posterior of the SYNTHETIC DDXPlus-style world (``engines.collab.medical``).

    Cases come from ``medical.generate_cases`` (seeded from the generator passed to ``draw``). The
    AI knows the patient's age and sex, the chief complaint and the first ``evidence_fraction`` of
    the interview (``medical.evidence_share``), like a clinician part-way through the questions;
    p_AI = ``medical.posterior`` given that. At 0.2 its top-1 accuracy is ~80%, like the synthetic
    counting AI (0: the chief complaint only, ~67%; 1: DIFFERENTIAL_DIAGNOSIS, ~97%). Labels are
    pathology indices (12); difficulty = (1 − max p_AI)·K/(K − 1) (``confidence_difficulty``).

    The parametric humans perceive labels as ordinal (``engines.collab.humans``), so on this task
    they confuse pathologies with neighbouring indices, an arbitrary but fixed confusion structure.
    """

    evidence_fraction: float = 0.2

    def __post_init__(self):
        if not 0.0 <= self.evidence_fraction <= 1.0:
            raise ValueError(f"evidence_fraction must be in [0, 1], got {self.evidence_fraction!r}")

    def draw(self, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
        from engines.collab.medical import evidence_share, generate_cases, posterior

        cases = generate_cases(int(rng.integers(2**63)), n, differential=False)  # p_AI is computed below
        probs = np.array([posterior(c, evidence_share(c, self.evidence_fraction)) for c in cases]).reshape(n, -1)
        pool = AICases(probs=probs, labels=np.array([c.label for c in cases], dtype=np.int64),
                       difficulty=confidence_difficulty(probs), age=np.array([c.AGE for c in cases], dtype=float))
        return pool if hardness is None else resample(pool, n, rng, hardness)

    def draw_distinct(self, n: int, rng: np.random.Generator) -> AICases:
        """n different patients (generated afresh, so always distinct)."""
        return self.draw(n, rng)


@dataclass
class DDXPlusAI:
    """Real DDXPlus patients (Fansi Tchango et al., 2022) from a release folder (``medical.load_ddxplus_dir``).

    p_AI is each patient's DIFFERENTIAL_DIAGNOSIS (the release's own differential, given all of the
    patient's evidence) over the 49 pathologies; labels are PATHOLOGY indices in sorted order;
    difficulty as for ``MedicalAI``. The first ``limit`` patients of the test split are read and
    ``draw`` resamples them with replacement, as ``PrecomputedAI`` does.
    """

    directory: Path
    limit: int | None = None
    cases: AICases = field(init=False)
    pathologies: tuple[str, ...] = field(init=False)

    def __post_init__(self):
        from engines.collab.medical import differential_vector, load_ddxplus_dir

        release = load_ddxplus_dir(self.directory, limit=self.limit)
        if not release.cases:
            raise ValueError(f"no patients in the DDXPlus folder {self.directory}")
        probs = np.array([differential_vector(c) for c in release.cases])
        self.pathologies = release.pathologies
        self.cases = AICases(probs=probs, labels=np.array([c.label for c in release.cases], dtype=np.int64),
                             difficulty=confidence_difficulty(probs),
                             age=np.array([c.AGE for c in release.cases], dtype=float))

    def draw(self, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
        return resample(self.cases, n, rng, hardness)

    def draw_distinct(self, n: int, rng: np.random.Generator) -> AICases:
        """n different patients of the release, in random order (no patient twice)."""
        if n > len(self.cases.labels):
            raise ValueError(f"the DDXPlus folder {self.directory} has {len(self.cases.labels)} patients; "
                             f"calibration and run need {n} distinct ones")
        return self.cases.take(rng.permutation(len(self.cases.labels))[:n])


def tilt(quantiles: np.ndarray, hardness: np.ndarray | None) -> np.ndarray:
    """u -> u^exp(−2·hardness): hardness 0 keeps the mix, > 0 shifts it to hard cases (see ScheduleTrack)."""
    return quantiles if hardness is None else quantiles ** np.exp(-2.0 * np.asarray(hardness))


def make_ai_source(kind: str, path: str | Path = DEFAULT_AI_SCORES, n_labels: int = N_LABELS, task: str = "shapes",
                   ddxplus_dir: str | Path | None = None, limit: int | None = None):
    """The AI score source of a task.

    shapes: ``synthetic`` (parametric AI) or ``cnn`` (precomputed probabilities from ``path``,
    relative to the repo). medical: the exact posterior of the synthetic world (``MedicalAI``), or
    with ``ddxplus_dir`` the real release's differentials (``DDXPlusAI``, first ``limit`` patients).
    """
    if task == "medical":
        if kind != "synthetic":
            raise ValueError(f"the medical task's AI is the Bayes posterior of its world; --ai {kind} is for shapes")
        return DDXPlusAI(Path(ddxplus_dir), limit=limit) if ddxplus_dir else MedicalAI()
    if ddxplus_dir:
        raise ValueError("--ddxplus-dir needs --task medical")
    if kind == "synthetic":
        return SyntheticAI(n_labels=n_labels)
    if kind == "cnn":
        path = Path(path)
        return PrecomputedAI(path if path.is_absolute() else REPO_ROOT / path, n_labels=n_labels)
    raise ValueError(f"unknown AI score source {kind!r} (known: synthetic, cnn)")


# CONFIGURATION AND RESULTS

@dataclass(frozen=True)
class SimulationConfig:
    """One simulated experiment (what the ``simulate`` command runs).

    Args:
        task: "shapes" (pictorial counting) or "medical" (diagnosis; ``MedicalAI``, or ``DDXPlusAI``
            with ``ddxplus_dir``).
        human: a preset of ``engines.collab.humans.HUMAN_PRESETS``, or "llm" (a language model,
            run by ``engines.collab.llm_simulate``, which needs a backend: ``simulate`` refuses it).
        schedule: a schedule of ``engines.collab.humans.SCHEDULES``; switch_at, strength, block
            parameterise it.
        alpha_harm, alpha_comp, eta_harm, eta_comp, conditional: the controller (``ControllerConfig``).
        rounds: R, the maximum number of rounds per interaction.
        T: interactions; n_calibration: size of the calibration (pilot) batch.
        overlap: participants in flight on the stream at once (1: one after the other). Each
            interaction uses the thresholds frozen when it started, ``overlap`` − 1 updates before
            its own (``frozen_index``), and the bound uses that delay (``controller.upper_bound``).
        calibration_passes: 0 calibrates on the pilot's human-alone round 1 only; each pass then
            replays the pilot's full multi-round interactions at the current thresholds and
            recalibrates on their critical scores (a fixed-point iteration: the rounds a rule
            fires in depend on the sets shown).
        n_labels: K; None (default) takes the task's: 10 counts, 12 synthetic pathologies, or the
            release's (49) with ``ddxplus_dir``. Only the shapes task accepts another value.
        ai: shapes: "synthetic" or "cnn" (probabilities from ``ai_scores``); medical: "synthetic"
            (the world's posterior).
        ddxplus_dir: a DDXPlus release folder for the medical task (``medical.ddxplus_paths``).
        case_order: "random", or "age" (medical task): the precursor's DDXPlus shift. One pool of
            n_calibration + T patients is sorted by age; the youngest n_calibration calibrate, the
            rest arrive oldest last (the schedule's difficulty tilt is not applied then).
        protect_rule, supply_rule (+ _params): registered rule names and parameters.
        engine: "fast", "reference" or "auto" (fast unless a rule is custom).
        with_fixed: also run the fixed-threshold baseline.
        with_matched: also run the AI-only baseline: a plain conformal set, blind to the human,
            matched in coverage to the online run (``matched_baseline``; spec §5 metric 3).
        trace_points, window: resolution of the running traces and trailing window of local rates.
    """

    task: str = "shapes"
    human: str = "parametric"
    schedule: str = "stationary"
    switch_at: float = 0.5
    strength: float = 1.0
    block: int = 20
    # Controller. Targets are unconditional violation rates per interaction.
    alpha_harm: float = 0.05
    alpha_comp: float = 0.05
    eta_harm: float = 0.05
    eta_comp: float = 0.05
    conditional: bool = False
    # Interaction.
    rounds: int = 3
    T: int = 10_000
    n_calibration: int = 1000
    overlap: int = 1  # a study's concurrent participants on one stream
    calibration_passes: int = 2
    seed: int = 0
    n_labels: int | None = None  # resolved to the task's label count
    ai: str = "synthetic"
    ai_scores: str = DEFAULT_AI_SCORES
    ddxplus_dir: str | None = None
    case_order: str = "random"
    protect_rule: str = "human_holds"
    protect_params: dict = field(default_factory=dict)
    supply_rule: str = "human_lacks"
    supply_params: dict = field(default_factory=dict)
    # Execution and reporting.
    engine: str = "auto"
    with_fixed: bool = True
    with_matched: bool = True
    trace_points: int = 200
    window: int = 500  # the precursor's rolling window W

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task {self.task!r} is not available (known: {', '.join(TASKS)})")
        if self.human == LLM_HUMAN:
            if self.schedule != "stationary":
                raise ValueError(f"schedule {self.schedule!r} moves the parametric human's parameters; the LLM "
                                 "human runs 'stationary' (a persona switch: --llm-persona-switch)")
        else:
            human_preset(self.human)
        ScheduleConfig(self.schedule, switch_at=self.switch_at, strength=self.strength, block=self.block)
        self._resolve_n_labels()
        self.controller_config()
        for name in ("rounds", "T", "n_calibration", "trace_points", "window", "overlap"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)!r}")
        if self.calibration_passes < 0:
            raise ValueError(f"calibration_passes must be >= 0, got {self.calibration_passes!r}")
        if self.n_labels < 2:
            raise ValueError(f"n_labels must be >= 2, got {self.n_labels!r}")
        if self.ai not in ("synthetic", "cnn"):
            raise ValueError(f"ai must be 'synthetic' or 'cnn', got {self.ai!r}")
        if self.task == "medical" and self.ai != "synthetic":
            raise ValueError("the medical task's AI is the Bayes posterior of its world: ai must be 'synthetic'")
        if self.ddxplus_dir and self.task != "medical":
            raise ValueError("ddxplus_dir needs task 'medical'")
        if self.case_order not in CASE_ORDERS:
            raise ValueError(f"case_order must be one of {CASE_ORDERS}, got {self.case_order!r}")
        if self.case_order == "age" and self.task != "medical":
            raise ValueError("case_order 'age' needs task 'medical' (shapes have no patients' ages)")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        self.rules()

    def _resolve_n_labels(self) -> None:
        """n_labels follows the task: the medical label space is fixed by its world or release."""
        expected = None
        if self.task == "medical":
            from engines.collab.medical import ddxplus_pathologies, default_world

            expected = len(ddxplus_pathologies(self.ddxplus_dir) if self.ddxplus_dir else default_world().pathologies)
        if self.n_labels is None:
            object.__setattr__(self, "n_labels", expected or N_LABELS)  # frozen: set once, here
        elif expected is not None and self.n_labels != expected:
            raise ValueError(f"the {self.task} task has {expected} labels, got n_labels={self.n_labels!r}")

    def controller_config(self) -> ControllerConfig:
        return ControllerConfig(alpha_harm=self.alpha_harm, alpha_comp=self.alpha_comp, eta_harm=self.eta_harm,
                                eta_comp=self.eta_comp, conditional=self.conditional)

    def rules(self) -> tuple[Rule, Rule]:
        return make_rule(self.protect_rule, **self.protect_params), make_rule(self.supply_rule, **self.supply_params)

    def schedule_config(self) -> ScheduleConfig:
        return ScheduleConfig(self.schedule, switch_at=self.switch_at, strength=self.strength, block=self.block)

    def resolved_engine(self) -> str:
        if self.engine != "auto":
            return self.engine
        try:
            for rule in self.rules():
                fast_encoding(rule)
        except ValueError:
            return "reference"
        return "fast"


@dataclass
class RunTrace:
    """Per-interaction record of one controller run (arrays of length T) and its final state."""

    err_harm: np.ndarray  # bool
    err_comp: np.ndarray  # bool
    fired_harm: np.ndarray  # bool: the protect rule fired on the truth in some round
    fired_comp: np.ndarray  # bool
    q_harm: np.ndarray  # thresholds used in interaction t
    q_comp: np.ndarray
    answer_first: np.ndarray  # int: round-1 answer (human alone)
    answer_final: np.ndarray  # int: answer after the last revision
    rounds: np.ndarray  # int: rounds played (sets shown)
    stabilise: np.ndarray  # int: round in which the final answer was first given (rounds+1: after the last set)
    set_size: np.ndarray  # int: sum over rounds of |C_{t,k}|
    covered: np.ndarray  # int: rounds with Y in C_{t,k}
    final_state: ControllerState

    @classmethod
    def empty(cls, T: int, state: ControllerState) -> RunTrace:
        b, f, i = (lambda: np.zeros(T, dtype=np.bool_)), (lambda: np.zeros(T)), (lambda: np.zeros(T, dtype=np.int64))
        return cls(b(), b(), b(), b(), f(), f(), i(), i(), i(), i(), i(), i(), state)

    def record(self, t: int, errors: InteractionErrors, sequence: list[int], label: int, q_harm: float,
               q_comp: float) -> None:
        """Store interaction t: its errors and sets, the thresholds it used, and its answers a_1..a_{n+1}
        (one per set shown, then the final one)."""
        changes = [i for i in range(1, len(sequence)) if sequence[i] != sequence[i - 1]]
        self.err_harm[t], self.err_comp[t] = errors.err_harm, errors.err_comp
        self.fired_harm[t], self.fired_comp[t] = errors.fired_harm, errors.fired_comp
        self.q_harm[t], self.q_comp[t] = q_harm, q_comp
        self.answer_first[t], self.answer_final[t] = sequence[0], sequence[-1]
        self.rounds[t] = len(sequence) - 1
        self.stabilise[t] = (changes[-1] if changes else 0) + 1
        self.set_size[t] = int(errors.sets.sum())
        self.covered[t] = int(errors.sets[:, label].sum())

    def arrays(self) -> dict[str, np.ndarray]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "final_state"}


@dataclass
class ControllerSummary:
    """Metrics of one controller run (online or fixed)."""

    violation_rate: dict
    target: dict
    bound: dict  # upper deviation bound at the end (None for a fixed threshold: no guarantee)
    within_bound: dict  # final rate <= target + bound (None without a bound)
    max_excess: dict  # max over t of running rate − target − bound(t) (<= 0 when the guarantee holds)
    final_thresholds: dict
    accuracy: float  # collaborative: final answer correct
    mean_set_size: float  # per round shown
    set_coverage: float  # fraction of rounds with the truth in the set
    mean_rounds: float
    mean_stabilise_round: float
    trace: dict  # running rates, bounds, thresholds and trailing-window rates at checkpoints

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class SimulationResult:
    """Everything ``simulate`` reports; ``to_dict`` is JSON-ready, ``runs`` keeps the raw traces."""

    config: SimulationConfig
    engine: str
    calibration: dict
    human_alone_accuracy: float
    ai_alone_accuracy: float
    online: ControllerSummary
    fixed: ControllerSummary | None
    shift_points: list[int]
    schedule_description: str
    wall_s: float
    interactions_per_s: float
    matched: ControllerSummary | None = None  # the coverage-matched conformal baseline
    runs: dict[str, RunTrace] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return {
            "config": dataclasses.asdict(self.config),
            "engine": self.engine,
            "calibration": self.calibration,
            "human_alone_accuracy": self.human_alone_accuracy,
            "ai_alone_accuracy": self.ai_alone_accuracy,
            "collab_accuracy": {"online": self.online.accuracy, "fixed": self.fixed.accuracy if self.fixed else None,
                                "matched": self.matched.accuracy if self.matched else None},
            "online": self.online.to_dict(),
            "fixed": self.fixed.to_dict() if self.fixed else None,
            "matched": self.matched.to_dict() if self.matched else None,
            "shift_points": self.shift_points,
            "schedule_description": self.schedule_description,
            "wall_s": self.wall_s,
            "interactions_per_s": self.interactions_per_s,
            "summary": self.summary(),
        }

    def summary(self) -> str:
        c = self.config
        overlap = f", overlap={c.overlap}" if c.overlap > 1 else ""
        lines = [f"{c.T} interactions, schedule={c.schedule}, human={c.human}, rounds={c.rounds}, engine={self.engine}"
                 f"{overlap} ({self.wall_s:.2f} s, {self.interactions_per_s:,.0f} interactions/s)",
                 f"accuracy: human alone {self.human_alone_accuracy:.3f}, AI alone {self.ai_alone_accuracy:.3f}, "
                 f"online {self.online.accuracy:.3f}" + (f", fixed {self.fixed.accuracy:.3f}" if self.fixed else "")
                 + (f", matched conformal set {self.matched.accuracy:.3f} (coverage {self.matched.set_coverage:.3f} vs "
                    f"{self.online.set_coverage:.3f})" if self.matched else "")]
        for name in ("harm", "comp"):
            on = self.online
            line = (f"{name}: target {on.target[name]:.3f}, online {on.violation_rate[name]:.4f} "
                    f"(bound +{on.bound[name]:.4f}, {'within' if on.within_bound[name] else 'OUTSIDE'})")
            if self.fixed:
                line += f", fixed {self.fixed.violation_rate[name]:.4f}"
            if self.matched:
                line += f", matched {self.matched.violation_rate[name]:.4f}"
            lines.append(line)
        return "\n".join(lines)


# THE LOOP: COMPILED PATH

@njit(cache=True)
def _rule_mask(code, param, hist, answers, confs, k, out):  # pragma: no cover - compiled
    # Mirrors the built-ins of engines.collab.rules (codes in rules.FAST_CODES).
    n_labels = out.shape[0]
    if code == 0:  # human_holds
        for j in range(n_labels):
            out[j] = hist[k, j]
    elif code == 1:  # human_lacks
        for j in range(n_labels):
            out[j] = not hist[k, j]
    elif code == 2:  # human_top_answer
        for j in range(n_labels):
            out[j] = j == answers[k]
    elif code == 3:  # held_for_rounds(r)
        r = int(param)
        for j in range(n_labels):
            held = k + 1 >= r
            if held:
                for i in range(k - r + 1, k + 1):
                    if not hist[i, j]:
                        held = False
                        break
            out[j] = held
    else:  # supply_when_low_confidence(threshold)
        low = confs[k] < param
        for j in range(n_labels):
            out[j] = low and not hist[k, j]


@njit(cache=True)
def _argmax_total(w, n_labels):  # pragma: no cover - compiled
    # First largest weight, its value and the sum, summed in label order like the reference path.
    best, best_w, total = 0, w[0], 0.0
    for j in range(n_labels):
        total += w[j]
        if w[j] > best_w:
            best_w = w[j]
            best = j
    return best, best_w, total


@njit(cache=True)
def _kernel(start, end, labels, scores, weights0, trust_f, attention, anchoring, belief_ratio, conf_bias,
            stop_conf, adversarial, u_attend, u_anchor, rounds, p_code, p_param, c_code, c_param,
            q_h, q_c, step_h, step_c, alpha_h, alpha_c, conditional, plain, ring_h, ring_c,
            o_err_h, o_err_c, o_fired_h, o_fired_c, o_q_h, o_q_c, o_first, o_final, o_rounds, o_stab,
            o_size, o_covered):  # pragma: no cover - compiled
    """Interactions start..end-1; returns the live thresholds after the last one. See ``run_reference``.

    ``ring_h``/``ring_c`` (length P = overlap) keep the last P live thresholds, so interaction t uses
    the ones frozen when it started, P − 1 updates earlier (``frozen_index``); P = 1 is no overlap.
    ``plain``: show the rule-blind set {y : s(y) <= q^C} (the matched conformal baseline); errors
    are still counted against the protect/supply rules.
    """
    overlap = ring_h.shape[0]
    n_labels = scores.shape[1]
    hist = np.zeros((rounds, n_labels), dtype=np.bool_)
    answers = np.zeros(rounds, dtype=np.int64)
    confs = np.zeros(rounds)
    protect = np.zeros(n_labels, dtype=np.bool_)
    supply = np.zeros(n_labels, dtype=np.bool_)
    cset = np.zeros(n_labels, dtype=np.bool_)
    w = np.zeros(n_labels)
    for t in range(start, end):
        y = labels[t]
        ring_h[t % overlap] = q_h
        ring_c[t % overlap] = q_c
        f = max(t - overlap + 1, 0)
        qf_h = ring_h[f % overlap]  # frozen when interaction t started
        qf_c = ring_c[f % overlap]
        o_q_h[t] = qf_h
        o_q_c[t] = qf_c
        adv = adversarial[t]
        harm_possible = scores[t, y] > qf_h
        comp_possible = scores[t, y] > qf_c
        if not adv:
            for j in range(n_labels):
                w[j] = weights0[t, j]
        e_h = False
        e_c = False
        f_h = False
        f_c = False
        size_sum = 0
        covered = 0
        n_rounds = 0
        last_change = 0
        for k in range(rounds):
            # The human's answer, set and confidence in round k.
            if adv:
                if harm_possible and comp_possible:
                    hold = k < rounds - 1 or rounds == 1
                elif comp_possible:
                    hold = False
                else:
                    hold = True
                ans = y if hold else (y + 1) % n_labels
                for j in range(n_labels):
                    hist[k, j] = j == ans
                conf = 0.0
                wmax = 0.0
            else:
                ans, wmax, total = _argmax_total(w, n_labels)
                level = belief_ratio[t] * wmax
                for j in range(n_labels):
                    hist[k, j] = w[j] >= level
                conf = min(1.0, max(0.0, wmax / total + conf_bias[t]))
            answers[k] = ans
            confs[k] = conf
            if k == 0:
                o_first[t] = ans
            elif ans != answers[k - 1]:
                last_change = k
            # Rules, the two-threshold set, activated omissions.
            _rule_mask(p_code, p_param, hist, answers, confs, k, protect)
            _rule_mask(c_code, c_param, hist, answers, confs, k, supply)
            size = 0
            best = -1
            best_s = np.inf
            for j in range(n_labels):
                s = scores[t, j]
                if plain:
                    inside = s <= qf_c
                else:
                    inside = (protect[j] and s <= qf_h) or ((not protect[j] or supply[j]) and s <= qf_c)
                cset[j] = inside
                if inside:
                    size += 1
                    if s < best_s:
                        best_s = s
                        best = j
            size_sum += size
            if cset[y]:
                covered += 1
            else:
                if protect[y]:
                    e_h = True
                if supply[y]:
                    e_c = True
            if protect[y]:
                f_h = True
            if supply[y]:
                f_c = True
            n_rounds = k + 1
            if adv:
                continue
            # The human reads the set and revises.
            if u_attend[t, k] < attention[t] and size > 0:
                if u_anchor[t, k] < anchoring[t]:
                    w[best] = wmax * 2.0  # ANCHOR_GAIN
                else:
                    for j in range(n_labels):
                        if cset[j]:
                            w[j] *= trust_f[t]
            new_ans, new_max, total = _argmax_total(w, n_labels)
            if new_ans == ans and new_max / total >= stop_conf[t]:
                break
        if adv:
            final = answers[n_rounds - 1]
        else:
            final = 0
            wmax = w[0]
            for j in range(n_labels):
                if w[j] > wmax:
                    wmax = w[j]
                    final = j
        if final != answers[n_rounds - 1]:
            last_change = n_rounds
        o_final[t] = final
        o_rounds[t] = n_rounds
        o_stab[t] = last_change + 1
        o_size[t] = size_sum
        o_covered[t] = covered
        o_err_h[t] = e_h
        o_err_c[t] = e_c
        o_fired_h[t] = f_h
        o_fired_c[t] = f_c
        # Quantile tracking; same expression as engines.collab.controller.step.
        if f_h or not conditional:
            q_h = q_h + step_h * ((1.0 if e_h else 0.0) - alpha_h)
        if f_c or not conditional:
            q_c = q_c + step_c * ((1.0 if e_c else 0.0) - alpha_c)
    return q_h, q_c


def run_fast(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
             state: ControllerState, rounds: int, chunks: int = 1, on_progress=None, overlap: int = 1,
             plain: bool = False) -> RunTrace:
    """The compiled loop over pre-drawn arrays (built-in rules only); identical to ``run_reference``."""
    assert ANCHOR_GAIN == 2.0  # hard-coded in _kernel
    p_code, p_param = fast_encoding(protect)
    c_code, c_param = fast_encoding(supply)
    T = len(cases.labels)
    out = RunTrace.empty(T, state)
    labels = np.ascontiguousarray(cases.labels, dtype=np.int64)
    scores = np.ascontiguousarray(cases.scores)
    cfg = state.config
    q_h, q_c = state.q_harm, state.q_comp
    ring_h, ring_c = np.zeros(overlap), np.zeros(overlap)  # kept across chunks
    bounds = np.linspace(0, T, max(1, min(chunks, T)) + 1).astype(np.int64)
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        q_h, q_c = _kernel(
            int(start), int(end), labels, scores, draws.weights, draws.trust_factor, params.attention,
            params.anchoring, params.belief_ratio, params.confidence_bias, params.stop_confidence,
            params.adversarial, draws.u_attend, draws.u_anchor, rounds, p_code, p_param, c_code, c_param,
            q_h, q_c, state.step_harm, state.step_comp, cfg.alpha_harm, cfg.alpha_comp, cfg.conditional, plain,
            ring_h, ring_c, out.err_harm, out.err_comp, out.fired_harm, out.fired_comp, out.q_harm, out.q_comp,
            out.answer_first, out.answer_final, out.rounds, out.stabilise, out.set_size, out.covered)
        if on_progress is not None:
            on_progress(int(end - start))
    out.final_state = dataclasses.replace(
        state, q_harm=float(q_h), q_comp=float(q_c), t=state.t + T,
        n_err_harm=state.n_err_harm + int(out.err_harm.sum()), n_err_comp=state.n_err_comp + int(out.err_comp.sum()),
        n_fired_harm=state.n_fired_harm + int(out.fired_harm.sum()),
        n_fired_comp=state.n_fired_comp + int(out.fired_comp.sum()))
    return out


# THE LOOP: REFERENCE PATH

def frozen_index(t: int, overlap: int) -> int:
    """The number of updates applied when interaction t (from 0) froze its thresholds, with ``overlap``
    participants in flight who finish in the order they started: t − overlap + 1 (0 for the first ones),
    so its update lands min(t, overlap − 1) updates late."""
    return max(t - overlap + 1, 0)


def run_reference(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
                  state: ControllerState, rounds: int, on_progress=None, overlap: int = 1,
                  plain: bool = False) -> RunTrace:
    """One interaction at a time over the public objects; runs any registered rule (custom ones included).

    With ``overlap`` P > 1, interaction t shows sets and counts errors with the thresholds frozen
    P − 1 updates earlier (``frozen_index``), while its update applies to the live state: P
    participants in flight on one stream, as in a crowdsourced study. ``plain`` shows the rule-blind
    set {y : s(y) <= q^C} instead (``controller.errors_of_sets``), for the matched conformal baseline.
    """
    T, n_labels = cases.probs.shape
    scores = cases.scores
    ctl = OnlineController(state)
    out = RunTrace.empty(T, state)
    live = []  # thresholds after 0, 1, 2, ... updates
    for t in range(T):
        y, s = int(cases.labels[t]), scores[t]
        live.append(ctl.thresholds)
        q_h, q_c = live[frozen_index(t, overlap)]
        frozen = OnlineController(dataclasses.replace(ctl.state, q_harm=q_h, q_comp=q_c))
        person = params.at(t)
        if person.adversarial:
            human = AdversarialHuman(y, s, q_h, q_c, rounds)
        else:
            human = ParametricHuman(person, draws.weights[t], draws.trust_factor[t], draws.u_attend[t],
                                    draws.u_anchor[t])
        beliefs, answers, confidences, ai_sets, protects, supplies = [], [], [], [], [], []
        for _k in range(rounds):
            answers.append(human.answer())
            beliefs.append(human.belief_set())
            confidences.append(human.confidence())
            prefix = Prefix(np.array(beliefs), np.array(answers), np.array(confidences, dtype=float),
                            np.array(ai_sets, dtype=bool).reshape(len(ai_sets), n_labels))
            protects.append(protect(prefix))
            supplies.append(supply(prefix))
            shown = s <= q_c if plain else frozen.prediction_set(s, protects[-1], supplies[-1])
            ai_sets.append(shown)
            inside = np.flatnonzero(shown)
            ai_top = int(inside[np.argmin(s[inside])]) if len(inside) else -1
            if human.see(shown, ai_top):
                break
        errors = (errors_of_sets(np.array(ai_sets), y, np.array(protects), np.array(supplies)) if plain else
                  frozen.interaction_errors(s, y, np.array(protects), np.array(supplies)))
        ctl.update(errors.err_harm, errors.err_comp, errors.fired_harm, errors.fired_comp)
        out.record(t, errors, answers + [human.answer()], y, q_h, q_c)  # the last answer is the final one
        if on_progress is not None:
            on_progress(1)
    out.final_state = ctl.state
    return out


# EXPERIMENT

def calibration_masks(cases: AICases, person: ParamTrack, draws: HumanDraws, protect: Rule,
                      supply: Rule) -> tuple[np.ndarray, np.ndarray]:
    """Round-1 (human-alone) rule masks of a calibration batch: (n, K) protect and supply."""
    n = len(cases.labels)
    p_masks, s_masks = np.zeros(cases.probs.shape, bool), np.zeros(cases.probs.shape, bool)
    for i in range(n):
        human = ParametricHuman(person.at(i), draws.weights[i], draws.trust_factor[i], draws.u_attend[i],
                                draws.u_anchor[i])
        prefix = Prefix.first_round(human.belief_set(), human.answer(), human.confidence())
        p_masks[i], s_masks[i] = protect(prefix), supply(prefix)
    return p_masks, s_masks


def _checkpoints(T: int, points: int) -> np.ndarray:
    return np.unique(np.linspace(1, T, min(points, T)).round().astype(np.int64))


def summarise(run: RunTrace, labels: np.ndarray, config: SimulationConfig) -> ControllerSummary:
    """Final and running violation rates with the bound, accuracy, set sizes, rounds."""
    state = run.final_state
    cfg = state.config
    T = len(labels)
    checkpoints = _checkpoints(T, config.trace_points)
    trace: dict[str, list] = {"t": checkpoints.tolist()}
    rates, bounds, within, excess = {}, {}, {}, {}
    delay = min(T - 1, config.overlap - 1)  # the largest delay of the run (frozen_index)
    for name, err, fired, step_size, alpha, q1 in (
            ("harm", run.err_harm, run.fired_harm, state.step_harm, cfg.alpha_harm, state.q1_harm),
            ("comp", run.err_comp, run.fired_comp, state.step_comp, cfg.alpha_comp, state.q1_comp)):
        n_t = denominators(T, fired if cfg.conditional else None)
        running = running_rate(err, n_t)
        rates[name] = float(running[-1])
        bound_t = bound_trace(n_t, step_size, alpha, q1, cfg.score_bound, delay=delay)
        if bound_t is not None:
            bounds[name] = upper_bound(int(n_t[-1]), step_size, alpha, q1, cfg.score_bound, delay=delay)
            within[name] = bool(rates[name] <= alpha + bounds[name] + 1e-12)
            valid = n_t > 0
            excess[name] = float((running - alpha - bound_t)[valid].max()) if valid.any() else None
            trace[f"bound_{name}"] = [float(b) if math.isfinite(b) else None for b in bound_t[checkpoints - 1]]
            bounds[name] = bounds[name] if math.isfinite(bounds[name]) else None
        else:
            bounds[name] = within[name] = excess[name] = None
        local = rolling_rate(err, min(config.window, T), centred=False)
        trace[f"violation_{name}"] = running[checkpoints - 1].tolist()
        trace[f"local_{name}"] = local[checkpoints - 1].tolist()
    trace["q_harm"] = run.q_harm[checkpoints - 1].tolist()
    trace["q_comp"] = run.q_comp[checkpoints - 1].tolist()
    total_rounds = int(run.rounds.sum())
    return ControllerSummary(
        violation_rate=rates, target={"harm": cfg.alpha_harm, "comp": cfg.alpha_comp}, bound=bounds,
        within_bound=within, max_excess=excess,
        final_thresholds={"harm": state.q_harm, "comp": state.q_comp},
        accuracy=float(np.mean(run.answer_final == labels)),
        mean_set_size=float(run.set_size.sum() / total_rounds),
        set_coverage=float(run.covered.sum() / total_rounds),
        mean_rounds=float(run.rounds.mean()), mean_stabilise_round=float(run.stabilise.mean()),
        trace=trace)


@dataclass
class Prepared:
    """Everything drawn before the loop: cases, human parameters and draws, the calibrated state."""

    cases: AICases
    params: ParamTrack
    draws: HumanDraws
    state: ControllerState
    protect: Rule
    supply: Rule
    shift_points: list[int]
    description: str
    calibration_n: int


@dataclass
class Drawn:
    """The part of ``prepare`` that does not depend on the targets: cases, humans and the pilot batch.

    A sweep draws it once and calibrates every cell of its grid on it (common random numbers).
    """

    cases: AICases
    params: ParamTrack
    draws: HumanDraws
    cal_cases: AICases
    cal_params: ParamTrack
    cal_draws: HumanDraws
    cal_masks: tuple[np.ndarray, np.ndarray]  # round-1 protect and supply masks of the pilot
    protect: Rule
    supply: Rule
    shift_points: list[int]
    description: str


def require_parametric(config: SimulationConfig) -> None:
    """The array-based loops play parametric humans only; an LLM human has its own runner."""
    if config.human == LLM_HUMAN:
        raise ValueError("the LLM human needs a chat backend: run engines.collab.llm_simulate.simulate_llm "
                         "(command line: simulate --human llm --llm-base-url URL --llm-model NAME, or --llm-local PATH)")


def draw(config: SimulationConfig) -> Drawn:
    """Draw cases and humans, seeded and vectorised (``prepare`` without the calibration)."""
    require_parametric(config)
    ai_seed, cal_seed, schedule_seed, human_seed = np.random.SeedSequence(config.seed).spawn(4)
    ai = make_ai_source(config.ai, config.ai_scores, config.n_labels, config.task, config.ddxplus_dir,
                        limit=config.T + config.n_calibration)
    ai_rng = np.random.default_rng(ai_seed)
    protect, supply = config.rules()
    track = make_schedule(config.schedule_config(), config.T, human_preset(config.human),
                          np.random.default_rng(schedule_seed))
    description = track.description
    if config.case_order == "age":
        # One pool sorted by age: calibrate on the youngest, then the stream ages (the precursor's DDXPlus shift).
        pool = ai.draw_distinct(config.n_calibration + config.T, ai_rng)  # no patient on both sides
        by_age = pool.take(np.argsort(pool.age, kind="stable"))
        cal_cases = by_age.take(np.arange(config.n_calibration))
        cases = by_age.take(np.arange(config.n_calibration, config.n_calibration + config.T))
        description += (f"; cases ordered by age: calibration on ages {cal_cases.age.min():.0f}–"
                        f"{cal_cases.age.max():.0f}, stream {cases.age.min():.0f}–{cases.age.max():.0f}")
    else:
        cal_cases = ai.draw(config.n_calibration, ai_rng)
        cases = ai.draw(config.T, ai_rng, track.hardness if track.hardness.any() else None)
    pilot = dataclasses.replace(track.params.at(0), adversarial=False)
    cal_params = ParamTrack.constant(pilot, config.n_calibration)
    cal_draws = draw_humans(cal_cases.labels, cal_cases.difficulty, cal_params, config.rounds, config.n_labels,
                            np.random.default_rng(cal_seed))
    cal_masks = calibration_masks(cal_cases, cal_params, cal_draws, protect, supply)
    draws = draw_humans(cases.labels, cases.difficulty, track.params, config.rounds, config.n_labels,
                        np.random.default_rng(human_seed))
    return Drawn(cases, track.params, draws, cal_cases, cal_params, cal_draws, cal_masks, protect, supply,
                 track.shift_points, description)


def prepare(config: SimulationConfig, drawn: Drawn | None = None) -> Prepared:
    """Draw cases and humans (``draw``, unless given) and calibrate the initial thresholds on a pilot batch.

    The pilot has n_calibration cases with the first interaction's person (never adversarial: a
    pilot is run with honest participants). Calibration starts from the human-alone round 1 and
    then, ``calibration_passes`` times, replays the pilot's multi-round interactions at the current
    (frozen) thresholds and recalibrates on their critical scores.
    """
    d = drawn if drawn is not None else draw(config)
    engine = config.resolved_engine()
    controller_config = config.controller_config()
    # A rule may never fire in round 1 (held_for_rounds): the conditional variant's π̂ then comes from the replays.
    first = controller_config if config.calibration_passes == 0 else dataclasses.replace(controller_config,
                                                                                          conditional=False)
    state = calibrate(first, d.cal_cases.scores, d.cal_cases.labels, *d.cal_masks)
    s_true = d.cal_cases.scores[np.arange(config.n_calibration), d.cal_cases.labels]
    for _ in range(config.calibration_passes):
        replay = run_controller(d.cal_cases, d.cal_draws, d.cal_params, d.protect, d.supply, fixed_baseline(state),
                                config.rounds, engine)
        state = calibrate_critical(controller_config, np.where(replay.fired_harm, s_true, -np.inf),
                                   np.where(replay.fired_comp, s_true, -np.inf))
    return Prepared(d.cases, d.params, d.draws, state, d.protect, d.supply, d.shift_points, d.description,
                    config.n_calibration)


def run_controller(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
                   state: ControllerState, rounds: int, engine: str, on_progress=None, chunks: int = 50,
                   overlap: int = 1, plain: bool = False) -> RunTrace:
    """One controller run over prepared draws with the chosen engine ("fast" or "reference")."""
    if engine == "fast":
        return run_fast(cases, draws, params, protect, supply, state, rounds, chunks, on_progress, overlap, plain)
    return run_reference(cases, draws, params, protect, supply, state, rounds, on_progress, overlap, plain)


def matched_baseline(state: ControllerState, online: RunTrace, cases: AICases) -> ControllerState:
    """The AI-only baseline of spec §5 metric 3: a plain conformal set {y : s(y) <= q}, blind to the
    human and the rules, with q fixed so that its coverage matches the online run's (the fraction
    of rounds whose set held the truth). A plain set holds the truth in every round or in none, so
    q is the quantile of s(Y) at that coverage with each case weighted by its online rounds."""
    coverage = float(online.covered.sum() / max(int(online.rounds.sum()), 1))
    s_true = cases.scores[np.arange(len(cases.labels)), cases.labels]
    order = np.argsort(s_true, kind="stable")
    covered_share = np.cumsum(online.rounds[order]) / max(int(online.rounds.sum()), 1)  # share of rounds covered
    rank = min(int(np.searchsorted(covered_share, coverage - 1e-12)), len(order) - 1)
    q = float(s_true[order][rank])
    return fixed_baseline(dataclasses.replace(state, q_comp=q, q1_comp=q))


def simulate(config: SimulationConfig, progress: bool = False, on_progress=None,
             drawn: Drawn | None = None) -> SimulationResult:
    """Run ``config``: the online controller and (``with_fixed``) the fixed baseline on the same draws,
    and (``with_matched``) the rule-blind conformal set matched in coverage (``matched_baseline``).

    ``on_progress(fraction)``, if given, is called as interactions finish (a background job reports it).
    ``drawn``: cases and humans already drawn for a config that differs from this one only in its
    targets (``run_sweep``); by default they are drawn here.
    """
    from tqdm import tqdm

    require_parametric(config)
    engine = config.resolved_engine()
    if engine == "fast":
        for rule in config.rules():
            fast_encoding(rule)  # ValueError naming a custom rule
    started = time.perf_counter()
    prepared = prepare(config, drawn)
    runs = {"online": prepared.state}
    if config.with_fixed:
        runs["fixed"] = fixed_baseline(prepared.state)
    if config.with_matched:
        runs["matched"] = None  # its threshold comes from the online run's coverage
    traces = {}
    total = config.T * len(runs)
    with tqdm(total=total, desc=f"simulate {config.schedule}", unit="interaction",
              file=sys.stderr, disable=None if progress else True, leave=False) as bar:

        def advance(n: int) -> None:
            bar.update(n)
            if on_progress is not None:
                on_progress(bar.n / total)

        for name, state in runs.items():
            bar.set_postfix_str(name)
            p = prepared
            if name == "matched":
                state = matched_baseline(prepared.state, traces["online"], prepared.cases)
            traces[name] = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, config.rounds,
                                          engine, advance, overlap=config.overlap, plain=name == "matched")
    wall = time.perf_counter() - started
    labels = prepared.cases.labels
    ai_top = prepared.cases.probs.argmax(axis=1)
    s0 = prepared.state
    return SimulationResult(
        config=config, engine=engine,
        calibration={"n": prepared.calibration_n, "q_harm": s0.q_harm, "q_comp": s0.q_comp,
                     "pi_harm": s0.pi_harm, "pi_comp": s0.pi_comp},
        human_alone_accuracy=float(np.mean(traces["online"].answer_first == labels)),
        ai_alone_accuracy=float(np.mean(ai_top == labels)),
        online=summarise(traces["online"], labels, config),
        fixed=summarise(traces["fixed"], labels, config) if "fixed" in traces else None,
        matched=summarise(traces["matched"], labels, config) if "matched" in traces else None,
        shift_points=prepared.shift_points, schedule_description=prepared.description,
        wall_s=round(wall, 4), interactions_per_s=round(config.T * len(runs) / wall, 1),
        runs=traces)


# COMMAND LINE

def _key_values(text: str) -> dict:
    """``rounds=2,threshold=0.4`` -> {"rounds": 2, "threshold": 0.4} (ints, floats, true/false)."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise argparse.ArgumentTypeError(f"expected key=value pairs, got {part!r}")
        key, value = (x.strip() for x in part.split("=", 1))
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(value.lower(), value)
    return out


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``simulate`` and ``sweep``."""
    d = SimulationConfig()
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON object instead of a summary")
    parser.add_argument("--task", default=d.task, help=f"task whose cases are simulated ({', '.join(TASKS)})")
    parser.add_argument("--human", default=d.human, choices=[*sorted(HUMAN_PRESETS), LLM_HUMAN],
                        help="simulated human model; 'llm': a language model (simulate only, see --llm-*)")
    parser.add_argument("--schedule", default=d.schedule, choices=sorted(SCHEDULES), help="shift schedule over t")
    parser.add_argument("--switch-at", type=float, default=d.switch_at, help="fraction of T where switches happen")
    parser.add_argument("--strength", type=float, default=d.strength, help="size of the schedule's shift")
    parser.add_argument("--eta-harm", type=float, default=d.eta_harm, help="step size of the harm threshold")
    parser.add_argument("--eta-comp", type=float, default=d.eta_comp, help="step size of the complementarity threshold")
    parser.add_argument("--conditional", action="store_true", help="conditional variant (update when the rule fires)")
    parser.add_argument("--rounds", type=int, default=d.rounds, help="maximum rounds per interaction")
    parser.add_argument("--T", type=int, default=None,
                        help=f"interactions (default {d.T}; --quick: {QUICK_T}; --human llm: 200, --quick 20)")
    parser.add_argument("--case-order", default=d.case_order, choices=CASE_ORDERS,
                        help="medical task: 'age' sorts patients by age (calibrate on the youngest)")
    parser.add_argument("--overlap", type=int, default=d.overlap,
                        help="participants in flight on one stream (each update lands overlap-1 updates late)")
    parser.add_argument("--n-calibration", type=int, default=None,
                        help=f"calibration batch size (default {d.n_calibration}; --quick: {QUICK_CALIBRATION}; "
                             "--human llm: 50, --quick 10)")
    parser.add_argument("--seed", type=int, default=d.seed)
    parser.add_argument("--ai", default=d.ai, choices=["synthetic", "cnn"],
                        help="AI scores: parametric synthetic AI, or the counting CNN's held-out scores")
    parser.add_argument("--ai-scores", default=d.ai_scores, help="npz of probs/labels/difficulty for --ai cnn")
    parser.add_argument("--ddxplus-dir", default=None,
                        help="--task medical on the real DDXPlus release in this folder (release_evidences.json, "
                             "release_conditions.json, release_test_patients[.csv]) instead of the synthetic world")
    parser.add_argument("--protect-rule", default=d.protect_rule, help="registered protect (harm) rule")
    parser.add_argument("--protect-params", type=_key_values, default={}, help="e.g. rounds=2")
    parser.add_argument("--supply-rule", default=d.supply_rule, help="registered supply (complementarity) rule")
    parser.add_argument("--supply-params", type=_key_values, default={}, help="e.g. threshold=0.6")
    parser.add_argument("--engine", default=d.engine, choices=ENGINES, help="fast (compiled), reference, or auto")
    parser.add_argument("--quick", action="store_true",
                        help=f"small run: T={QUICK_T}, calibration {QUICK_CALIBRATION} (--human llm: 20 and 10)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON result to this file")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SimulationConfig()
    add_common_arguments(parser)
    parser.add_argument("--alpha-harm", type=float, default=d.alpha_harm, help="target counterfactual-harm rate")
    parser.add_argument("--alpha-comp", type=float, default=d.alpha_comp, help="target complementarity-failure rate")
    parser.add_argument("--no-fixed", action="store_true", help="skip the fixed-threshold baseline")
    parser.add_argument("--no-matched", action="store_true",
                        help="skip the AI-only baseline (a plain conformal set matched in coverage)")
    from engines.collab import llm_simulate  # imported here: it builds on this module

    llm_simulate.add_llm_arguments(parser)


def config_from_args(args: argparse.Namespace, **overrides) -> SimulationConfig:
    d = SimulationConfig()
    values = dict(
        task=args.task, human=args.human, schedule=args.schedule, switch_at=args.switch_at, strength=args.strength,
        eta_harm=args.eta_harm, eta_comp=args.eta_comp, conditional=args.conditional, rounds=args.rounds,
        T=args.T if args.T is not None else (QUICK_T if args.quick else d.T),
        n_calibration=args.n_calibration if args.n_calibration is not None else (
            QUICK_CALIBRATION if args.quick else d.n_calibration),
        seed=args.seed, ai=args.ai, ai_scores=args.ai_scores, ddxplus_dir=args.ddxplus_dir,
        protect_rule=args.protect_rule,
        protect_params=args.protect_params, supply_rule=args.supply_rule, supply_params=args.supply_params,
        engine=args.engine, overlap=args.overlap, case_order=args.case_order)
    values.update(overrides)
    return SimulationConfig(**values)


def write_json(result: dict, out: Path | None) -> None:
    if out is None:
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


def run(args: argparse.Namespace) -> dict:
    if args.human == LLM_HUMAN:
        from engines.collab import llm_simulate

        return llm_simulate.run(args)
    config = config_from_args(args, alpha_harm=args.alpha_harm, alpha_comp=args.alpha_comp,
                              with_fixed=not getattr(args, "no_fixed", False),
                              with_matched=not getattr(args, "no_matched", False))
    result = simulate(config, progress=True).to_dict()
    write_json(result, args.out)
    return result
