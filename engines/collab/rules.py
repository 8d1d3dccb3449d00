"""Harm and complementarity label rules over the interaction prefix, and their registry.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method,
"Interactions, scores and rules".
The researcher says what *harm* and *complementarity* mean with two per-round label rules:

- ``protect`` r^H_{t,k}(y): the AI must not drop y (counterfactual harm = dropping a protected truth);
- ``supply``  r^C_{t,k}(y): the AI should surface y (complementarity failure = missing a supplied truth).

A rule maps the prefix z_{t,k} (the human's belief sets, answers and confidences for rounds
1..k and the AI sets shown in rounds 1..k-1) to a boolean mask over the K labels for round k.

**Prefix domination.** A rule must be computable from the prefix only. A requirement stated on
the whole interaction (e.g. "protect the human's *final* answer") is not; replace it by a prefix
surrogate r̂_{t,k} that label-wise dominates it, r̂_{t,k}(y) >= r_t(y) for every y and k. The
controlled event (an activated omission under r̂) then contains the event of interest, so the
guarantee carries over to the original requirement.

Rules are registered by name with ``@register_rule(name, params=..., role=...)``; the built-ins
below use the same decorator. A study module registers its own rules the same way when it is
imported. Each rule has a docstring and a typed parameter dataclass (``rule_schema`` describes it),
so a UI can offer the registered names and render their parameters as widgets: the UI picks and
parameterises registered rules and never evaluates code typed into it.

All built-in protect rules return subsets of the human's current set H_{t,k} and all built-in
supply rules subsets of its complement, so any pair of built-ins is disjoint; the controller
accepts overlapping custom pairs too (see ``engines.collab.controller.prediction_set``).

Custom rules run on the simulator's reference path only; the fast (compiled) path knows the
built-ins by their ``FAST_CODES``.

Example::

    @dataclass(frozen=True)
    class NearAnswerParams:
        width: int = field(default=1, metadata={"help": "protect answer ± width", "min": 0})

    @register_rule("near_answer", params=NearAnswerParams, role="protect")
    def near_answer(prefix: Prefix, params: NearAnswerParams) -> np.ndarray:
        \"\"\"Protect the labels within ``width`` of the human's current answer.\"\"\"
        labels = np.arange(prefix.n_labels)
        return np.abs(labels - prefix.answers[-1]) <= params.width

    rule = make_rule("near_answer", width=2)
    mask = rule(prefix)  # (K,) bool
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from engines.platform.files import echo
from engines.platform.registries import Registry

Role = Literal["protect", "supply", "either"]
ROLES = ("protect", "supply", "either")

# Integer codes of the built-ins in the compiled simulator (engines.collab.loop_fast._kernel).
FAST_CODES = {
    "human_holds": 0,
    "human_lacks": 1,
    "human_top_answer": 2,
    "held_for_rounds": 3,
    "supply_when_low_confidence": 4,
}


# PREFIX

@dataclass(frozen=True)
class Prefix:
    """What the AI may look at when it builds the round-k set of one interaction (z_{t,k}).

    Args:
        belief_sets: (k, K) bool, H_{t,1..k}: the labels the human considers plausible per round.
        answers: (k,) int, the human's single answer (top label) per round.
        confidences: (k,) float in [0, 1], the confidence the human reported per round.
        ai_sets: (k-1, K) bool, the AI sets C_{t,1..k-1} already shown (the round-k set is what
            is being built, so it cannot be part of its own prefix).
    """

    belief_sets: np.ndarray
    answers: np.ndarray
    confidences: np.ndarray
    ai_sets: np.ndarray

    def __post_init__(self):
        if self.belief_sets.ndim != 2 or self.belief_sets.shape[0] < 1:
            raise ValueError(f"belief_sets must be (k, K) with k >= 1, got shape {self.belief_sets.shape}")
        k, n_labels = self.belief_sets.shape
        if self.answers.shape != (k,):
            raise ValueError(f"answers must have shape ({k},), got {self.answers.shape}")
        if self.confidences.shape != (k,):
            raise ValueError(f"confidences must have shape ({k},), got {self.confidences.shape}")
        if self.ai_sets.shape != (k - 1, n_labels):
            raise ValueError(f"ai_sets must have shape ({k - 1}, {n_labels}) in round {k}, got {self.ai_sets.shape}")

    @property
    def round(self) -> int:
        """k, the current round (1-based)."""
        return self.belief_sets.shape[0]

    @property
    def n_labels(self) -> int:
        return self.belief_sets.shape[1]

    @classmethod
    def first_round(cls, belief_set: np.ndarray, answer: int, confidence: float) -> Prefix:
        """The prefix of round 1: the human's own answer before any AI set."""
        belief_set = np.asarray(belief_set, dtype=bool)
        return cls(belief_set[None, :], np.array([answer]), np.array([confidence], dtype=float),
                   np.zeros((0, belief_set.shape[0]), dtype=bool))


