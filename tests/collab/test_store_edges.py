"""Controller streams at their edges: creation options, resent and misnumbered updates, the audit's report
fields and messages, the calibration record, other databases, and listing streams.

Thresholds and bounds are worked out by hand in each test (q <- q + η(err − α), the band
max(0, B + (D+1)η(1−α) − q_1)/(ηn), the split-conformal rank ⌈(n+1)(1−α)⌉).
"""

from __future__ import annotations

import json
import re
import threading

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlmodel import select

from engines.collab import store
from engines.collab.controller import ControllerConfig, ControllerState
from engines.collab.models import ControllerStream, ControllerUpdate
from engines.platform.db import get_engine, write_transaction
from engines.platform.models import Study

CONFIG = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05)  # q_1 = (0.5, 0.5)


def _exactly(message: str) -> str:
    return "^" + re.escape(message) + "$"


def _studies() -> tuple[int, int]:
    with write_transaction() as session:
        alpha, beta = Study(slug="alpha", protocol="collab"), Study(slug="beta", protocol="collab")
        session.add(alpha)
        session.add(beta)
        session.flush()
        return alpha.id, beta.id


def _three_updates(key: str) -> None:
    """Three online updates with s(Y) and frozen_seq (q_1 = 0.5 both, η = 0.05, α_H = 0.1, α_C = 0.3):

    p:0 froze at 0, s(Y) = 0.2, no error          -> (0.5 − 0.005, 0.5 − 0.015) = (0.495, 0.485);
    p:1 froze at 1, s(Y) = 0.9 > both, both errors -> (0.495 + 0.045, 0.485 + 0.035) = (0.54, 0.52);
    p:2 froze at 1 (delay 1), s(Y) = 0.3 <= (0.495, 0.485), comp rule silent -> (0.535, 0.505).
    """
    store.ensure_stream(key, ControllerState.initial(CONFIG))
    store.record_interaction(key, "p:0", err_harm=False, err_comp=False, score_true=0.2, frozen_seq=0)
    store.record_interaction(key, "p:1", err_harm=True, err_comp=True, score_true=0.9, frozen_seq=1)
    store.record_interaction(key, "p:2", err_harm=False, err_comp=False, fired_comp=False, score_true=0.3,
                             frozen_seq=1)


def _corrupt(key: str, seq: int, **values) -> None:
    with write_transaction() as session:
        row = session.get(ControllerUpdate, store.history(key)[seq - 1].id)
        for name, value in values.items():
            setattr(row, name, value)
        session.add(row)


# Creating and opening streams

def test_open_stream_starts_online_by_default(sqlite_db):
    initial = ControllerState.initial(CONFIG)
    with write_transaction() as session:
        snap = store.open_stream(session, "o", initial)
    assert (snap.state, snap.updates, snap.calibrating) == (initial, 0, False)
    assert store.record_interaction("o", "p", err_harm=False, err_comp=False).phase == "online"  # no s(Y) needed


def test_a_negative_calibration_size_is_refused(sqlite_db):
    with pytest.raises(ValueError, match=_exactly("calibration_size must be >= 0, got -1")):
        store.ensure_stream("neg", ControllerState.initial(CONFIG), calibration_size=-1)


def test_a_snapshot_counts_updates_and_says_when_the_batch_is_still_running(sqlite_db):
    """calibration_size = 2: calibrating after 0 and 1 updates, not after 2 (the batch is complete)."""
    initial = ControllerState.initial(CONFIG)
    seen = []
    for i in range(3):
        with write_transaction() as session:
            snap = store.open_stream(session, "snap", initial, calibration_size=2)
        seen.append((snap.updates, snap.calibrating))
        store.record_interaction("snap", f"cal:{i}", err_harm=False, err_comp=False, score_true=0.1, frozen_seq=i)
    assert seen == [(0, True), (1, True), (2, False)]


