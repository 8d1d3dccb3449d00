"""HOI-Eval's scores of one editing method: I, H, O and I+Q&A per tag, per level and per split.

Reproduces upstream ``evaluation/compute_scoring_final_scores.py`` (HOI-Edit, ICML 2026; code
``oceanflowlab/HOI-Edit``, commit ``4022133``; ``docs/hoi.md``, "Method: HOI-Eval scores")
over the evaluator's per-item records::

    I = max_yes_confidence,  H = subject_similarity,  O = object_similarity
        (all three None for a record carrying any *_error: the record is skipped, never zero)
    yes(a) = a.confidence if a.answer starts "yes", 0 if it starts "no", else None (skipped)
    IQA(item, tag) = I                              if tag is L1-* or ...specific_pos_initial
                   = min(I, yes(QA(q_tag)))         otherwise, q_tag = the tag's question_v6 question
                     (skipped when I, the question, its answer or yes() is missing)
    tag score   = mean over the items having the tag (of those with that score)
    level score = I, H, O once per item having any tag of the level; IQA over its (item, tag) pairs
    paper table: L1 (I, H, O) and L2 (I, I+Q&A, H, O) from the L1L2 split, L3 from the L3 split.

The tag-to-question alignment is the loader's (:mod:`engines.hoi.benchmark`): the i-th tag that is
neither L1 nor ``pos_initial`` takes the i-th ``question_v6`` question.

**Records** (one method, one JSON file, upstream field names)::

    {"method": "wan22_scpe",
     "L1L2": {"<image key>": {"max_yes_confidence": 0.9, "processing_mode": "confidence_first",
                              "subject_identity_score": 1.0, "subject_quality_score": 0.8,
                              "subject_similarity": 0.8, "object_identity_score": 0.9,
                              "object_quality_score": 1.0, "object_similarity": 0.9,
                              "vqa_error": "...",                    # optional, any *_error
                              "qa": [{"question": "...", "answer": "yes", "confidence": 0.8}]}},
     "L3": {...}}

A judge reply that did not parse is recorded by the evaluator as a ``*_error`` (upstream writes
``vqa_error``, ``subject_similarity_error``, ``object_similarity_error``, ``processing_error`` or
``has_error``); so where a score belongs, anything but a number in [0, 1] (or null, for not
measured) is an error in the file, raised by :func:`read_records` as :class:`RecordFormatError`
naming the file, split, key and field. Nothing unparsed ever becomes a zero: skipped values are
counted (``ScoreRow.n_I`` ... against ``n`` / ``pairs``), not averaged.

**Upstream quirks kept.** A record with any ``*_error`` loses I, H and O together (upstream's
``hoi_fail``), not just the score the error names. An answer starting "no" scores 0 (so does
"not sure"); an answer starting neither "yes" nor "no" is skipped. QA answers are matched to
questions by text; here case and runs of whitespace are ignored (upstream strips only).

**Release bug.** Upstream's HOI-check script reads ``tags_v4``, which the shipped JSONs lack, so
as released it skips every item; the loader and this scorer use ``tags_v6``. Items whose tags came
only from the legacy ``tag`` field are left unscored, as upstream's scorer counts them in no tag.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, PlainValidator, model_validator

from engines.hoi.benchmark import LEVELS, SPLITS, TAGS, Benchmark, BenchmarkItem, judged_by_interaction
from engines.platform.files import echo
from engines.platform.formats import FieldProblem, FilledText, FormatError, StrippedText, read_json, validated

# The scores of a record (upstream names), each a number in [0, 1] or null.
SCORE_FIELDS = (
    "max_yes_confidence",
    "subject_identity_score",
    "subject_quality_score",
    "subject_similarity",
    "object_identity_score",
    "object_quality_score",
    "object_similarity",
)
METRICS = ("I", "H", "O", "IQA")
# The paper's columns per level (docs/hoi.md, "Method: HOI-Eval scores"): L1 has no extra questions,
# so no I+Q&A column.
PAPER_COLUMNS = {"L1": ("I", "H", "O"), "L2": ("I", "I+Q&A", "H", "O"), "L3": ("I", "I+Q&A", "H", "O")}
# Where each paper row is computed: L1 and L2 on the L1L2 file, L3 on the L3 file.
PAPER_SPLIT = {"L1": "L1L2", "L2": "L1L2", "L3": "L3"}


class RecordFormatError(FormatError):
    """An evaluation-records file that cannot be read; the message names the file, the split, the
    item's key and the field, when known (``path``, ``split``, ``key``, ``field``)."""

    def __init__(self, field: str, problem: str, source: str = "", *, line: int | None = None,
                 path: str | Path | None = None, split: str | None = None, key: str | None = None) -> None:
        self.path, self.split, self.key = path, split, key
        if not source and path is not None:
            source = ", ".join([str(path), *([split] if split else []), *([f"key {echo(key)}"] if key is not None else [])])
        super().__init__(field, problem, source, line=line)


