"""Simulated interactions with an LLM as the human: ``python -m engines.collab simulate --human llm``.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method
(LLM collaborators). The simulator's reference loop (``loop_reference.run_reference``), one
interaction at a time, with an ``LLMCollaborator`` (``engines.collab.llm_human``) in place of the
parametric person:

1. The case: shapes — ``shapes.generate_task(seed_t, difficulty_t)`` (difficulty ~ U[0, 1]), seen
   as text (``ShapeTask.describe(detail)``, "perceived" by default so hard images stay hard), with
   the shipped counting CNN's probabilities on the image as the AI; medical — a synthetic case
   (``medical.generate_cases``) whose evidence is revealed round by round (``medical_views``), the
   AI being the exact posterior given the round's evidence, or a DDXPlus patient (``--ddxplus-dir``,
   drawn with the seed as in the parametric simulator) with its DIFFERENTIAL_DIAGNOSIS as the AI in
   every round.
2. The interaction: in round k the AI builds the controller's set from the registered
   protect/supply rules on the prefix at the interaction's frozen thresholds, with the case's
   round-k scores (``LLMCase.scores``: the evidence grows over the rounds).
3. The truth is revealed: ``controller.interaction_errors`` over the rounds shown, then the update.

Initial thresholds: split-conformal (``controller.calibrate``) on ``n_calibration`` human-alone
round-1 answers of the LLM (the pass 0 of ``simulate.prepare``; no replay passes, which would cost
many more calls). The fixed baseline reruns the same cases with η = 0, which doubles the LLM calls;
``--no-fixed`` skips it. The JSON has the shape of ``SimulationResult.to_dict()`` (engine "llm")
plus an ``llm`` section: backend, model, call counts, unusable replies, retries, fallbacks, and one
record per interaction (answers, confidences, sets, thresholds, errors), with the raw replies of
the first ``--llm-transcripts`` interactions of each run.

    python -m engines.collab simulate --human llm --llm-base-url http://127.0.0.1:8000/v1 \\
        --llm-model qwen2.5-7b-instruct --quick --out runs/llm_shapes.json
    python -m engines.collab simulate --human llm --task medical --llm-local /models/qwen2.5-0.5b-instruct --quick
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.collab.ai_sources import DEFAULT_AI_SCORES, confidence_difficulty
from engines.collab.backends import BackendError, ChatBackend, OpenAICompatibleBackend, TransformersBackend
from engines.collab.controller import ControllerState, calibrate, fixed_baseline
from engines.collab.llm_human import LLMCollaborator, RoundRecord, TaskView, medical_views, shape_view
from engines.collab.loop_reference import Finished, run_reference
from engines.collab.rules import Prefix, Rule
from engines.collab.shapes import DESCRIBE_DETAILS
from engines.collab.simulate import LLM_HUMAN, SimulationConfig, SimulationResult, summarise
from engines.collab.trace import RunTrace
from engines.platform.credentials import api_key, check_key_variable
from engines.platform.endpoints import check_endpoint_url
from engines.platform.files import echo
from engines.platform.progress import Progress, after

QUICK_T, QUICK_CALIBRATION = 20, 10
DEFAULT_T, DEFAULT_CALIBRATION = 200, 50  # each interaction costs up to rounds + 1 LLM calls per run


# CONFIGURATION

@dataclass(frozen=True)
class LLMConfig:
    """The language model that plays the human, and what is kept of its replies.

    Args:
        base_url, model: an OpenAI-compatible endpoint (``OpenAICompatibleBackend``) and its model name;
            the URL must be one ``HAI_ENDPOINT_HOSTS`` admits (``endpoints.check_endpoint_url``).
        api_key_env: name of the environment variable holding the API key (the key itself is never
            a setting, so it stays out of shell history and result files); None sends no key. Only a
            variable declared for API keys (``HAI_API_KEY_*`` or listed in ``HAI_API_KEY_VARIABLES``,
            ``credentials.check_key_variable``): the key is sent to ``base_url``, so naming any
            other variable (the database URL, ``HOME``) is refused before any request.
        local: a local ``transformers`` model folder (``TransformersBackend``, never downloads).
            Exactly one of ``base_url`` and ``local``.
        temperature, max_tokens: decoding (temperature 0: greedy, reproducible).
        persona: extra system text for every interaction (e.g. "You trust the AI a lot.").
        persona_switch: a second persona from interaction switch_at·T on (a shift).
        shape_detail: how the shapes task is described (``shapes.DESCRIBE_DETAILS``).
        transcripts: raw replies are kept for this many interactions per run (0: none).
        timeout: seconds per HTTP request.
    """

    # Options ``--llm-<field>`` of ``simulate`` (``engines.platform.config_schema``); never a job's.
    base_url: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1"})
    model: str | None = field(default=None, metadata={"help": "model name served at --llm-base-url"})
    api_key_env: str | None = field(default=None, metadata={
        "help": "name of the environment variable holding the API key, HAI_API_KEY_<NAME> or one listed in "
                "HAI_API_KEY_VARIABLES (the key is never an option)",
        "cli": {"metavar": "NAME"}})
    local: str | None = field(default=None, metadata={
        "help": "local transformers model folder instead of an endpoint (never downloads)", "cli": {"metavar": "PATH"}})
    temperature: float = field(default=0.0, metadata={"help": "0: greedy"})
    max_tokens: int = field(default=96, metadata={"help": "tokens per reply"})
    persona: str = field(default="", metadata={"help": "extra system text, e.g. 'You trust the AI a lot.'"})
    persona_switch: str | None = field(default=None, metadata={
        "help": "a second persona from interaction switch_at*T on (non-stationary humans)", "cli": {"metavar": "TEXT"}})
    shape_detail: str = field(default="perceived", metadata={
        "help": "'perceived': hard-to-see shapes are described ambiguously; 'exact': every kind named",
        "choices": DESCRIBE_DETAILS, "cli": {"flag": "--shape-detail"}})
    transcripts: int = field(default=20, metadata={
        "help": "keep the raw replies of the first N interactions of each run (0: none)", "cli": {"metavar": "N"}})
    timeout: float = field(default=60.0, metadata={"help": "seconds per request"})

    def __post_init__(self):
        if self.base_url and self.local:
            raise ValueError("give one LLM backend: --llm-base-url (an OpenAI-compatible endpoint) or --llm-local "
                             "(a local transformers model), not both")
        if not self.base_url and not self.local:
            raise ValueError("--human llm needs an LLM backend: --llm-base-url URL --llm-model NAME "
                             "(an OpenAI-compatible endpoint), or --llm-local PATH (a local transformers model)")
        if self.base_url and not self.model:
            raise ValueError(f"--llm-base-url {echo(self.base_url)} needs --llm-model (the model name the endpoint "
                             "serves)")
        if self.local and self.model:
            raise ValueError("--llm-model names a model of --llm-base-url; a local model is named by its path")
        if self.api_key_env and not self.base_url:
            raise ValueError("--llm-api-key-env is for --llm-base-url")
        # Checked here, before any request: the key is sent to the URL the researcher gave.
        check_key_variable(self.api_key_env, field="--llm-api-key-env")
        if self.base_url:
            check_endpoint_url(self.base_url, field="--llm-base-url")
        if not (self.temperature >= 0):
            raise ValueError(f"temperature must be >= 0, got {echo(self.temperature)}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {echo(self.max_tokens)}")
        if self.shape_detail not in DESCRIBE_DETAILS:
            raise ValueError(f"shape_detail must be one of {DESCRIBE_DETAILS}, got {echo(self.shape_detail)}")
        if self.transcripts < 0:
            raise ValueError(f"transcripts must be >= 0, got {echo(self.transcripts)}")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0, got {echo(self.timeout)}")

    @property
    def kind(self) -> str:
        return "openai_compatible" if self.base_url else "transformers"

    @property
    def where(self) -> str:
        """The endpoint URL or the local path, for messages."""
        return self.base_url or self.local

    def backend(self) -> ChatBackend:
        """Build the backend; ValueError for a key variable that is not set or an unloadable local model."""
        if self.base_url:
            # Refused here, under the option's name, when the variable is named but not set.
            api_key(self.api_key_env, field="--llm-api-key-env", required=True)
            return OpenAICompatibleBackend(self.base_url, self.model, api_key_env=self.api_key_env,
                                           timeout=self.timeout)
        if not Path(self.local).is_dir():
            raise ValueError(f"no local model folder at {echo(self.local)} (--llm-local takes a folder written by "
                             "save_pretrained; nothing is downloaded)")
        try:
            return TransformersBackend(self.local, local_files_only=True)
        except (BackendError, OSError, ValueError) as exc:
            raise ValueError(f"cannot load a transformers model from {echo(self.local)}: {exc}") from None

    def to_dict(self) -> dict:
        return {"backend": self.kind, **dataclasses.asdict(self)}


class CountingBackend:
    """Wraps a backend to count its calls and their wall time."""

    def __init__(self, inner: ChatBackend):
        self.inner, self.calls, self.seconds = inner, 0, 0.0

    def complete(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int) -> str:
        started = time.perf_counter()
        try:
            return self.inner.complete(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        finally:
            self.calls += 1
            self.seconds += time.perf_counter() - started


# CASES

@dataclass
class LLMCase:
    """One case as the LLM and the AI see it: per-round views and AI probabilities, and the truth."""

    views: list[TaskView]  # round k sees views[min(k, len) - 1]
    probs: np.ndarray  # (R, K) p_AI in round k (rows repeat when the AI learns nothing new)
    label: int
    difficulty: float

    @property
    def labels(self) -> tuple[str, ...]:
        return self.views[0].labels

    def scores(self, k: int) -> np.ndarray:
        """(K,) s(y) = 1 − p_AI(y) in round k (1-based; the last row after the last one)."""
        return np.clip(1.0 - self.probs[min(k, len(self.probs)) - 1], 0.0, 1.0)


def _seed_int(seq: np.random.SeedSequence) -> int:
    return int(seq.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))  # < 2**63


def shape_cases(n: int, seed: np.random.SeedSequence, rounds: int, detail: str) -> list[LLMCase]:
    """n shape tasks (difficulty ~ U[0, 1], per-image seeds) with the shipped CNN's probabilities on each image."""
    from engines.collab.counter import load_counter, predict_proba
    from engines.collab.shapes import generate_task

    difficulty_seq, image_seq = seed.spawn(2)
    difficulty = np.random.default_rng(difficulty_seq).uniform(0.0, 1.0, n)
    seeds = image_seq.generate_state(max(n, 1), dtype=np.uint64)[:n]
    tasks = [generate_task(int(s), float(d)) for s, d in zip(seeds, difficulty, strict=True)]
    try:
        model = load_counter()
    except FileNotFoundError as exc:
        raise ValueError(str(exc)) from None
    probs = predict_proba(model, np.stack([t.image for t in tasks]))  # (n, 10)
    return [LLMCase([shape_view(t, detail)], np.repeat(p[None, :], rounds, axis=0), t.count, float(t.difficulty))
            for t, p in zip(tasks, probs, strict=True)]


