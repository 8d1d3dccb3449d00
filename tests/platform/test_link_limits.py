"""A participant link cannot fill the disk or the participant table: every panel parameter is
checked, a study can cap its participants and name the Prolific study its links come from."""

from __future__ import annotations

import pytest

from engines.platform import runtime, study_admin
from engines.platform.panels import LinkError, parse_link

PROLIFIC_STUDY = "65f1a2b3c4d5e6f7a8b9c0d1"  # 24 hex digits, as Prolific's ids are


@pytest.mark.parametrize("key", ["STUDY_ID", "SESSION_ID"])
def test_an_oversized_prolific_parameter_is_refused_by_name(key):
    params = {"PROLIFIC_PID": "p1", key: "A" * 129}
    with pytest.raises(LinkError) as refused:
        parse_link(params)
    assert str(refused.value) == (f"The link's parameter '{key}' is not a valid id: use up to 128 letters, digits "
                                  "or _.@:- characters.")


@pytest.mark.parametrize("value", ["<script>", "a b", "x\ny", "é"])
def test_a_study_id_with_other_characters_is_refused(value):
    with pytest.raises(LinkError, match="'STUDY_ID' is not a valid id"):
        parse_link({"PROLIFIC_PID": "p1", "STUDY_ID": value})


def test_a_128_character_study_id_is_kept():
    identity = parse_link({"PROLIFIC_PID": "p1", "STUDY_ID": "s" * 128, "SESSION_ID": "x-1"})
    assert identity.params == {"STUDY_ID": "s" * 128, "SESSION_ID": "x-1"}


def test_an_oversized_mturk_hit_id_is_refused():
    with pytest.raises(LinkError, match="'hitId' is not a valid id"):
        parse_link({"workerId": "W1", "assignmentId": "A1", "hitId": "H" * 5000})


def test_an_overlong_turk_submit_address_is_refused():
    with pytest.raises(LinkError, match="turkSubmitTo must be"):
        parse_link({"workerId": "W1", "assignmentId": "A1",
                    "turkSubmitTo": "https://www.mturk.com/" + "a" * 500})


def test_unknown_parameters_are_not_stored(demo_study):
    runtime.enter("demo", {"pid": "g1", "junk": "J" * 100_000})
    from sqlmodel import select

    from engines.platform.db import read_session
    from engines.platform.models import Participant

    with read_session() as session:
        (row,) = session.exec(select(Participant)).all()
    assert row.panel_params == {} and "J" * 100 not in str(row.vars)


def test_a_capped_study_turns_away_new_ids_but_resumes_enrolled_ones(any_db):
    study_admin.create_study("capped", "demo_survey", config={"max_participants": 2})
    runtime.enter("capped", {"pid": "a"})
    runtime.enter("capped", {"pid": "b"})
    with pytest.raises(runtime.StudyClosed) as refused:
        runtime.enter("capped", {"pid": "c"})
    assert str(refused.value) == "This study has all the participants it needs; thank you for your interest."
    assert runtime.enter("capped", {"pid": "a"}).resumed  # someone enrolled comes back as before
    assert sum(p.total for p in study_admin.progress("capped")) == 2


def test_the_cap_counts_screened_out_participants(any_db):
    from engines.platform.db import write_transaction
    from engines.platform.models import Participant, ParticipantStatus

    study_admin.create_study("capped", "demo_survey", config={"max_participants": 1})
    first = runtime.enter("capped", {"pid": "a"})
    with write_transaction() as session:
        row = session.get(Participant, first.participant_id)
        row.status = ParticipantStatus.SCREENED_OUT
        session.add(row)
    with pytest.raises(runtime.StudyClosed):
        runtime.enter("capped", {"pid": "b"})


def test_a_study_bound_to_a_prolific_study_refuses_links_of_another(any_db):
    study_admin.create_study("bound", "demo_survey", config={"prolific_study_id": PROLIFIC_STUDY})
    for params in ({"PROLIFIC_PID": "p1", "STUDY_ID": "0" * 24}, {"PROLIFIC_PID": "p1"}):
        with pytest.raises(runtime.StudyClosed) as refused:
            runtime.enter("bound", params)
        assert str(refused.value) == ("This link belongs to a different Prolific study. Open the study from the "
                                      "link Prolific shows for it.")
    assert runtime.find_participant("bound", "p1") is None  # nothing stored
    assert not runtime.enter("bound", {"PROLIFIC_PID": "p1", "STUDY_ID": PROLIFIC_STUDY}).resumed


@pytest.mark.parametrize(("config", "message"), [
    ({"max_participants": 0}, "max_participants must be a whole number from 1 to 100,000, got 0."),
    ({"max_participants": 2.5}, "max_participants must be a whole number from 1 to 100,000, got 2.5."),
    ({"max_participants": True}, "max_participants must be a whole number from 1 to 100,000, got True."),
    ({"max_participants": 100_001}, "max_participants must be a whole number from 1 to 100,000, got 100001."),
    ({"prolific_study_id": "abc"}, "prolific_study_id must be Prolific's study id (24 letters and digits), got 'abc'."),
])
def test_bad_limits_are_refused_when_the_study_is_created(sqlite_db, config, message):
    with pytest.raises(runtime.StudyError) as refused:
        study_admin.create_study("s1", "demo_survey", config=config)
    assert str(refused.value) == message


def test_streamlit_serves_locally_with_small_limits_and_no_tracebacks():
    """What the server reads from .streamlit/config.toml (a participant never sees a traceback)."""
    import tomllib

    from engines.platform.settings import REPO_ROOT

    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"
    assert config["server"]["address"] == "127.0.0.1"
    assert config["server"]["maxUploadSize"] <= 50 and config["server"]["maxMessageSize"] <= 50
