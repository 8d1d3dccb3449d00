"""Figures of the HOI-Edit area, built from leaderboard rows, ratings and votes (no files, no Streamlit).

The leaderboard chart shows the paper's headline numbers (HOI-Edit, ICML 2026: L1 I, L2 I+Q&A,
L3 I+Q&A) per method; the arena figures follow GenAI-Arena's leaderboard (ratings with bootstrap
95% intervals, the win-fraction heatmap) and add the votes over time.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from engines.hoi.ratings import Ratings
from engines.hoi.votes import Vote

HEADLINE = (("L1 I", "L1 · I"), ("L2 I+Q&A", "L2 · I+Q&A"), ("L3 I+Q&A", "L3 · I+Q&A"))
PALETTE = ("#1f5fbf", "#c9a227", "#2e7d32")  # distinct in colour and lightness, for colour-blind readers


def leaderboard_frame(rows: Sequence[dict]) -> pd.DataFrame:
    """The paper-layout table as a frame indexed by method (missing values stay empty)."""
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(list(rows)).set_index("method")


def leaderboard_figure(rows: Sequence[dict]) -> go.Figure:
    """Grouped bars of the headline scores per method (L1 I, L2 and L3 I+Q&A)."""
    figure = go.Figure()
    methods = [row["method"] for row in rows]
    for (column, label), colour in zip(HEADLINE, PALETTE, strict=True):
        values = [row.get(column) for row in rows]
        figure.add_bar(x=methods, y=values, name=label, marker_color=colour,
                       text=[f"{v:.3f}" if v is not None else "n/a" for v in values], textposition="outside")
    figure.update_layout(barmode="group", yaxis={"title": "score", "range": [0, 1.1]}, height=380,
                         margin={"l": 40, "r": 10, "t": 30, "b": 40}, legend={"orientation": "h", "y": 1.12})
    return figure


def tag_figure(rows: Sequence[dict], metric: str = "I+Q&A") -> go.Figure:
    """One bar per (tag, method) of a per-tag metric."""
    frame = pd.DataFrame(list(rows))
    figure = go.Figure()
    if frame.empty:
        return figure
    for method, group in frame.groupby("method", sort=False):
        figure.add_bar(y=[t.split("-", 1)[1] if "-" in t else t for t in group["tag"]], x=group[metric],
                       name=str(method), orientation="h")
    figure.update_layout(barmode="group", xaxis={"title": metric, "range": [0, 1]}, height=120 + 28 * len(frame),
                         margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return figure


def ratings_frame(ratings: Ratings) -> pd.DataFrame:
    """Rank, rating, its 95% interval and the battles of each method, best first."""
    rows = []
    for rank, (method, value) in enumerate(ratings.ratings.items(), start=1):
        low, high = ratings.intervals.get(method, (float("nan"), float("nan")))
        rows.append({"rank": rank, "method": method, "rating": round(value), "95% low": round(low),
                     "95% high": round(high), "battles": ratings.counts.get(method, 0)})
    return pd.DataFrame(rows)


def ratings_figure(ratings: Ratings) -> go.Figure:
    """Each method's rating with its bootstrap 95% interval (upstream's leaderboard plot)."""
    methods = list(ratings.ratings)
    values = [ratings.ratings[m] for m in methods]
    low = [ratings.ratings[m] - ratings.intervals[m][0] for m in methods]
    high = [ratings.intervals[m][1] - ratings.ratings[m] for m in methods]
    figure = go.Figure(go.Scatter(x=methods, y=values, mode="markers", marker={"size": 11, "color": PALETTE[0]},
                                  error_y={"type": "data", "array": high, "arrayminus": low, "visible": True}))
    title = "Bradley–Terry" if ratings.method == "bt" else "Elo"
    figure.update_layout(yaxis={"title": f"{title} rating"}, height=360, margin={"l": 50, "r": 10, "t": 30, "b": 40})
    return figure


def win_rate_figure(matrix: pd.DataFrame) -> go.Figure:
    """The fraction of non-tied battles the row method won against the column method."""
    text = [[("" if v != v else f"{v:.2f}") for v in row] for row in matrix.to_numpy()]
    figure = go.Figure(go.Heatmap(z=matrix.to_numpy(), x=list(matrix.columns), y=list(matrix.index), zmin=0, zmax=1,
                                  colorscale="RdBu", text=text, texttemplate="%{text}",
                                  colorbar={"title": "win rate"}))
    figure.update_layout(xaxis={"title": "loser (column)"}, yaxis={"title": "winner (row)", "autorange": "reversed"},
                         height=120 + 45 * len(matrix), margin={"l": 10, "r": 10, "t": 30, "b": 40})
    return figure


def votes_over_time_figure(votes: Sequence[Vote]) -> go.Figure:
    """Counted votes accumulated over time, by outcome (a win, a tie, both bad)."""
    figure = go.Figure()
    stamped = sorted((v for v in votes if v.tstamp is not None), key=lambda v: v.tstamp)
    if not stamped:
        return figure
    outcome = {"model_a": "a win", "model_b": "a win", "tie": "tie", "tie (bothbad)": "both bad"}
    frame = pd.DataFrame({"time": pd.to_datetime([v.tstamp for v in stamped], unit="s"),
                          "outcome": [outcome[v.winner] for v in stamped]})
    for (name, group), colour in zip(frame.groupby("outcome", sort=False), PALETTE, strict=False):
        figure.add_scatter(x=group["time"], y=list(range(1, len(group) + 1)), mode="lines+markers", name=str(name),
                           line={"shape": "hv", "color": colour})
    figure.update_layout(yaxis={"title": "votes"}, height=320, margin={"l": 50, "r": 10, "t": 30, "b": 40})
    return figure
