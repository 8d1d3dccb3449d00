"""The study runtime: enter by link, show the current step, store answers, finish.

Guarantees (each backed by a test):
- every step's answer is committed before the next step can be shown, so a refresh, a reopened
  tab or a server restart resumes at the same step with every answer kept;
- a repeated submission of a step that was already stored (double click, resent request)
  returns the stored outcome and writes nothing;
- condition assignment picks the least-filled condition, counting completed participants and
  unfinished ones seen within ``participant_timeout_minutes``, never screened-out ones (psiTurk),
  inside one write
  transaction that also holds the study row, so concurrent arrivals keep the balance and
  ``UNIQUE(study, external id)`` makes a participant exist once;
- invalid input raises before anything is written.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import func, or_
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.platform import participant_rows as rows
from engines.platform.db import read_session, write_transaction
from engines.platform.models import Participant, ParticipantStatus, StepResponse, Study, utcnow
from engines.platform.panels import (
    CompletionTarget,
    LinkError,
    PanelIdentity,
    completion_target,
    parse_link,
    validate_slug,
)
from engines.platform.registry import get_protocol
from engines.platform.settings import get_settings
from engines.platform.study import SCREENED_OUT_BECAUSE, Step, StepContext, StepInstance, StudyProtocol


class StudyError(Exception):
    """A problem a participant or researcher should read; ``str()`` is the message."""


class UnknownStudy(StudyError):
    pass


class StudyClosed(StudyError):
    pass


class StepOutOfOrder(StudyError):
    pass


class InvalidResponse(StudyError):
    """Submitted data failed validation. ``errors`` maps field name -> message."""

    def __init__(self, step: str, errors: dict[str, str]):
        self.step = step
        self.errors = errors
        detail = "; ".join(f"{name}: {msg}" for name, msg in errors.items())
        super().__init__(f"Step {step}: {detail}")


@dataclass(frozen=True)
class EnterResult:
    participant_id: int | None
    study_slug: str
    condition: str | None
    resumed: bool
    preview: bool = False


@dataclass(frozen=True)
class SubmitResult:
    """Outcome of one submission.

    ``accepted``: stored (or already stored: then ``duplicate``). ``check_failed``: a
    comprehension or attention check was answered wrongly; ``wrong_fields`` lists which,
    ``attempts_left`` how many tries remain. ``screened_out``: the study ended for them.
    """

    accepted: bool
    duplicate: bool = False
    check_failed: bool = False
    wrong_fields: tuple[str, ...] = ()
    attempts_left: int = 0
    feedback: str = ""
    next_index: int | None = None
    finished: bool = False
    screened_out: bool = False


@dataclass
class StepView:
    """Everything the participant page needs to draw the current state."""

    study_slug: str
    study_title: str
    participant_id: int
    external_id: str
    condition: str
    status: str
    step: StepInstance | None
    total_steps: int
    position: int
    template_vars: dict[str, Any] = field(default_factory=dict)
    failed_attempts: int = 0
    completion: CompletionTarget | None = None
    previous_answer: dict[str, Any] | None = None
    # The current step's answer schema under this study instance's constants (choices may follow them).
    response_model: type[BaseModel] | None = None
    # The earlier step this one offers to read again (``Step.reopen``) and its template values.
    reopen_step: type[Step] | None = None
    reopen_vars: dict[str, Any] = field(default_factory=dict)

    @property
    def finished(self) -> bool:
        return self.status != ParticipantStatus.ACTIVE


# ------------------------------------------------------------------ helpers

# Entering works on ORM objects (it creates the participant); steps on plain rows (participant_rows).
_StudyLike = Study | rows.StudyRow
_ParticipantLike = Participant | rows.ParticipantState
SessionOf = Callable[[], Session]  # opens, or returns, the session hooks read and write through


def _the(session: Session) -> SessionOf:
    """``session`` as a ``SessionOf`` (reads and ``enter``, whose session is open anyway)."""
    return lambda: session


def _study_protocol(study: _StudyLike) -> StudyProtocol:
    return get_protocol(study.protocol)


def _constants(protocol: StudyProtocol, study: _StudyLike) -> Any:
    return protocol.constants_for(study.config)


class _Responses(Mapping[str, list[dict[str, Any]]]):
    """A participant's answers to steps before ``before``, by step name, read on first use.

    Most hooks never look at earlier answers, so ``submit`` and ``current_view`` read a
    participant's earlier rows only when a hook asks for them (a query, O(steps) rows).
    """

    def __init__(self, session_of: SessionOf, participant_id: int, before: int) -> None:
        self._session_of, self._participant_id, self._before = session_of, participant_id, before
        self._data: dict[str, list[dict[str, Any]]] | None = None
        self._added: list[tuple[str, dict[str, Any]]] = []

    def _loaded(self) -> dict[str, list[dict[str, Any]]]:
        if self._data is None:
            rows = self._session_of().exec(
                select(StepResponse.step_name, StepResponse.data)
                .where(StepResponse.participant_id == self._participant_id, StepResponse.step_index < self._before)
                .order_by(StepResponse.step_index)
            ).all()
            self._data = {}
            for name, data in [*rows, *self._added]:
                self._data.setdefault(name, []).append(data)
        return self._data

    def add(self, step_name: str, data: dict[str, Any]) -> None:
        """Record an answer stored in this transaction (without reading the earlier ones)."""
        if self._data is None:
            self._added.append((step_name, data))
        else:
            self._data.setdefault(step_name, []).append(data)

    def __getitem__(self, key: str) -> list[dict[str, Any]]:
        return self._loaded()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


def _context(protocol: StudyProtocol, study: _StudyLike, participant: _ParticipantLike, instance: StepInstance,
             responses: dict[str, list[dict[str, Any]]], session_of: SessionOf | None = None) -> StepContext:
    C = _constants(protocol, study)
    return StepContext(
        participant_id=participant.id,
        external_id=participant.external_id,
        condition=participant.condition,
        condition_params=protocol.condition_params(participant.condition, C),
        round_number=instance.round_number,
        C=C,
        vars=copy.deepcopy(participant.vars or {}),  # hooks may edit nested values in place
        responses=responses,
        study_config=dict(study.config or {}),
        study_slug=study.slug,
        step_index=instance.index,
        session_of=session_of,
    )


def _next_displayed(protocol: StudyProtocol, study: _StudyLike, participant: _ParticipantLike, start: int,
                    responses: dict[str, list[dict[str, Any]]], session_of: SessionOf | None = None) -> int:
    """Index of the first step at or after ``start`` whose ``is_displayed`` is true.

    ``session_of``: the session of the write transaction moving the participant on;
    ``is_displayed`` reads through it (``ctx.session``) and so sees what the step just submitted
    has written.
    """
    if start >= len(protocol.steps):
        return len(protocol.steps)
    # One context (one copy of the vars) for all the checks: is_displayed only reads.
    ctx = _context(protocol, study, participant, protocol.steps[start], responses, session_of)
    for instance in protocol.steps[start:]:
        ctx = dataclasses.replace(ctx, round_number=instance.round_number, step_index=instance.index)
        if instance.step.is_displayed(ctx):
            return instance.index
    return len(protocol.steps)


def completion_codes(C: Any, study_config: Mapping[str, Any] | None) -> dict[str, str]:
    """The codes participants of a study receive: {"completed": ..., "screened_out": ...}.

    A study instance's ``completion_code`` / ``screened_out_code`` win over the protocol's constants.
    """
    config = study_config or {}
    return {ParticipantStatus.COMPLETED: config.get("completion_code") or C.COMPLETION_CODE,
            ParticipantStatus.SCREENED_OUT: config.get("screened_out_code") or C.SCREENED_OUT_CODE}


def _finish(protocol: StudyProtocol, study: _StudyLike, participant: _ParticipantLike, status: str) -> None:
    codes = completion_codes(_constants(protocol, study), study.config)
    code = codes[ParticipantStatus.COMPLETED if status == ParticipantStatus.COMPLETED else ParticipantStatus.SCREENED_OUT]
    participant.status = status
    participant.completion_code = code
    participant.finished_at = utcnow()


def _advance(protocol: StudyProtocol, study: _StudyLike, participant: _ParticipantLike, start: int,
             responses: dict[str, list[dict[str, Any]]], session_of: SessionOf | None = None) -> None:
    nxt = _next_displayed(protocol, study, participant, start, responses, session_of)
    participant.step_index = nxt
    participant.step_shown_at = None
    at_end = nxt >= len(protocol.steps) or protocol.steps[nxt].step.kind == "completion"
    if at_end:
        _finish(protocol, study, participant, ParticipantStatus.COMPLETED)
    else:
        arrived = protocol.steps[nxt]
        arrived.step.on_enter(_context(protocol, study, participant, arrived, responses, session_of))


def _lock_study(session: Session, slug: str) -> Study:
    study = session.exec(select(Study).where(Study.slug == slug).with_for_update()).first()
    if study is None:
        raise UnknownStudy(f"There is no study called '{slug}'. Check the link you were given.")
    return study


def condition_counts(session: Session, study: Study, protocol: StudyProtocol) -> dict[str, int]:
    """Participants per condition that count toward balance: completed, or active and seen within the timeout.

    Screened-out participants do not count (as in psiTurk): a condition that screens out more
    people would otherwise end with fewer real participants.
    """
    cutoff = utcnow() - timedelta(minutes=get_settings().participant_timeout_minutes)
    rows = session.exec(
        select(Participant.condition, func.count())
        .where(Participant.study_id == study.id)
        .where(or_(Participant.status == ParticipantStatus.COMPLETED,
                   (Participant.status == ParticipantStatus.ACTIVE) & (Participant.last_seen_at >= cutoff)))
        .group_by(Participant.condition)
    ).all()
    counts = {name: 0 for name in protocol.condition_names(_constants(protocol, study))}
    for condition, n in rows:
        if condition in counts:
            counts[condition] = n
    return counts


# ------------------------------------------------------------------ public API


def enter(slug: str, link_params: Mapping[str, object], *, engine: Engine | None = None) -> EnterResult:
    """A participant opens a study link: resume them, or create them with a balanced condition.

    Raises:
        LinkError: the link's parameters do not identify a participant.
        UnknownStudy / StudyClosed: no such study, or it takes no new participants.
    """
    validate_slug(slug)
    identity: PanelIdentity = parse_link(link_params)
    if identity.preview:
        with read_session(engine) as session:
            study = session.exec(select(Study).where(Study.slug == slug)).first()
            if study is None:
                raise UnknownStudy(f"There is no study called '{slug}'. Check the link you were given.")
        return EnterResult(None, slug, None, resumed=False, preview=True)
    for _attempt in range(3):
        try:
            return _enter_once(slug, identity, engine)
        except IntegrityError:
            # Another process created this participant between our read and insert (possible on
            # PostgreSQL only if the study-row lock was bypassed); the retry resumes them.
            continue
    raise StudyError("Could not register you for this study; please reload the page.")


def _check_panel_study(study: Study, identity: PanelIdentity) -> None:
    # A study can name the Prolific study its links come from; a link of another one (an old
    # or copied link) is refused before anything is stored.
    expected = (study.config or {}).get("prolific_study_id")
    if expected and identity.panel == "prolific" and identity.params.get("STUDY_ID") != expected:
        raise StudyClosed("This link belongs to a different Prolific study. Open the study from the link "
                          "Prolific shows for it.")


def _check_capacity(session: Session, study: Study) -> None:
    # An optional cap on how many participants a study takes, all statuses counted, so that a
    # flood of made-up ids cannot fill the participant table.
    cap = (study.config or {}).get("max_participants")
    if cap is None:
        return
    enrolled = session.exec(select(func.count()).select_from(Participant).where(Participant.study_id == study.id)).one()
    if enrolled >= cap:
        raise StudyClosed("This study has all the participants it needs; thank you for your interest.")


def _enter_once(slug: str, identity: PanelIdentity, engine: Engine | None) -> EnterResult:
    with write_transaction(engine) as session:
        study = _lock_study(session, slug)
        _check_panel_study(study, identity)
        existing = session.exec(
            select(Participant).where(Participant.study_id == study.id, Participant.external_id == identity.external_id)
        ).first()
        if existing is not None:
            existing.last_seen_at = utcnow()
            if identity.params:
                existing.panel_params = {**(existing.panel_params or {}), **identity.params}
            session.add(existing)
            return EnterResult(existing.id, slug, existing.condition, resumed=True)
        if not study.is_open:
            raise StudyClosed("This study is not accepting new participants at the moment.")
        _check_capacity(session, study)
        protocol = _study_protocol(study)
        counts = condition_counts(session, study, protocol)
        condition = protocol.assign_condition(counts, identity)
        if condition not in counts:
            raise StudyError(f"study {protocol.name!r}: assign_condition returned unknown condition {condition!r}")
        participant = Participant(
            study_id=study.id, external_id=identity.external_id, panel=identity.panel,
            panel_params=dict(identity.params), condition=condition,
        )
        session.add(participant)
        session.flush()
        _advance(protocol, study, participant, 0, {}, _the(session))
        session.add(participant)
        session.flush()
        return EnterResult(participant.id, slug, condition, resumed=False)


def find_participant(slug: str, external_id: str, *, engine: Engine | None = None) -> int | None:
    with read_session(engine) as session:
        row = session.exec(
            select(Participant.id).join(Study, Study.id == Participant.study_id)
            .where(Study.slug == slug, Participant.external_id == external_id)
        ).first()
        return row


def current_view(participant_id: int, *, engine: Engine | None = None) -> StepView:
    """The participant's current step with its template variables, or their end state."""
    with read_session(engine) as session:
        found = rows.read_participant(session, participant_id)
        if found is None:
            raise StudyError(f"No participant with id {participant_id}.")
        participant, study = found
        protocol = _study_protocol(study)
        responses = _Responses(_the(session), participant_id, before=len(protocol.steps))
        instance: StepInstance | None = None
        if participant.step_index < len(protocol.steps) and participant.status != ParticipantStatus.SCREENED_OUT:
            instance = protocol.steps[participant.step_index]
        view = StepView(
            study_slug=study.slug, study_title=study.title or protocol.title, participant_id=participant.id,
            external_id=participant.external_id, condition=participant.condition, status=participant.status,
            step=instance, total_steps=0, position=0,
        )
        if participant.status != ParticipantStatus.ACTIVE:
            view.completion = completion_target(participant.panel, participant.panel_params or {},
                                                participant.completion_code or "")
        if instance is None:
            return view
        ctx = _context(protocol, study, participant, instance, responses, _the(session))
        view.template_vars = instance.step.vars_for_template(ctx)  # the completion page's texts too
        if participant.status != ParticipantStatus.ACTIVE:
            return view
        view.response_model = instance.step.response_model(ctx.C)
        if instance.step.reopen is not None:
            view.reopen_step = instance.step.reopen
            view.reopen_vars = instance.step.reopen.vars_for_template(ctx)
        view.failed_attempts = rows.failed_attempts(session, participant_id, instance.index)
        view.position, view.total_steps = _progress(session, protocol, study, participant, responses)
        return view


