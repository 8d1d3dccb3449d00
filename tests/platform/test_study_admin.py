"""Researcher-side study operations: creating studies (and what is refused), the study list, progress, links."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from sqlmodel import select

from engines.platform import auth, settings, study_admin
from engines.platform.db import write_transaction
from engines.platform.models import Participant, Study
from engines.platform.runtime import StudyError, UnknownStudy
from engines.platform.study_admin import ConditionProgress, StudySummary


def _add_participants(slug: str, condition: str, status: str, n: int) -> None:
    """Write ``n`` participant rows directly (no runtime call)."""
    with write_transaction() as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        start = len(session.exec(select(Participant).where(Participant.study_id == study.id)).all())
        for i in range(start, start + n):
            session.add(Participant(study_id=study.id, external_id=f"x{i}", panel="generic",
                                    condition=condition, status=status))


@pytest.fixture
def watched_study(any_db) -> str:
    """A demo_survey study (conditions plain, explained) with participants in every status:
    plain 1 active, 2 completed, 3 screened out; explained 1 completed, 1 screened out."""
    study_admin.create_study("watched", "demo_survey")
    _add_participants("watched", "plain", "active", 1)
    _add_participants("watched", "plain", "completed", 2)
    _add_participants("watched", "plain", "screened_out", 3)
    _add_participants("watched", "explained", "completed", 1)
    _add_participants("watched", "explained", "screened_out", 1)
    return "watched"


def test_progress_does_not_count_screened_out_participants_as_completed(watched_study):
    assert study_admin.progress(watched_study) == [
        ConditionProgress("plain", active=1, completed=2, screened_out=3),
        ConditionProgress("explained", active=0, completed=1, screened_out=1),
    ]


def test_progress_lists_every_condition_even_without_participants(any_db):
    study_admin.create_study("empty", "demo_survey")
    assert study_admin.progress("empty") == [
        ConditionProgress("plain", active=0, completed=0, screened_out=0),
        ConditionProgress("explained", active=0, completed=0, screened_out=0),
    ]


def test_study_list_counts_only_completed_participants_as_completed(watched_study):
    summary = next(s for s in study_admin.list_studies() if s.slug == watched_study)
    assert (summary.participants, summary.completed) == (8, 3)


def test_study_list_counts_each_study_apart(any_db):
    """By hand: "first" has 2 completed + 1 active, "second" 1 completed."""
    study_admin.create_study("first", "demo_survey")
    study_admin.create_study("second", "demo_survey")
    _add_participants("first", "plain", "completed", 2)
    _add_participants("first", "plain", "active", 1)
    _add_participants("second", "plain", "completed", 1)
    assert [(s.slug, s.participants, s.completed) for s in study_admin.list_studies()] == [
        ("first", 3, 2), ("second", 1, 1)]


def test_study_list_shows_a_new_study_with_no_participants(any_db):
    study_admin.create_study("fresh", "demo_survey", title="Fresh study", is_open=False)
    assert study_admin.list_studies() == [StudySummary("fresh", "demo_survey", "Fresh study", False, 0, 0)]


def test_study_list_is_ordered_by_creation_time(any_db):
    """"later" is inserted second but its creation time is set by hand to a day before "earlier"'s."""
    study_admin.create_study("earlier", "demo_survey")
    study_admin.create_study("later", "demo_survey")
    with write_transaction() as session:
        first = session.exec(select(Study).where(Study.slug == "earlier")).one()
        second = session.exec(select(Study).where(Study.slug == "later")).one()
        second.created_at = first.created_at - timedelta(days=1)
        session.add(second)
    assert [s.slug for s in study_admin.list_studies()] == ["later", "earlier"]


def test_progress_keeps_a_condition_the_study_no_longer_declares(any_db):
    """Participants of a condition demo_survey does not declare are still counted, after the declared ones."""
    study_admin.create_study("renamed", "demo_survey")
    _add_participants("renamed", "retired", "completed", 2)
    assert study_admin.progress("renamed") == [
        ConditionProgress("plain", active=0, completed=0, screened_out=0),
        ConditionProgress("explained", active=0, completed=0, screened_out=0),
        ConditionProgress("retired", active=0, completed=2, screened_out=0),
    ]


# --- Creating a study -------------------------------------------------------------------------


def test_a_study_without_a_title_takes_the_protocol_title(any_db):
    """demo_survey's C.TITLE is "Rating AI writing suggestions (demo)"."""
    study_admin.create_study("untitled", "demo_survey")
    assert study_admin.get_study("untitled").title == "Rating AI writing suggestions (demo)"


def test_a_given_title_is_kept(any_db):
    study_admin.create_study("titled", "demo_survey", title="Pilot, week 1")
    assert study_admin.get_study("titled").title == "Pilot, week 1"


