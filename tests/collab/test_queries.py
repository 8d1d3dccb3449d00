"""Queries behind the collaboration pages: controller streams (store), collab jobs and their files (jobs, jobqueue),
and the views built from what they return."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.collab import jobs as collab_jobs
from engines.collab import plots, store
from engines.collab.controller import ControllerConfig, ControllerState
from engines.collab.rates import rolling_rate, running_rate
from engines.collab.result_files import ResultFileError
from engines.platform import jobqueue, study_admin
from tests.helpers import trained_counter_job

ERR_HARM = [1, 0, 0, 1, 0, 0, 0, 0]
ERR_COMP = [0, 0, 1, 0, 0, 0, 1, 1]
STATE = ControllerState.initial(ControllerConfig(alpha_harm=0.1, alpha_comp=0.2, eta_harm=0.5, eta_comp=0.25))


@pytest.fixture
def stream(sqlite_db) -> str:
    key = "demo:online"
    store.ensure_stream(key, STATE)
    for i, (h, c) in enumerate(zip(ERR_HARM, ERR_COMP, strict=True)):
        store.record_interaction(key, f"i{i}", err_harm=bool(h), err_comp=bool(c))
    store.ensure_stream("demo:empty", STATE)
    return key


def test_list_streams_all_or_of_one_study(stream):
    assert [(s.key, s.updates) for s in store.list_streams()] == [("demo:empty", 0), ("demo:online", 8)]
    study_admin.create_study("pilot", "collab_shapes")
    study_id = study_admin.get_study("pilot").id
    store.ensure_stream("pilot:online", STATE, study_id=study_id, condition="online", calibration_size=5)
    (info,) = store.list_streams(study="pilot")
    assert (info.key, info.study_id, info.condition, info.updates, info.calibration_size) == \
        ("pilot:online", study_id, "online", 0, 5)
    assert store.list_streams(study="nobody") == []


def test_stream_view_matches_the_analytic_rates_and_bound(stream):
    view = plots.stream_view(store.audit_report(stream), window=3)
    assert view.interactions == 8
    traces = view.traces
    np.testing.assert_allclose(traces.running["harm"], running_rate(np.array(ERR_HARM)))
    np.testing.assert_allclose(traces.running["comp"][-1], 3 / 8)
    np.testing.assert_allclose(traces.local["comp"], rolling_rate(np.array(ERR_COMP), 3, centred=False))
    for t in (1, 4, 8):  # bound(t) = max(0, B + η(1−α) − q1)/(η t): harm (1 + 0.45 − 0.5)/(0.5 t) = 1.9/t
        assert traces.bound["harm"][t - 1] == pytest.approx(1.9 / t)
        assert traces.bound["comp"][t - 1] == pytest.approx((1 + 0.25 * 0.8 - 0.5) / (0.25 * t))
    # thresholds: the ones in force during each interaction, q_{t+1} = q_t + η(err − α)
    q = 0.5 + np.concatenate([[0], np.cumsum(0.5 * (np.array(ERR_HARM) - 0.1))[:-1]])
    np.testing.assert_allclose(traces.thresholds["harm"], q)
    final = traces.final()
    assert final["harm"]["rate"] == pytest.approx(0.25) and final["harm"]["within"] is True
    assert view.table["violations"].tolist() == [2, 3]
    assert view.phases.loc[0, "fit"] == "none" and view.phases.loc[0, "max delay D"] == 0
    fig = view.figures["violations"]
    names = {trace.name for trace in fig.data}
    assert {"stream: running rate", "stream: target + bound(t)", "target α", "stream: trailing rolling rate"} <= names
    assert len(view.figures["thresholds"].data) == 2
    empty = plots.stream_view(store.audit_report("demo:empty"))
    assert empty.interactions == 0 and empty.figures == {}


def test_stream_view_leaves_out_the_calibration_batch_and_widens_the_band_by_the_delay(sqlite_db):
    store.ensure_stream("demo:cal", STATE, calibration_size=3)
    for i, s in enumerate((0.1, 0.2, 0.3)):  # below both starting thresholds: no error
        store.record_interaction("demo:cal", f"c{i}", err_harm=False, err_comp=False, score_true=s)
    for i, h in enumerate(ERR_HARM[:4]):  # all four froze right after the fit: delays 0, 1, 2, 3
        store.record_interaction("demo:cal", f"o{i}", err_harm=bool(h), err_comp=False, frozen_seq=3)
    view = plots.stream_view(store.audit_report("demo:cal"))
    assert view.interactions == 4 and view.traces.t.tolist() == [1, 2, 3, 4]
    phases = view.phases.iloc[0]
    assert phases["calibration batch"] == "3 / 3" and phases["fit"] == "fitted" and phases["max delay D"] == 3
    # The fit by hand: three critical scores (0.1, 0.2, 0.3), rank ⌈4·0.9⌉ = 4 > 3, so q1 = B = 1.
    assert view.state.q1_harm == 1.0
    # Harm errors at t = 1 (delay 0) and t = 4 (delay 3): the band uses D = 0 up to t = 3, then D = 3.
    # By hand: (1 + (D+1)·0.5·0.9 − 1)/(0.5 t) = 0.9 (D+1)/t -> 0.9, 0.45, 0.3, then 0.9·4/4 = 0.9.
    expected = [0.9, 0.45, 0.3, 0.9]
    np.testing.assert_allclose(view.traces.bound["harm"], expected)
    harm = view.table.set_index("constraint").loc["harm"]
    assert harm["delay in the bound"] == 3 and harm["bound"] == pytest.approx(expected[-1])
    assert harm["bound"] > harm["bound without delay"] and harm["bound with max delay D"] == pytest.approx(harm["bound"])
    comp = view.table.set_index("constraint").loc["comp"]  # no comp error: no delay enters its band
    assert comp["delay in the bound"] == 0 and comp["bound"] == pytest.approx(comp["bound without delay"])


def test_simulation_jobs_and_their_result_files(sqlite_db):
    queued = jobqueue.submit_job("collab.sweep", {"T": 300, "n_calibration": 50, "alpha_harm_grid": [0.05],
                                                  "alpha_comp_grid": [0.1]})
    job_id = jobqueue.submit_job("collab.simulate", {"T": 500, "n_calibration": 100})
    jobqueue.submit_job("platform.countdown", {"seconds": 0})
    assert jobqueue.run_job(job_id) == "succeeded"
    assert [j.id for j in collab_jobs.simulation_jobs()] == [job_id, queued]
    assert [j.id for j in collab_jobs.simulation_jobs(succeeded=True)] == [job_id]
    assert [j.id for j in jobqueue.list_jobs(status="queued", kinds=collab_jobs.SIMULATION_KINDS)] == [queued]
    path = jobqueue.job_result_file(job_id)
    result = collab_jobs.simulation_result(job_id)
    assert result.kind == "simulate" and result.to_json() == path.read_text()  # the file as it was written
    with pytest.raises(jobqueue.JobError, match="has no result file \\(status queued\\)"):
        jobqueue.job_result_file(queued)
    with pytest.raises(ResultFileError, match="has no result file"):
        collab_jobs.simulation_result(queued)
    with pytest.raises(ResultFileError, match="No job with id 999"):
        collab_jobs.simulation_result(999)


SHIPPED_REPORT = Path(__file__).resolve().parents[2] / "assets" / "collab" / "counter_report.json"


def test_counter_jobs_reports_and_ai_score_sources(sqlite_db):
    assert list(collab_jobs.ai_score_choices()) == ["synthetic", "shipped"]
    assert collab_jobs.ai_score_params("shipped") == {"ai": "cnn"}
    assert collab_jobs.ai_score_params("job:7") == {"ai": "cnn", "counter_job_id": 7}
    with pytest.raises(ValueError, match="unknown AI score source"):
        collab_jobs.ai_score_params("/etc/passwd")
    queued = jobqueue.submit_job("collab.train_counter", {"quick": True})
    assert [j.status for j in collab_jobs.counter_jobs()] == ["queued"]
    assert list(collab_jobs.ai_score_choices()) == ["synthetic", "shipped"]  # only succeeded jobs
    with pytest.raises(ResultFileError, match="not a succeeded collab.train_counter job"):
        collab_jobs.counter_job_report(queued)
    job_id = trained_counter_job()
    assert f"job:{job_id}" in collab_jobs.ai_score_choices()
    assert [j.id for j in collab_jobs.counter_jobs(succeeded=True)] == [job_id]
    report = collab_jobs.counter_job_report(job_id)
    assert report.job_id == job_id and report.quick is True
    assert [p.name for p in report.plots] == ["counter_reliability.png", "counter_accuracy.png"]
    view = plots.counter_view(report)
    assert view.table.set_index("set").loc["overall", "accuracy"] == jobqueue.get_job(job_id).result["overall"]["accuracy"]
    assert "quick" in view.summary and "reproduce: python -m engines.collab train-counter" in view.summary
    assert collab_jobs.simulation_jobs() == []  # the result figures only ever list simulations and sweeps
    assert collab_jobs.train_counter_defaults()["epochs"] == 6
    shipped = json.loads(SHIPPED_REPORT.read_text())
    assert collab_jobs.train_counter_defaults()["train_size"] < shipped["train_config"]["train_size"]