def medical_cases(n: int, seed: np.random.SeedSequence, rounds: int, patients=None) -> list[LLMCase]:
    """n medical cases, revealed over ``rounds`` rounds: synthetic (posterior per round), or the given DDXPlus patients."""
    from engines.collab.medical import differential_vector, generate_cases, posterior, reveal

    if patients is not None:  # real patients: the release's differential, the same in every round
        cases = list(patients)[:n]
        probs = [np.repeat(differential_vector(c)[None, :], rounds, axis=0) for c in cases]
    else:
        cases = generate_cases(_seed_int(seed), n)
        probs = [np.array([posterior(c, reveal(c, k, rounds)) for k in range(1, rounds + 1)]) for c in cases]
    return [LLMCase(medical_views(c, rounds), p, c.label, float(confidence_difficulty(p[-1:])[0]))
            for c, p in zip(cases, probs, strict=True)]


def make_cases(config: SimulationConfig, llm: LLMConfig,
               sizes: tuple[int, ...]) -> tuple[list[list[LLMCase]], dict | None]:
    """One list of cases per size (calibration, run), from independent seeds of ``config.seed``.

    With ``config.ddxplus_dir`` the cases are real patients drawn as the parametric simulator draws
    them (``ddxplus.draw_ddxplus`` with the seed): one seeded random order of the test split, cut
    into consecutive slices, so calibration and run share no patient while the release has
    sum(sizes) patients; beyond that it is cycled through again and patients repeat.

    Returns:
        (the lists, ``ddxplus.PatientDraw.summary`` for DDXPlus, None otherwise).
    """
    *seeds, order_seed = np.random.SeedSequence(config.seed).spawn(len(sizes) + 1)  # the last orders DDXPlus patients
    if config.task != "medical":
        return [shape_cases(n, seed, config.rounds, llm.shape_detail) for n, seed in zip(sizes, seeds, strict=True)], None
    if config.ddxplus_dir:
        from engines.collab.ddxplus import draw_ddxplus

        drawn = draw_ddxplus(config.ddxplus_dir, sum(sizes), np.random.default_rng(order_seed))
        bounds = np.cumsum((0, *sizes))
        return [medical_cases(n, seed, config.rounds, drawn.cases[lo:hi])
                for n, seed, lo, hi in zip(sizes, seeds, bounds[:-1], bounds[1:], strict=True)], drawn.summary()
    return [medical_cases(n, seed, config.rounds) for n, seed in zip(sizes, seeds, strict=True)], None


