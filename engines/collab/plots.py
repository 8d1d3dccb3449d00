"""Plotly figures and tables of the collaboration engine, built from data objects only.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); measurements 1–4
of ``docs/collab.md``, Method, "Baselines and measurements":

1. running (prefix) violation rate per constraint against the target line, with the
   finite-sample band [α, α + bound(t)] of the online controller (``controller.upper_bound``),
   the fixed baseline beside it, vertical lines at shift points, and a rolling local rate;
2. threshold traces q^H_t and q^C_t;
3. final accuracy over the (α_H, α_C) grid (a sweep), with human alone and AI alone;
4. mean set size and rounds until the answer stabilises.

Inputs are ``rate_traces.RateTraces``, the result files of ``result_files`` (a ``simulate`` or
``sweep`` result, the counting CNN's report), an audited stream (``store.StreamAudit``) and job
rows; nothing here queries the database, reads a file or imports Streamlit. As captum keeps
``visualize_image_attr`` beside its algorithms, the figures live in the engine and pages lay them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from engines.collab.controller import ControllerState
from engines.collab.rate_traces import CONSTRAINTS, RateTraces, traces_from_audit, traces_from_result
from engines.collab.rates import DEFAULT_WINDOW
from engines.collab.result_files import (
    CounterReportFile,
    ResultFile,
    SimulationResultFile,
    SweepResultFile,
    load_result_file,
)

if TYPE_CHECKING:
    from engines.collab.store import StreamAudit
    from engines.platform.models import Job

CONSTRAINT_TITLES = {"harm": "Counterfactual harm (protect rule)", "comp": "Complementarity failure (supply rule)"}
THRESHOLD_TITLES = {"harm": "q^H (harm threshold)", "comp": "q^C (complementarity threshold)"}

COLORS = {"online": "#1f77b4", "fixed": "#d62728", "stream": "#1f77b4"}


# RATE TRACES: measurements 1 and 2

def _y_range(runs: Sequence[RateTraces], name: str) -> list[float]:
    target = runs[0].target[name]
    late = [r.running[name][len(r.t) // 20:] for r in runs if len(r.t)]
    top = max([float(np.max(x)) for x in late if len(x)] + [target])
    return [0.0, min(1.0, max(2.5 * target, 1.3 * top))]


def violation_figure(runs: Sequence[RateTraces], *, shift_points: Sequence[int] = (), show_local: bool = True,
                     title: str = "Running violation rate vs target") -> go.Figure:
    """Measurement 1: one panel per constraint; running rate of each run, target line, α + bound(t) band.

    Args:
        runs: the online run (or a stream) first, then e.g. the fixed baseline.
        shift_points: interaction indices of shifts (vertical dotted lines).
        show_local: also draw each run's rolling local rate (thin, dotted).

    Returns:
        A figure whose traces are named "<run>: running rate", "<run>: target + bound(t)" (the band's
        upper edge, clipped at the panel's top), "<run>: <kind> rolling rate" and "target α".
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=[CONSTRAINT_TITLES[n] for n in CONSTRAINTS],
                        horizontal_spacing=0.08)
    for col, name in enumerate(CONSTRAINTS, start=1):
        legend = col == 1
        target = runs[0].target[name]
        ymax = _y_range(runs, name)[1]
        for run in runs:
            upper = run.upper(name)
            if upper is not None and len(run.t):
                fig.add_trace(go.Scatter(x=run.t, y=np.full(len(run.t), target), mode="lines", line={"width": 0},
                                         showlegend=False, hoverinfo="skip", legendgroup=f"band-{run.label}"),
                              row=1, col=col)
                fig.add_trace(go.Scatter(x=run.t, y=np.minimum(upper, ymax), mode="lines", line={"width": 0},
                                         fill="tonexty", fillcolor="rgba(31,119,180,0.15)",
                                         name=f"{run.label}: target + bound(t)", legendgroup=f"band-{run.label}",
                                         showlegend=legend), row=1, col=col)
        for run in runs:
            color = COLORS.get(run.label, None)
            fig.add_trace(go.Scatter(x=run.t, y=run.running[name], mode="lines", name=f"{run.label}: running rate",
                                     line={"color": color, "width": 2}, legendgroup=run.label, showlegend=legend),
                          row=1, col=col)
            if show_local:
                fig.add_trace(go.Scatter(x=run.t, y=run.local[name], mode="lines",
                                         name=f"{run.label}: {run.local_kind} rolling rate",
                                         line={"color": color, "width": 1, "dash": "dot"}, opacity=0.6,
                                         legendgroup=f"local-{run.label}", showlegend=legend), row=1, col=col)
        fig.add_trace(go.Scatter(x=[runs[0].t[0] if len(runs[0].t) else 0, runs[0].t[-1] if len(runs[0].t) else 1],
                                 y=[target, target], mode="lines", name="target α",
                                 line={"color": "black", "dash": "dash", "width": 1.5}, showlegend=legend),
                      row=1, col=col)
        for point in shift_points:
            fig.add_vline(x=point, line={"color": "grey", "dash": "dot", "width": 1}, row=1, col=col)
        fig.update_yaxes(title_text="violation rate", range=[0.0, ymax], row=1, col=col)
        fig.update_xaxes(title_text="interaction t", row=1, col=col)
    fig.update_layout(title=title, height=420, legend={"orientation": "h", "y": -0.25}, margin={"t": 70})
    return fig