def normalize_question(text: str) -> str:
    """A question as matched: runs of whitespace made one space, ends stripped, case folded."""
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class QAAnswer:
    """The judge's answer to one ``question_v6`` question on the edited image."""

    question: str
    answer: str | None  # "yes", "no", or the judge's text; None when it gave none
    confidence: float | None  # in [0, 1]; None when it gave none
    error: str | None = None  # the evaluator's note when the call or its parse failed


def yes_score(qa: QAAnswer | None) -> float | None:
    """``yes(a)`` as upstream's ``yes_score``: the confidence when the answer starts "yes", 0 when it
    starts "no", None (skipped) with no answer, no confidence, an error, or any other answer."""
    if qa is None or qa.error or qa.confidence is None:
        return None
    answer = (qa.answer or "").strip().lower()
    if answer.startswith("yes"):
        return qa.confidence
    if answer.startswith("no"):
        return 0.0
    return None


@dataclass(frozen=True)
class EvalRecord:
    """The evaluator's record of one edited item (upstream HOI-check + QA, upstream field names)."""

    split: str
    key: str
    max_yes_confidence: float | None = None  # I: the best yes-confidence over person-object pairs
    mode: str | None = None  # upstream "processing_mode": "confidence_first" | "similarity_first"
    subject_identity_score: float | None = None
    subject_quality_score: float | None = None
    subject_similarity: float | None = None  # H = identity x quality of the person
    object_identity_score: float | None = None
    object_quality_score: float | None = None
    object_similarity: float | None = None  # O = identity x quality of the object
    errors: dict[str, str] = field(default_factory=dict)  # "*_error" field -> its message (truthy ones only)
    qa: tuple[QAAnswer, ...] = ()

    @property
    def failed(self) -> bool:
        """True when any ``*_error`` is set: the record then gives no I, H or O (upstream ``hoi_fail``)."""
        return bool(self.errors)

    @property
    def I(self) -> float | None:  # noqa: E743 - the paper's name
        return None if self.failed else self.max_yes_confidence

    @property
    def H(self) -> float | None:
        return None if self.failed else self.subject_similarity

    @property
    def O(self) -> float | None:  # noqa: E743 - the paper's name
        return None if self.failed else self.object_similarity

    def answer_to(self, question: str) -> QAAnswer | None:
        """The QA answer whose question matches ``question`` (:func:`normalize_question`), if any."""
        wanted = normalize_question(question)
        return next((qa for qa in self.qa if normalize_question(qa.question) == wanted), None)


@dataclass(frozen=True)
class MethodRecords:
    """All evaluation records of one method, per split."""

    method: str
    by_split: dict[str, dict[str, EvalRecord]]  # split -> key -> record
    path: Path | None = None

    def get(self, split: str, key: str) -> EvalRecord | None:
        return self.by_split.get(split, {}).get(key)


# ---------------------------------------------------------------- I+Q&A of one item


