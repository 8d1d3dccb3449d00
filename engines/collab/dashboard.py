"""What the collaboration dashboard shows, as data and plotly figures (no Streamlit here).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); spec ``shared/specs/collab.md`` §5,
metrics and plots 1–4:

1. running (prefix) violation rate per constraint against the target line, with the
   finite-sample band [α, α + bound(t)] of the online controller (``controller.upper_bound``),
   the fixed baseline beside it, vertical lines at shift points, and a rolling local rate;
2. threshold traces q^H_t and q^C_t;
3. final accuracy over the (α_H, α_C) grid (a sweep), with human alone and AI alone;
4. mean set size and rounds until the answer stabilises.

Three sources feed the same figures: a live controller stream in the database
(``traces_from_history``), the JSON ``simulate`` writes (``traces_from_result``), and the JSON
``sweep`` writes (``sweep_figures``). The AI's side: the counting CNN's report (accuracy and
ECE by difficulty), shipped or from a ``collab.train_counter`` job, and which AI scores a
simulation job can use (``ai_score_choices``). As captum keeps ``visualize_image_attr`` beside its
algorithms, the plotting lives here and the page only lays it out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.collab.controller import ControllerState
from engines.collab.models import ControllerStream, ControllerUpdate
from engines.collab.rates import DEFAULT_WINDOW, bound_trace, denominators, rolling_rate, running_rate
from engines.platform.db import read_session

CONSTRAINTS = ("harm", "comp")
CONSTRAINT_TITLES = {"harm": "Counterfactual harm (protect rule)", "comp": "Complementarity failure (supply rule)"}
THRESHOLD_TITLES = {"harm": "q^H (harm threshold)", "comp": "q^C (complementarity threshold)"}

COLORS = {"online": "#1f77b4", "fixed": "#d62728", "stream": "#1f77b4"}


class ResultFileError(ValueError):
    """An uploaded or stored result JSON is not a ``simulate`` or ``sweep`` result; the message says why."""


@dataclass
class RateTraces:
    """Running rates, bound, local rates and thresholds of one controller run, at times ``t`` (1-based).

    ``bound[name]`` is None for a run without a guarantee (the fixed baseline); entries may be
    inf where no interaction has counted yet.
    """

    label: str
    t: np.ndarray
    running: dict[str, np.ndarray]
    local: dict[str, np.ndarray]
    thresholds: dict[str, np.ndarray]
    target: dict[str, float]
    bound: dict[str, np.ndarray | None] = field(default_factory=dict)
    local_kind: str = "trailing"

    def frame(self) -> pd.DataFrame:
        data = {"t": self.t}
        for name in CONSTRAINTS:
            data[f"running_{name}"] = self.running[name]
            data[f"target_{name}"] = np.full(len(self.t), self.target[name])
            if self.bound.get(name) is not None:
                data[f"bound_{name}"] = self.bound[name]
            data[f"local_{name}"] = self.local[name]
            data[f"q_{name}"] = self.thresholds[name]
        return pd.DataFrame(data)

    def final(self) -> dict:
        """Final running rate, target, bound and whether the rate is within target + bound."""
        out = {}
        for name in CONSTRAINTS:
            rate = float(self.running[name][-1]) if len(self.t) else 0.0
            bound = self.bound.get(name)
            b = float(bound[-1]) if bound is not None and len(self.t) else None
            out[name] = {"rate": rate, "target": self.target[name], "bound": b,
                         "within": None if b is None else bool(rate <= self.target[name] + b + 1e-12)}
        return out


def traces_from_errors(err: dict[str, np.ndarray], thresholds: dict[str, np.ndarray], state: ControllerState, *,
                       fired: dict[str, np.ndarray] | None = None, label: str = "stream",
                       window: int = DEFAULT_WINDOW, centred: bool = True, delay: int = 0) -> RateTraces:
    """Traces from per-interaction errors and the thresholds used, with the bound of ``state``'s controller.

    Args:
        err: {"harm": (T,) bool, "comp": (T,) bool} violations in update order.
        thresholds: {"harm": (T,), "comp": (T,)} thresholds in force during each interaction.
        state: a controller state of the run (its config, q1_* and π̂ give targets and bound).
        fired: firing indicators; needed in the conditional variant (denominator = firing count).
        window, centred: the local rate (``rolling_rate``).
        delay: D, the largest update delay of the run (``store.StreamAudit.max_delay``) for the band.
    """
    cfg = state.config
    T = len(err["harm"])
    t = np.arange(1, T + 1)
    running, local, bound = {}, {}, {}
    for name, step_size, alpha, q1 in (("harm", state.step_harm, cfg.alpha_harm, state.q1_harm),
                                       ("comp", state.step_comp, cfg.alpha_comp, state.q1_comp)):
        e = np.asarray(err[name], dtype=float)
        n_t = denominators(T, fired[name] if (cfg.conditional and fired) else None)
        running[name] = running_rate(e, n_t)
        local[name] = rolling_rate(e, min(window, max(T, 1)), centred=centred) if T else np.zeros(0)
        bound[name] = bound_trace(n_t, step_size, alpha, q1, cfg.score_bound, delay=delay)
    return RateTraces(label=label, t=t, running=running, local=local,
                      thresholds={k: np.asarray(v, dtype=float) for k, v in thresholds.items()},
                      target={"harm": cfg.alpha_harm, "comp": cfg.alpha_comp}, bound=bound,
                      local_kind="centred" if centred else "trailing")


def traces_from_history(updates: Sequence[ControllerUpdate], state: ControllerState, *, window: int = DEFAULT_WINDOW,
                        centred: bool = True, delay: int = 0) -> RateTraces:
    """Traces of a controller stream's online part from its stored updates (``store.history``) and a state of it.

    Calibration-batch and excluded updates are left out: the guarantee (and t = 1, 2, ...) starts at the fit.
    """
    updates = sorted((u for u in updates if u.phase == "online"), key=lambda u: u.seq)
    err = {"harm": np.array([u.err_harm for u in updates], dtype=bool),
           "comp": np.array([u.err_comp for u in updates], dtype=bool)}
    fired = {"harm": np.array([u.fired_harm for u in updates], dtype=bool),
             "comp": np.array([u.fired_comp for u in updates], dtype=bool)}
    thresholds = {"harm": np.array([u.q_harm_before for u in updates], dtype=float),
                  "comp": np.array([u.q_comp_before for u in updates], dtype=float)}
    return traces_from_errors(err, thresholds, state, fired=fired, label="stream", window=window, centred=centred,
                              delay=delay)


def traces_from_result(result: dict, which: str = "online") -> RateTraces | None:
    """Traces of the ``online`` or ``fixed`` run of a ``simulate`` result dict (None if that run is absent).

    The result stores checkpoints only (``trace_points``), with trailing-window local rates.
    """
    summary = result.get(which)
    if summary is None:
        return None
    trace = summary["trace"]
    t = np.asarray(trace["t"])

    def arr(key):
        values = trace.get(key)
        return None if values is None else np.array([math.inf if v is None else v for v in values], dtype=float)

    return RateTraces(
        label=which, t=t,
        running={n: arr(f"violation_{n}") for n in CONSTRAINTS},
        local={n: arr(f"local_{n}") for n in CONSTRAINTS},
        thresholds={n: arr(f"q_{n}") for n in CONSTRAINTS},
        target=dict(summary["target"]),
        bound={n: arr(f"bound_{n}") for n in CONSTRAINTS}, local_kind="trailing")


# FIGURES

def _y_range(runs: Sequence[RateTraces], name: str) -> list[float]:
    target = runs[0].target[name]
    late = [r.running[name][len(r.t) // 20:] for r in runs if len(r.t)]
    top = max([float(np.max(x)) for x in late if len(x)] + [target])
    return [0.0, min(1.0, max(2.5 * target, 1.3 * top))]


def violation_figure(runs: Sequence[RateTraces], *, shift_points: Sequence[int] = (), show_local: bool = True,
                     title: str = "Running violation rate vs target") -> go.Figure:
    """Spec §5 plot 1: one panel per constraint; running rate of each run, target line, α + bound(t) band.

    Args:
        runs: the online run (or a stream) first, then e.g. the fixed baseline.
        shift_points: interaction indices of shifts (vertical dotted lines).
        show_local: also draw each run's rolling local rate (thin, dotted).
    """
    fig = make_subplots(rows=1, cols=2, subplot_titles=[CONSTRAINT_TITLES[n] for n in CONSTRAINTS],
                        horizontal_spacing=0.08)
    for col, name in enumerate(CONSTRAINTS, start=1):
        legend = col == 1
        target = runs[0].target[name]
        ymax = _y_range(runs, name)[1]
        for run in runs:
            bound = run.bound.get(name)
            if bound is not None and len(run.t):
                upper = np.minimum(target + bound, ymax)
                fig.add_trace(go.Scatter(x=run.t, y=np.full(len(run.t), target), mode="lines", line={"width": 0},
                                         showlegend=False, hoverinfo="skip", legendgroup=f"band-{run.label}"),
                              row=1, col=col)
                fig.add_trace(go.Scatter(x=run.t, y=upper, mode="lines", line={"width": 0}, fill="tonexty",
                                         fillcolor="rgba(31,119,180,0.15)", name=f"{run.label}: target + bound(t)",
                                         legendgroup=f"band-{run.label}", showlegend=legend), row=1, col=col)
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
        fig.update_yaxes(title_text="violation rate", range=_y_range(runs, name), row=1, col=col)
        fig.update_xaxes(title_text="interaction t", row=1, col=col)
    fig.update_layout(title=title, height=420, legend={"orientation": "h", "y": -0.25}, margin={"t": 70})
    return fig


def threshold_figure(runs: Sequence[RateTraces], *, shift_points: Sequence[int] = (),
                     title: str = "Thresholds q^H_t and q^C_t") -> go.Figure:
    """Spec §5 plot 2: threshold traces, one panel per constraint."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[THRESHOLD_TITLES[n] for n in CONSTRAINTS],
                        horizontal_spacing=0.08)
    for col, name in enumerate(CONSTRAINTS, start=1):
        for run in runs:
            fig.add_trace(go.Scatter(x=run.t, y=run.thresholds[name], mode="lines", name=run.label,
                                     line={"color": COLORS.get(run.label)}, legendgroup=run.label,
                                     showlegend=col == 1), row=1, col=col)
        for point in shift_points:
            fig.add_vline(x=point, line={"color": "grey", "dash": "dot", "width": 1}, row=1, col=col)
        fig.update_yaxes(title_text="threshold (score units)", row=1, col=col)
        fig.update_xaxes(title_text="interaction t", row=1, col=col)
    fig.update_layout(title=title, height=360, legend={"orientation": "h", "y": -0.3}, margin={"t": 70})
    return fig


