"""Controller state in the database: one transaction per finished interaction, in finishing order.

Many participants of one condition share one controller stream. When an interaction finishes,
``record_interaction`` locks the stream row, applies ``controller.step`` to the stored state,
appends the update with the next sequence number, and commits, all at once: no update is lost,
and a resent one (same ``interaction_key``) is not applied twice. ``audit`` replays the stored
sequence from the initial state and checks it reproduces the stored thresholds, so the
guarantee can be checked after the fact however many participants ran at once.

Calibration batch (spec §5, "initialise q_1 with a split-conformal quantile on a calibration
batch"): a stream created with ``calibration_size=n`` shows its initial thresholds to its first
n interactions and only records them (with s(Y) and whether each rule fired); the n-th update
fits q_1 (``controller.calibrate_critical``) and online updates start from there. An interaction
that froze its thresholds before the fit but finishes after it is recorded as "excluded": its
errors belong to the old thresholds, so applying it would break the bound's argument.

Delays: with overlapping participants an interaction's thresholds are older than the state its
update is applied to. The caller passes ``frozen_seq`` (the stream's update count when it froze
them); ``audit_report`` turns the largest delay D into the delay-aware bound
(``controller.upper_bound(..., delay=D)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.collab.controller import ControllerState, calibrate_critical, step, upper_bound
from engines.collab.models import ControllerStream, ControllerUpdate
from engines.platform.db import read_session, write_transaction
from engines.platform.models import Study, utcnow


class StreamError(ValueError):
    """A controller stream is missing or its stored history does not add up."""


@dataclass(frozen=True)
class RecordedUpdate:
    seq: int
    before: ControllerState
    after: ControllerState
    duplicate: bool = False
    phase: str = "online"


PHASES = ("calibration", "excluded", "online")


def _stream(session: Session, key: str, *, lock: bool = False) -> ControllerStream:
    """The stream row ``key`` (locked for update with ``lock``); StreamError if there is none."""
    query = select(ControllerStream).where(ControllerStream.key == key)
    stream = session.exec(query.with_for_update() if lock else query).first()
    if stream is None:
        raise StreamError(f"No controller stream {key!r}.")
    return stream


def open_stream(session: Session, key: str, initial: ControllerState, *, study_id: int | None = None,
                study_slug: str | None = None, condition: str | None = None,
                calibration_size: int = 0) -> StreamSnapshot:
    """The stream's thresholds and update count now, creating it with ``initial`` if it does not exist yet.

    Runs in the caller's write transaction (a step's ``after_submit`` passes ``ctx.session``, so a
    creation commits with the stored answer); the row lock (PostgreSQL) orders it with concurrent
    updates. ``study_slug`` names the study when ``study_id`` is not at hand (looked up only on
    creation). ``calibration_size`` > 0 makes the first that many interactions a calibration batch
    (module docstring).
    """
    if calibration_size < 0:
        raise ValueError(f"calibration_size must be >= 0, got {calibration_size!r}")
    try:
        return stream_snapshot(_stream(session, key, lock=True))
    except StreamError:
        pass
    if study_id is None and study_slug:
        study_id = session.exec(select(Study.id).where(Study.slug == study_slug)).first()
    created = ControllerStream(key=key, study_id=study_id, condition=condition, initial_state=initial.to_dict(),
                               state=initial.to_dict(), calibration_size=calibration_size)
    try:
        with session.begin_nested():  # a savepoint: a concurrent creator (PostgreSQL) must not void the caller's work
            session.add(created)
    except IntegrityError:
        return stream_snapshot(_stream(session, key, lock=True))  # theirs
    return stream_snapshot(created)


def ensure_stream(key: str, initial: ControllerState, *, study_id: int | None = None, condition: str | None = None,
                  calibration_size: int = 0, engine: Engine | None = None) -> ControllerState:
    """The stream's current state, creating the stream with ``initial`` if it does not exist yet (``open_stream``)."""
    with write_transaction(engine) as session:
        return open_stream(session, key, initial, study_id=study_id, condition=condition,
                           calibration_size=calibration_size).state


