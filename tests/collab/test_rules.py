"""Rules: registry contract, built-ins on hand-made prefixes, custom rules, and the UI schema."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engines.collab import rules
from engines.collab.rules import (
    FAST_CODES,
    Prefix,
    Rule,
    available_rules,
    fast_encoding,
    get_rule_spec,
    make_rule,
    register_rule,
    rule_schema,
    unregister_rule,
)

K = 6
BUILTINS = ("human_holds", "human_lacks", "human_top_answer", "held_for_rounds", "supply_when_low_confidence")


def mask(*labels: int, k: int = K) -> np.ndarray:
    out = np.zeros(k, dtype=bool)
    out[list(labels)] = True
    return out


def prefix(sets: list[tuple[int, ...]], answers: list[int], confidences: list[float]) -> Prefix:
    rounds = len(sets)
    return Prefix(np.array([mask(*s) for s in sets]), np.array(answers), np.array(confidences, dtype=float),
                  np.zeros((rounds - 1, K), dtype=bool))


@pytest.fixture
def custom_rules():
    names = []
    yield names
    for name in names:
        unregister_rule(name)


# Registry contract

def test_builtins_are_registered_with_docstrings_and_fast_codes():
    assert set(BUILTINS) <= set(available_rules())
    assert set(FAST_CODES) == set(BUILTINS)
    for name in BUILTINS:
        spec = get_rule_spec(name)
        assert spec.builtin and spec.doc and spec.fn.__doc__
    assert "human_holds" in available_rules("protect") and "human_lacks" not in available_rules("protect")
    assert "supply_when_low_confidence" in available_rules("supply")


def test_module_docstring_states_prefix_domination():
    assert "label-wise dominates" in rules.__doc__
    assert "never evaluates code" in rules.__doc__


def test_schema_describes_typed_parameters_for_a_ui():
    schema = rule_schema("held_for_rounds")
    assert schema["role"] == "protect" and schema["builtin"] is True
    assert schema["params"] == [{"name": "rounds", "type": "int", "default": 2, "min": 1,
                                 "help": "consecutive rounds (ending now) a label must be held"}]
    low = rule_schema("supply_when_low_confidence")["params"][0]
    assert (low["name"], low["type"], low["default"], low["min"], low["max"]) == ("threshold", "float", 0.5, 0.0, 1.0)
    assert rule_schema("human_holds")["params"] == []
    json.dumps([rule_schema(name) for name in available_rules()])  # JSON-ready


@pytest.mark.parametrize("bad, message", [
    (dict(rounds=0), "rounds must be an integer >= 1"),
    (dict(rounds=1.5), "rounds must be an integer >= 1"),
    (dict(r=2), "has no parameter"),
])
def test_bad_parameters_raise_value_error(bad, message):
    with pytest.raises(ValueError, match=message):
        make_rule("held_for_rounds", **bad)


def test_bad_names_and_thresholds_raise():
    with pytest.raises(ValueError, match="unknown rule 'nope'"):
        make_rule("nope")
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\]"):
        make_rule("supply_when_low_confidence", threshold=1.5)


def test_rule_dict_round_trip():
    rule = make_rule("held_for_rounds", rounds=3)
    data = json.loads(json.dumps(rule.to_dict()))
    assert data == {"name": "held_for_rounds", "params": {"rounds": 3}}
    assert Rule.from_dict(data) == rule


# Built-ins on hand-made prefixes

def test_default_rules_split_labels_by_the_current_set():
    z = prefix([(1, 2), (2, 3)], answers=[1, 3], confidences=[0.4, 0.7])
    np.testing.assert_array_equal(make_rule("human_holds")(z), mask(2, 3))
    np.testing.assert_array_equal(make_rule("human_lacks")(z), ~mask(2, 3))
    np.testing.assert_array_equal(make_rule("human_top_answer")(z), mask(3))


def test_held_for_rounds_needs_consecutive_rounds_ending_now():
    rule = make_rule("held_for_rounds", rounds=2)
    np.testing.assert_array_equal(rule(prefix([(1, 2)], [1], [0.5])), mask())  # round 1 < r: nothing yet
    np.testing.assert_array_equal(rule(prefix([(1, 2), (2, 3)], [2, 2], [0.5, 0.5])), mask(2))
    # 2 was held in rounds 1-2 but dropped in round 3; 3 in rounds 2-3
    np.testing.assert_array_equal(rule(prefix([(1, 2), (2, 3), (3, 4)], [2, 3, 3], [0.5] * 3)), mask(3))
    np.testing.assert_array_equal(make_rule("held_for_rounds", rounds=1)(prefix([(4,)], [4], [0.5])), mask(4))


def test_supply_when_low_confidence_is_strictly_below_the_threshold():
    rule = make_rule("supply_when_low_confidence", threshold=0.5)
    np.testing.assert_array_equal(rule(prefix([(1,)], [1], [0.49])), ~mask(1))
    np.testing.assert_array_equal(rule(prefix([(1,)], [1], [0.5])), mask())  # confident: all false
    np.testing.assert_array_equal(rule(prefix([(1,), (2,)], [1, 2], [0.1, 0.9])), mask())  # latest round counts


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_builtin_protect_rules_stay_inside_the_set_and_supply_rules_outside(data):
    rounds = data.draw(st.integers(1, 4))
    sets = data.draw(st.lists(st.lists(st.booleans(), min_size=K, max_size=K), min_size=rounds, max_size=rounds))
    sets = np.array(sets)
    answers = np.array([data.draw(st.integers(0, K - 1)) for _ in range(rounds)])
    sets[np.arange(rounds), answers] = True  # the answer is always in the set
    confidences = np.array(data.draw(st.lists(st.floats(0, 1), min_size=rounds, max_size=rounds)))
    z = Prefix(sets, answers, confidences, np.zeros((rounds - 1, K), dtype=bool))
    current = sets[-1]
    for name in ("human_holds", "human_top_answer", "held_for_rounds"):
        assert not (make_rule(name)(z) & ~current).any()
    for name in ("human_lacks", "supply_when_low_confidence"):
        assert not (make_rule(name)(z) & current).any()


def test_prefix_validates_shapes():
    with pytest.raises(ValueError, match="ai_sets must have shape"):
        Prefix(np.ones((2, K), bool), np.array([0, 1]), np.array([0.5, 0.5]), np.zeros((2, K), bool))
    with pytest.raises(ValueError, match="answers must have shape"):
        Prefix(np.ones((2, K), bool), np.array([0]), np.array([0.5, 0.5]), np.zeros((1, K), bool))
    assert Prefix.first_round(mask(1), 1, 0.5).round == 1


# Custom rules

def test_custom_rule_registers_like_a_builtin(custom_rules):
    @dataclass(frozen=True)
    class NearParams:
        width: int = field(default=1, metadata={"help": "protect answer ± width", "min": 0})

    @register_rule("test_near_answer", params=NearParams, role="protect")
    def near_answer(prefix: Prefix, params: NearParams) -> np.ndarray:
        """Protect the labels within ``width`` of the human's current answer."""
        return np.abs(np.arange(prefix.n_labels) - prefix.answers[-1]) <= params.width

    custom_rules.append("test_near_answer")
    rule = make_rule("test_near_answer", width=1)
    np.testing.assert_array_equal(rule(prefix([(3,)], [3], [0.9])), mask(2, 3, 4))
    assert rule_schema("test_near_answer")["builtin"] is False
    assert "test_near_answer" in available_rules("protect")
    with pytest.raises(ValueError, match="custom rule: it runs on the reference path only"):
        fast_encoding(rule)
    def other(prefix, params):
        """Another rule under a taken name."""

    with pytest.raises(ValueError, match="already registered"):
        register_rule("test_near_answer", params=NearParams)(other)