def test_streams_record_their_study_and_condition_and_are_listed_by_key(sqlite_db):
    """Three streams created out of key order: one by study slug, one by study id, one without a study."""
    alpha_id, beta_id = _studies()
    initial = ControllerState.initial(CONFIG)
    with write_transaction() as session:
        store.open_stream(session, "b:2", initial, study_slug="beta", condition="ai")
    store.ensure_stream("c:3", initial, study_id=alpha_id, condition="none", calibration_size=2)
    store.ensure_stream("a:1", initial)
    store.record_interaction("b:2", "p", err_harm=False, err_comp=False)
    assert store.list_streams() == [
        store.StreamInfo("a:1", None, None, 0, 0, None),
        store.StreamInfo("b:2", beta_id, "ai", 1, 0, "beta"),
        store.StreamInfo("c:3", alpha_id, "none", 0, 2, "alpha"),
    ]
    assert store.list_streams(study="beta") == [store.StreamInfo("b:2", beta_id, "ai", 1, 0, "beta")]
    assert store.list_streams(study="gamma") == []


def test_an_explicit_study_id_is_kept_when_a_slug_is_also_given(sqlite_db):
    alpha_id, _ = _studies()
    with write_transaction() as session:
        store.open_stream(session, "both", ControllerState.initial(CONFIG), study_id=alpha_id, study_slug="beta")
    assert [(s.key, s.study_slug) for s in store.list_streams()] == [("both", "alpha")]


def test_every_function_uses_the_database_it_is_given(other_engine):
    """A second migrated database: the stream is written and read there, and the default database stays empty."""
    engine = other_engine
    store.ensure_stream("elsewhere", ControllerState.initial(CONFIG), engine=engine)
    store.record_interaction("elsewhere", "p", err_harm=True, err_comp=False, engine=engine)
    assert store.current_state("elsewhere", engine=engine).t == 1
    assert [u.seq for u in store.history("elsewhere", engine=engine)] == [1]
    assert [s.key for s in store.list_streams(engine=engine)] == ["elsewhere"]
    assert store.audit_report("elsewhere", engine=engine).updates == 1
    assert store.list_streams() == []


def test_opening_a_stream_holds_its_row_lock_until_the_transaction_ends(any_db):
    """PostgreSQL: while the opening transaction is open, another connection cannot lock the row (NOWAIT)."""
    if any_db.startswith("sqlite"):
        pytest.skip("row locks exist only on PostgreSQL (SQLite serialises writers)")
    store.ensure_stream("lock", ControllerState.initial(CONFIG))
    with write_transaction() as session:
        store.open_stream(session, "lock", ControllerState.initial(CONFIG))
        with get_engine().connect() as other, pytest.raises(OperationalError, match="could not obtain lock"):
            other.execute(text("SELECT id FROM controller_stream WHERE key = 'lock' FOR UPDATE NOWAIT"))


def _wait_until_blocked(engine, pid: int) -> None:
    """Poll PostgreSQL until backend ``pid`` waits on a lock (deterministic: it waits on our open insert)."""
    import time

    deadline = time.monotonic() + 30
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(text("SELECT wait_event_type FROM pg_stat_activity WHERE pid = :pid"),
                                   {"pid": pid}).scalar()
            if waiting == "Lock":
                return
            conn.rollback()
            time.sleep(0.02)
    raise AssertionError("the second creator never waited on the first one's insert")


