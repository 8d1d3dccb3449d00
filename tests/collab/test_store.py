"""Controller state in the database: one update per finished interaction, in order, none lost or doubled."""

from __future__ import annotations

import threading

import pytest

from engines.collab import store
from engines.collab.controller import ControllerConfig, ControllerState, step

CONFIG = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05)


def test_updates_follow_quantile_tracking_and_are_idempotent(any_db):
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:a", initial)
    first = store.record_interaction("s:a", "p1:1", err_harm=True, err_comp=False)
    assert first.seq == 1 and first.after == step(initial, True, False)
    assert first.after.q_harm == pytest.approx(initial.q_harm + 0.05 * (1 - 0.1))
    assert first.after.q_comp == pytest.approx(initial.q_comp + 0.05 * (0 - 0.3))
    again = store.record_interaction("s:a", "p1:1", err_harm=True, err_comp=False)  # resent
    assert again.duplicate and again.seq == 1
    assert store.current_state("s:a") == first.after
    assert [u.seq for u in store.history("s:a")] == [1]


def test_fifty_concurrent_participants_lose_no_update(any_db):
    store.ensure_stream("s:b", ControllerState.initial(CONFIG))
    errors = []
    barrier = threading.Barrier(50)

    def participant(i):
        try:
            barrier.wait()
            for j in range(4):
                store.record_interaction("s:b", f"p{i}:{j}", err_harm=(i + j) % 3 == 0, err_comp=(i * j) % 2 == 1)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=participant, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    updates = store.history("s:b")
    assert [u.seq for u in updates] == list(range(1, 201))
    assert len({u.interaction_key for u in updates}) == 200
    final = store.audit("s:b")  # replaying in the recorded order gives the stored thresholds
    assert final.t == 200 and final.n_err_harm == sum(u.err_harm for u in updates)


def test_audit_detects_a_tampered_history(sqlite_db):
    from engines.collab.models import ControllerUpdate
    from engines.platform.db import write_transaction

    store.ensure_stream("s:c", ControllerState.initial(CONFIG))
    for j in range(3):
        store.record_interaction("s:c", f"p:{j}", err_harm=False, err_comp=True)
    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history("s:c")[1].id)
        row.err_comp = False
        session.add(row)
    with pytest.raises(store.StreamError, match="did not start from the previous thresholds|does not give"):
        store.audit("s:c")


def test_unknown_stream_is_a_clear_error(sqlite_db):
    with pytest.raises(store.StreamError, match="No controller stream 'nope'"):
        store.record_interaction("nope", "x", err_harm=False, err_comp=False)


def test_ensure_stream_keeps_existing_state(sqlite_db):
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:d", initial)
    store.record_interaction("s:d", "k", err_harm=True, err_comp=True)
    assert store.ensure_stream("s:d", initial).t == 1
