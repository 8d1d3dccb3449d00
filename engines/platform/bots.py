"""Study bots, after oTree's ``PlayerBot``: scripted participants that complete a study.

A study module ships ``class PlayerBot(Bot)`` whose ``play()`` yields, step by step,
``Submission(StepClass, data)`` (must be accepted) or ``SubmissionMustFail(StepClass, data,
error_fields=...)`` (must be rejected, storing nothing). ``cases`` runs the bot once per case
(``self.case``). The same bot drives three runners: ``run_bot`` here (headless, against the
runtime API), and the AppTest and Playwright drivers under ``tests/``, which type the same
values into the real widgets. After the last step the runner checks what was stored against
what was submitted, then calls ``check_stored``.

Example::

    class PlayerBot(Bot):
        cases = ["agrees", "fails_check"]
        def play(self):
            yield SubmissionMustFail(Consent, {"agree": False}, error_fields=["agree"])
            yield Submission(Consent, {"agree": True})
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.platform import runtime
from engines.platform.db import read_session
from engines.platform.models import StepResponse
from engines.platform.registry import get_protocol
from engines.platform.study import Step


@dataclass(frozen=True)
class Submission:
    step: type[Step]
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SubmissionMustFail:
    """Data the step must reject: a schema or ``validate`` error on ``error_fields``, or a
    wrong answer to a check that leaves attempts (``check=True``)."""

    step: type[Step]
    data: dict[str, Any] = field(default_factory=dict)
    error_fields: tuple[str, ...] = ()
    check: bool = False


class BotFailure(AssertionError):
    """A bot's expectation did not hold; the message names the bot, case and step."""


def expect(actual: Any, op: str, expected: Any = None) -> None:
    """oTree's ``expect``: ``expect(x, 5)``, ``expect(x, '<', 5)``, ``expect('ok', 'in', html)``."""
    if expected is None and op not in ("==", "!=", "<", "<=", ">", ">=", "in", "not in"):
        op, expected = "==", op
    checks = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
              "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
              "in": lambda a, b: a in b, "not in": lambda a, b: a not in b}
    if op not in checks:
        raise ValueError(f"expect: unknown operator {op!r}")
    if not checks[op](actual, expected):
        raise BotFailure(f"expected {actual!r} {op} {expected!r}")


class Bot:
    """Base class of a study's ``PlayerBot``.

    Attributes set by the runner: ``case``, ``participant_id``, ``condition``, ``view`` (the
    ``StepView`` currently shown), ``round_number``.
    """

    cases: ClassVar[list[Any]] = [None]
    expected_status: ClassVar[str | dict[Any, str]] = "completed"

    def __init__(self, case: Any = None):
        self.case = case
        self.participant_id: int | None = None
        self.condition: str | None = None
        self.view: runtime.StepView | None = None

    @property
    def round_number(self) -> int:
        return self.view.step.round_number if self.view and self.view.step else 0

    @classmethod
    def prepare(cls, engine: Engine | None = None) -> None:
        """Store what the study needs before it can be created (a labeling project its constants
        name, say) on the database of ``engine``; called once per bot run, before the study."""

    def play(self) -> Iterator[Submission | SubmissionMustFail]:
        raise NotImplementedError

    def final_status(self) -> str:
        status = self.expected_status
        return status.get(self.case, "completed") if isinstance(status, dict) else status

    def check_stored(self, responses: list[dict[str, Any]]) -> None:
        """Extra checks on the stored responses (one dict per step, in order). Optional."""


@dataclass
class BotReport:
    study: str
    case: Any
    external_id: str
    condition: str
    status: str
    steps: int
    must_fail_checked: int
    completion_code: str | None


def stored_responses(participant_id: int, *, engine: Engine | None = None) -> list[StepResponse]:
    with read_session(engine) as session:
        return list(session.exec(
            select(StepResponse).where(StepResponse.participant_id == participant_id).order_by(StepResponse.step_index)
        ).all())


def iterate_with_view(bot: Bot, current_view) -> Iterator[Submission | SubmissionMustFail]:
    """Yield the bot's items, setting ``bot.view`` to the page shown *before* it picks each one.

    ``current_view()`` returns the participant's ``StepView`` now; the bot's ``play`` may read
    ``self.view`` (e.g. the AI's set in ``template_vars``) to decide what to submit.
    """
    items = bot.play()
    while True:
        bot.view = current_view()
        try:
            item = next(items)
        except StopIteration:
            return
        yield item