def current_state(key: str, *, engine: Engine | None = None) -> ControllerState:
    with read_session(engine) as session:
        return ControllerState.from_dict(_stream(session, key).state)


def record_interaction(key: str, interaction_key: str, *, err_harm: bool, err_comp: bool, fired_harm: bool = True,
                       fired_comp: bool = True, participant_id: int | None = None, frozen_seq: int | None = None,
                       score_true: float | None = None, engine: Engine | None = None,
                       session: Session | None = None) -> RecordedUpdate:
    """Apply one finished interaction to the stream (idempotent per ``interaction_key``).

    Args:
        err_harm, err_comp, fired_harm, fired_comp: the interaction's outcome
            (``controller.interaction_errors``), computed with the thresholds it froze.
        frozen_seq: the stream's update count when those thresholds were read (``open_stream``);
            None means "just now" (no delay).
        score_true: s(Y); required while the stream is calibrating.
        session: a step's ``after_submit`` passes ``ctx.session``, so the update joins that open
            write transaction and the answer and the threshold update commit together.
    """
    outcome = _Outcome(bool(err_harm), bool(err_comp), bool(fired_harm), bool(fired_comp), participant_id,
                       frozen_seq, None if score_true is None else float(score_true))
    if session is not None:
        return _record(session, key, interaction_key, outcome)
    with write_transaction(engine) as own:
        return _record(own, key, interaction_key, outcome)


@dataclass(frozen=True)
class _Outcome:
    err_harm: bool
    err_comp: bool
    fired_harm: bool
    fired_comp: bool
    participant_id: int | None
    frozen_seq: int | None
    score_true: float | None


def phase_of(seq: int, frozen_seq: int | None, calibration_size: int) -> str:
    """Which part of the stream update ``seq`` belongs to (see the module docstring)."""
    frozen = seq - 1 if frozen_seq is None else frozen_seq
    if seq <= calibration_size:
        return "calibration"
    if frozen < calibration_size:
        return "excluded"
    return "online"


def _fit(stream: ControllerStream, batch: list[tuple[float | None, bool, bool]]) -> tuple[ControllerState, dict]:
    """q_1 from the calibration batch [(s(Y), fired_harm, fired_comp)]; the initial state if it cannot be fitted."""
    initial = ControllerState.from_dict(stream.initial_state)
    scores = np.array([s for s, _, _ in batch], dtype=float)
    fired_h = np.array([f for _, f, _ in batch], dtype=bool)
    fired_c = np.array([f for _, _, f in batch], dtype=bool)
    try:
        # Critical score: the smallest threshold without a violation, s(Y) when the rule fired, else -inf.
        fitted = calibrate_critical(initial.config, np.where(fired_h, scores, -np.inf),
                                    np.where(fired_c, scores, -np.inf))
    except ValueError as exc:
        return initial, {"status": "failed", "seq": len(batch), "state": initial.to_dict(),
                         "note": f"kept the initial thresholds: {exc}"}
    return fitted, {"status": "fitted", "seq": len(batch), "state": fitted.to_dict(), "note": None}