def _progress(session: Session, protocol: StudyProtocol, study: _StudyLike, participant: _ParticipantLike,
              responses: Mapping[str, list[dict[str, Any]]]) -> tuple[int, int]:
    """(steps done, steps this participant may see in all): "Step position+1 of total".

    Only steps that ``counts_as_step`` are counted (a follow-up round of the same item is part of
    its step, and shows that step's number). The position counts the counted steps answered, so
    it moves on by one per counted answer and never back; the steps ahead are the counted ones
    that ``may_display`` (a step shown only after some answer counts until that answer rules it
    out), so the total never grows as the participant goes on.
    """
    indexes = session.exec(select(StepResponse.step_index).where(StepResponse.participant_id == participant.id)).all()
    ahead = protocol.steps[participant.step_index:]
    ctx = _context(protocol, study, participant, ahead[0], responses, _the(session))  # the hooks read through it

    def at(instance: StepInstance) -> StepContext:
        return dataclasses.replace(ctx, round_number=instance.round_number, step_index=instance.index)

    done = sum(1 for index in indexes if protocol.steps[index].step.counts_as_step(at(protocol.steps[index])))
    shown = 0
    for instance in ahead:
        if instance.step.kind == "completion":
            continue
        here = at(instance)
        shown += bool(instance.step.counts_as_step(here) and instance.step.may_display(here))
    current = ahead[0]
    follow_up = current.step.kind != "completion" and not current.step.counts_as_step(at(current))
    # A follow-up round shows its step's number, which its first round counted as done.
    return done - follow_up, done + shown


