"""File formats as pydantic models (engines.platform.formats): one error naming the file, the line and
the field, in words a person reads, with the value quoted short."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from pydantic import ConfigDict, Field, Strict, field_validator
from pydantic.dataclasses import dataclass

from engines.platform.formats import FieldProblem, FormatError, field_path, read_jsonl, validated

FORMAT = "test-format/1"


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Reading:
    at: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)]
    level: Annotated[float, Strict(), Field(ge=0, le=1)]
    unit: Literal["cm", "mm"] = "cm"


@dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Series:
    name: Annotated[str, Strict()]
    readings: tuple[Reading, ...]
    count: Annotated[int, Strict(), Field(ge=1)] = 1
    limits: dict[Literal["low", "high"], float] = Field(default_factory=dict)

    @field_validator("readings")
    @classmethod
    def _in_time_order(cls, readings: tuple[Reading, ...]) -> tuple[Reading, ...]:
        for k in range(1, len(readings)):
            if readings[k].at < readings[k - 1].at:
                raise FieldProblem(f"[{k}].at", f"comes before the reading above it ({readings[k - 1].at:g})")
        return readings


GOOD = {"name": "tank", "readings": [{"at": 0, "level": 0.5}, {"at": 2.5, "level": 0.25, "unit": "mm"}]}


def _broken(edit) -> dict:
    record = json.loads(json.dumps(GOOD))
    edit(record)
    return record


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r["readings"][1].__setitem__("level", 1.5), "readings[1].level: must be at most 1 (got 1.5)"),
    (lambda r: r["readings"][0].__setitem__("at", "0"), "readings[0].at: must be a number (got '0')"),
    (lambda r: r["readings"][0].__setitem__("at", float("nan")), "readings[0].at: must be a finite number (got nan)"),
    (lambda r: r["readings"][1].__setitem__("unit", "in"), "readings[1].unit: must be one of 'cm' or 'mm' (got 'in')"),
    (lambda r: r["readings"][0].pop("level"), "readings[0].level: is missing"),
    (lambda r: r.__setitem__("colour", "red"), "colour: is not a field of test-format/1"),
    (lambda r: r.__setitem__("count", True), "count: must be a whole number (got True)"),
    (lambda r: r.__setitem__("count", 0), "count: must be at least 1 (got 0)"),
    (lambda r: r.__setitem__("readings", "many"), "readings: must be a list (got 'many')"),
    (lambda r: r["readings"][1].__setitem__("at", -1), "readings[1].at: must be at least 0 (got -1)"),
    (lambda r: r["readings"].append({"at": 1.0, "level": 0.1}), "readings[2].at: comes before the reading above it (2.5)"),
    (lambda r: r.__setitem__("limits", {"low": 0.1, "middle": 0.5}),
     "limits.middle: the name must be one of 'low' or 'high' (got 'middle')"),
    (lambda r: r.__setitem__("name", "x" * 500), None),  # a long name is fine
])
def test_what_is_wrong_is_named_by_its_field_path(edit, message):
    record = _broken(edit)
    if message is None:
        assert validated(Series, record, format_name=FORMAT).name == "x" * 500
        return
    with pytest.raises(FormatError) as raised:
        validated(Series, record, format_name=FORMAT)
    assert str(raised.value) == message


def test_a_hostile_value_is_quoted_short():
    with pytest.raises(FormatError) as raised:
        validated(Series, _broken(lambda r: r.__setitem__("count", "9" * 1000)), format_name=FORMAT)
    assert len(str(raised.value)) < 200 and str(raised.value).startswith("count: must be a whole number (got '999")


def test_a_file_is_read_line_by_line_and_its_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "series.jsonl"
    path.write_text(json.dumps(GOOD) + "\n\n" + json.dumps(_broken(lambda r: r.pop("name"))) + "\n", encoding="utf-8")
    with pytest.raises(FormatError) as raised:
        read_jsonl(path, Series, format_name=FORMAT, name="series.jsonl")
    assert str(raised.value) == "series.jsonl, line 3: name: is missing"
    assert (raised.value.source, raised.value.field, raised.value.problem) == ("series.jsonl, line 3", "name", "is missing")

    path.write_text(json.dumps(GOOD) + "\n" + json.dumps(GOOD)[:30] + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"^series.jsonl, line 2: not valid JSON \("):
        read_jsonl(path, Series, format_name=FORMAT, name="series.jsonl")

    path.write_text("[" * 100 + "]" * 100 + "\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"^series.jsonl, line 1: the JSON nests deeper than \d+ levels"):
        read_jsonl(path, Series, format_name=FORMAT, name="series.jsonl")

    path.write_text("\n".join(json.dumps(GOOD) for _ in range(3)) + "\n", encoding="utf-8")
    assert [s.readings[1].unit for s in read_jsonl(path, Series, format_name=FORMAT)] == ["mm"] * 3


def test_field_paths_read_as_a_person_writes_them():
    assert field_path(["steps", 2, "verdict", "confidence"]) == "steps[2].verdict.confidence"
    assert field_path([0, "a"]) == "[0].a" and field_path([]) == ""
    assert field_path(["x" * 100]).startswith("'xxx") and len(field_path(["x" * 100])) <= 60