def test_a_concurrent_creator_gets_the_first_stream_locked_and_keeps_its_own_work(any_db):
    """PostgreSQL: A creates "race" and keeps its transaction open; B, in one transaction, first creates
    "b-own" and then opens "race": its insert waits on A's, fails on the unique key when A commits, and
    B gets A's stream (A's initial thresholds), row-locked, while "b-own" still commits with B."""
    if any_db.startswith("sqlite"):
        pytest.skip("concurrent creators exist only on PostgreSQL (SQLite serialises writers)")
    first = ControllerState.initial(ControllerConfig(q_harm_init=0.25))
    second = ControllerState.initial(ControllerConfig(q_harm_init=0.75))
    engine = get_engine()
    seen, errors, started = {}, [], threading.Event()

    def creator_b():
        try:
            with write_transaction() as session:
                store.open_stream(session, "b-own", second)
                seen["pid"] = session.connection().exec_driver_sql("SELECT pg_backend_pid()").scalar()
                started.set()
                seen["snap"] = store.open_stream(session, "race", second)
                with engine.connect() as other:
                    try:
                        other.execute(text("SELECT id FROM controller_stream WHERE key = 'race' FOR UPDATE NOWAIT"))
                        seen["locked"] = False
                    except OperationalError:
                        seen["locked"] = True
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            started.set()

    with write_transaction() as session:
        store.open_stream(session, "race", first)
        thread = threading.Thread(target=creator_b)
        thread.start()
        assert started.wait(30) and not errors, errors
        _wait_until_blocked(engine, seen["pid"])
    thread.join(timeout=60)
    assert not errors, errors
    assert seen["snap"].state == first and seen["locked"] is True
    assert store.current_state("b-own") == second
    assert [s.key for s in store.list_streams()] == ["b-own", "race"]


# Recording updates

def test_a_resent_update_returns_the_current_state_and_its_original_phase(sqlite_db):
    store.ensure_stream("resend", ControllerState.initial(CONFIG), calibration_size=2)
    store.record_interaction("resend", "cal:0", err_harm=False, err_comp=False, score_true=0.2)
    again = store.record_interaction("resend", "cal:0", err_harm=True, err_comp=True, score_true=0.9)
    assert again.duplicate and (again.seq, again.phase) == (1, "calibration")
    assert again.before == again.after == ControllerState.initial(CONFIG)


def test_the_same_interaction_key_in_another_stream_is_not_a_duplicate(sqlite_db):
    for key in ("one", "two"):
        store.ensure_stream(key, ControllerState.initial(CONFIG))
    store.record_interaction("one", "p:1", err_harm=False, err_comp=False)
    other = store.record_interaction("two", "p:1", err_harm=True, err_comp=False)
    assert not other.duplicate and other.after.t == 1 and other.after.q_harm == pytest.approx(0.5 + 0.05 * 0.9)


def test_frozen_seq_equal_to_the_new_update_number_is_refused(sqlite_db):
    store.ensure_stream("fz", ControllerState.initial(CONFIG))
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'fz': frozen_seq 1 is not an earlier update count (the stream has 0 updates)")):
        store.record_interaction("fz", "p", err_harm=False, err_comp=False, frozen_seq=1)


@pytest.mark.parametrize("flags", [dict(err_harm=True, fired_harm=False, err_comp=False),
                                   dict(err_harm=False, err_comp=True, fired_comp=False)], ids=["harm", "comp"])
def test_a_violation_whose_rule_did_not_fire_is_refused_and_nothing_is_written(sqlite_db, flags):
    store.ensure_stream("nf", ControllerState.initial(CONFIG))
    with pytest.raises(ValueError, match=_exactly(
            "a violation needs its rule to have fired on the truth (err implies fired)")):
        store.record_interaction("nf", "p", **flags)
    assert store.history("nf") == []


def test_the_participant_is_recorded_with_the_update(sqlite_db):
    from engines.platform.models import Participant

    study_id, _ = _studies()
    with write_transaction() as session:
        person = Participant(study_id=study_id, external_id="x", panel="prolific", condition="ai")
        session.add(person)
        session.flush()
        person_id = person.id
    store.ensure_stream("who", ControllerState.initial(CONFIG))
    store.record_interaction("who", "p", err_harm=False, err_comp=False, participant_id=person_id)
    assert store.history("who")[0].participant_id == person_id


# The calibration record

def test_a_fitted_calibration_batch_is_recorded_with_its_size_and_state(sqlite_db):
    """s(Y) = 0.1, 0.2, 0.3, rules always fire: α_H = 0.1, rank ⌈4·0.9⌉ = 4 > 3 -> q^H = B = 1;
    α_C = 0.3, rank ⌈4·0.7⌉ = 3 -> q^C = 0.3."""
    store.ensure_stream("cal", ControllerState.initial(CONFIG), calibration_size=3)
    for i, s in enumerate((0.1, 0.2, 0.3)):
        store.record_interaction("cal", f"cal:{i}", err_harm=False, err_comp=False, score_true=s)
    fitted = ControllerState(config=CONFIG, q_harm=1.0, q_comp=0.3, q1_harm=1.0, q1_comp=0.3)
    assert store.audit_report("cal").calibration == {"status": "fitted", "seq": 3, "state": fitted.to_dict(),
                                                     "note": None}


