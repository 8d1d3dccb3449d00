"""A synthetic DDXPlus-like diagnosis task (SYNTHETIC data), and a loader for the real DDXPlus release.

Spec ``shared/specs/collab.md`` §2 and §6: the precursor (arXiv:2510.23476) runs an LLM clinician on
DDXPlus (Fansi Tchango et al., NeurIPS 2022 Datasets & Benchmarks; 49 pathologies, fields AGE, SEX,
EVIDENCES, INITIAL_EVIDENCE, DIFFERENTIAL_DIAGNOSIS, PATHOLOGY). The multi-round version reveals
more evidence each round. DDXPlus itself is not shipped here, so this module offers:

- ``MedicalWorld`` — a small, seeded, **synthetic** disease–symptom model in the spirit of DDXPlus:
  12 generic pathologies and 40 evidences (30 symptoms, 10 antecedents). It is *not* medical
  knowledge; the probabilities are drawn from a seed around hand-picked characteristic findings.
  Generative model of one case, per pathology p:

  - p ~ prior; age bin ~ P(bin | p), age uniform in the bin; sex ~ Bernoulli(P(male | p));
  - the chief complaint (INITIAL_EVIDENCE) e0 ~ Categorical(chief[p]) over the symptoms;
  - every other evidence e is present independently with probability P(e | p).

  ``posterior`` is exact Bayes under this model (the "AI" probabilities): it conditions on age bin,
  sex, the chief complaint and the present/absent status of every *asked* evidence.
- ``generate_cases(seed, n)`` — cases with DDXPlus-named fields; DIFFERENTIAL_DIAGNOSIS is the exact
  posterior given all evidence. ``reveal(case, k, rounds)`` is the multi-round interview: round 1
  knows the chief complaint only, the last round knows every answer. Questions are asked in a
  per-case random order drawn independently of the answers, so the posterior stays exact.
- ``describe(case, evidences)`` — the text an LLM clinician reads.
- ``load_ddxplus(patients, evidences_json, conditions_json)`` — the real release as its owners
  publish it (github.com/mila-iqia/ddxplus): release_evidences.json, release_conditions.json and
  release_{train,validate,test}_patients.zip, each zip holding one extension-less CSV, read in
  place or extracted (``open_patients``); pathologies are named by each condition's
  ``condition_name`` (``pathology_names``). ``load_ddxplus_dir(folder)`` finds the test split and
  the code books in a release folder; ``draw_ddxplus(folder, n, rng)`` reads n patients in a
  seeded random order, parsing only those.

The simulator (``python -m engines.collab simulate --task medical``) uses the exact posterior as the
AI: given part of the interview (``evidence_share``) for the parametric humans, given the round's
evidence (``reveal``) for an LLM clinician.

Examples::

    >>> cases = generate_cases(0, 3)
    >>> case = cases[0]
    >>> known = reveal(case, 1, rounds=3)   # [INITIAL_EVIDENCE]
    >>> p = posterior(case, known)          # (12,) sums to 1, ordered as case.world.pathologies
    >>> print(describe(case, known))        # doctest: +SKIP
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TextIO

import numpy as np

# ---------------------------------------------------------------- the synthetic vocabulary
AGE_BINS: tuple[tuple[int, int], ...] = ((1, 15), (16, 39), (40, 64), (65, 95))  # inclusive years

# (name, question) per evidence; codes are E_1..E_40 in this order. The first 30 are symptoms.
_EVIDENCES: tuple[tuple[str, str], ...] = (
    ("fever", "Do you have a fever?"),
    ("cough", "Do you have a cough?"),
    ("sore throat", "Do you have a sore throat?"),
    ("runny nose", "Do you have a runny or congested nose?"),
    ("sneezing", "Have you been sneezing a lot?"),
    ("shortness of breath", "Are you short of breath?"),
    ("wheezing", "Do you hear a whistling sound when you breathe?"),
    ("chest pain", "Do you have chest pain or tightness?"),
    ("headache", "Do you have a headache?"),
    ("facial pain", "Do you have pain or pressure in your face or forehead?"),
    ("muscle aches", "Do you have muscle aches?"),
    ("fatigue", "Do you feel unusually tired?"),
    ("nausea", "Do you feel nauseous?"),
    ("vomiting", "Have you vomited?"),
    ("diarrhoea", "Do you have diarrhoea?"),
    ("abdominal pain", "Do you have abdominal pain?"),
    ("heartburn", "Do you have a burning feeling behind the breastbone?"),
    ("burning urination", "Does it burn when you urinate?"),
    ("frequent urination", "Do you urinate more often than usual?"),
    ("light sensitivity", "Does light bother your eyes?"),
    ("visual aura", "Did you see flashing lights or zigzags before the pain?"),
    ("palpitations", "Do you feel your heart racing or pounding?"),
    ("sweating", "Are you sweating more than usual?"),
    ("dizziness", "Do you feel dizzy or light-headed?"),
    ("itchy eyes", "Are your eyes itchy or watery?"),
    ("productive sputum", "Do you cough up phlegm?"),
    ("chills", "Do you have chills or shivers?"),
    ("regurgitation", "Do you have a sour taste or food coming back up?"),
    ("trembling", "Are you trembling or shaking?"),
    ("fear of dying", "Do you have an intense fear that something terrible will happen?"),
    ("smoker", "Do you smoke?"),
    ("known asthma", "Have you been diagnosed with asthma?"),
    ("seasonal allergies", "Do you have seasonal allergies?"),
    ("sick contact", "Have you been in contact with someone who was sick recently?"),
    ("recent travel", "Have you travelled in the last 4 weeks?"),
    ("family history of migraine", "Does anyone in your family have migraines?"),
    ("overweight", "Are you overweight?"),
    ("anxiety history", "Have you been diagnosed with an anxiety disorder?"),
    ("suspect food", "Did you eat food that might have been spoiled recently?"),
    ("chronic lung disease", "Do you have a chronic lung disease such as COPD?"),
)
N_SYMPTOMS = 30

# name -> (characteristic findings, age profile over AGE_BINS, P(male)). Coarse and generic on purpose.
_PATHOLOGIES: tuple[tuple[str, tuple[str, ...], tuple[float, ...], float], ...] = (
    ("Viral pharyngitis", ("sore throat", "fever", "runny nose", "fatigue", "sick contact"), (3, 3, 2, 1), 0.5),
    ("Acute bronchitis", ("cough", "productive sputum", "fatigue", "wheezing", "chest pain", "smoker"), (1, 2, 3, 2), 0.5),
    ("Pneumonia", ("fever", "cough", "productive sputum", "shortness of breath", "chills", "chest pain",
                   "chronic lung disease"), (1, 1, 2, 4), 0.55),
    ("Influenza", ("fever", "muscle aches", "chills", "headache", "fatigue", "cough", "sick contact"), (2, 3, 2, 2), 0.5),
    ("Acute sinusitis", ("facial pain", "runny nose", "headache", "fatigue"), (1, 3, 3, 1), 0.45),
    ("Allergic rhinitis", ("sneezing", "runny nose", "itchy eyes", "seasonal allergies"), (3, 3, 2, 1), 0.5),
    ("Asthma exacerbation", ("wheezing", "shortness of breath", "cough", "chest pain", "known asthma",
                             "seasonal allergies"), (4, 3, 1, 1), 0.5),
    ("Gastroenteritis", ("diarrhoea", "vomiting", "nausea", "abdominal pain", "fever", "suspect food",
                         "recent travel"), (3, 3, 2, 2), 0.5),
    ("Gastro-oesophageal reflux", ("heartburn", "regurgitation", "chest pain", "cough", "overweight"), (1, 2, 3, 3), 0.55),
    ("Migraine", ("headache", "light sensitivity", "visual aura", "nausea", "family history of migraine"),
     (1, 4, 3, 1), 0.25),
    ("Urinary tract infection", ("burning urination", "frequent urination", "abdominal pain", "fever"), (1, 3, 2, 3), 0.15),
    ("Panic attack", ("palpitations", "sweating", "trembling", "fear of dying", "shortness of breath", "chest pain",
                      "dizziness", "anxiety history"), (1, 4, 2, 1), 0.4),
)


@dataclass(frozen=True)
class Evidence:
    """One evidence: a symptom (``kind="symptom"``) or an antecedent (history, ``kind="antecedent"``)."""

    code: str
    name: str
    question: str
    kind: str


# ---------------------------------------------------------------- the world
@dataclass(frozen=True, eq=False)
class MedicalWorld:
    """A naive-Bayes disease–symptom model with age/sex effects and a chief-complaint distribution.

    Args:
        pathologies: the P label names (the label space, in this order).
        evidences: the E evidences; ``chief`` may put mass only on ``kind == "symptom"`` ones.
        prior: (P,) prevalence, sums to 1.
        evidence_prob: (P, E) P(evidence present | pathology), in (0, 1).
        age_prob: (P, B) P(age bin | pathology) over ``age_bins``, rows sum to 1.
        p_male: (P,) P(sex = M | pathology), in (0, 1).
        chief: (P, E) P(INITIAL_EVIDENCE = e | pathology), rows sum to 1.
        age_bins: B inclusive (low, high) year ranges covering every age a case may have.
    """

    pathologies: tuple[str, ...]
    evidences: tuple[Evidence, ...]
    prior: np.ndarray
    evidence_prob: np.ndarray
    age_prob: np.ndarray
    p_male: np.ndarray
    chief: np.ndarray
    age_bins: tuple[tuple[int, int], ...] = AGE_BINS
    index: Mapping[str, int] = field(init=False, repr=False)

    def __post_init__(self):
        P, E, B = len(self.pathologies), len(self.evidences), len(self.age_bins)
        shapes = {"prior": (P,), "evidence_prob": (P, E), "age_prob": (P, B), "p_male": (P,), "chief": (P, E)}
        for name, shape in shapes.items():
            value = np.asarray(getattr(self, name), dtype=float)
            if value.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {value.shape}")
            if not np.all(np.isfinite(value)) or np.any(value < 0):
                raise ValueError(f"{name} must be finite and non-negative")
            object.__setattr__(self, name, value)
        if P < 2 or len(set(self.pathologies)) != P:
            raise ValueError("need at least two distinct pathology names")
        for name in ("prior", "age_prob", "chief"):
            if not np.allclose(getattr(self, name).sum(axis=-1), 1.0):
                raise ValueError(f"{name} must sum to 1 (per pathology)")
        for name in ("evidence_prob", "p_male"):
            if np.any(getattr(self, name) <= 0) or np.any(getattr(self, name) >= 1):
                raise ValueError(f"{name} must lie strictly inside (0, 1)")
        not_symptom = np.array([e.kind != "symptom" for e in self.evidences], dtype=bool)
        if np.any(self.chief[:, not_symptom] > 0):
            raise ValueError("chief complaints must be symptoms")
        object.__setattr__(self, "index", {e.code: i for i, e in enumerate(self.evidences)})
        if len(self.index) != E:
            raise ValueError("evidence codes must be distinct")

    @classmethod
    def synthetic(cls, seed: int = 0) -> MedicalWorld:
        """The default SYNTHETIC world: 12 pathologies, 40 evidences, probabilities drawn from ``seed``."""
        rng = np.random.default_rng(seed)
        evidences = tuple(Evidence(f"E_{i + 1}", name, question, "symptom" if i < N_SYMPTOMS else "antecedent")
                          for i, (name, question) in enumerate(_EVIDENCES))
        by_name = {e.name: i for i, e in enumerate(evidences)}
        P, E = len(_PATHOLOGIES), len(evidences)
        prob = rng.uniform(0.01, 0.08, (P, E))  # background rate of each finding
        age = np.zeros((P, len(AGE_BINS)))
        p_male = np.zeros(P)
        for p, (_, findings, profile, male) in enumerate(_PATHOLOGIES):
            for rank, name in enumerate(findings):
                # The first-listed findings are the most typical ones.
                prob[p, by_name[name]] = rng.uniform(0.55, 0.9) * (1.0 - 0.04 * rank)
            age[p] = np.asarray(profile, dtype=float) / sum(profile)
            p_male[p] = male
        symptom = np.arange(E) < N_SYMPTOMS
        chief = np.where(symptom, prob, 0.0) ** 3  # chief complaints are strongly the typical symptoms
        chief /= chief.sum(axis=1, keepdims=True)
        prior = rng.uniform(0.5, 1.5, P)
        return cls(pathologies=tuple(p[0] for p in _PATHOLOGIES), evidences=evidences, prior=prior / prior.sum(),
                   evidence_prob=prob, age_prob=age, p_male=p_male, chief=chief)

    def age_bin(self, age: int) -> int:
        for b, (low, high) in enumerate(self.age_bins):
            if low <= age <= high:
                return b
        raise ValueError(f"age {age} is outside the world's age bins {self.age_bins}")

    def evidence(self, code: str) -> Evidence:
        if code not in self.index:
            raise KeyError(f"unknown evidence code {code!r}")
        return self.evidences[self.index[code]]

    def evidence_text(self, code: str) -> str:
        return self.evidence(code).name

    def log_joint(self, age: int, sex: str, initial: str, known: Mapping[str, bool]) -> np.ndarray:
        """(P,) log P(pathology, age bin, sex, chief complaint, statuses in ``known``)."""
        log = np.log(self.prior) + np.log(self.age_prob[:, self.age_bin(age)])
        log += np.log(self.p_male if sex == "M" else 1.0 - self.p_male)
        with np.errstate(divide="ignore"):
            log += np.log(self.chief[:, self.index[initial]])
        for code, present in known.items():
            if code == initial:
                continue  # present by construction; its likelihood is the chief-complaint term
            q = self.evidence_prob[:, self.index[code]]
            log += np.log(q if present else 1.0 - q)
        return log


_DEFAULT_WORLD: MedicalWorld | None = None


def default_world() -> MedicalWorld:
    """``MedicalWorld.synthetic(0)``, built once."""
    global _DEFAULT_WORLD
    if _DEFAULT_WORLD is None:
        _DEFAULT_WORLD = MedicalWorld.synthetic(0)
    return _DEFAULT_WORLD


# ---------------------------------------------------------------- cases
@dataclass
class MedicalCase:
    """One patient, with DDXPlus's field names.

    ``EVIDENCES`` lists the evidence codes present (INITIAL_EVIDENCE included), as in DDXPlus.
    ``DIFFERENTIAL_DIAGNOSIS`` is [(pathology, probability)] sorted by decreasing probability.
    ``interview`` is the order in which the other evidences are asked (synthetic cases: every code
    but the chief complaint; loaded DDXPlus cases: the names of the evidences present, one per
    question however many values it has, in file order, those at their default value left out).
    ``world`` is the model the case came from (a ``MedicalWorld``) or the DDXPlus release it was
    read from; ``case_id`` is its index (synthetic) or CSV line (DDXPlus).
    """

    AGE: int
    SEX: str
    EVIDENCES: list[str]
    INITIAL_EVIDENCE: str
    DIFFERENTIAL_DIAGNOSIS: list[tuple[str, float]]
    PATHOLOGY: str
    case_id: int = 0
    interview: tuple[str, ...] = ()
    world: MedicalWorld | DDXPlusRelease | None = field(default=None, repr=False, compare=False)

    @property
    def labels(self) -> tuple[str, ...]:
        """The label space (pathology names) of the case's world."""
        if self.world is None:
            raise ValueError("this case has no world or release attached; its label space is unknown")
        return self.world.pathologies

    @property
    def label(self) -> int:
        """Index of PATHOLOGY in ``labels``."""
        return self.labels.index(self.PATHOLOGY)


