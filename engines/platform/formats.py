"""File formats as pydantic models: one error that names the file, the line and the field.

An area declares a format as pydantic dataclasses or models (types, bounds, ``Literal`` choices,
``extra="forbid"``), and reads a file of it here: :func:`read_jsonl` (one record per line, blank
lines skipped) or :func:`validated` (one object). Whatever is wrong comes back as one
:class:`FormatError` in one wording, ``"run.jsonl, line 3: steps[2].verdict.confidence: must be at
most 1 (got 1.5)"``: the first problem pydantic found, its field path written as a person reads it,
and the value quoted short (``files.echo``), since the value came from a file no one here wrote.

A check pydantic cannot express (a rule between fields) raises :class:`FieldProblem` from a
validator, naming the field below the model it checks (``FieldProblem("args.spans", "must name at
least one span")``); its path joins the model's own.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, TypeAdapter, ValidationError

from engines.platform.files import echo, json_depth_problem


class FormatError(ValueError):
    """A record that does not follow its format. ``field`` is the path (``steps[2].verdict.confidence``),
    ``source`` the file and line when it was read from one; ``str(error)`` joins them and the problem."""

    def __init__(self, field: str, problem: str, source: str = "", *, line: int | None = None) -> None:
        self.field, self.problem, self.source, self.line = field, problem, source, line
        super().__init__(": ".join([*(part for part in (source, field) if part), problem]))


class FieldProblem(ValueError):
    """Raised by a format's validator: ``field`` (below the model checked; "" for the model itself)
    and what is wrong with it."""

    def __init__(self, field: str, problem: str) -> None:
        self.field, self.problem = field, problem
        super().__init__(f"{field}: {problem}" if field else problem)


def _not_empty(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


# Text with something in it besides white space: kept as given, or with its ends stripped.
FilledText = Annotated[str, AfterValidator(_not_empty)]
StrippedText = Annotated[str, AfterValidator(lambda text: _not_empty(text).strip())]


def field_path(parts: Iterable[str | int]) -> str:
    """``("steps", 2, "verdict", "confidence")`` -> ``"steps[2].verdict.confidence"``."""
    path = ""
    for part in parts:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            name = part if len(part) <= 60 and part.isprintable() else echo(part, 60)
            path = f"{path}.{name}" if path else name
    return path


def _join(path: str, below: str) -> str:
    if not below:
        return path
    if not path or below.startswith("["):
        return path + below
    return f"{path}.{below}"


# pydantic's error types, in words; ``{got}`` is the value as it was given.
_WORDS = {
    "missing": "is missing",
    "missing_argument": "is missing",
    "extra_forbidden": "is not a field of {format}",
    "unexpected_keyword_argument": "is not a field of {format}",
    "float_type": "must be a number (got {got})",
    "float_parsing": "must be a number (got {got})",
    "finite_number": "must be a finite number (got {got})",
    "int_type": "must be a whole number (got {got})",
    "int_parsing": "must be a whole number (got {got})",
    "int_from_float": "must be a whole number (got {got})",
    "bool_type": "must be true or false (got {got})",
    "string_type": "must be text (got {got})",
    "list_type": "must be a list (got {got})",
    "tuple_type": "must be a list (got {got})",
    "dict_type": "must be an object (got {got})",
    "dataclass_type": "must be an object (got {got})",
    "dataclass_exact_type": "must be an object (got {got})",
    "model_type": "must be an object (got {got})",
    "model_attributes_type": "must be an object (got {got})",
    "none_required": "must be null (got {got})",
    "greater_than": "must be above {gt} (got {got})",
    "greater_than_equal": "must be at least {ge} (got {got})",
    "less_than": "must be below {lt} (got {got})",
    "less_than_equal": "must be at most {le} (got {got})",
    "too_short": "must hold at least {min_length} item(s) (got {actual_length})",
    "too_long": "must hold at most {max_length} item(s) (got {actual_length})",
    "string_too_short": "must hold at least {min_length} character(s) (got {got})",
    "string_too_long": "must hold at most {max_length} character(s)",
    "literal_error": "must be one of {expected} (got {got})",
    "string_pattern_mismatch": "must match {pattern} (got {got})",
}


def _shown(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return "null" if value is None else echo(value)


def _problem(error: Mapping[str, Any], format_name: str) -> tuple[str, str]:
    """(path below the error's location, the problem in words) of one of pydantic's errors."""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, FieldProblem):
        return cause.field, cause.problem
    if error["type"] in ("value_error", "assertion_error"):
        return "", str(cause) if cause is not None else error["msg"]
    words = _WORDS.get(error["type"])
    if words is None:
        return "", f"{error['msg'][:1].lower()}{error['msg'][1:]} (got {_shown(error.get('input'))})"
    values = {key: f"{value:g}" if isinstance(value, float) else value for key, value in (error.get("ctx") or {}).items()}
    if "expected" in values:
        values["expected"] = str(values["expected"]).replace("None", "null")
    return "", words.format(format=format_name, got=_shown(error.get("input")), **values)


def format_error(exc: ValidationError, *, format_name: str, source: str = "",
                 error: Callable[..., FormatError] = FormatError) -> FormatError:
    """The first of ``exc``'s errors as a :class:`FormatError` (``error``: the format's own subclass, or
    a callable making one, taking FormatError's arguments)."""
    first = exc.errors(include_url=False)[0]
    below, problem = _problem(first, format_name)
    loc = [part for part in first["loc"] if not (isinstance(part, str) and part.startswith("function-"))]
    if loc and loc[-1] == "[key]":  # pydantic's mark for a mapping's key, not its value, being wrong
        loc, problem = loc[:-1], f"the name {problem}"
    return error(_join(field_path(loc), below), problem, source)


def validated(kind: Any, value: Any, *, format_name: str, source: str = "",
              error: Callable[..., FormatError] = FormatError) -> Any:
    """``value`` (plain JSON data) as ``kind`` (a pydantic model or dataclass, or any type pydantic
    validates), or an ``error`` (a :class:`FormatError`) naming the field."""
    try:
        return _adapter(kind).validate_python(value)
    except ValidationError as exc:
        raise format_error(exc, format_name=format_name, source=source, error=error) from None


_adapter = functools.cache(TypeAdapter)  # one adapter per format, built on first use


def read_jsonl(path: str | os.PathLike, kind: Any, *, format_name: str, name: str | None = None,
               error: Callable[..., FormatError] = FormatError) -> list:
    """The records of a JSONL file, one ``kind`` per line (blank lines skipped).

    ``name`` is how messages call the file (default: its path). A line nesting deeper than
    ``HAI_MAX_JSON_DEPTH`` is refused before it is parsed.

    Raises:
        FormatError: a line is not JSON or not a ``kind``; the message names the file, the line and
            the field.
    """
    where = name or str(path)
    return [validated(kind, value, format_name=format_name, source=f"{where}, line {number}", error=error)
            for number, value in json_lines(path, name=name, error=error)]


def read_json(path: str | os.PathLike, kind: Any, *, format_name: str, name: str | None = None,
              error: Callable[..., FormatError] = FormatError, encoding: str = "utf-8") -> Any:
    """A whole file of JSON as ``kind`` (``name``: how messages call the file, default its path).

    Raises:
        FormatError: the file cannot be read, is not JSON, nests deeper than ``HAI_MAX_JSON_DEPTH``, or
            is not a ``kind``; the message names the file and the field.
    """
    where = name or str(path)
    try:
        text = Path(path).read_text(encoding=encoding)
    except UnicodeDecodeError as exc:
        raise error("", f"not UTF-8 text ({exc.reason} at byte {exc.start})", where) from None
    except OSError as exc:
        raise error("", f"cannot read ({exc.strerror or exc})", where) from None
    return validated(kind, parse_json(text, source=where, error=error), format_name=format_name, source=where,
                     error=error)


def parse_json(text: str, *, source: str, error: Callable[..., FormatError] = FormatError) -> Any:
    """The JSON value of ``text`` (a whole file's), or an ``error`` naming ``source`` when it is not
    JSON or nests deeper than ``HAI_MAX_JSON_DEPTH`` (checked before parsing)."""
    problem = json_depth_problem(text)
    if problem is not None:
        raise error("", f"the JSON {problem}", source)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise error("", f"not valid JSON ({err.msg} at line {err.lineno}, column {err.colno})", source) from None


def json_lines(path: str | os.PathLike, *, name: str | None = None,
               error: Callable[..., FormatError] = FormatError) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line of a JSONL file: for a format read line by line in
    a shape of its own (several upstream shapes of one record).

    Raises:
        FormatError: a line nests deeper than ``HAI_MAX_JSON_DEPTH`` or is not JSON (its ``line`` set).
    """
    path = Path(path)
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{name or path}, line {number}"
            problem = json_depth_problem(line)
            if problem is not None:
                raise error("", f"the JSON {problem}", where, line=number)
            try:
                value = json.loads(line)
            except json.JSONDecodeError as err:
                raise error("", f"not valid JSON ({err.msg} at column {err.colno})", where, line=number) from None
            yield number, value
