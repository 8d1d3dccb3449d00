"""The study runtime: resume, idempotent submissions, checks, screen-out, timings, bad input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from engines.platform import models, runtime, settings, study_admin
from engines.platform.bots import stored_responses
from engines.platform.db import read_session, write_transaction
from engines.platform.models import Participant, StepAttempt, StepResponse, Study
from engines.platform.panels import LinkError
from engines.platform.registry import get_protocol

LINK = {"PROLIFIC_PID": "p1", "STUDY_ID": "s", "SESSION_ID": "x"}


def _row_counts():
    with read_session() as session:
        return (len(session.exec(select(Participant)).all()), len(session.exec(select(StepResponse)).all()),
                len(session.exec(select(StepAttempt)).all()))


def _advance_to(pid: int, step_name: str) -> runtime.StepView:
    answers = {
        "Consent": {"agree": True}, "Instructions": {},
        "Comprehension": {"task": "Rate how helpful each suggestion is"},
        "Rating": {"helpfulness": 4}, "Attention": {"answer": "Disagree"},
    }
    view = runtime.current_view(pid)
    while view.step.name != step_name:
        runtime.submit(pid, view.step.index, answers[view.step.name])
        view = runtime.current_view(pid)
    return view


def test_enter_creates_once_and_resumes_with_answers(demo_study):
    first = runtime.enter(demo_study, LINK)
    assert not first.resumed and first.condition in ("plain", "explained")
    runtime.submit(first.participant_id, 0, {"agree": True})
    again = runtime.enter(demo_study, LINK)  # a refresh, or the link opened in a new tab
    assert again.resumed and again.participant_id == first.participant_id and again.condition == first.condition
    view = runtime.current_view(again.participant_id)
    assert view.step.name == "Instructions"
    assert [r.data for r in stored_responses(first.participant_id)] == [{"agree": True}]


def test_repeated_submission_is_stored_once(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    first = runtime.submit(pid, 0, {"agree": True})
    second = runtime.submit(pid, 0, {"agree": True})  # double click / resent request
    assert first.accepted and not first.duplicate
    assert second.accepted and second.duplicate
    assert len(stored_responses(pid)) == 1
    assert runtime.current_view(pid).step.name == "Instructions"


def test_step_ahead_of_current_is_refused(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    with pytest.raises(runtime.StepOutOfOrder, match="not open yet"):
        runtime.submit(pid, 3, {"helpfulness": 3})
    assert stored_responses(pid) == []


@pytest.mark.parametrize(("data", "field"), [
    ({"helpfulness": 0}, "helpfulness"),
    ({"helpfulness": 8}, "helpfulness"),
    ({"helpfulness": "lots"}, "helpfulness"),
    ({}, "helpfulness"),
])
def test_invalid_step_data_names_the_field_and_writes_nothing(demo_study, data, field):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Rating")
    before = _row_counts()
    with pytest.raises(runtime.InvalidResponse) as info:
        runtime.submit(pid, view.step.index, data)
    assert field in info.value.errors and "Rating" in str(info.value)
    assert _row_counts() == before
    assert runtime.current_view(pid).step.index == view.step.index


def test_field_errors_are_in_plain_words(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Survey")
    with pytest.raises(runtime.InvalidResponse) as caught:
        runtime.submit(pid, view.step.index, {"age": 120, "comments": "x" * 620})
    assert caught.value.errors == {
        "age": "Please enter a number no greater than 99.",
        "ai_use": "Please answer this question.",
        "comments": "Please shorten this to at most 500 characters (it has 620); your text is kept.",
    }
    assert runtime.current_view(pid).step.index == view.step.index  # nothing stored, the step stays


def test_consent_must_be_given(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    with pytest.raises(runtime.InvalidResponse, match="agree"):
        runtime.submit(pid, 0, {"agree": False})
    assert stored_responses(pid) == []


def test_comprehension_retry_then_pass_records_attempts(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Comprehension")
    wrong = runtime.submit(pid, view.step.index, {"task": "Count words"})
    assert not wrong.accepted and wrong.check_failed and wrong.wrong_fields == ("task",) and wrong.attempts_left == 1
    assert runtime.current_view(pid).failed_attempts == 1
    right = runtime.submit(pid, view.step.index, {"task": "Rate how helpful each suggestion is"})
    assert right.accepted
    stored = stored_responses(pid)[-1]
    assert stored.attempts == 2 and stored.data["_check_passed"] is True


def test_comprehension_failed_twice_screens_out_with_code(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Comprehension")
    runtime.submit(pid, view.step.index, {"task": "Count words"})
    result = runtime.submit(pid, view.step.index, {"task": "Write my own sentences"})
    assert result.screened_out
    final = runtime.current_view(pid)
    assert final.status == "screened_out" and final.completion.code == "DEMOSCREEN"
    assert final.completion.url.endswith("cc=DEMOSCREEN")
    # A screened-out participant cannot go on, even by resubmitting.
    assert runtime.submit(pid, view.step.index, {"task": "Rate how helpful each suggestion is"}).duplicate


def test_failed_attention_check_screens_out_after_limit(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Attention")
    result = runtime.submit(pid, view.step.index, {"answer": "Agree"})
    assert result.screened_out
    with read_session() as session:
        assert session.get(Participant, pid).attention_failures == 1


def test_completion_code_only_after_all_data_stored(demo_study):
    pid = runtime.enter(demo_study, LINK).participant_id
    view = _advance_to(pid, "Survey")
    assert view.completion is None and not view.finished
    result = runtime.submit(pid, view.step.index, {"age": 30, "ai_use": "Daily"})
    assert result.finished
    final = runtime.current_view(pid)
    assert final.status == "completed" and final.step.name == "Completion"
    assert final.completion.kind == "redirect"
    assert final.completion.url == "https://app.prolific.com/submissions/complete?cc=DEMO2026"
    names = [r.step_name for r in stored_responses(pid)]
    assert names == ["Consent", "Instructions", "Comprehension", "Rating", "Rating", "Rating", "Attention", "Survey"]
    assert stored_responses(pid)[-1].data == {"age": 30, "ai_use": "Daily", "comments": ""}


def test_study_config_overrides_completion_code(sqlite_db):
    study_admin.create_study("coded", "demo_survey", config={"completion_code": "C1X2"})
    pid = runtime.enter("coded", {"pid": "g1"}).participant_id
    view = _advance_to(pid, "Survey")
    runtime.submit(pid, view.step.index, {"age": 40, "ai_use": "Never"})
    final = runtime.current_view(pid)
    assert final.completion.kind == "code" and final.completion.code == "C1X2"


class FakeClock:
    """Stands in for ``utcnow``: returns ``now``, which the test moves on by hand."""

    def __init__(self, start: datetime):
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


def _step_response(pid: int, step_index: int) -> StepResponse:
    with read_session() as session:
        return session.exec(select(StepResponse).where(StepResponse.participant_id == pid,
                                                       StepResponse.step_index == step_index)).one()


def test_step_response_stores_when_the_step_was_shown_and_how_long_it_took(any_db, monkeypatch):
    study_admin.create_study("timed", "demo_survey")
    pid = runtime.enter("timed", {"pid": "t1"}).participant_id
    clock = FakeClock(T0)
    monkeypatch.setattr(runtime, "utcnow", clock)
    runtime.record_shown(pid, 0)
    clock.advance(42)
    runtime.submit(pid, 0, {"agree": True})
    row = _step_response(pid, 0)
    assert (row.shown_at, row.submitted_at, row.duration_s) == (T0, T0 + timedelta(seconds=42), 42.0)


def test_a_refresh_keeps_the_first_shown_time_of_a_step(any_db, monkeypatch):
    study_admin.create_study("timed", "demo_survey")
    pid = runtime.enter("timed", {"pid": "t1"}).participant_id
    clock = FakeClock(T0)
    monkeypatch.setattr(runtime, "utcnow", clock)
    runtime.record_shown(pid, 0)  # first shown at T0
    clock.advance(30)
    runtime.record_shown(pid, 0)  # the page is drawn again (refresh) at T0 + 30 s
    clock.advance(45)
    runtime.submit(pid, 0, {"agree": True})  # answered at T0 + 75 s
    row = _step_response(pid, 0)
    assert (row.shown_at, row.duration_s) == (T0, 75.0)


def test_conditions_balance_least_filled(demo_study):
    conditions = [runtime.enter(demo_study, {"pid": f"u{i}"}).condition for i in range(6)]
    assert conditions.count("plain") == 3 and conditions.count("explained") == 3


def test_screened_out_participants_do_not_hold_a_place(demo_study):
    """Screen-outs concentrated in one condition: that condition gets the next arrivals until the
    completed and active participants are balanced again."""
    first = [runtime.enter(demo_study, {"pid": f"s{i}"}) for i in range(4)]  # plain, explained, plain, explained
    for arrival in first:
        if arrival.condition == "plain":
            view = _advance_to(arrival.participant_id, "Comprehension")
            runtime.submit(arrival.participant_id, view.step.index, {"task": "Count words"})
            assert runtime.submit(arrival.participant_id, view.step.index, {"task": "Count words"}).screened_out
    # Counted: plain 0, explained 2 (active). Two go to plain; at 2 : 2 a tie goes to the first condition
    # (plain), then explained. Counting the screen-outs would have alternated from the start.
    arrivals = [runtime.enter(demo_study, {"pid": f"n{i}"}).condition for i in range(4)]
    assert arrivals == ["plain", "plain", "plain", "explained"]


def test_stale_unfinished_participants_stop_counting(demo_study, monkeypatch):
    from datetime import timedelta

    from engines.platform.db import write_transaction
    from engines.platform.models import utcnow

    first = runtime.enter(demo_study, {"pid": "gone"})
    with write_transaction() as session:
        row = session.get(Participant, first.participant_id)
        row.last_seen_at = utcnow() - timedelta(hours=5)
        session.add(row)
    # The abandoned participant no longer holds a place: the next one gets the same condition.
    assert runtime.enter(demo_study, {"pid": "next"}).condition == first.condition


def _add_participants(slug: str, condition: str, status: str, n: int, *, last_seen_minutes_ago: float = 1) -> None:
    """Write ``n`` participant rows directly (no runtime call), last seen that many minutes ago."""
    seen = models.utcnow() - timedelta(minutes=last_seen_minutes_ago)
    with write_transaction() as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        start = len(session.exec(select(Participant).where(Participant.study_id == study.id)).all())
        for i in range(start, start + n):
            session.add(Participant(study_id=study.id, external_id=f"x{i}", panel="generic", condition=condition,
                                    status=status, last_seen_at=seen))


def _condition_counts(slug: str) -> dict[str, int]:
    with read_session() as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        return runtime.condition_counts(session, study, get_protocol(study.protocol))


@pytest.fixture
def balance_study(any_db, monkeypatch) -> str:
    """A demo_survey study with the participant timeout set to 60 minutes."""
    monkeypatch.setenv("HAI_PARTICIPANT_TIMEOUT_MINUTES", "60")
    settings.reset_settings()
    study_admin.create_study("balance", "demo_survey")
    return "balance"


def test_condition_counts_leave_out_screened_out_participants(balance_study):
    _add_participants(balance_study, "plain", "screened_out", 3)
    _add_participants(balance_study, "plain", "completed", 1)
    _add_participants(balance_study, "explained", "completed", 1)
    assert _condition_counts(balance_study) == {"plain": 1, "explained": 1}


def test_condition_counts_keep_completed_participants_however_long_ago(balance_study):
    _add_participants(balance_study, "explained", "completed", 2, last_seen_minutes_ago=3 * 24 * 60)
    assert _condition_counts(balance_study) == {"plain": 0, "explained": 2}


def test_condition_counts_keep_unfinished_participants_only_within_the_timeout(balance_study):
    _add_participants(balance_study, "plain", "active", 2, last_seen_minutes_ago=5)  # within 60 minutes
    _add_participants(balance_study, "explained", "active", 3, last_seen_minutes_ago=180)  # abandoned
    assert _condition_counts(balance_study) == {"plain": 2, "explained": 0}


@pytest.mark.parametrize(("slug", "params", "error", "match"), [
    ("nope", {"PROLIFIC_PID": "a"}, runtime.UnknownStudy, "no study called 'nope'"),
    ("demo", {}, LinkError, "no participant id"),
    ("demo", {"PROLIFIC_PID": ""}, LinkError, "PROLIFIC_PID' is empty"),
    ("demo", {"PROLIFIC_PID": "a b<script>"}, LinkError, "not a valid id"),
    ("demo", {"PROLIFIC_PID": ["a", "b"]}, LinkError, "repeats the parameter 'PROLIFIC_PID'"),
    ("demo", {"workerId": "W1"}, LinkError, "no assignmentId"),
    ("Bad Slug!", {"pid": "a"}, LinkError, "not a valid study name"),
    ("demo", {"study": ["demo", "other"], "pid": "a"}, LinkError, "repeats the parameter 'study'"),
    ("demo", {"PROLIFIC_PID": "a", "workerId": "W1", "assignmentId": "A1"}, LinkError,
     r"ids of more than one panel \(Prolific: PROLIFIC_PID; MTurk: workerId, assignmentId\)"),
    ("demo", {"PROLIFIC_PID": "a", "pid": "b"}, LinkError, "more than one panel"),
])
def test_bad_links_get_clear_errors_and_write_nothing(demo_study, slug, params, error, match):
    with pytest.raises(error, match=match):
        runtime.enter(slug, params)
    assert _row_counts() == (0, 0, 0)


def test_closed_study_refuses_new_but_resumes_existing(demo_study):
    pid = runtime.enter(demo_study, {"pid": "early"}).participant_id
    study_admin.set_open(demo_study, False)
    with pytest.raises(runtime.StudyClosed, match="not accepting new participants"):
        runtime.enter(demo_study, {"pid": "late"})
    assert runtime.enter(demo_study, {"pid": "early"}).participant_id == pid


def test_mturk_preview_writes_nothing_and_completion_posts(demo_study):
    preview = runtime.enter(demo_study, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H"})
    assert preview.preview and preview.participant_id is None and _row_counts() == (0, 0, 0)
    link = {"workerId": "W1", "assignmentId": "A1", "hitId": "H1", "turkSubmitTo": "https://workersandbox.mturk.com"}
    pid = runtime.enter(demo_study, link).participant_id
    view = _advance_to(pid, "Survey")
    runtime.submit(pid, view.step.index, {"age": 22, "ai_use": "Monthly"})
    target = runtime.current_view(pid).completion
    assert target.kind == "post" and target.url == "https://workersandbox.mturk.com/mturk/externalSubmit"
    assert target.fields["assignmentId"] == "A1"