def interaction_qa(item: BenchmarkItem, tag: str, record: EvalRecord | None) -> float | None:
    """``IQA(item, tag)``: I for L1 tags and ``pos_initial``, else ``min(I, yes(answer to the tag's
    question))``; None (skipped) when I, the question, its answer or a yes/no reading is missing."""
    i = record.I if record is not None else None
    if i is None:
        return None
    if judged_by_interaction(tag):
        return i
    question = item.question_for(tag)
    if question is None:
        return None
    yes = yes_score(record.answer_to(question))
    return None if yes is None else min(i, yes)


def iqa_scores(item: BenchmarkItem, record: EvalRecord | None) -> dict[str, float | None]:
    """``IQA(item, tag)`` for each of the item's tags (None where skipped)."""
    return {tag: interaction_qa(item, tag, record) for tag in item.tags}


# ---------------------------------------------------------------- aggregation


@dataclass(frozen=True)
class ScoreRow:
    """Means and counts of one group: a tag, a level, or a whole split.

    ``n`` items carry I, H and O (each counted once); ``pairs`` (item, tag) pairs carry I+Q&A
    (equal to ``n`` for a tag). A mean is None when nothing was scored; ``n - n_I`` items were
    skipped for I (no record, or a record with an error).
    """

    split: str
    name: str  # the tag, "L1" / "L2" / "L3", or the split's name for the whole split
    n: int
    pairs: int
    I: float | None  # noqa: E741 - the paper's name
    H: float | None
    O: float | None  # noqa: E741 - the paper's name
    IQA: float | None
    n_I: int
    n_H: int
    n_O: int
    n_IQA: int

    def mean(self, metric: str) -> float | None:
        """The mean of ``"I"``, ``"H"``, ``"O"`` or ``"IQA"`` (also ``"I+Q&A"``)."""
        return getattr(self, "IQA" if metric == "I+Q&A" else metric)

    def skipped(self, metric: str) -> int:
        """How many items (pairs, for I+Q&A) gave no value for ``metric``."""
        metric = "IQA" if metric == "I+Q&A" else metric
        total = self.pairs if metric == "IQA" else self.n
        return total - getattr(self, f"n_{metric}")


def _mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _row(split: str, name: str, pairs: list[tuple[BenchmarkItem, str]], records: MethodRecords) -> ScoreRow:
    """I, H, O once per item, IQA over every pair (upstream ``stats_for_avg``; for one tag it is
    ``stats_for_tag``)."""
    values: dict[str, list[float]] = {metric: [] for metric in METRICS}
    seen: set[str] = set()
    for item, tag in pairs:
        record = records.get(split, item.key)
        if item.key not in seen:
            seen.add(item.key)
            for metric in ("I", "H", "O"):
                value = getattr(record, metric) if record is not None else None
                if value is not None:
                    values[metric].append(value)
        iqa = interaction_qa(item, tag, record)
        if iqa is not None:
            values["IQA"].append(iqa)
    return ScoreRow(
        split=split, name=name, n=len(seen), pairs=len(pairs),
        I=_mean(values["I"]), H=_mean(values["H"]), O=_mean(values["O"]), IQA=_mean(values["IQA"]),
        n_I=len(values["I"]), n_H=len(values["H"]), n_O=len(values["O"]), n_IQA=len(values["IQA"]),
    )


@dataclass(frozen=True)
class Scores:
    """HOI-Eval's scores of one method on a benchmark."""

    method: str
    splits: dict[str, ScoreRow]  # split -> all its tagged items (IQA over all their tags)
    tags: dict[str, dict[str, ScoreRow]]  # split -> tag -> row (known tags in upstream order first)
    levels: dict[str, dict[str, ScoreRow]]  # split -> "L1"/"L2"/"L3" -> row (levels present only)
    missing: dict[str, tuple[str, ...]]  # split -> keys of scored items with no record
    failed: dict[str, tuple[str, ...]]  # split -> keys whose record has a *_error (skipped, not zero)
    unscored: dict[str, tuple[str, ...]]  # split -> keys tagged only by the legacy "tag" field
    unknown: dict[str, tuple[str, ...]]  # split -> record keys that are no item of the split

    def paper_table(self, decimals: int | None = None) -> list[dict[str, Any]]:
        """The paper's table: ``[{"level": "L1", "n", "I", "H", "O"}, {"level": "L2", "n", "I",
        "I+Q&A", "H", "O"}, {"level": "L3", ...}]``, L1/L2 from the L1L2 split and L3 from the L3
        split; a value is None when nothing was scored (or the split was not read).

        Args:
            decimals: round the means (upstream prints 4); None keeps them as computed.
        """
        table = []
        for level, columns in PAPER_COLUMNS.items():
            row = self.levels.get(PAPER_SPLIT[level], {}).get(level)
            entry: dict[str, Any] = {"level": level, "n": row.n if row is not None else 0}
            for column in columns:
                value = row.mean(column) if row is not None else None
                entry[column] = round(value, decimals) if value is not None and decimals is not None else value
            table.append(entry)
        return table