def accuracy_table(result: dict) -> pd.DataFrame:
    """Final accuracy of human alone, AI alone and the collaboration (online, fixed) of a ``simulate`` result."""
    rows = [("human alone", result["human_alone_accuracy"]), ("AI alone (top-1)", result["ai_alone_accuracy"]),
            ("collaborative, online controller", result["online"]["accuracy"])]
    if result.get("fixed"):
        rows.append(("collaborative, fixed thresholds", result["fixed"]["accuracy"]))
    if result.get("matched"):
        rows.append(("collaborative, plain conformal set (matched coverage)", result["matched"]["accuracy"]))
    return pd.DataFrame(rows, columns=["who", "accuracy"])


def accuracy_figure(result: dict) -> go.Figure:
    table = accuracy_table(result)
    fig = go.Figure(go.Bar(x=table["who"], y=table["accuracy"], text=[f"{a:.3f}" for a in table["accuracy"]],
                           textposition="outside", marker_color=["#7f7f7f", "#9467bd", COLORS["online"],
                                                                 COLORS["fixed"], "#8c564b"][:len(table)]))
    fig.update_layout(title="Final accuracy", yaxis={"title": "accuracy", "range": [0, 1.08]}, height=360)
    return fig


def set_size_table(result: dict) -> pd.DataFrame:
    """Spec §5 metric 4 per run: mean set size per round, coverage, rounds played, round the answer stabilised."""
    rows = []
    for which in ("online", "fixed", "matched"):
        s = result.get(which)
        if s:
            rows.append({"run": which, "mean set size": s["mean_set_size"], "set coverage": s["set_coverage"],
                         "mean rounds": s["mean_rounds"], "mean stabilise round": s["mean_stabilise_round"]})
    return pd.DataFrame(rows)


