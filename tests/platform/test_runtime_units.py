"""The study runtime, piece by piece: what each hook sees, every field of a result or a view, messages.

``test_runtime.py`` walks the demo study; here a small probe protocol (registered for each test
only) records what its hooks receive, so each test checks one thing the runtime hands over or
stores. Expected values are worked out by hand from the probe's sequence:

    index  step      round  shown when
    0      Ask       1      always
    1      Ask       2      the answer of round 1 was not "stop"
    2      Attend    1      round <= C.ATTEND_ROUNDS (attention check, answer C.ATTEND_ANSWER, continue)
    3      Attend    2      round <= C.ATTEND_ROUNDS
    4      Extra     1      the last Ask answer was "long"

and there is no completion step: a participant is done once no step is left.
"""

from __future__ import annotations

import functools
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace
from typing import ClassVar, Literal

import pytest
from pydantic import BaseModel, Field, create_model, model_validator
from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from engines.platform import db, registry, runtime, settings, study_admin
from engines.platform.db import read_session, write_transaction
from engines.platform.models import Participant, StepAttempt, StepResponse
from engines.platform.study import Check, Constants, Step, StepInstance, StudyProtocol

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
SEEN: list[tuple] = []  # what the probe's hooks were handed, in order
SESSIONS: list[bool] = []  # whether each is_displayed call was handed the participant's session
ENTERED: list[tuple] = []  # on_enter: (step index, round, answers stored when entered, answers in ctx)


class ProbeC(Constants):
    NAME = "runtime_probe"
    TITLE = "Probe study"
    CONDITIONS: ClassVar = {"red": {"colour": "red"}, "blue": {"colour": "blue"}}
    COMPLETION_CODE = ""  # a lab study: no code to show
    SCREENED_OUT_CODE = "PROBEOUT"
    MAX_ATTENTION_FAILURES = 1
    GREETING = "Hello"
    NAME_MAX = 20
    ATTEND_ANSWER = "left"
    ATTEND_ROUNDS = 2


@functools.cache
def _ask_model(name_max: int) -> type[BaseModel]:
    return create_model("AskResponse", name=(str, Field(min_length=1, max_length=name_max)),
                        scores=(list[int], []))


class Ask(Step):
    title = "Your name"
    Response = _ask_model(20)
    repeat = 2

    @classmethod
    def response_model(cls, C):
        return _ask_model(C.NAME_MAX)

    @staticmethod
    def is_displayed(ctx) -> bool:
        SEEN.append(("shown?", ctx.step_index, ctx.round_number))
        SESSIONS.append(ctx.session is not None)
        return (ctx.last_response("Ask") or {}).get("name") != "stop" or ctx.round_number == 1

    @staticmethod
    def on_enter(ctx) -> None:
        # Read through the transaction that moved the participant here: it holds the answer just stored.
        stored = ctx.session.exec(select(func.count()).select_from(StepResponse)
                                  .where(StepResponse.participant_id == ctx.participant_id)).one()
        ENTERED.append((ctx.step_index, ctx.round_number, stored, len(ctx.responses.get("Ask", []))))

    @staticmethod
    def vars_for_template(ctx) -> dict:
        return {"participant_id": ctx.participant_id, "external_id": ctx.external_id, "condition": ctx.condition,
                "colour": ctx.condition_params.get("colour"), "round": ctx.round_number,
                "greeting": ctx.C.GREETING, "config_code": ctx.study_config.get("screened_out_code"),
                "slug": ctx.study_slug, "step_index": ctx.step_index, "has_session": ctx.session is not None,
                "vars": ctx.vars}

    @staticmethod
    def validate(ctx, response) -> dict:
        return {"name": "Please write your name, not your panel id."} if response.name == ctx.external_id else {}

    @staticmethod
    def after_submit(ctx, response) -> None:
        ctx.vars.setdefault("names", []).append(response.name)  # edits a nested value in place
        stored = ctx.session.exec(select(func.count()).select_from(StepResponse)
                                  .where(StepResponse.participant_id == ctx.participant_id)).one()
        ctx.vars["stored_when_submitted"] = stored  # read through the submitting transaction: this answer counts


class AttendResponse(BaseModel):
    answer: Literal["left", "right"]


class Attend(Step):
    Response = AttendResponse
    repeat = 2
    check = Check(answers=lambda C: {"answer": C.ATTEND_ANSWER}, kind="attention", max_attempts=1,
                  on_fail="continue")

    @staticmethod
    def is_displayed(ctx) -> bool:
        SEEN.append(("shown?", ctx.step_index, ctx.round_number))
        return ctx.round_number <= ctx.C.ATTEND_ROUNDS


class ExtraResponse(BaseModel):
    note: str = ""
    when: date | None = None


