"""Readers of the long-video QA benchmark formats, each returning :class:`~engines.video.questions.Question`.

Upstream shapes (each benchmark's own files and loader; docs/video.md, "Method: benchmark formats"):

- LVBench (Wang et al. 2024, ``THUDM/LVBench``; scored by ``scripts/test_acc.py`` through
  ``lvbench/metrics/compute_accuracy.py``): ``video_info.meta.jsonl``, one video per line,
  ``{key, type, qa: [{uid, question: "stem\\n(A) ...\\n(D) ...", answer, question_type: [...],
  time_reference: "MM:SS-MM:SS"}]}``. The only benchmark here with evidence times; a third-party
  parser reports malformed references (``"08:17-None"``) and 263 zero-width ones.
- The project's flat LVBench JSONL: one question per line, LVBench's ``qa`` fields plus
  ``video_key`` (what ``python -m engines.video run --questions FILE.jsonl`` reads).
- LongVideoBench (Wu et al. 2024, ``longvideobench/LongVideoBench``,
  ``longvideobench/longvideobench_dataset.py``): ``lvb_val.json``, a list of ``{id, video_id,
  video_path, duration, question, candidates, correct_choice, question_category, ...}``; the test
  split has no ``correct_choice`` (upstream then scores against ``"@"``).
- Video-MME (Fu et al. 2024): a parquet table ``video_id, duration (short|medium|long), domain,
  sub_category, url, videoID, question_id, task_type, question, options ["A. ...", ...], answer``.
- MLVU (Zhou et al. 2024): per-task JSON lists of ``{video, duration, question, candidates,
  answer (the option text), question_type}``.
- EgoSchema (Mangalam et al. 2023): ``questions.json``, ``[{q_uid, google_drive_id, question,
  "option 0" .. "option 4"}]``; answers of the public subset in ``subset_answers.json``
  (``{q_uid: index}``).

Every reader reads the whole file before returning and raises :class:`QuestionFormatError` naming
the file, where in it (``line N`` of a JSONL file, 1-based as editors count; ``record N`` of a JSON
list or table, 0-based as ``data[N]`` indexes it) and the field. Nothing of a bad file is returned.
A malformed LVBench time reference is not an error: the question keeps what could be read and
says what was repaired in ``Question.note``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.platform.files import echo, json_depth_problem
from engines.video.questions import (
    LETTERS,
    Question,
    QuestionFormatError,
    _answer_problem,
    _options_problem,
    parse_options,
)
from engines.video.spans import Span, TimeFormatError, parse_time_reference

# Video-MME's option prefix, "A. text".
_VIDEOMME_PREFIX = re.compile(r"^\s*([A-Z])\.\s*")


# ---------------------------------------------------------------- reading fields of a record


@dataclass(frozen=True)
class _Where:
    """Where a record sits, for error messages: the file, ``line N`` / ``record N``, and a prefix
    for fields nested inside the record (LVBench's ``qa[2].``)."""

    path: Path
    location: str | None
    prefix: str = ""

    def error(self, field: str | None, problem: str) -> QuestionFormatError:
        name = f"{self.prefix}{field}" if field else (self.prefix.rstrip(".") or None)
        return QuestionFormatError(problem, path=self.path, location=self.location, field=name)

    def nested(self, prefix: str) -> _Where:
        return _Where(self.path, self.location, self.prefix + prefix)


def _require(record: dict, where: _Where, field: str) -> Any:
    if field not in record:
        raise where.error(field, "missing")
    return record[field]


def _text(record: dict, where: _Where, field: str, *, optional: bool = False) -> str | None:
    value = record.get(field) if optional else _require(record, where, field)
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise where.error(field, f"expected text, got {echo(value)}")
    return value


def _identifier(record: dict, where: _Where, field: str) -> str:
    """A uid or video key: text, or an integer (LVBench's scorer reads uids with ``str(qa["uid"])``)."""
    value = _require(record, where, field)
    if isinstance(value, bool) or not isinstance(value, str | int) or not str(value).strip():
        raise where.error(field, f"expected a non-empty text or integer id, got {echo(value)}")
    return str(value).strip()


def _texts(record: dict, where: _Where, field: str, *, optional: bool = False) -> tuple[str, ...]:
    """A list of texts; a single text counts as a list of one (MLVU's ``question_type`` is one)."""
    value = record.get(field) if optional else _require(record, where, field)
    if value is None and optional:
        return ()
    if isinstance(value, str):
        return (value,)
    if hasattr(value, "tolist"):  # a numpy array, as pandas reads a parquet list column
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise where.error(field, f"expected a list of texts, got {echo(value)}")
    return tuple(value)


def _seconds(record: dict, where: _Where, field: str, *, scale: float = 1.0) -> float | None:
    """An optional duration: a finite number, 0 or more, times ``scale``."""
    value = record.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise where.error(field, f"expected a number, 0 or more, got {echo(value)}")
    return float(value) * scale


def _index(value: Any, n_options: int, where: _Where, field: str) -> str:
    """The letter of a 0-based option index (LongVideoBench's ``correct_choice``, EgoSchema's answers)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < n_options:
        raise where.error(field, f"{echo(value)} is not an option index 0..{n_options - 1}")
    return LETTERS[value]


def _letter(value: Any, n_options: int, where: _Where, field: str) -> str:
    answer = value.strip() if isinstance(value, str) else value
    problem = _answer_problem(answer, n_options)
    if problem or answer is None:
        raise where.error(field, problem or "missing answer letter")
    return answer


def _stem_and_options(record: dict, where: _Where, field: str) -> tuple[str, tuple[str, ...]]:
    try:
        return parse_options(_text(record, where, field))
    except ValueError as exc:
        raise where.error(field, str(exc)) from None


def _checked_options(options: tuple[str, ...], where: _Where, field: str) -> tuple[str, ...]:
    problem = _options_problem(options)
    if problem:
        raise where.error(field, problem)
    return options


def _reference(record: dict, where: _Where, field: str = "time_reference"
               ) -> tuple[str | None, tuple[Span, ...], str | None]:
    """The raw reference, its spans and a note on anything repaired; never raises for a bad reference.

    Upstream data has malformed ends (``"08:17-None"``), zero-width points (``"12:34-12:34"``), ends
    before starts and empty references; one unreadable reference must not block a benchmark, so
    each is kept as far as it can be read, and the note says what happened.
    """
    raw = record.get(field)
    if raw is None:
        return None, (), None
    if not isinstance(raw, str):
        raise where.error(field, f"expected text such as '08:17-08:40', got {echo(raw)}")
    try:
        spans, note = parse_time_reference(raw)
    except TimeFormatError as exc:
        return raw, (), f"{echo(raw)}: unreadable time reference ({exc}); no evidence spans"
    if not spans:
        return raw, (), f"{echo(raw)}: empty time reference; no evidence spans"
    if note is None and any(span.length == 0 for span in spans):
        # A point, not a range (LVBench has 263); the metrics widen it, the note says the data had no width.
        note = f"{echo(raw)}: zero-width reference, kept as a point in time"
    return raw, tuple(spans), note


def _build(where: _Where, **fields: Any) -> Question:
    """A :class:`Question`, its own checks located in the file (the readers check fields first)."""
    try:
        return Question(**fields)
    except QuestionFormatError as exc:
        raise where.error(exc.field, exc.problem) from None


def _unique(located: Iterable[tuple[_Where, Question]]) -> list[Question]:
    """The questions, after checking no two share a uid (runs key predictions by uid)."""
    seen: dict[str, _Where] = {}
    questions = []
    for where, question in located:
        if question.uid in seen:
            first = seen[question.uid]
            raise where.error("uid", f"{echo(question.uid)} repeats the uid of {first.location}")
        seen[question.uid] = where
        questions.append(question)
    return questions


# ---------------------------------------------------------------- reading files


def _read_text(path: Path) -> str:
    try:
        # utf-8-sig: a byte-order mark some editors add is not part of the first record
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise QuestionFormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None


def _jsonl_records(path: Path) -> Iterator[tuple[_Where, dict]]:
    """(where, object) for each non-blank line of a JSONL file."""
    for number, line in enumerate(_read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = _Where(path, f"line {number}")
        problem = json_depth_problem(line)
        if problem is not None:
            raise where.error(None, f"the JSON {problem}")
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise where.error(None, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(record, dict):
            raise where.error(None, f"expected a JSON object, got {type(record).__name__}")
        yield where, record


def _json_value(path: Path) -> Any:
    text = _read_text(path)
    problem = json_depth_problem(text)
    if problem is not None:
        raise QuestionFormatError(f"the JSON {problem}", path=path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise QuestionFormatError(f"not valid JSON ({exc.msg} at column {exc.colno})", path=path,
                                  location=f"line {exc.lineno}") from None


def _json_records(path: Path) -> Iterator[tuple[_Where, dict]]:
    """(where, object) for each element of a JSON list."""
    data = _json_value(path)
    if not isinstance(data, list):
        raise QuestionFormatError(f"expected a JSON list of questions, got {type(data).__name__}", path=path)
    for index, record in enumerate(data):
        where = _Where(path, f"record {index}")
        if not isinstance(record, dict):
            raise where.error(None, f"expected a JSON object, got {type(record).__name__}")
        yield where, record


def _nonempty(path: Path, questions: list[Question]) -> list[Question]:
    if not questions:
        raise QuestionFormatError("no questions in the file", path=path)
    return questions


# ---------------------------------------------------------------- LVBench


def read_lvbench(path: str | Path) -> list[Question]:
    """Questions of LVBench's ``video_info.meta.jsonl`` (``THUDM/LVBench``, read as in
    ``lvbench/metrics/compute_accuracy.py``, which ``scripts/test_acc.py`` runs).

    One video per line: ``{"key": <YouTube id, the video's file name>, "type": <video category>,
    "qa": [{"uid", "question": "stem\\n(A) ...\\n(B) ...", "answer": "A", "question_type": [...],
    "time_reference": "MM:SS-MM:SS"}]}``. Options are parsed out of the question text (see
    :func:`parse_options`). ``video_info.duration_minutes``, when a line has it, gives the duration.

    Args:
        path: the ``video_info.meta.jsonl`` file.

    Returns:
        The questions in file order, ``benchmark="lvbench"``, ``gt_spans`` from ``time_reference``
        (malformed references repaired and noted in ``note``, never an error).

    Raises:
        QuestionFormatError: naming the file, ``line N`` and the field (``qa[i].answer``...).
    """
    path = Path(path)
    return _nonempty(path, _unique(_lvbench_questions(path)))


def _lvbench_questions(path: Path) -> Iterator[tuple[_Where, Question]]:
    for where, video in _jsonl_records(path):
        key = _identifier(video, where, "key")
        info = video.get("video_info")
        # Not every copy of the file has video_info; durations then come from the video itself.
        duration = (_seconds(info, where.nested("video_info."), "duration_minutes", scale=60)
                    if isinstance(info, dict) else None)
        qa = _require(video, where, "qa")
        if not isinstance(qa, list):
            raise where.error("qa", f"expected a list of questions, got {type(qa).__name__}")
        for i, item in enumerate(qa):
            inner = where.nested(f"qa[{i}].")
            if not isinstance(item, dict):
                raise inner.error(None, f"expected a JSON object, got {type(item).__name__}")
            yield inner, _lvbench_question(item, inner, key, duration, "lvbench")


def _lvbench_question(item: dict, where: _Where, video_id: str, duration: float | None, benchmark: str) -> Question:
    """One question in LVBench's ``qa`` shape (shared by the native and the flat reader)."""
    stem, options = _stem_and_options(item, where, "question")
    raw, spans, note = _reference(item, where)
    return _build(
        where, uid=_identifier(item, where, "uid"), video_id=video_id, question=stem, options=options,
        answer=_letter(_require(item, where, "answer"), len(options), where, "answer"),
        question_type=_texts(item, where, "question_type", optional=True), gt_spans=spans, time_reference=raw,
        benchmark=benchmark, duration_s=duration, note=note,
    )