def generate_cases(seed: int, n: int, world: MedicalWorld | None = None, *,
                   differential: bool = True) -> list[MedicalCase]:
    """Sample ``n`` SYNTHETIC cases from ``world`` (default ``default_world()``), deterministically from ``seed``.

    Args:
        seed: seeds one ``numpy.random.Generator``; equal seeds give identical cases.
        n: number of cases.
        world: the generative model; its exact posterior fills DIFFERENTIAL_DIAGNOSIS.
        differential: False leaves DIFFERENTIAL_DIAGNOSIS empty, for callers that compute their own
            posterior (the full one over every evidence costs about half the generation time).

    Returns:
        A list of ``MedicalCase`` with AGE, SEX, EVIDENCES, INITIAL_EVIDENCE, DIFFERENTIAL_DIAGNOSIS
        and PATHOLOGY, plus the per-case interview order used by ``reveal``.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    world = world or default_world()
    rng = np.random.default_rng(seed)
    codes = [e.code for e in world.evidences]
    cases = []
    for i in range(n):
        p = int(rng.choice(len(world.pathologies), p=world.prior))
        low, high = world.age_bins[int(rng.choice(len(world.age_bins), p=world.age_prob[p]))]
        age = int(rng.integers(low, high + 1))
        sex = "M" if rng.random() < world.p_male[p] else "F"
        initial = codes[int(rng.choice(len(codes), p=world.chief[p]))]
        present = rng.random(len(codes)) < world.evidence_prob[p]  # (E,)
        present[world.index[initial]] = True
        order = [codes[j] for j in rng.permutation(len(codes)) if codes[j] != initial]
        case = MedicalCase(AGE=age, SEX=sex, EVIDENCES=[c for c, on in zip(codes, present, strict=True) if on],
                           INITIAL_EVIDENCE=initial, DIFFERENTIAL_DIAGNOSIS=[], PATHOLOGY=world.pathologies[p],
                           case_id=i, interview=tuple(order), world=world)
        if differential:
            probs = posterior(case, codes)
            ranked = np.argsort(-probs, kind="stable")
            case.DIFFERENTIAL_DIAGNOSIS = [(world.pathologies[j], float(probs[j])) for j in ranked]
        cases.append(case)
    return cases


def reveal(case: MedicalCase, round_k: int, rounds: int) -> list[str]:
    """The evidence codes whose answer is known in round ``round_k`` (1-based) of ``rounds``.

    Round 1 knows only INITIAL_EVIDENCE; round ``rounds`` knows every code of the interview; the
    rounds between ask evenly spaced shares of the interview, in its order (a DDXPlus patient's
    interview items are questions: all values of a multi-choice one come in the same round).
    """
    if rounds < 1 or not 1 <= round_k <= rounds:
        raise ValueError(f"need 1 <= round_k <= rounds, got round_k={round_k}, rounds={rounds}")
    order = case.interview or tuple(e for e in case.EVIDENCES if e != case.INITIAL_EVIDENCE)
    n = len(order) if rounds == 1 else math.ceil(len(order) * (round_k - 1) / (rounds - 1))
    return [case.INITIAL_EVIDENCE, *order[:n]]


def evidence_share(case: MedicalCase, fraction: float) -> list[str]:
    """INITIAL_EVIDENCE and the first ceil(fraction · n) codes of the case's n-question interview.

    What a clinician knows part-way through the questions (``reveal`` with a continuous share):
    0 is the chief complaint only, 1 every answer.
    """
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"fraction must be in [0, 1], got {fraction!r}")
    order = case.interview or tuple(e for e in case.EVIDENCES if e != case.INITIAL_EVIDENCE)
    return [case.INITIAL_EVIDENCE, *order[:math.ceil(len(order) * fraction)]]


def posterior(case: MedicalCase, evidences_subset: Sequence[str], world: MedicalWorld | None = None) -> np.ndarray:
    """Exact P(pathology | age, sex, chief complaint, the statuses of ``evidences_subset``).

    Each code in ``evidences_subset`` counts as *asked*: present if it is in ``case.EVIDENCES``,
    absent otherwise. Codes not listed are unobserved (marginalised out). INITIAL_EVIDENCE is
    always known. This is the "AI" of the medical task.

    Returns:
        (P,) probabilities ordered as ``world.pathologies``; they sum to 1.
    """
    world = world or case.world
    if not isinstance(world, MedicalWorld):
        raise ValueError("posterior needs the MedicalWorld the case came from; loaded DDXPlus cases "
                         "only carry their DIFFERENTIAL_DIAGNOSIS (see differential_vector)")
    present = set(case.EVIDENCES)
    known = {code: code in present for code in evidences_subset}
    for code in known:
        world.evidence(code)  # unknown codes fail loudly
    log = world.log_joint(case.AGE, case.SEX, case.INITIAL_EVIDENCE, known)
    if not np.isfinite(log.max()):
        raise ValueError(f"the observation has probability 0 under every pathology (chief complaint "
                         f"{case.INITIAL_EVIDENCE!r} is never a chief complaint in this world)")
    log -= log.max()
    probs = np.exp(log)
    return probs / probs.sum()


def differential_vector(case: MedicalCase, labels: Sequence[str] | None = None) -> np.ndarray:
    """DIFFERENTIAL_DIAGNOSIS as a (K,) vector over ``labels`` (default ``case.labels``), renormalised."""
    labels = list(labels if labels is not None else case.labels)
    vec = np.zeros(len(labels))
    for name, prob in case.DIFFERENTIAL_DIAGNOSIS:
        vec[labels.index(name)] = prob
    total = vec.sum()
    return vec / total if total > 0 else np.full(len(labels), 1.0 / len(labels))


def describe(case: MedicalCase, evidences: Sequence[str]) -> str:
    """The text an LLM clinician reads: the patient, the chief complaint and the known answers.

    Synthetic case: present evidences are listed as findings and every other listed code is an
    answered "no". DDXPlus patient (``case.world`` a ``DDXPlusRelease``): the interview as a
    clinician reads it (``DDXPlusRelease.finding``): one item per question, the values of a
    multi-choice question together, symptoms and antecedents (``is_antecedent``) apart; absent
    evidences and default values are not findings and are left out. The diagnosis and the
    differential are never included.
    """
    if isinstance(case.world, DDXPlusRelease):
        return _describe_patient(case, case.world, evidences)
    source = case.world
    text = source.evidence_text if source is not None else (lambda code: code)
    sex = {"M": "male", "F": "female"}.get(case.SEX, case.SEX)
    lines = [f"Patient: {case.AGE}-year-old {sex}.", f"Chief complaint: {text(case.INITIAL_EVIDENCE)}."]
    present = set(case.EVIDENCES)
    known = [c for c in dict.fromkeys(evidences) if c != case.INITIAL_EVIDENCE]
    yes = [text(c) for c in known if c in present]
    no = [text(c) for c in known if c not in present]
    lines.append("Other findings reported: " + ("; ".join(yes) if yes else "none yet") + ".")
    if no:
        lines.append("Asked and denied: " + "; ".join(no) + ".")
    return "\n".join(lines)


def _describe_patient(case: MedicalCase, release: DDXPlusRelease, evidences: Sequence[str]) -> str:
    values = _group_values(case.EVIDENCES)  # evidence name -> its values, in file order
    initial = _base(case.INITIAL_EVIDENCE)
    sex = {"M": "male", "F": "female"}.get(case.SEX, case.SEX)
    chief = release.finding(initial, values.get(initial, [])) or release.question(initial)
    symptoms, history = [], []
    for name in dict.fromkeys(_base(code) for code in evidences):
        if name == initial or name not in values:
            continue  # absent: DDXPlus records what a patient has, not what was denied
        text = release.finding(name, values[name])
        if text is not None:
            (history if release.is_antecedent(name) else symptoms).append(text)
    lines = [f"Patient: {case.AGE}-year-old {sex}.", f"Chief complaint: {chief}"]
    for title, items in (("Symptoms", symptoms), ("History (antecedents)", history)):
        lines.append(f"{title}:" + ("".join(f"\n- {item}" for item in items) if items else " none reported."))
    return "\n".join(lines)


# ---------------------------------------------------------------- the real DDXPlus release
VALUE_SEP = "_@_"  # "E_54_@_V_161": value V_161 of evidence E_54


def _base(code: str) -> str:
    return code.partition(VALUE_SEP)[0]


def _group_values(codes: Sequence[str]) -> dict[str, list[str]]:
    """Evidence name -> its values in order ([] for a binary evidence), names in order of first appearance."""
    groups: dict[str, list[str]] = {}
    for code in codes:
        name, sep, value = code.partition(VALUE_SEP)
        groups.setdefault(name, [])
        if sep:
            groups[name].append(value)
    return groups


def _after_question(question: str, answer: str) -> str:
    """'Characterize your pain:' + 'heavy' -> 'Characterize your pain: heavy' (never '::' or '?:')."""
    question = question.rstrip()
    return f"{question} {answer}" if question.endswith(("?", ":")) else f"{question}: {answer}"


@dataclass
class DDXPlusRelease:
    """The parsed DDXPlus release (Fansi Tchango et al., 2022): cases plus the code books.

    ``evidences`` is keyed by each evidence's ``name`` (what EVIDENCES lists; the file's key when
    an entry has no ``name``). ``conditions`` is release_conditions.json as read.
    ``pathologies`` (the label space) are the conditions' ``condition_name`` values, sorted;
    ``names`` maps every name a patients file may use for a pathology to its ``condition_name``
    (see ``pathology_names``). ``n_patients`` is the patients file's row count when it was read to
    the end, else None.
    """

    cases: list[MedicalCase]
    evidences: dict[str, dict]
    conditions: dict[str, dict]
    pathologies: tuple[str, ...] = ()
    names: dict[str, str] = field(default_factory=dict, repr=False)
    n_patients: int | None = None

    def question(self, name: str) -> str:
        entry = self.evidences.get(name)
        return entry["question_en"].strip() if entry else name

    def is_antecedent(self, name: str) -> bool:
        return bool((self.evidences.get(name) or {}).get("is_antecedent", False))

    def _meaning(self, entry: dict, value: str) -> str | None:
        """A value's English text; None for the evidence's default value (as if not synthesized)."""
        if "default_value" in entry and value == str(entry["default_value"]):
            return None
        meaning = (entry.get("value_meaning") or {}).get(value)
        if isinstance(meaning, dict):  # the published form, {"en": ..., "fr": ...}
            meaning = meaning.get("en") or meaning.get("fr")
        if isinstance(meaning, str) and meaning.strip():  # some copies hold the English text itself
            return meaning.strip()
        scale = [v for v in entry.get("possible-values") or [] if isinstance(v, int) and not isinstance(v, bool)]
        if scale and value.lstrip("-").isdigit():
            return f"{value} on a scale of {min(scale)} to {max(scale)}"
        return value

    def finding(self, name: str, values: Sequence[str] = ()) -> str | None:
        """One interview item as a clinician reads it, or None when it is no finding.

        Binary: "<question> yes". Categorical or multi-choice: "<question> <meaning>[, <meaning>...]",
        the English ``value_meaning`` of each value (an integer scale: "4 on a scale of 0 to 10"),
        default values left out; None when every value is the default. A ":" is added only when the
        question ends in neither "?" nor ":".
        """
        entry = self.evidences.get(name)
        if entry is None:
            return None
        if _data_type(entry) == "B" or not values:
            return _after_question(self.question(name), "yes")
        meanings = [m for m in (self._meaning(entry, v) for v in values) if m is not None]
        return _after_question(self.question(name), ", ".join(dict.fromkeys(meanings))) if meanings else None

    def evidence_text(self, code: str) -> str:
        """One code as text: 'E_54_@_V_161' -> 'Characterize your pain: sensitive', 'E_91' -> its question and "yes"."""
        name, sep, value = code.partition(VALUE_SEP)
        if name not in self.evidences:
            return code
        return self.finding(name, [value] if sep else []) or self.question(name)


class DDXPlusFormatError(ValueError):
    """Malformed DDXPlus input; the message names the file, the line and the field."""


PATIENT_COLUMNS = ("AGE", "SEX", "PATHOLOGY", "EVIDENCES", "INITIAL_EVIDENCE", "DIFFERENTIAL_DIAGNOSIS")
DATA_TYPES = ("B", "C", "M")


def _data_type(entry: dict) -> str:
    # "data_type" in the release; the authors' code also reads the earlier name "type-donnes".
    return entry.get("data_type", entry.get("type-donnes", "B"))


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise DDXPlusFormatError(f"{path.name} line {exc.lineno}: not valid JSON ({exc.msg})") from exc
    except UnicodeDecodeError as exc:
        raise DDXPlusFormatError(f"{path.name}: not UTF-8 text ({exc.reason})") from exc
    if not isinstance(data, dict):
        raise DDXPlusFormatError(f"{path.name}: expected a JSON object mapping {what}")
    return data


def read_evidences(path: str | Path) -> dict[str, dict]:
    """release_evidences.json keyed by each entry's ``name`` (the key when it has none); checked.

    Each entry needs ``question_en``; ``data_type`` (or its earlier name ``type-donnes``) is B, C or M
    (B when absent).
    """
    path = Path(path)
    evidences = {}
    for key, entry in _read_json(path, "evidence names to their description").items():
        if not isinstance(entry, dict) or not isinstance(entry.get("question_en"), str):
            raise DDXPlusFormatError(f"{path.name}, entry {key!r}: missing 'question_en'")
        if _data_type(entry) not in DATA_TYPES:
            raise DDXPlusFormatError(f"{path.name}, entry {key!r}: data_type must be B, C or M, "
                                     f"got {_data_type(entry)!r}")
        name = entry.get("name", key)
        if not isinstance(name, str) or name in evidences:
            raise DDXPlusFormatError(f"{path.name}, entry {key!r}: name {name!r} is not a distinct string")
        evidences[name] = entry
    return evidences


def pathology_names(conditions: Mapping[str, dict], filename: str = "release_conditions.json",
                    ) -> tuple[tuple[str, ...], dict[str, str]]:
    """The label space and the name lookup of release_conditions.json.

    Patients name a pathology by its ``condition_name`` (the release's README); the English release
    keeps French keys for some pathologies (key "Pneumonie", condition_name "Pneumonia"), so the
    keys are not the names. A name is looked up as a ``condition_name`` first, then as a
    ``cond-name-eng``, a ``cond-name-fr``, and last as a key (an entry without ``condition_name``
    is named by its key).

    Returns:
        (sorted condition names, {name: condition_name}).
    """
    canonical: dict[str, str] = {}
    for key, entry in conditions.items():
        if not isinstance(entry, dict):
            raise DDXPlusFormatError(f"{filename}, entry {key!r}: expected an object")
        name = entry.get("condition_name", key)
        if not isinstance(name, str) or not name.strip():
            raise DDXPlusFormatError(f"{filename}, entry {key!r}: condition_name must be a non-empty string")
        twin = next((k for k, n in canonical.items() if n == name), None)
        if twin is not None:
            raise DDXPlusFormatError(f"{filename}, entries {twin!r} and {key!r}: same condition_name {name!r}")
        canonical[key] = name
    lookup: dict[str, str] = {}
    for field_name in ("condition_name", "cond-name-eng", "cond-name-fr", None):
        for key, entry in conditions.items():
            alias = key if field_name is None else entry.get(field_name)
            if isinstance(alias, str) and alias:
                lookup.setdefault(alias, canonical[key])
    return tuple(sorted(canonical.values())), lookup


def _read_code_books(evidences_json: Path, conditions_json: Path) -> DDXPlusRelease:
    evidences = read_evidences(evidences_json)
    conditions = _read_json(conditions_json, "pathologies to their description")
    labels, names = pathology_names(conditions, conditions_json.name)
    return DDXPlusRelease(cases=[], evidences=evidences, conditions=conditions, pathologies=labels, names=names)


# ---------------------------------------------------------------- the patients file
PATIENTS_EXTENSIONS = (".zip", ".csv", "")


def _visible(name: str) -> bool:
    """Not a folder, macOS resource fork or hidden file (what zip and desktop tools add)."""
    parts = PurePosixPath(name).parts
    return bool(parts) and not name.endswith("/") and parts[0] != "__MACOSX" and not parts[-1].startswith(".")


@contextmanager
def open_patients(path: str | Path) -> Iterator[tuple[TextIO, str]]:
    """The patients CSV as a text stream, and its name for messages.

    ``path`` is the zip as downloaded (read in place, streaming; its one member, any name, with or
    without an extension; named "release_test_patients.zip:release_test_patients" in messages), the
    extracted CSV (".csv" or no extension), or a folder holding that one file (what desktop tools
    extract to). UTF-8, with or without a byte-order mark.

    Raises:
        DDXPlusFormatError: a zip that is not one, or holds zero or several files; a folder that
            does not hold exactly one file.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and _visible(p.name))
        if len(files) != 1:
            raise DDXPlusFormatError(f"folder {path.name}/ must hold the one patients CSV, found {len(files)} files"
                                     + (f" ({', '.join(p.name for p in files)})" if files else ""))
        path = files[0]
    if path.suffix.lower() != ".zip":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            yield fh, path.name
        return
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DDXPlusFormatError(f"{path.name}: not a readable zip file ({exc})") from exc
    with archive:
        members = [m for m in archive.infolist() if _visible(m.filename)]
        if len(members) != 1:
            listed = f" ({', '.join(m.filename for m in members)})" if members else ""
            raise DDXPlusFormatError(f"{path.name}: expected one patients CSV inside, found {len(members)} files{listed}")
        with archive.open(members[0]) as raw:
            yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), f"{path.name}:{members[0].filename}"