# THE LOOP

PersonFactory = Callable[[int, LLMCase], LLMCollaborator]


@dataclass
class LLMRun:
    """One controller run with the LLM: the trace ``summarise`` reads, per-interaction records, counts."""

    trace: RunTrace
    records: list[dict]
    counts: dict = field(default_factory=dict)


def reply_counts(records: list[RoundRecord]) -> dict:
    """answers asked, replies received, unusable replies, answers retried, answers that fell back."""
    return {"answers": len(records), "replies": sum(len(r.replies) for r in records),
            "unusable_replies": sum(len(r.replies) - (0 if r.fallback else 1) for r in records),
            "retries": sum(r.retried for r in records), "fallbacks": sum(r.fallback for r in records)}


def _add(total: dict, part: dict) -> None:
    for key, value in part.items():
        total[key] = total.get(key, 0) + value


def run_llm(cases: list[LLMCase], state: ControllerState, protect: Rule, supply: Rule, person: PersonFactory,
            rounds: int, transcripts: int = 0, progress: Progress | None = None) -> LLMRun:
    """``loop_reference.run_reference`` over ``cases`` with ``person(t, case)`` as the human, keeping
    each interaction's record (``interaction_record``) and reply counts."""
    records, counts = [], {}

    def keep(done: Finished) -> None:
        part = reply_counts(done.collaborator.records)
        _add(counts, part)
        records.append(interaction_record(done, cases[done.t], part, keep_replies=done.t < transcripts))

    trace = run_reference(np.array([c.label for c in cases], dtype=np.int64), lambda t, k: cases[t].scores(k),
                          lambda t, _thresholds: person(t, cases[t]), protect, supply, state, rounds,
                          progress=progress, on_interaction=keep)
    return LLMRun(trace, records, counts)