def violation_table(result: dict) -> pd.DataFrame:
    """Final violation rate per run and constraint, with target, bound and excess."""
    rows = []
    for which in ("online", "fixed", "matched"):
        s = result.get(which)
        if not s:
            continue
        for name in CONSTRAINTS:
            bound = s["bound"].get(name)
            rows.append({"run": which, "constraint": name, "rate": s["violation_rate"][name],
                         "target": s["target"][name], "bound": bound,
                         "within target + bound": s["within_bound"].get(name)})
    return pd.DataFrame(rows)


def sweep_table(sweep: dict) -> pd.DataFrame:
    """Final accuracy, alpha_harm down the rows and alpha_comp across."""
    cfg = sweep["config"]
    return pd.DataFrame(sweep["accuracy"], index=pd.Index(cfg["alpha_harm_grid"], name="alpha_harm"),
                        columns=pd.Index(cfg["alpha_comp_grid"], name="alpha_comp"))


def sweep_heatmap(sweep: dict) -> go.Figure:
    """Spec §5 plot 3: final accuracy over the (α_H, α_C) grid."""
    table = sweep_table(sweep)
    fig = go.Figure(go.Heatmap(z=table.values, x=[f"{c:g}" for c in table.columns], y=[f"{h:g}" for h in table.index],
                               colorscale="Viridis", colorbar={"title": "accuracy"},
                               text=[[f"{v:.3f}" for v in row] for row in table.values], texttemplate="%{text}"))
    fig.update_layout(title=f"Final accuracy (human alone {sweep['human_alone_accuracy']:.3f}, "
                            f"AI alone {sweep['ai_alone_accuracy']:.3f})",
                      xaxis={"title": "alpha_comp (complementarity target)", "type": "category"},
                      yaxis={"title": "alpha_harm (harm target)", "type": "category"}, height=420)
    return fig