def count_patients(path: str | Path) -> int:
    """Rows of a patients file (``open_patients`` forms) after its header, read as CSV without parsing the fields."""
    with open_patients(path) as (fh, label):
        try:
            return max(sum(1 for _ in csv.reader(fh)) - 1, 0)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DDXPlusFormatError(f"{label}: not a readable CSV ({exc})") from exc


def load_ddxplus(patients_csv: str | Path, evidences_json: str | Path, conditions_json: str | Path,
                 limit: int | None = None, *, rows: Sequence[int] | None = None) -> DDXPlusRelease:
    """Read DDXPlus patients (e.g. release_test_patients.zip) and its two code books.

    Sources differ in a few places; both forms are accepted where they do: the patients file as
    the zip or extracted (``open_patients``); pathologies named by ``condition_name``, or by
    ``cond-name-eng``/``cond-name-fr``/the key (``pathology_names``); ``data_type`` or
    ``type-donnes``; ``value_meaning`` entries as {"en", "fr"} or as plain English text.

    Args:
        patients_csv: the patients, columns AGE, SEX, PATHOLOGY, EVIDENCES, INITIAL_EVIDENCE,
            DIFFERENTIAL_DIAGNOSIS; EVIDENCES and DIFFERENTIAL_DIAGNOSIS are Python list literals
            ("['E_91', 'E_54_@_V_161']", "[['URTI', 0.41], ...]").
        evidences_json: release_evidences.json, name -> {"question_en", "data_type", "is_antecedent",
            "default_value", "possible-values", "value_meaning", ...}.
        conditions_json: release_conditions.json, one entry per pathology with "condition_name",
            "cond-name-eng", "cond-name-fr", "symptoms", "antecedents", ...
        limit: read at most this many patients, the first ones of the file.
        rows: instead, the patients at these data-row indices (0 = the first after the header),
            distinct, returned in this order; the file is read up to the last of them and rows not
            asked for are not parsed.

    Returns:
        A ``DDXPlusRelease``; every case's ``world`` is the release (names, label space), its
        PATHOLOGY and DIFFERENTIAL_DIAGNOSIS use ``condition_name``, its ``interview`` lists the
        evidence names asked after the chief complaint (one per question, in file order, default
        values left out).

    Raises:
        DDXPlusFormatError: naming the file, line and field, e.g.
            "release_test_patients.zip:release_test_patients line 7, field EVIDENCES: not a list literal".
    """
    patients_csv, evidences_json, conditions_json = Path(patients_csv), Path(evidences_json), Path(conditions_json)
    release = _read_code_books(evidences_json, conditions_json)
    wanted: dict[int, int] | None = None
    if rows is not None:
        wanted = {int(r): i for i, r in enumerate(rows)}
        if len(wanted) != len(rows) or any(r < 0 for r in wanted):
            raise ValueError("rows must be distinct non-negative row indices")
    found: dict[int, MedicalCase] = {}
    with open_patients(patients_csv) as (fh, label):
        reader = csv.DictReader(fh)
        try:
            header = reader.fieldnames or []
            missing = [c for c in PATIENT_COLUMNS if c not in header]
            if missing:
                raise DDXPlusFormatError(f"{label} line 1: missing column(s) {', '.join(missing)}")
            index = -1
            for index, row in enumerate(reader):
                if wanted is None:
                    if limit is not None and index >= limit:
                        break
                elif len(found) == len(wanted):
                    break  # every row asked for is read
                elif index not in wanted:
                    continue
                found[index] = _patient(row, reader.line_num, label, release, conditions_json.name,
                                        evidences_json.name)
            else:
                release.n_patients = index + 1
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DDXPlusFormatError(f"{label} line {reader.line_num}: not a readable CSV ({exc})") from exc
    if wanted is None:
        release.cases = [found[i] for i in sorted(found)]
    else:
        if len(found) < len(wanted):
            raise DDXPlusFormatError(f"{label} has {release.n_patients} patients; row {max(wanted)} was asked for")
        release.cases = [found[r] for r in wanted]
    return release