def test_a_failed_fit_is_recorded_with_its_size_and_the_reason(sqlite_db):
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.1, conditional=True)
    store.ensure_stream("nofit", ControllerState.initial(cfg), calibration_size=2)
    for i in range(2):
        store.record_interaction("nofit", f"cal:{i}", err_harm=False, err_comp=False, fired_harm=False,
                                 fired_comp=False, score_true=0.4)
    assert store.audit_report("nofit").calibration == {
        "status": "failed", "seq": 2, "state": ControllerState.initial(cfg).to_dict(),
        "note": "kept the initial thresholds: the harm rule never fires on the truth in the calibration batch: "
                "the conditional variant needs π̂ > 0"}


# The audit report

def test_the_report_of_a_stream_without_updates(sqlite_db):
    store.ensure_stream("fresh", ControllerState.initial(CONFIG), calibration_size=4)
    report = store.audit_report("fresh")
    assert (report.key, report.updates, report.calibration_size, report.calibration) == ("fresh", 0, 4, None)
    assert (report.max_delay, report.mean_delay, report.delays_known) == (0, 0.0, True)
    assert report.latest_error_delay == {"harm": 0, "comp": 0}
    assert report.violation_rate == {"harm": 0.0, "comp": 0.0}
    assert report.bound == report.bound_max_delay == report.bound_no_delay == {"harm": None, "comp": None}
    assert report.within_bound == {"harm": None, "comp": None}
    assert (report.history, report.delays) == ([], [])


def test_the_report_of_three_online_updates_by_hand(sqlite_db):
    """Delays 0, 0, 1; one error each (p:1, delay 0) over t = 3; ηn = 0.15:
    bound (D = 0) harm (1 + 0.045 − 0.5)/0.15, comp (1 + 0.035 − 0.5)/0.15; with D = max = 1: 2·0.045, 2·0.035."""
    _three_updates("r")
    report = store.audit_report("r")
    assert (report.key, report.updates, report.calibration_size) == ("r", 3, 0)
    assert report.phases == {"calibration": 0, "excluded": 0, "online": 3}
    assert [u.interaction_key for u in report.history] == ["p:0", "p:1", "p:2"]
    assert report.delays == [0, 0, 1] and report.max_delay == 1 and report.mean_delay == pytest.approx(1 / 3)
    assert report.delays_known is True and report.latest_error_delay == {"harm": 0, "comp": 0}
    assert report.violation_rate == {"harm": pytest.approx(1 / 3), "comp": pytest.approx(1 / 3)}
    assert report.target == {"harm": 0.1, "comp": 0.3}
    assert report.bound == {"harm": pytest.approx(0.545 / 0.15), "comp": pytest.approx(0.535 / 0.15)}
    assert report.bound_no_delay == report.bound
    assert report.bound_max_delay == {"harm": pytest.approx(0.59 / 0.15), "comp": pytest.approx(0.57 / 0.15)}
    assert report.within_bound == {"harm": True, "comp": True}
    assert (report.state.q_harm, report.state.q_comp) == (pytest.approx(0.535), pytest.approx(0.505))


def test_the_report_as_a_dict_leaves_out_the_rows_ends_with_the_state_and_is_valid_json(sqlite_db):
    _three_updates("d")
    data = store.audit_report("d").to_dict()
    # The export writes this dict as JSON: the report's fields in their declared order, the state last.
    assert list(data) == ["key", "updates", "calibration_size", "calibration", "phases", "max_delay", "mean_delay",
                          "delays_known", "latest_error_delay", "violation_rate", "target", "bound", "bound_max_delay",
                          "bound_no_delay", "within_bound", "claims_checked", "state"]
    assert data["state"]["t"] == 3 and data["state"]["q_harm"] == pytest.approx(0.535)
    assert json.loads(json.dumps(data))["key"] == "d"


