"""Dashboard data and figures: analytic rates on a hand-made stream, a small simulate result, bad uploads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.collab import dashboard, store
from engines.collab.controller import ControllerConfig, ControllerState, upper_bound
from engines.collab.simulate import SimulationConfig, simulate
from engines.collab.sweep import SweepConfig, run_sweep
from tests.helpers import trained_counter_job

ERR_HARM = [1, 0, 0, 1, 0, 0, 0, 0]
ERR_COMP = [0, 0, 1, 0, 0, 0, 1, 1]


def test_running_and_rolling_rates_are_the_hand_computed_means():
    err = np.array(ERR_HARM)
    np.testing.assert_allclose(dashboard.running_rate(err), [1, 1 / 2, 1 / 3, 2 / 4, 2 / 5, 2 / 6, 2 / 7, 2 / 8])
    # trailing W=3: mean of err[t-2..t], fewer at the start
    np.testing.assert_allclose(dashboard.rolling_rate(err, 3, centred=False), [1, 1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0, 0])
    # centred W=3: err[t-1..t+1], clipped at both edges
    np.testing.assert_allclose(dashboard.rolling_rate(err, 3, centred=True), [1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0, 0, 0])
    # conditional denominators: rate among firing interactions
    np.testing.assert_allclose(dashboard.running_rate([1, 0, 1], denominators=[1, 1, 2]), [1, 1, 1])
    with pytest.raises(ValueError, match="window"):
        dashboard.rolling_rate(err, 0)


@pytest.fixture
def stream(sqlite_db) -> str:
    key = "demo:online"
    state = ControllerState.initial(ControllerConfig(alpha_harm=0.1, alpha_comp=0.2, eta_harm=0.5, eta_comp=0.25))
    store.ensure_stream(key, state)
    for i, (h, c) in enumerate(zip(ERR_HARM, ERR_COMP, strict=True)):
        store.record_interaction(key, f"i{i}", err_harm=bool(h), err_comp=bool(c))
    store.ensure_stream("demo:empty", state)
    return key


def test_stream_view_matches_the_analytic_rates_and_bound(stream):
    assert [(s.key, s.updates) for s in dashboard.list_streams()] == [("demo:empty", 0), ("demo:online", 8)]
    view = dashboard.stream_view(stream, window=3)
    assert view.interactions == 8
    traces = view.traces
    np.testing.assert_allclose(traces.running["harm"], dashboard.running_rate(np.array(ERR_HARM)))
    np.testing.assert_allclose(traces.running["comp"][-1], 3 / 8)
    np.testing.assert_allclose(traces.local["comp"], dashboard.rolling_rate(np.array(ERR_COMP), 3, centred=False))
    for t in (1, 4, 8):  # bound(t) = max(0, B + η(1−α) − q1)/(η t)
        assert traces.bound["harm"][t - 1] == pytest.approx(upper_bound(t, 0.5, 0.1, 0.5, 1.0))
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
    empty = dashboard.stream_view("demo:empty")
    assert empty.interactions == 0 and empty.figures == {}


def test_stream_view_leaves_out_the_calibration_batch_and_widens_the_band_by_the_delay(sqlite_db):
    state = ControllerState.initial(ControllerConfig(alpha_harm=0.1, alpha_comp=0.2, eta_harm=0.5, eta_comp=0.25))
    store.ensure_stream("demo:cal", state, calibration_size=3)
    for i, s in enumerate((0.2, 0.4, 0.6)):
        store.record_interaction("demo:cal", f"c{i}", err_harm=False, err_comp=False, score_true=s)
    for i, h in enumerate(ERR_HARM[:4]):  # all four froze right after the fit: delays 0, 1, 2, 3
        store.record_interaction("demo:cal", f"o{i}", err_harm=bool(h), err_comp=False, frozen_seq=3)
    view = dashboard.stream_view("demo:cal")
    assert view.interactions == 4 and view.traces.t.tolist() == [1, 2, 3, 4]
    phases = view.phases.iloc[0]
    assert phases["calibration batch"] == "3 / 3" and phases["fit"] == "fitted" and phases["max delay D"] == 3
    fitted = view.state
    assert view.traces.bound["harm"][-1] == pytest.approx(
        upper_bound(4, 0.5, 0.1, fitted.q1_harm, 1.0, delay=3))
    assert view.table.loc[0, "bound"] > view.table.loc[0, "bound without delay"]


@pytest.fixture(scope="module")
def sim_result() -> dict:
    result = simulate(SimulationConfig(schedule="abrupt_switch", T=2_000, n_calibration=200, trace_points=50))
    return json.loads(json.dumps(result.to_dict()))


def test_simulate_result_view_has_online_fixed_and_accuracy(sim_result):
    view = dashboard.result_view(sim_result)
    assert view.kind == "simulate" and set(view.figures) == {"violations", "thresholds", "accuracy"}
    names = [trace.name for trace in view.figures["violations"].data]
    for expected in ("online: running rate", "fixed: running rate", "online: target + bound(t)", "target α"):
        assert expected in names
    assert "fixed: target + bound(t)" not in names  # a fixed threshold has no guarantee
    assert view.figures["violations"].layout.shapes  # shift point lines
    online = dashboard.traces_from_result(sim_result, "online")
    assert online.running["harm"][-1] == pytest.approx(sim_result["online"]["violation_rate"]["harm"])
    acc = view.tables["accuracy"].set_index("who")["accuracy"]
    assert acc["human alone"] == sim_result["human_alone_accuracy"]
    assert acc["collaborative, online controller"] == sim_result["online"]["accuracy"]
    assert acc["collaborative, plain conformal set (matched coverage)"] == sim_result["matched"]["accuracy"]
    assert view.tables["set sizes"]["run"].tolist() == ["online", "fixed", "matched"]
    assert view.tables["violations"]["within target + bound"].iloc[:2].tolist() == [True, True]


def test_sweep_result_view():
    sweep = run_sweep(SweepConfig(base=SimulationConfig(T=1_000, n_calibration=100, with_fixed=False),
                                  alpha_harm_grid=(0.02, 0.1), alpha_comp_grid=(0.05, 0.1, 0.2)))
    data = json.loads(json.dumps(sweep.to_dict()))
    view = dashboard.result_view(data)
    assert view.kind == "sweep"
    assert view.tables["final accuracy"].shape == (2, 3)
    assert np.array(view.figures["accuracy heatmap"].data[0].z).shape == (2, 3)
    assert len(view.figures["accuracy lines"].data) == 3


def test_bad_uploads_name_what_is_wrong(sim_result):
    with pytest.raises(dashboard.ResultFileError, match="not valid JSON"):
        dashboard.load_result(b"{not json")
    with pytest.raises(dashboard.ResultFileError, match="JSON object"):
        dashboard.load_result(b"[1, 2]")
    with pytest.raises(dashboard.ResultFileError, match="needs key 'online'"):
        dashboard.load_result(json.dumps({"hello": 1}))
    broken = {k: v for k, v in sim_result.items() if k != "human_alone_accuracy"}
    with pytest.raises(dashboard.ResultFileError, match="missing key 'human_alone_accuracy'"):
        dashboard.load_result(json.dumps(broken))
    broken = json.loads(json.dumps(sim_result))
    del broken["online"]["trace"]["q_comp"]
    with pytest.raises(dashboard.ResultFileError, match=r"'online.trace' is missing key 'q_comp'"):
        dashboard.validate_result(broken)
    with pytest.raises(dashboard.ResultFileError, match="missing key 'accuracy'"):
        dashboard.validate_result({"cells": [], "config": {}})
    kind, data = dashboard.load_result(json.dumps(sim_result).encode())
    assert kind == "simulate" and data == sim_result


def test_page_shows_a_stream_and_a_finished_job(stream):
    from engines.platform import jobqueue
    from tests.apptest_driver import page_as

    job_id = jobqueue.submit_job("collab.simulate", {"T": 500, "n_calibration": 100})
    assert jobqueue.run_job(job_id) == "succeeded"
    at = page_as("collab_dashboard", "researcher")
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="collab-stream").options[0].startswith("demo:empty")
    at.selectbox(key="collab-stream").select("demo:online").run()
    assert at.metric[0].value == "8"
    assert at.selectbox(key="collab-job").value == job_id
    charts = at.get("plotly_chart")
    assert len(charts) == 2 + 3  # stream: violations, thresholds; result: violations, thresholds, accuracy
    assert at.get("download_button")


# ---------------------------------------------------------------- the AI model: shipped and trained counting CNNs
SHIPPED_REPORT = Path(__file__).resolve().parents[2] / "assets" / "collab" / "counter_report.json"


def test_counter_views_and_ai_score_sources(sqlite_db):
    from engines.platform import jobqueue

    report = json.loads(SHIPPED_REPORT.read_text())
    shipped = dashboard.shipped_counter_view()
    table = shipped.table.set_index("set")
    for name in ("overall", "easy", "medium", "hard", "difficulty 0.67-1.00"):
        assert table.loc[name, "accuracy"] == report["metrics"][name]["accuracy"]
        assert table.loc[name, "ECE"] == report["metrics"][name]["ece"]
    assert f"{report['metrics']['overall']['accuracy']:.3f}" in shipped.title and shipped.plots == []
    assert dashboard.shipped_counter_view(Path("/nonexistent/report.json")) is None
    assert list(dashboard.ai_score_choices()) == ["synthetic", "shipped"]
    assert dashboard.ai_score_params("shipped") == {"ai": "cnn"}
    assert dashboard.ai_score_params("job:7") == {"ai": "cnn", "counter_job_id": 7}
    with pytest.raises(ValueError, match="unknown AI score source"):
        dashboard.ai_score_params("/etc/passwd")
    queued = jobqueue.submit_job("collab.train_counter", {"quick": True})
    assert dashboard.counter_jobs()["status"].tolist() == ["queued"]
    assert list(dashboard.ai_score_choices()) == ["synthetic", "shipped"]  # only succeeded jobs
    with pytest.raises(dashboard.ResultFileError, match="not a succeeded collab.train_counter job"):
        dashboard.counter_job_view(queued)
    job_id = trained_counter_job()
    assert f"job:{job_id}" in dashboard.ai_score_choices()
    view = dashboard.counter_job_view(job_id)
    assert view.table.set_index("set").loc["overall", "accuracy"] == jobqueue.get_job(job_id).result["overall"]["accuracy"]
    assert [p.name for p in view.plots] == ["counter_reliability.png", "counter_accuracy.png"]
    assert "quick" in view.summary and "reproduce: python -m engines.collab train-counter" in view.summary
    assert dashboard.collab_jobs().empty  # the result figures only ever list simulations and sweeps


def test_page_shows_the_shipped_model_and_queues_a_training_job(sqlite_db):
    from engines.platform import jobqueue
    from tests.apptest_driver import page_as

    at = page_as("collab_dashboard", "researcher")
    assert not at.exception, at.exception
    headers = [h.value for h in at.header]
    assert headers.index("AI model (counting CNN)") == headers.index("Simulations") + 1
    shipped = json.loads(SHIPPED_REPORT.read_text())["metrics"]
    tables = [d.value for d in at.dataframe if "set" in d.value.columns]
    assert tables and tables[0].set_index("set").loc["hard", "accuracy"] == shipped["hard"]["accuracy"]
    assert at.selectbox(key="collab-ai").options == ["synthetic AI (parametric)", "shipped CNN (assets/collab)"]
    next(n for n in at.number_input if n.label == "Epochs").set_value(2)
    next(s for s in at.slider if s.label.startswith("Training images' difficulty")).set_value((0.0, 0.5))
    next(b for b in at.form_submit_button if b.label == "Start training").click().run()
    assert not at.exception, at.exception
    (job,) = jobqueue.list_jobs()
    assert job.kind == "collab.train_counter" and job.status == "queued"
    assert job.params["epochs"] == 2 and job.params["train_difficulty"] == [0.0, 0.5]
    assert any("Queued training job" in s.value for s in at.success)


def test_page_shows_a_trained_model_and_simulates_with_its_scores(sqlite_db):
    from engines.platform import jobqueue
    from tests.apptest_driver import page_as

    job_id = trained_counter_job()
    at = page_as("collab_dashboard", "researcher")
    assert not at.exception, at.exception
    assert at.selectbox(key="collab-counter-job").value == f"job:{job_id}"
    assert len(at.image) == 2  # reliability diagram, accuracy/ECE by difficulty
    at.button(key="collab-use-scores").click().run()
    assert at.selectbox(key="collab-ai").value == f"job:{job_id}"
    next(b for b in at.form_submit_button if b.label == "Start job").click().run()
    assert not at.exception, at.exception
    simulation = next(j for j in jobqueue.list_jobs() if j.kind == "collab.simulate")
    assert simulation.params["ai"] == "cnn" and simulation.params["counter_job_id"] == job_id
