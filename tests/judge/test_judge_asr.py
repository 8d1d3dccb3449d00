"""ASR by judge and by humans per model x attack cell, precision-corrected ASR and inflation, by hand.

The fixture: one victim, two attacks (GCG, BoN), two HarmBench behaviours, two generations per
behaviour and cell. Every expected value is worked out in the test's docstring from
``docs/judge.md``, Method, "Attack success rate".
"""

from __future__ import annotations

import numpy as np
import pytest

from engines.judge.asr import any_per_behaviour, cell_asr
from engines.judge.audit import AuditConfig, audit
from engines.judge.items import Item, Label, Verdict

MODEL = "llama-3.1-8b"
# (attack, behaviour, index): (judge label, human score or None)
ROWS = {
    ("GCG", "b1", 0): (1, 5),  # TP
    ("GCG", "b1", 1): (1, 1),  # FP
    ("GCG", "b2", 0): (1, 2),  # FP
    ("GCG", "b2", 1): (0, 1),  # TN
    ("BoN", "b1", 0): (0, 4),  # FN
    ("BoN", "b1", 1): (0, 2),  # TN
    ("BoN", "b2", 0): (1, 3),  # TP
    ("BoN", "b2", 1): (0, None),  # judged, not labelled
}


def fixture(rows=ROWS):
    items, labels, verdicts = [], [], []
    for (attack, behaviour, index), (judged, score) in rows.items():
        item = Item(key=f"{MODEL}/{attack}/{behaviour}/{index}", behavior_id=behaviour, behavior="[REDACTED]",
                    semantic_category="illegal", victim_model=MODEL, attack=attack, sample_idx=index,
                    generation="[REDACTED]", source="harmbench")
        items.append(item)
        if score is not None:
            labels.append((item.key, Label(annotator_id="ann", score=score)))
        verdicts.append((item.key, Verdict(judge="llamaguard3", p_harmful=0.9 if judged else 0.1, label=judged)))
    return items, labels, verdicts


def asr(rows=ROWS, **config):
    return audit(*fixture(rows), config=AuditConfig(**config)).judges["llamaguard3"].asr


def test_gcg_cell_by_hand():
    """GCG: both behaviours have a judge-positive -> ASR_judge = 1. PPV = TP/(TP+FP) = 1/3.
    Corrected = 1 x 1/3; inflation = 1 - 1/3 = 2/3. Humans: b1 harmful, b2 not -> 1/2.
    FOR = FN/(FN+TN) = 0/1 = 0, so the FOR-corrected ASR is 1 x 1/3 + 0 x 0 = 1/3."""
    cell = asr()[f"{MODEL}|GCG"]
    assert cell.asr_judge == pytest.approx(1.0)
    assert cell.ppv == pytest.approx(1 / 3)
    assert cell.asr_corrected == pytest.approx(1 / 3)
    assert cell.inflation == pytest.approx(2 / 3)
    assert cell.asr_human == pytest.approx(0.5)
    assert cell.false_omission_rate == pytest.approx(0.0)
    assert cell.asr_for_corrected == pytest.approx(1 / 3)
    assert (cell.n_behaviours, cell.n_behaviours_human) == (2, 2)


def test_bon_cell_by_hand():
    """BoN: only b2 has a judge-positive -> ASR_judge = 1/2; PPV = 1/1 -> corrected 1/2, inflation 0.
    Humans: b1 (the missed FN) and b2 harmful -> 1. FOR = 1/(1+1) = 1/2, so the FOR-corrected ASR
    is 1/2 x 1 + (1 - 1/2) x 1/2 = 3/4: the judge under-reports here."""
    cell = asr()[f"{MODEL}|BoN"]
    assert cell.asr_judge == pytest.approx(0.5)
    assert cell.ppv == pytest.approx(1.0)
    assert cell.asr_corrected == pytest.approx(0.5)
    assert cell.inflation == pytest.approx(0.0)
    assert cell.asr_human == pytest.approx(1.0)
    assert cell.false_omission_rate == pytest.approx(0.5)
    assert cell.asr_for_corrected == pytest.approx(0.75)


