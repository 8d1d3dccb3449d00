"""Controller state in the database: one transaction per finished interaction, in finishing order.

Many participants of one condition share one controller stream. When an interaction finishes,
``record_interaction`` locks the stream row, applies ``controller.step`` to the stored state,
appends the update with the next sequence number, and commits, all at once: no update is lost,
and a resent one (same ``interaction_key``) is not applied twice. ``audit`` replays the stored
sequence from the initial state and checks it reproduces the stored thresholds, so the
guarantee can be checked after the fact however many participants ran at once.

Calibration batch (``docs/collab.md``, Method, "Initial thresholds"): a stream created with
``calibration_size=n`` shows its initial thresholds to its first n interactions and only records
them (with s(Y) and whether each rule fired); the n-th update fits q_1
(``controller.calibrate_critical``) and online updates start from there. An interaction that froze
its thresholds before the fit but finishes after it is recorded as "excluded": its errors belong to
the old thresholds, so applying it would break the bound's argument.

Delays: with overlapping participants an interaction's thresholds are older than the state its
update is applied to. The caller passes ``frozen_seq`` (the stream's update count when it froze
them); ``audit_report`` turns the delay of the latest update with an error into the delay-aware
bound (``controller.latest_error_delay``, ``controller.upper_bound(..., delay=D)``), and also
reports the bound with the stream's largest delay.

Every row records the thresholds before and after it was applied, as applied: the row that
completes the calibration batch ends with the fitted thresholds, which the next row starts from.
The audit checks that chain, each error flag against the stored s(Y), the rule flags and the
thresholds the interaction froze, and (given the participants' records) what each participant
was shown.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.collab.controller import (
    ControllerState,
    calibrate_critical,
    check_scores,
    latest_error_delay,
    step,
    upper_bound,
)
from engines.collab.models import ControllerStream, ControllerUpdate
from engines.platform.db import read_session, write_transaction
from engines.platform.files import echo
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
        raise StreamError(f"No controller stream {echo(key)}.")
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
        raise ValueError(f"calibration_size must be >= 0, got {echo(calibration_size)}")
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
        raise StreamError(f"stream {echo(key)}: frozen_seq {outcome.frozen_seq} is not an earlier update count "
                          f"(the stream has {stream.updates} updates)")
    phase = phase_of(seq, outcome.frozen_seq, stream.calibration_size)
    if phase == "calibration" and outcome.score_true is None:
        raise StreamError(f"stream {echo(key)} is calibrating: record_interaction needs score_true")
    if outcome.score_true is not None:
        check_scores(outcome.score_true, state.config.score_bound, what=f"stream {echo(key)}: score_true")
    if (outcome.err_harm and not outcome.fired_harm) or (outcome.err_comp and not outcome.fired_comp):
        raise ValueError("a violation needs its rule to have fired on the truth (err implies fired)")
    after = step(state, outcome.err_harm, outcome.err_comp, outcome.fired_harm, outcome.fired_comp) \
        if phase == "online" else state
    if phase == "calibration" and seq == stream.calibration_size:
        # This row completes the batch: q_1 is fitted now, and the row records it as what was applied.
        rows = session.exec(select(ControllerUpdate.score_true, ControllerUpdate.fired_harm,
                                   ControllerUpdate.fired_comp)
                            .where(ControllerUpdate.stream_id == stream.id, ControllerUpdate.phase == "calibration")
                            .order_by(ControllerUpdate.seq)).all()
        batch = [tuple(r) for r in rows] + [(outcome.score_true, outcome.fired_harm, outcome.fired_comp)]
        after, stream.calibration = _fit(stream, batch)
    session.add(ControllerUpdate(
        stream_id=stream.id, seq=seq, interaction_key=interaction_key, participant_id=outcome.participant_id,
        err_harm=outcome.err_harm, err_comp=outcome.err_comp, fired_harm=outcome.fired_harm,
        fired_comp=outcome.fired_comp, phase=phase, frozen_seq=outcome.frozen_seq, score_true=outcome.score_true,
        q_harm_before=state.q_harm, q_comp_before=state.q_comp, q_harm_after=after.q_harm, q_comp_after=after.q_comp,
    ))
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


def audit(key: str, *, engine: Engine | None = None,
          claims: Iterable[FrozenClaim] = ()) -> ControllerState:
    """Replay the stored updates from the initial state; raise ``StreamError`` naming the row if anything does not match.

    Checks (``audit_report``): sequence numbers are 1..n without gaps; each update's phase follows
    from its seq and frozen_seq; each row starts from the thresholds the previous row ended with
    and ends with the thresholds the replay gives (the calibration fit recomputed from the batch
    included); each error flag agrees with the stored s(Y), the rule flags and the thresholds the
    interaction froze; the replayed final state equals the stored one; and each of ``claims`` (what
    participants' records say they were shown) agrees with the history.
    """
    return audit_report(key, engine=engine, claims=claims).state


@dataclass(frozen=True)
class FrozenClaim:
    """What a participant's record says one interaction was shown, for the audit to check against the stream.

    ``frozen_seq`` is the update count at which the thresholds ``q_harm``/``q_comp`` were frozen;
    ``interaction_key`` names the interaction's update (None while it is unfinished); ``where``
    names the record in messages (e.g. "participant 12, interaction 3").
    """

    where: str
    frozen_seq: int
    q_harm: float
    q_comp: float
    interaction_key: str | None = None


@dataclass
class StreamAudit:
    """A replayed stream: its final state, phase counts, delays, and the guarantee over its online part.

    ``bound`` is the delay-aware bound with D the delay of the latest update with an error
    (``latest_error``, per constraint; ``controller.latest_error_delay``), ``bound_max_delay`` the
    one with D = ``max_delay`` (what one slow participant would cost if the maximum were used),
    ``bound_no_delay`` the textbook one (D = 0); None where there is no guarantee (η = 0) or no
    online interaction yet. ``delays`` lists each online update's delay in order.
    ``delays_known`` is False when some online update did not record ``frozen_seq`` (taken as no delay).
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
    latest_error_delay: dict = field(default_factory=dict)
    violation_rate: dict = field(default_factory=dict)
    target: dict = field(default_factory=dict)
    bound: dict = field(default_factory=dict)
    bound_max_delay: dict = field(default_factory=dict)
    bound_no_delay: dict = field(default_factory=dict)
    within_bound: dict = field(default_factory=dict)
    claims_checked: int = 0

    history: list = field(default_factory=list, repr=False)  # the replayed ControllerUpdate rows, in order
    delays: list = field(default_factory=list, repr=False)  # per online update, in order

    def to_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("state", "history", "delays")}
        out["state"] = self.state.to_dict()
        return out