def compute_scores(benchmark: Benchmark, records: MethodRecords) -> Scores:
    """HOI-Eval's per-split, per-tag and per-level scores of one method.

    Args:
        benchmark: the items (:func:`engines.hoi.benchmark.load_benchmark`).
        records: the method's evaluation records (:func:`read_records`).

    Returns:
        :class:`Scores`; ``Scores.paper_table()`` gives the paper's L1 / L2 / L3 rows.

    Examples::

        >>> scores = compute_scores(load_benchmark("data/hoi_edit"), read_records("runs/wan22.json"))  # doctest: +SKIP
        >>> scores.paper_table(decimals=4)[2]                                                           # doctest: +SKIP
        {'level': 'L3', 'n': 136, 'I': ..., 'I+Q&A': ..., 'H': ..., 'O': ...}
    """
    splits, tags, levels = {}, {}, {}
    missing, failed, unscored, unknown = {}, {}, {}, {}
    for split in benchmark.splits:
        items = benchmark.items(split)
        # Upstream's scorer reads tags_v6 only: an item tagged by the legacy field counts nowhere.
        scored = [item for item in items if item.tags_field == "tags_v6"]
        unscored[split] = tuple(item.key for item in items if item.tags_field != "tags_v6")
        pairs = [(item, tag) for item in scored for tag in item.tags]
        splits[split] = _row(split, split, pairs, records)
        present = {tag for _, tag in pairs}
        order = [tag for tag in TAGS if tag in present] + sorted(present - set(TAGS))
        tags[split] = {tag: _row(split, tag, [p for p in pairs if p[1] == tag], records) for tag in order}
        levels[split] = {
            level: _row(split, level, [p for p in pairs if p[1].startswith(f"{level}-")], records)
            for level in LEVELS if any(tag.startswith(f"{level}-") for tag in present)
        }
        split_records = records.by_split.get(split, {})
        missing[split] = tuple(item.key for item in scored if item.tags and item.key not in split_records)
        failed[split] = tuple(key for key, record in split_records.items() if record.failed)
        known = {item.key for item in items}
        unknown[split] = tuple(key for key in split_records if key not in known)
    return Scores(method=records.method, splits=splits, tags=tags, levels=levels, missing=missing,
                  failed=failed, unscored=unscored, unknown=unknown)


# ---------------------------------------------------------------- reading records


def _score_value(value: Any) -> float | None:
    """A score: a finite number in [0, 1] (not true/false, not text), or null for not measured."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0.0 <= value <= 1.0:
        raise ValueError(f"must be a number in [0, 1] or null (got {echo(value)}; a judge reply that did not "
                         f"parse is recorded as an *_error, never in place of a score)")
    return float(value)


Score = Annotated[float | None, PlainValidator(_score_value)]


class UpstreamAnswer(BaseModel):
    """One judge answer of a record's ``qa`` list."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    question: FilledText
    answer: str | None = None
    confidence: Score = None
    error: Any = None  # the evaluator's note: any truthy value


