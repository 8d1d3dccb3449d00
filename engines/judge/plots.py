"""Figures and tables of a judge audit, built from its JSON (``AuditResult.to_dict()``, a job's ``audit.json``).

Schwinn et al. 2026 ("A Coin Flip for Safety", ICML 2026, arXiv:2603.06594) show
judge accuracy as judge x attack heatmaps, one per victim model, and ASR inflation as the judge's
ASR beside its precision-corrected value and the human ASR per model x attack cell. This module
draws those, a metric with its bootstrap interval per judge and breakdown, and the annotators'
agreement, plus the tables the Research -> Judge audit page shows and exports. Nothing here
queries the database, reads a file or imports Streamlit: the page lays these out.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

METRICS = {
    "accuracy": "Accuracy",
    "precision": "Precision (PPV)",
    "recall": "Recall",
    "f1": "F1",
    "balanced_accuracy": "Balanced accuracy",
    "cohen_kappa": "Cohen's kappa",
    "auroc": "AUROC",
}
BREAKDOWNS = {
    "pooled": "all items",
    "by_model": "victim model",
    "by_attack": "attack",
    "by_category": "semantic category",
    "by_cell": "model × attack cell",
}
COUNTS = ("n", "tp", "fp", "tn", "fn")
ASR_BARS = {  # the ASR figures drawn side by side, in this order
    "asr_judge": "ASR by the judge",
    "asr_corrected": "Precision-corrected ASR (ASR × PPV)",
    "asr_human": "ASR by humans",
}
ASR_COLUMNS = ("asr_judge", "ppv", "asr_corrected", "inflation", "asr_human", "false_omission_rate",
               "asr_for_corrected")
AGREEMENT = {
    "binary_agreement": "Raw agreement (harmful or not)",
    "kappa_binary": "Cohen's kappa (harmful or not)",
    "kappa_quadratic": "Cohen's kappa (1–5, quadratic)",
    "alpha_nominal": "Krippendorff's alpha (nominal)",
    "alpha_ordinal": "Krippendorff's alpha (ordinal, 1–5)",
}
COLORS = {"asr_judge": "#d62728", "asr_corrected": "#ff7f0e", "asr_human": "#1f77b4"}
HEATMAP_SCALE = "RdYlGn"  # red = the judge is often wrong, green = it agrees with people


def split_cell(cell: str) -> tuple[str, str]:
    """(model, attack) of a ``model|attack`` cell key."""
    model, _, attack = cell.partition("|")
    return model, attack


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _interval_text(ci: list | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f" (95% interval {ci[0]:.3f}–{ci[1]:.3f})"


def _value_range(metric: str) -> tuple[float, float]:
    return (-1.0, 1.0) if metric == "cohen_kappa" else (0.0, 1.0)


def models_and_attacks(audit: dict) -> tuple[list[str], list[str]]:
    """The victim models and attacks of the audit's cells (over every judge), sorted."""
    cells = {cell for report in audit["judges"].values() for cell in report["by_cell"]}
    parts = [split_cell(cell) for cell in cells]
    return sorted({m for m, _ in parts}), sorted({a for _, a in parts})


# TABLES

def _metric_columns(metric_set: dict) -> dict:
    """Counts, each metric, and its interval as ``<metric>_lo`` / ``<metric>_hi`` when the audit has one."""
    row = {name: metric_set[name] for name in COUNTS}
    ci = metric_set.get("ci")
    for name in METRICS:
        row[name] = metric_set[name]
        if ci is not None:
            row[f"{name}_lo"], row[f"{name}_hi"] = ci[name]
    return row


def pooled_table(audit: dict) -> pd.DataFrame:
    """One row per judge: pooled counts and metrics (with intervals after a bootstrap), and what was left out."""
    rows = []
    for judge, report in audit["judges"].items():
        rows.append({"judge": judge, **_metric_columns(report["pooled"]),
                     "unparsed_on_labelled": report["n_unparsed_labelled"],
                     "unjudged_labelled": report["n_unjudged_labelled"]})
    return pd.DataFrame(rows)