def delay_of(update: ControllerUpdate) -> int:
    """Updates applied between the interaction freezing its thresholds and its own update (0 if unknown)."""
    return 0 if update.frozen_seq is None else update.seq - 1 - update.frozen_seq


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _check_errors(key: str, update: ControllerUpdate, frozen: tuple[float, float], score_bound: float) -> None:
    """The row's error flags against its rule flags, s(Y) and the thresholds it froze (``controller`` docstring).

    An error needs its rule to have fired and s(Y) above its threshold; a rule that fired with s(Y)
    above both thresholds leaves the truth out of the set whatever the rules, hence an error.
    """
    where = f"stream {echo(key)}: update {update.seq} ({update.interaction_key})"
    for name in ("harm", "comp"):
        if getattr(update, f"err_{name}") and not getattr(update, f"fired_{name}"):
            raise StreamError(f"{where} records a {name} error although its rule never fired on the truth")
    s = update.score_true
    if s is None:
        return
    if not (0.0 <= s <= score_bound):
        raise StreamError(f"{where}: its stored s(Y) = {echo(s)} is outside [0, {score_bound:g}]")
    q_h, q_c = frozen
    for name, q in (("harm", q_h), ("comp", q_c)):
        err, fired = getattr(update, f"err_{name}"), getattr(update, f"fired_{name}")
        if err and not s > q:
            raise StreamError(f"{where} records a {name} error, but s(Y) = {s:.6g} <= its frozen q_{name} = {q:.6g} "
                              "keeps the truth in the set")
        if fired and not err and s > max(q_h, q_c):
            raise StreamError(f"{where} records no {name} error, but its rule fired and s(Y) = {s:.6g} is above both "
                              f"frozen thresholds ({q_h:.6g}, {q_c:.6g}), which leaves the truth out")