class UpstreamRecord(BaseModel):
    """The evaluator's record of one item, upstream field names; ``*_error`` fields and others are
    kept as given (read by :func:`_errors`)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    max_yes_confidence: Score = None
    subject_identity_score: Score = None
    subject_quality_score: Score = None
    subject_similarity: Score = None
    object_identity_score: Score = None
    object_quality_score: Score = None
    object_similarity: Score = None
    processing_mode: str | None = None
    mode: str | None = None  # another name for processing_mode
    qa: list[UpstreamAnswer] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> UpstreamRecord:
        if self.mode is not None and self.processing_mode is not None and self.mode != self.processing_mode:
            raise FieldProblem("mode", f"{echo(self.mode)} differs from processing_mode {echo(self.processing_mode)}")
        seen: dict[str, UpstreamAnswer] = {}
        for i, qa in enumerate(self.qa or []):
            earlier = seen.setdefault(normalize_question(qa.question), qa)
            if (earlier.answer, earlier.confidence, _note(earlier.error)) != (qa.answer, qa.confidence, _note(qa.error)):
                raise FieldProblem(f"qa[{i}].question", f"{echo(qa.question)} is answered twice, differently")
        return self


def _note(error: Any) -> str | None:
    """An evaluator's error note as text; None when it is empty or false (no error)."""
    return (error if isinstance(error, str) else str(error)) if error else None


class RecordsFile(BaseModel):
    """A records file's top level: the method's name and each split's records by image key (each
    record checked on its own, so that its error names the split and the key)."""

    model_config = ConfigDict(extra="forbid")

    method: StrippedText
    L1L2: dict[str, Any] | None = None
    L3: dict[str, Any] | None = None


def _errors(record: dict) -> dict[str, str]:
    """The set ``*_error`` fields (and upstream's ``has_error`` flag); empty or false ones are not errors."""
    return {name: _note(value) for name, value in record.items()
            if (name.endswith("_error") or name == "has_error") and value}


def _record(value: Any, path: Path | None, split: str, key: str) -> EvalRecord:
    raw = validated(UpstreamRecord, value, format_name="an evaluation record",
                    error=functools.partial(RecordFormatError, path=path, split=split, key=key))
    answers: dict[str, QAAnswer] = {}
    for qa in raw.qa or []:  # a question answered twice the same way counts once
        answers.setdefault(normalize_question(qa.question), QAAnswer(
            question=qa.question, answer=qa.answer, confidence=qa.confidence,
            error=_note(qa.error)))
    return EvalRecord(split=split, key=key, mode=raw.processing_mode if raw.processing_mode is not None else raw.mode,
                      errors=_errors(value), qa=tuple(answers.values()),
                      **{name: getattr(raw, name) for name in SCORE_FIELDS})


def parse_records(data: Any, *, path: str | Path | None = None) -> MethodRecords:
    """:class:`MethodRecords` from the JSON value of a records file (``path`` only names it in errors).

    Raises:
        RecordFormatError: naming the file, split, key and field.
    """
    path = Path(path) if path is not None else None
    top = validated(RecordsFile, data, format_name="an evaluation-records file (method, L1L2, L3)",
                    error=functools.partial(RecordFormatError, path=path))
    by_split = {split: {key: _record(value, path, split, key) for key, value in section.items()}
                for split in SPLITS if (section := getattr(top, split)) is not None}
    return MethodRecords(method=top.method, by_split=by_split, path=path)


def read_records(path: str | Path) -> MethodRecords:
    """The evaluation records of one method from a JSON file (shape in the module docstring).

    Raises:
        RecordFormatError: naming the file, split, key and field.
    """
    path = Path(path)
    data = read_json(path, Any, format_name="an evaluation-records file",
                     error=functools.partial(RecordFormatError, path=path), encoding="utf-8-sig")
    return parse_records(data, path=path)


def score_files(benchmark: Benchmark, paths: Iterable[str | Path]) -> dict[str, Scores]:
    """:func:`compute_scores` for several methods' records files, keyed by method name.

    Raises:
        RecordFormatError: a file's error, or two files naming the same method.
    """
    out: dict[str, Scores] = {}
    for path in paths:
        records = read_records(path)
        if records.method in out:
            raise RecordFormatError("method", f"{echo(records.method)} already read from another file",
                                    path=path)
        out[records.method] = compute_scores(benchmark, records)
    return out