def test_the_conditional_report_counts_rates_over_firing_interactions(sqlite_db):
    """Two online updates: the harm rule fires once (with an error), the comp rule once (without).
    Rates 1/1 and 0/1, not 1/2 and 0/2; band over n = 1: harm (1 + 0.045 − 0.5)/0.05 = 10.9."""
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05, conditional=True)
    store.ensure_stream("cond", ControllerState.initial(cfg))
    store.record_interaction("cond", "p:0", err_harm=True, err_comp=False, fired_comp=False)
    store.record_interaction("cond", "p:1", err_harm=False, err_comp=False, fired_harm=False)
    report = store.audit_report("cond")
    assert report.violation_rate == {"harm": 1.0, "comp": 0.0}
    assert report.bound["harm"] == pytest.approx(10.9)


def test_errors_the_bound_rules_out_show_as_outside_it(sqlite_db):
    """q_1 = 5 > B = 1: every label is in the set, so no error is possible, but errors recorded without
    s(Y) cannot be checked: rate 1 > α_H + max(0, 1 + 0.045 − 5)/0.05 = 0.1."""
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05, q_harm_init=5.0)
    store.ensure_stream("odd", ControllerState.initial(cfg))
    store.record_interaction("odd", "p:0", err_harm=True, err_comp=False)
    report = store.audit_report("odd")
    assert report.bound["harm"] == 0.0 and report.within_bound == {"harm": False, "comp": True}


def test_a_rate_just_under_the_attainable_bound_is_within_it(sqlite_db):
    """One interaction at q_1 = 1 − 2^-50 drops a protected truth at s(Y) = B = 1 (α = η = 0.5):
    band (1 + 0.5·0.5 − (1 − 2^-50))/(0.5·1) = 0.5 + 2^-49, all exact in binary, so the rate 1 sits
    2^-49 (far less than the 1e-12 margin) below α + band."""
    eps = 2.0 ** -50
    cfg = ControllerConfig(alpha_harm=0.5, alpha_comp=0.5, eta_harm=0.5, eta_comp=0.5, q_harm_init=1.0 - eps)
    store.ensure_stream("edge", ControllerState.initial(cfg))
    store.record_interaction("edge", "p:0", err_harm=True, err_comp=False, fired_comp=False, score_true=1.0,
                             frozen_seq=0)
    report = store.audit_report("edge")
    assert report.bound["harm"] == 0.5 + 2.0 ** -49 and report.within_bound["harm"] is True


def test_a_rate_exactly_on_the_margin_counts_as_within(sqlite_db):
    """α_H = 0.1, η_H = 0.5, q_1 = 1.050000000001, one error in two interactions (recorded without s(Y)):
    band (1 + 0.45 − 1.050000000001)/(0.5·2) = 0.399999999999, and in floating point
    0.1 + 0.399999999999 + 1e-12 is exactly 0.5, the rate: the margin is inclusive."""
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.5, eta_comp=0.05, q_harm_init=1.050000000001)
    store.ensure_stream("line", ControllerState.initial(cfg))
    store.record_interaction("line", "p:0", err_harm=True, err_comp=False)
    store.record_interaction("line", "p:1", err_harm=False, err_comp=False)
    report = store.audit_report("line")
    assert report.violation_rate["harm"] == 0.5 and report.bound["harm"] == pytest.approx(0.399999999999, abs=1e-15)
    assert 0.1 + report.bound["harm"] + 1e-12 == 0.5  # on the line, to the last bit
    assert report.within_bound["harm"] is True


# What the audit checks and how it says so

