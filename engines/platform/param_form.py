"""A job kind's form, derived from its one parameter model (pydantic).

``param_fields(model)`` describes one widget per field: a checkbox for a flag, a number box with
the field's bounds, a choice for a ``Literal``, a text box for text, and a JSON box for lists,
tuples and objects; a field with no default starts empty and must be filled. ``form_params``
turns what a person entered back into parameters, naming the field whose JSON does not read;
``submit_job`` then validates them against the same model, so a form can never offer what the
job would refuse, nor crash on a kind whose parameters have no defaults.
"""

from __future__ import annotations

import json
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from engines.platform.files import echo

ParamWidget = Literal["checkbox", "int", "float", "choice", "text", "json"]


class ParamFormError(ValueError):
    """A form value that is not a parameter; the message names the field."""


@dataclass(frozen=True)
class ParamField:
    """One parameter as a form shows it."""

    name: str
    label: str
    widget: ParamWidget
    help: str = ""
    required: bool = False
    optional: bool = False  # None is a value ("int | None"): an empty box means None
    options: tuple[Any, ...] = ()
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else annotation), True
    return annotation, False


def _widget(annotation: Any) -> ParamWidget:
    if typing.get_origin(annotation) is Literal:
        return "choice"
    if annotation is bool:
        return "checkbox"
    if annotation is int:
        return "int"
    if annotation is float:
        return "float"
    if annotation is str:
        return "text"
    return "json"


def param_fields(model: type[BaseModel] | None) -> list[ParamField]:
    """One ``ParamField`` per field of ``model``, in declaration order (none without a model)."""
    if model is None:
        return []
    fields = []
    for name, info in model.model_fields.items():
        annotation, optional = _unwrap_optional(info.annotation)
        widget = _widget(annotation)
        bounds = {type(meta): meta for meta in info.metadata}
        minimum = getattr(bounds.get(Ge), "ge", None)
        minimum = getattr(bounds.get(Gt), "gt", minimum)
        maximum = getattr(bounds.get(Le), "le", None)
        maximum = getattr(bounds.get(Lt), "lt", maximum)
        required = info.is_required()
        default = None if required else info.get_default(call_default_factory=True)
        if default is PydanticUndefined:
            default = None
        fields.append(ParamField(
            name=name, label=info.title or name.replace("_", " ").capitalize(), widget=widget,
            help=info.description or "", required=required, optional=optional,
            options=typing.get_args(annotation) if widget == "choice" else (), default=default,
            minimum=minimum, maximum=maximum))
    return fields


def json_text(value: Any) -> str:
    """A JSON box's starting text."""
    return "" if value is None else json.dumps(value)


def form_params(fields: list[ParamField], values: dict[str, Any]) -> dict[str, Any]:
    """What a person entered (``values`` by field name) -> job parameters.

    Empty boxes are left out (the model's default applies; a required field is then refused by
    the model with its name); JSON boxes are parsed here so that an error names the field.
    """
    params: dict[str, Any] = {}
    for field in fields:
        value = values.get(field.name)
        if isinstance(value, str) and field.widget in ("text", "json"):
            value = value.strip()
            if value == "":
                if field.optional and not field.required:
                    params[field.name] = None
                continue
        if value is None:
            continue
        if field.widget == "json" and isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as exc:
                raise ParamFormError(f"{field.label}: {echo(value)} is not JSON ({exc.msg}, column {exc.colno}); "
                                     f"for example {json_text(field.default) or '[1, 2]'}") from None
        if field.widget == "int" and isinstance(value, float) and value.is_integer():
            value = int(value)
        params[field.name] = value
    return params


__all__ = ["ParamField", "ParamFormError", "form_params", "json_text", "param_fields"]
