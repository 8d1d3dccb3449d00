"""Controller state in the database: one update per finished interaction, in order, none lost or doubled."""

from __future__ import annotations

import numpy as np
import pytest

from engines.collab import store
from engines.collab.controller import ControllerConfig, ControllerState, step
from tests.helpers import run_threads

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

    def participant(i):
        for j in range(4):
            store.record_interaction("s:b", f"p{i}:{j}", err_harm=(i + j) % 3 == 0, err_comp=(i * j) % 2 == 1)

    run_threads(participant, 50)
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
    with pytest.raises(store.StreamError, match=r"update 2 \(p:1\) records .* as applied, but replaying it gives"):
        store.audit("s:c")


def test_unknown_stream_is_a_clear_error(sqlite_db):
    with pytest.raises(store.StreamError, match="No controller stream 'nope'"):
        store.record_interaction("nope", "x", err_harm=False, err_comp=False)


def test_ensure_stream_keeps_existing_state(sqlite_db):
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:d", initial)
    store.record_interaction("s:d", "k", err_harm=True, err_comp=True)
    assert store.ensure_stream("s:d", initial).t == 1


# Calibration batch and delays

def _calibrate(key: str, scores, fired, start: int = 0, q_init: float = 0.5):
    # Errors as the study computes them at the batch's thresholds (both q_init): the rule fired and s(Y) > q.
    for i, (s, f) in enumerate(zip(scores, fired, strict=True)):
        err = f and s > q_init
        store.record_interaction(key, f"cal:{start + i}", err_harm=err, err_comp=err, fired_harm=f, fired_comp=f,
                                 score_true=s)


def test_calibration_batch_fits_q1_then_goes_online(any_db):
    from engines.collab.controller import calibrate_critical

    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:cal", initial, calibration_size=20)
    scores = [round(0.05 * i, 2) for i in range(20)]
    fired = [i % 4 != 0 for i in range(20)]
    _calibrate("s:cal", scores[:19], fired[:19])
    assert store.current_state("s:cal") == initial  # the batch runs at the initial thresholds
    _calibrate("s:cal", scores[19:], fired[19:], start=19)
    fitted = store.current_state("s:cal")
    expected = calibrate_critical(CONFIG, np.where(fired, scores, -np.inf), np.where(fired, scores, -np.inf))
    assert fitted == expected and fitted.t == 0 and fitted.q1_harm == fitted.q_harm
    online = store.record_interaction("s:cal", "p:1", err_harm=True, err_comp=False, frozen_seq=20)
    assert online.phase == "online" and online.after == step(fitted, True, False)
    report = store.audit_report("s:cal")
    assert report.phases == {"calibration": 20, "excluded": 0, "online": 1}
    assert report.calibration["status"] == "fitted" and report.state == online.after
    assert [u.phase for u in store.history("s:cal")] == ["calibration"] * 20 + ["online"]


def test_calibrating_stream_needs_the_true_score(sqlite_db):
    store.ensure_stream("s:need", ControllerState.initial(CONFIG), calibration_size=3)
    with pytest.raises(store.StreamError, match="calibrating: record_interaction needs score_true"):
        store.record_interaction("s:need", "p:0", err_harm=False, err_comp=False)
    assert store.history("s:need") == []  # nothing half-written


def test_interaction_frozen_before_the_fit_is_recorded_but_not_applied(sqlite_db):
    store.ensure_stream("s:exc", ControllerState.initial(CONFIG), calibration_size=5)
    _calibrate("s:exc", [0.1, 0.2, 0.3, 0.4, 0.5], [True] * 5)
    fitted = store.current_state("s:exc")
    late = store.record_interaction("s:exc", "late", err_harm=True, err_comp=True, frozen_seq=2, score_true=0.9)
    assert late.phase == "excluded" and late.after == fitted
    assert store.current_state("s:exc") == fitted
    report = store.audit_report("s:exc")
    assert report.phases["excluded"] == 1 and report.state.t == 0


def test_failed_fit_keeps_the_initial_thresholds_with_a_note(sqlite_db):
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.1, conditional=True)
    initial = ControllerState.initial(cfg)
    store.ensure_stream("s:never", initial, calibration_size=3)
    _calibrate("s:never", [0.2, 0.3, 0.4], [False] * 3)  # the rule never fired: no π̂ for the conditional variant
    report = store.audit_report("s:never")
    assert report.calibration["status"] == "failed" and "never fires" in report.calibration["note"]
    assert store.current_state("s:never") == initial


def test_audit_reports_delays_and_the_delay_aware_bound(sqlite_db):
    from engines.collab.controller import upper_bound

    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:delay", initial)
    # Three participants freeze at 0 updates; they finish one after another: delays 0, 1, 2.
    for i in range(3):
        store.record_interaction("s:delay", f"p{i}", err_harm=i == 2, err_comp=False, frozen_seq=0)
    store.record_interaction("s:delay", "p3", err_harm=False, err_comp=False)  # no frozen_seq: taken as no delay
    report = store.audit_report("s:delay")
    assert report.max_delay == 2 and report.mean_delay == pytest.approx(0.75) and not report.delays_known
    assert report.violation_rate["harm"] == pytest.approx(0.25)
    assert report.bound["harm"] == pytest.approx(upper_bound(4, 0.05, 0.1, 0.5, 1.0, delay=2))
    assert report.bound_no_delay["harm"] == pytest.approx(upper_bound(4, 0.05, 0.1, 0.5, 1.0))
    assert report.bound["harm"] > report.bound_no_delay["harm"]
    with pytest.raises(store.StreamError, match="frozen_seq 9 is not an earlier update count"):
        store.record_interaction("s:delay", "p4", err_harm=False, err_comp=False, frozen_seq=9)


def test_audit_detects_a_relabelled_phase(sqlite_db):
    from engines.collab.models import ControllerUpdate
    from engines.platform.db import write_transaction

    store.ensure_stream("s:tamper", ControllerState.initial(CONFIG), calibration_size=2)
    _calibrate("s:tamper", [0.1, 0.2], [True, True])
    store.record_interaction("s:tamper", "p", err_harm=False, err_comp=False, frozen_seq=2)
    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history("s:tamper")[0].id)
        row.phase = "online"
        session.add(row)
    with pytest.raises(store.StreamError, match="is marked 'online'"):
        store.audit("s:tamper")
