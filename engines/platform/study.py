"""Declarative study protocols, after oTree's app model.

A study module in ``studies/`` declares, in this order: a docstring; ``class C(Constants)`` with
UPPER_CASE constants; response schemas as pydantic models whose fields carry ``title``,
bounds and choices; plain functions; step classes; ``step_sequence = [...]``; optionally
``assign_condition(counts, identity)``; optionally ``validate_constants(C)`` raising ``ValueError`` for
constants (with a study instance's overrides) the study cannot run with; optionally
``export_files(slug, engine)`` returning extra
files (name -> bytes) for the study's data export; and a ``PlayerBot`` (see ``engines.platform.bots``).
One generic participant page interprets any protocol built from such a module.

References: oTree's ``page_sequence`` / ``is_displayed`` / ``vars_for_template`` / bots
(oTree-org/otree-docs), psiTurk's least-filled condition assignment.
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from engines.platform.files import echo

StepKind = Literal["form", "info", "consent", "completion"]
# The participant variable by which a hook screens the participant out: ``after_submit`` sets
# ``ctx.vars[SCREENED_OUT_BECAUSE] = "why"``; once the step's answer is stored the study ends for
# them with the screened-out code, and the export gives the reason (``screening_reason``).
SCREENED_OUT_BECAUSE = "screened_out_because"


class Constants:
    """Base of a study's ``C`` class. Subclasses set UPPER_CASE attributes.

    Recognised names: ``NAME`` (protocol id), ``TITLE``, ``CONDITIONS`` (a sequence of names or
    a mapping name -> parameters), ``COMPLETION_CODE``, ``SCREENED_OUT_CODE``,
    ``MAX_ATTENTION_FAILURES`` (screen out after more failed attention checks than this),
    ``ESTIMATED_MINUTES``. Anything else is the study's own.

    A study instance may override constants (``StudyProtocol.constants_for``), so every text,
    choice and correct answer a participant meets derives from the constants a hook receives
    (``ctx.C``, ``Step.response_model(C)``, ``Check.answers`` as a function of C), never from
    this class directly.
    """

    NAME: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    CONDITIONS: ClassVar[Any] = ("default",)
    COMPLETION_CODE: ClassVar[str] = "COMPLETED"
    SCREENED_OUT_CODE: ClassVar[str] = "SCREENED_OUT"
    MAX_ATTENTION_FAILURES: ClassVar[int | None] = None
    ESTIMATED_MINUTES: ClassVar[int] = 5


@dataclass(frozen=True)
class Check:
    """Correct answers for a comprehension or attention check, and what happens on failure.

    Args:
        answers: field name -> the correct value, or a function of the study instance's constants
            returning that mapping (when the right answer depends on them, e.g. a number of rounds).
        kind: "comprehension" (participants retry after reading feedback) or "attention".
        max_attempts: submissions allowed before ``on_fail`` applies.
        on_fail: "screen_out" ends the study with the screened-out code; "continue" accepts the
            last answer, flags it, and (for attention checks) counts a failure toward
            ``C.MAX_ATTENTION_FAILURES``.
        feedback: shown after a wrong attempt when attempts remain.
    """

    answers: Mapping[str, Any] | Callable[[Any], Mapping[str, Any]]
    kind: Literal["comprehension", "attention"] = "comprehension"
    max_attempts: int = 2
    on_fail: Literal["screen_out", "continue"] = "screen_out"
    feedback: str = "Some answers are not right. Please read the instructions again and retry."

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"Check.max_attempts must be at least 1, got {self.max_attempts}")
        if not callable(self.answers) and not self.answers:
            raise ValueError("Check.answers must name at least one field")

    def answers_for(self, C: Any) -> Mapping[str, Any]:
        """The correct answers under the constants ``C`` of a study instance."""
        answers = self.answers(C) if callable(self.answers) else self.answers
        if not answers:
            raise ValueError("Check.answers must name at least one field")
        return answers

    def wrong_fields(self, data: Mapping[str, Any], C: Any = None) -> list[str]:
        """The checked fields of ``data`` whose value is not the correct answer under ``C``."""
        return sorted(name for name, correct in self.answers_for(C).items() if data.get(name) != correct)


@dataclass
class StepContext:
    """What a step's hooks see: the participant, the round, constants, earlier answers, the session."""

    participant_id: int
    external_id: str
    condition: str
    condition_params: dict[str, Any]
    round_number: int
    C: Any
    vars: dict[str, Any]
    responses: dict[str, list[dict[str, Any]]]
    study_config: dict[str, Any] = field(default_factory=dict)
    study_slug: str = ""
    step_index: int = 0
    # Opens (or returns) the database session of the transaction the hook runs in; the runtime
    # opens it only for a hook that asks for ``session``.
    session_of: Callable[[], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def session(self) -> Any:
        """The open database session of the transaction the hook runs in (None in read-only hooks
        such as vars_for_template when no write is under way). after_submit writes through it so
        its writes commit or roll back together with the stored answer."""
        return None if self.session_of is None else self.session_of()

    def last_response(self, step_name: str) -> dict[str, Any] | None:
        answers = self.responses.get(step_name) or []
        return answers[-1] if answers else None


class Step:
    """One page a participant sees. Subclass and set the class attributes; override hooks.

    Class attributes:
        kind: "form" (fields from ``Response``), "info" (text and a button), "consent"
            (text and an agree box), "completion" (terminal page with the completion code).
        title / body: markdown; ``body`` is formatted with ``vars_for_template``'s values.
        Response: pydantic model of the step's answer; its fields' ``title``, ``description``,
            bounds and ``Literal`` choices drive both validation and the widgets.
        repeat: how many times the step occurs in a row (rounds 1..repeat).
            When its choices or bounds follow the constants, override ``response_model(C)``.
        check: a comprehension or attention ``Check``.
        template: name of a custom renderer registered by the app (default: generic form).
        reopen: an earlier step (the instructions, say) whose text the page offers to read again here.
    """

    kind: ClassVar[StepKind] = "form"
    title: ClassVar[str] = ""
    body: ClassVar[str] = ""
    Response: ClassVar[type[BaseModel] | None] = None
    repeat: ClassVar[int] = 1
    check: ClassVar[Check | None] = None
    template: ClassVar[str | None] = None
    submit_label: ClassVar[str] = "Next"
    reopen: ClassVar[type[Step] | None] = None

    @classmethod
    def step_name(cls) -> str:
        return cls.__name__

    @classmethod
    def response_model(cls, C: Any) -> type[BaseModel] | None:  # noqa: ARG003 - hook signature
        """The answer schema under a study instance's constants ``C`` (default: ``Response``).

        Override when choices, bounds or titles follow the constants; return the same class for
        the same constants (cache it), since the page and the validation both call this.
        """
        return cls.Response

    @staticmethod
    def is_displayed(ctx: StepContext) -> bool:  # noqa: ARG004 - hook signature
        return True

    @staticmethod
    def counts_as_step(ctx: StepContext) -> bool:  # noqa: ARG004 - hook signature
        """Whether this step instance counts in "Step n of m" (default: yes). A follow-up round of
        the same item says no: it is part of its item's step and shows that step's number."""
        return True

    @classmethod
    def may_display(cls, ctx: StepContext) -> bool:
        """Whether this step may still be shown later, as far as is known now (the participant's
        "Step n of m" counts the steps ahead for which this holds). Default: ``is_displayed``. A
        step shown only after some answer (a follow-up round) says True until that answer rules it
        out, so that the count never grows: it only shrinks when a step is ruled out."""
        return cls.is_displayed(ctx)

    @staticmethod
    def on_enter(ctx: StepContext) -> None:  # noqa: ARG004 - hook signature
        """Runs in the write transaction that moves the participant to this step (entering the
        study, or submitting the step before), with ``ctx.session``: claim here what the page
        will show (an item of a queue), since ``vars_for_template`` runs in a read."""

    @staticmethod
    def vars_for_template(ctx: StepContext) -> dict[str, Any]:  # noqa: ARG004 - hook signature
        return {}

    @staticmethod
    def validate(ctx: StepContext, response: BaseModel) -> dict[str, str]:  # noqa: ARG004
        """Cross-field or context-dependent errors: field name -> message. Empty when valid."""
        return {}

    @staticmethod
    def after_submit(ctx: StepContext, response: BaseModel) -> None:  # noqa: ARG004
        """Runs in the same transaction that stores the response; may update ``ctx.vars``, and screen
        the participant out by setting ``ctx.vars[SCREENED_OUT_BECAUSE]`` to the reason."""


class ConsentResponse(BaseModel):
    agree: bool = Field(title="I have read the above and agree to take part")


class ConsentStep(Step):
    """Consent page: the participant must tick the agreement box to go on."""

    kind: ClassVar[StepKind] = "consent"
    Response: ClassVar[type[BaseModel] | None] = ConsentResponse
    submit_label: ClassVar[str] = "I agree, continue"

    @staticmethod
    def validate(ctx: StepContext, response: BaseModel) -> dict[str, str]:  # noqa: ARG004
        if not getattr(response, "agree", False):
            return {"agree": "You need to agree to take part before continuing."}
        return {}


class InfoStep(Step):
    """Text only: instructions, a worked example, a break."""

    kind: ClassVar[StepKind] = "info"


class CompletionStep(Step):
    """Terminal page: shows the completion code and the panel's return link."""

    kind: ClassVar[StepKind] = "completion"
    title: ClassVar[str] = "Thank you!"
    body: ClassVar[str] = "Your answers are saved."


@dataclass(frozen=True)
class StepInstance:
    """A step at one position of a protocol's expanded sequence."""

    index: int
    step: type[Step]
    round_number: int

    @property
    def name(self) -> str:
        return self.step.step_name()


AssignCondition = Callable[[Mapping[str, int], Any], str]


def least_filled(counts: Mapping[str, int], identity: Any = None) -> str:  # noqa: ARG001
    """psiTurk's rule: the condition with the fewest counted participants; ties by order."""
    return min(counts, key=lambda name: (counts[name], list(counts).index(name)))


@dataclass
class StudyProtocol:
    """A study's declaration, ready for the runtime."""

    name: str
    title: str
    description: str
    C: type[Constants]
    sequence: list[type[Step]]
    assign_condition: AssignCondition = least_filled
    bot: type | None = None
    module: types.ModuleType | None = None
    export_files: Callable[..., Mapping[str, bytes]] | None = None  # extra export files (study's own data)
    validate_constants: Callable[[Any], None] | None = None  # raises ValueError for unusable constants
    # Checks of the constants against stored data (a project they name exists), run with the
    # transaction that creates the study; raises ValueError.
    check_constants_in_database: Callable[[Any, Any], None] | None = None
    steps: list[StepInstance] = field(init=False)
    _constants_cache: dict[str, types.SimpleNamespace] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a study protocol needs C.NAME")
        if not self.sequence:
            raise ValueError(f"study {self.name!r}: step_sequence is empty")
        self.steps = []
        for step in self.sequence:
            if not (inspect.isclass(step) and issubclass(step, Step)):
                raise TypeError(f"study {self.name!r}: {step!r} in step_sequence is not a Step class")
            if step.repeat < 1:
                raise ValueError(f"study {self.name!r}: {step.__name__}.repeat must be >= 1")
            if step.kind in ("form", "consent") and step.Response is None:
                raise ValueError(f"study {self.name!r}: {step.__name__} is a form without Response")
            for round_number in range(1, step.repeat + 1):
                self.steps.append(StepInstance(len(self.steps), step, round_number))
        kinds = [inst.step.kind for inst in self.steps]
        if "completion" in kinds[:-1]:
            raise ValueError(f"study {self.name!r}: the completion step must come last")
        names = [s.step_name() for s in self.sequence]
        if len(set(names)) != len(names):
            raise ValueError(f"study {self.name!r}: step class names must be unique, got {names}")
        if not self.conditions:
            raise ValueError(f"study {self.name!r}: C.CONDITIONS is empty")

    @property
    def conditions(self) -> list[str]:
        return self.condition_names()

    def condition_names(self, constants: Any = None) -> list[str]:
        """Condition names of the protocol, or of a study instance's ``constants`` (it may override CONDITIONS)."""
        conditions = (constants or self.C).CONDITIONS
        return list(conditions.keys() if isinstance(conditions, Mapping) else conditions)

    def condition_params(self, condition: str, constants: Any = None) -> dict[str, Any]:
        """A condition's parameters, from the instance's ``constants`` when given (overrides apply)."""
        conditions = (constants or self.C).CONDITIONS
        if isinstance(conditions, Mapping):
            return dict(conditions.get(condition) or {})
        return {}

    def constants(self, overrides: Mapping[str, Any] | None = None) -> types.SimpleNamespace:
        """The study's constants with a study instance's overrides applied (treat as read-only)."""
        key = json.dumps(overrides or {}, sort_keys=True, default=repr)
        cached = self._constants_cache.get(key)
        if cached is not None:
            return cached  # hooks call this on every step: dir() over the class is not free
        values = {k: getattr(self.C, k) for k in dir(self.C) if k.isupper()}
        for name, value in (overrides or {}).items():
            if name not in values:
                raise KeyError(f"study {self.name!r} has no constant {name!r}")
            values[name] = value
        self._constants_cache[key] = namespace = types.SimpleNamespace(**values)
        return namespace

    def constants_for(self, study_config: Mapping[str, Any] | None) -> types.SimpleNamespace:
        """The constants of a study instance: its ``config["constants"]`` overrides applied."""
        return self.constants((study_config or {}).get("constants"))

    def checked_constants(self, overrides: Mapping[str, Any] | None) -> types.SimpleNamespace:
        """The constants with ``overrides`` applied, after checking them (raises ``ValueError`` naming the constant).

        An override must be of the default's JSON kind (a whole number where the default is one, a
        number where it is a float, text, true/false, a list or an object), then the study's own
        ``validate_constants`` hook judges the whole set.
        """
        if overrides is not None and not isinstance(overrides, Mapping):
            raise ValueError(f"constants must be an object of NAME: value, got {type(overrides).__name__}")
        for name, value in (overrides or {}).items():
            if not hasattr(self.C, name) or not name.isupper():
                raise ValueError(f"study {self.name!r} has no constant {echo(name)}")
            expected, kind = _json_kind(getattr(self.C, name)), _json_kind(value)
            # Same kind, except that a whole number may stand for a number (JSON writes 1.0 as 1).
            if expected is not None and kind != expected and (expected, kind) != ("a number", "a whole number"):
                raise ValueError(f"constant {name}: expected {expected}, got {kind or type(value).__name__}"
                                 f" {echo(value)}")
        constants = self.constants(overrides)
        if self.validate_constants is not None:
            try:
                self.validate_constants(constants)
            except (TypeError, AttributeError, KeyError) as exc:  # a value of the wrong shape deep inside
                raise ValueError(f"constants of the wrong shape: {type(exc).__name__}: {exc}") from None
        return constants

    def describe_fields(self, constants: Any = None) -> list[dict[str, Any]]:
        """The data dictionary: one row per response field of every step, under a study instance's ``constants``."""
        C = constants or self.constants()
        rows = []
        for step in self.sequence:
            model = step.response_model(C)
            if model is None:
                continue
            checked = step.check.answers_for(C) if step.check else {}
            schema = model.model_json_schema()
            for name, info in model.model_fields.items():
                prop = schema.get("properties", {}).get(name, {})
                constraints = {k: prop[k] for k in ("minimum", "maximum", "minLength", "maxLength", "enum") if k in prop}
                rows.append({
                    "step": step.step_name(),
                    "field": name,
                    "type": prop.get("type", prop.get("anyOf", "")) if not prop.get("enum") else "choice",
                    "label": info.title or name,
                    "description": info.description or "",
                    "required": info.is_required(),
                    "constraints": constraints,
                    "repeat": step.repeat,
                    "checked": name in checked,
                })
        return rows


def jsonable_constants(constants: types.SimpleNamespace) -> dict[str, Any]:
    """The constants that JSON can hold (classes, functions and the like left out), by name."""
    out = {}
    for name, value in sorted(vars(constants).items()):
        try:
            json.dumps(value)
        except TypeError:
            continue
        out[name] = value
    return out


def _json_kind(value: Any) -> str | None:
    """The JSON kind of a constant's value: what an override of it must be."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return None  # None or anything else: not checked here


def protocol_from_module(module: types.ModuleType) -> StudyProtocol:
    """Build a protocol from a study module that follows the layout in this module's docstring."""
    C = getattr(module, "C", None)
    if C is None or not (inspect.isclass(C) and issubclass(C, Constants)):
        raise ValueError(f"{module.__name__}: a study module needs `class C(Constants)`")
    sequence = getattr(module, "step_sequence", None)
    if not sequence:
        raise ValueError(f"{module.__name__}: a study module needs `step_sequence = [...]`")
    return StudyProtocol(
        name=C.NAME or module.__name__.rsplit(".", 1)[-1],
        title=C.TITLE or C.NAME,
        description=inspect.cleandoc(module.__doc__ or ""),
        C=C,
        sequence=list(sequence),
        assign_condition=getattr(module, "assign_condition", least_filled),
        bot=getattr(module, "PlayerBot", None),
        module=module,
        export_files=getattr(module, "export_files", None),
        validate_constants=getattr(module, "validate_constants", None),
        check_constants_in_database=getattr(module, "check_constants_in_database", None),
    )


def replace_constants(C: type[Constants], **overrides: Any) -> type[Constants]:
    """A subclass of ``C`` with some constants changed (benchmarks and tests build variants)."""
    return type(C.__name__, (C,), dict(overrides))


__all__ = [
    "SCREENED_OUT_BECAUSE", "Check", "CompletionStep", "ConsentStep", "Constants", "InfoStep", "Step", "StepContext",
    "StepInstance", "StudyProtocol", "jsonable_constants", "least_filled", "protocol_from_module",
    "replace_constants",
]
