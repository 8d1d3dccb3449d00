"""Controller state in the database: one transaction per finished interaction, in finishing order.

Many participants of one condition share one controller stream. When an interaction finishes,
``record_interaction`` locks the stream row, applies ``controller.step`` to the stored state,
appends the update with the next sequence number, and commits, all at once: no update is lost,
and a resent one (same ``interaction_key``) is not applied twice. ``audit`` replays the stored
sequence from the initial state and checks it reproduces the stored thresholds, so the
guarantee can be checked after the fact however many participants ran at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from engines.collab.controller import ControllerState, step
from engines.collab.models import ControllerStream, ControllerUpdate
from engines.platform.db import read_session, write_transaction
from engines.platform.models import utcnow


class StreamError(ValueError):
    """A controller stream is missing or its stored history does not add up."""


@dataclass(frozen=True)
class RecordedUpdate:
    seq: int
    before: ControllerState
    after: ControllerState
    duplicate: bool = False


def ensure_stream(key: str, initial: ControllerState, *, study_id: int | None = None, condition: str | None = None,
                  engine: Engine | None = None) -> ControllerState:
    """The stream's current state, creating the stream with ``initial`` if it does not exist yet."""
    for _attempt in range(2):
        try:
            with write_transaction(engine) as session:
                stream = session.exec(select(ControllerStream).where(ControllerStream.key == key)).first()
                if stream is not None:
                    return ControllerState.from_dict(stream.state)
                session.add(ControllerStream(key=key, study_id=study_id, condition=condition,
                                             initial_state=initial.to_dict(), state=initial.to_dict()))
                return initial
        except IntegrityError:
            continue  # created by a concurrent caller (PostgreSQL); read theirs
    return current_state(key, engine=engine)


def current_state(key: str, *, engine: Engine | None = None) -> ControllerState:
    with read_session(engine) as session:
        stream = session.exec(select(ControllerStream).where(ControllerStream.key == key)).first()
        if stream is None:
            raise StreamError(f"No controller stream {key!r}.")
        return ControllerState.from_dict(stream.state)


def record_interaction(key: str, interaction_key: str, *, err_harm: bool, err_comp: bool, fired_harm: bool = True,
                       fired_comp: bool = True, participant_id: int | None = None,
                       engine: Engine | None = None, session: Session | None = None) -> RecordedUpdate:
    """Apply one finished interaction to the stream (idempotent per ``interaction_key``).

    With ``session`` (a step's ``after_submit`` passes ``ctx.session``) the update joins that
    open write transaction, so the answer and the threshold update commit together.
    """
    if session is not None:
        return _record(session, key, interaction_key, err_harm, err_comp, fired_harm, fired_comp, participant_id)
    with write_transaction(engine) as own:
        return _record(own, key, interaction_key, err_harm, err_comp, fired_harm, fired_comp, participant_id)


def _record(session: Session, key: str, interaction_key: str, err_harm: bool, err_comp: bool, fired_harm: bool,
            fired_comp: bool, participant_id: int | None) -> RecordedUpdate:
    stream = session.exec(
        select(ControllerStream).where(ControllerStream.key == key).with_for_update()
    ).first()
    if stream is None:
        raise StreamError(f"No controller stream {key!r}.")
    done = session.exec(select(ControllerUpdate).where(
        ControllerUpdate.stream_id == stream.id, ControllerUpdate.interaction_key == interaction_key)).first()
    state = ControllerState.from_dict(stream.state)
    if done is not None:
        return RecordedUpdate(done.seq, state, state, duplicate=True)
    after = step(state, err_harm, err_comp, fired_harm, fired_comp)
    seq = stream.updates + 1
    session.add(ControllerUpdate(
        stream_id=stream.id, seq=seq, interaction_key=interaction_key, participant_id=participant_id,
        err_harm=bool(err_harm), err_comp=bool(err_comp), fired_harm=bool(fired_harm), fired_comp=bool(fired_comp),
        q_harm_before=state.q_harm, q_comp_before=state.q_comp, q_harm_after=after.q_harm, q_comp_after=after.q_comp,
    ))
    stream.state = after.to_dict()
    stream.updates = seq
    stream.updated_at = utcnow()
    session.add(stream)
    return RecordedUpdate(seq, state, after)


def history(key: str, *, engine: Engine | None = None) -> list[ControllerUpdate]:
    """The stream's updates in the order they were applied."""
    with read_session(engine) as session:
        stream = session.exec(select(ControllerStream).where(ControllerStream.key == key)).first()
        if stream is None:
            raise StreamError(f"No controller stream {key!r}.")
        return list(session.exec(
            select(ControllerUpdate).where(ControllerUpdate.stream_id == stream.id).order_by(ControllerUpdate.seq)
        ).all())


def audit(key: str, *, engine: Engine | None = None) -> ControllerState:
    """Replay the stored updates from the initial state; raise if anything does not match.

    Checks: sequence numbers are 1..n without gaps, each update started from the thresholds the
    previous one ended with, and the replayed final state equals the stored one.
    """
    with read_session(engine) as session:
        stream = session.exec(select(ControllerStream).where(ControllerStream.key == key)).first()
        if stream is None:
            raise StreamError(f"No controller stream {key!r}.")
        initial, stored = ControllerState.from_dict(stream.initial_state), ControllerState.from_dict(stream.state)
    state = initial
    for expected_seq, update in enumerate(history(key, engine=engine), start=1):
        if update.seq != expected_seq:
            raise StreamError(f"stream {key!r}: update {expected_seq} is missing (found seq {update.seq})")
        if not (math.isclose(update.q_harm_before, state.q_harm) and math.isclose(update.q_comp_before, state.q_comp)):
            raise StreamError(f"stream {key!r}: update {update.seq} did not start from the previous thresholds")
        state = step(state, update.err_harm, update.err_comp, update.fired_harm, update.fired_comp)
    if state != stored:
        raise StreamError(f"stream {key!r}: replaying {stream.updates} updates does not give the stored state")
    return state