def _record(session: Session, key: str, interaction_key: str, outcome: _Outcome) -> RecordedUpdate:
    stream = _stream(session, key, lock=True)
    done = session.exec(select(ControllerUpdate).where(
        ControllerUpdate.stream_id == stream.id, ControllerUpdate.interaction_key == interaction_key)).first()
    state = ControllerState.from_dict(stream.state)
    if done is not None:
        return RecordedUpdate(done.seq, state, state, duplicate=True, phase=done.phase)
    seq = stream.updates + 1
    if outcome.frozen_seq is not None and not 0 <= outcome.frozen_seq < seq:
        raise StreamError(f"stream {key!r}: frozen_seq {outcome.frozen_seq} is not an earlier update count "
                          f"(the stream has {stream.updates} updates)")
    phase = phase_of(seq, outcome.frozen_seq, stream.calibration_size)
    if phase == "calibration" and outcome.score_true is None:
        raise StreamError(f"stream {key!r} is calibrating: record_interaction needs score_true")
    if (outcome.err_harm and not outcome.fired_harm) or (outcome.err_comp and not outcome.fired_comp):
        raise ValueError("a violation needs its rule to have fired on the truth (err implies fired)")
    after = step(state, outcome.err_harm, outcome.err_comp, outcome.fired_harm, outcome.fired_comp) \
        if phase == "online" else state
    session.add(ControllerUpdate(
        stream_id=stream.id, seq=seq, interaction_key=interaction_key, participant_id=outcome.participant_id,
        err_harm=outcome.err_harm, err_comp=outcome.err_comp, fired_harm=outcome.fired_harm,
        fired_comp=outcome.fired_comp, phase=phase, frozen_seq=outcome.frozen_seq, score_true=outcome.score_true,
        q_harm_before=state.q_harm, q_comp_before=state.q_comp, q_harm_after=after.q_harm, q_comp_after=after.q_comp,
    ))
    if phase == "calibration" and seq == stream.calibration_size:
        session.flush()
        rows = session.exec(select(ControllerUpdate.score_true, ControllerUpdate.fired_harm,
                                   ControllerUpdate.fired_comp)
                            .where(ControllerUpdate.stream_id == stream.id, ControllerUpdate.phase == "calibration")
                            .order_by(ControllerUpdate.seq)).all()
        after, stream.calibration = _fit(stream, [tuple(r) for r in rows])
    stream.state = after.to_dict()
    stream.updates = seq
    stream.updated_at = utcnow()
    session.add(stream)
    return RecordedUpdate(seq, state, after, phase=phase)


@dataclass(frozen=True)
class StreamSnapshot:
    """What an interaction freezes: the thresholds in force and the stream's update count then."""

    state: ControllerState
    updates: int
    calibrating: bool


def stream_snapshot(stream: ControllerStream) -> StreamSnapshot:
    return StreamSnapshot(ControllerState.from_dict(stream.state), stream.updates,
                          stream.updates < stream.calibration_size)


def _updates(session: Session, stream: ControllerStream) -> list[ControllerUpdate]:
    return list(session.exec(
        select(ControllerUpdate).where(ControllerUpdate.stream_id == stream.id).order_by(ControllerUpdate.seq)
    ).all())


def history(key: str, *, engine: Engine | None = None) -> list[ControllerUpdate]:
    """The stream's updates in the order they were applied."""
    with read_session(engine) as session:
        return _updates(session, _stream(session, key))


def audit(key: str, *, engine: Engine | None = None) -> ControllerState:
    """Replay the stored updates from the initial state; raise ``StreamError`` if anything does not match.

    Checks: sequence numbers are 1..n without gaps, each update's phase follows from its seq and
    frozen_seq, each started from the thresholds the previous one ended with, the calibration fit
    recomputed from the batch equals the stored one, and the replayed final state equals the stored one.
    """
    return audit_report(key, engine=engine).state


@dataclass
class StreamAudit:
    """A replayed stream: its final state, phase counts, delays, and the guarantee over its online part.

    ``bound`` is the delay-aware bound (``controller.upper_bound`` with D = ``max_delay``),
    ``bound_no_delay`` the textbook one (D = 0); None where there is no guarantee (η = 0) or no
    online interaction yet. ``delays_known`` is False when some online update did not record
    ``frozen_seq`` (taken as no delay).
    """

    key: str
    state: ControllerState
    updates: int
    calibration_size: int
    calibration: dict | None
    phases: dict = field(default_factory=dict)
    max_delay: int = 0
    mean_delay: float = 0.0
    delays_known: bool = True
    violation_rate: dict = field(default_factory=dict)
    target: dict = field(default_factory=dict)
    bound: dict = field(default_factory=dict)
    bound_no_delay: dict = field(default_factory=dict)
    within_bound: dict = field(default_factory=dict)

    history: list = field(default_factory=list, repr=False)  # the replayed ControllerUpdate rows, in order

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("state", "history")}
        out["state"] = self.state.to_dict()
        return out