class Extra(Step):
    Response = ExtraResponse

    @staticmethod
    def is_displayed(ctx) -> bool:
        SEEN.append(("shown?", ctx.step_index, ctx.round_number))
        SESSIONS.append(ctx.session is not None)
        # A misbehaving hook: is_displayed only reads, so this edit must never reach what is stored.
        ctx.vars.get("names", []).append("peeked")
        return (ctx.last_response("Ask") or {}).get("name") == "long"

    @classmethod
    def may_display(cls, ctx) -> bool:
        # Until both Ask rounds are answered, the last one may still be "long".
        return cls.is_displayed(ctx) or len(ctx.responses.get("Ask", [])) < 2

    @staticmethod
    def vars_for_template(ctx) -> dict:
        return {"earlier": {name: list(answers) for name, answers in ctx.responses.items()}}

    @staticmethod
    def validate(ctx, response) -> dict:
        if response.note == ctx.last_response("Ask")["name"]:
            return {"note": "Please write something other than your name."}
        return {}


def _assign(counts, identity) -> str:
    """Ids starting with "b" go to blue, "g" to an undeclared condition (a bug), others to red."""
    return {"b": "blue", "g": "green"}.get(identity.external_id[0], "red")


PROBE = StudyProtocol(name="runtime_probe", title="Probe study", description="", C=ProbeC,
                      sequence=[Ask, Attend, Extra], assign_condition=_assign)
ANSWERS = {"Ask": {"name": "ann"}, "Attend": {"answer": "left"}, "Extra": {"note": "n"}}


@pytest.fixture
def probe(monkeypatch) -> StudyProtocol:
    registry.discover()
    monkeypatch.setitem(registry._PROTOCOLS, PROBE.name, PROBE)  # noqa: SLF001 - for this test only
    SEEN.clear()
    SESSIONS.clear()
    ENTERED.clear()
    return PROBE