def audit_report(key: str, *, engine: Engine | None = None, claims: Iterable[FrozenClaim] = ()) -> StreamAudit:
    """``audit`` plus the stream's guarantee: rates, delays and the delay-aware bound of its online part."""
    with read_session(engine) as session:
        stream = _stream(session, key)
        updates = _updates(session, stream)
    state = ControllerState.from_dict(stream.initial_state)
    stored = ControllerState.from_dict(stream.state)
    score_bound = state.config.score_bound
    batch, online, phases = [], [], dict.fromkeys(PHASES, 0)
    thresholds = [(state.q_harm, state.q_comp)]  # thresholds[i]: in force after i updates
    known = True
    for expected_seq, update in enumerate(updates, start=1):
        where = f"stream {echo(key)}: update {update.seq} ({update.interaction_key})"
        if update.seq != expected_seq:
            raise StreamError(f"stream {echo(key)}: update {expected_seq} is missing (found seq {update.seq})")
        if update.frozen_seq is not None and not 0 <= update.frozen_seq < update.seq:
            raise StreamError(f"{where} has frozen_seq {update.frozen_seq}, which is not an earlier update count "
                              f"(0..{update.seq - 1})")
        if update.phase != phase_of(update.seq, update.frozen_seq, stream.calibration_size):
            raise StreamError(f"{where} is marked {echo(update.phase)}, which its frozen_seq {update.frozen_seq} "
                              f"and the calibration size {stream.calibration_size} contradict")
        # The chain: each row starts where the previous one ended (the first where the stream started); each
        # row's end is checked against the replay below, so the chain is checked against the replay too.
        q_h, q_c = thresholds[-1]
        if not (_same(update.q_harm_before, q_h) and _same(update.q_comp_before, q_c)):
            before = f"update {update.seq - 1} ended with" if update.seq > 1 else "the stream started at"
            raise StreamError(f"{where} starts from ({update.q_harm_before:.6g}, {update.q_comp_before:.6g}), but "
                              f"{before} ({q_h:.6g}, {q_c:.6g})")
        frozen = update.seq - 1 if update.frozen_seq is None else update.frozen_seq
        _check_errors(key, update, thresholds[frozen], score_bound)
        phases[update.phase] += 1
        if update.phase == "calibration":
            batch.append((update.score_true, update.fired_harm, update.fired_comp))
            if update.seq == stream.calibration_size:
                state, _ = _fit(stream, batch)
                if stream.calibration is None or ControllerState.from_dict(stream.calibration["state"]) != state:
                    raise StreamError(f"{where}: refitting the calibration batch does not give the stored q_1")
        elif update.phase == "online":
            state = step(state, update.err_harm, update.err_comp, update.fired_harm, update.fired_comp)
            online.append(update)
            known = known and update.frozen_seq is not None
        if not (_same(update.q_harm_after, state.q_harm) and _same(update.q_comp_after, state.q_comp)):
            raise StreamError(f"{where} records ({update.q_harm_after:.6g}, {update.q_comp_after:.6g}) as applied, "
                              f"but replaying it gives ({state.q_harm:.6g}, {state.q_comp:.6g})")
        thresholds.append((update.q_harm_after, update.q_comp_after))
    if state != stored:
        raise StreamError(f"stream {echo(key)}: replaying {stream.updates} updates does not give the stored state")
    by_key = {u.interaction_key: u for u in updates}
    n_claims = 0
    for claim in claims:
        n_claims += 1
        if not 0 <= claim.frozen_seq < len(thresholds):
            raise StreamError(f"stream {echo(key)}: {claim.where} froze its thresholds at update {claim.frozen_seq}, "
                              f"but the stream has {len(updates)} updates")
        q_h, q_c = thresholds[claim.frozen_seq]
        if not (_same(claim.q_harm, q_h) and _same(claim.q_comp, q_c)):
            raise StreamError(f"stream {echo(key)}: {claim.where} was shown thresholds ({claim.q_harm:.6g}, "
                              f"{claim.q_comp:.6g}), but after update {claim.frozen_seq} the stream had "
                              f"({q_h:.6g}, {q_c:.6g})")
        row = by_key.get(claim.interaction_key)  # None (unfinished) names no row; "" is a key like any other
        if row is not None and row.frozen_seq != claim.frozen_seq:
            raise StreamError(f"stream {echo(key)}: update {row.seq} ({row.interaction_key}) records frozen_seq "
                              f"{row.frozen_seq}, but {claim.where} froze at {claim.frozen_seq}")
    delays = [delay_of(u) for u in online]
    report = StreamAudit(key=key, state=state, updates=len(updates), calibration_size=stream.calibration_size,
                         calibration=stream.calibration, phases=phases, max_delay=max(delays, default=0),
                         mean_delay=float(np.mean(delays)) if delays else 0.0, delays_known=known,
                         claims_checked=n_claims, history=updates, delays=delays)
    cfg = state.config
    for name, step_size, alpha, q1 in (("harm", state.step_harm, cfg.alpha_harm, state.q1_harm),
                                       ("comp", state.step_comp, cfg.alpha_comp, state.q1_comp)):
        n = getattr(state, f"n_fired_{name}") if cfg.conditional else state.t
        rate = getattr(state, f"n_err_{name}") / n if n else 0.0
        errors = np.array([getattr(u, f"err_{name}") for u in online], dtype=bool)
        latest = int(latest_error_delay(errors, np.array(delays, dtype=np.int64))[-1]) if delays else 0
        bound = upper_bound(n, step_size, alpha, q1, cfg.score_bound, delay=latest)
        widest = upper_bound(n, step_size, alpha, q1, cfg.score_bound, delay=report.max_delay)
        plain = upper_bound(n, step_size, alpha, q1, cfg.score_bound)
        report.latest_error_delay[name] = latest
        report.violation_rate[name] = rate
        report.target[name] = alpha
        report.bound[name] = bound if math.isfinite(bound) else None
        report.bound_max_delay[name] = widest if math.isfinite(widest) else None
        report.bound_no_delay[name] = plain if math.isfinite(plain) else None
        report.within_bound[name] = None if report.bound[name] is None else bool(rate <= alpha + bound + 1e-12)
    return report


# QUERIES


@dataclass(frozen=True)
class StreamInfo:
    """One controller stream in the database: its key, study and condition, and how many updates it has."""

    key: str
    study_id: int | None
    condition: str | None
    updates: int
    calibration_size: int
    study_slug: str | None = None


def list_streams(*, study: str | None = None, engine: Engine | None = None) -> list[StreamInfo]:
    """All controller streams by key, or only those of the study with slug ``study``."""
    with read_session(engine) as session:
        query = (select(ControllerStream, Study.slug).join(Study, Study.id == ControllerStream.study_id, isouter=True)
                 .order_by(ControllerStream.key))
        if study is not None:
            query = query.where(Study.slug == study)
        return [StreamInfo(s.key, s.study_id, s.condition, s.updates, s.calibration_size, slug)
                for s, slug in session.exec(query).all()]
