"""The stream log is exact: each row records what was applied, and the audit names the row that disagrees.

Expected values are computed by hand here (split-conformal rank, quantile-tracking arithmetic),
not by the store's own functions.
"""

from __future__ import annotations

import math

import pytest
from sqlmodel import select

from engines.collab import store
from engines.collab.controller import ControllerConfig, ControllerState
from engines.collab.models import ControllerUpdate
from engines.platform.db import write_transaction

CONFIG = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05)  # q_1 = 0.5 before a fit


def _stream_with_a_fit(key: str) -> None:
    """A 10-interaction calibration batch at q = 0.5, then three online interactions at the fitted thresholds."""
    store.ensure_stream(key, ControllerState.initial(CONFIG), calibration_size=10)
    for i in range(10):
        s = 0.1 * i  # s(Y) = 0.0, 0.1, ..., 0.9; the rules fire every time
        store.record_interaction(key, f"cal:{i}", err_harm=s > 0.5, err_comp=s > 0.5, score_true=s)
    # Fitted by hand: rank ⌈11·0.9⌉ = 10 -> q^H = 0.9; rank ⌈11·0.7⌉ = 8 -> q^C = 0.7.
    store.record_interaction(key, "p:0", err_harm=False, err_comp=True, score_true=0.8, frozen_seq=10)
    store.record_interaction(key, "p:1", err_harm=False, err_comp=False, score_true=0.2, frozen_seq=10)
    store.record_interaction(key, "p:2", err_harm=True, err_comp=True, score_true=0.95, frozen_seq=11)


def _corrupt(key: str, seq: int, **values) -> None:
    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history(key)[seq - 1].id)
        for name, value in values.items():
            setattr(row, name, value)
        session.add(row)


def test_the_row_completing_the_calibration_batch_records_the_fitted_thresholds(any_db):
    _stream_with_a_fit("fit")
    rows = store.history("fit")
    assert (rows[9].q_harm_before, rows[9].q_comp_before) == (0.5, 0.5)
    assert rows[9].q_harm_after == pytest.approx(0.9) and rows[9].q_comp_after == pytest.approx(0.7)
    for before, after in zip(rows, rows[1:], strict=False):  # the log is a chain: no row disagrees with the next
        assert (after.q_harm_before, after.q_comp_before) == (before.q_harm_after, before.q_comp_after)
    # p:0 applied online: q^C = 0.7 + 0.05·(1 − 0.3) = 0.735, q^H = 0.9 − 0.05·0.1 = 0.895.
    assert rows[10].q_comp_after == pytest.approx(0.735) and rows[10].q_harm_after == pytest.approx(0.895)
    report = store.audit_report("fit")
    assert report.phases == {"calibration": 10, "excluded": 0, "online": 3}


@pytest.mark.parametrize("seq, values, message", [
    # q_after of a row no longer what the replay gives
    (10, {"q_harm_after": 0.5}, r"update 10 \(cal:9\) records \(0\.5, 0\.7\) as applied, but replaying it gives"),
    # a row's q_before disagrees with the row before it
    (12, {"q_comp_before": 0.7}, r"update 12 \(p:1\) starts from .*, but update 11 ended with"),
    # an error flag the stored s(Y) and the frozen thresholds contradict
    (12, {"err_harm": True}, r"update 12 \(p:1\) records a harm error, but s\(Y\) = 0\.2 <= its frozen q_harm"),
    (13, {"err_comp": False}, r"update 13 \(p:2\) records no comp error, but its rule fired and s\(Y\) = 0\.95"),
    (13, {"fired_harm": False}, r"update 13 \(p:2\) records a harm error although its rule never fired"),
    # the stored s(Y) changed under the flags
    (11, {"score_true": 0.3}, r"update 11 \(p:0\) records a comp error, but s\(Y\) = 0\.3 <= its frozen q_comp = 0\.7"),
    (3, {"score_true": 1.7}, r"update 3 \(cal:2\): its stored s\(Y\) = 1\.7 is outside \[0, 1\]"),
    # a frozen_seq that makes the row belong to another phase
    (11, {"frozen_seq": 9}, r"update 11 \(p:0\) is marked 'online', which its frozen_seq 9"),
])
def test_audit_names_the_row_that_disagrees(sqlite_db, seq, values, message):
    _stream_with_a_fit("tamper")
    store.audit("tamper")  # intact
    _corrupt("tamper", seq, **values)
    with pytest.raises(store.StreamError, match=message):
        store.audit("tamper")


def _corrupt_stored_fit(key: str, **state_values) -> None:
    from engines.collab.models import ControllerStream

    with write_transaction() as session:
        stream = session.exec(select(ControllerStream).where(ControllerStream.key == key)).one()
        if state_values:
            stream.calibration = {**stream.calibration, "state": {**stream.calibration["state"], **state_values}}
        else:
            stream.calibration = None
        session.add(stream)


@pytest.mark.parametrize("state_values", [
    {"q_harm": 0.8}, {"q_comp": 0.6}, {"q1_harm": 0.8}, {"q1_comp": 0.6}, {"pi_harm": 0.5}, {},  # {}: fit record lost
], ids=["q_harm", "q_comp", "q1_harm", "q1_comp", "pi_harm", "no fit recorded"])
def test_audit_refits_the_calibration_batch_and_names_a_stored_fit_that_differs(sqlite_db, state_values):
    """The rows and the stream's state stay intact: only the recorded fit (q^H = 0.9, q^C = 0.7 by hand) changes."""
    _stream_with_a_fit("refit")
    assert store.audit_report("refit").calibration["state"]["q1_harm"] == pytest.approx(0.9)
    _corrupt_stored_fit("refit", **state_values)
    with pytest.raises(store.StreamError, match=r"update 10 \(cal:9\): refitting the calibration batch does not give "
                                                r"the stored q_1"):
        store.audit("refit")


