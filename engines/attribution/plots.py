"""Figures of the attribution area, built from result objects (``FrameExplanation``, experiment JSON).

Heatmaps over the frame as in the paper's Figure 2 (ISS overlaid on the camera image, the
task-relevant region outlined), ISS per grid cell with its 95% interval, and the experiment's
scatter of in-distribution NMR against out-of-distribution success per policy (the paper's
Figure 4, r = -0.77 across VLA policies). Nothing here reads files or imports Streamlit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engines.platform import job_table

COLOURS = "Viridis"  # perceptually uniform and readable with colour-blindness
METHOD_TITLES = {
    "iss": "ISS (upstream's map)",
    "iss_contrast": "ISS contrast (dISS)",
    "occlusion": "Occlusion",
    "feature_ablation": "Feature ablation",
    "shapley": "Shapley value sampling",
    "rise": "RISE",
    "saliency": "Saliency",
    "integrated_gradients": "Integrated gradients",
    "grad_cam": "Grad-CAM",
}


def _rgb(image: np.ndarray) -> np.ndarray:
    """(3, H, W) floats in [0, 1] -> (H, W, 3) uint8."""
    return (np.clip(np.asarray(image).transpose(1, 2, 0), 0.0, 1.0) * 255).round().astype(np.uint8)


def _square(figure: go.Figure, size: int, title: str) -> go.Figure:
    figure.update_layout(title=title, width=size, height=size + 40, margin={"l": 10, "r": 10, "t": 40, "b": 10})
    figure.update_xaxes(visible=False)
    figure.update_yaxes(visible=False, autorange="reversed", scaleanchor="x")
    return figure


def frame_figure(image: np.ndarray, relevance: np.ndarray | None = None, *, title: str = "Frame",
                 size: int = 320) -> go.Figure:
    """The frame as the policy sees it, the task-relevant pixels outlined when known."""
    figure = go.Figure(go.Image(z=_rgb(image), hoverinfo="skip"))
    if relevance is not None:
        figure.add_trace(_outline(relevance))
    return _square(figure, size, title)


def _outline(relevance: np.ndarray) -> go.Contour:
    return go.Contour(z=np.asarray(relevance, dtype=float), contours={"start": 0.5, "end": 0.5, "coloring": "none"},
                      line={"color": "white", "width": 2, "dash": "dot"}, showscale=False, hoverinfo="skip",
                      name="task-relevant")


def normalise(pixel_map: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1], as upstream normalises maps before NMR@k: methods in other units share one scale.
    A constant map becomes all zeros."""
    values = np.asarray(pixel_map, dtype=float)
    span = values.max() - values.min()
    return (values - values.min()) / span if span > 0 else np.zeros_like(values)


def heatmap_figure(image: np.ndarray, pixel_map: np.ndarray, *, title: str, relevance: np.ndarray | None = None,
                   opacity: float = 0.6, size: int = 320, shared_scale: bool = True) -> go.Figure:
    """``pixel_map`` (H, W) over the frame: min-max normalised on the shared 0-1 scale, or (``shared_scale``
    False, for signed maps such as the contrast map) on the map's own range."""
    values = normalise(pixel_map) if shared_scale else np.asarray(pixel_map, dtype=float)
    scale = {"zmin": 0.0, "zmax": 1.0} if shared_scale else {}
    figure = go.Figure(go.Image(z=_rgb(image), hoverinfo="skip"))
    figure.add_trace(go.Heatmap(z=values, colorscale=COLOURS, opacity=opacity, colorbar={"thickness": 10}, **scale,
                                hovertemplate="x %{x}, y %{y}: %{z:.3g}<extra></extra>"))
    if relevance is not None:
        figure.add_trace(_outline(relevance))
    return _square(figure, size, title)


def grid_figure(grid_map: np.ndarray, ci_low: np.ndarray, ci_high: np.ndarray, *, size: int = 320) -> go.Figure:
    """ISS per grid cell, each with its 95% interval in the hover text and the cell."""
    values = np.asarray(grid_map, dtype=float)
    text = [[f"{values[r, c]:.3f} [{ci_low[r, c]:.3f}, {ci_high[r, c]:.3f}]" for c in range(values.shape[1])]
            for r in range(values.shape[0])]
    figure = go.Figure(go.Heatmap(z=values, colorscale=COLOURS, text=text, texttemplate="%{z:.2f}",
                                  textfont={"size": 9}, colorbar={"thickness": 10},
                                  hovertemplate="cell row %{y}, column %{x}: %{text}<extra></extra>"))
    return _square(figure, size, "ISS per cell (hover: 95% interval)")


def action_figure(action: np.ndarray, *, size: int = 320) -> go.Figure:
    """The predicted action chunk as a path of moves from the agent (units of one step)."""
    path = np.vstack([[0.0, 0.0], np.cumsum(np.asarray(action, dtype=float), axis=0)])
    figure = go.Figure(go.Scatter(x=path[:, 0], y=path[:, 1], mode="lines+markers",
                                  text=[f"after {i} moves" for i in range(len(path))],
                                  hovertemplate="%{text}: (%{x:.2f}, %{y:.2f})<extra></extra>"))
    figure.update_layout(title="Predicted action chunk (steps)", width=size, height=size,
                         margin={"l": 10, "r": 10, "t": 40, "b": 10})
    figure.update_yaxes(autorange="reversed", scaleanchor="x")
    return figure


