"""The AI's side of a simulated interaction: cases with the AI's label probabilities, by task.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method,
"Tasks, AI and simulated collaborators".
The AI's score of a label is s(y) = 1 − p_AI(y) in [0, 1] (B = 1); the controller's sets
threshold it. Sources:

- shapes: ``SyntheticAI`` (a parametric AI, ~80% top-1) or ``PrecomputedAI`` (the counting CNN's
  held-out probabilities, resampled);
- medical: ``MedicalAI`` (the exact posterior of the SYNTHETIC DDXPlus-style world given part of
  the interview) or ``DDXPlusAI`` (real DDXPlus patients' differentials).

``make_ai_source`` picks one for a task. Every source draws ``AICases`` from a generator passed
in, optionally tilted towards hard cases (``tilt``, the schedules' task-level shift).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engines.platform.files import echo
from engines.platform.settings import REPO_ROOT

N_LABELS = 10  # counts 0..9 in the shape-counting task
DEFAULT_AI_SCORES = "assets/collab/counter_scores.npz"
AI_KINDS = ("synthetic", "cnn")


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
            raise ValueError(f"n_labels must be >= 2, got {echo(self.n_labels)}")
        if not 0 < self.noise_easy <= self.noise_hard:
            raise ValueError(f"need 0 < noise_easy <= noise_hard, got {echo(self.noise_easy)}, {echo(self.noise_hard)}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {echo(self.temperature)}")

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
            raise ValueError(f"evidence_fraction must be in [0, 1], got {echo(self.evidence_fraction)}")

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
    """Real DDXPlus patients (Fansi Tchango et al., 2022) from a release folder (``ddxplus.ddxplus_paths``).

    p_AI is each patient's DIFFERENTIAL_DIAGNOSIS (the release's own differential, given all of the
    patient's evidence) over the 49 pathologies; labels are PATHOLOGY indices in sorted
    ``condition_name`` order; difficulty as for ``MedicalAI``.

    Patients are drawn from the whole test split with the generator passed in
    (``ddxplus.draw_ddxplus``: a seeded random order, only the drawn rows parsed), so a run does
    not depend on how the file is sorted. n cases are n distinct patients while n ≤
    ``n_patients``; beyond that the release is cycled through again in a fresh random order
    (patients repeat; ``patients`` says so, and the simulator's result records it). A
    schedule's difficulty tilt reorders the drawn patients (``tilt_order``) instead of
    resampling them.
    """

    directory: Path
    n_patients: int = field(init=False)  # rows of the test split, counted once
    pathologies: tuple[str, ...] = field(init=False)

    def __post_init__(self):
        from engines.collab.ddxplus import count_patients, ddxplus_pathologies, ddxplus_paths

        self.directory = Path(self.directory)
        patients, _, _ = ddxplus_paths(self.directory)
        self.pathologies = ddxplus_pathologies(self.directory)
        self.n_patients = count_patients(patients)
        if self.n_patients == 0:
            raise ValueError(f"no patients in the DDXPlus folder {self.directory}")

    def patients(self, n: int) -> dict:
        """What n cases take from the release (``ddxplus.patients_summary``)."""
        from engines.collab.ddxplus import patients_summary

        return patients_summary(n, self.n_patients)

    def draw(self, n: int, rng: np.random.Generator, hardness: np.ndarray | None = None) -> AICases:
        """n patients in a random order drawn from ``rng``: distinct while n ≤ ``n_patients``, then repeating."""
        from engines.collab.ddxplus import draw_ddxplus
        from engines.collab.medical import differential_vector

        drawn = draw_ddxplus(self.directory, n, rng, n_patients=self.n_patients).cases
        probs = np.array([differential_vector(c) for c in drawn]).reshape(n, len(self.pathologies))
        cases = AICases(probs=probs, labels=np.array([c.label for c in drawn], dtype=np.int64),
                        difficulty=confidence_difficulty(probs), age=np.array([c.AGE for c in drawn], dtype=float))
        return cases if hardness is None else self.tilt_order(cases, rng, hardness)

    def draw_distinct(self, n: int, rng: np.random.Generator) -> AICases:
        """n different patients of the release, in random order (no patient twice); ValueError if it has fewer."""
        if n > self.n_patients:
            raise ValueError(f"the DDXPlus folder {self.directory} has {self.n_patients} patients; "
                             f"calibration and run need {n} distinct ones")
        return self.draw(n, rng)

    @staticmethod
    def tilt_order(cases: AICases, rng: np.random.Generator, hardness: np.ndarray) -> AICases:
        """The same cases reordered so that harder ones come where ``hardness`` is higher.

        Each position t gets a target quantile ``tilt(u_t, hardness_t)``; the cases sorted by
        difficulty go to the positions sorted by target (rank matching). The patients stay the
        drawn ones, so the mix over the run is the release's; the tilt shapes when the hard ones come.
        """
        target = tilt(rng.random(len(cases.labels)), hardness)
        order = np.empty(len(target), dtype=np.int64)
        order[np.argsort(target, kind="stable")] = np.argsort(cases.difficulty, kind="stable")
        return cases.take(order)


def tilt(quantiles: np.ndarray, hardness: np.ndarray | None) -> np.ndarray:
    """u -> u^exp(−2·hardness): hardness 0 keeps the mix, > 0 shifts it to hard cases (see ScheduleTrack)."""
    return quantiles if hardness is None else quantiles ** np.exp(-2.0 * np.asarray(hardness))


def make_ai_source(kind: str, path: str | Path = DEFAULT_AI_SCORES, n_labels: int = N_LABELS, task: str = "shapes",
                   ddxplus_dir: str | Path | None = None):
    """The AI score source of a task.

    shapes: ``synthetic`` (parametric AI) or ``cnn`` (precomputed probabilities from ``path``,
    relative to the repo). medical: the exact posterior of the synthetic world (``MedicalAI``), or
    with ``ddxplus_dir`` the real release's differentials (``DDXPlusAI``, patients drawn at random).
    """
    if task == "medical":
        if kind != "synthetic":
            raise ValueError(f"the medical task's AI is the Bayes posterior of its world; --ai {echo(kind)} is for shapes")
        return DDXPlusAI(Path(ddxplus_dir)) if ddxplus_dir else MedicalAI()
    if ddxplus_dir:
        raise ValueError("--ddxplus-dir needs --task medical")
    if kind == "synthetic":
        return SyntheticAI(n_labels=n_labels)
    if kind == "cnn":
        path = Path(path)
        return PrecomputedAI(path if path.is_absolute() else REPO_ROOT / path, n_labels=n_labels)
    raise ValueError(f"unknown AI score source {echo(kind)} (known: synthetic, cnn)")