def record_shown(participant_id: int, step_index: int, *, engine: Engine | None = None) -> None:
    """Note when the current step was first shown (for per-step timings); later calls keep it.

    Every rerun of the participant page calls this; one conditional UPDATE, no read, so the
    reruns after the first write nothing.
    """
    now = utcnow()
    with write_transaction(engine) as session:
        rows.mark_shown(session, participant_id, step_index, now)


def validate_response(instance: StepInstance, data: Mapping[str, Any], C: Any = None) -> Any:
    """Parse ``data`` with the step's response schema under constants ``C``; raise ``InvalidResponse`` with field errors."""
    schema = instance.step.response_model(C) if C is not None else instance.step.Response
    if schema is None:
        return None
    try:
        response = schema.model_validate(dict(data))
    except ValidationError as exc:
        errors: dict[str, str] = {}
        for err in exc.errors():
            name = ".".join(str(p) for p in err["loc"]) or "__root__"
            errors.setdefault(name, plain_message(err))
        raise InvalidResponse(instance.name, errors) from None
    # pydantic takes "nan" and "inf" as floats; an answer is a number a person can read back.
    not_finite = {name: "Please enter a number." for name, value in response if isinstance(value, float)
                  and not math.isfinite(value)}
    if not_finite:
        raise InvalidResponse(instance.name, not_finite)
    return response


