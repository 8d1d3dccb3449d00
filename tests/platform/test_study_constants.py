"""A study instance's constants: typed overrides, the study's own check, and conditions that follow them."""

from __future__ import annotations

import pytest

from engines.platform import runtime, study_admin
from engines.platform.registry import all_protocols
from engines.platform.runtime import StudyError


def test_every_protocol_accepts_its_own_defaults():
    for name, protocol in all_protocols().items():
        protocol.checked_constants(None)  # raises if a study ships constants it cannot run with
        assert study_admin.default_constants(name)["NAME"] == protocol.C.NAME


@pytest.mark.parametrize(("constants", "message"), [
    ({"NOPE": 1}, "has no constant 'NOPE'"),
    ({"INTERACTIONS": "ten"}, "constant INTERACTIONS: expected a whole number, got text 'ten'"),
    ({"INTERACTIONS": 2.5}, "constant INTERACTIONS: expected a whole number"),
    ({"INTERACTIONS": 99}, "INTERACTIONS must be 1..20"),
    ({"ROUNDS": 4}, "ROUNDS must be 1..3"),
    ({"FEEDBACK": "sometimes"}, "FEEDBACK must be 'truth' or 'none'"),
    ({"SUPPLY_RULE": {"name": "supply_when_low_confidence", "params": {"threshold": 7}}}, "SUPPLY_RULE"),
    ({"CONDITIONS": {"online": {"mode": "online", "alpha_harm": 1.5}}}, "CONDITIONS['online']: alpha_harm"),
    ({"CONDITIONS": {"online": {"mode": "online", "alpha_hram": 0.1}}}, "unknown keys ['alpha_hram']"),
    ({"CONDITIONS": {"a": {"mode": "sometimes"}}}, "mode must be 'online', 'fixed' or 'none'"),
    ({"CONDITIONS": {"a": {"mode": "online", "calibration_interactions": -3}}}, "calibration_interactions"),
    ({"CONDITIONS": {}}, "a study needs at least one"),
    ({"ROUNDS": 1}, "needs ROUNDS >= 2"),  # round 1 is the human alone: no AI set would ever show
    ({"DIFFICULTY": ["a", "b"]}, "DIFFICULTY must be [low, high]"),
    ({"DIFFICULTY": [0.2]}, "DIFFICULTY must be [low, high]"),
    ({"EXAMPLE_DIFFICULTY": 5.0}, "EXAMPLE_DIFFICULTY must be a number in [0, 1]"),
    ({"CONFIDENCE_MAX": 7}, "CONFIDENCE_MAX must match"),
    ({"IMAGE_SCALE": 0}, "IMAGE_SCALE must be a whole number"),
    ({"MAX_ATTENTION_FAILURES": -1}, "MAX_ATTENTION_FAILURES must be >= 0"),
    ({"CONDITIONS": {"a": 5}}, "CONDITIONS['a'] must be an object"),
    ({"CONDITIONS": {"a": ["mode"]}}, "CONDITIONS['a'] must be an object"),
    ({"PROTECT_RULE": {"name": "human_holds", "params": [1]}}, "PROTECT_RULE must be"),
])
def test_bad_constants_are_refused_with_the_reason(sqlite_db, constants, message):
    with pytest.raises(StudyError, match="Constants|conditions") as exc:
        study_admin.create_study("bad", "collab_shapes", config={"constants": constants})
    assert message in str(exc.value)
    assert study_admin.list_studies() == []


def test_a_number_may_override_a_float_and_conditions_follow_the_instance(sqlite_db):
    conditions = {"tight": {"mode": "online", "alpha_harm": 0.02, "alpha_comp": 0.2, "q_harm_init": 1,
                            "calibration_interactions": 0},
                  "none": {"mode": "none"}}
    study_admin.create_study("custom", "collab_shapes", config={"constants": {"CONDITIONS": conditions}})
    entered = [runtime.enter("custom", {"pid": f"p{i}"}).condition for i in range(4)]
    assert entered == ["tight", "none", "tight", "none"]  # balanced over the instance's conditions
    assert [p.condition for p in study_admin.progress("custom")] == ["tight", "none"]


def test_parse_constants_reports_line_and_column():
    assert study_admin.parse_constants("  ") == {}
    assert study_admin.parse_constants('{"A": [1, 2]}') == {"A": [1, 2]}
    with pytest.raises(StudyError, match="line 2, column 7"):
        study_admin.parse_constants('{"A": 1,\n "B": }')
    with pytest.raises(StudyError, match="must be a JSON object"):
        study_admin.parse_constants("[1, 2]")


def test_no_ai_study_may_have_a_single_round(sqlite_db):
    study_admin.create_study("alone", "collab_shapes",
                             config={"constants": {"ROUNDS": 1, "CONDITIONS": {"no_ai": {"mode": "none"}}}})
    study = study_admin.get_study("alone")
    assert study.config["constants"]["ROUNDS"] == 1


def test_export_config_lists_the_instance_conditions(sqlite_db):
    import json

    from engines.platform.export import export_study

    study_admin.create_study("two", "collab_shapes",
                             config={"constants": {"CONDITIONS": {"x": {"mode": "none"}, "y": {"mode": "none"}}}})
    config = json.loads(export_study("two").files["study_config.json"])
    assert config["protocol"]["conditions"] == ["x", "y"]