# REGISTRY

@dataclass(frozen=True)
class NoParams:
    """A rule without parameters."""


@dataclass(frozen=True)
class RuleSpec:
    """A registered rule: the function, its parameter dataclass and the role it is meant for."""

    name: str
    fn: Callable[[Prefix, Any], np.ndarray]
    params_cls: type
    role: Role
    doc: str
    builtin: bool


_RULES: Registry[RuleSpec] = Registry("collab", "study rules")


def register_rule(name: str, *, params: type = NoParams, role: Role = "either", replace: bool = False):
    """Decorator registering ``fn(prefix, params) -> (K,) bool mask`` as the rule ``name``.

    Args:
        name: registry key (what a study config or the UI names).
        params: a dataclass whose fields (with defaults, and optional ``metadata`` keys ``help``,
            ``min``, ``max``) are the rule's parameters; its ``__post_init__`` validates them.
        role: "protect", "supply" or "either" — a hint for the UI; any rule may fill either slot.
        replace: allow re-registering ``name`` (e.g. a study module reloaded).
    """
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {echo(role)}")
    if not dataclasses.is_dataclass(params):
        raise ValueError(f"params of rule {echo(name)} must be a dataclass, got {echo(params)}")
    for f in dataclasses.fields(params):
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"parameter {echo(f.name)} of rule {echo(name)} needs a default (the UI starts from it)")

    def decorator(fn):
        doc = inspect.getdoc(fn)
        if not doc:
            raise ValueError(f"rule {echo(name)} needs a docstring (the UI shows it)")
        if name in _RULES and not replace and _RULES[name].fn is not fn:
            raise ValueError(f"a rule named {echo(name)} is already registered")
        _RULES.add(name, RuleSpec(name=name, fn=fn, params_cls=params, role=role, doc=doc,
                                  builtin=fn.__module__ == __name__), doc.splitlines()[0], replace=True)
        return fn

    return decorator


def unregister_rule(name: str) -> None:
    """Remove a custom rule (tests, reloaded study modules); built-ins stay."""
    spec = _RULES.get(name)
    if spec is not None and spec.builtin:
        raise ValueError(f"{echo(name)} is a built-in rule and cannot be unregistered")
    _RULES.remove(name)


def _discover() -> None:
    # Studies register rules of their own when imported: look them up the way the CLI, a job worker
    # and the app all do (engines.platform.discovery), so each sees the same names.
    from engines.platform.discovery import discover_all

    discover_all()


def get_rule_spec(name: str) -> RuleSpec:
    if name not in _RULES:
        _discover()
    if name not in _RULES:
        raise ValueError(f"unknown rule {echo(name)} (registered: {', '.join(sorted(_RULES))})")
    return _RULES[name]


def available_rules(role: Role | None = None) -> list[str]:
    """Registered rule names (study rules included), optionally those meant for ``role`` (plus the "either" ones)."""
    _discover()
    return sorted(n for n, s in _RULES.items() if role is None or s.role in (role, "either"))


def rule_schema(name: str) -> dict:
    """A JSON-ready description of a rule for a UI: name, role, docstring and typed parameters."""
    spec = get_rule_spec(name)
    params = []
    for f in dataclasses.fields(spec.params_cls):
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        params.append({"name": f.name, "type": kind, "default": f.default,
                       **{k: f.metadata[k] for k in ("help", "min", "max") if k in f.metadata}})
    return {"name": spec.name, "role": spec.role, "doc": spec.doc, "builtin": spec.builtin, "params": params}


@dataclass(frozen=True)
class Rule:
    """A registered rule bound to its parameters; call it on a prefix to get the round's mask."""

    name: str
    params: Any = None

    def __post_init__(self):
        spec = get_rule_spec(self.name)
        if self.params is None:
            object.__setattr__(self, "params", spec.params_cls())
        elif not isinstance(self.params, spec.params_cls):
            raise ValueError(f"rule {echo(self.name)} takes {spec.params_cls.__name__}, "
                             f"got {type(self.params).__name__}")

    @property
    def spec(self) -> RuleSpec:
        return get_rule_spec(self.name)

    def __call__(self, prefix: Prefix) -> np.ndarray:
        mask = np.asarray(self.spec.fn(prefix, self.params))
        if mask.shape != (prefix.n_labels,):
            raise ValueError(f"rule {echo(self.name)} returned shape {mask.shape}, expected ({prefix.n_labels},)")
        return mask.astype(bool, copy=False)

    def to_dict(self) -> dict:
        return {"name": self.name, "params": dataclasses.asdict(self.params)}

    @classmethod
    def from_dict(cls, data: dict) -> Rule:
        return make_rule(data["name"], **data.get("params", {}))