def sweep_lines(sweep: dict) -> go.Figure:
    """Final accuracy against alpha_harm, one line per alpha_comp, with human-alone and AI-alone levels."""
    table = sweep_table(sweep)
    fig = go.Figure()
    for comp in table.columns:
        fig.add_trace(go.Scatter(x=list(table.index), y=table[comp], mode="lines+markers", name=f"alpha_comp={comp:g}"))
    for level, name, dash in ((sweep["human_alone_accuracy"], "human alone", "dash"),
                              (sweep["ai_alone_accuracy"], "AI alone", "dot")):
        fig.add_hline(y=level, line={"dash": dash, "color": "grey"}, annotation_text=name)
    fig.update_layout(title="Final accuracy vs harm target", xaxis={"title": "alpha_harm", "type": "log"},
                      yaxis={"title": "accuracy"}, height=400)
    return fig


# VALIDATION OF RESULT FILES

SIMULATE_KEYS = ("config", "human_alone_accuracy", "ai_alone_accuracy", "online", "fixed", "shift_points")
RUN_KEYS = ("violation_rate", "target", "bound", "within_bound", "accuracy", "mean_set_size", "set_coverage",
            "mean_rounds", "mean_stabilise_round", "trace")
TRACE_KEYS = ("t", "violation_harm", "violation_comp", "local_harm", "local_comp", "q_harm", "q_comp")
SWEEP_KEYS = ("config", "cells", "accuracy", "human_alone_accuracy", "ai_alone_accuracy")


def _require(data: dict, keys: Sequence[str], where: str) -> None:
    if not isinstance(data, dict):
        raise ResultFileError(f"{where} must be a JSON object, got {type(data).__name__}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ResultFileError(f"{where} is missing key {missing[0]!r}" +
                              (f" (and {', '.join(map(repr, missing[1:]))})" if missing[1:] else ""))


