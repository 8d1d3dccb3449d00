"""Run T simulated interactions under online control and a fixed baseline: ``python -m engines.collab simulate``.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.
Per interaction: a case (count y, difficulty, AI probabilities; ``engines.collab.ai_sources``) and
a simulated human (``engines.collab.humans``); in each of up to R rounds the human states an
answer and belief set, the protect/supply rules (``engines.collab.rules``) label the prefix, the AI
shows the two-threshold set (``engines.collab.controller``), and the human revises or stops. The
truth is then revealed and the thresholds updated. The same draws run twice: under the online
controller and under the fixed-threshold baseline (η = 0), both starting from thresholds
calibrated once on a pilot batch (``prepare``: split-conformal on the human-alone first round,
then refitted on replays of the pilot's multi-round interactions).

This module is the experiment: its configuration (``SimulationConfig``, the one declaration of
the parameters the command line, the jobs and the Simulations page offer), the draws, the calibration,
the runs and their summary. The loop itself has two implementations with identical results
(tested), chosen by ``engine``:

- ``reference`` (``engines.collab.loop_reference``): one interaction at a time over the public
  objects; readable; runs custom rules.
- ``fast`` (``engines.collab.loop_fast``): the same loop over pre-drawn arrays in one compiled
  function, for the built-in rules only (``engine="auto"`` picks the reference path for a custom one).

All randomness is drawn beforehand in vectorised numpy and shared by both paths.

Tasks: "shapes" (the counting task; AI ``SyntheticAI`` or the CNN's held-out scores,
``PrecomputedAI``) and "medical" (the synthetic DDXPlus-style world's exact posterior,
``MedicalAI``, or real DDXPlus differentials, ``DDXPlusAI``); ``n_labels`` follows the task.
``--human llm`` (a language model as the human) runs in ``engines.collab.llm_simulate``.

    python -m engines.collab simulate --schedule drift --T 100000 --out runs/drift.json
    python -m engines.collab --json simulate --quick
    python -m engines.collab simulate --quick --task medical
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np

from engines.collab.ai_sources import AI_KINDS, DEFAULT_AI_SCORES, N_LABELS, AICases, DDXPlusAI, make_ai_source
from engines.collab.controller import (
    ControllerConfig,
    ControllerState,
    calibrate,
    calibrate_critical,
    fixed_baseline,
    upper_bound,
)
from engines.collab.humans import (
    HUMAN_PRESETS,
    SCHEDULES,
    HumanDraws,
    ParametricHuman,
    ParamTrack,
    ScheduleConfig,
    draw_humans,
    human_preset,
    make_schedule,
)
from engines.collab.loop_reference import run_parametric
from engines.collab.rates import bound_trace, denominators, rolling_rate, running_rate
from engines.collab.rules import Prefix, Rule, fast_encoding, make_rule
from engines.collab.trace import RunTrace
from engines.platform.files import echo
from engines.platform.progress import Progress, after

TASKS = ("shapes", "medical")
LLM_HUMAN = "llm"  # --human llm: a language model plays the human (engines.collab.llm_simulate)
ENGINES = ("auto", "fast", "reference")
CASE_ORDERS = ("random", "age")
QUICK_T, QUICK_CALIBRATION = 2_000, 200
# Fields only ``simulate`` takes: a sweep sets the targets per cell and runs no baselines.
SIMULATE_ONLY = ("alpha_harm", "alpha_comp", "with_fixed", "with_matched")
# A job started from the Simulations page finishes in seconds: smaller than the command line's defaults.
JOB_DEFAULTS = {"T": 5_000, "n_calibration": 500, "schedule": "drift"}


def calibration_size(T: int) -> int:
    """The pilot batch a form offers with T interactions: a tenth of T, at least 10 and at most 1000."""
    return min(1000, max(10, int(T) // 10))


# CONFIGURATION AND RESULTS

@dataclass(frozen=True)
class SimulationConfig:
    """One simulated experiment (what the ``simulate`` command runs).

    Each field's metadata (``engines.platform.config_schema``) makes the command line's option
    and the job's parameter: its help, its bounds in a job or form, and whether either offers it.

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
            its own (``loop_reference.frozen_index``), and the bound uses that delay
            (``controller.upper_bound``).
        calibration_passes: 0 calibrates on the pilot's human-alone round 1 only; each pass then
            replays the pilot's full multi-round interactions at the current thresholds and
            recalibrates on their critical scores (a fixed-point iteration: the rounds a rule
            fires in depend on the sets shown).
        n_labels: K; None (default) takes the task's: 10 counts, 12 synthetic pathologies, or the
            release's (49) with ``ddxplus_dir``. Only the shapes task accepts another value.
        ai: shapes: "synthetic" or "cnn" (probabilities from ``ai_scores``); medical: "synthetic"
            (the world's posterior).
        ddxplus_dir: a DDXPlus release folder for the medical task (``ddxplus.ddxplus_paths``). The
            n_calibration + T patients are drawn from its test split with the seed, the pilot's
            first; distinct while the release has enough, else it is cycled through again and the
            result says so (``SimulationResult.patients``, ``cases_repeat``).
        case_order: "random", or "age" (medical task): the precursor's DDXPlus shift. One pool of
            n_calibration + T patients is sorted by age; the youngest n_calibration calibrate, the
            rest arrive oldest last (the schedule's difficulty tilt is not applied then).
        protect_rule, supply_rule (+ _params): registered rule names and parameters.
        engine: "fast", "reference" or "auto" (fast unless a rule is custom).
        with_fixed: also run the fixed-threshold baseline.
        with_matched: also run the AI-only baseline: a plain conformal set, blind to the human,
            matched in coverage to the online run (``matched_baseline``).
        trace_points, window: resolution of the running traces and trailing window of local rates.
    """

    # The task name is checked by __post_init__, whose message lists the tasks (the option takes any text).
    task: str = field(default="shapes", metadata={
        "help": f"task whose cases are simulated ({', '.join(TASKS)})", "choices": TASKS, "cli": {"choices": None}})
    human: str = field(default="parametric", metadata={
        "title": "Simulated human model", "choices": lambda: [*sorted(HUMAN_PRESETS), LLM_HUMAN],
        "help": "simulated human model; 'llm': a language model (simulate only, see --llm-*)"})
    schedule: str = field(default="stationary", metadata={
        "help": "shift schedule over t", "choices": lambda: sorted(SCHEDULES)})
    switch_at: float = field(default=0.5, metadata={"help": "fraction of T where switches happen", "gt": 0, "lt": 1})
    strength: float = field(default=1.0, metadata={"help": "size of the schedule's shift", "min": 0})
    block: int = field(default=20, metadata={"cli": False, "job": False})
    # Controller. Targets are unconditional violation rates per interaction.
    alpha_harm: float = field(default=0.05, metadata={"help": "target counterfactual-harm rate", "gt": 0, "lt": 1})
    alpha_comp: float = field(default=0.05, metadata={
        "help": "target complementarity-failure rate", "gt": 0, "lt": 1})
    eta_harm: float = field(default=0.05, metadata={"help": "step size of the harm threshold", "min": 0})
    eta_comp: float = field(default=0.05, metadata={"help": "step size of the complementarity threshold", "min": 0})
    conditional: bool = field(default=False, metadata={"help": "conditional variant (update when the rule fires)"})
    # Interaction.
    rounds: int = field(default=3, metadata={"help": "maximum rounds per interaction", "min": 1, "max": 10})
    T: int = field(default=10_000, metadata={"help": "interactions", "min": 10, "max": 2_000_000})
    n_calibration: int = field(default=1000, metadata={"help": "calibration batch size", "min": 10, "max": 100_000})
    overlap: int = field(default=1, metadata={  # a study's concurrent participants on one stream
        "help": "participants in flight on one stream (each update lands overlap-1 updates late)",
        "min": 1, "max": 10_000})
    calibration_passes: int = field(default=2, metadata={"cli": False, "job": False})
    seed: int = field(default=0, metadata={"help": "seed of every draw (cases, people, the pilot)", "min": 0})
    n_labels: int | None = field(default=None, metadata={"cli": False, "job": False})  # resolved to the task's
    ai: str = field(default="synthetic", metadata={
        "help": "AI scores: parametric synthetic AI, or the counting CNN's held-out scores", "choices": AI_KINDS})
    # A file path: the command line's only (a job names a training job instead, never a path).
    ai_scores: str = field(default=DEFAULT_AI_SCORES, metadata={
        "help": "npz of probs/labels/difficulty for --ai cnn", "job": False})
    ddxplus_dir: str | None = field(default=None, metadata={"job": False, "help": (
        "--task medical on the real DDXPlus release in this folder instead of the synthetic world: "
        "release_evidences.json, release_conditions.json and release_test_patients.zip as downloaded "
        "(or extracted); patients drawn at random with --seed")})
    case_order: str = field(default="random", metadata={
        "help": "medical task: 'age' sorts patients by age (calibrate on the youngest)", "choices": CASE_ORDERS})
    # Registered rule names and their parameters (engines.collab.rules); never code.
    protect_rule: str = field(default="human_holds", metadata={"help": "registered protect (harm) rule"})
    protect_params: dict = field(default_factory=dict, metadata={
        "help": "parameters of the protect rule", "cli": {"help": "e.g. rounds=2"}})
    supply_rule: str = field(default="human_lacks", metadata={
        "help": "registered supply (complementarity) rule"})
    supply_params: dict = field(default_factory=dict, metadata={
        "help": "parameters of the supply rule", "cli": {"help": "e.g. threshold=0.6"}})
    # Execution and reporting.
    engine: str = field(default="auto", metadata={
        "help": "fast (compiled), reference, or auto", "choices": ENGINES, "job": False})
    with_fixed: bool = field(default=True, metadata={"help": "also run the fixed-threshold baseline", "cli": {
        "flag": "--no-fixed", "action": "store_false", "help": "skip the fixed-threshold baseline"}})
    with_matched: bool = field(default=True, metadata={
        "help": "also run the AI-only conformal set matched in coverage", "cli": {
            "flag": "--no-matched", "action": "store_false",
            "help": "skip the AI-only baseline (a plain conformal set matched in coverage)"}})
    trace_points: int = field(default=200, metadata={"cli": False, "job": False})
    window: int = field(default=500, metadata={"cli": False, "job": False})  # the precursor's rolling window W

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task {echo(self.task)} is not available (known: {', '.join(TASKS)})")
        if self.human == LLM_HUMAN:
            if self.schedule != "stationary":
                raise ValueError(f"schedule {echo(self.schedule)} moves the parametric human's parameters; the LLM "
                                 "human runs 'stationary' (a persona switch: --llm-persona-switch)")
        else:
            human_preset(self.human)
        ScheduleConfig(self.schedule, switch_at=self.switch_at, strength=self.strength, block=self.block)
        self._resolve_n_labels()
        self.controller_config()
        for name in ("rounds", "T", "n_calibration", "trace_points", "window", "overlap"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {echo(getattr(self, name))}")
        if self.calibration_passes < 0:
            raise ValueError(f"calibration_passes must be >= 0, got {echo(self.calibration_passes)}")
        if self.n_labels < 2:
            raise ValueError(f"n_labels must be >= 2, got {echo(self.n_labels)}")
        if self.ai not in AI_KINDS:
            raise ValueError(f"ai must be 'synthetic' or 'cnn', got {echo(self.ai)}")
        if self.task == "medical" and self.ai != "synthetic":
            raise ValueError("the medical task's AI is the Bayes posterior of its world: ai must be 'synthetic'")
        if self.ddxplus_dir and self.task != "medical":
            raise ValueError("ddxplus_dir needs task 'medical'")
        if self.case_order not in CASE_ORDERS:
            raise ValueError(f"case_order must be one of {CASE_ORDERS}, got {echo(self.case_order)}")
        if self.case_order == "age" and self.task != "medical":
            raise ValueError("case_order 'age' needs task 'medical' (shapes have no patients' ages)")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {echo(self.engine)}")
        self.rules()

    def _resolve_n_labels(self) -> None:
        """n_labels follows the task: the medical label space is fixed by its world or release."""
        expected = None
        if self.task == "medical":
            from engines.collab.ddxplus import ddxplus_pathologies
            from engines.collab.medical import default_world

            expected = len(ddxplus_pathologies(self.ddxplus_dir) if self.ddxplus_dir else default_world().pathologies)
        if self.n_labels is None:
            object.__setattr__(self, "n_labels", expected or N_LABELS)  # frozen: set once, here
        elif expected is not None and self.n_labels != expected:
            raise ValueError(f"the {self.task} task has {expected} labels, got n_labels={echo(self.n_labels)}")

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
    # DDXPlus runs: cases, distinct_patients, patients_in_release and cases_repeat (patients seen twice or more).
    patients: dict | None = None

    def to_dict(self) -> dict:
        extra = {} if self.patients is None else {"patients": self.patients}
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
            **extra,
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
        if self.patients is not None:
            p = self.patients
            lines.append(f"DDXPlus: {p['cases']:,} cases from {p['distinct_patients']:,} of the release's "
                         f"{p['patients_in_release']:,} patients, " + (
                             f"patients repeat (about {p['cases'] / p['distinct_patients']:.1f} times each)"
                             if p["cases_repeat"] else "each once"))
        return "\n".join(lines)


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
    delay = min(T - 1, config.overlap - 1)  # the largest delay of the run (loop_reference.frozen_index)
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
    patients: dict | None = None  # DDXPlus: DDXPlusAI.patients (distinct patients, whether they repeat)


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
    patients: dict | None = None  # DDXPlus: DDXPlusAI.patients (distinct patients, whether they repeat)


def require_parametric(config: SimulationConfig) -> None:
    """The array-based loops play parametric humans only; an LLM human has its own runner."""
    if config.human == LLM_HUMAN:
        raise ValueError("the LLM human needs a chat backend: run engines.collab.llm_simulate.simulate_llm "
                         "(command line: simulate --human llm --llm-base-url URL --llm-model NAME, or --llm-local PATH)")


def draw(config: SimulationConfig) -> Drawn:
    """Draw cases and humans, seeded and vectorised (``prepare`` without the calibration)."""
    require_parametric(config)
    ai_seed, cal_seed, schedule_seed, human_seed = np.random.SeedSequence(config.seed).spawn(4)
    ai = make_ai_source(config.ai, config.ai_scores, config.n_labels, config.task, config.ddxplus_dir)
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
    elif isinstance(ai, DDXPlusAI):
        # Real patients: one seeded draw, the pilot's first, so no patient is on both sides unless the run
        # needs more than the release holds; a schedule's tilt reorders the stream's patients.
        pool = ai.draw(config.n_calibration + config.T, ai_rng)
        cal_cases = pool.take(np.arange(config.n_calibration))
        cases = pool.take(np.arange(config.n_calibration, config.n_calibration + config.T))
        if track.hardness.any():
            cases = ai.tilt_order(cases, ai_rng, track.hardness)
            description += "; the drawn patients reordered by difficulty (not resampled)"
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
    patients = ai.patients(config.n_calibration + config.T) if isinstance(ai, DDXPlusAI) else None
    return Drawn(cases, track.params, draws, cal_cases, cal_params, cal_draws, cal_masks, protect, supply,
                 track.shift_points, description, patients)


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
                    config.n_calibration, d.patients)


def run_controller(cases: AICases, draws: HumanDraws, params: ParamTrack, protect: Rule, supply: Rule,
                   state: ControllerState, rounds: int, engine: str, progress: Progress | None = None,
                   chunks: int = 50, overlap: int = 1, plain: bool = False) -> RunTrace:
    """One controller run over prepared draws with the chosen engine: "fast" (``loop_fast.run_fast``)
    or "reference" (``loop_reference.run_parametric``); ``progress(done, T)`` as interactions finish."""
    if engine == "fast":
        from engines.collab.loop_fast import run_fast  # numba: imported by the runs that use it

        return run_fast(cases, draws, params, protect, supply, state, rounds, chunks, progress, overlap, plain)
    return run_parametric(cases, draws, params, protect, supply, state, rounds, progress, overlap, plain)


def matched_baseline(state: ControllerState, online: RunTrace, cases: AICases) -> ControllerState:
    """The AI-only baseline matched in coverage (``docs/collab.md``, Method): a plain conformal set
    {y : s(y) <= q}, blind to the human and the rules, with q fixed so that its coverage matches
    the online run's (the fraction of rounds whose set held the truth). A plain set holds the truth
    in every round or in none, so q is the quantile of s(Y) at that coverage with each case
    weighted by its online rounds."""
    coverage = float(online.covered.sum() / max(int(online.rounds.sum()), 1))
    s_true = cases.scores[np.arange(len(cases.labels)), cases.labels]
    order = np.argsort(s_true, kind="stable")
    covered_share = np.cumsum(online.rounds[order]) / max(int(online.rounds.sum()), 1)  # share of rounds covered
    rank = min(int(np.searchsorted(covered_share, coverage - 1e-12)), len(order) - 1)
    q = float(s_true[order][rank])
    return fixed_baseline(dataclasses.replace(state, q_comp=q, q1_comp=q))


def simulate(config: SimulationConfig, progress: Progress | None = None,
             drawn: Drawn | None = None) -> SimulationResult:
    """Run ``config``: the online controller and (``with_fixed``) the fixed baseline on the same draws,
    and (``with_matched``) the rule-blind conformal set matched in coverage (``matched_baseline``).

    ``progress(done, total, run)`` as interactions finish, counted over every run (the command
    line's bar, a background job's progress). ``drawn``: cases and humans already drawn for a
    config that differs from this one only in its targets (``run_sweep``); by default they are drawn here.
    """
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
    for number, (name, state) in enumerate(runs.items()):
        p = prepared
        if name == "matched":
            state = matched_baseline(prepared.state, traces["online"], prepared.cases)
        traces[name] = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, config.rounds,
                                      engine, after(progress, number * config.T, total, name),
                                      overlap=config.overlap, plain=name == "matched")
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
        runs=traces, patients=prepared.patients)