def test_a_study_may_be_created_closed(any_db):
    study_admin.create_study("closed", "demo_survey", is_open=False)
    assert study_admin.get_study("closed").is_open is False


def test_a_study_records_who_created_it(any_db):
    rhea = auth.create_user("rhea", "correct horse", "researcher")
    study_admin.create_study("mine", "demo_survey", created_by=rhea.user_id)
    assert study_admin.get_study("mine").created_by == rhea.user_id


def test_unknown_config_keys_are_named_with_the_allowed_ones(sqlite_db):
    """Sorted, comma-separated; the allowed list starts with the three keys every study has had."""
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("odd", "demo_survey", config={"zeta": 1, "alpha": 2})
    assert re.fullmatch(r"Unknown study config keys: alpha, zeta "
                        r"\(allowed: completion_code, screened_out_code, constants(, [a-z_]+)*\)\.", str(exc.value))
    assert study_admin.list_studies() == []


def test_a_title_of_200_characters_is_accepted(sqlite_db):
    study_admin.create_study("long", "demo_survey", title="t" * 200)
    assert study_admin.get_study("long").title == "t" * 200


def test_a_longer_title_is_refused_with_its_length(sqlite_db):
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("long", "demo_survey", title="t" * 1234)
    assert str(exc.value) == ("The title has 1,234 characters; participants see it on every page, "
                              "so at most 200 are allowed.")


@pytest.mark.parametrize("key", ["completion_code", "screened_out_code"])
def test_a_code_too_long_for_the_link_is_refused_with_its_length(sqlite_db, key):
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("coded", "demo_survey", config={key: "A" * 41})
    assert str(exc.value) == (f"{key} must be 1 to 40 letters, digits, '-' or '_' (it goes into the panel's "
                              "completion link), got 41 characters.")


@pytest.mark.parametrize("key", ["completion_code", "screened_out_code"])
def test_a_code_with_a_space_is_refused(sqlite_db, key):
    with pytest.raises(StudyError, match=f"^{key} must be 1 to 40 letters.*got 7 characters\\.$"):
        study_admin.create_study("coded", "demo_survey", config={key: "PILOT 1"})


def test_a_code_that_is_not_text_is_refused_showing_the_value(sqlite_db):
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("coded", "demo_survey", config={"completion_code": 12345})
    assert str(exc.value).endswith("completion link), got 12345.")


def test_codes_of_40_letters_digits_dashes_and_underscores_are_kept(sqlite_db):
    config = {"completion_code": "A" * 40, "screened_out_code": "b-_9"}
    study_admin.create_study("coded", "demo_survey", config=config)
    assert study_admin.get_study("coded").config == config


def test_a_cap_of_100_000_participants_is_accepted(sqlite_db):
    """The largest cap allowed ("from 1 to 100,000")."""
    study_admin.create_study("capped", "demo_survey", config={"max_participants": 100_000})
    assert study_admin.get_study("capped").config == {"max_participants": 100_000}


def test_constants_that_remove_every_condition_are_refused(sqlite_db):
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("none", "demo_survey", config={"constants": {"CONDITIONS": {}}})
    assert str(exc.value) == "constants.CONDITIONS overrides the conditions with none: a study needs at least one."


def test_a_taken_slug_is_refused(any_db):
    study_admin.create_study("pilot", "demo_survey", title="first")
    with pytest.raises(StudyError) as exc:
        study_admin.create_study("pilot", "demo_survey", title="second")
    assert str(exc.value) == "A study called 'pilot' already exists."
    assert [s.title for s in study_admin.list_studies()] == ["first"]


def test_a_second_study_with_another_slug_is_created(any_db):
    study_admin.create_study("pilot", "demo_survey")
    study_admin.create_study("main", "demo_survey")
    assert [s.slug for s in study_admin.list_studies()] == ["pilot", "main"]


def test_constants_that_are_not_an_object_name_their_type():
    with pytest.raises(StudyError) as exc:
        study_admin.parse_constants("[1, 2]")
    assert str(exc.value) == 'Constants must be a JSON object like {"INTERACTIONS": 10}, got list.'


# --- Opening, closing and links ---------------------------------------------------------------


def test_closing_an_unknown_study_names_it(sqlite_db):
    with pytest.raises(UnknownStudy) as exc:
        study_admin.set_open("nope", False)
    assert str(exc.value) == "There is no study called 'nope'."


def test_participant_links_give_each_panel_its_placeholders(sqlite_db):
    """Written out from the panels' documented formats (Prolific's {{%...%}} placeholders, MTurk adds its own)."""
    study_admin.create_study("pilot", "demo_survey")
    assert study_admin.participant_links("pilot", "https://studies.example.org/") == {
        "prolific": "https://studies.example.org/?study=pilot"
                    "&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}",
        "mturk": "https://studies.example.org/?study=pilot",
        "generic": "https://studies.example.org/?study=pilot&pid=<PARTICIPANT_ID>",
    }


