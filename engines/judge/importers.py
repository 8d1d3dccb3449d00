"""Importers: HarmBench and JailbreakBench files, or any JSONL/CSV with a column mapping, into items.

Upstream shapes (see ``docs/judge.md``, "Bringing data in and out"):

- HarmBench (Mazeika et al. 2024, ``cais/HarmBench``): a behaviours CSV with the columns
  ``Behavior, FunctionalCategory, SemanticCategory, Tags, ContextString, BehaviorID``, and per victim
  model and attack a completions JSON ``{BehaviorID: [{"test_case", "generation"}, ...]}`` (results
  files add ``"label"``). An item's key is ``<model>/<attack>/<BehaviorID>/<index in that
  behaviour's completions list>``.
- JailbreakBench (Chao et al. 2024, ``JailbreakBench/jailbreakbench``): an artifact
  ``{"parameters": {method, model, attack_type, ...}, "jailbreaks": [{index, goal, behavior,
  category, prompt, response, number_of_queries, queries_to_jailbreak, prompt_tokens,
  response_tokens, jailbroken[, jailbroken_llama_guard1]}]}``; behaviours an attack did not submit
  have a null prompt and response, and are skipped (and counted). The JBB-Behaviors CSV (``Index,
  Goal, Target, Behavior, Category, Source``) adds categories when given.

Fields of the source that the item schema has no place for go to ``Item.extra``, so the exporters
(``engines.judge.exporters``) write them back as they were. Every importer reads the whole file
before returning: a problem raises ``JudgeDataError`` naming the file, the line and the field
(for JSON, the line where the offending value starts, and its path such as ``jailbreaks[3].response``),
and nothing of a bad file is imported.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engines.judge.items import Item, JudgeDataError, header_text, json_line_value
from engines.platform.files import echo, json_depth_problem

HARMBENCH_COLUMNS = ("Behavior", "FunctionalCategory", "SemanticCategory", "Tags", "ContextString", "BehaviorID")
JBB_BEHAVIOR_COLUMNS = ("Index", "Goal", "Target", "Behavior", "Category", "Source")
JBB_PARAMETERS_REQUIRED = ("method", "model")
# The per-entry fields of a JBB artifact that the item schema holds itself; the rest go to ``extra``.
JBB_ENTRY_FIELDS = ("index", "goal", "behavior", "category", "prompt", "response")
# Item fields a generic file can fill (``--map field=column``); the rest are the app's own.
GENERIC_FIELDS = ("key", "behavior_id", "behavior", "context_string", "functional_category", "semantic_category",
                  "victim_model", "attack", "attack_step", "sample_idx", "test_case", "generation")
GENERIC_REQUIRED = ("behavior", "victim_model", "attack", "generation")
GENERIC_INT_FIELDS = ("attack_step", "sample_idx")


@dataclass
class ImportResult:
    """What an importer read: the items, the entries it skipped (JBB's not-submitted ones) and per-run counts."""

    items: list[Item]
    skipped: list[dict[str, Any]] = field(default_factory=list)  # the source entries, as they were
    per_run: dict[str, int] = field(default_factory=dict)  # "model/attack" -> items

    def summary(self) -> str:
        runs = ", ".join(f"{run}: {n}" for run, n in self.per_run.items())
        text = f"{len(self.items)} items ({runs})" if runs else f"{len(self.items)} items"
        if self.skipped:
            text += f"; {len(self.skipped)} {'entry' if len(self.skipped) == 1 else 'entries'} skipped (not submitted)"
        return text


def _count_runs(items: list[Item]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        run = f"{item.victim_model}/{item.attack}"
        counts[run] = counts.get(run, 0) + 1
    return counts


# ---------------------------------------------------------------- reading files


def _read_text(path: Path) -> str:
    try:
        # utf-8-sig: a spreadsheet's or a dataset hub's byte-order mark is not part of the first column's name
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise JudgeDataError(path, None, None, "no such file") from None
    except IsADirectoryError:
        raise JudgeDataError(path, None, None, "is a folder, not a file") from None
    except UnicodeDecodeError as exc:
        raise JudgeDataError(path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def read_csv_rows(path: str | Path, required: tuple[str, ...]) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """The header and (line where the record starts, row) of a CSV file with the ``required`` columns.

    A record whose cells do not match the header (too many or too few) is an error on its line.
    """
    path = Path(path)
    reader = csv.DictReader(io.StringIO(_read_text(path), newline=""))
    try:
        header = list(reader.fieldnames or [])
    except csv.Error as exc:
        raise JudgeDataError(path, 1, None, f"not a readable CSV header: {exc}") from None
    missing = [column for column in required if column not in header]
    if missing:
        raise JudgeDataError(path, 1, missing[0], f"missing column (the header has: {header_text(header)})")
    rows = []
    start = 2
    try:
        for row in reader:
            # The record ends on reader.line_num; line breaks inside its quoted cells say where it began
            # (counting this way, blank lines that DictReader skips do not shift the numbers).
            start = reader.line_num - sum(value.count("\n") for value in row.values() if isinstance(value, str))
            if None in row:
                raise JudgeDataError(path, start, None,
                                     f"{len(header) + len(row[None])} cells, the header has {len(header)}")
            short = [column for column, value in row.items() if value is None]
            if short:
                raise JudgeDataError(path, start, short[0],
                                     f"missing cell: the row has fewer cells than the header ({len(header)})")
            rows.append((start, row))
    except csv.Error as exc:
        raise JudgeDataError(path, reader.line_num, None, f"not readable as CSV: {exc}") from None
    return header, rows


_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()


def _child_start(text: str, pos: int, step: str | int) -> int | None:
    """Where the value ``step`` (a key of the object, or an index of the array, starting at ``pos``) starts."""
    opening, closing = ("{", "}") if isinstance(step, str) else ("[", "]")
    if text[pos] != opening:
        return None
    pos = _skip_space(text, pos + 1)
    if text[pos] == closing:
        return None
    found, index = None, 0
    while True:
        if isinstance(step, str):
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_space(text, pos)
            pos = _skip_space(text, pos + 1)  # past ":"
            if key == step:
                found = pos  # keep looking: with a repeated key, json.loads keeps the last one
        elif index == step:
            return pos
        _, pos = _DECODER.raw_decode(text, pos)  # skips the whole value, containers included
        pos = _skip_space(text, pos)
        if text[pos] != ",":
            return found
        pos = _skip_space(text, pos + 1)
        index += 1


def json_line(text: str, path: tuple[str | int, ...]) -> int | None:
    """The 1-based line where the value at ``path`` (keys and indexes from the top) starts in the JSON ``text``.

    Only called on an error, so the common case pays nothing for it: ``json.loads`` keeps no positions.
    """
    pos = _skip_space(text, 0)
    try:
        for step in path:
            pos = _child_start(text, pos, step)
            if pos is None:
                return None
    except (ValueError, IndexError):
        return None
    return text.count("\n", 0, pos) + 1


def _path_name(path: tuple[str | int, ...]) -> str:
    name = ""
    for step in path:
        name += f"[{step}]" if isinstance(step, int) else (f".{step}" if name else step)
    return name


class _JsonFile:
    """A parsed JSON file that can name the line of any value in it (for error messages)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.text = _read_text(self.path)
        problem = json_depth_problem(self.text)
        if problem is not None:  # Python's parser recurses per level: refuse before it runs out of stack
            raise JudgeDataError(self.path, None, None, f"the JSON {problem} (HAI_MAX_JSON_DEPTH)")
        try:
            self.data = json.loads(self.text)
        except json.JSONDecodeError as exc:
            problem = f"not valid JSON: {exc.msg} at column {exc.colno}"
            raise JudgeDataError(self.path, exc.lineno, None, problem) from None
        except RecursionError:
            raise JudgeDataError(self.path, None, None, "not readable JSON: nested too deeply") from None

    def error(self, path: tuple[str | int, ...], problem: str) -> JudgeDataError:
        return JudgeDataError(self.path, json_line(self.text, path), _path_name(path) or None, problem)

    def expect(self, value: Any, kinds: type | tuple[type, ...], path: tuple[str | int, ...], what: str) -> Any:
        """``value`` when it is of ``kinds`` (a bool is no number here), else an error at ``path``."""
        wrong = isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,))
        if wrong or not isinstance(value, kinds):
            raise self.error(path, f"must be {what}, got {_json_type(value)}")
        return value


def _json_type(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "true/false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def _item(data: dict[str, Any], path: Path, line: int | None, field_names: dict[str, str] | None = None) -> Item:
    """Validate one item built from a source record; ``field_names`` maps item fields to the source's names."""
    try:
        return Item.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = ".".join(str(part) for part in error["loc"])
        raise JudgeDataError(path, line, (field_names or {}).get(name, name), error["msg"]) from None


# ---------------------------------------------------------------- HarmBench


def read_harmbench_behaviors(path: str | Path) -> dict[str, tuple[int, dict[str, str]]]:
    """HarmBench behaviours by BehaviorID: (line, row). IDs must be present and unique; behaviours not empty."""
    path = Path(path)
    _, rows = read_csv_rows(path, HARMBENCH_COLUMNS)
    behaviors: dict[str, tuple[int, dict[str, str]]] = {}
    for line, row in rows:
        behavior_id = row["BehaviorID"].strip()
        if not behavior_id:
            raise JudgeDataError(path, line, "BehaviorID", "empty")
        if behavior_id in behaviors:
            problem = f"{echo(behavior_id)} is also on line {behaviors[behavior_id][0]}"
            raise JudgeDataError(path, line, "BehaviorID", problem)
        if not row["Behavior"].strip():
            raise JudgeDataError(path, line, "Behavior", "empty")
        behaviors[behavior_id] = (line, row)
    return behaviors


def _check_run_name(value: str, what: str) -> str:
    # Keys are "<model>/<attack>/<BehaviorID>/<index>": a "/" in a name would make two runs' keys collide.
    if not value or "/" in value or value != value.strip():
        raise JudgeDataError("--run", None, what, f"{echo(value)} must be a non-empty name without '/' or outer spaces")
    return value


def read_harmbench(behaviors_csv: str | Path, runs: list[tuple[str, str, str | Path]]) -> ImportResult:
    """HarmBench completions of several (victim model, attack) runs against one behaviours CSV.

    Args:
        behaviors_csv: HarmBench's behaviours CSV (``Behavior, FunctionalCategory, SemanticCategory,
            Tags, ContextString, BehaviorID``); its other columns, if any, are ignored.
        runs: (model, attack, completions JSON) per run; the JSON is ``{BehaviorID: [{"test_case",
            "generation"}, ...]}``, optionally with ``"label"`` (a results file) or other fields,
            which go to ``extra["completion"]`` and back out on export.

    Returns:
        The items in file order, keyed ``<model>/<attack>/<BehaviorID>/<index>``; ``Tags`` in ``extra["tags"]``.
    """
    behaviors = read_harmbench_behaviors(behaviors_csv)
    items: list[Item] = []
    seen_runs: set[tuple[str, str]] = set()
    for model, attack, completions_path in runs:
        run = (_check_run_name(model, "MODEL"), _check_run_name(attack, "ATTACK"))
        if run in seen_runs:
            raise JudgeDataError("--run", None, "MODEL ATTACK", f"the run {model} {attack} is given twice")
        seen_runs.add(run)
        items.extend(_harmbench_run(behaviors, Path(behaviors_csv), model, attack, _JsonFile(completions_path)))
    return ImportResult(items, per_run=_count_runs(items))


def _harmbench_run(behaviors: dict[str, tuple[int, dict[str, str]]], behaviors_csv: Path, model: str, attack: str,
                   source: _JsonFile) -> list[Item]:
    data = source.expect(source.data, dict, (), "an object {BehaviorID: [completions]}")
    items = []
    for behavior_id, completions in data.items():
        if behavior_id not in behaviors:
            raise source.error((behavior_id,), f"BehaviorID {echo(behavior_id)} is not in {behaviors_csv}")
        _, row = behaviors[behavior_id]
        source.expect(completions, list, (behavior_id,), "an array of completions")
        for index, completion in enumerate(completions):
            where = (behavior_id, index)
            source.expect(completion, dict, where, 'an object {"test_case", "generation"}')
            for name in ("test_case", "generation"):
                if name not in completion:
                    raise source.error(where, f"missing field '{name}'")
                source.expect(completion[name], str, (*where, name), "a string")
            if "label" in completion:  # a results file: HarmBench's classifier gives 1, 0, or -1 when unparsable
                label = source.expect(completion["label"], (int, bool), (*where, "label"), "0, 1 or -1")
                if label not in (-1, 0, 1):
                    raise source.error((*where, "label"), f"must be 0, 1 or -1, got {label}")
            extra = {"completion": {k: v for k, v in completion.items() if k not in ("test_case", "generation")},
                     "tags": row["Tags"]}
            items.append(_item({
                "key": f"{model}/{attack}/{behavior_id}/{index}", "behavior_id": behavior_id,
                "behavior": row["Behavior"], "context_string": row["ContextString"],
                "functional_category": row["FunctionalCategory"], "semantic_category": row["SemanticCategory"],
                "victim_model": model, "attack": attack, "sample_idx": index, "test_case": completion["test_case"],
                "generation": completion["generation"], "source": "harmbench", "extra": extra,
            }, source.path, json_line(source.text, where)))
    return items


def import_harmbench(behaviors_csv: str | Path, runs: list[tuple[str, str, str | Path]]) -> list[Item]:
    """The items of HarmBench completions files (see ``read_harmbench``)."""
    return read_harmbench(behaviors_csv, runs).items


# ---------------------------------------------------------------- JailbreakBench


def read_jbb_behaviors(path: str | Path) -> dict[str, dict[str, str]]:
    """JBB-Behaviors rows by their ``Behavior`` name (what an artifact's ``behavior`` field holds)."""
    path = Path(path)
    _, rows = read_csv_rows(path, JBB_BEHAVIOR_COLUMNS)
    by_name: dict[str, dict[str, str]] = {}
    for line, row in rows:
        name = row["Behavior"].strip()
        if not name:
            raise JudgeDataError(path, line, "Behavior", "empty")
        if name in by_name:
            raise JudgeDataError(path, line, "Behavior", f"{echo(name)} appears twice")
        by_name[name] = row
    return by_name


def read_jbb(artifact_json: str | Path, behaviors_csv: str | Path | None = None) -> ImportResult:
    """A JailbreakBench artifact's submitted jailbreaks as items; not-submitted entries go to ``skipped``.

    Args:
        artifact_json: ``{"parameters": {...}, "jailbreaks": [...]}`` as JailbreakBench's
            ``read_artifact`` serves it; ``parameters.model`` is the victim model, ``parameters.method``
            the attack.
        behaviors_csv: the JBB-Behaviors CSV; when given, each entry's behaviour must be in it, and
            its ``Category`` is the item's semantic category and its ``Target`` and ``Source`` go to
            ``extra["jbb_behavior"]``.

    Returns:
        Items keyed ``<model>/<method>/<behavior>/<index>``; the entry's remaining fields (the
        original ``jailbroken`` verdict, query and token counts) in ``extra["entry"]``, the
        artifact's parameters in ``extra["jbb_parameters"]`` and its entry count in ``extra["jbb_entries"]``.
    """
    source = _JsonFile(artifact_json)
    data = source.expect(source.data, dict, (), 'an object {"parameters", "jailbreaks"}')
    for name in ("parameters", "jailbreaks"):
        if name not in data:
            raise source.error((), f"missing field '{name}'")
    parameters = source.expect(data["parameters"], dict, ("parameters",), "an object")
    for name in JBB_PARAMETERS_REQUIRED:
        if name not in parameters:
            raise source.error(("parameters",), f"missing field '{name}'")
        _check_jbb_name(source, source.expect(parameters[name], str, ("parameters", name), "a string"),
                        ("parameters", name))
    entries = source.expect(data["jailbreaks"], list, ("jailbreaks",), "an array")
    categories = read_jbb_behaviors(behaviors_csv) if behaviors_csv is not None else None
    model, method = parameters["model"], parameters["method"]
    items, skipped, keys = [], [], {}
    for position, entry in enumerate(entries):
        where = ("jailbreaks", position)
        source.expect(entry, dict, where, "an object")
        for name in ("index", "goal", "behavior", "category", "prompt", "response"):
            if name not in entry:
                raise source.error(where, f"missing field '{name}'")
        source.expect(entry["index"], int, (*where, "index"), "a whole number")
        for name in ("goal", "behavior", "category"):
            source.expect(entry[name], str, (*where, name), "a string")
        for name in ("prompt", "response"):
            source.expect(entry[name], (str, type(None)), (*where, name), "a string or null")
        if "jailbroken" in entry:
            source.expect(entry["jailbroken"], (bool, type(None)), (*where, "jailbroken"), "true, false or null")
        if entry["response"] is None:
            skipped.append(entry)  # not submitted by the attack: nothing to label
            continue
        _check_jbb_name(source, entry["behavior"], (*where, "behavior"))
        row = None
        if categories is not None:
            row = categories.get(entry["behavior"].strip())
            if row is None:
                raise source.error((*where, "behavior"), f"behaviour {echo(entry['behavior'])} is not in {behaviors_csv}")
        key = f"{model}/{method}/{entry['behavior']}/{entry['index']}"
        if key in keys:
            raise source.error((*where, "index"),
                               f"index {echo(entry['index'])} of {echo(entry['behavior'])} also at jailbreaks[{keys[key]}]")
        keys[key] = position
        items.append(_item({
            "key": key, "behavior_id": entry["behavior"], "behavior": entry["goal"] or entry["behavior"],
            "semantic_category": row["Category"] if row else entry["category"],
            "victim_model": model, "attack": method, "sample_idx": 0,
            "test_case": entry["prompt"] or "", "generation": entry["response"], "source": "jbb",
            "extra": {"entry": {k: v for k, v in entry.items() if k not in ("goal", "behavior", "response")},
                      "jbb_parameters": parameters, "jbb_entries": len(entries),
                      **({"jbb_behavior": {"Target": row["Target"], "Source": row["Source"]}} if row else {})},
        }, source.path, json_line(source.text, where)))
    return ImportResult(items, skipped=skipped, per_run=_count_runs(items))


def _check_jbb_name(source: _JsonFile, value: str, path: tuple[str | int, ...]) -> None:
    if not value.strip() or "/" in value:
        raise source.error(path, f"{echo(value)} must be a non-empty name without '/' (it is part of the item keys)")


def import_jbb(artifact_json: str | Path, behaviors_csv: str | Path | None = None) -> list[Item]:
    """The items of a JailbreakBench artifact (see ``read_jbb``; not-submitted entries are skipped)."""
    return read_jbb(artifact_json, behaviors_csv).items


# ---------------------------------------------------------------- generic JSONL / CSV


def _generic_records(path: Path, source_format: str, columns: list[str]) -> list[tuple[int, dict[str, Any]]]:
    if source_format == "csv":
        return read_csv_rows(path, tuple(columns))[1]
    records = []
    for number, raw in enumerate(_read_text(path).splitlines(), start=1):
        if not raw.strip():
            continue
        record = json_line_value(raw, path, number)
        if not isinstance(record, dict):
            raise JudgeDataError(path, number, None, f"expected a JSON object, got {_json_type(record)}")
        missing = [column for column in columns if column not in record]
        if missing:
            raise JudgeDataError(path, number, missing[0], "missing field")
        records.append((number, record))
    return records


def _generic_value(value: Any, name: str, column: str, path: Path, line: int) -> Any:
    if name in GENERIC_INT_FIELDS:
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                return int(value.strip())
            except ValueError:
                raise JudgeDataError(path, line, column, f"must be a whole number, got {echo(value)}") from None
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise JudgeDataError(path, line, column, f"must be a whole number, got {_json_type(value)}")
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and name in ("key", "behavior_id"):
        return str(value)  # numeric ids are common in JSONL exports
    raise JudgeDataError(path, line, column, f"must be a string, got {_json_type(value)}")


def parse_mapping(pairs: list[str]) -> dict[str, str]:
    """``["field=column", ...]`` (the ``--map`` options) as a dict; unknown fields are an error."""
    mapping = {}
    for pair in pairs:
        name, sep, column = pair.partition("=")
        name, column = name.strip(), column.strip()
        if not sep or not name or not column:
            raise JudgeDataError("--map", None, pair, "must be FIELD=COLUMN")
        mapping[name] = column
    return mapping


def read_generic(path: str | Path, mapping: dict[str, str], source_format: str | None = None) -> ImportResult:
    """Items from any JSONL or CSV file, given which column holds which item field.

    Args:
        path: the file.
        mapping: item field -> column (JSONL: the key of each object). Fields: ``GENERIC_FIELDS``;
            ``behavior``, ``victim_model``, ``attack`` and ``generation`` are required. Without
            ``behavior_id``, the id is a hash of the behaviour text; without ``key``, the key is
            ``<model>/<attack>/<behavior_id>/<n>`` with n counting that behaviour's generations in
            file order (HarmBench's convention).
        source_format: ``"jsonl"`` or ``"csv"``; by default from the file's suffix.

    Returns:
        The items; columns not in the mapping go to ``extra["columns"]``.
    """
    path = Path(path)
    source_format = source_format or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    if source_format not in ("jsonl", "csv"):
        raise JudgeDataError(path, None, None, f"unknown format {echo(source_format)}: use jsonl or csv")
    unknown = [name for name in mapping if name not in GENERIC_FIELDS]
    if unknown:
        raise JudgeDataError("--map", None, unknown[0], f"not an item field (fields: {', '.join(GENERIC_FIELDS)})")
    missing = [name for name in GENERIC_REQUIRED if name not in mapping]
    if missing:
        raise JudgeDataError("--map", None, missing[0], "required: map it to a column, e.g. --map "
                             f"{missing[0]}=<column>")
    columns = list(dict.fromkeys(mapping.values()))
    used = set(columns)
    items, keys, counters = [], {}, {}
    for line, record in _generic_records(path, source_format, columns):
        data: dict[str, Any] = {"source": "generic"}
        for name, column in mapping.items():
            data[name] = _generic_value(record[column], name, column, path, line)
        if data.get("sample_idx") is None:
            data.pop("sample_idx", None)
        if "behavior_id" not in mapping:
            data["behavior_id"] = "b" + hashlib.sha1(data["behavior"].encode()).hexdigest()[:10]
        if "key" not in mapping:
            run = (data["victim_model"], data["attack"], data["behavior_id"])
            n = counters[run] = counters.get(run, -1) + 1
            data["key"] = "/".join((*run, str(n)))
            data.setdefault("sample_idx", n)
        if data["key"] in keys:
            raise JudgeDataError(path, line, mapping.get("key", "key"),
                                 f"the key {echo(data['key'])} is also on line {keys[data['key']]}")
        keys[data["key"]] = line
        data["extra"] = {"columns": {k: v for k, v in record.items() if k not in used}}
        items.append(_item(data, path, line, {name: mapping.get(name, name) for name in GENERIC_FIELDS}))
    return ImportResult(items, per_run=_count_runs(items))


def import_generic(path: str | Path, mapping: dict[str, str], source_format: str | None = None) -> list[Item]:
    """The items of a generic JSONL or CSV file (see ``read_generic``)."""
    return read_generic(path, mapping, source_format).items
