"""The reference of every job kind's parameters, written from their parameter models.

A job kind's one parameter model (``register_job(..., params=Model)``, mostly derived from a config
dataclass by ``config_schema.job_model``) is what the Jobs page's form, the queue's validation and
this reference read, so the reference cannot drift from what a job accepts:
``python -m engines.platform jobs params > docs/jobs.md`` writes it, and a test compares the file
with what the models say today.
"""

from __future__ import annotations

import json
import types
import typing
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen, MinLen
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

HEADER = """# Job parameters

Every job kind and its parameters, as the Jobs page offers them and the queue checks them: written
from the kinds' parameter models by `python -m engines.platform jobs params > docs/jobs.md` (do not
edit by hand; `tests/platform/test_param_docs.py` fails when this page and the models differ). A
parameter that is also a command-line option has the same default and bounds there.
"""


def type_text(annotation: Any) -> str:
    """``int | None`` -> "int or null", ``Literal['a', 'b']`` -> "'a' or 'b'", ``list[int]`` -> "list of int"."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return " or ".join(json.dumps(arg) for arg in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join("null" if arg is type(None) else type_text(arg) for arg in args)
    if origin in (list, tuple, set, frozenset):
        items = [arg for arg in args if arg is not Ellipsis]
        if origin is tuple and len(items) > 1 and Ellipsis not in args:
            return "pair of " + " and ".join(type_text(arg) for arg in items)
        return "list of " + (type_text(items[0]) if items else "values")
    if origin is dict or annotation is dict:
        return "object"
    if origin is typing.Annotated:
        return type_text(args[0])
    return getattr(annotation, "__name__", str(annotation))


# How each pydantic bound reads: its class, the attribute holding the value, the words around it.
_BOUND_WORDS = ((Ge, "ge", "≥ {}"), (Gt, "gt", "> {}"), (Le, "le", "≤ {}"), (Lt, "lt", "< {}"),
                (MinLen, "min_length", "at least {} long"), (MaxLen, "max_length", "at most {} long"))


def _bounds_text(metadata: list) -> str:
    return ", ".join(words.format(getattr(meta, name)) for meta in metadata
                     for kind, name, words in _BOUND_WORDS if isinstance(meta, kind))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def model_table(model: type[BaseModel]) -> str:
    """One Markdown table row per field of ``model``: name, type, default, bounds, what it is."""
    rows = ["| Parameter | Type | Default | Bounds | What it is |", "|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        default = info.get_default(call_default_factory=True)
        shown = "required" if info.is_required() or default is PydanticUndefined else \
            f"`{json.dumps(default, default=str)}`"
        rows.append("| " + " | ".join(_cell(part) for part in (
            f"`{name}`", type_text(info.annotation), shown, _bounds_text(info.metadata),
            info.title or info.description or "")) + " |")
    return "\n".join(rows)


def job_parameters_markdown(kinds: dict) -> str:
    """The reference page: each kind (``jobqueue.JobKind``), sorted by name, with its title and table."""
    sections = [HEADER]
    for name, kind in sorted(kinds.items()):
        sections.append(f"## `{name}`: {kind.title}\n")
        if kind.description:
            sections.append(kind.description.strip().splitlines()[0] + "\n")
        sections.append((model_table(kind.params) if kind.params is not None else "No parameters.") + "\n")
    return "\n".join(sections)