@pytest.fixture
def engine(any_db, tmp_path, monkeypatch) -> Engine:
    """The test's database as an explicit engine, with the settings pointing at an empty one:
    a call that drops the ``engine=`` it was given fails ("no such table")."""
    monkeypatch.setenv("HAI_DATABASE_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    settings.reset_settings()
    return db.get_engine(any_db)


@pytest.fixture
def probe_study(probe, engine) -> str:
    study_admin.create_study("probe", PROBE.name, title="Probe pilot", engine=engine,
                             config={"screened_out_code": "OUT-1", "constants": {
                                 "GREETING": "Hi", "CONDITIONS": {"red": {"colour": "crimson"}, "blue": {}}}})
    return "probe"


def _enter(engine, pid: str = "p-7", slug: str = "probe", **link) -> int:
    return runtime.enter(slug, {"pid": pid, **link}, engine=engine).participant_id


def _submit(engine, participant_id: int, index: int, data: dict) -> runtime.SubmitResult:
    return runtime.submit(participant_id, index, data, engine=engine)


def _participant(engine, participant_id: int) -> Participant:
    with read_session(engine) as session:
        return session.get(Participant, participant_id)


def _rows(engine, model, participant_id: int) -> list:
    with read_session(engine) as session:
        return list(session.exec(select(model).where(model.participant_id == participant_id)
                                 .order_by(model.id)).all())


# ------------------------------------------------------------------ plain messages


@pytest.mark.parametrize(("error", "message"), [
    ({"type": "missing"}, "Please answer this question."),
    ({"type": "string_too_long", "ctx": {"max_length": 5}, "input": "abcdefg"},
     "Please shorten this to at most 5 characters (it has 7); your text is kept."),
    ({"type": "string_too_long", "ctx": {"max_length": 5}, "input": 1234567},
     "Please shorten this to at most 5 characters; your text is kept."),
    ({"type": "string_too_short", "ctx": {"min_length": 3}}, "Please write at least 3 characters."),
    ({"type": "less_than_equal", "ctx": {"le": 7}}, "Please enter a number no greater than 7."),
    ({"type": "less_than", "ctx": {"lt": 8}}, "Please enter a number no greater than 8."),
    ({"type": "greater_than_equal", "ctx": {"ge": 1}}, "Please enter a number no smaller than 1."),
    ({"type": "greater_than", "ctx": {"gt": 0}}, "Please enter a number no smaller than 0."),
    ({"type": "int_parsing"}, "Please enter a whole number."),
    ({"type": "int_from_float"}, "Please enter a whole number."),
    ({"type": "int_type"}, "Please enter a whole number."),
    ({"type": "float_parsing"}, "Please enter a number."),
    ({"type": "float_type"}, "Please enter a number."),
    ({"type": "literal_error"}, "Please pick one of the choices."),
    ({"type": "enum"}, "Please pick one of the choices."),
    ({"type": "url_parsing", "msg": "Input should be a valid URL"}, "Input should be a valid URL"),
    ({"msg": "Value error, dates must be in order", "ctx": None}, "Value error, dates must be in order"),
    ({"type": "custom"}, "This answer is not valid."),
])
def test_field_errors_are_worded_for_participants(error, message):
    assert runtime.plain_message(error) == message


def test_invalid_response_names_the_step_and_every_field():
    error = runtime.InvalidResponse("Survey", {"age": "Please enter a whole number.", "ai_use": "Please answer."})
    assert (error.step, error.errors) == ("Survey", {"age": "Please enter a whole number.", "ai_use": "Please answer."})
    assert str(error) == "Step Survey: age: Please enter a whole number.; ai_use: Please answer."


# ------------------------------------------------------------------ validate_response


class _Loose(BaseModel):
    name: str
    scores: list[int] = []


class _Strict(_Loose):
    name: str = Field(max_length=3)


class _Ordered(BaseModel):
    first: int
    last: int

    @model_validator(mode="after")
    def in_order(self):
        if self.last < self.first:
            raise ValueError("last comes before first")
        return self


class _Sized(Step):
    Response = _Loose

    @classmethod
    def response_model(cls, C):
        return _Strict if C.STRICT else _Loose


class _Ranged(Step):
    Response = _Ordered


def test_validate_response_uses_the_schema_under_the_given_constants():
    instance = StepInstance(0, _Sized, 1)
    with pytest.raises(runtime.InvalidResponse) as refused:
        runtime.validate_response(instance, {"name": "Annabel"}, SimpleNamespace(STRICT=True))
    assert refused.value.errors == {"name": "Please shorten this to at most 3 characters (it has 7); your text is kept."}
    assert runtime.validate_response(instance, {"name": "Annabel"}, SimpleNamespace(STRICT=False)).name == "Annabel"


def test_validate_response_without_constants_uses_the_steps_response():
    assert runtime.validate_response(StepInstance(0, _Sized, 1), {"name": "Annabel"}).name == "Annabel"


def test_an_error_in_a_list_item_is_named_by_its_position():
    with pytest.raises(runtime.InvalidResponse) as refused:
        runtime.validate_response(StepInstance(0, _Sized, 1), {"name": "a", "scores": [1, "x"]})
    assert refused.value.errors == {"scores.1": "Please enter a whole number."}


def test_an_error_of_the_whole_answer_is_named_root():
    with pytest.raises(runtime.InvalidResponse) as refused:
        runtime.validate_response(StepInstance(3, _Ranged, 1), {"first": 5, "last": 2})
    assert refused.value.errors == {"__root__": "Value error, last comes before first"}
    assert refused.value.step == "_Ranged"


# ------------------------------------------------------------------ what hooks see


def test_hooks_see_the_participant_the_study_instance_and_the_round(probe_study, engine):
    pid = _enter(engine)
    first = runtime.current_view(pid, engine=engine).template_vars
    assert first == {"participant_id": pid, "external_id": "p-7", "condition": "red", "colour": "crimson",
                     "round": 1, "greeting": "Hi", "config_code": "OUT-1", "slug": "probe", "step_index": 0,
                     "has_session": True, "vars": {}}
    _submit(engine, pid, 0, {"name": "ann"})
    second = runtime.current_view(pid, engine=engine).template_vars
    assert (second["round"], second["step_index"]) == (2, 1)
    assert second["vars"] == {"names": ["ann"], "stored_when_submitted": 1}


def test_hooks_that_move_a_participant_on_get_the_session_and_on_enter_runs_once_per_arrival(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    runtime.current_view(pid, engine=engine)  # a read: its step count asks is_displayed too
    # Entering the study arrives at Ask round 1 (nothing stored yet); the first answer moves to
    # round 2, and on_enter sees that answer through the same transaction, in the session and in ctx.
    assert ENTERED == [(0, 1, 0, 0), (1, 2, 1, 1)]
    assert SESSIONS and all(SESSIONS)  # every is_displayed, in writes and in reads


def test_after_submit_keeps_nested_edits_to_vars_across_steps(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    _submit(engine, pid, 1, {"name": "bob"})
    # Round 2 appended to the list round 1 stored; its transaction held both answers.
    assert _participant(engine, pid).vars == {"names": ["ann", "bob"], "stored_when_submitted": 2}


def test_validate_sees_the_participant_and_names_the_step(probe_study, engine):
    pid = _enter(engine)
    with pytest.raises(runtime.InvalidResponse) as refused:
        _submit(engine, pid, 0, {"name": "p-7"})
    assert refused.value.step == "Ask"
    assert str(refused.value) == "Step Ask: name: Please write your name, not your panel id."
    assert _rows(engine, StepResponse, pid) == []


def test_answers_are_checked_against_the_instance_constants(probe, engine):
    study_admin.create_study("short", PROBE.name, config={"constants": {"NAME_MAX": 3}}, engine=engine)
    pid = _enter(engine, slug="short")
    with pytest.raises(runtime.InvalidResponse) as refused:
        _submit(engine, pid, 0, {"name": "Annabel"})
    assert refused.value.errors == {"name": "Please shorten this to at most 3 characters (it has 7); your text is kept."}
    view = runtime.current_view(pid, engine=engine)  # the page draws the same schema
    assert view.response_model.model_fields["name"].metadata[-1].max_length == 3


def test_is_displayed_sees_each_candidate_steps_own_index_and_round(probe, engine):
    study_admin.create_study("one-round", PROBE.name, config={"constants": {"ATTEND_ROUNDS": 1}}, engine=engine)
    pid = _enter(engine, slug="one-round")
    SEEN.clear()
    result = _submit(engine, pid, 0, {"name": "stop"})
    # Ask round 2 is skipped ("stop"), Attend round 1 is shown: its hook saw index 2, round 1.
    assert SEEN[:2] == [("shown?", 1, 2), ("shown?", 2, 1)]
    assert result.next_index == 2


def test_the_step_count_asks_each_step_ahead_with_its_own_index_and_round(probe, engine):
    study_admin.create_study("one-round", PROBE.name, config={"constants": {"ATTEND_ROUNDS": 1}}, engine=engine)
    pid = _enter(engine, slug="one-round")
    SEEN.clear()
    view = runtime.current_view(pid, engine=engine)
    assert SEEN == [("shown?", 0, 1), ("shown?", 1, 2), ("shown?", 2, 1), ("shown?", 3, 2), ("shown?", 4, 1)]
    assert view.total_steps == 4  # Ask x2, Attend round 1, and Extra that may come; Attend round 2 is not due


def test_a_step_shown_only_after_an_earlier_answer_is_reached_and_counted(probe_study, engine):
    pid = _enter(engine)
    assert [runtime.current_view(pid, engine=engine).total_steps] == [5]  # 2 Ask + 2 Attend, and Extra may come
    _submit(engine, pid, 0, {"name": "ann"})
    _submit(engine, pid, 1, {"name": "long"})
    view = runtime.current_view(pid, engine=engine)
    assert (view.position, view.total_steps) == (2, 5)  # Extra is due: the count did not grow
    _submit(engine, pid, 2, {"answer": "left"})
    _submit(engine, pid, 3, {"answer": "left"})
    view = runtime.current_view(pid, engine=engine)
    assert (view.step.name, view.position, view.total_steps) == ("Extra", 4, 5)
    assert view.template_vars == {"earlier": {
        "Ask": [{"name": "ann", "scores": []}, {"name": "long", "scores": []}],
        "Attend": [{"answer": "left", "_check_passed": True}, {"answer": "left", "_check_passed": True}]}}


@pytest.mark.parametrize("second_name", ["long", "bob"])
def test_the_step_count_moves_on_by_one_and_its_total_never_grows(probe_study, engine, second_name):
    """Walked to the end either way: a conditional step that comes (long) or is ruled out (bob)."""
    pid = _enter(engine)
    answers = [{"name": "ann"}, {"name": second_name}, {"answer": "left"}, {"answer": "left"}, {"note": "n"}]
    counts = []
    for index, answer in enumerate(answers):
        view = runtime.current_view(pid, engine=engine)
        if view.step is None or view.finished:
            break
        counts.append((view.position, view.total_steps))
        _submit(engine, pid, index, answer)
    positions = [position for position, _ in counts]
    totals = [total for _, total in counts]
    assert positions == list(range(len(counts)))
    assert all(later <= earlier for earlier, later in zip(totals, totals[1:], strict=False)), totals
    assert totals[-1] == len(counts)  # the last step shown says "n of n"


def test_hooks_of_a_later_step_see_the_earlier_answers(probe_study, engine):
    pid = _enter(engine)
    for index, data in enumerate([{"name": "ann"}, {"name": "long"}, {"answer": "left"}, {"answer": "left"}]):
        _submit(engine, pid, index, data)
    with pytest.raises(runtime.InvalidResponse, match="other than your name"):
        _submit(engine, pid, 4, {"note": "long"})


def test_the_last_step_answered_finishes_the_participant(probe_study, engine, monkeypatch):
    pid = _enter(engine)
    for index, data in enumerate([{"name": "ann"}, {"name": "long"}, {"answer": "left"}, {"answer": "left"}]):
        _submit(engine, pid, index, data)
    monkeypatch.setattr(runtime, "utcnow", lambda: T0)
    result = _submit(engine, pid, 4, {"note": "fine", "when": "2026-03-02"})
    assert result == runtime.SubmitResult(accepted=True, next_index=5, finished=True)
    row = _participant(engine, pid)
    assert (row.status, row.step_index, row.completion_code, row.finished_at) == ("completed", 5, "", T0)
    assert _rows(engine, StepResponse, pid)[-1].data == {"note": "fine", "when": "2026-03-02"}
    view = runtime.current_view(pid, engine=engine)
    assert (view.step, view.completion.code, view.position, view.total_steps) == (None, "", 0, 0)


def test_a_participant_without_the_optional_step_is_done_after_the_checks(probe_study, engine):
    pid = _enter(engine)
    for index, data in enumerate([{"name": "ann"}, {"name": "bob"}, {"answer": "left"}]):
        _submit(engine, pid, index, data)
    assert _submit(engine, pid, 3, {"answer": "left"}) == runtime.SubmitResult(accepted=True, next_index=5,
                                                                                finished=True)


# ------------------------------------------------------------------ checks


def test_a_failed_attention_check_that_continues_is_stored_flagged_and_counted(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    _submit(engine, pid, 1, {"name": "bob"})
    result = _submit(engine, pid, 2, {"answer": "right"})
    assert result == runtime.SubmitResult(accepted=True, next_index=3, check_failed=True)
    row = _rows(engine, StepResponse, pid)[-1]
    assert (row.step_name, row.round_number, row.attempts, row.data) == (
        "Attend", 1, 1, {"answer": "right", "_check_passed": False})
    (attempt,) = _rows(engine, StepAttempt, pid)
    assert (attempt.step_index, attempt.attempt, attempt.data, attempt.wrong_fields) == (
        2, 1, {"answer": "right"}, ["answer"])
    assert _participant(engine, pid).attention_failures == 1


def test_a_second_failed_attention_check_screens_out_past_the_limit(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    _submit(engine, pid, 1, {"name": "bob"})
    _submit(engine, pid, 2, {"answer": "right"})
    result = _submit(engine, pid, 3, {"answer": "right"})  # 2 failures > MAX_ATTENTION_FAILURES = 1
    assert result == runtime.SubmitResult(accepted=True, next_index=3, screened_out=True, check_failed=True)
    row = _participant(engine, pid)
    assert (row.status, row.attention_failures, row.completion_code) == ("screened_out", 2, "OUT-1")  # config wins
    # One wrong attempt per step: the second round's stored answer counts its own attempts only.
    assert [(r.step_name, r.round_number, r.attempts) for r in _rows(engine, StepResponse, pid)] == [
        ("Ask", 1, 1), ("Ask", 2, 1), ("Attend", 1, 1), ("Attend", 2, 1)]


def test_the_correct_answer_follows_the_instance_constants(probe, engine):
    study_admin.create_study("righty", PROBE.name, config={"constants": {"ATTEND_ANSWER": "right"}}, engine=engine)
    pid = _enter(engine, slug="righty")
    _submit(engine, pid, 0, {"name": "ann"})
    _submit(engine, pid, 1, {"name": "bob"})
    assert _submit(engine, pid, 2, {"answer": "right"}) == runtime.SubmitResult(accepted=True, next_index=3)


def test_a_wrong_comprehension_answer_with_tries_left_is_refused_with_feedback(demo_engine):
    engine, pid = demo_engine
    result = _submit(engine, pid, 2, {"task": "Count words"})
    assert result == runtime.SubmitResult(
        accepted=False, check_failed=True, wrong_fields=("task",), attempts_left=1,
        feedback="That is not what this study asks. Please read the instructions again (below).", next_index=2)
    assert _participant(engine, pid).step_index == 2


def test_a_wrong_comprehension_answer_without_tries_left_screens_out(demo_engine):
    engine, pid = demo_engine
    _submit(engine, pid, 2, {"task": "Count words"})
    result = _submit(engine, pid, 2, {"task": "Write my own sentences"})
    assert result == runtime.SubmitResult(accepted=False, check_failed=True, wrong_fields=("task",),
                                          screened_out=True, next_index=2)
    assert [(a.attempt, a.data) for a in _rows(engine, StepAttempt, pid)] == [
        (1, {"task": "Count words"}), (2, {"task": "Write my own sentences"})]


def test_failed_attempts_are_counted_per_step(demo_engine):
    engine, pid = demo_engine
    _submit(engine, pid, 2, {"task": "Count words"})
    _submit(engine, pid, 2, {"task": "Rate how helpful each suggestion is"})
    view = runtime.current_view(pid, engine=engine)
    assert (view.step.name, view.failed_attempts) == ("Rating", 0)  # the wrong try was at Comprehension


def test_earlier_answers_come_in_step_order_whatever_order_they_were_stored_in(probe_study, engine):
    pid = _enter(engine)
    with write_transaction(engine) as session:  # round 2's row written before round 1's, by hand
        for index in (1, 0):
            session.add(StepResponse(participant_id=pid, step_index=index, step_name="Ask", round_number=index + 1,
                                     data={"name": f"round {index + 1}"}, attempts=1, submitted_at=T0))
    with read_session(engine) as session:
        responses = runtime._Responses(lambda: session, pid, before=2)  # noqa: SLF001
        assert responses["Ask"] == [{"name": "round 1"}, {"name": "round 2"}]


def test_attempts_are_counted_per_participant(demo_engine):
    engine, pid = demo_engine
    other = _enter(engine, pid="q-2", slug="demo")
    _submit(engine, other, 0, {"agree": True})
    _submit(engine, other, 1, {})
    _submit(engine, other, 2, {"task": "Count words"})  # the other participant's wrong try
    result = _submit(engine, pid, 2, {"task": "Count words"})
    assert (result.attempts_left, result.screened_out) == (1, False)
    assert runtime.current_view(pid, engine=engine).failed_attempts == 1


@pytest.fixture
def demo_engine(engine) -> tuple[Engine, int]:
    """A demo_survey participant at the comprehension check (index 2), on the explicit engine."""
    study_admin.create_study("demo", "demo_survey", title="Pilot A", engine=engine)
    pid = _enter(engine, slug="demo")
    _submit(engine, pid, 0, {"agree": True})
    _submit(engine, pid, 1, {})
    return engine, pid


# ------------------------------------------------------------------ submit: order and repeats


def test_a_step_outside_the_study_is_refused_by_number(demo_engine):
    engine, pid = demo_engine
    for index in (-1, 9):  # demo_survey has steps 0..8
        with pytest.raises(runtime.StepOutOfOrder) as refused:
            _submit(engine, pid, index, {})
        assert str(refused.value) == f"Study demo has no step {index}."


def test_a_skipped_step_cannot_be_answered_even_if_others_answered_it(probe_study, engine):
    answered = _enter(engine, pid="a-1")
    _submit(engine, answered, 0, {"name": "ann"})
    _submit(engine, answered, 1, {"name": "bob"})
    skipper = _enter(engine, pid="s-1")
    _submit(engine, skipper, 0, {"name": "stop"})  # round 2 of Ask is skipped
    with pytest.raises(runtime.StepOutOfOrder) as refused:
        _submit(engine, skipper, 1, {"name": "late"})
    assert str(refused.value) == "Step 1 of study probe was skipped and cannot be answered now."


def test_a_repeated_submission_returns_where_the_participant_is(demo_engine):
    engine, pid = demo_engine
    assert _submit(engine, pid, 0, {"agree": True}) == runtime.SubmitResult(accepted=True, duplicate=True,
                                                                              next_index=2)


def test_a_submission_after_finishing_says_finished(probe_study, engine):
    pid = _enter(engine)
    for index, data in enumerate([{"name": "ann"}, {"name": "bob"}, {"answer": "left"}, {"answer": "left"}]):
        _submit(engine, pid, index, data)
    assert _submit(engine, pid, 3, {"answer": "left"}) == runtime.SubmitResult(accepted=True, duplicate=True,
                                                                                next_index=5, finished=True)


def test_a_submission_after_a_screen_out_says_screened_out(demo_engine):
    engine, pid = demo_engine
    _submit(engine, pid, 2, {"task": "Count words"})
    _submit(engine, pid, 2, {"task": "Count words"})
    assert _submit(engine, pid, 2, {"task": "Rate how helpful each suggestion is"}) == runtime.SubmitResult(
        accepted=True, duplicate=True, next_index=2, screened_out=True)


def test_the_completion_page_takes_no_answers(demo_engine):
    engine, pid = demo_engine
    with write_transaction(engine) as session:  # an active participant left on the completion page by hand
        row = session.get(Participant, pid)
        row.step_index = 8
        session.add(row)
    with pytest.raises(runtime.StepOutOfOrder) as refused:
        _submit(engine, pid, 8, {})
    assert str(refused.value) == "The completion page takes no answers."


def test_an_unknown_participant_is_refused_by_id(engine):
    with pytest.raises(runtime.StudyError) as refused:
        runtime.submit(999, 0, {}, engine=engine)
    assert str(refused.value) == "No participant with id 999."
    with pytest.raises(runtime.StudyError) as refused:
        runtime.current_view(999, engine=engine)
    assert str(refused.value) == "No participant with id 999."


def test_a_screened_out_participant_uses_the_studys_own_code(engine):
    study_admin.create_study("coded", "demo_survey", config={"screened_out_code": "OUT-9"}, engine=engine)
    pid = _enter(engine, slug="coded")
    _submit(engine, pid, 0, {"agree": True})
    _submit(engine, pid, 1, {})
    _submit(engine, pid, 2, {"task": "Count words"})
    _submit(engine, pid, 2, {"task": "Count words"})
    assert runtime.current_view(pid, engine=engine).completion.code == "OUT-9"


# ------------------------------------------------------------------ current_view


def test_the_view_of_a_new_participant(demo_engine):
    engine, _ = demo_engine
    pid = _enter(engine, pid="v-1", slug="demo")
    view = runtime.current_view(pid, engine=engine)
    assert (view.study_slug, view.study_title, view.participant_id, view.external_id, view.condition,
            view.status) == ("demo", "Pilot A", pid, "v-1", "explained", "active")
    # Consent, Instructions, Comprehension, Rating x3, Attention, Survey: 8 before the completion page.
    assert (view.step.name, view.position, view.total_steps, view.failed_attempts) == ("Consent", 0, 8, 0)
    assert view.template_vars == {"minutes": 3, "n": 3}
    assert view.response_model.__name__ == "ConsentResponse"
    assert (view.reopen_step, view.reopen_vars, view.completion) == (None, {}, None)


def test_the_view_of_a_step_that_offers_the_instructions_again(demo_engine):
    engine, pid = demo_engine
    view = runtime.current_view(pid, engine=engine)
    assert (view.step.name, view.position, view.total_steps) == ("Comprehension", 2, 8)
    assert view.reopen_step.__name__ == "Instructions"
    assert view.reopen_vars == {"explanation_note": ""}  # the "plain" condition has no explanation


def test_the_view_of_a_screened_out_participant_shows_no_step(demo_engine):
    engine, pid = demo_engine
    _submit(engine, pid, 2, {"task": "Count words"})
    _submit(engine, pid, 2, {"task": "Count words"})
    view = runtime.current_view(pid, engine=engine)
    assert (view.step, view.status, view.completion.code, view.template_vars) == (None, "screened_out",
                                                                                 "DEMOSCREEN", {})


# ------------------------------------------------------------------ enter


def test_a_preview_returns_the_study_and_no_participant(demo_engine):
    engine, _ = demo_engine
    preview = runtime.enter("demo", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": "H"}, engine=engine)
    assert preview == runtime.EnterResult(None, "demo", None, resumed=False, preview=True)


def test_a_preview_of_an_unknown_study_is_refused_by_name(engine):
    with pytest.raises(runtime.UnknownStudy) as refused:
        runtime.enter("nope", {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}, engine=engine)
    assert str(refused.value) == "There is no study called 'nope'. Check the link you were given."


def test_entering_and_resuming_return_the_study(demo_engine):
    engine, _ = demo_engine
    first = runtime.enter("demo", {"pid": "r-1"}, engine=engine)
    again = runtime.enter("demo", {"pid": "r-1"}, engine=engine)
    assert first == runtime.EnterResult(first.participant_id, "demo", "explained", resumed=False)
    assert again == runtime.EnterResult(first.participant_id, "demo", "explained", resumed=True)


def test_the_same_panel_id_in_two_studies_is_two_participants(probe_study, engine):
    study_admin.create_study("other", "demo_survey", engine=engine)
    assert _enter(engine, pid="x-1", slug="probe") != _enter(engine, pid="x-1", slug="other")


def test_resuming_adds_the_new_panel_parameters_to_the_kept_ones(demo_engine):
    engine, _ = demo_engine
    link = {"PROLIFIC_PID": "pp1", "STUDY_ID": "st", "SESSION_ID": "se1"}
    pid = runtime.enter("demo", link, engine=engine).participant_id
    runtime.enter("demo", {"PROLIFIC_PID": "pp1", "SESSION_ID": "se2"}, engine=engine)
    assert _participant(engine, pid).panel_params == {"STUDY_ID": "st", "SESSION_ID": "se2"}


def test_the_condition_rule_sees_who_arrived(probe_study, engine):
    assert runtime.enter("probe", {"pid": "b-1"}, engine=engine).condition == "blue"
    assert runtime.enter("probe", {"pid": "r-1"}, engine=engine).condition == "red"


def test_a_condition_rule_naming_an_undeclared_condition_is_an_error(probe_study, engine):
    with pytest.raises(runtime.StudyError) as refused:
        runtime.enter("probe", {"pid": "g-1"}, engine=engine)
    assert str(refused.value) == "study 'runtime_probe': assign_condition returned unknown condition 'green'"


def test_a_closed_study_says_so(demo_engine):
    engine, _ = demo_engine
    study_admin.set_open("demo", False, engine=engine)
    with pytest.raises(runtime.StudyClosed) as refused:
        runtime.enter("demo", {"pid": "late"}, engine=engine)
    assert str(refused.value) == "This study is not accepting new participants at the moment."


def test_entering_retries_when_another_process_created_the_participant(demo_engine, monkeypatch):
    engine, _ = demo_engine
    real_enter_once, calls = runtime._enter_once, []  # noqa: SLF001

    def collides_twice(slug, identity, engine):
        calls.append(slug)
        if len(calls) <= 2:
            raise IntegrityError("INSERT INTO participant", {}, Exception("UNIQUE constraint failed"))
        return real_enter_once(slug, identity, engine)

    monkeypatch.setattr(runtime, "_enter_once", collides_twice)
    assert runtime.enter("demo", {"pid": "race"}, engine=engine).study_slug == "demo"
    assert len(calls) == 3


def test_entering_gives_up_after_three_collisions(demo_engine, monkeypatch):
    engine, _ = demo_engine
    calls = []

    def always_collides(slug, identity, engine):
        calls.append(slug)
        raise IntegrityError("INSERT INTO participant", {}, Exception("UNIQUE constraint failed"))

    monkeypatch.setattr(runtime, "_enter_once", always_collides)
    with pytest.raises(runtime.StudyError) as refused:
        runtime.enter("demo", {"pid": "race"}, engine=engine)
    assert str(refused.value) == "Could not register you for this study; please reload the page."
    assert len(calls) == 3


# ------------------------------------------------------------------ lookups, timings, balance


def test_find_participant_looks_in_the_named_study_only(probe_study, engine):
    study_admin.create_study("other", "demo_survey", engine=engine)
    in_probe, in_other = _enter(engine, pid="f-1", slug="probe"), _enter(engine, pid="f-1", slug="other")
    _enter(engine, pid="f-2", slug="probe")
    assert runtime.find_participant("probe", "f-1", engine=engine) == in_probe
    assert runtime.find_participant("other", "f-1", engine=engine) == in_other
    assert runtime.find_participant("other", "f-2", engine=engine) is None
    assert runtime.find_participant("probe", "nobody", engine=engine) is None


def test_record_shown_of_an_unknown_participant_does_nothing(engine):
    runtime.record_shown(999, 0, engine=engine)  # a stale page after the data was deleted: no error


def test_record_shown_stores_the_time_the_step_was_first_shown(demo_engine, monkeypatch):
    engine, pid = demo_engine
    monkeypatch.setattr(runtime, "utcnow", lambda: T0)
    runtime.record_shown(pid, 2, engine=engine)
    row = _participant(engine, pid)
    assert (row.step_shown_at, row.last_seen_at) == (T0, T0)


def test_a_participant_seen_exactly_the_timeout_ago_still_counts(any_db, monkeypatch):
    monkeypatch.setenv("HAI_PARTICIPANT_TIMEOUT_MINUTES", "60")
    settings.reset_settings()
    study_admin.create_study("edge", "demo_survey")
    with write_transaction() as session:
        study_id = study_admin.get_study("edge").id
        session.add(Participant(study_id=study_id, external_id="e1", panel="generic", condition="explained",
                                status="active", last_seen_at=T0 - timedelta(minutes=60)))
    monkeypatch.setattr(runtime, "utcnow", lambda: T0)
    with read_session() as session:
        study = study_admin.get_study("edge")
        assert runtime.condition_counts(session, study, registry.get_protocol("demo_survey")) == {
            "plain": 0, "explained": 1}


# ------------------------------------------------------------------ _Responses


def test_earlier_answers_are_read_by_step_name_before_the_given_step(probe_study, engine):
    pid, other = _enter(engine), _enter(engine, pid="o-1")
    for index, data in enumerate([{"name": "ann"}, {"name": "bob"}, {"answer": "left"}]):
        _submit(engine, pid, index, data)
    _submit(engine, other, 0, {"name": "zed"})
    with read_session(engine) as session:
        before_two = runtime._Responses(lambda: session, pid, before=2)  # noqa: SLF001
        assert dict(before_two) == {"Ask": [{"name": "ann", "scores": []}, {"name": "bob", "scores": []}]}
        assert (len(before_two), list(before_two)) == (1, ["Ask"])
        assert len(runtime._Responses(lambda: session, pid, before=3)) == 2  # noqa: SLF001 - Ask and Attend


def test_an_answer_added_before_reading_comes_after_the_stored_ones(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    with read_session(engine) as session:
        responses = runtime._Responses(lambda: session, pid, before=1)  # noqa: SLF001
        responses.add("Ask", {"name": "new"})
        assert responses["Ask"] == [{"name": "ann", "scores": []}, {"name": "new"}]


def test_an_answer_added_after_reading_is_seen_too(probe_study, engine):
    pid = _enter(engine)
    _submit(engine, pid, 0, {"name": "ann"})
    with read_session(engine) as session:
        responses = runtime._Responses(lambda: session, pid, before=1)  # noqa: SLF001
        assert responses["Ask"] == [{"name": "ann", "scores": []}]
        responses.add("Ask", {"name": "new"})
        responses.add("Attend", {"answer": "left"})
        assert dict(responses) == {"Ask": [{"name": "ann", "scores": []}, {"name": "new"}],
                                   "Attend": [{"answer": "left"}]}


# ------------------------------------------------------------------ limits a study sets


def test_the_cap_counts_only_this_studys_participants(engine):
    study_admin.create_study("capped", "demo_survey", config={"max_participants": 2}, engine=engine)
    study_admin.create_study("busy", "demo_survey", engine=engine)
    for name in ("b1", "b2", "b3"):
        _enter(engine, pid=name, slug="busy")
    _enter(engine, pid="c1", slug="capped")
    assert not runtime.enter("capped", {"pid": "c2"}, engine=engine).resumed  # 1 of 2 places taken here


def test_a_study_bound_to_a_prolific_study_still_takes_other_panels(engine):
    study_admin.create_study("bound", "demo_survey", config={"prolific_study_id": "65f1a2b3c4d5e6f7a8b9c0d1"},
                             engine=engine)
    assert not runtime.enter("bound", {"pid": "lab-1"}, engine=engine).resumed


class _Measured(BaseModel):
    height: float
    note: str = ""


class _Measure(Step):
    Response = _Measured


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", float("nan"), float("inf")])
def test_a_number_that_is_not_finite_is_refused_like_any_other_non_number(value):
    with pytest.raises(runtime.InvalidResponse) as refused:
        runtime.validate_response(StepInstance(0, _Measure, 1), {"height": value})
    assert refused.value.errors == {"height": "Please enter a number."}
    assert runtime.validate_response(StepInstance(0, _Measure, 1), {"height": "1.5"}).height == 1.5
