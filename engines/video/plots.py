"""Figures of the video area, built from trajectories and metric summaries (no files, no Streamlit).

The timeline replays an agent's search over the whole video (docs/video.md, "The
page"): a lane for the ground-truth evidence (green), then one lane per step: the hits of a search
(grey, more opaque the better they scored) or the spans of an inspection (blue; outlined red when
the inspector asked to search more; gold for the inspection that authorised the answer). Every
span is a horizontal bar carrying ``[start, end]`` as customdata, so a click can seek the player.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from engines.platform import job_table
from engines.video.spans import Span, format_time
from engines.video.trajectory import Trajectory

GROUND_TRUTH, HIT, INSPECTED, AUTHORISING, SEARCH_MORE = "#2e7d32", "#6b6b6b", "#1f5fbf", "#c9a227", "#c62828"


def _lane(step) -> str:
    if step.action == "retrieve":
        query = step.args.get("query", "")
        return f"{step.i} search: {query[:28] + '…' if len(query) > 29 else query}"
    if step.action == "inspect":
        return f"{step.i} inspect" + (" (forced)" if step.forced else "")
    return f"{step.i} finish"


def _bars(spans: list[Span], lane: str, colour: str, name: str, hover: list[str], *, opacity=None,
          outline: str | None = None) -> go.Bar:
    return go.Bar(
        y=[lane] * len(spans), x=[max(s.length, 1.0) for s in spans], base=[s.start for s in spans], orientation="h",
        marker={"color": colour, "opacity": opacity if opacity is not None else 0.85,
                "line": {"color": outline or colour, "width": 2 if outline else 0}},
        customdata=[[s.start, s.end] for s in spans], hovertext=hover, hoverinfo="text", name=name,
        showlegend=False)


def timeline(trajectory: Trajectory, *, height_per_lane: int = 34) -> go.Figure:
    """The agent's search on a time axis over the whole video, one lane per step."""
    t = trajectory
    figure = go.Figure()
    lanes = ["evidence (ground truth)"] if t.gt_spans else []
    if t.gt_spans:
        figure.add_trace(_bars(list(t.gt_spans), lanes[0], GROUND_TRUTH, "ground truth",
                               [f"evidence {s.label()}" for s in t.gt_spans]))
    authorising = t.final.authorised_by_step
    for step in t.steps:
        lane = _lane(step)
        lanes.append(lane)
        if step.action == "retrieve" and step.hits:
            top = max(h.score for h in step.hits) or 1.0
            for hit in step.hits:  # one bar each: opacity is per trace in a horizontal bar's marker
                figure.add_trace(_bars([hit.span], lane, HIT, "hit", [f"{hit.span.label()} score {hit.score:.3f}<br>"
                                                                      f"{hit.text[:160]}"],
                                       opacity=0.25 + 0.7 * max(hit.score, 0.0) / top))
        elif step.action == "inspect":
            verdict = step.verdict
            colour = AUTHORISING if step.i == authorising else INSPECTED
            outline = SEARCH_MORE if verdict is not None and verdict.status == "SEARCH_MORE" else None
            said = "" if verdict is None else (f"{verdict.status} {verdict.answer or ''} "
                                               f"(confidence {verdict.confidence:.2f})")
            figure.add_trace(_bars(list(step.spans), lane, colour, "inspected",
                                   [f"{s.label()}: {said}" for s in step.spans], outline=outline))
    figure.update_layout(
        barmode="overlay", height=80 + height_per_lane * max(len(lanes), 1), margin={"l": 10, "r": 10, "t": 30, "b": 40},
        title="The agent's search over the video (click a span to play it)", clickmode="event+select",
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(lanes)), "title": None},
        xaxis={"range": [0, t.duration_s], "title": "time in the video",
               "tickvals": _ticks(t.duration_s), "ticktext": [format_time(v) for v in _ticks(t.duration_s)]})
    return figure


def _ticks(duration: float) -> list[float]:
    step = next((s for s in (15, 30, 60, 120, 300, 600, 900, 1800, 3600) if duration / s <= 8), 7200)
    return [k * step for k in range(int(duration // step) + 1)]


def by_budget_figure(by_budget: dict[str, dict]) -> go.Figure:
    """Accuracy, grounded accuracy and misaligned-correct rate per budget (the budget-scaling view)."""
    labels = list(by_budget)
    figure = go.Figure()
    for key, name in (("accuracy", "accuracy"), ("grounded_accuracy", "grounded accuracy"),
                      ("misaligned_correct_rate", "misaligned-correct")):
        figure.add_trace(go.Bar(x=labels, y=[by_budget[label].get(key) for label in labels], name=name))
    figure.update_layout(barmode="group", yaxis={"range": [0, 1], "tickformat": ".0%"}, height=360,
                         title="By budget", margin={"l": 10, "r": 10, "t": 40, "b": 40})
    return figure


def correct_by_grounded(rows: list[dict]) -> go.Figure:
    """The 2 x 2 of correct against grounded (TG and SG) over questions with an answer key."""
    cells = {(c, g): 0 for c in (True, False) for g in (True, False)}
    for row in rows:
        if row.get("correct") is None:
            continue
        grounded = bool(row.get("SG")) and (row.get("TG") is not False)
        cells[(bool(row["correct"]), grounded)] += 1
    z = [[cells[(True, True)], cells[(True, False)]], [cells[(False, True)], cells[(False, False)]]]
    figure = go.Figure(go.Heatmap(z=z, x=["grounded", "not grounded"], y=["correct", "wrong"], colorscale="Blues",
                                  text=z, texttemplate="%{text}", showscale=False))
    figure.update_layout(title="Correct × grounded", height=300, margin={"l": 10, "r": 10, "t": 40, "b": 10},
                         yaxis={"autorange": "reversed"})
    return figure


def search_more_figure(counts: dict[str, int]) -> go.Figure:
    """How often the inspector asked to search more, by type."""
    figure = go.Figure(go.Bar(x=list(counts), y=list(counts.values()), marker={"color": SEARCH_MORE}))
    figure.update_layout(title="Why the inspector asked to search more", height=320,
                         margin={"l": 10, "r": 10, "t": 40, "b": 40})
    return figure


def jobs_frame(jobs: list) -> pd.DataFrame:
    """The area's jobs as the Jobs table shows them: what each does, status, progress, message."""
    def what(job) -> str:
        params = job.params or {}
        if job.kind.endswith(".ask"):
            return f"ask ({params.get('agent', 'gated')}): {str(params.get('question', ''))[:50]}"
        return f"sweep at budgets {', '.join(map(str, params.get('budgets', [2, 4, 8])))}"

    return job_table.jobs_frame(jobs, what)
