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


def _three_checked_updates(key: str) -> None:
    """Three online updates with s(Y) recorded, so the audit can check every stored field of a row.

    Thresholds by hand (q_1 = 0.5 both, η = 0.05, α_H = 0.1, α_C = 0.3):
    p:0 s(Y) = 0.2, no error   -> (0.5 − 0.005, 0.5 − 0.015) = (0.495, 0.485);
    p:1 s(Y) = 0.9 > both, both rules fired, both errors -> (0.495 + 0.045, 0.485 + 0.035) = (0.54, 0.52);
    p:2 s(Y) = 0.3, only the protect rule fired, no error -> (0.535, 0.505).
    """
    store.ensure_stream(key, ControllerState.initial(CONFIG))
    store.record_interaction(key, "p:0", err_harm=False, err_comp=False, score_true=0.2, frozen_seq=0)
    store.record_interaction(key, "p:1", err_harm=True, err_comp=True, score_true=0.9, frozen_seq=1)
    store.record_interaction(key, "p:2", err_harm=False, err_comp=False, fired_comp=False, score_true=0.3,
                             frozen_seq=2)


def _corrupt_row(key: str, seq: int, **values) -> None:
    from engines.collab.models import ControllerUpdate
    from engines.platform.db import write_transaction

    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history(key)[seq - 1].id)
        for name, value in values.items():
            setattr(row, name, value)
        session.add(row)


def test_the_untampered_history_audits_to_the_hand_computed_state(any_db):
    _three_checked_updates("s:c")
    final = store.audit("s:c")
    assert (final.q_harm, final.q_comp) == (pytest.approx(0.535), pytest.approx(0.505))
    assert (final.t, final.n_err_harm, final.n_err_comp, final.n_fired_comp) == (3, 1, 1, 2)


@pytest.mark.parametrize("field, value, message", [
    ("err_harm", False, r"update 2 \(p:1\) records no harm error, but its rule fired and s\(Y\) = 0\.9"),
    ("err_comp", False, r"update 2 \(p:1\) records no comp error, but its rule fired and s\(Y\) = 0\.9"),
    ("fired_harm", False, r"update 2 \(p:1\) records a harm error although its rule never fired"),
    ("fired_comp", False, r"update 2 \(p:1\) records a comp error although its rule never fired"),
    ("score_true", 0.49, r"update 2 \(p:1\) records a harm error, but s\(Y\) = 0\.49 <= its frozen q_harm = 0\.495"),
    ("q_harm_before", 0.125, r"update 2 \(p:1\) starts from \(0\.125, 0\.485\), but update 1 ended with "
                             r"\(0\.495, 0\.485\)"),
    ("q_comp_before", 0.125, r"update 2 \(p:1\) starts from \(0\.495, 0\.125\), but update 1 ended with "
                             r"\(0\.495, 0\.485\)"),
    ("q_harm_after", 0.125, r"update 2 \(p:1\) records \(0\.125, 0\.52\) as applied, but replaying it gives "
                            r"\(0\.54, 0\.52\)"),
    ("q_comp_after", 0.125, r"update 2 \(p:1\) records \(0\.54, 0\.125\) as applied, but replaying it gives "
                            r"\(0\.54, 0\.52\)"),
    ("phase", "excluded", r"update 2 \(p:1\) is marked 'excluded', which its frozen_seq 1 and the calibration "
                          r"size 0 contradict"),
])
def test_audit_names_each_tampered_field_of_a_row(sqlite_db, field, value, message):
    _three_checked_updates("s:c")
    _corrupt_row("s:c", 2, **{field: value})
    with pytest.raises(store.StreamError, match=message):
        store.audit("s:c")


@pytest.mark.parametrize("change", ["delete update 2", "renumber update 3 as 4"])
def test_audit_names_a_gap_in_the_sequence_numbers(sqlite_db, change):
    from engines.collab.models import ControllerUpdate
    from engines.platform.db import write_transaction

    _three_checked_updates("s:gap")
    with write_transaction() as session:
        if change == "delete update 2":
            session.delete(session.get(ControllerUpdate, store.history("s:gap")[1].id))
        else:  # the chain of thresholds is intact: only the numbering says an update is missing
            row = session.get(ControllerUpdate, store.history("s:gap")[2].id)
            row.seq = 4
            session.add(row)
    found = 3 if change == "delete update 2" else 4
    missing = 2 if change == "delete update 2" else 3
    with pytest.raises(store.StreamError, match=rf"stream 's:gap': update {missing} is missing \(found seq {found}\)"):
        store.audit("s:gap")


