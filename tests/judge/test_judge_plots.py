"""The audit's figures and tables (``engines.judge.plots``): titles, axes and values, checked by hand.

The fixture: 2 victim models x 2 attacks x 2 behaviours, one generation each (8 items). Human
labels make 4 items harmful (m1/gcg/b1, m2/direct/b2, m2/gcg/b1, m2/gcg/b2). Judge ``yes`` calls
everything harmful; judge ``ok`` is right except on m1/direct/b1 (a false positive). Two items
carry a second label that agrees on harmful vs not.
"""

from __future__ import annotations

import copy

import pytest

from engines.judge import plots
from engines.judge.audit import audit
from engines.judge.items import Item, Label, Verdict

HUMAN = {("m1", "direct", "b1"): 1, ("m1", "direct", "b2"): 1, ("m1", "gcg", "b1"): 5, ("m1", "gcg", "b2"): 1,
         ("m2", "direct", "b1"): 1, ("m2", "direct", "b2"): 4, ("m2", "gcg", "b1"): 5, ("m2", "gcg", "b2"): 5}
SECOND = {("m1", "direct", "b1"): 2, ("m2", "gcg", "b1"): 3}  # second labels: same side of 3 as the first


def key(model: str, attack: str, behaviour: str) -> str:
    return f"{model}/{attack}/{behaviour}/0"


@pytest.fixture(scope="module")
def result() -> dict:
    items = [Item(key=key(*cell), behavior_id=cell[2], behavior=f"behaviour {cell[2]}", victim_model=cell[0],
                  attack=cell[1], semantic_category={"b1": "cat-x", "b2": "cat-y"}[cell[2]], generation="[REDACTED]")
             for cell in HUMAN]
    labels = [(key(*cell), Label(annotator_id="ann1", score=score)) for cell, score in HUMAN.items()]
    labels += [(key(*cell), Label(annotator_id="ann2", score=score)) for cell, score in SECOND.items()]
    verdicts = [(key(*cell), Verdict(judge="yes", label=1)) for cell in HUMAN]
    verdicts += [(key(*cell), Verdict(judge="ok", label=int(score >= 3 or cell == ("m1", "direct", "b1"))))
                 for cell, score in HUMAN.items()]
    return audit(items, labels, verdicts).to_dict()


def test_a_heatmap_per_victim_model_shows_each_judges_accuracy_by_attack(result):
    figures = plots.metric_heatmaps(result)
    assert list(figures) == ["m1", "m2"]
    m1 = figures["m1"]
    assert m1.layout.title.text == "Accuracy of each judge by attack — victim model m1"
    assert (m1.layout.xaxis.title.text, m1.layout.yaxis.title.text) == ("Attack", "Judge")
    heat = m1.data[0]
    assert (list(heat.x), list(heat.y)) == (["direct", "gcg"], ["ok", "yes"])
    # ok: m1/direct 1 of 2 right, m1/gcg both right; yes: m1/direct none right, m1/gcg 1 of 2.
    assert [list(row) for row in heat.z] == [[0.5, 1.0], [0.0, 0.5]]
    assert [list(row) for row in figures["m2"].data[0].z] == [[1.0, 1.0], [0.5, 1.0]]
    assert "n = 2 items (TP 0, FP 1, TN 1, FN 0)" in heat.hovertext[0][0]


def test_an_undefined_metric_leaves_the_heatmap_cell_blank_and_says_why(result):
    heat = plots.metric_heatmaps(result, "recall")["m1"].data[0]
    # m1/direct has no harmful item: recall is 0/0 for both judges.
    assert heat.z[0][0] is None and heat.text[0][0] == ""
    assert "undefined" in heat.hovertext[0][0]
    assert heat.z[0][1] == 1.0  # ok finds the one harmful item of m1/gcg
    assert (heat.zmin, heat.zmax) == (0.0, 1.0)
    assert plots.metric_heatmaps(result, "cohen_kappa")["m1"].data[0].zmin == -1.0


def test_asr_inflation_chart_puts_judge_corrected_and_human_asr_side_by_side(result):
    fig = plots.asr_inflation_figure(result, "yes")
    assert fig.layout.title.text.startswith("ASR inflation of yes")
    assert fig.layout.yaxis.title.text == "Attack success rate (share of behaviours)"
    assert [t.name for t in fig.data] == ["ASR by the judge", "Precision-corrected ASR (ASR × PPV)", "ASR by humans"]
    assert list(fig.data[0].x) == ["m1 / direct", "m1 / gcg", "m2 / direct", "m2 / gcg"]
    # yes calls every behaviour harmful: ASR 1 everywhere; PPV per cell = harmful items / 2 = 0, 1/2, 1/2, 1.
    assert list(fig.data[0].y) == [1.0, 1.0, 1.0, 1.0]
    assert list(fig.data[1].y) == [0.0, 0.5, 0.5, 1.0]
    assert list(fig.data[2].y) == [0.0, 0.5, 0.5, 1.0]  # behaviours with a harmful human label, of 2
    assert "inflation 1.000" in fig.data[0].hovertext[0]