def faithfulness_figure(curves: dict) -> go.Figure:
    """Deletion curves per method: D after replacing the k most (solid) and least (dotted) relevant
    cells. A faithful map rises fast on the solid line and slowly on the dotted one."""
    figure = go.Figure()
    for method, curve in curves.items():
        shares = np.linspace(0.0, 1.0, len(curve.morf)).tolist()
        name = METHOD_TITLES.get(method, method)
        figure.add_trace(go.Scatter(x=shares, y=curve.morf.tolist(), mode="lines", name=f"{name}, most relevant first",
                                    legendgroup=method))
        figure.add_trace(go.Scatter(x=shares, y=curve.lerf.tolist(), mode="lines", line={"dash": "dot"},
                                    name=f"{name}, least relevant first", legendgroup=method))
    figure.update_layout(title="Deletion: action change as cells are replaced", xaxis_title="share of cells replaced",
                         yaxis_title="action change D", xaxis_tickformat=".0%", height=380,
                         margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return figure


def faithfulness_frame(curves: dict) -> pd.DataFrame:
    """Areas per method: deletion (MoRF, higher is better), the MoRF - LeRF gap, insertion (lower is better)."""
    return pd.DataFrame([{"method": METHOD_TITLES.get(m, m), "deletion area (MoRF)": c.morf_auc,
                          "MoRF - LeRF gap": c.gap, "insertion area": c.insertion_auc} for m, c in curves.items()])


def episode_figure(nmr_mass: list[float], nmr_at_k: list[float], keyframes: list[int], chance: list[float]) -> go.Figure:
    """NMR per frame of an episode (contrast-map mass and NMR@10), keyframes marked, chance dotted."""
    steps = list(range(len(nmr_mass)))
    figure = go.Figure([
        go.Scatter(x=steps, y=nmr_mass, mode="lines", name="NMR, contrast map (mass)"),
        go.Scatter(x=steps, y=nmr_at_k, mode="lines", name="NMR@10, ISS map"),
        go.Scatter(x=keyframes, y=[nmr_mass[t] for t in keyframes], mode="markers", name="computed (others interpolated)",
                   marker={"size": 9, "symbol": "diamond"}),
        go.Scatter(x=steps, y=chance, mode="lines", line={"dash": "dot"}, name="chance"),
    ])
    figure.update_layout(title="NMR over the episode", xaxis_title="step", yaxis_title="NMR", yaxis_range=[0, 1.05],
                         height=360, margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return figure


def experiment_frame(result: dict) -> pd.DataFrame:
    """One row per (policy, method): rho, seed, NMR, success and error in and out of distribution."""
    rows = []
    for policy in result.get("policies", []):
        for method, value in policy["nmr"].items():
            rows.append({"method": METHOD_TITLES.get(method, method), "rho": policy["rho"], "seed": policy["seed"],
                         "NMR": value, "success (cue as trained)": policy["id_success"],
                         "success (cue randomised)": policy["ood_success"], "error (cue randomised)": policy["ood_mse"]})
    return pd.DataFrame(rows)


def correlation_frame(result: dict) -> pd.DataFrame:
    """Spearman's rho of each method's NMR with OOD success and error, p-values and intervals."""
    rows = []
    for method, outcomes in result.get("correlations", {}).items():
        for outcome, label in (("ood_success", "OOD success (expected < 0)"), ("ood_mse", "OOD error (expected > 0)")):
            c = outcomes[outcome]
            rows.append({"method": METHOD_TITLES.get(method, method), "against": label, "Spearman rho": c["rho"],
                         "p (permutation)": c["p_permutation"], "95% CI low": c["ci_low"],
                         "95% CI high": c["ci_high"], "policies": c["n"]})
    return pd.DataFrame(rows)


OUTCOMES = {"ood_success": "success, cue randomised", "ood_mse": "action error, cue randomised"}


def experiment_scatter(result: dict, method: str, outcome: str = "ood_success") -> go.Figure:
    """NMR against an out-of-distribution outcome (success or action error), one point per policy, coloured by rho."""
    policies = [p for p in result.get("policies", []) if p["nmr"].get(method) is not None]
    share = outcome == "ood_success"
    figure = go.Figure(go.Scatter(
        x=[p["nmr"][method] for p in policies], y=[p[outcome] for p in policies], mode="markers",
        marker={"size": 11, "color": [p["rho"] for p in policies], "colorscale": COLOURS, "showscale": True,
                "colorbar": {"title": "rho"}},
        text=[f"rho={p['rho']:g}, seed {p['seed']}" for p in policies],
        hovertemplate="%{text}<br>NMR %{x:.3f}, " + OUTCOMES[outcome] + (" %{y:.0%}" if share else " %{y:.4f}")
                      + "<extra></extra>"))
    corr = result.get("correlations", {}).get(method, {}).get(outcome, {})
    note = "" if corr.get("rho") is None else f" (Spearman rho {corr['rho']:.2f}, p {corr['p_permutation']:.3f})"
    figure.update_layout(title=f"{METHOD_TITLES.get(method, method)}: NMR vs {OUTCOMES[outcome]}{note}",
                         xaxis_title="NMR on in-distribution frames", yaxis_title=OUTCOMES[outcome],
                         yaxis_tickformat=".0%" if share else None, height=420,
                         margin={"l": 10, "r": 10, "t": 50, "b": 10})
    return figure


def jobs_frame(jobs: list) -> pd.DataFrame:
    """The area's jobs as the Jobs table shows them: what each does, status, progress, message."""
    def what(job) -> str:
        params = job.params or {}
        if job.kind.endswith(".train"):
            return f"train rho={params.get('rho', 0.95):g} seed {params.get('seed', 0)}"
        return f"experiment ({params.get('policies', 'shipped')} policies)"

    return job_table.jobs_frame(jobs, what)