def test_registration_contract_is_enforced(custom_rules):
    def undocumented(prefix, params):
        return np.zeros(prefix.n_labels, bool)

    with pytest.raises(ValueError, match="needs a docstring"):
        register_rule("test_undocumented")(undocumented)

    @dataclass(frozen=True)
    class NoDefault:
        width: int

    with pytest.raises(ValueError, match="needs a default"):
        register_rule("test_no_default", params=NoDefault)
    with pytest.raises(ValueError, match="role must be one of"):
        register_rule("test_role", role="harm")
    with pytest.raises(ValueError, match="built-in rule"):
        unregister_rule("human_holds")


def test_rule_output_shape_is_checked(custom_rules):
    @register_rule("test_wrong_shape")
    def wrong_shape(prefix, params):
        """Returns the wrong number of labels."""
        return np.zeros(prefix.n_labels + 1, bool)

    custom_rules.append("test_wrong_shape")
    with pytest.raises(ValueError, match="returned shape"):
        make_rule("test_wrong_shape")(prefix([(1,)], [1], [0.5]))


def test_fast_encoding_of_builtins():
    assert fast_encoding(make_rule("held_for_rounds", rounds=3)) == (FAST_CODES["held_for_rounds"], 3.0)
    assert fast_encoding(make_rule("supply_when_low_confidence", threshold=0.25)) == (4, 0.25)
    assert fast_encoding(make_rule("human_holds")) == (0, 0.0)