def breakdown_table(audit: dict, breakdown: str) -> pd.DataFrame:
    """One row per judge and group of a breakdown (``by_model``, ``by_attack``, ``by_category``, ``by_cell``).

    ``by_cell`` rows carry the cell's ``model`` and ``attack`` as columns of their own.
    """
    if breakdown not in BREAKDOWNS or breakdown == "pooled":
        raise ValueError(f"breakdown must be one of {', '.join(list(BREAKDOWNS)[1:])}, got {breakdown!r}")
    rows = []
    for judge, report in audit["judges"].items():
        for group, metric_set in report[breakdown].items():
            where = dict(zip(("model", "attack"), split_cell(group), strict=True)) if breakdown == "by_cell" \
                else {BREAKDOWNS[breakdown]: group}
            rows.append({"judge": judge, **where, **_metric_columns(metric_set)})
    return pd.DataFrame(rows)


def asr_table(audit: dict) -> pd.DataFrame:
    """One row per judge and model x attack cell: ASR by the judge, PPV, corrected ASR, inflation, human ASR."""
    rows = []
    for judge, report in audit["judges"].items():
        for figures in report["asr"].values():
            row = {"judge": judge, "model": figures["model"], "attack": figures["attack"],
                   "behaviours": figures["n_behaviours"], "behaviours_with_human_label": figures["n_behaviours_human"]}
            ci = figures.get("ci")
            for name in ASR_COLUMNS:
                row[name] = figures[name]
                if ci is not None:
                    row[f"{name}_lo"], row[f"{name}_hi"] = ci[name]
            rows.append(row)
    return pd.DataFrame(rows)


def agreement_table(audit: dict) -> pd.DataFrame:
    """Inter-annotator agreement: one row per statistic, with the reason when it is undefined."""
    agreement = audit["agreement"]
    return pd.DataFrame([{"statistic": title, "value": agreement[name], "why undefined": agreement["undefined"].get(name, "")}
                         for name, title in AGREEMENT.items()])


def concordance_table(audit: dict) -> pd.DataFrame:
    """Items by the share of judges that call them harmful (``k/n``), most agreeing first."""
    by_fraction = audit["concordance"]["by_fraction"]
    return pd.DataFrame([{"judges saying harmful": share, "items": count} for share, count in by_fraction.items()])


def reliable_bench_table(audit: dict) -> pd.DataFrame:
    """ReliableBench-like subset: each judge's accuracy on all eligible behaviours and on the chosen ones."""
    subset = (audit.get("subsets") or {}).get("reliable_bench")
    if not subset:
        return pd.DataFrame(columns=["judge", "accuracy_all", "accuracy_chosen"])
    return pd.DataFrame([{"judge": judge, "accuracy_all": value, "accuracy_chosen": subset["judge_accuracy_chosen"].get(judge)}
                         for judge, value in subset["judge_accuracy_all"].items()])


def stress_test_table(audit: dict) -> pd.DataFrame:
    """JudgeStressTest-like subset: each judge's accuracy on it, and held out against the others (Acc@0, Acc@1)."""
    subset = (audit.get("subsets") or {}).get("stress_test")
    if not subset:
        return pd.DataFrame(columns=["judge", "accuracy_on_subset"])
    rows = []
    for judge, accuracy in subset["judge_accuracy"].items():
        held = subset["leave_one_judge_out"].get(judge) or {}
        rows.append({"judge": judge, "accuracy_on_subset": accuracy, "held_out_accuracy": held.get("accuracy"),
                     "acc_at_0": held.get("acc_at_0"), "n_at_0": held.get("n_at_0"),
                     "acc_at_1": held.get("acc_at_1"), "n_at_1": held.get("n_at_1")})
    return pd.DataFrame(rows)


# FIGURES