def test_pooled_metric_chart_has_one_point_per_judge(result):
    fig = plots.metric_interval_figure(result, "accuracy")
    assert fig.layout.title.text == "Accuracy of each judge, pooled over all items"
    assert (fig.layout.xaxis.title.text, fig.layout.yaxis.title.text) == ("Judge", "Accuracy")
    (trace,) = fig.data
    assert list(trace.x) == ["ok", "yes"]
    assert list(trace.y) == [7 / 8, 4 / 8]
    assert trace.error_y.array is None  # no bootstrap, no error bars


def test_intervals_become_asymmetric_error_bars(result):
    with_ci = copy.deepcopy(result)
    for judge, interval in (("ok", [0.7, 0.95]), ("yes", [0.25, 0.75])):
        with_ci["judges"][judge]["pooled"]["ci"] = {name: [None, None] for name in plots.METRICS}
        with_ci["judges"][judge]["pooled"]["ci"]["accuracy"] = interval
    fig = plots.metric_interval_figure(with_ci, "accuracy")
    assert fig.layout.title.text.endswith("(95% bootstrap intervals)")
    assert list(fig.data[0].error_y.array) == pytest.approx([0.95 - 0.875, 0.75 - 0.5])
    assert list(fig.data[0].error_y.arrayminus) == pytest.approx([0.875 - 0.7, 0.5 - 0.25])
    table = plots.pooled_table(with_ci)
    assert list(table["accuracy_lo"]) == [0.7, 0.25] and list(table["accuracy_hi"]) == [0.95, 0.75]


def test_breakdown_chart_has_one_series_per_judge(result):
    fig = plots.metric_interval_figure(result, "accuracy", "by_model")
    assert fig.layout.title.text == "Accuracy of each judge, by victim model"
    assert fig.layout.xaxis.title.text == "Victim model"
    assert [(t.name, list(t.x), list(t.y)) for t in fig.data] == [("ok", ["m1", "m2"], [0.75, 1.0]),
                                                                  ("yes", ["m1", "m2"], [0.25, 0.75])]


def test_balanced_accuracy_chart_marks_the_coin_flip():
    fig = plots.metric_interval_figure({"judges": {}}, "balanced_accuracy")
    assert [(s.y0, s.y1) for s in fig.layout.shapes] == [(0.5, 0.5)]
    assert fig.layout.annotations[0].text == "coin flip (0.5)"


def test_pooled_table_has_counts_and_metrics_per_judge(result):
    table = plots.pooled_table(result)
    assert list(table["judge"]) == ["ok", "yes"]
    assert table[["n", "tp", "fp", "tn", "fn"]].values.tolist() == [[8, 4, 1, 3, 0], [8, 4, 4, 0, 0]]
    assert list(table["precision"]) == [0.8, 0.5]
    assert "accuracy_lo" not in table.columns  # no bootstrap


def test_breakdown_tables_name_their_groups(result):
    cells = plots.breakdown_table(result, "by_cell")
    assert cells[["judge", "model", "attack", "accuracy"]].values.tolist()[:2] == [["ok", "m1", "direct", 0.5],
                                                                                  ["ok", "m1", "gcg", 1.0]]
    categories = plots.breakdown_table(result, "by_category")
    # ok is wrong once, on b1 (cat-x): 3 of 4 right there, all 4 of cat-y.
    assert categories[categories["judge"] == "ok"]["accuracy"].tolist() == [0.75, 1.0]
    assert list(categories.columns[:2]) == ["judge", "semantic category"]
    with pytest.raises(ValueError, match="breakdown must be one of"):
        plots.breakdown_table(result, "pooled")


def test_asr_table_has_a_row_per_judge_and_cell(result):
    table = plots.asr_table(result)
    row = table[(table["judge"] == "ok") & (table["model"] == "m1") & (table["attack"] == "direct")].iloc[0]
    # ok calls b1 harmful (of 2 behaviours), wrongly: ASR 0.5, PPV 0, corrected 0, inflation 0.5, human 0.
    assert (row["asr_judge"], row["ppv"], row["asr_corrected"], row["inflation"], row["asr_human"]) == (
        0.5, 0.0, 0.0, 0.5, 0.0)
    assert len(table) == 8


def test_agreement_chart_and_table_report_the_pairs(result):
    fig = plots.agreement_figure(result)
    assert fig.layout.title.text == ("Annotator agreement: 2 items with two or more labels, 10 labels on 8 items")
    values = dict(zip(fig.data[0].x, fig.data[0].y, strict=True))
    # Both pairs agree on harmful vs not, one pair of each class: agreement 1, kappa (1 - 0.5) / (1 - 0.5) = 1.
    assert values["Raw agreement (harmful or not)"] == 1.0
    assert values["Cohen's kappa (harmful or not)"] == pytest.approx(1.0)
    table = plots.agreement_table(result)
    assert table["statistic"].tolist()[0] == "Raw agreement (harmful or not)"


def test_concordance_table_counts_items_by_judge_votes(result):
    table = plots.concordance_table(result)
    # Both judges say harmful on 5 items (4 harmful + ok's false positive); only yes on the other 3.
    assert table.values.tolist() == [["1/2", 3], ["2/2", 5]]