def out_of_range_note(runs: Sequence[RateTraces], name: str, score_bound: float = 1.0) -> str | None:
    """A sentence for a threshold that left the score range [0, B] (None if it stayed inside).

    Below 0 no label passes that threshold, so the set omits every label routed through it; above B
    every such label passes. Neither breaks the guarantee (the bound's argument allows it), but a
    reader of the trace should not have to know that.
    """
    values = [np.asarray(run.thresholds[name], dtype=float) for run in runs if len(run.t)]
    finite = [v[np.isfinite(v)] for v in values]
    low = min((float(v.min()) for v in finite if len(v)), default=0.0)
    high = max((float(v.max()) for v in finite if len(v)), default=0.0)
    symbol = "q^H" if name == "harm" else "q^C"
    if low < 0:
        return (f"{symbol} fell below 0 (to {low:.3g}): no label passes it then, so the set leaves out every label "
                "it governs; the guarantee still holds.")
    if high > score_bound:
        return (f"{symbol} rose above the score bound {score_bound:g} (to {high:.3g}): every label it governs "
                "passes then; the guarantee still holds.")
    return None


def threshold_figure(runs: Sequence[RateTraces], *, shift_points: Sequence[int] = (),
                     title: str = "Thresholds q^H_t and q^C_t", score_bound: float = 1.0) -> go.Figure:
    """Measurement 2: threshold traces, one panel per constraint, one line per run (named by its label).

    The score range [0, B] is drawn as dotted lines; a threshold outside it gets a note under its
    panel (``out_of_range_note``).
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=[THRESHOLD_TITLES[n] for n in CONSTRAINTS],
                        horizontal_spacing=0.08)
    notes = []
    for col, name in enumerate(CONSTRAINTS, start=1):
        for run in runs:
            fig.add_trace(go.Scatter(x=run.t, y=run.thresholds[name], mode="lines", name=run.label,
                                     line={"color": COLORS.get(run.label)}, legendgroup=run.label,
                                     showlegend=col == 1), row=1, col=col)
        for point in shift_points:
            fig.add_vline(x=point, line={"color": "grey", "dash": "dot", "width": 1}, row=1, col=col)
        note = out_of_range_note(runs, name, score_bound)
        if note is not None:
            for edge in (0.0, score_bound):
                fig.add_hline(y=edge, line={"color": "grey", "dash": "dot", "width": 1}, row=1, col=col)
            notes.append(note)
        fig.update_yaxes(title_text="threshold (score units)", row=1, col=col)
        fig.update_xaxes(title_text="interaction t", row=1, col=col)
    if notes:
        fig.add_annotation(text="<br>".join(notes), xref="paper", yref="paper", x=0, y=-0.42, showarrow=False,
                           align="left", xanchor="left", font={"size": 11})
    fig.update_layout(title=title, height=400 if notes else 360, legend={"orientation": "h", "y": -0.3},
                      margin={"t": 70, "b": 110 if notes else None})
    return fig


# A SIMULATION RESULT: accuracy, set sizes, final violations

def _simulation(result: SimulationResultFile | dict) -> SimulationResultFile:
    return SimulationResultFile.from_json(result) if isinstance(result, dict) else result


def _sweep(result: SweepResultFile | dict) -> SweepResultFile:
    return SweepResultFile.from_json(result) if isinstance(result, dict) else result


def accuracy_table(result: SimulationResultFile | dict) -> pd.DataFrame:
    """Final accuracy of human alone, AI alone and the collaboration (online, fixed, matched) of a ``simulate`` result."""
    result = _simulation(result)
    rows = [("human alone", result.human_alone_accuracy), ("AI alone (top-1)", result.ai_alone_accuracy),
            ("collaborative, online controller", result.online.accuracy)]
    if result.fixed:
        rows.append(("collaborative, fixed thresholds", result.fixed.accuracy))
    if result.matched:
        rows.append(("collaborative, plain conformal set (matched coverage)", result.matched.accuracy))
    return pd.DataFrame(rows, columns=["who", "accuracy"])


def accuracy_figure(result: SimulationResultFile | dict) -> go.Figure:
    """Final accuracy as bars, one per row of ``accuracy_table``, each labelled with its value."""
    table = accuracy_table(result)
    fig = go.Figure(go.Bar(x=table["who"], y=table["accuracy"], text=[f"{a:.3f}" for a in table["accuracy"]],
                           textposition="outside", marker_color=["#7f7f7f", "#9467bd", COLORS["online"],
                                                                 COLORS["fixed"], "#8c564b"][:len(table)]))
    fig.update_layout(title="Final accuracy", yaxis={"title": "accuracy", "range": [0, 1.08]}, height=360)
    return fig


def set_size_table(result: SimulationResultFile | dict) -> pd.DataFrame:
    """Measurement 4 per run: mean set size per round, coverage, rounds played, round the answer stabilised."""
    return pd.DataFrame([{"run": which, "mean set size": s.mean_set_size, "set coverage": s.set_coverage,
                          "mean rounds": s.mean_rounds, "mean stabilise round": s.mean_stabilise_round}
                         for which, s in _simulation(result).runs().items()])


def violation_table(result: SimulationResultFile | dict) -> pd.DataFrame:
    """Final violation rate per run and constraint, with target, bound and whether it is within target + bound."""
    return pd.DataFrame([{"run": which, "constraint": name, "rate": s.violation_rate[name],
                          "target": s.target[name], "bound": s.bound.get(name),
                          "within target + bound": s.within_bound.get(name)}
                         for which, s in _simulation(result).runs().items() for name in CONSTRAINTS])


# A SWEEP RESULT: measurement 3

def sweep_table(sweep: SweepResultFile | dict) -> pd.DataFrame:
    """Final accuracy, alpha_harm down the rows and alpha_comp across."""
    sweep = _sweep(sweep)
    return pd.DataFrame(sweep.accuracy, index=pd.Index(sweep.alpha_harm_grid, name="alpha_harm"),
                        columns=pd.Index(sweep.alpha_comp_grid, name="alpha_comp"))


def sweep_heatmap(sweep: SweepResultFile | dict) -> go.Figure:
    """Measurement 3: final accuracy over the (α_H, α_C) grid."""
    sweep = _sweep(sweep)
    table = sweep_table(sweep)
    fig = go.Figure(go.Heatmap(z=table.values, x=[f"{c:g}" for c in table.columns], y=[f"{h:g}" for h in table.index],
                               colorscale="Viridis", colorbar={"title": "accuracy"},
                               text=[[f"{v:.3f}" for v in row] for row in table.values], texttemplate="%{text}"))
    fig.update_layout(title=f"Final accuracy (human alone {sweep.human_alone_accuracy:.3f}, "
                            f"AI alone {sweep.ai_alone_accuracy:.3f})",
                      xaxis={"title": "alpha_comp (complementarity target)", "type": "category"},
                      yaxis={"title": "alpha_harm (harm target)", "type": "category"}, height=420)
    return fig


def sweep_lines(sweep: SweepResultFile | dict) -> go.Figure:
    """Final accuracy against alpha_harm, one line per alpha_comp, with human-alone and AI-alone levels."""
    sweep = _sweep(sweep)
    table = sweep_table(sweep)
    fig = go.Figure()
    for comp in table.columns:
        fig.add_trace(go.Scatter(x=list(table.index), y=table[comp], mode="lines+markers", name=f"alpha_comp={comp:g}"))
    for level, name, dash in ((sweep.human_alone_accuracy, "human alone", "dash"),
                              (sweep.ai_alone_accuracy, "AI alone", "dot")):
        fig.add_hline(y=level, line={"dash": dash, "color": "grey"}, annotation_text=name)
    fig.update_layout(title="Final accuracy vs harm target", xaxis={"title": "alpha_harm", "type": "log"},
                      yaxis={"title": "accuracy"}, height=400)
    return fig


# VIEWS: everything one part of a page shows, from one data object

@dataclass
class ResultView:
    """Figures and tables for one result file; ``kind`` is "simulate" or "sweep"."""

    kind: str
    title: str
    figures: dict[str, go.Figure]
    tables: dict[str, pd.DataFrame]
    summary: str = ""


def result_view(result: ResultFile | dict) -> ResultView:
    """Everything to show for a ``simulate`` or ``sweep`` result (a result file, or its parsed JSON)."""
    if isinstance(result, dict):
        result = load_result_file(result)
    if isinstance(result, SweepResultFile):
        return ResultView(result.kind, result.title,
                          figures={"accuracy heatmap": sweep_heatmap(result), "accuracy lines": sweep_lines(result)},
                          tables={"final accuracy": sweep_table(result)}, summary=result.summary or "")
    runs = [r for r in (traces_from_result(result, "online"), traces_from_result(result, "fixed")) if r is not None]
    shifts = result.shift_points or []
    return ResultView(
        result.kind, result.title,
        figures={"violations": violation_figure(runs, shift_points=shifts),
                 "thresholds": threshold_figure(runs, shift_points=shifts),
                 "accuracy": accuracy_figure(result)},
        tables={"violations": violation_table(result), "accuracy": accuracy_table(result),
                "set sizes": set_size_table(result)},
        summary=result.summary or "")


@dataclass
class StreamView:
    """The live view of one controller stream: its traces, audited state, figures and tables."""

    key: str
    interactions: int
    state: ControllerState
    traces: RateTraces
    figures: dict[str, go.Figure]
    table: pd.DataFrame
    audit: StreamAudit | None = None
    phases: pd.DataFrame | None = None

    @property
    def fixed(self) -> bool:
        """Thresholds that never move (η = 0, the "fixed" condition): no guarantee, so no bound."""
        return self.state.config.eta_harm == 0 and self.state.config.eta_comp == 0


def stream_view(report: StreamAudit, *, window: int = DEFAULT_WINDOW) -> StreamView:
    """Figures and tables of an audited stream (``store.audit_report``); trailing window, as later data is still to come.

    The band at t uses the delay of the latest update with an error up to t (``rate_traces.traces_from_audit``);
    the table also gives the bound with the stream's largest delay and the textbook bound, so the
    price of overlapping participants is visible.
    """
    state = report.state
    traces = traces_from_audit(report, window=window, centred=False)
    final = traces.final()
    table = pd.DataFrame([{"constraint": n, "violations": int(getattr(state, f"n_err_{n}")),
                           "running rate": final[n]["rate"], "target": final[n]["target"], "bound": final[n]["bound"],
                           "delay in the bound": report.latest_error_delay.get(n, 0),
                           "bound with max delay D": report.bound_max_delay.get(n),
                           "bound without delay": report.bound_no_delay[n],
                           "within target + bound": final[n]["within"],
                           "threshold now": getattr(state, f"q_{n}"), "q_1": getattr(state, f"q1_{n}")}
                          for n in CONSTRAINTS])
    calibration = report.calibration or {}
    phases = pd.DataFrame([{
        "calibration batch": f"{report.phases['calibration']} / {report.calibration_size}",
        "fit": calibration.get("status", "pending" if report.calibration_size else "none"),
        "online interactions": report.phases["online"], "excluded": report.phases["excluded"],
        "max delay D": report.max_delay, "mean delay": round(report.mean_delay, 2),
        "note": calibration.get("note") or ""}])
    figures = {}
    if len(traces.t):
        figures = {"violations": violation_figure([traces], title=f"{report.key}: running violation rate vs target"),
                   "thresholds": threshold_figure([traces], title=f"{report.key}: thresholds",
                                                  score_bound=state.config.score_bound)}
    return StreamView(report.key, len(traces.t), state, traces, figures, table, report, phases)


# THE AI MODEL: the counting CNN's report

def counter_metrics_table(report: CounterReportFile) -> pd.DataFrame:
    """One row per evaluation set of a training report: n, accuracy, ECE, mean confidence, NLL."""
    return pd.DataFrame([{"set": name, "n": m["n"], "accuracy": m["accuracy"], "ECE": m["ece"],
                          "mean confidence": m["mean_confidence"], "NLL": m["nll"]}
                         for name, m in report.metrics.items()],
                        columns=["set", "n", "accuracy", "ECE", "mean confidence", "NLL"])


@dataclass
class CounterView:
    """What to show of one trained counter: metrics per set, training curve, plots, how to rerun it."""

    title: str
    table: pd.DataFrame
    history: pd.DataFrame
    plots: list[Path]
    summary: str
    report: CounterReportFile


def counter_view(report: CounterReportFile) -> CounterView:
    """The view of a training report: the shipped model's (``job_id`` None) or a training job's."""
    overall, train = report.overall, report.train_config or {}
    scores = f"accuracy {overall['accuracy']:.3f}, ECE {overall['ece']:.3f} on {overall['n']:,} held-out images"
    title = (f"Shipped model (assets/collab/counter.pt): {scores}" if report.job_id is None
             else f"Job #{report.job_id}: {scores}")
    summary = "\n".join([
        f"{report.n_parameters:,} parameters, temperature {report.temperature}, "
        f"{train.get('train_size', '?')} training images, {train.get('epochs', '?')} epochs, "
        f"difficulty {report.train_difficulty or '?'}" + (" (quick: not a useful model)" if report.quick else ""),
        f"reproduce: {report.command}"])
    return CounterView(title, counter_metrics_table(report), pd.DataFrame(report.history or []), list(report.plots),
                       summary, report)


# JOB TABLES: jobs as rows with status and progress (``ui.jobs_table`` draws the progress column)

def simulation_jobs_table(jobs: Sequence[Job]) -> pd.DataFrame:
    """Simulate and sweep jobs: id, kind, status, progress, message, created."""
    return pd.DataFrame([{"id": j.id, "kind": j.kind, "status": j.status, "progress": j.progress,
                          "message": j.message, "created": j.created_at} for j in jobs],
                        columns=["id", "kind", "status", "progress", "message", "created"])


def counter_jobs_table(jobs: Sequence[Job]) -> pd.DataFrame:
    """Training jobs: status, progress, main parameters and, once finished, accuracy and ECE."""
    rows = []
    for j in jobs:
        params, overall = j.params or {}, (j.result or {}).get("overall", {})
        rows.append({"id": j.id, "status": j.status, "progress": j.progress, "message": j.message,
                     "training images": "quick" if params.get("quick") else params.get("train_size"),
                     "epochs": "quick" if params.get("quick") else params.get("epochs"),
                     "difficulty": "–".join(f"{v:g}" for v in params.get("train_difficulty", (0.0, 1.0))),
                     "accuracy": overall.get("accuracy"), "ECE": overall.get("ece"), "created": j.created_at})
    return pd.DataFrame(rows, columns=["id", "status", "progress", "message", "training images", "epochs",
                                       "difficulty", "accuracy", "ECE", "created"])