def test_an_error_at_a_score_equal_to_the_frozen_threshold_is_named(sqlite_db):
    """s(Y) = q_harm = 0.5: ties are inside the set, so a harm error cannot have happened."""
    store.ensure_stream("tie", ControllerState.initial(CONFIG))
    store.record_interaction("tie", "p:0", err_harm=True, err_comp=False, score_true=0.5, frozen_seq=0)
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'tie': update 1 (p:0) records a harm error, but s(Y) = 0.5 <= its frozen q_harm = 0.5 "
            "keeps the truth in the set")):
        store.audit("tie")


def test_an_update_without_frozen_seq_is_checked_against_the_thresholds_just_before_it(sqlite_db):
    """Update 1: both errors at s(Y) = 0.9 -> (0.545, 0.535). Update 2 (no frozen_seq): s(Y) = 0.52 is inside
    at (0.545, 0.535), so "no error" is right; at the starting (0.5, 0.5) it would have been an error."""
    store.ensure_stream("now", ControllerState.initial(CONFIG))
    store.record_interaction("now", "p:0", err_harm=True, err_comp=True, score_true=0.9)
    store.record_interaction("now", "p:1", err_harm=False, err_comp=False, score_true=0.52)
    assert store.audit("now").t == 2


def test_the_audit_names_the_range_of_valid_frozen_seqs(sqlite_db):
    _three_updates("fr")
    _corrupt("fr", 2, frozen_seq=7)
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'fr': update 2 (p:1) has frozen_seq 7, which is not an earlier update count (0..1)")):
        store.audit("fr")


def test_the_audit_names_a_first_row_that_does_not_start_where_the_stream_started(sqlite_db):
    _three_updates("st")
    _corrupt("st", 1, q_harm_before=0.125)
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'st': update 1 (p:0) starts from (0.125, 0.5), but the stream started at (0.5, 0.5)")):
        store.audit("st")


def test_the_audit_names_a_stored_state_the_rows_do_not_give(sqlite_db):
    _three_updates("ss")
    with write_transaction() as session:
        stream = session.exec(select(ControllerStream).where(ControllerStream.key == "ss")).one()
        stream.state = {**stream.state, "q_harm": 0.25}
        session.add(stream)
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'ss': replaying 3 updates does not give the stored state")):
        store.audit("ss")


def test_a_claim_frozen_before_any_update_is_checked_against_the_starting_thresholds(sqlite_db):
    _three_updates("c0")
    report = store.audit_report("c0", claims=[store.FrozenClaim("participant 1, interaction 1", 0, 0.5, 0.5, "p:0")])
    assert report.claims_checked == 1


def test_a_claim_about_an_interaction_with_an_empty_key_is_checked_too(sqlite_db):
    """An interaction may be keyed "" (nothing forbids it): a claim naming it is checked like any other."""
    store.ensure_stream("empty", ControllerState.initial(CONFIG))
    store.record_interaction("empty", "", err_harm=False, err_comp=False, frozen_seq=0)
    claim = store.FrozenClaim("participant 1, interaction 1", 1, *_after("empty", 1), "")
    with pytest.raises(store.StreamError, match=_exactly(
            "stream 'empty': update 1 () records frozen_seq 0, but participant 1, interaction 1 froze at 1")):
        store.audit("empty", claims=[claim])


def _after(key: str, seq: int) -> tuple[float, float]:
    row = store.history(key)[seq - 1]
    return row.q_harm_after, row.q_comp_after


def test_the_audit_reports_a_threshold_off_by_more_than_float_noise(sqlite_db):
    """q^H after update 3 is 0.535; a stored 0.535·(1 + 1e-10) is off by 5e-11, far above the 1e-12 tolerance."""
    _three_updates("noise")
    _corrupt("noise", 3, q_harm_after=0.535 * (1 + 1e-10))
    with pytest.raises(store.StreamError, match=r"^stream 'noise': update 3 \(p:2\) records .* as applied"):
        store.audit("noise")