def validate_result(data: object) -> str:
    """Check a ``simulate`` or ``sweep`` result and return its kind; ``ResultFileError`` names what is missing."""
    if not isinstance(data, dict):
        raise ResultFileError(f"the result must be a JSON object, got {type(data).__name__}")
    if "cells" in data or ("accuracy" in data and "online" not in data):
        _require(data, SWEEP_KEYS, "sweep result")
        _require(data["config"], ("alpha_harm_grid", "alpha_comp_grid"), "sweep result 'config'")
        rows, cols = len(data["config"]["alpha_harm_grid"]), len(data["config"]["alpha_comp_grid"])
        acc = data["accuracy"]
        if not (isinstance(acc, list) and len(acc) == rows and all(isinstance(r, list) and len(r) == cols for r in acc)):
            raise ResultFileError(f"sweep result 'accuracy' must be a {rows} x {cols} list of lists "
                                  "(alpha_harm_grid x alpha_comp_grid)")
        return "sweep"
    if "online" not in data:
        raise ResultFileError("not a collab result: a simulate result needs key 'online', a sweep result key 'cells'")
    _require(data, SIMULATE_KEYS, "simulate result")
    for which in ("online", "fixed"):
        if which == "fixed" and data["fixed"] is None:
            continue
        _require(data[which], RUN_KEYS, f"simulate result '{which}'")
        _require(data[which]["trace"], TRACE_KEYS, f"simulate result '{which}.trace'")
        _require(data[which]["target"], CONSTRAINTS, f"simulate result '{which}.target'")
        lengths = {k: len(data[which]["trace"][k]) for k in TRACE_KEYS}
        if len(set(lengths.values())) != 1:
            raise ResultFileError(f"simulate result '{which}.trace' has lists of different lengths: {lengths}")
    return "simulate"


def load_result(raw: bytes | str | Path) -> tuple[str, dict]:
    """Parse and validate a result file's bytes (an upload), text or path; returns (kind, data)."""
    if isinstance(raw, Path):
        raw = raw.read_bytes()
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"not valid JSON: {exc}") from None
    return validate_result(data), data


# VIEWS (what one section of the page shows)

@dataclass
class ResultView:
    """Figures and tables for one result file; ``kind`` is "simulate" or "sweep"."""

    kind: str
    title: str
    figures: dict[str, go.Figure]
    tables: dict[str, pd.DataFrame]
    summary: str = ""


def result_view(data: dict) -> ResultView:
    """Everything to show for a validated ``simulate`` or ``sweep`` result."""
    kind = validate_result(data)
    cfg = data["config"]
    if kind == "sweep":
        base = cfg.get("base", {})
        return ResultView(kind, f"Sweep: schedule {base.get('schedule', '?')}, T = {base.get('T', '?')}",
                          figures={"accuracy heatmap": sweep_heatmap(data), "accuracy lines": sweep_lines(data)},
                          tables={"final accuracy": sweep_table(data)}, summary=data.get("summary", ""))
    runs = [r for r in (traces_from_result(data, "online"), traces_from_result(data, "fixed")) if r is not None]
    shifts = data.get("shift_points") or []
    return ResultView(
        kind, f"Simulation: schedule {cfg.get('schedule', '?')}, T = {cfg.get('T', '?')}, human {cfg.get('human', '?')}",
        figures={"violations": violation_figure(runs, shift_points=shifts),
                 "thresholds": threshold_figure(runs, shift_points=shifts),
                 "accuracy": accuracy_figure(data)},
        tables={"violations": violation_table(data), "accuracy": accuracy_table(data),
                "set sizes": set_size_table(data)},
        summary=data.get("summary", ""))


@dataclass
class StreamInfo:
    """One controller stream in the database."""

    key: str
    study_id: int | None
    condition: str | None
    updates: int
    updated_at: datetime


def list_streams(*, engine: Engine | None = None) -> list[StreamInfo]:
    """All controller streams with their number of updates, by key."""
    with read_session(engine) as session:
        streams = session.exec(select(ControllerStream).order_by(ControllerStream.key)).all()
        return [StreamInfo(s.key, s.study_id, s.condition, s.updates, s.updated_at) for s in streams]


@dataclass
class StreamView:
    """The live view of one stream: its traces, audited state, figures and tables."""

    key: str
    interactions: int
    state: ControllerState
    traces: RateTraces
    figures: dict[str, go.Figure]
    table: pd.DataFrame
    audit: object = None  # store.StreamAudit
    phases: pd.DataFrame | None = None