def plain_message(error: Mapping[str, Any]) -> str:
    """A pydantic field error in the words a participant reads ("Field required" is for developers)."""
    kind, ctx, given = error.get("type", ""), error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return "Please answer this question."
    if kind == "string_too_long":
        length = f" (it has {len(given)})" if isinstance(given, str) else ""
        return f"Please shorten this to at most {ctx.get('max_length')} characters{length}; your text is kept."
    if kind == "string_too_short":
        return f"Please write at least {ctx.get('min_length')} characters."
    if kind in ("less_than_equal", "less_than"):
        return f"Please enter a number no greater than {ctx.get('le', ctx.get('lt'))}."
    if kind in ("greater_than_equal", "greater_than"):
        return f"Please enter a number no smaller than {ctx.get('ge', ctx.get('gt'))}."
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return "Please enter a whole number."
    if kind in ("float_parsing", "float_type"):
        return "Please enter a number."
    if kind in ("literal_error", "enum"):
        return "Please pick one of the choices."
    return str(error.get("msg", "This answer is not valid."))


def submit(participant_id: int, step_index: int, data: Mapping[str, Any] | None = None, *,
           engine: Engine | None = None) -> SubmitResult:
    """Store the answer to step ``step_index`` and move the participant on.

    Submitting a step that is already stored returns ``duplicate=True`` and writes nothing.

    Raises:
        InvalidResponse: the data fails the step's schema or its ``validate`` hook (nothing is written).
        StepOutOfOrder: the step is ahead of the participant's current step.
    """
    data = dict(data or {})
    with write_transaction(engine) as session:
        found = rows.lock_participant(session, participant_id)
        if found is None:
            raise StudyError(f"No participant with id {participant_id}.")
        participant, study = found
        before = participant.snapshot()
        result = _store_answer(session, participant, study, step_index, data)
        rows.save_participant(session, participant, before)
        return result