def _fail(bot: Bot, item: Submission | SubmissionMustFail, message: str) -> BotFailure:
    return BotFailure(f"{type(bot).__qualname__} case={bot.case!r} at {item.step.__name__}: {message}")


def run_bot(slug: str, bot: Bot, external_id: str, *, link_extra: dict[str, str] | None = None,
            engine: Engine | None = None) -> BotReport:
    """Play ``bot`` as participant ``external_id`` of study ``slug`` through the runtime API."""
    entered = runtime.enter(slug, {"pid": external_id, **(link_extra or {})}, engine=engine)
    bot.participant_id, bot.condition = entered.participant_id, entered.condition
    submitted: list[tuple[int, dict[str, Any]]] = []
    must_fail = 0
    for item in iterate_with_view(bot, lambda: runtime.current_view(entered.participant_id, engine=engine)):
        view = bot.view
        if view.step is None or view.finished:
            raise _fail(bot, item, f"the participant has already finished (status {view.status})")
        if view.step.step is not item.step:
            raise _fail(bot, item, f"the participant is at step {view.step.name}")
        runtime.record_shown(entered.participant_id, view.step.index, engine=engine)
        if isinstance(item, SubmissionMustFail):
            must_fail += 1
            try:
                result = runtime.submit(entered.participant_id, view.step.index, item.data, engine=engine)
            except runtime.InvalidResponse as exc:
                missing = set(item.error_fields) - set(exc.errors)
                if missing:
                    raise _fail(bot, item, f"rejected, but not for {sorted(missing)}: {exc.errors}") from None
            else:
                if result.accepted or not item.check:
                    raise _fail(bot, item, f"data {item.data} was not rejected ({result})")
                missing = set(item.error_fields) - set(result.wrong_fields)
                if missing:
                    raise _fail(bot, item, f"check failed, but not on {sorted(missing)}: {result.wrong_fields}")
            after = runtime.current_view(entered.participant_id, engine=engine)
            if after.step is None or after.step.index != view.step.index:
                if not (item.check and after.status == "screened_out"):
                    raise _fail(bot, item, "a rejected submission moved the participant on")
            continue
        result = runtime.submit(entered.participant_id, view.step.index, item.data, engine=engine)
        if not result.accepted and not result.screened_out:
            raise _fail(bot, item, f"data {item.data} was rejected: {result}")
        if result.accepted:
            submitted.append((view.step.index, dict(item.data)))
    final = runtime.current_view(entered.participant_id, engine=engine)
    expect(final.status, "==", bot.final_status())
    rows = stored_responses(entered.participant_id, engine=engine)
    by_index = {r.step_index: r.data for r in rows}
    for index, data in submitted:
        stored = {k: v for k, v in by_index.get(index, {}).items() if not k.startswith("_")}
        for key, value in data.items():
            if stored.get(key) != value:
                raise BotFailure(f"step {index}: stored {key}={stored.get(key)!r}, submitted {value!r}")
    bot.check_stored([r.data for r in rows])
    return BotReport(final.study_slug, bot.case, external_id, final.condition, final.status, len(submitted),
                     must_fail, final.completion.code if final.completion else None)


def run_protocol_bots(protocol_name: str, *, participants: int = 3, slug: str | None = None,
                      engine: Engine | None = None) -> list[BotReport]:
    """Run the protocol's bot for ``participants`` participants (cycling its cases)."""
    from engines.platform import study_admin

    protocol = get_protocol(protocol_name)
    if protocol.bot is None:
        raise runtime.StudyError(f"study protocol {protocol_name!r} ships no PlayerBot")
    protocol.bot.prepare(engine)
    if slug is None:
        slug = f"bot-{protocol.name.replace('_', '-')}-{secrets.token_hex(3)}"[:63]
        study_admin.create_study(slug, protocol.name, title=f"{protocol.title} (bots)", engine=engine)
    reports = []
    cases = protocol.bot.cases or [None]
    for i in range(participants):
        case = cases[i % len(cases)]
        reports.append(run_bot(slug, protocol.bot(case), f"bot-{secrets.token_hex(4)}-{i}", engine=engine))
    return reports
