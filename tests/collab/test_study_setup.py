"""Setting up a collaboration study on its page: condition rows and rules become checked constants."""

from __future__ import annotations

import math

import pytest

from engines.collab.study import setup as study_setup
from engines.platform import runtime, study_admin
from engines.platform.runtime import StudyError
from studies.collab_shapes import C


def test_rows_round_trip_the_protocol_conditions():
    rows = study_setup.condition_rows(C.CONDITIONS)
    assert [r["name"] for r in rows] == list(C.CONDITIONS)
    assert study_setup.conditions_from_rows(rows) == C.CONDITIONS  # the shipped design, unchanged


def test_rows_drop_what_a_mode_ignores_and_blank_cells():
    rows = [{"name": "tight", "mode": "online", "alpha_harm": 0.02, "alpha_comp": 0.1, "eta_harm": 0.1,
             "eta_comp": math.nan, "q_harm_init": None, "q_comp_init": "", "calibration_interactions": 20.0},
            {"name": "frozen", "mode": "fixed", "alpha_harm": 0.05, "eta_harm": 0.3},
            {"name": "alone", "mode": "none", "alpha_harm": 0.5}]
    assert study_setup.conditions_from_rows(rows) == {
        "tight": {"mode": "online", "alpha_harm": 0.02, "alpha_comp": 0.1, "eta_harm": 0.1,
                  "calibration_interactions": 20},
        "frozen": {"mode": "fixed", "alpha_harm": 0.05}, "alone": {"mode": "none"}}


@pytest.mark.parametrize(("rows", "message"), [
    ([{"name": " ", "mode": "online"}], "condition row 1: the name is empty"),
    ([{"name": "a", "mode": "none"}, {"name": "a", "mode": "none"}], "row 2: the name 'a' is used twice"),
    ([{"name": "a", "mode": "sometimes"}], "mode must be one of online, fixed, none"),
    ([{"name": "a", "mode": "online", "alpha_harm": "lots"}], "alpha_harm must be a number"),
    ([{"name": "a", "mode": "online", "calibration_interactions": 2.5}], "must be a whole number"),
    ([], "at least one condition"),
])
def test_bad_rows_name_the_row(rows, message):
    with pytest.raises(ValueError, match=message):
        study_setup.conditions_from_rows(rows)


def test_created_study_runs_its_own_conditions_and_rules(sqlite_db):
    conditions = {"tight": {"mode": "online", "alpha_harm": 0.02, "alpha_comp": 0.1, "calibration_interactions": 0},
                  "alone": {"mode": "none"}}
    constants = study_setup.study_constants(conditions=conditions, protect_rule="held_for_rounds",
                                            protect_params={"rounds": 2}, supply_rule="human_lacks", supply_params={},
                                            interactions=3, rounds=2, feedback="none")
    study_setup.create_collab_study("designed", constants)
    assert [runtime.enter("designed", {"pid": f"p{i}"}).condition for i in range(2)] == ["tight", "alone"]
    with pytest.raises(StudyError, match="PROTECT_RULE"):
        study_setup.create_collab_study("broken", {**constants, "PROTECT_RULE": {"name": "no_such_rule"}})
    assert [s.slug for s in study_admin.list_studies()] == ["designed"]


def test_setup_page_creates_a_study_with_a_picked_rule(sqlite_db):
    from tests.apptest_driver import page_as

    at = page_as("collab_setup", "researcher")
    at.selectbox(key="setup-protect").set_value("held_for_rounds").run()
    at.number_input(key="setup-protect-rounds").set_value(2).run()
    at.text_input(key="setup-slug").input("from-dashboard")
    at.number_input(key="setup-interactions").set_value(5)
    next(b for b in at.form_submit_button if b.label == "Create study").click().run()
    assert not at.exception and not at.error
    constants = study_admin.get_study("from-dashboard").config["constants"]
    assert constants["PROTECT_RULE"] == {"name": "held_for_rounds", "params": {"rounds": 2}}
    assert constants["INTERACTIONS"] == 5 and set(constants["CONDITIONS"]) == set(C.CONDITIONS)
    at.text_input(key="setup-slug").input("Bad Name!")
    next(b for b in at.form_submit_button if b.label == "Create study").click().run()
    assert any("not a valid study name" in e.value for e in at.error)