@pytest.mark.parametrize("frozen_seq", [2, 7, -1])
def test_audit_names_a_frozen_seq_that_is_not_an_earlier_update_count(sqlite_db, frozen_seq):
    """Update 2 can only have frozen at count 0 or 1: any other value is named, not an IndexError."""
    from engines.collab.models import ControllerUpdate
    from engines.platform.db import write_transaction

    _three_checked_updates("s:frozen")
    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history("s:frozen")[1].id)
        row.frozen_seq = frozen_seq
        session.add(row)
    with pytest.raises(store.StreamError, match=rf"update 2 .* has frozen_seq {frozen_seq}, which is not an earlier"):
        store.audit("s:frozen")


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


def test_the_calibration_batch_is_exactly_the_first_n_updates(any_db):
    """calibration_size = 3: updates 1, 2, 3 are the batch (the 3rd fits q_1); update 4, frozen at 3, is online."""
    store.ensure_stream("s:edge", ControllerState.initial(CONFIG), calibration_size=3)
    phases = [store.record_interaction("s:edge", f"cal:{i}", err_harm=False, err_comp=False, score_true=0.1 * i,
                                       frozen_seq=i).phase for i in range(3)]
    fitted = store.current_state("s:edge")
    after = store.record_interaction("s:edge", "first online", err_harm=False, err_comp=False, frozen_seq=3)
    assert phases + [after.phase] == ["calibration", "calibration", "calibration", "online"]
    assert after.before == fitted and after.after.t == 1  # the first online update is applied
    assert store.audit_report("s:edge").phases == {"calibration": 3, "excluded": 0, "online": 1}


@pytest.mark.parametrize("frozen_seq, phase, applied", [(2, "excluded", 0), (3, "online", 1)])
def test_an_update_frozen_before_the_fit_is_excluded_and_one_frozen_at_the_fit_is_online(sqlite_db, frozen_seq,
                                                                                      phase, applied):
    """calibration_size = 3: thresholds frozen after 2 updates are the starting ones (excluded); after 3, the fit's."""
    store.ensure_stream("s:froze", ControllerState.initial(CONFIG), calibration_size=3)
    _calibrate("s:froze", [0.1, 0.2, 0.3], [True] * 3)
    late = store.record_interaction("s:froze", "late", err_harm=False, err_comp=False, frozen_seq=frozen_seq,
                                    score_true=0.2)
    assert late.phase == phase and late.after.t == applied
    assert store.audit_report("s:froze").phases[phase] == 1


def test_failed_fit_keeps_the_initial_thresholds_with_a_note(sqlite_db):
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.1, conditional=True)
    initial = ControllerState.initial(cfg)
    store.ensure_stream("s:never", initial, calibration_size=3)
    _calibrate("s:never", [0.2, 0.3, 0.4], [False] * 3)  # the rule never fired: no π̂ for the conditional variant
    report = store.audit_report("s:never")
    assert report.calibration["status"] == "failed" and "never fires" in report.calibration["note"]
    assert store.current_state("s:never") == initial


def test_audit_reports_delays_and_the_delay_aware_bound(sqlite_db):
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("s:delay", initial)
    # Three participants freeze at 0 updates; they finish one after another: delays 0, 1, 2.
    for i in range(3):
        store.record_interaction("s:delay", f"p{i}", err_harm=i == 2, err_comp=False, frozen_seq=0)
    store.record_interaction("s:delay", "p3", err_harm=False, err_comp=False)  # no frozen_seq: taken as no delay
    report = store.audit_report("s:delay")
    assert report.max_delay == 2 and report.mean_delay == pytest.approx(0.75) and not report.delays_known
    assert report.violation_rate["harm"] == pytest.approx(0.25)
    # By hand, B = 1, η = 0.05, α_H = 0.1, q_1 = 0.5, n = 4; the only harm error (p2) had delay D = 2:
    # (1 + (2+1)·0.05·0.9 − 0.5)/(0.05·4) = 0.635/0.2 = 3.175, and with D = 0: 0.545/0.2 = 2.725.
    assert report.latest_error_delay["harm"] == 2
    assert report.bound["harm"] == pytest.approx(3.175)
    assert report.bound_no_delay["harm"] == pytest.approx(2.725)
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