def _patient(row: dict, line: int, label: str, release: DDXPlusRelease, conditions_name: str,
             evidences_name: str) -> MedicalCase:
    """One CSV row as a case, checked against the code books."""

    def fail(col: str, why: str):
        raise DDXPlusFormatError(f"{label} line {line}, field {col}: {why}")

    if None in row:
        fail(PATIENT_COLUMNS[-1], f"more fields than the header has ({len(row[None])} extra)")
    try:
        age = int(str(row["AGE"]).strip())
    except (TypeError, ValueError):
        fail("AGE", f"not an integer ({row['AGE']!r})")
    sex = (row["SEX"] or "").strip()
    if sex not in ("M", "F"):
        fail("SEX", f"must be M or F, got {sex!r}")
    raw = (row["PATHOLOGY"] or "").strip()
    pathology = release.names.get(raw)
    if pathology is None:
        fail("PATHOLOGY", f"unknown pathology {raw!r} (no condition_name, cond-name-eng, cond-name-fr or key "
                          f"of {conditions_name})")
    codes = _literal(row["EVIDENCES"], "EVIDENCES", fail)
    if not all(isinstance(c, str) for c in codes):
        fail("EVIDENCES", "every item must be a string code")
    for code in codes:
        name, sep, value = code.partition(VALUE_SEP)
        entry = release.evidences.get(name)
        if entry is None:
            fail("EVIDENCES", f"unknown evidence code {code!r} (not in {evidences_name})")
        allowed = entry.get("possible-values") or []
        if sep and allowed and value not in {str(v) for v in allowed}:
            fail("EVIDENCES", f"{code!r}: {value!r} is not one of the possible-values of {name}")
    initial = (row["INITIAL_EVIDENCE"] or "").strip()
    if _base(initial) not in release.evidences:
        fail("INITIAL_EVIDENCE", f"unknown evidence code {initial!r}")
    differential = []
    for item in _literal(row["DIFFERENTIAL_DIAGNOSIS"], "DIFFERENTIAL_DIAGNOSIS", fail):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)):
            fail("DIFFERENTIAL_DIAGNOSIS", f"items must be [name, probability], got {item!r}")
        name = release.names.get(item[0].strip())
        if name is None:
            fail("DIFFERENTIAL_DIAGNOSIS", f"unknown pathology {item[0]!r}")
        if not 0.0 <= float(item[1]) <= 1.0:
            fail("DIFFERENTIAL_DIAGNOSIS", f"probability of {item[0]!r} must be in [0, 1], got {item[1]}")
        differential.append((name, float(item[1])))
    differential.sort(key=lambda pair: -pair[1])
    first = _base(initial)
    interview = tuple(name for name, values in _group_values(codes).items()
                      if name != first and release.finding(name, values) is not None)
    return MedicalCase(AGE=age, SEX=sex, EVIDENCES=list(codes), INITIAL_EVIDENCE=initial,
                       DIFFERENTIAL_DIAGNOSIS=differential, PATHOLOGY=pathology, case_id=line, interview=interview,
                       world=release)