def metric_heatmaps(audit: dict, metric: str = "accuracy") -> dict[str, go.Figure]:
    """Judge x attack heatmap of ``metric`` for each victim model (the paper's figure), keyed by model.

    A cell a judge has no verdict in, or where the metric is undefined, stays blank and says why on hover.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    models, attacks = models_and_attacks(audit)
    judges = list(audit["judges"])
    low, high = _value_range(metric)
    figures = {}
    for model in models:
        z, text, hover = [], [], []
        for judge in judges:
            cells = audit["judges"][judge]["by_cell"]
            z_row, text_row, hover_row = [], [], []
            for attack in attacks:
                metric_set = cells.get(f"{model}|{attack}")
                value = None if metric_set is None else metric_set[metric]
                z_row.append(value)
                text_row.append("" if value is None else f"{value:.2f}")
                if metric_set is None:
                    why = "no items of this judge in this cell"
                elif value is None:
                    why = f"undefined: {metric_set['undefined'].get(metric, 'no value')} (n = {metric_set['n']})"
                else:
                    why = (f"{METRICS[metric]} {value:.3f}{_interval_text((metric_set.get('ci') or {}).get(metric))}"
                           f"<br>n = {metric_set['n']} items (TP {metric_set['tp']}, FP {metric_set['fp']}, "
                           f"TN {metric_set['tn']}, FN {metric_set['fn']})")
                hover_row.append(f"judge {judge}<br>attack {attack}<br>victim model {model}<br>{why}")
            z.append(z_row)
            text.append(text_row)
            hover.append(hover_row)
        fig = go.Figure(go.Heatmap(
            z=z, x=attacks, y=judges, zmin=low, zmax=high, colorscale=HEATMAP_SCALE, text=text,
            texttemplate="%{text}", hovertext=hover, hovertemplate="%{hovertext}<extra></extra>",
            colorbar={"title": {"text": METRICS[metric]}}))
        fig.update_layout(title=f"{METRICS[metric]} of each judge by attack — victim model {model}",
                          xaxis_title="Attack", yaxis_title="Judge", yaxis={"autorange": "reversed"},
                          height=max(260, 80 + 45 * len(judges)))
        figures[model] = fig
    return figures


def asr_inflation_figure(audit: dict, judge: str) -> go.Figure:
    """The judge's ASR, its precision-corrected ASR and the human ASR per model x attack cell, with intervals.

    The gap between the first two bars is the inflation (ASR_judge x (1 - PPV)); the third is what people saw.
    """
    report = audit["judges"][judge]
    cells = sorted(report["asr"])
    labels = [" / ".join(split_cell(cell)) for cell in cells]
    fig = go.Figure()
    for name, title in ASR_BARS.items():
        figures = [report["asr"][cell] for cell in cells]
        values = [f[name] for f in figures]
        error = None
        if all(f.get("ci") for f in figures):
            lo = [None if v is None or f["ci"][name][0] is None else v - f["ci"][name][0]
                  for v, f in zip(values, figures, strict=True)]
            hi = [None if v is None or f["ci"][name][1] is None else f["ci"][name][1] - v
                  for v, f in zip(values, figures, strict=True)]
            error = {"type": "data", "array": hi, "arrayminus": lo, "visible": True}
        hover = [f"{label}<br>{title}: {_fmt(v)}{_interval_text((f.get('ci') or {}).get(name))}"
                 f"<br>inflation {_fmt(f['inflation'])} · PPV {_fmt(f['ppv'])}"
                 f"<br>{f['n_behaviours']} behaviours judged, {f['n_behaviours_human']} with a human label"
                 + (f"<br>undefined: {f['undefined'][name]}" if name in f["undefined"] else "")
                 for label, v, f in zip(labels, values, figures, strict=True)]
        fig.add_trace(go.Bar(name=title, x=labels, y=values, error_y=error, marker_color=COLORS[name],
                             hovertext=hover, hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(title=f"ASR inflation of {judge}: judge ASR, precision-corrected ASR and human ASR per cell",
                      xaxis_title="Victim model / attack", yaxis_title="Attack success rate (share of behaviours)",
                      yaxis_range=[0, 1.05], barmode="group", legend_title_text="")
    return fig


def metric_interval_figure(audit: dict, metric: str = "accuracy", breakdown: str = "pooled") -> go.Figure:
    """``metric`` per judge (pooled) or per judge and group of a breakdown, with bootstrap intervals when present."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if breakdown not in BREAKDOWNS:
        raise ValueError(f"breakdown must be one of {', '.join(BREAKDOWNS)}, got {breakdown!r}")
    fig = go.Figure()
    judges = list(audit["judges"])
    if breakdown == "pooled":
        series = [("judges", judges, [audit["judges"][j]["pooled"] for j in judges])]
        x_title = "Judge"
    else:
        series = []
        for judge in judges:
            groups = sorted(audit["judges"][judge][breakdown])
            x = [" / ".join(split_cell(g)) if breakdown == "by_cell" else g for g in groups]
            series.append((judge, x, [audit["judges"][judge][breakdown][g] for g in groups]))
        x_title = BREAKDOWNS[breakdown].capitalize()
    for name, x, sets in series:
        values = [s[metric] for s in sets]
        error = None
        if all(s.get("ci") for s in sets):
            error = {"type": "data", "visible": True,
                     "array": [None if v is None or s["ci"][metric][1] is None else s["ci"][metric][1] - v
                               for v, s in zip(values, sets, strict=True)],
                     "arrayminus": [None if v is None or s["ci"][metric][0] is None else v - s["ci"][metric][0]
                                    for v, s in zip(values, sets, strict=True)]}
        hover = [(label if breakdown == "pooled" else f"{name} · {label}")
                 + f"<br>{METRICS[metric]} {_fmt(v)}{_interval_text((s.get('ci') or {}).get(metric))}<br>n = {s['n']} items"
                 + (f"<br>undefined: {s['undefined'][metric]}" if metric in s["undefined"] else "")
                 for label, v, s in zip(x, values, sets, strict=True)]
        fig.add_trace(go.Scatter(name=name, x=x, y=values, mode="markers", error_y=error, marker={"size": 10},
                                 hovertext=hover, hovertemplate="%{hovertext}<extra></extra>"))
    if metric in ("balanced_accuracy", "auroc"):
        fig.add_hline(y=0.5, line_dash="dot", line_color="grey", annotation_text="coin flip (0.5)")
    where = "pooled over all items" if breakdown == "pooled" else f"by {BREAKDOWNS[breakdown]}"
    has_ci = any(s.get("ci") for _, _, sets in series for s in sets)
    fig.update_layout(title=f"{METRICS[metric]} of each judge, {where}" + (" (95% bootstrap intervals)" if has_ci else ""),
                      xaxis_title=x_title, yaxis_title=METRICS[metric], yaxis_range=list(_value_range(metric)),
                      scattermode="group", showlegend=breakdown != "pooled", legend_title_text="Judge")
    return fig


def agreement_figure(audit: dict) -> go.Figure:
    """Annotator agreement: raw agreement, Cohen's kappas on the first two labels and Krippendorff's alphas."""
    agreement = audit["agreement"]
    names = list(AGREEMENT)
    values = [agreement[name] for name in names]
    hover = [f"{AGREEMENT[n]}: {_fmt(v)}" + (f"<br>undefined: {agreement['undefined'][n]}" if n in agreement["undefined"]
                                             else "") for n, v in zip(names, values, strict=True)]
    fig = go.Figure(go.Bar(x=[AGREEMENT[n] for n in names], y=values, text=[_fmt(v) for v in values],
                           hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", marker_color="#1f77b4"))
    fig.update_layout(title=f"Annotator agreement: {agreement['n_items']} items with two or more labels, "
                            f"{agreement['n_labels']} labels on {agreement['n_labelled_items']} items",
                      xaxis_title="Statistic", yaxis_title="Agreement (1 = perfect, 0 = chance)", yaxis_range=[-0.1, 1.05])
    return fig