def _store_answer(session: Session, participant: rows.ParticipantState, study: rows.StudyRow, step_index: int,
                  data: dict[str, Any]) -> SubmitResult:
    """``submit`` inside its write transaction (``session``): stores the answer, moves ``participant`` on in memory."""
    protocol = _study_protocol(study)
    participant_id = participant.id
    if step_index < 0 or step_index >= len(protocol.steps):
        raise StepOutOfOrder(f"Study {study.slug} has no step {step_index}.")
    if step_index < participant.step_index or participant.status != ParticipantStatus.ACTIVE:
        if rows.response_stored(session, participant_id, step_index) or participant.status != ParticipantStatus.ACTIVE:
            return SubmitResult(
                accepted=True, duplicate=True, next_index=participant.step_index,
                finished=participant.status == ParticipantStatus.COMPLETED,
                screened_out=participant.status == ParticipantStatus.SCREENED_OUT,
            )
        raise StepOutOfOrder(f"Step {step_index} of study {study.slug} was skipped and cannot be answered now.")
    if step_index > participant.step_index:
        raise StepOutOfOrder(
            f"Step {step_index} of study {study.slug} is not open yet; the current step is {participant.step_index}."
        )
    instance = protocol.steps[step_index]
    if instance.step.kind == "completion":
        raise StepOutOfOrder("The completion page takes no answers.")
    session_of = _the(session)
    responses = _Responses(session_of, participant_id, before=step_index)
    ctx = _context(protocol, study, participant, instance, responses, session_of)
    response = validate_response(instance, data, ctx.C)
    if response is not None:
        errors = instance.step.validate(ctx, response)
        if errors:
            raise InvalidResponse(instance.name, dict(errors))
    clean = response.model_dump(mode="json") if response is not None else {}

    check = instance.step.check
    attempts = 1
    passed = True
    if check is not None:
        wrong = check.wrong_fields(clean, ctx.C)
        attempts = rows.failed_attempts(session, participant_id, step_index) + 1
        if wrong:
            rows.insert_attempt(session, participant_id=participant_id, step_index=step_index, attempt=attempts,
                                data=clean, wrong_fields=list(wrong), created_at=utcnow())
            participant.last_seen_at = utcnow()
            if attempts < check.max_attempts:
                return SubmitResult(accepted=False, check_failed=True, wrong_fields=tuple(wrong),
                                    attempts_left=check.max_attempts - attempts, feedback=check.feedback,
                                    next_index=step_index)
            if check.on_fail == "screen_out":
                participant.step_shown_at = None
                _finish(protocol, study, participant, ParticipantStatus.SCREENED_OUT)
                return SubmitResult(accepted=False, check_failed=True, wrong_fields=tuple(wrong),
                                    screened_out=True, next_index=step_index)
            passed = False
            if check.kind == "attention":
                participant.attention_failures += 1

    now = utcnow()
    shown_at = participant.step_shown_at
    stored = dict(clean)
    if check is not None:
        stored["_check_passed"] = passed
    rows.insert_response(
        session, participant_id=participant_id, step_index=step_index, step_name=instance.name,
        round_number=instance.round_number, data=stored, attempts=attempts, shown_at=shown_at,
        submitted_at=now, duration_s=(now - shown_at).total_seconds() if shown_at else None,
    )
    if response is not None:
        instance.step.after_submit(ctx, response)
    participant.vars = dict(ctx.vars)
    participant.last_seen_at = now
    responses.add(instance.name, stored)
    limit = ctx.C.MAX_ATTENTION_FAILURES
    # after_submit screens the participant out by giving the reason in their variables.
    if participant.vars.get(SCREENED_OUT_BECAUSE) or (limit is not None and participant.attention_failures > limit):
        participant.step_shown_at = None
        _finish(protocol, study, participant, ParticipantStatus.SCREENED_OUT)
    else:
        _advance(protocol, study, participant, step_index + 1, responses, session_of)
    return SubmitResult(
        accepted=True, next_index=participant.step_index,
        finished=participant.status == ParticipantStatus.COMPLETED,
        screened_out=participant.status == ParticipantStatus.SCREENED_OUT,
        check_failed=not passed,
    )


__all__ = [
    "EnterResult", "InvalidResponse", "LinkError", "StepOutOfOrder", "StepView", "StudyClosed", "StudyError",
    "SubmitResult", "UnknownStudy", "completion_codes", "condition_counts", "plain_message", "current_view", "enter", "find_participant",
    "record_shown", "submit", "validate_response",
]
