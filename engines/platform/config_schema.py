"""Command-line options and job parameter models derived from one config dataclass.

A frozen config dataclass (``SimulationConfig``, ``SweepConfig``, ...) is the one declaration of
a parameter set: its fields carry their defaults, and their ``metadata`` says how each one is
offered to a person, the way ``engines.collab.rules`` describes rule parameters::

    T: int = field(default=10_000, metadata={"help": "interactions", "min": 10, "max": 2_000_000})

Metadata keys (all optional):

- ``help``: one line; the option's help and, capitalised, the job field's title (``title`` overrides it).
- ``min``/``max`` (inclusive), ``gt``/``lt`` (exclusive), ``min_length``/``max_length``: bounds a
  job or a form enforces. The command line passes values through to the dataclass, whose
  ``__post_init__`` stays the validation that names what is wrong.
- ``choices``: the allowed values: a tuple (argparse ``choices`` and a ``Literal`` in the job
  model), or a callable returning them, for a registry that may grow (argparse reads it when the
  parser is built; the job keeps the plain type and the dataclass validates).
- ``cli``: False for no option, or a dict of argparse details: ``flag`` (default ``--field-name``),
  ``help``, ``default``, ``required`` (an option that must be given; no default), ``type``,
  ``action``, ``metavar``, ``choices``, ``nargs`` (a tuple field
  given as several values, each parsed by ``type``: ``--rhos 0 0.5 1``). Without a ``type``, int and
  float fields parse as such, bool fields are ``store_true`` flags and dict fields take
  ``key=value,key=value`` (``key_values``).
- ``job``: False when a job may not set the field (a file path, an execution detail).
- ``required``: True when every caller must give the field (a name with no sensible default): a
  required option, a job parameter without a default. The dataclass still declares a default
  (refused by its own checks), so that a config works as declared.

``argparse_options`` adds the options (dest = the field name, with ``prefix``), ``option_values``
reads them back, and ``job_model`` builds the pydantic model of a job's parameters
(``extra="forbid"``: a misspelt or unknown parameter is refused, not ignored), which builds the
config from the job's values, so a job meets the config's own checks. ``check_fields``, called from
a config's ``__post_init__``, enforces the metadata's bounds and static choices on every caller (the
command line, a script, a job) with one wording, so the bounds are declared once, in the metadata.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import numbers
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from engines.platform.files import echo

BOUNDS = {"min": "ge", "max": "le", "gt": "gt", "lt": "lt", "min_length": "min_length", "max_length": "max_length"}


class JobParams(BaseModel):
    """Base of every derived job model: unknown parameters are refused."""

    model_config = ConfigDict(extra="forbid")


def _fields(cls: type, only: Iterable[str] | None, exclude: Iterable[str], flag: str) -> list[dataclasses.Field]:
    """The dataclass fields of ``cls`` in declaration order, without those whose metadata[flag] is False."""
    names = {f.name for f in dataclasses.fields(cls)}
    wanted = set(only) if only is not None else names
    unknown = (wanted | set(exclude)) - names
    if unknown:
        raise ValueError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    return [f for f in dataclasses.fields(cls)
            if f.name in wanted and f.name not in set(exclude) and f.metadata.get(flag, True) is not False]


def _shown(value: Any) -> str:
    return format(value, "g") if isinstance(value, float) else str(value)


def _range_text(meta: Mapping) -> str:
    """"from 1 to 64", "above 0 and at most 30", "at least 1": the metadata's bounds in words."""
    if "min" in meta and "max" in meta:
        return f"from {_shown(meta['min'])} to {_shown(meta['max'])}"
    low = (f"at least {_shown(meta['min'])}" if "min" in meta else
           f"above {_shown(meta['gt'])}" if "gt" in meta else None)
    high = (f"at most {_shown(meta['max'])}" if "max" in meta else
            f"below {_shown(meta['lt'])}" if "lt" in meta else None)
    return " and ".join(part for part in (low, high) if part)


def _outside(value: Any, meta: Mapping) -> bool:
    return (("min" in meta and value < meta["min"]) or ("max" in meta and value > meta["max"])
            or ("gt" in meta and value <= meta["gt"]) or ("lt" in meta and value >= meta["lt"]))


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return {name: _plain(hint) for name, hint in typing.get_type_hints(cls).items()}


def _wrong_kind(value: Any, hint: Any) -> str | None:
    """What a number field's value should have been, if it is not: "a whole number", "a number"."""
    if isinstance(value, bool) and hint in (int, float):
        return f"a {'whole ' if hint is int else ''}number"
    if hint is int and not isinstance(value, numbers.Integral):
        return "a whole number"
    if hint is float and not isinstance(value, numbers.Real):
        return "a number"
    return None