def test_audit_checks_what_participants_were_shown(sqlite_db):
    _stream_with_a_fit("claims")
    q_h11, q_c11 = 0.895, 0.735  # after update 11 (by hand, above)
    good = [store.FrozenClaim("participant 1, interaction 1", 10, 0.9, 0.7, "p:0"),
            store.FrozenClaim("participant 3, interaction 1", 11, q_h11, q_c11, "p:2"),
            store.FrozenClaim("participant 4, interaction 1 (unfinished)", 13, *_after(13))]
    assert store.audit_report("claims", claims=good).claims_checked == 3
    shown_wrong = store.FrozenClaim("participant 1, interaction 1", 10, 0.9, 0.75, "p:0")
    with pytest.raises(store.StreamError, match=r"participant 1, interaction 1 was shown thresholds \(0\.9, 0\.75\), "
                                                r"but after update 10 the stream had \(0\.9, 0\.7\)"):
        store.audit("claims", claims=[shown_wrong])
    frozen_elsewhere = store.FrozenClaim("participant 2, interaction 1", 11, q_h11, q_c11, "p:1")
    with pytest.raises(store.StreamError, match=r"update 12 \(p:1\) records frozen_seq 10, but participant 2, "
                                                r"interaction 1 froze at 11"):
        store.audit("claims", claims=[frozen_elsewhere])
    with pytest.raises(store.StreamError, match="froze its thresholds at update 14, but the stream has 13 updates"):
        store.audit("claims", claims=[store.FrozenClaim("participant 5, interaction 2", 14, 0.9, 0.7)])


def _after(seq: int) -> tuple[float, float]:
    row = store.history("claims")[seq - 1]
    return row.q_harm_after, row.q_comp_after


def test_the_band_uses_the_delay_of_the_latest_error_not_the_largest(sqlite_db):
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("slow", initial)
    # One participant freezes at 0 and finishes after 30 others, without an error.
    for i in range(30):
        store.record_interaction("slow", f"p{i}", err_harm=i % 10 == 0, err_comp=False, frozen_seq=i)
    store.record_interaction("slow", "slow", err_harm=False, err_comp=False, frozen_seq=0)
    report = store.audit_report("slow")
    assert report.max_delay == 30 and report.latest_error_delay == {"harm": 0, "comp": 0}
    # By hand: harm bound (1 + (D+1)·0.05·0.9 − 0.5)/(0.05·31) with D = 0, and D = 30 for the maximum.
    assert report.bound["harm"] == pytest.approx((0.5 + 0.045) / (0.05 * 31))
    assert report.bound_max_delay["harm"] == pytest.approx((0.5 + 31 * 0.045) / (0.05 * 31))
    # Had the slow participant erred, its delay would count until the next error.
    store.record_interaction("slow", "slow2", err_harm=True, err_comp=False, frozen_seq=1)
    assert store.audit_report("slow").latest_error_delay["harm"] == 30


@pytest.mark.parametrize("score", [math.nan, 1.5, -0.1])
def test_a_score_outside_the_range_is_refused_and_nothing_is_written(sqlite_db, score):
    store.ensure_stream("bad", ControllerState.initial(CONFIG), calibration_size=2)
    with pytest.raises(ValueError, match=r"stream 'bad': score_true must lie in \[0, 1\]"):
        store.record_interaction("bad", "p:0", err_harm=False, err_comp=False, score_true=score)
    assert store.history("bad") == [] and store.current_state("bad").t == 0


def test_migration_rewrites_old_fit_rows(tmp_path):
    """A stream written before the fix (the fit row kept the starting thresholds) audits after the upgrade."""
    import sqlalchemy as sa

    from engines.platform import migrate
    from engines.platform.db import get_engine
    from engines.platform.scratch import scratch_database

    with scratch_database(None, migrated=False) as url:
        migrate.upgrade(url, "0003")
        engine = get_engine(url)
        # Two points are too few for either target: the fit is q = B = 1 (rank ⌈3·0.9⌉ = 3 > 2).
        fitted = ControllerState(config=CONFIG, q_harm=1.0, q_comp=1.0, q1_harm=1.0, q1_comp=1.0).to_dict()
        initial = ControllerState.initial(CONFIG).to_dict()
        with engine.begin() as conn:
            conn.execute(sa.text(
                "INSERT INTO controller_stream (id, key, initial_state, state, updates, calibration_size, calibration, "
                "created_at, updated_at) VALUES (1, 'old', :i, :s, 2, 2, :c, '2026-11-01', '2026-11-01')"),
                {"i": _json(initial), "s": _json(fitted), "c": _json({"status": "fitted", "seq": 2, "state": fitted,
                                                                       "note": None})})
            for seq, s in ((1, 0.0), (2, 1.0)):
                conn.execute(sa.text(
                    "INSERT INTO controller_update (stream_id, seq, interaction_key, err_harm, err_comp, fired_harm, "
                    "fired_comp, phase, score_true, q_harm_before, q_comp_before, q_harm_after, q_comp_after, "
                    "created_at) VALUES (1, :seq, :k, :e, :e, true, true, 'calibration', :s, 0.5, 0.5, 0.5, 0.5, "
                    "'2026-11-01')"), {"seq": seq, "k": f"cal:{seq}", "e": s > 0.5, "s": s})
        with pytest.raises(store.StreamError, match=r"update 2 \(cal:2\) records \(0\.5, 0\.5\) as applied"):
            store.audit("old", engine=engine)
        migrate.upgrade(url)
        assert store.audit("old", engine=engine).q_harm == 1.0


def _json(value) -> str:
    import json

    return json.dumps(value)