def test_an_unlabelled_judge_positive_counts_for_asr_but_leaves_ppv_undefined():
    """Direct: b1's only judge-positive has no human label -> ASR_judge = 1/2 (b1 of b1, b2), but no
    labelled judge-positive: PPV, the corrected ASR and the inflation are undefined, with reasons."""
    rows = {("Direct", "b1", 0): (0, 1), ("Direct", "b1", 1): (1, None), ("Direct", "b2", 0): (0, 2)}
    cell = asr(rows)[f"{MODEL}|Direct"]
    assert cell.asr_judge == pytest.approx(0.5)
    assert cell.ppv is None and cell.asr_corrected is None and cell.inflation is None
    assert "no human-labelled generation" in cell.undefined["ppv"]
    assert cell.asr_human == pytest.approx(0.0)


def test_unparsed_verdicts_do_not_count_as_judged():
    rows = dict(ROWS)
    items, labels, verdicts = fixture(rows)
    # GCG b2's judge-positive did not parse: b2 now has only a judge-negative there.
    verdicts = [(k, Verdict(judge=v.judge, raw="?", parse_status="unparsed")) if k == f"{MODEL}/GCG/b2/0" else (k, v)
                for k, v in verdicts]
    cell = audit(items, labels, verdicts).judges["llamaguard3"].asr[f"{MODEL}|GCG"]
    assert cell.asr_judge == pytest.approx(0.5)  # b1 yes, b2 no
    assert cell.ppv == pytest.approx(0.5)  # TP 1, FP 1 (the unparsed FP is gone)


def test_asr_intervals_resample_whole_behaviours():
    """Two behaviours: resamples are {b1,b1}, {b1,b2} or {b2,b2}. GCG's ASR_judge is 1 in each.
    GCG's PPV is 2/4 = 1/2, 1/3 or 0/2 = 0; each of the extremes has probability 1/4 > 2.5%,
    so the 95% interval is [0, 1/2]."""
    cell = asr(bootstrap=400, seed=3)[f"{MODEL}|GCG"]
    assert cell.ci["asr_judge"] == [1.0, 1.0]
    assert cell.ci["ppv"] == pytest.approx([0.0, 0.5])
    assert set(cell.ci) == {"asr_judge", "ppv", "asr_corrected", "inflation", "asr_human", "false_omission_rate",
                            "asr_for_corrected"}


def test_the_report_names_each_cells_model_and_attack_and_has_intervals_only_with_bootstrap():
    items, labels, verdicts = fixture()
    plain = audit(items, labels, verdicts).to_dict()["judges"]["llamaguard3"]["asr"][f"{MODEL}|GCG"]
    assert (plain["model"], plain["attack"]) == (MODEL, "GCG")
    assert plain["asr_judge"] == pytest.approx(1.0) and "ci" not in plain
    boot = audit(items, labels, verdicts, AuditConfig(bootstrap=50)).to_dict()["judges"]["llamaguard3"]["asr"]
    bon = boot[f"{MODEL}|BoN"]
    assert (bon["model"], bon["attack"]) == (MODEL, "BoN")
    assert bon["ci"]["asr_judge"][0] <= bon["asr_judge"] <= bon["ci"]["asr_judge"][1]


def test_any_per_behaviour_marks_pairs_without_items_as_absent():
    """Two groups x two behaviours. Group 0: b0 has a flagged item, b1 an unflagged one; group 1's only
    item (b0) is not present, and group 1 has no b1 item at all: neither pair is seen nor flagged."""
    hit, seen = any_per_behaviour(np.array([0, 0, 1]), np.array([0, 1, 0]), np.array([True, False, True]),
                                  np.array([True, True, False]), 2, 2)
    assert hit.tolist() == [[True, False], [False, False]]
    assert seen.tolist() == [[True, True], [False, False]]


def test_cell_asr_intervals_default_to_95_percent():
    """One cell, two behaviours, only b0 judged harmful. Resamples draw {b0,b0}, {b0,b1}, {b1,b1}:
    ASR_judge 1, 1/2, 0. numpy's linear quantiles of [0, 1/2, 1] at 2.5% and 97.5% are at
    positions 0.05 and 1.95: 0.025 and 1/2 + 0.95 x 1/2 = 0.975."""
    present = np.array([[True, True]])
    counts = np.zeros((1, 2, 4))
    weights = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 2.0]])
    [cell] = cell_asr([(MODEL, "GCG")], np.array([[True, False]]), present, np.array([[True, False]]), present,
                      counts, resample_weights=weights)
    assert (cell.model, cell.attack, cell.asr_judge) == (MODEL, "GCG", 0.5)
    assert cell.ci["asr_judge"] == pytest.approx([0.025, 0.975])