def check_fields(config: Any) -> None:
    """Refuse a field of the config dataclass ``config`` outside its metadata's bounds or static choices,
    or a number field given something else (``True``, ``1.5`` for a count, text).

    Call it first in ``__post_init__``; ``None`` (an optional field left unset) passes. Choices given
    as a callable (a registry that may grow) are left to the config's own checks.

    Raises:
        ValueError: "max_steps must be from 1 to 64, got 0", "agent must be one of gated, coupled, got 'solo'".
    """
    hints = _hints(type(config))
    for f in dataclasses.fields(config):
        value, meta = getattr(config, f.name), f.metadata
        if value is None:
            continue
        wanted = _wrong_kind(value, hints.get(f.name))
        if wanted:
            raise ValueError(f"{f.name} must be {wanted}, got {value!r}")
        choices = meta.get("choices")
        if isinstance(choices, (tuple, list)) and value not in choices:
            raise ValueError(f"{f.name} must be one of {', '.join(map(str, choices))}, got {value!r}")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and _outside(value, meta):
            raise ValueError(f"{f.name} must be {_range_text(meta)}, got {_shown(value)}")
        if isinstance(value, (tuple, list, str)):
            if "min_length" in meta and len(value) < meta["min_length"]:
                raise ValueError(f"{f.name} needs at least {meta['min_length']} item(s), got {value!r}")
            if "max_length" in meta and len(value) > meta["max_length"]:
                raise ValueError(f"{f.name} takes at most {meta['max_length']} item(s), got {len(value)}")


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise ValueError(f"field {f.name!r} needs a default: a config must work as declared")


def _choices(meta: Mapping) -> tuple | None:
    choices = meta.get("choices")
    return tuple(choices()) if callable(choices) else choices


def _plain(hint: Any) -> Any:
    """``int | None`` -> int; other hints unchanged."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, types.UnionType) and len(args) == 1 else hint


def cli_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """``parse`` as an argparse ``type``: its ValueError message is shown instead of "invalid value"."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = parse.__name__
    return convert


def key_values(text: str) -> dict:
    """``"rounds=2,threshold=0.4"`` -> {"rounds": 2, "threshold": 0.4} (ints, floats, true/false, else strings)."""
    out = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        if "=" not in part:
            raise ValueError(f"expected key=value pairs, got {echo(part)}")
        key, value = (x.strip() for x in part.split("=", 1))
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = {"true": True, "false": False}.get(value.lower(), value)
    return out


def argparse_options(cls: type, parser: argparse.ArgumentParser | argparse._ArgumentGroup, *,
                     only: Iterable[str] | None = None, exclude: Iterable[str] = (), prefix: str = "",
                     overrides: Mapping[str, Mapping] | None = None) -> None:
    """Add one option per field of the dataclass ``cls`` (in declaration order) to ``parser``.

    Args:
        only, exclude: restrict the fields (fields with ``cli=False`` are never offered).
        prefix: put before every flag and dest ("llm_": ``--llm-base-url``, ``args.llm_base_url``);
            a ``flag`` given in the metadata is used as it is.
        overrides: per field, argparse details that only the caller knows (e.g. a help text naming
            another command's defaults); they win over the metadata's ``cli`` dict.
    """
    hints = typing.get_type_hints(cls)
    for f in _fields(cls, only, exclude, "cli"):
        meta = f.metadata
        cli = {**(meta.get("cli") or {}), **((overrides or {}).get(f.name) or {})}
        flag = cli.get("flag", "--" + (prefix + f.name).replace("_", "-"))
        kwargs: dict[str, Any] = {"dest": prefix + f.name, "help": cli.get("help", meta.get("help"))}
        if cli.get("required") or meta.get("required"):
            kwargs["required"] = True
        else:
            kwargs["default"] = cli.get("default", _default(f))
            default = kwargs["default"]  # 0 is shown: it only equals False
            shown_default = default is not None and default is not False and default not in ("", ())
            if kwargs["help"] and shown_default and "default" not in kwargs["help"]:
                shown = _shown(kwargs["default"]).replace("%", "%%")  # argparse formats help with %
                kwargs["help"] += f" (default {shown})"  # what a run without the option uses
        hint = _plain(hints[f.name])
        if hint is bool or "action" in cli:
            kwargs["action"] = cli.get("action", "store_true")
        else:
            kind = cli.get("type", hint if hint in (int, float) else cli_type(key_values) if hint is dict else None)
            if kind is None and hint is not str:
                raise TypeError(f"{cls.__name__}.{f.name}: give metadata cli={{'type': ...}} to parse {hint!r}")
            if kind is not None:
                kwargs["type"] = kind
            choices = _choices(cli) if "choices" in cli else _choices(meta)
            if choices is not None:
                kwargs["choices"] = list(choices)
            if "metavar" in cli:
                kwargs["metavar"] = cli["metavar"]
            if "nargs" in cli:
                kwargs["nargs"] = cli["nargs"]
        parser.add_argument(flag, **kwargs)


