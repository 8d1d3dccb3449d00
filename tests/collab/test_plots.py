"""Figures and tables of the collaboration engine, from tiny hand-built traces and small results.

Values are the ones a user reads off the figure: the band's upper edge at t, the target line,
the thresholds, the bars' heights, computed by hand.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest

from engines.collab import plots, rate_traces, rates
from engines.collab.controller import ControllerConfig, ControllerState
from engines.collab.rate_traces import RateTraces, traces_from_errors
from engines.collab.result_files import CounterReportFile, SimulationResultFile, shipped_counter_report
from engines.collab.simulate import SimulationConfig, simulate
from engines.collab.sweep import SweepConfig, run_sweep
from engines.platform.models import Job

ERR_HARM = [1, 0, 0, 1, 0, 0, 0, 0]
ERR_COMP = [0, 0, 1, 0, 0, 0, 1, 1]


def _hand_traces(label: str = "online", *, with_bound: bool = True) -> RateTraces:
    # T = 4, harm: errors 1, 0, 0, 0 -> running 1, 1/2, 1/3, 1/4; bound(t) = 1.2/t.
    t = np.arange(1, 5)
    running = {"harm": np.array([1, 1 / 2, 1 / 3, 1 / 4]), "comp": np.array([0.0, 0.0, 0.0, 0.0])}
    bound = {"harm": 1.2 / t, "comp": 0.4 / t} if with_bound else {"harm": None, "comp": None}
    return RateTraces(label=label, t=t, running=running, local={k: v.copy() for k, v in running.items()},
                      thresholds={"harm": np.array([0.5, 0.6, 0.55, 0.5]), "comp": np.array([0.5, 0.49, 0.48, 0.47])},
                      target={"harm": 0.1, "comp": 0.2}, bound=bound)


def _trace(fig, name: str, panel: int = 0):
    """The ``panel``-th (0: harm, 1: comp) trace called ``name``."""
    return [trace for trace in fig.data if trace.name == name][panel]


def test_running_and_rolling_rates_are_the_hand_computed_means():
    err = np.array(ERR_HARM)
    np.testing.assert_allclose(rates.running_rate(err), [1, 1 / 2, 1 / 3, 2 / 4, 2 / 5, 2 / 6, 2 / 7, 2 / 8])
    # trailing W=3: mean of err[t-2..t], fewer at the start
    np.testing.assert_allclose(rates.rolling_rate(err, 3, centred=False), [1, 1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0, 0])
    # centred W=3: err[t-1..t+1], clipped at both edges
    np.testing.assert_allclose(rates.rolling_rate(err, 3, centred=True), [1 / 2, 1 / 3, 1 / 3, 1 / 3, 1 / 3, 0, 0, 0])
    # conditional denominators: rate among firing interactions
    np.testing.assert_allclose(rates.running_rate([1, 0, 1], denominators=[1, 1, 2]), [1, 1, 1])
    with pytest.raises(ValueError, match="window"):
        rates.rolling_rate(err, 0)


def test_violation_figure_draws_the_band_the_rate_and_the_target():
    fig = plots.violation_figure([_hand_traces()])
    upper = _trace(fig, "online: target + bound(t)")  # harm panel
    # The band's upper edge is target + bound(t): at t = 3, 0.1 + 1.2/3 = 0.5; at t = 1 (1.3) it is
    # clipped at the panel's top, min(1, max(2.5 * 0.1, 1.3 * 1)) = 1.
    assert list(upper.x) == [1, 2, 3, 4]
    np.testing.assert_allclose(upper.y, [1.0, 0.1 + 0.6, 0.1 + 0.4, 0.1 + 0.3])
    assert upper.fill == "tonexty"
    np.testing.assert_allclose(_trace(fig, "online: running rate").y, [1, 0.5, 1 / 3, 0.25])
    target = _trace(fig, "target α")
    assert list(target.x) == [1, 4] and list(target.y) == [0.1, 0.1]
    assert list(_trace(fig, "target α", panel=1).y) == [0.2, 0.2]
    # comp panel: nothing above the target, so the axis ends at 2.5 * target
    assert list(fig.layout.yaxis.range) == [0.0, 1.0] and list(fig.layout.yaxis2.range) == [0.0, 0.5]
    np.testing.assert_allclose(_trace(fig, "online: target + bound(t)", panel=1).y, [0.5, 0.4, 0.2 + 0.4 / 3, 0.3])
    assert "online: trailing rolling rate" in {trace.name for trace in fig.data}
    assert "online: trailing rolling rate" not in {trace.name for trace in plots.violation_figure(
        [_hand_traces()], show_local=False).data}


def test_a_run_without_guarantee_has_no_band_and_shifts_are_drawn():
    fig = plots.violation_figure([_hand_traces(), _hand_traces("fixed", with_bound=False)], shift_points=[3])
    names = [trace.name for trace in fig.data]
    assert "fixed: running rate" in names and "online: target + bound(t)" in names
    assert "fixed: target + bound(t)" not in names  # a fixed threshold has no guarantee
    assert [shape.x0 for shape in fig.layout.shapes] == [3, 3]  # one dotted line per panel


def test_threshold_figure_shows_the_thresholds_in_force():
    fig = plots.threshold_figure([_hand_traces()], shift_points=[2])
    assert [trace.name for trace in fig.data] == ["online", "online"]
    np.testing.assert_allclose(fig.data[0].y, [0.5, 0.6, 0.55, 0.5])
    np.testing.assert_allclose(fig.data[1].y, [0.5, 0.49, 0.48, 0.47])
    assert len(fig.layout.shapes) == 2


STATE = ControllerState.initial(ControllerConfig(alpha_harm=0.1, alpha_comp=0.2, eta_harm=0.5, eta_comp=0.25))


def _errors():
    err = {"harm": np.array(ERR_HARM, dtype=bool), "comp": np.array(ERR_COMP, dtype=bool)}
    return err, {"harm": np.full(8, 0.5), "comp": np.full(8, 0.5)}


def test_traces_from_errors_band_matches_the_hand_computed_bound():
    traces = traces_from_errors(*_errors(), STATE, window=3, centred=False)
    # bound(t) = max(0, B + η(1−α) − q1)/(η t): harm (1 + 0.45 − 0.5)/(0.5 t) = 1.9/t, comp (1 + 0.2 − 0.5)/(0.25 t)
    t = np.arange(1, 9)
    np.testing.assert_allclose(traces.bound["harm"], 1.9 / t)
    np.testing.assert_allclose(traces.bound["comp"], 2.8 / t)
    np.testing.assert_allclose(traces.upper("harm"), 0.1 + 1.9 / t)
    np.testing.assert_allclose(traces.running["comp"], np.cumsum(ERR_COMP) / t)
    final = traces.final()
    assert final["harm"] == {"rate": 0.25, "target": 0.1, "bound": pytest.approx(1.9 / 8), "within": True}
    fig = plots.violation_figure([traces])
    assert _trace(fig, "stream: target + bound(t)").y[7] == pytest.approx(0.1 + 1.9 / 8)
    assert set(traces.frame().columns) >= {"t", "running_harm", "bound_harm", "local_comp", "q_comp"}


def test_delay_widens_the_band_one_d_or_one_per_t():
    # D = 2 at every t: (1 + 3 * 0.45 − 0.5)/(0.5 t) = 3.7/t.
    t = np.arange(1, 9)
    np.testing.assert_allclose(traces_from_errors(*_errors(), STATE, delay=2).bound["harm"], 3.7 / t)
    # Per-t delays: 0 for t <= 2, then 2.
    delays = np.array([0, 0, 2, 2, 2, 2, 2, 2])
    bound = traces_from_errors(*_errors(), STATE, delay=delays).bound["harm"]
    np.testing.assert_allclose(bound, np.where(t <= 2, 1.9, 3.7) / t)
    # Per constraint: a dict.
    traces = traces_from_errors(*_errors(), STATE, delay={"harm": 2, "comp": 0})
    np.testing.assert_allclose(traces.bound["harm"], 3.7 / t)
    np.testing.assert_allclose(traces.bound["comp"], 2.8 / t)


def test_delay_array_goes_to_bound_trace_as_it_is(monkeypatch):
    seen = []

    def spy(n_t, step_size, alpha, q1, score_bound, delay=0):
        seen.append(delay)
        return np.zeros(len(n_t))

    monkeypatch.setattr(rates, "bound_trace", spy)
    delays = np.arange(8)
    rate_traces.traces_from_errors(*_errors(), STATE, delay=delays)
    assert seen[0] is delays and seen[1] is delays


@pytest.fixture(scope="module")
def sim_result() -> SimulationResultFile:
    result = simulate(SimulationConfig(schedule="abrupt_switch", T=2_000, n_calibration=200, trace_points=50))
    return SimulationResultFile.from_json(json.dumps(result.to_dict()))


def test_simulate_result_view_has_online_fixed_and_accuracy(sim_result):
    view = plots.result_view(sim_result)
    assert view.kind == "simulate" and set(view.figures) == {"violations", "thresholds", "accuracy"}
    assert view.title == "Simulation: schedule abrupt_switch, T = 2000, human parametric"
    names = [trace.name for trace in view.figures["violations"].data]
    for expected in ("online: running rate", "fixed: running rate", "online: target + bound(t)", "target α"):
        assert expected in names
    assert "fixed: target + bound(t)" not in names  # a fixed threshold has no guarantee
    assert view.figures["violations"].layout.shapes  # shift point lines
    online = rate_traces.traces_from_result(sim_result, "online")
    assert online.running["harm"][-1] == pytest.approx(sim_result.online.violation_rate["harm"])
    assert rate_traces.traces_from_result(sim_result.to_dict(), "online").t.tolist() == online.t.tolist()
    acc = view.tables["accuracy"].set_index("who")["accuracy"]
    assert acc["human alone"] == sim_result.human_alone_accuracy
    assert acc["collaborative, online controller"] == sim_result.online.accuracy
    assert acc["collaborative, plain conformal set (matched coverage)"] == sim_result.matched.accuracy
    bars = view.figures["accuracy"].data[0]
    assert list(bars.x) == list(acc.index) and bars.text[0] == f"{sim_result.human_alone_accuracy:.3f}"
    assert view.tables["set sizes"]["run"].tolist() == ["online", "fixed", "matched"]
    assert view.tables["violations"]["within target + bound"].iloc[:2].tolist() == [True, True]
    assert plots.result_view(sim_result.to_dict()).title == view.title  # the parsed JSON works too


def test_sweep_result_view():
    sweep = run_sweep(SweepConfig(base=SimulationConfig(T=1_000, n_calibration=100, with_fixed=False),
                                  alpha_harm_grid=(0.02, 0.1), alpha_comp_grid=(0.05, 0.1, 0.2)))
    data = json.loads(json.dumps(sweep.to_dict()))
    view = plots.result_view(data)
    assert view.kind == "sweep"
    table = view.tables["final accuracy"]
    assert table.shape == (2, 3) and table.loc[0.1, 0.2] == data["accuracy"][1][2]
    heatmap = view.figures["accuracy heatmap"].data[0]
    assert np.array(heatmap.z).shape == (2, 3) and list(heatmap.x) == ["0.05", "0.1", "0.2"]
    assert len(view.figures["accuracy lines"].data) == 3


def test_counter_view_of_the_shipped_report_and_of_a_job_report():
    report = shipped_counter_report()
    view = plots.counter_view(report)
    overall = report.metrics["overall"]
    assert view.title.startswith("Shipped model (assets/collab/counter.pt): ")
    assert f"accuracy {overall['accuracy']:.3f}" in view.title and view.plots == []
    table = view.table.set_index("set")
    assert table.loc["hard", "accuracy"] == report.metrics["hard"]["accuracy"]
    assert view.summary.endswith(f"reproduce: {report.command}")
    tiny = CounterReportFile(command="python -m engines.collab train-counter --quick", n_parameters=1234,
                             temperature=1.5, quick=True, history=[{"epoch": 1, "loss": 2.0}],
                             metrics={"overall": {"n": 10, "accuracy": 0.5, "ece": 0.25, "mean_confidence": 0.6,
                                                  "nll": 1.0}}, job_id=7)
    view = plots.counter_view(tiny)
    assert view.title == "Job #7: accuracy 0.500, ECE 0.250 on 10 held-out images"
    assert "1,234 parameters" in view.summary and "(quick: not a useful model)" in view.summary
    assert view.history["loss"].tolist() == [2.0]


def test_job_tables_show_status_progress_and_accuracy():
    created = datetime(2026, 1, 1, tzinfo=UTC)
    sims = plots.simulation_jobs_table([Job(id=3, kind="collab.sweep", status="running", progress=0.5,
                                            message="cell 2/4", created_at=created)])
    assert sims.to_dict("records") == [{"id": 3, "kind": "collab.sweep", "status": "running", "progress": 0.5,
                                        "message": "cell 2/4", "created": created}]
    counters = plots.counter_jobs_table([
        Job(id=5, kind="collab.train_counter", status="succeeded", progress=1.0, created_at=created,
            params={"train_size": 6000, "epochs": 6, "train_difficulty": [0.0, 0.5]},
            result={"overall": {"accuracy": 0.61, "ece": 0.04}}),
        Job(id=6, kind="collab.train_counter", status="queued", created_at=created, params={"quick": True})])
    first, second = counters.to_dict("records")
    assert (first["training images"], first["epochs"], first["difficulty"], first["accuracy"], first["ECE"]) == \
        (6000, 6, "0–0.5", 0.61, 0.04)
    assert second["training images"] == second["epochs"] == "quick" and pd.isna(second["accuracy"])
    assert plots.simulation_jobs_table([]).empty


def test_a_threshold_outside_the_score_range_gets_a_note():
    inside = _hand_traces()
    assert plots.out_of_range_note([inside], "comp") is None
    assert not any("fell below" in a.text for a in plots.threshold_figure([inside]).layout.annotations)
    below = dataclasses.replace(inside, thresholds={**inside.thresholds,
                                                     "comp": np.array([0.2, 0.05, -0.1, -0.3])})
    note = plots.out_of_range_note([below], "comp")
    assert note.startswith("q^C fell below 0 (to -0.") and "guarantee still holds" in note
    texts = [a.text for a in plots.threshold_figure([below]).layout.annotations]
    assert any("q^C fell below 0" in t for t in texts)
    above = dataclasses.replace(inside, thresholds={**inside.thresholds,
                                                     "harm": np.array([0.9, 1.2, 1.1, 1.0])})
    assert plots.out_of_range_note([above], "harm", score_bound=1.0).startswith("q^H rose above the score bound 1")