def test_participant_links_default_to_the_public_address(sqlite_db, monkeypatch):
    monkeypatch.setenv("HAI_PUBLIC_BASE_URL", "https://hai.example.org")
    settings.reset_settings()
    study_admin.create_study("pilot", "demo_survey")
    assert study_admin.participant_links("pilot")["generic"] == "https://hai.example.org/?study=pilot&pid=<PARTICIPANT_ID>"


def test_participant_links_follow_the_port_the_app_is_served_on(sqlite_db, monkeypatch, capsys):
    """`make run PORT=8600` in one terminal, `studies links` in another: the links name port 8600."""
    from engines.platform.__main__ import main
    from engines.platform.served_address import record_served_port

    monkeypatch.delenv("HAI_PUBLIC_BASE_URL", raising=False)
    settings.reset_settings()
    study_admin.create_study("pilot", "demo_survey")
    assert study_admin.participant_links("pilot")["generic"].startswith("http://localhost:8501/?")
    record_served_port(8600)
    main(["studies", "links", "pilot"])
    printed = capsys.readouterr().out
    assert "http://localhost:8600/?study=pilot&pid=<PARTICIPANT_ID>" in printed
    assert "8501" not in printed
    monkeypatch.setenv("HAI_PUBLIC_BASE_URL", "https://hai.example.org/")
    settings.reset_settings()
    assert study_admin.participant_links("pilot")["generic"].startswith("https://hai.example.org/?")


def test_participant_links_of_an_unknown_study_name_it(sqlite_db):
    study_admin.create_study("pilot", "demo_survey")
    with pytest.raises(UnknownStudy) as exc:
        study_admin.participant_links("nope", "https://studies.example.org")
    assert str(exc.value) == "There is no study called 'nope'."


# --- The engine argument ----------------------------------------------------------------------



def test_every_function_uses_the_engine_it_is_given(other_engine):
    other = {"engine": other_engine}
    study_admin.create_study("here", "demo_survey", title="default database")
    study_admin.create_study("there", "demo_survey", title="other database", **other)
    with write_transaction(other_engine) as session:  # "there" has the same id as "here" in its own database
        study = session.exec(select(Study).where(Study.slug == "there")).one()
        session.add(Participant(study_id=study.id, external_id="p1", panel="generic", condition="plain",
                                status="completed"))
    study_admin.set_open("there", False, **other)
    assert study_admin.get_study("there", **other).title == "other database"
    assert study_admin.list_studies(**other) == [StudySummary("there", "demo_survey", "other database", False, 1, 1)]
    assert [s.slug for s in study_admin.list_studies()] == ["here"]
    assert study_admin.progress("there", **other) == [
        ConditionProgress("plain", active=0, completed=1, screened_out=0),
        ConditionProgress("explained", active=0, completed=0, screened_out=0),
    ]
    assert study_admin.participant_links("there", "https://x.org", **other)["mturk"] == "https://x.org/?study=there"
    with pytest.raises(UnknownStudy):
        study_admin.get_study("there")


def _protocol_checking_the_database(seen: list):
    from typing import ClassVar

    from pydantic import BaseModel

    from engines.platform.study import Constants, Step, StudyProtocol

    class CheckedC(Constants):
        NAME = "db_checked"
        TITLE = "Checked"
        CONDITIONS: ClassVar = {"only": {}}
        PROJECT = "exists"

    class Answer(BaseModel):
        ok: bool = True

    class Only(Step):
        Response = Answer

    def check(C, session) -> None:
        # Reads through the creating transaction: the studies stored so far.
        seen.append((C.PROJECT, len(session.exec(select(Study)).all())))
        if C.PROJECT != "exists":
            raise ValueError(f"PROJECT names nothing called {C.PROJECT!r}")

    return StudyProtocol(name="db_checked", title="Checked", description="", C=CheckedC, sequence=[Only],
                         check_constants_in_database=check)


def test_constants_are_checked_against_the_database_in_the_creating_transaction(sqlite_db, monkeypatch):
    from engines.platform import registry

    seen: list = []
    registry.discover()
    monkeypatch.setitem(registry._PROTOCOLS, "db_checked", _protocol_checking_the_database(seen))  # noqa: SLF001
    study_admin.create_study("first", "db_checked")
    with pytest.raises(StudyError) as refused:
        study_admin.create_study("second", "db_checked", config={"constants": {"PROJECT": "nope"}})
    assert str(refused.value) == "Constants: PROJECT names nothing called 'nope'"
    assert seen == [("exists", 0), ("nope", 1)]  # the hook got the instance's constants and a live session
    assert [s.slug for s in study_admin.list_studies()] == ["first"]