def test_the_audit_tolerates_float_noise_below_1e_12_at_a_zero_threshold(sqlite_db):
    """q^C starts at 0: a stored 1e-13 differs by less than the absolute tolerance 1e-12, so the chain holds."""
    cfg = ControllerConfig(alpha_harm=0.1, alpha_comp=0.3, eta_harm=0.05, eta_comp=0.05, q_comp_init=0.0)
    store.ensure_stream("zero", ControllerState.initial(cfg))
    store.record_interaction("zero", "p:0", err_harm=False, err_comp=False)
    _corrupt("zero", 1, q_comp_before=1e-13)
    assert store.audit("zero").t == 1


def test_an_update_given_the_callers_session_commits_and_rolls_back_with_the_callers_work(sqlite_db):
    """A step's after_submit passes its open transaction: the update is applied in it (q^H 0.5 -> 0.545),
    and a failure later in that transaction takes the update back with the rest."""
    store.ensure_stream("joined", ControllerState.initial(CONFIG))
    with pytest.raises(RuntimeError, match="the answer could not be stored"):
        with write_transaction() as session:
            store.record_interaction("joined", "p:0", err_harm=True, err_comp=False, session=session)
            raise RuntimeError("the answer could not be stored")
    assert store.history("joined") == [] and store.current_state("joined").t == 0
    with write_transaction() as session:
        applied = store.record_interaction("joined", "p:0", err_harm=True, err_comp=False, session=session)
    assert (applied.seq, applied.after.q_harm) == (1, pytest.approx(0.545))
    assert [u.interaction_key for u in store.history("joined")] == ["p:0"]
    assert store.current_state("joined") == applied.after


def test_a_violation_whose_rule_did_not_fire_is_refused_while_calibrating_too(sqlite_db):
    store.ensure_stream("nfcal", ControllerState.initial(CONFIG), calibration_size=3)
    with pytest.raises(ValueError, match=_exactly(
            "a violation needs its rule to have fired on the truth (err implies fired)")):
        store.record_interaction("nfcal", "cal:0", err_harm=True, fired_harm=False, err_comp=False, score_true=0.9)
    assert store.history("nfcal") == []


def test_each_stream_fits_on_its_own_calibration_batch(sqlite_db):
    """Stream "x" is still calibrating at s(Y) = 0.9, 0.9 when "y" completes its batch at 0.1, 0.2.
    α = 0.5, n = 2: rank ⌈3·0.5⌉ = 2 -> q_1 = 0.2 for "y" (with x's rows it would be 0.9)."""
    cfg = ControllerConfig(alpha_harm=0.5, alpha_comp=0.5)
    store.ensure_stream("x", ControllerState.initial(cfg), calibration_size=3)
    store.ensure_stream("y", ControllerState.initial(cfg), calibration_size=2)
    for i in range(2):
        store.record_interaction("x", f"cal:{i}", err_harm=True, err_comp=True, score_true=0.9)
    store.record_interaction("y", "cal:0", err_harm=False, err_comp=False, score_true=0.1)
    store.record_interaction("y", "cal:1", err_harm=False, err_comp=False, score_true=0.2)
    fitted = store.current_state("y")
    assert (fitted.q_harm, fitted.q_comp, fitted.q1_harm) == (0.2, 0.2, 0.2)


def test_reading_a_stream_does_not_wait_for_a_writer_holding_its_row(any_db):
    """PostgreSQL: while a participant's transaction holds the stream row, the researcher's reads
    (state, history, audit) still answer: they take no row lock."""
    if any_db.startswith("sqlite"):
        pytest.skip("row locks exist only on PostgreSQL (SQLite serialises writers)")
    initial = ControllerState.initial(CONFIG)
    store.ensure_stream("busy", initial)
    store.record_interaction("busy", "p:0", err_harm=True, err_comp=False)
    answers = {}

    def researcher():
        answers["t"] = store.current_state("busy").t
        answers["rows"] = len(store.history("busy"))
        answers["audited"] = store.audit_report("busy").updates

    with write_transaction() as session:
        store.open_stream(session, "busy", initial)  # holds the row lock until this block ends
        reader = threading.Thread(target=researcher)
        reader.start()
        reader.join(timeout=30)
        waited = reader.is_alive()
    reader.join()
    assert not waited and answers == {"t": 1, "rows": 1, "audited": 1}
