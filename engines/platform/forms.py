"""Turn a step's pydantic response schema into widget specifications for the participant page.

The schema is the single source of truth: its field types, titles, descriptions, bounds and
``Literal`` choices decide both validation (pydantic) and what the participant sees. Pages map
each ``FieldSpec.widget`` to a Streamlit widget; the browser and AppTest bot drivers use the
same specs to fill the form.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt, MaxLen
from pydantic import BaseModel

Widget = Literal["checkbox", "number", "float", "radio", "likert", "text", "textarea"]
TEXTAREA_FROM_LENGTH = 200


@dataclass(frozen=True)
class FieldSpec:
    name: str
    label: str
    widget: Widget
    help: str = ""
    required: bool = True
    options: tuple[Any, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    default: Any = None


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1 and len(typing.get_args(annotation)) == 2:
            return args[0], True
    return annotation, False


def field_specs(schema: type[BaseModel] | None) -> list[FieldSpec]:
    """Widget specs for every field of ``schema``, in declaration order."""
    if schema is None:
        return []
    specs = []
    for name, info in schema.model_fields.items():
        annotation, optional = _unwrap_optional(info.annotation)
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        minimum = maximum = max_length = None
        for meta in info.metadata:
            if isinstance(meta, Ge):
                minimum = meta.ge
            elif isinstance(meta, Gt):
                minimum = meta.gt
            elif isinstance(meta, Le):
                maximum = meta.le
            elif isinstance(meta, Lt):
                maximum = meta.lt
            elif isinstance(meta, MaxLen):
                max_length = meta.max_length
        options: tuple[Any, ...] = ()
        if typing.get_origin(annotation) is Literal:
            options = typing.get_args(annotation)
            widget: Widget = "radio"
        elif annotation is bool:
            widget = "checkbox"
        elif annotation is int:
            widget = "likert" if extra.get("widget") == "likert" else "number"
            if widget == "likert":
                if minimum is None or maximum is None:
                    raise ValueError(f"{schema.__name__}.{name}: a likert field needs ge= and le= bounds")
                options = tuple(range(int(minimum), int(maximum) + 1))
        elif annotation is float:
            widget = "float"
        elif annotation is str:
            widget = "textarea" if (max_length or 0) > TEXTAREA_FROM_LENGTH else "text"
        else:
            raise TypeError(f"{schema.__name__}.{name}: no widget for type {annotation!r}")
        default = None if info.is_required() else info.get_default(call_default_factory=True)
        specs.append(FieldSpec(
            name=name, label=info.title or name.replace("_", " ").capitalize(), widget=widget,
            help=info.description or "", required=info.is_required() and not optional, options=options,
            minimum=minimum, maximum=maximum, max_length=max_length, default=default,
        ))
    return specs