def delay_of(update: ControllerUpdate) -> int:
    """Updates applied between the interaction freezing its thresholds and its own update (0 if unknown)."""
    return 0 if update.frozen_seq is None else update.seq - 1 - update.frozen_seq


def audit_report(key: str, *, engine: Engine | None = None) -> StreamAudit:
    """``audit`` plus the stream's guarantee: rates, delays and the delay-aware bound of its online part."""
    with read_session(engine) as session:
        stream = _stream(session, key)
        updates = _updates(session, stream)
    state = ControllerState.from_dict(stream.initial_state)
    stored = ControllerState.from_dict(stream.state)
    batch, delays, phases = [], [], dict.fromkeys(PHASES, 0)
    known = True
    for expected_seq, update in enumerate(updates, start=1):
        if update.seq != expected_seq:
            raise StreamError(f"stream {key!r}: update {expected_seq} is missing (found seq {update.seq})")
        if update.phase != phase_of(update.seq, update.frozen_seq, stream.calibration_size):
            raise StreamError(f"stream {key!r}: update {update.seq} is marked {update.phase!r}, which its "
                              f"frozen_seq {update.frozen_seq} and the calibration size {stream.calibration_size} "
                              "contradict")
        if not (math.isclose(update.q_harm_before, state.q_harm) and math.isclose(update.q_comp_before, state.q_comp)):
            raise StreamError(f"stream {key!r}: update {update.seq} did not start from the previous thresholds")
        phases[update.phase] += 1
        if update.phase == "calibration":
            batch.append((update.score_true, update.fired_harm, update.fired_comp))
            if update.seq == stream.calibration_size:
                state, fit = _fit(stream, batch)
                if stream.calibration is None or ControllerState.from_dict(stream.calibration["state"]) != state:
                    raise StreamError(f"stream {key!r}: refitting the calibration batch does not give the stored q_1")
        elif update.phase == "online":
            state = step(state, update.err_harm, update.err_comp, update.fired_harm, update.fired_comp)
            delays.append(delay_of(update))
            known = known and update.frozen_seq is not None
    if state != stored:
        raise StreamError(f"stream {key!r}: replaying {stream.updates} updates does not give the stored state")
    report = StreamAudit(key=key, state=state, updates=len(updates), calibration_size=stream.calibration_size,
                         calibration=stream.calibration, phases=phases, max_delay=max(delays, default=0),
                         mean_delay=float(np.mean(delays)) if delays else 0.0, delays_known=known,
                         history=updates)
    cfg = state.config
    for name, step_size, alpha, q1 in (("harm", state.step_harm, cfg.alpha_harm, state.q1_harm),
                                       ("comp", state.step_comp, cfg.alpha_comp, state.q1_comp)):
        n = getattr(state, f"n_fired_{name}") if cfg.conditional else state.t
        rate = getattr(state, f"n_err_{name}") / n if n else 0.0
        bound = upper_bound(n, step_size, alpha, q1, cfg.score_bound, delay=report.max_delay)
        plain = upper_bound(n, step_size, alpha, q1, cfg.score_bound)
        report.violation_rate[name] = rate
        report.target[name] = alpha
        report.bound[name] = bound if math.isfinite(bound) else None
        report.bound_no_delay[name] = plain if math.isfinite(plain) else None
        report.within_bound[name] = None if report.bound[name] is None else bool(rate <= alpha + bound + 1e-12)
    return report