def interaction_record(done: Finished, case: LLMCase, counts: dict, keep_replies: bool) -> dict:
    """What the JSON keeps of one interaction (label indices; names in ``llm.labels``)."""
    errors, records = done.errors, done.collaborator.records
    record = {
        "t": done.t, "label": case.label, "difficulty": round(case.difficulty, 4), "q_harm": done.q_harm,
        "q_comp": done.q_comp, "answers": done.answers, "confidences": [r.confidence_raw for r in records],
        "ai_sets": [np.flatnonzero(s).tolist() for s in errors.sets],
        "err_harm": errors.err_harm, "err_comp": errors.err_comp,
        "fired_harm": errors.fired_harm, "fired_comp": errors.fired_comp,
        "unusable_replies": counts["unusable_replies"], "fallbacks": counts["fallbacks"],
        "parse_errors": [r.parse_error for r in records if r.parse_error],
    }
    if keep_replies:
        record["replies"] = [r.replies for r in records]
    return record


# THE EXPERIMENT

@dataclass
class LLMSimulationResult:
    """A ``SimulationResult`` (engine "llm") and what is particular to the LLM human."""

    result: SimulationResult
    llm: LLMConfig
    labels: tuple[str, ...]
    calls: dict  # backend calls and their wall time
    counts: dict  # per phase (calibration, online, fixed): reply_counts
    interactions: dict  # per run: per-interaction records

    @property
    def online(self):
        return self.result.online

    @property
    def fixed(self):
        return self.result.fixed

    def to_dict(self) -> dict:
        data = self.result.to_dict()
        total = {}
        for part in self.counts.values():
            _add(total, part)
        data["llm"] = {**self.llm.to_dict(), "labels": list(self.labels), **self.calls,
                       "unusable_replies": total.get("unusable_replies", 0), "retries": total.get("retries", 0),
                       "fallbacks": total.get("fallbacks", 0), "counts": self.counts,
                       "interactions": self.interactions}
        data["summary"] = self.summary()
        return data

    def summary(self) -> str:
        total = {}
        for part in self.counts.values():
            _add(total, part)
        return (self.result.summary() + f"\nLLM {self.llm.kind} ({self.llm.model or self.llm.local}): "
                f"{self.calls['calls']} calls, {total.get('unusable_replies', 0)} unusable replies, "
                f"{total.get('retries', 0)} retries, {total.get('fallbacks', 0)} fallbacks to the previous answer")