# ---------------------------------------------------------------- the project's flat LVBench JSONL

def read_lvbench_flat(path: str | Path) -> list[Question]:
    """Questions of the project's flat JSONL: one LVBench ``qa`` item per line plus its video.

    Each line: ``uid``, ``video_key`` (the video file's name without extension), ``question``
    (options in its text, as LVBench), ``answer`` (a letter, or null when unknown),
    ``question_type`` (list), ``time_reference``; optional ``duration`` (seconds), ``benchmark``
    (default ``"lvbench"``), ``gt_spans`` (``[[start, end], ...]`` seconds; when absent, read from
    ``time_reference``) and ``note`` (when absent, the note of the time reference). This is what
    ``python -m engines.video run --questions FILE.jsonl`` reads and :func:`write_lvbench_flat` writes.

    Raises:
        QuestionFormatError: naming the file, ``line N`` and the field.
    """
    path = Path(path)
    return _nonempty(path, _unique(_flat_questions(path)))


def _flat_questions(path: Path) -> Iterator[tuple[_Where, Question]]:
    for where, record in _jsonl_records(path):
        benchmark = _text(record, where, "benchmark", optional=True) or "lvbench"
        stem, options = _stem_and_options(record, where, "question")
        raw, spans, note = _reference(record, where)
        if "gt_spans" in record:
            spans = _span_list(record["gt_spans"], where, "gt_spans")
        if "note" in record:
            note = _text(record, where, "note", optional=True)
        answer = _require(record, where, "answer")
        yield where, _build(
            where, uid=_identifier(record, where, "uid"), video_id=_identifier(record, where, "video_key"),
            question=stem, options=options,
            answer=None if answer is None else _letter(answer, len(options), where, "answer"),
            question_type=_texts(record, where, "question_type", optional=True), gt_spans=spans,
            time_reference=raw, benchmark=benchmark, duration_s=_seconds(record, where, "duration"), note=note,
        )


