"""A small DDXPlus release in the published format, written to a folder for the loader's tests.

Format (Fansi Tchango et al., "DDXPlus: A New Dataset For Automatic Medical Diagnosis",
NeurIPS 2022 Datasets and Benchmarks; the dataset's README at github.com/mila-iqia/ddxplus):

- ``release_evidences.json``: evidence name -> {"name", "code_question", "question_fr",
  "question_en", "is_antecedent", "default_value", "possible-values", "value_meaning"
  ({value code: {"fr", "en"}}), "data_type" ("B" binary, "C" categorical, "M" multi-choice)}.
  A value equal to ``default_value`` means "as if the evidence was not synthesized".
- ``release_conditions.json``: one object per pathology with "condition_name", "cond-name-fr",
  "cond-name-eng", "icd10-id", "symptoms", "antecedents" (evidence names -> {}) and "severity".
  Patients name pathologies by ``condition_name``; the English release keeps French keys for
  some pathologies whose ``condition_name`` is English (e.g. "Pneumonie" -> "Pneumonia").
- ``release_{train,validate,test}_patients.zip``: a zip holding one CSV whose member has no
  extension (``release_test_patients``), columns AGE, DIFFERENTIAL_DIAGNOSIS ([[name, prob], ...]),
  SEX, PATHOLOGY, EVIDENCES (a Python-literal list of names, "E_54_@_V_161" for a value of a
  categorical or multi-choice evidence, one item per value of a multi-choice one) and
  INITIAL_EVIDENCE.

``write_release(folder)`` writes the three patients forms researchers end up with: the zip as
downloaded (``form="zip"``), the extracted CSV with or without an extension (``"csv"``,
``"bare"``), or the folder a desktop tool extracts to (``"folder"``). ``random_patients`` makes
many rows of the same shape, for sizes like the real test split (134,529 patients).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import numpy as np

PATIENT_COLUMNS = ("AGE", "DIFFERENTIAL_DIAGNOSIS", "SEX", "PATHOLOGY", "EVIDENCES", "INITIAL_EVIDENCE")


def _evidence(name, question_en, question_fr, data_type="B", *, antecedent=False, parent=None, default=0,
              values=(), meanings=None):
    return {"name": name, "code_question": parent or name, "question_fr": question_fr, "question_en": question_en,
            "is_antecedent": antecedent, "default_value": default, "possible-values": list(values),
            "value_meaning": {code: {"fr": fr, "en": en} for code, (fr, en) in (meanings or {}).items()},
            "data_type": data_type}


EVIDENCES = {e["name"]: e for e in (
    _evidence("E_91", "Do you have a fever (either felt or measured with a thermometer)?",
              "Avez-vous de la fièvre (ressentie ou mesurée avec un thermomètre)?"),
    _evidence("E_97", "Do you have a sore throat?", "Avez-vous mal à la gorge?"),
    _evidence("E_201", "Do you have a cough?", "Avez-vous une toux?"),
    _evidence("E_53", "Do you have pain somewhere, related to your reason for consulting?",
              "Avez-vous de la douleur quelque part en lien avec votre raison de consulter?"),
    _evidence("E_54", "Characterize your pain:", "Caractérisez votre douleur:", "M", parent="E_53", default="V_11",
              values=("V_11", "V_161", "V_183", "V_192"),
              meanings={"V_11": ("NA", "NA"), "V_161": ("sensible", "sensitive"),
                        "V_183": ("une lourdeur ou serrement", "heavy"), "V_192": ("vive", "sharp")}),
    _evidence("E_55", "Do you feel pain somewhere?", "Ressentez-vous de la douleur quelque part?", "M", parent="E_53",
              default="V_123", values=("V_123", "V_25", "V_69", "V_101"),
              meanings={"V_123": ("nulle part", "nowhere"), "V_25": ("arrière de la tête", "back of the head"),
                        "V_69": ("front", "forehead"), "V_101": ("pharynx", "pharynx")}),
    _evidence("E_56", "How intense is the pain?", "Quelle est l'intensité de la douleur?", "C", parent="E_53",
              default=0, values=range(11)),
    _evidence("E_57", "Does the pain radiate to another location?", "La douleur irradie-t-elle à un autre endroit?",
              "M", parent="E_53", default="V_123", values=("V_123", "V_49"),
              meanings={"V_123": ("nulle part", "nowhere"), "V_49": ("épaule(D)", "shoulder(R)")}),
    _evidence("E_66", "Are you experiencing shortness of breath or difficulty breathing in a significant way?",
              "Êtes-vous essoufflé ou avez-vous de la difficulté à respirer de façon importante?"),
    _evidence("E_48", "Do you live with 4 or more people?", "Vivez-vous avec 4 personnes ou plus?", antecedent=True),
    _evidence("E_204", "Have you traveled out of the country in the last 4 weeks?",
              "Avez-vous voyagé hors du pays dans les 4 dernières semaines?", "C", antecedent=True, default="V_10",
              values=("V_10", "V_4", "V_7"),
              meanings={"V_10": ("N", "N"), "V_4": ("Afrique", "Africa"), "V_7": ("Europe", "Europe")}),
    _evidence("E_123", "Do you smoke cigarettes?", "Fumez-vous la cigarette?", antecedent=True),
)}


def _condition(key, name, fr, eng, icd, symptoms, antecedents, severity):
    return key, {"condition_name": name, "cond-name-fr": fr, "cond-name-eng": eng, "icd10-id": icd,
                 "symptoms": {s: {} for s in symptoms}, "antecedents": {a: {} for a in antecedents},
                 "severity": severity}


# As in the English release: the key may stay French while ``condition_name`` (what patients use) is English.
CONDITIONS = dict((
    _condition("URTI", "URTI", "IVRS ou virémie", "URTI", "J06.9",
               ("E_91", "E_97", "E_201", "E_53", "E_54", "E_55", "E_56", "E_57"), ("E_48", "E_204"), 5),
    _condition("Bronchiolite", "Bronchiolitis", "Bronchiolite", "Bronchiolitis", "J21",
               ("E_91", "E_201", "E_66"), ("E_48",), 2),
    _condition("Pneumonie", "Pneumonia", "Pneumonie", "Pneumonia", "J18",
               ("E_91", "E_201", "E_66", "E_53", "E_54", "E_55", "E_56"), ("E_123", "E_204"), 3),
    _condition("Œdème pulmonaire aigu", "Acute pulmonary edema", "Œdème pulmonaire aigu", "Acute pulmonary edema",
               "J81", ("E_66", "E_53", "E_54", "E_56"), ("E_123",), 1),
))
LABELS = ("Acute pulmonary edema", "Bronchiolitis", "Pneumonia", "URTI")  # sorted condition_name


def _row(age, differential, sex, pathology, evidences, initial) -> dict:
    return {"AGE": str(age), "DIFFERENTIAL_DIAGNOSIS": repr([[n, p] for n, p in differential]), "SEX": sex,
            "PATHOLOGY": pathology, "EVIDENCES": repr(list(evidences)), "INITIAL_EVIDENCE": initial}


# Four patients. The first one's evidences carry every case the interview text handles: a binary
# chief complaint, two values of one multi-choice question, a 0-10 scale, defaults (E_57 nowhere,
# E_204 N) and antecedents. Each differential ranks the patient's own pathology first.
PATIENTS = [
    _row(34, [("URTI", 0.52), ("Pneumonia", 0.3), ("Bronchiolitis", 0.18)], "F", "URTI",
         ["E_48", "E_53", "E_54_@_V_161", "E_54_@_V_183", "E_55_@_V_25", "E_55_@_V_69", "E_56_@_4", "E_57_@_V_123",
          "E_91", "E_97", "E_204_@_V_10"], "E_91"),
    _row(71, [("Pneumonia", 0.61), ("Acute pulmonary edema", 0.25), ("URTI", 0.14)], "M", "Pneumonia",
         ["E_123", "E_201", "E_204_@_V_7", "E_66", "E_91"], "E_201"),
    _row(2, [("Bronchiolitis", 0.7), ("URTI", 0.2), ("Pneumonia", 0.1)], "M", "Bronchiolitis",
         ["E_201", "E_48", "E_66", "E_91"], "E_66"),
    _row(80, [("Acute pulmonary edema", 0.55), ("Pneumonia", 0.45)], "F", "Acute pulmonary edema",
         ["E_123", "E_53", "E_54_@_V_192", "E_56_@_7", "E_66"], "E_66"),
]


def random_patients(n: int, seed: int = 0, labels=LABELS) -> list[dict]:
    """n rows in the published shape (random ages, evidences and differentials over ``labels``)."""
    rng = np.random.default_rng(seed)
    binary = [name for name, e in EVIDENCES.items() if e["data_type"] == "B"]
    rows = []
    for _ in range(n):
        k = int(rng.integers(2, len(labels) + 1))
        names = [labels[i] for i in rng.choice(len(labels), k, replace=False)]
        probs = np.sort(rng.dirichlet(np.ones(k)))[::-1]
        present = [binary[i] for i in sorted(rng.choice(len(binary), int(rng.integers(1, len(binary))),
                                                         replace=False))]
        evidences = present + [f"E_56_@_{int(rng.integers(1, 11))}"] + (["E_55_@_V_25", "E_55_@_V_69"] if rng.random()
                                                                       < 0.5 else [])
        rows.append(_row(int(rng.integers(0, 100)), list(zip(names, probs.tolist(), strict=True)),
                         "MF"[int(rng.integers(2))], names[0], evidences, present[0]))
    return rows


def patients_csv(rows) -> str:
    """The patients as the release's CSV text (pandas-style quoting: fields with commas in double quotes)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=PATIENT_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def write_release(folder, *, patients=None, form: str = "zip", split: str = "test", evidences=None,
                  conditions=None) -> Path:
    """Write a release into ``folder`` (created); returns the folder.

    ``form``: "zip" (release_<split>_patients.zip holding the extension-less member
    release_<split>_patients, as downloaded), "csv" (release_<split>_patients.csv), "bare" (the
    extracted member, no extension) or "folder" (release_<split>_patients/release_<split>_patients,
    what a desktop "extract" produces).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "release_evidences.json").write_text(json.dumps(evidences or EVIDENCES, ensure_ascii=False, indent=4),
                                                   encoding="utf-8")
    (folder / "release_conditions.json").write_text(json.dumps(conditions or CONDITIONS, ensure_ascii=False,
                                                               indent=4), encoding="utf-8")
    stem = f"release_{split}_patients"
    text = patients_csv(PATIENTS if patients is None else patients)
    if form == "zip":
        with zipfile.ZipFile(folder / f"{stem}.zip", "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(stem, text)
    elif form == "csv":
        (folder / f"{stem}.csv").write_text(text, encoding="utf-8")
    elif form == "bare":
        (folder / stem).write_text(text, encoding="utf-8")
    elif form == "folder":
        (folder / stem).mkdir(exist_ok=True)
        (folder / stem / stem).write_text(text, encoding="utf-8")
    else:
        raise ValueError(f"unknown form {form!r}")
    return folder