DDXPLUS_CODE_BOOKS = ("release_evidences.json", "release_conditions.json")
DDXPLUS_SPLIT = "release_test_patients"  # the test split; its forms are DDXPLUS_PATIENTS, first found wins
DDXPLUS_PATIENTS = (f"{DDXPLUS_SPLIT}.csv", DDXPLUS_SPLIT, f"{DDXPLUS_SPLIT}/", f"{DDXPLUS_SPLIT}.zip")


def ddxplus_paths(directory: str | Path) -> tuple[Path, Path, Path]:
    """(patients, evidences, conditions) of a DDXPlus release folder; ValueError naming what is missing.

    The patients are the test split in any of its forms (``open_patients``), looked for in this
    order: release_test_patients.csv, release_test_patients (the zip's member, extracted), a folder
    release_test_patients/ holding it, release_test_patients.zip (as downloaded, read in place).
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"DDXPlus folder not found: {directory}")
    evidences, conditions = (directory / name for name in DDXPLUS_CODE_BOOKS)
    candidates = (directory / f"{DDXPLUS_SPLIT}.csv", directory / DDXPLUS_SPLIT, directory / f"{DDXPLUS_SPLIT}.zip")
    patients = next((p for p in candidates if p.exists()), None)
    missing = [p.name for p in (evidences, conditions) if not p.is_file()]
    if patients is None:
        missing.append(f"{DDXPLUS_SPLIT}.zip (or, extracted, {DDXPLUS_SPLIT}.csv, {DDXPLUS_SPLIT} "
                       f"or {DDXPLUS_SPLIT}/)")
    if missing:
        raise ValueError(f"DDXPlus folder {directory} lacks {', '.join(missing)}")
    return patients, evidences, conditions


def ddxplus_pathologies(directory: str | Path) -> tuple[str, ...]:
    """The label space of a DDXPlus release folder (sorted ``condition_name``s, ``pathology_names``), without the patients."""
    _, _, conditions = ddxplus_paths(directory)
    return pathology_names(_read_json(conditions, "pathologies to their description"), conditions.name)[0]


def load_ddxplus_dir(directory: str | Path, limit: int | None = None, *,
                     rows: Sequence[int] | None = None) -> DDXPlusRelease:
    """``load_ddxplus`` on a release folder: the test patients and the two code books (see ``ddxplus_paths``)."""
    return load_ddxplus(*ddxplus_paths(directory), limit=limit, rows=rows)


@dataclass
class PatientDraw:
    """``n`` cases drawn from a release (``draw_ddxplus``): the cases in order and how many patients were behind them."""

    cases: list[MedicalCase]
    n_patients: int  # patients in the release's test split
    release: DDXPlusRelease

    @property
    def distinct(self) -> int:
        return min(len(self.cases), self.n_patients)

    @property
    def repeats(self) -> bool:
        """True when the draw needed more cases than the release has patients (some come back)."""
        return len(self.cases) > self.n_patients

    def summary(self) -> dict:
        return patients_summary(len(self.cases), self.n_patients)


def patients_summary(n: int, n_patients: int) -> dict:
    """What a result records of n cases drawn from a release of ``n_patients``: cases, distinct
    patients, the release's size, and whether patients repeat (``cases_repeat``)."""
    return {"cases": n, "distinct_patients": min(n, n_patients), "patients_in_release": n_patients,
            "cases_repeat": n > n_patients}