def option_values(cls: type, args: argparse.Namespace, *, only: Iterable[str] | None = None,
                  exclude: Iterable[str] = (), prefix: str = "") -> dict[str, Any]:
    """{field: value} of the options ``argparse_options`` added with the same arguments."""
    return {f.name: getattr(args, prefix + f.name) for f in _fields(cls, only, exclude, "cli")}


def job_model(cls: type, *, name: str, base: type[JobParams] = JobParams, only: Iterable[str] | None = None,
              exclude: Iterable[str] = (), defaults: Mapping[str, Any] | None = None,
              doc: str | None = None,
              adjust: Callable[[Any, dict[str, Any]], dict[str, Any]] | None = None) -> type[JobParams]:
    """A pydantic model with one field per field of the dataclass ``cls`` (``job=False`` ones left out).

    Each field keeps its type (a ``Literal`` of static ``choices``), its default (or the one in
    ``defaults``: jobs often run smaller than the command line), its bounds and a title from its
    help. The model's ``config()`` builds ``cls`` from the job's values (the others at their
    defaults), and building it is the model's last check, so the config's ``__post_init__`` refuses
    what it refuses anywhere else, with its own message. ``adjust(params, values)`` may change the
    values first from the parameters ``base`` adds (a ``quick`` flag replacing sizes, as the command
    line's ``--quick`` does). Subclass the result to add methods and validators; ``base`` must derive
    from ``JobParams``.
    """
    if not issubclass(base, JobParams):
        raise TypeError(f"base must derive from JobParams (extra='forbid'), got {base.__name__}")
    hints = typing.get_type_hints(cls)
    defaults = dict(defaults or {})
    fields: dict[str, Any] = {}
    for f in _fields(cls, only, exclude, "job"):
        meta = f.metadata
        choices = meta.get("choices")
        hint = Literal[tuple(choices)] if isinstance(choices, (tuple, list)) else hints[f.name]
        value = defaults.pop(f.name, _default(f))
        title = meta.get("title") or (meta["help"][:1].upper() + meta["help"][1:] if meta.get("help") else None)
        bounds = {pydantic: meta[key] for key, pydantic in BOUNDS.items() if key in meta}
        if meta.get("required"):
            fields[f.name] = (hint, Field(title=title, **bounds))
        elif isinstance(value, (dict, list)):
            fields[f.name] = (hint, Field(default_factory=lambda v=value: type(v)(v), title=title, **bounds))
        else:
            fields[f.name] = (hint, Field(default=value, title=title, **bounds))
    if defaults:
        raise ValueError(f"defaults for field(s) that {name} does not have: {sorted(defaults)}")
    # A model derived from another of the same config (a job's shared options, then its own) builds
    # the config from both layers' fields, not from the last layer's alone.
    inherited = getattr(base, "_config_fields", None)
    names = (*(inherited[1] if inherited and inherited[0] is cls else ()), *fields)

    class Derived(base):
        _config_fields: ClassVar[tuple[type, tuple[str, ...]]] = (cls, names)

        def config(self) -> Any:
            """The config these parameters stand for (``job_model``)."""
            values = {field_name: getattr(self, field_name) for field_name in names}
            return cls(**(adjust(self, values) if adjust else values))

    def config_checks(params: JobParams) -> JobParams:
        params.config()  # ValueError -> ValidationError
        return params

    Derived.__name__ = Derived.__qualname__ = f"{name}Base"
    model = create_model(name, __base__=Derived, __module__=base.__module__,
                         __validators__={"_config_checks": model_validator(mode="after")(config_checks)}, **fields)
    model.__doc__ = doc or base.__doc__
    return model


@dataclasses.dataclass(frozen=True)
class FieldInfo:
    """What a form needs of one job parameter: its default, inclusive or exclusive bounds, and title."""

    name: str
    default: Any
    title: str | None = None
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None


def field_info(model: type[BaseModel]) -> dict[str, FieldInfo]:
    """{name: FieldInfo} of a job model's fields (``job_model``), so a page offers the job's own defaults and bounds."""
    out = {}
    for name, info in model.model_fields.items():
        bounds = {key: getattr(meta, key) for meta in info.metadata for key in ("ge", "gt", "le", "lt")
                  if getattr(meta, key, None) is not None}
        out[name] = FieldInfo(name=name, default=info.get_default(call_default_factory=True), title=info.title,
                              **bounds)
    return out