def _span_list(value: Any, where: _Where, field: str) -> tuple[Span, ...]:
    if not isinstance(value, list):
        raise where.error(field, f"expected a list of [start, end] pairs, got {echo(value)}")
    spans = []
    for pair in value:
        if (not isinstance(pair, list) or len(pair) != 2
                or not all(isinstance(t, int | float) and not isinstance(t, bool) for t in pair)):
            raise where.error(field, f"expected [start, end] in seconds, got {echo(pair)}")
        try:
            spans.append(Span(float(pair[0]), float(pair[1])))
        except TimeFormatError as exc:
            raise where.error(field, str(exc)) from None
    return tuple(spans)


def _flat_record(question: Question) -> dict[str, Any]:
    return {
        "uid": question.uid,
        "video_key": question.video_id,
        "benchmark": question.benchmark,
        "question": question.prompt_text(),
        "answer": question.answer,
        "question_type": list(question.question_type),
        "time_reference": question.time_reference,
        # Written as well as the reference, so spans that came from elsewhere (synthetic events) survive exactly.
        "gt_spans": [[span.start, span.end] for span in question.gt_spans],
        "duration": question.duration_s,
        "note": question.note,
    }


def write_lvbench_flat(questions: Iterable[Question], path: str | Path) -> Path:
    """Write ``questions`` as the flat JSONL :func:`read_lvbench_flat` reads back equal.

    Written to a temporary file beside ``path``, then moved over it, so a reader never sees half a
    file and a failed write leaves the old one.

    Returns:
        The path written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(_flat_record(question), ensure_ascii=False) + "\n" for question in questions]
    # Same folder, so os.replace is a rename on one file system; the pid keeps concurrent writers apart.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text("".join(lines), encoding="utf-8")
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return path


# ---------------------------------------------------------------- LongVideoBench


def read_longvideobench(path: str | Path) -> list[Question]:
    """Questions of LongVideoBench's ``lvb_val.json`` (or ``lvb_test_wo_gt.json``).

    A JSON list of ``{id, video_id, video_path, duration, duration_group, question,
    question_wo_referring_query, candidates, correct_choice, position, question_category,
    topic_category, level, subtitle_path, starting_timestamp_for_subtitles}``
    (``longvideobench/longvideobench_dataset.py``). The stem is ``question`` (with the referring
    query, as upstream prompts it); the answer is the letter of ``correct_choice`` (a 0-based index
    into ``candidates``, as upstream's ``chr(ord("A") + correct_choice)``), None where the test split
    leaves it out. ``video_id`` is ``video_path`` without its extension (``video_id`` when there is
    no path). ``question_type`` is ``(question_category,)``. No evidence times.

    Raises:
        QuestionFormatError: naming the file, ``record N`` (0-based) and the field.
    """
    path = Path(path)
    return _nonempty(path, _unique(
        (where, _longvideobench_question(record, where)) for where, record in _json_records(path)
    ))


def _longvideobench_question(record: dict, where: _Where) -> Question:
    options = _checked_options(_texts(record, where, "candidates"), where, "candidates")
    video_path = _text(record, where, "video_path", optional=True)
    video_id = Path(video_path).stem if video_path else _identifier(record, where, "video_id")
    choice = record.get("correct_choice")
    category = _text(record, where, "question_category", optional=True)
    return _build(
        where, uid=_identifier(record, where, "id"), video_id=video_id,
        question=_text(record, where, "question").strip(), options=tuple(option.strip() for option in options),
        answer=None if choice is None else _index(choice, len(options), where, "correct_choice"),
        question_type=(category,) if category else (), benchmark="longvideobench",
        duration_s=_seconds(record, where, "duration"),
    )


# ---------------------------------------------------------------- Video-MME


def read_videomme(path: str | Path) -> list[Question]:
    """Questions of Video-MME's parquet table (or the same records as ``.json`` list / ``.jsonl``).

    Columns: ``video_id`` ("001"), ``duration`` ("short" | "medium" | "long", a group, not seconds,
    so ``duration_s`` stays None), ``domain``, ``sub_category``, ``url``, ``videoID`` (the YouTube id,
    the video file's name), ``question_id`` ("001-1"), ``task_type``, ``question``, ``options``
    (``["A. text", ...]``; the ``"A. "`` prefixes are removed) and ``answer`` (a letter).
    ``question_type`` is ``(task_type,)``. No evidence times.

    Raises:
        QuestionFormatError: naming the file, ``record N`` / ``line N`` and the field.
    """
    path = Path(path)
    return _nonempty(path, _unique(
        (where, _videomme_question(record, where)) for where, record in _records_by_suffix(path)
    ))


def _records_by_suffix(path: Path) -> Iterator[tuple[_Where, dict]]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl_records(path)
    if suffix == ".json":
        return _json_records(path)
    if suffix == ".parquet":
        return _parquet_records(path)
    raise QuestionFormatError(f"cannot read {suffix or 'a file without suffix'} (expected .parquet, .json or .jsonl)",
                              path=path)


def _parquet_records(path: Path) -> Iterator[tuple[_Where, dict]]:
    import pandas as pd  # imported here: only Video-MME ships parquet

    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise QuestionFormatError(f"not a readable parquet table ({exc})", path=path) from None
    for index, row in enumerate(frame.to_dict(orient="records")):
        # Missing cells come back as NaN / None; treat both as absent.
        yield _Where(path, f"record {index}"), {k: v for k, v in row.items() if not _is_missing(v)}


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _videomme_option(text: str, letter: str, where: _Where, field: str) -> str:
    """An option without its ``"A. "`` prefix; the prefix, when present, must be the option's own letter."""
    match = _VIDEOMME_PREFIX.match(text)
    if match and match.group(1) != letter:
        raise where.error(field, f"option {letter} is labelled {echo(match.group(1))}: {echo(text)}")
    return text[match.end() :].strip() if match else text.strip()


def _videomme_question(record: dict, where: _Where) -> Question:
    raw = _checked_options(_texts(record, where, "options"), where, "options")
    options = tuple(_videomme_option(text, LETTERS[i], where, "options") for i, text in enumerate(raw))
    task = _text(record, where, "task_type", optional=True)
    return _build(
        where, uid=_identifier(record, where, "question_id"), video_id=_identifier(record, where, "videoID"),
        question=_text(record, where, "question").strip(), options=options,
        answer=_letter(_require(record, where, "answer"), len(options), where, "answer"),
        question_type=(task,) if task else (), benchmark="videomme",
    )


# ---------------------------------------------------------------- MLVU


def read_mlvu(path: str | Path) -> list[Question]:
    """Questions of one MLVU multiple-choice task file (``json/<n>_<task>.json``).

    A JSON list of ``{video, duration, question, candidates, answer, question_type}``; ``answer``
    is the text of the correct candidate, its letter is its index among ``candidates`` (an error
    when it is not one of them). ``video_id`` is ``video`` without its extension; ``duration`` is in
    seconds. MLVU has no question ids: ``uid`` is ``"<file stem>-<record index>"`` (or the record's
    ``question_id`` when it has one). No evidence times.

    Raises:
        QuestionFormatError: naming the file, ``record N`` (0-based) and the field.
    """
    path = Path(path)
    return _nonempty(path, _unique(
        (where, _mlvu_question(record, where, f"{path.stem}-{index}"))
        for index, (where, record) in enumerate(_json_records(path))
    ))


def _mlvu_question(record: dict, where: _Where, default_uid: str) -> Question:
    options = _checked_options(_texts(record, where, "candidates"), where, "candidates")
    answer = _text(record, where, "answer")
    stripped = [option.strip() for option in options]
    if answer.strip() not in stripped:
        raise where.error("answer", f"{echo(answer)} is not one of the candidates {echo(options)}")
    uid = _identifier(record, where, "question_id") if "question_id" in record else default_uid
    return _build(
        where, uid=uid, video_id=Path(_text(record, where, "video")).stem,
        question=_text(record, where, "question").strip(), options=tuple(stripped),
        answer=LETTERS[stripped.index(answer.strip())],
        question_type=_texts(record, where, "question_type", optional=True), benchmark="mlvu",
        duration_s=_seconds(record, where, "duration"),
    )


# ---------------------------------------------------------------- EgoSchema


def read_egoschema(questions_path: str | Path, answers_path: str | Path | None = None) -> list[Question]:
    """Questions of EgoSchema's ``questions.json``, with answers from ``subset_answers.json`` if given.

    ``questions.json``: a JSON list of ``{q_uid, google_drive_id, question, "option 0", ...,
    "option 4"}``; the videos are named by ``q_uid``, so ``video_id = uid = q_uid``.
    ``subset_answers.json``: ``{q_uid: index}`` for the public subset; a question it does not list
    (and every question without the file) has ``answer=None``. No evidence times, no durations
    (clips are 3 minutes).

    Raises:
        QuestionFormatError: naming the file, ``record N`` (or the answers file and its key) and the field.
    """
    path = Path(questions_path)
    answers = _egoschema_answers(Path(answers_path)) if answers_path is not None else {}
    located = [(where, _egoschema_question(record, where, answers)) for where, record in _json_records(path)]
    return _nonempty(path, _unique(located))


def _egoschema_answers(path: Path) -> dict[str, tuple[_Where, Any]]:
    data = _json_value(path)
    if not isinstance(data, dict):
        raise QuestionFormatError(f"expected a JSON object {{q_uid: index}}, got {type(data).__name__}", path=path)
    return {q_uid: (_Where(path, None), index) for q_uid, index in data.items()}


def _egoschema_question(record: dict, where: _Where, answers: dict[str, tuple[_Where, Any]]) -> Question:
    uid = _identifier(record, where, "q_uid")
    options = []
    while f"option {len(options)}" in record:  # "option 0", "option 1", ... as many as there are
        options.append(_text(record, where, f"option {len(options)}").strip())
    options = _checked_options(tuple(options), where, "option 0")
    answer = None
    if uid in answers:
        answer_where, index = answers[uid]
        answer = _index(index, len(options), answer_where, uid)
    return _build(
        where, uid=uid, video_id=uid, question=_text(record, where, "question").strip(), options=options,
        answer=answer, benchmark="egoschema",
    )


# ---------------------------------------------------------------- any of the above

READERS: dict[str, Callable[..., list[Question]]] = {
    "lvbench": read_lvbench,
    "lvbench_flat": read_lvbench_flat,
    "synthetic": read_lvbench_flat,  # the synthetic benchmark is written in the flat form
    "longvideobench": read_longvideobench,
    "videomme": read_videomme,
    "mlvu": read_mlvu,
    "egoschema": read_egoschema,
}


def detect_format(path: str | Path) -> str:
    """The :data:`READERS` name for a file, from its suffix and the fields of its first record.

    Raises:
        QuestionFormatError: when the shape is none of the known ones (the message lists the fields seen).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "videomme"
    if suffix == ".jsonl":
        first = next(_jsonl_records(path), None)
        fields = set(first[1]) if first else set()
        shapes = [("lvbench", {"key", "qa"}), ("lvbench_flat", {"video_key", "question"}),
                  ("videomme", {"videoID", "question_id"})]
    elif suffix == ".json":
        data = _json_value(path)
        fields = set(data[0]) if isinstance(data, list) and data and isinstance(data[0], dict) else set()
        # The test split of LongVideoBench has no correct_choice; its video_path tells it from MLVU's "video".
        shapes = [("longvideobench", {"candidates", "correct_choice"}),
                  ("longvideobench", {"candidates", "video_path"}), ("egoschema", {"q_uid", "option 0"}),
                  ("mlvu", {"video", "candidates", "answer"}), ("videomme", {"videoID", "question_id"})]
    else:
        raise QuestionFormatError(f"cannot tell the format of a {suffix or 'suffix-less'} file "
                                  "(expected .jsonl, .json or .parquet)", path=path)
    for name, needed in shapes:
        if needed <= fields:
            return name
    seen = ", ".join(sorted(fields)) or "nothing"
    raise QuestionFormatError(f"not a known benchmark shape (the first record has {seen}); "
                              f"name one of {', '.join(READERS)}", path=path)


def read_questions(path: str | Path, benchmark: str | None = None, *,
                   answers_path: str | Path | None = None) -> list[Question]:
    """Questions of any supported file: the reader named by ``benchmark``, else the one
    :func:`detect_format` recognises from the file's shape.

    Args:
        path: a benchmark file.
        benchmark: a :data:`READERS` name (``"lvbench"``, ``"lvbench_flat"``, ``"synthetic"``,
            ``"longvideobench"``, ``"videomme"``, ``"mlvu"``, ``"egoschema"``); None to detect.
        answers_path: EgoSchema's ``subset_answers.json`` (only for EgoSchema).

    Raises:
        QuestionFormatError: an unknown benchmark name or file shape, or any reader's error.
    """
    name = benchmark if benchmark is not None else detect_format(path)
    if name not in READERS:
        raise QuestionFormatError(f"unknown benchmark {name!r}; one of {', '.join(READERS)}", path=path)
    if name == "egoschema":
        return read_egoschema(path, answers_path)
    if answers_path is not None:
        raise QuestionFormatError(f"answers_path is for EgoSchema only, not {name!r}", path=path)
    return READERS[name](path)