def make_rule(name: str, **params: Any) -> Rule:
    """Bind the registered rule ``name`` to ``params`` (validated by its parameter dataclass)."""
    spec = get_rule_spec(name)
    known = {f.name for f in dataclasses.fields(spec.params_cls)}
    unknown = set(params) - known
    if unknown:
        raise ValueError(f"rule {echo(name)} has no parameter(s) {sorted(unknown)} (known: {sorted(known) or 'none'})")
    try:
        bound = spec.params_cls(**params)
    except TypeError as exc:  # wrong value types surface here for dataclasses without validation
        raise ValueError(f"bad parameters for rule {echo(name)}: {exc}") from None
    return Rule(name, bound)


def fast_encoding(rule: Rule) -> tuple[int, float]:
    """(code, parameter) of a built-in rule for the compiled simulator; ValueError for custom rules."""
    if rule.name not in FAST_CODES or not rule.spec.builtin:
        raise ValueError(f"rule {echo(rule.name)} is a custom rule: it runs on the reference path only "
                         "(engine='reference')")
    values = dataclasses.astuple(rule.params)
    return FAST_CODES[rule.name], float(values[0]) if values else 0.0


# BUILT-IN RULES

@register_rule("human_holds", role="protect")
def human_holds(prefix: Prefix, params: NoParams) -> np.ndarray:
    """Protect every label the human currently holds: r^H_{t,k}(y) = 1{y ∈ H_{t,k}} (the default).

    Counterfactual harm is then "the AI set dropped a truth the human already had".
    """
    return prefix.belief_sets[-1].copy()


@register_rule("human_lacks", role="supply")
def human_lacks(prefix: Prefix, params: NoParams) -> np.ndarray:
    """Ask the AI to supply every label the human does not hold: r^C_{t,k}(y) = 1{y ∉ H_{t,k}} (the default).

    Complementarity failure is then "the truth was missing from the human's set and the AI did not surface it".
    """
    return ~prefix.belief_sets[-1]


@register_rule("human_top_answer", role="protect")
def human_top_answer(prefix: Prefix, params: NoParams) -> np.ndarray:
    """Protect only the human's current single answer (top-1), not the rest of their set."""
    mask = np.zeros(prefix.n_labels, dtype=bool)
    mask[prefix.answers[-1]] = True
    return mask


@dataclass(frozen=True)
class HeldForRoundsParams:
    rounds: int = field(default=2, metadata={"help": "consecutive rounds (ending now) a label must be held",
                                             "min": 1})

    def __post_init__(self):
        if not isinstance(self.rounds, int | np.integer) or isinstance(self.rounds, bool) or self.rounds < 1:
            raise ValueError(f"held_for_rounds: rounds must be an integer >= 1, got {echo(self.rounds)}")


@register_rule("held_for_rounds", params=HeldForRoundsParams, role="protect")
def held_for_rounds(prefix: Prefix, params: HeldForRoundsParams) -> np.ndarray:
    """Protect labels the human has held in each of the last ``rounds`` rounds (rounds k-r+1..k).

    Before round r nothing has been held long enough, so nothing is protected: a label the human
    only just adopted is not yet treated as "theirs".
    """
    r = params.rounds
    if prefix.round < r:
        return np.zeros(prefix.n_labels, dtype=bool)
    return prefix.belief_sets[-r:].all(axis=0)


@dataclass(frozen=True)
class LowConfidenceParams:
    threshold: float = field(default=0.5, metadata={"help": "confidence below which the AI must supply",
                                                    "min": 0.0, "max": 1.0})

    def __post_init__(self):
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"supply_when_low_confidence: threshold must be in [0, 1], got {echo(self.threshold)}")


@register_rule("supply_when_low_confidence", params=LowConfidenceParams, role="supply")
def supply_when_low_confidence(prefix: Prefix, params: LowConfidenceParams) -> np.ndarray:
    """Require supply (of the labels the human lacks) only when the human's confidence is below ``threshold``.

    With confidence >= threshold the mask is all false: a confident human is not owed complementarity.
    """
    if prefix.confidences[-1] < params.threshold:
        return ~prefix.belief_sets[-1]
    return np.zeros(prefix.n_labels, dtype=bool)