def stream_view(key: str, *, window: int = DEFAULT_WINDOW, engine: Engine | None = None) -> StreamView:
    """Read and audit a stream and build its figures; trailing window, as later data is still to come.

    The band uses the delay-aware bound with the stream's largest delay D so far, applied at every t
    (conservative for the early part of the run); the table also gives the textbook bound, so the
    price of overlapping participants is visible.
    """
    from engines.collab import store

    report = store.audit_report(key, engine=engine)
    state = report.state
    traces = traces_from_history(report.history, state, window=window, centred=False, delay=report.max_delay)
    final = traces.final()
    table = pd.DataFrame([{"constraint": n, "violations": int(getattr(state, f"n_err_{n}")),
                           "running rate": final[n]["rate"], "target": final[n]["target"], "bound": final[n]["bound"],
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
        figures = {"violations": violation_figure([traces], title=f"{key}: running violation rate vs target"),
                   "thresholds": threshold_figure([traces], title=f"{key}: thresholds")}
    return StreamView(key, len(traces.t), state, traces, figures, table, report, phases)


SIMULATION_KINDS = ("collab.simulate", "collab.sweep")  # the jobs whose result.json the figures above draw


def collab_jobs(*, limit: int = 20, kinds: Sequence[str] = SIMULATION_KINDS,
                engine: Engine | None = None) -> pd.DataFrame:
    """Recent collaboration jobs of ``kinds`` (simulations by default) with status and progress, newest first."""
    from engines.platform.jobqueue import list_jobs

    jobs = list_jobs(limit=limit, kinds=kinds, engine=engine)
    return pd.DataFrame([{"id": j.id, "kind": j.kind, "status": j.status, "progress": j.progress,
                          "message": j.message, "created": j.created_at, "result_path": j.result_path}
                         for j in jobs], columns=["id", "kind", "status", "progress", "message", "created",
                                                  "result_path"])


def job_result(job_id: int, *, engine: Engine | None = None) -> tuple[str, dict, bytes]:
    """The validated result of a finished collab job: (kind, data, raw bytes for a download)."""
    from engines.platform.jobqueue import get_job

    job = get_job(job_id, engine=engine)
    if not job.result_path or not Path(job.result_path).is_file():
        raise ResultFileError(f"job {job_id} has no result file (status {job.status})")
    raw = Path(job.result_path).read_bytes()
    kind, data = load_result(raw)
    return kind, data, raw


# THE AI MODEL: the counting CNN's report, shipped or trained by a collab.train_counter job

SHIPPED_COUNTER_REPORT = Path(__file__).resolve().parents[2] / "assets" / "collab" / "counter_report.json"
TRAIN_COUNTER = "collab.train_counter"


def counter_metrics_table(report: dict) -> pd.DataFrame:
    """One row per evaluation set of a training report: n, accuracy, ECE, mean confidence, NLL."""
    return pd.DataFrame([{"set": name, "n": m["n"], "accuracy": m["accuracy"], "ECE": m["ece"],
                          "mean confidence": m["mean_confidence"], "NLL": m["nll"]}
                         for name, m in report["metrics"].items()],
                        columns=["set", "n", "accuracy", "ECE", "mean confidence", "NLL"])


@dataclass
class CounterView:
    """What the page shows of one trained counter: metrics per set, training curve, plots, how to rerun it."""

    title: str
    table: pd.DataFrame
    history: pd.DataFrame
    plots: list[Path]
    summary: str
    report: dict


def _counter_view(report: dict, title: str, plots: list[Path]) -> CounterView:
    train = report.get("train_config", {})
    summary = "\n".join([
        f"{report['n_parameters']:,} parameters, temperature {report['temperature']}, "
        f"{train.get('train_size', '?')} training images, {train.get('epochs', '?')} epochs, "
        f"difficulty {report.get('train_difficulty', '?')}" + (" (quick: not a useful model)" if report.get("quick") else ""),
        f"reproduce: {report['command']}"])
    return CounterView(title, counter_metrics_table(report), pd.DataFrame(report.get("history", [])), plots, summary,
                       report)


def shipped_counter_view(path: Path = SHIPPED_COUNTER_REPORT) -> CounterView | None:
    """The shipped model's report (``assets/collab/counter_report.json``); None if it is not there."""
    if not Path(path).is_file():
        return None
    report = json.loads(Path(path).read_text())
    overall = report["metrics"]["overall"]
    return _counter_view(report, f"Shipped model (assets/collab/counter.pt): accuracy {overall['accuracy']:.3f}, "
                                 f"ECE {overall['ece']:.3f} on {overall['n']:,} held-out images", [])


def counter_job_view(job_id: int, *, engine: Engine | None = None) -> CounterView:
    """The report and plots a succeeded ``collab.train_counter`` job wrote into its folder.

    Raises:
        ResultFileError: no such job, not succeeded, or its report is missing.
    """
    from engines.collab.jobs import COUNTER_STEM, REPORT_FILE
    from engines.platform.jobqueue import JobError, get_job, job_dir

    try:
        job = get_job(job_id, engine=engine)
    except JobError as exc:
        raise ResultFileError(str(exc)) from None
    if job.kind != TRAIN_COUNTER or job.status != "succeeded":
        raise ResultFileError(f"job #{job_id} is not a succeeded {TRAIN_COUNTER} job ({job.kind}, {job.status})")
    folder = job_dir(job_id)
    path = folder / REPORT_FILE
    if not path.is_file():
        raise ResultFileError(f"training job #{job_id} has no {REPORT_FILE} in its folder")
    plots = [p for p in (folder / f"{COUNTER_STEM}_reliability.png", folder / f"{COUNTER_STEM}_accuracy.png")
             if p.is_file()]
    report = json.loads(path.read_text())
    overall = report["metrics"]["overall"]
    return _counter_view(report, f"Job #{job_id}: accuracy {overall['accuracy']:.3f}, ECE {overall['ece']:.3f} "
                                 f"on {overall['n']:,} held-out images", plots)


def counter_jobs(*, limit: int = 20, engine: Engine | None = None) -> pd.DataFrame:
    """Recent ``collab.train_counter`` jobs, newest first: status, progress, main parameters and accuracy/ECE."""
    from engines.platform.jobqueue import list_jobs

    rows = []
    for j in list_jobs(limit=limit, kind=TRAIN_COUNTER, engine=engine):
        params, overall = j.params or {}, (j.result or {}).get("overall", {})
        rows.append({"id": j.id, "status": j.status, "progress": j.progress, "message": j.message,
                     "training images": "quick" if params.get("quick") else params.get("train_size"),
                     "epochs": "quick" if params.get("quick") else params.get("epochs"),
                     "difficulty": "–".join(f"{v:g}" for v in params.get("train_difficulty", (0.0, 1.0))),
                     "accuracy": overall.get("accuracy"), "ECE": overall.get("ece"), "created": j.created_at})
    return pd.DataFrame(rows, columns=["id", "status", "progress", "message", "training images", "epochs",
                                       "difficulty", "accuracy", "ECE", "created"])


def train_counter_defaults() -> dict:
    """The default parameters of a ``collab.train_counter`` job (what the page's form starts from)."""
    from engines.collab.jobs import TrainCounterParams

    return TrainCounterParams().model_dump()


def ai_score_choices(*, limit: int = 50, engine: Engine | None = None) -> dict[str, str]:
    """AI score sources a simulation job can use, as {key: label}: synthetic, the shipped CNN, each trained CNN.

    Keys are "synthetic", "shipped" and "job:<id>" (succeeded training jobs, newest first);
    ``ai_score_params`` turns a key into job parameters.
    """
    from engines.platform.jobqueue import list_jobs

    choices = {"synthetic": "synthetic AI (parametric)", "shipped": "shipped CNN (assets/collab)"}
    for j in list_jobs(limit=limit, kind=TRAIN_COUNTER, engine=engine):
        if j.status == "succeeded":
            overall = (j.result or {}).get("overall", {})
            accuracy = f", accuracy {overall['accuracy']:.3f}" if "accuracy" in overall else ""
            quick = ", quick" if (j.params or {}).get("quick") else ""
            choices[f"job:{j.id}"] = f"CNN from job #{j.id}{accuracy}{quick}"
    return choices


def ai_score_params(key: str) -> dict:
    """Simulation job parameters for a key of ``ai_score_choices``: ``ai`` and, for a trained CNN, ``counter_job_id``."""
    if key == "synthetic":
        return {"ai": "synthetic"}
    if key == "shipped":
        return {"ai": "cnn"}
    if key.startswith("job:") and key[4:].isdigit():
        return {"ai": "cnn", "counter_job_id": int(key[4:])}
    raise ValueError(f"unknown AI score source {key!r} (synthetic, shipped or job:<id>)")
