"""The real DDXPlus release, read as its owners publish it (Fansi Tchango et al., NeurIPS 2022 Datasets & Benchmarks).

github.com/mila-iqia/ddxplus ships release_evidences.json, release_conditions.json and
release_{train,validate,test}_patients.zip, each zip holding one extension-less CSV with the fields
AGE, SEX, EVIDENCES, INITIAL_EVIDENCE, DIFFERENTIAL_DIAGNOSIS and PATHOLOGY (49 pathologies).
``load_ddxplus(patients, evidences_json, conditions_json)`` reads them in place or extracted
(``open_patients``); pathologies are named by each condition's ``condition_name``
(``pathology_names``). ``load_ddxplus_dir(folder)`` finds the test split and the code books in a
release folder; ``draw_ddxplus(folder, n, rng)`` reads n patients in a seeded random order, parsing
only those. Patients are ``medical.MedicalCase`` objects whose world is the ``DDXPlusRelease``, so
``medical.describe`` renders the interview as a clinician reads it. The precursor paper
(arXiv:2510.23476) runs an LLM clinician on DDXPlus; see ``docs/collab.md``, Method, "Tasks, AI and
simulated collaborators".
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
from typing import Any, Literal, NotRequired, TextIO

import numpy as np
from pydantic import ConfigDict
from typing_extensions import TypedDict  # pydantic needs this one's TypedDict before Python 3.12

from engines.collab.medical import MedicalCase
from engines.platform.files import echo
from engines.platform.formats import FilledText, FormatError, read_json, validated

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

    def describe_patient(self, case: MedicalCase, evidences: Sequence[str]) -> str:
        """The interview as a clinician reads it (``medical.describe`` calls this for a DDXPlus patient)."""
        values = _group_values(case.EVIDENCES)  # evidence name -> its values, in file order
        initial = _base(case.INITIAL_EVIDENCE)
        sex = {"M": "male", "F": "female"}.get(case.SEX, case.SEX)
        chief = self.finding(initial, values.get(initial, [])) or self.question(initial)
        symptoms, history = [], []
        for name in dict.fromkeys(_base(code) for code in evidences):
            if name == initial or name not in values:
                continue  # absent: DDXPlus records what a patient has, not what was denied
            text = self.finding(name, values[name])
            if text is not None:
                (history if self.is_antecedent(name) else symptoms).append(text)
        lines = [f"Patient: {case.AGE}-year-old {sex}.", f"Chief complaint: {chief}"]
        for title, items in (("Symptoms", symptoms), ("History (antecedents)", history)):
            lines.append(f"{title}:" + ("".join(f"\n- {item}" for item in items) if items else " none reported."))
        return "\n".join(lines)

    def evidence_text(self, code: str) -> str:
        """One code as text: 'E_54_@_V_161' -> 'Characterize your pain: sensitive', 'E_91' -> its question and "yes"."""
        name, sep, value = code.partition(VALUE_SEP)
        if name not in self.evidences:
            return code
        return self.finding(name, [value] if sep else []) or self.question(name)


class DDXPlusFormatError(FormatError):
    """Malformed DDXPlus input; the message names the file, the line (or entry) and the field."""


PATIENT_COLUMNS = ("AGE", "SEX", "PATHOLOGY", "EVIDENCES", "INITIAL_EVIDENCE", "DIFFERENTIAL_DIAGNOSIS")


def _data_type(entry: dict) -> str:
    # "data_type" in the release; the authors' code also reads the earlier name "type-donnes".
    return entry.get("data_type", entry.get("type-donnes", "B"))


DataType = Literal["B", "C", "M"]
# One entry of release_evidences.json: what this reader uses of it (other fields are kept as given).
# A functional TypedDict, since the earlier name of data_type has a hyphen.
EvidenceEntry = TypedDict("EvidenceEntry", {"question_en": str, "data_type": NotRequired[DataType],
                                            "type-donnes": NotRequired[DataType], "name": NotRequired[str]})
EvidenceEntry.__pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[attr-defined]


class ConditionEntry(TypedDict):
    """One entry of release_conditions.json: its ``condition_name`` (the key when absent); the rest
    (``cond-name-eng``, ``symptoms``, ...) kept as given."""

    __pydantic_config__ = ConfigDict(extra="allow")  # type: ignore[misc] - pydantic reads it

    condition_name: NotRequired[FilledText]


def _read_json(path: Path, entry: Any, what: str) -> dict:
    """A code book: a JSON object of entries, each checked as ``entry`` (naming its key when it is not)."""
    data = read_json(path, dict[str, Any], format_name=what, name=path.name, error=DDXPlusFormatError,
                     encoding="utf-8-sig")
    return {key: validated(entry, value, format_name=what, source=f"{path.name}, entry {echo(key)}",
                           error=DDXPlusFormatError) for key, value in data.items()}


def read_evidences(path: str | Path) -> dict[str, dict]:
    """release_evidences.json keyed by each entry's ``name`` (the key when it has none); checked.

    Each entry needs ``question_en``; ``data_type`` (or its earlier name ``type-donnes``) is B, C or M
    (B when absent).
    """
    path = Path(path)
    evidences = {}
    for key, entry in _read_json(path, EvidenceEntry, "a DDXPlus evidence").items():
        name = entry.get("name", key)
        if name in evidences:
            raise DDXPlusFormatError("name", f"{echo(name)} names another entry too", f"{path.name}, entry {echo(key)}")
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
        name = entry.get("condition_name", key)
        twin = next((k for k, n in canonical.items() if n == name), None)
        if twin is not None:
            raise DDXPlusFormatError("condition_name", f"{echo(name)}, the same as entry {echo(twin)}'s",
                                     f"{filename}, entry {echo(key)}")
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
    conditions = _read_json(conditions_json, ConditionEntry, "a DDXPlus condition")
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
            raise DDXPlusFormatError("", f"must hold the one patients CSV, found {len(files)} files"
                                     + (f" ({', '.join(echo(p.name) for p in files)})" if files else ""),
                                     f"folder {path.name}/")
        path = files[0]
    if path.suffix.lower() != ".zip":
        with path.open(encoding="utf-8-sig", newline="") as fh:
            yield fh, path.name
        return
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise DDXPlusFormatError("", f"not a readable zip file ({exc})", path.name) from exc
    with archive:
        members = [m for m in archive.infolist() if _visible(m.filename)]
        if len(members) != 1:
            listed = f" ({', '.join(echo(m.filename) for m in members)})" if members else ""
            raise DDXPlusFormatError("", f"expected one patients CSV inside, found {len(members)} files{listed}",
                                     path.name)
        with archive.open(members[0]) as raw:
            yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline=""), f"{path.name}:{members[0].filename}"


def count_patients(path: str | Path) -> int:
    """Rows of a patients file (``open_patients`` forms) after its header, read as CSV without parsing the fields."""
    with open_patients(path) as (fh, label):
        try:
            return max(sum(1 for _ in csv.reader(fh)) - 1, 0)
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DDXPlusFormatError("", f"not a readable CSV ({exc})", label) from exc


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
            "release_test_patients.zip:release_test_patients, line 7: EVIDENCES: not a list literal" (the
            platform's wording, ``engines.platform.formats``).
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
                raise DDXPlusFormatError("", f"missing column(s) {', '.join(missing)}", f"{label}, line 1", line=1)
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
            raise DDXPlusFormatError("", f"not a readable CSV ({exc})", f"{label}, line {reader.line_num}",
                                     line=reader.line_num) from exc
    if wanted is None:
        release.cases = [found[i] for i in sorted(found)]
    else:
        if len(found) < len(wanted):
            raise DDXPlusFormatError("", f"has {release.n_patients} patients; row {max(wanted)} was asked for", label)
        release.cases = [found[r] for r in wanted]
    return release


def _patient(row: dict, line: int, label: str, release: DDXPlusRelease, conditions_name: str,
             evidences_name: str) -> MedicalCase:
    """One CSV row as a case, checked against the code books."""

    def fail(col: str, why: str):
        raise DDXPlusFormatError(col, why, f"{label}, line {line}", line=line)

    if None in row:
        fail(PATIENT_COLUMNS[-1], f"more fields than the header has ({len(row[None])} extra)")
    try:
        age = int(str(row["AGE"]).strip())
    except (TypeError, ValueError):
        fail("AGE", f"not an integer ({echo(row['AGE'])})")
    sex = (row["SEX"] or "").strip()
    if sex not in ("M", "F"):
        fail("SEX", f"must be M or F, got {echo(sex)}")
    raw = (row["PATHOLOGY"] or "").strip()
    pathology = release.names.get(raw)
    if pathology is None:
        fail("PATHOLOGY", f"unknown pathology {echo(raw)} (no condition_name, cond-name-eng, cond-name-fr or key "
                          f"of {conditions_name})")
    codes = _literal(row["EVIDENCES"], "EVIDENCES", fail)
    if not all(isinstance(c, str) for c in codes):
        fail("EVIDENCES", "every item must be a string code")
    for code in codes:
        name, sep, value = code.partition(VALUE_SEP)
        entry = release.evidences.get(name)
        if entry is None:
            fail("EVIDENCES", f"unknown evidence code {echo(code)} (not in {evidences_name})")
        allowed = entry.get("possible-values") or []
        if sep and allowed and value not in {str(v) for v in allowed}:
            fail("EVIDENCES", f"{echo(code)}: {echo(value)} is not one of the possible-values of {name}")
    initial = (row["INITIAL_EVIDENCE"] or "").strip()
    if _base(initial) not in release.evidences:
        fail("INITIAL_EVIDENCE", f"unknown evidence code {echo(initial)}")
    differential = []
    for item in _literal(row["DIFFERENTIAL_DIAGNOSIS"], "DIFFERENTIAL_DIAGNOSIS", fail):
        if not (isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], (int, float)) and not isinstance(item[1], bool)):
            fail("DIFFERENTIAL_DIAGNOSIS", f"items must be [name, probability], got {echo(item)}")
        name = release.names.get(item[0].strip())
        if name is None:
            fail("DIFFERENTIAL_DIAGNOSIS", f"unknown pathology {echo(item[0])}")
        if not 0.0 <= float(item[1]) <= 1.0:
            fail("DIFFERENTIAL_DIAGNOSIS", f"probability of {echo(item[0])} must be in [0, 1], got {item[1]}")
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
    return pathology_names(_read_json(conditions, ConditionEntry, "a DDXPlus condition"), conditions.name)[0]


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
        except (ValueError, RecursionError):  # a cell nested too deeply is refused below, never a crash
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
    "DDXPLUS_CODE_BOOKS", "DDXPLUS_PATIENTS", "DDXPlusFormatError", "DDXPlusRelease", "PatientDraw", "count_patients",
    "ddxplus_paths", "ddxplus_pathologies", "draw_ddxplus", "draw_order", "load_ddxplus", "load_ddxplus_dir",
    "open_patients", "pathology_names", "patients_summary", "read_evidences",
]