def calibrate_llm(config: SimulationConfig, cases: list[LLMCase], person: PersonFactory, protect: Rule,
                  supply: Rule, progress: Progress | None = None) -> tuple[ControllerState, dict, float]:
    """Split-conformal q_1 from the LLM's human-alone round-1 answers: (state, reply counts, their accuracy)."""
    n, k = len(cases), len(cases[0].labels)
    scores, labels = np.zeros((n, k)), np.array([c.label for c in cases], dtype=np.int64)
    p_masks, s_masks = np.zeros((n, k), bool), np.zeros((n, k), bool)
    answers, counts = np.zeros(n, dtype=np.int64), {}
    for i, case in enumerate(cases):
        alone = person(-1 - i, case)  # negative t: the pilot's own seeds
        prefix = Prefix.first_round(alone.belief_set(), alone.answer(), alone.confidence())
        scores[i], p_masks[i], s_masks[i], answers[i] = case.scores(1), protect(prefix), supply(prefix), prefix.answers[0]
        _add(counts, reply_counts(alone.records))
        if progress is not None:
            progress(i + 1, n)
    state = calibrate(config.controller_config(), scores, labels, p_masks, s_masks)
    return state, counts, float(np.mean(answers == labels))


def simulate_llm(config: SimulationConfig, llm: LLMConfig, backend: ChatBackend | None = None,
                 progress: Progress | None = None) -> LLMSimulationResult:
    """Run ``config`` with the LLM human: calibration, the online run and (``with_fixed``) the fixed baseline.

    Args:
        config: the experiment (``human`` must be "llm"; ``schedule`` "stationary").
        llm: the model and its options; ``backend`` (any ``ChatBackend``) overrides the one it builds.
        progress: ``progress(done, total, part)`` as interactions finish (calibration, then each run).

    Raises:
        ValueError: bad options; BackendError: the endpoint or model failed (the command line names the URL).
    """
    if config.human != LLM_HUMAN:
        raise ValueError(f"simulate_llm runs human 'llm', got {echo(config.human)}")
    # The coverage-matched conformal baseline replays every interaction once more: not for paid LLM calls.
    config = dataclasses.replace(config, with_matched=False)
    if config.case_order != "random":
        raise ValueError("--case-order applies to the parametric humans; LLM runs take cases in random order")
    if config.overlap != 1:
        raise ValueError("--overlap applies to the parametric humans; the LLM human plays one interaction at a time")
    if config.task == "shapes":
        # The LLM sees generated images as text, so the AI is the shipped CNN on those images, never a
        # precomputed score file or the synthetic AI: the result's config says so.
        if config.ai_scores != DEFAULT_AI_SCORES:
            raise ValueError("--ai-scores does not apply to --human llm: the AI is the shipped CNN on the generated images")
        config = dataclasses.replace(config, ai="cnn")
    counter = CountingBackend(backend if backend is not None else llm.backend())
    started = time.perf_counter()
    (cal_cases, cases), patients = make_cases(config, llm, (config.n_calibration, config.T))
    protect, supply = config.rules()
    switch_t = int(config.switch_at * config.T) if llm.persona_switch is not None else None

    def person(t: int, case: LLMCase) -> LLMCollaborator:
        persona = llm.persona_switch if switch_t is not None and t >= switch_t else llm.persona
        # The same seeds for the same case in both runs: sampled replies differ only through the sets shown.
        return LLMCollaborator(counter, case.views, rounds=config.rounds, persona=persona,
                               temperature=llm.temperature, max_tokens=llm.max_tokens,
                               seed=(config.seed * 1_000_003 + 10_007 * (t + 1)) % 2**31)

    n_runs = 2 if config.with_fixed else 1
    total = config.n_calibration + config.T * n_runs
    state, cal_counts, cal_accuracy = calibrate_llm(config, cal_cases, person, protect, supply,
                                                    after(progress, 0, total, "calibration"))
    runs = {"online": state, **({"fixed": fixed_baseline(state)} if config.with_fixed else {})}
    done = {}
    for number, (name, start) in enumerate(runs.items()):
        done[name] = run_llm(cases, start, protect, supply, person, config.rounds, llm.transcripts,
                             after(progress, config.n_calibration + number * config.T, total, name))
    wall = time.perf_counter() - started
    labels = np.array([c.label for c in cases])
    ai_final = np.array([int(np.argmax(c.probs[-1])) for c in cases])  # the AI with all the evidence
    result = SimulationResult(
        config=config, engine="llm",
        calibration={"n": config.n_calibration, "passes": 0, "q_harm": state.q_harm, "q_comp": state.q_comp,
                     "pi_harm": state.pi_harm, "pi_comp": state.pi_comp, "human_alone_accuracy": cal_accuracy},
        human_alone_accuracy=float(np.mean(done["online"].trace.answer_first == labels)),
        ai_alone_accuracy=float(np.mean(ai_final == labels)),
        online=summarise(done["online"].trace, labels, config),
        fixed=summarise(done["fixed"].trace, labels, config) if "fixed" in done else None,
        shift_points=[switch_t] if switch_t is not None else [],
        schedule_description=("persona switch" if switch_t is not None else "stationary") + " (LLM human)",
        wall_s=round(wall, 4), interactions_per_s=round(config.T * n_runs / wall, 3),
        runs={name: run.trace for name, run in done.items()}, patients=patients)
    return LLMSimulationResult(
        result=result, llm=llm, labels=cases[0].labels if cases else (),
        calls={"calls": counter.calls, "call_seconds": round(counter.seconds, 3),
               "mean_call_s": round(counter.seconds / counter.calls, 4) if counter.calls else None},
        counts={"calibration": cal_counts, **{name: run.counts for name, run in done.items()}},
        interactions={name: run.records for name, run in done.items()})
