"""A synthetic DDXPlus-like diagnosis task (SYNTHETIC data): its world, cases, posterior and text.

The precursor paper ("Human-AI Collaborative Uncertainty Quantification", arXiv:2510.23476) runs an
LLM clinician on DDXPlus (Fansi Tchango et al., NeurIPS 2022 Datasets & Benchmarks; 49 pathologies,
fields AGE, SEX, EVIDENCES, INITIAL_EVIDENCE, DIFFERENTIAL_DIAGNOSIS, PATHOLOGY). The multi-round
version reveals more evidence each round (``docs/collab.md``, Method). DDXPlus itself is not shipped
here, so this module offers:

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
- the real release, read as its owners publish it, is ``engines.collab.ddxplus``; its patients
  are ``MedicalCase`` objects too, so ``describe`` and the simulators take both.

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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines.platform.files import echo

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
            raise KeyError(f"unknown evidence code {echo(code)}")
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
    # A MedicalWorld, or the engines.collab.ddxplus.DDXPlusRelease the patient was read from (which builds on
    # this module, so it is not named in the annotation).
    world: MedicalWorld | Any | None = field(default=None, repr=False, compare=False)

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
        raise ValueError(f"fraction must be in [0, 1], got {echo(fraction)}")
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
                         f"{echo(case.INITIAL_EVIDENCE)} is never a chief complaint in this world)")
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
    describe_patient = getattr(case.world, "describe_patient", None)  # a DDXPlus release (engines.collab.ddxplus)
    if describe_patient is not None:
        return describe_patient(case, evidences)
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


__all__ = [
    "AGE_BINS", "Evidence", "MedicalCase", "MedicalWorld", "default_world", "describe", "differential_vector",
    "evidence_share", "generate_cases", "posterior", "reveal",
]