def draw_order(n_patients: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """(n,) row indices: a seeded random permutation of the release's rows, taken in order; when n
    exceeds the release, a fresh permutation per further pass (every patient once per pass)."""
    if n_patients < 1:
        raise ValueError("the release has no patients")
    passes = [rng.permutation(n_patients) for _ in range(max(1, math.ceil(n / n_patients)))]
    return np.concatenate(passes)[:n]


def draw_ddxplus(directory: str | Path, n: int, rng: np.random.Generator, n_patients: int | None = None) -> PatientDraw:
    """``n`` patients of a release folder's test split, in a random order drawn from ``rng`` (``draw_order``).

    The file is read twice, streaming: once to count its rows (or pass ``n_patients``), once to
    parse only the rows drawn. The first min(n, N) cases are distinct patients; beyond the N
    patients of the release they repeat (``PatientDraw.repeats``).
    """
    patients, evidences, conditions = ddxplus_paths(directory)
    total = count_patients(patients) if n_patients is None else n_patients
    if total < 1:
        raise ValueError(f"no patients in the DDXPlus folder {directory}")
    order = draw_order(total, n, rng)
    rows = np.unique(order)
    release = load_ddxplus(patients, evidences, conditions, rows=rows.tolist())
    by_row = dict(zip(rows.tolist(), release.cases, strict=True))
    return PatientDraw([by_row[r] for r in order.tolist()], total, release)


def _literal(text: str | None, column: str, fail) -> list:
    text = (text or "").strip()
    value = None
    # A literal with no double quote or backslash reads the same as JSON once its quotes are
    # swapped, and json is ~8x faster than ast on the release's long differentials.
    if '"' not in text and "\\" not in text:
        try:
            value = json.loads(text.replace("'", '"'))
        except ValueError:
            value = None
    if value is None:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            fail(column, "not a list literal")
    if not isinstance(value, list):
        fail(column, "not a list literal")
    return value


__all__ = [
    "AGE_BINS", "DDXPLUS_CODE_BOOKS", "DDXPLUS_PATIENTS", "DDXPlusFormatError", "DDXPlusRelease", "Evidence",
    "MedicalCase", "MedicalWorld", "PatientDraw", "count_patients", "ddxplus_paths", "ddxplus_pathologies",
    "default_world", "describe", "differential_vector", "draw_ddxplus", "draw_order", "evidence_share",
    "generate_cases", "load_ddxplus", "load_ddxplus_dir", "open_patients", "pathology_names", "patients_summary",
    "posterior", "read_evidences", "reveal",
]
