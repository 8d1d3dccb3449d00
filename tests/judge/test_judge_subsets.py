"""ReliableBench-like and JudgeStressTest-like subsets on small fixtures with answers worked out by hand.

Items are HarmBench-shaped; each judge's verdict is set right or wrong per item, so the accuracies
in the docstrings are counts of those choices.
"""

from __future__ import annotations

import numpy as np
import pytest

from engines.judge.audit import AuditConfig, audit
from engines.judge.audit_table import build_table
from engines.judge.items import Item, Label, Verdict
from engines.judge.subsets import ReliableBenchConfig, StressTestConfig, balanced_sample, reliable_bench, stress_test

JUDGES = ("A", "B", "C")


def add(rows, model, attack, behaviour, index, harmful, right_judges):
    """One item and its human label; the judges in ``right_judges`` agree with it, the others do not."""
    item = Item(key=f"{model}/{attack}/{behaviour}/{index}", behavior_id=behaviour, behavior="[REDACTED]",
                semantic_category="illegal", victim_model=model, attack=attack, sample_idx=index,
                generation="[REDACTED]", source="harmbench")
    rows[0].append(item)
    rows[1].append((item.key, Label(annotator_id="ann", score=4 if harmful else 1)))
    for judge in JUDGES:
        said = harmful if judge in right_judges else 1 - harmful
        rows[2].append((item.key, Verdict(judge=judge, p_harmful=float(said), label=said)))


# ReliableBench fixture: correct items (of 4, two harmful and two harmless) per behaviour and judge.
CORRECT = {"b1": {"A": 4, "B": 4, "C": 4}, "b2": {"A": 4, "B": 4, "C": 1},
           "b3": {"A": 1, "B": 2, "C": 4}, "b4": {"A": 2, "B": 2, "C": 2}}


def reliable_fixture():
    rows = ([], [], [])
    for behaviour, correct in CORRECT.items():
        for index in range(4):
            right = {j for j in JUDGES if index < correct[j]}
            add(rows, "llama-3.1-8b", "GCG", behaviour, index, int(index in (1, 3)), right)
    for index in range(3):  # too few items
        add(rows, "llama-3.1-8b", "GCG", "b5", index, index % 2, set(JUDGES))
    for index in range(4):  # all harmless
        add(rows, "llama-3.1-8b", "GCG", "b6", index, 0, set(JUDGES))
    return build_table(*rows)


def test_reliable_bench_adds_behaviours_until_the_mean_falls_below_the_target():
    """a_b = correct / 12: b1 1, b2 9/12, b3 7/12, b4 1/2. Running means 1, 0.875, 0.778 -> at
    target 0.8 the top two stay. Mean over the four eligible: (12+9+7+6)/48 = 34/48."""
    result = reliable_bench(reliable_fixture(), ReliableBenchConfig(target=0.8, min_items=4))
    assert result.behaviours == ["b1", "b2"]
    assert result.accuracy_by_behaviour == pytest.approx({"b1": 1.0, "b2": 0.75, "b3": 7 / 12, "b4": 0.5})
    assert list(result.accuracy_by_behaviour) == ["b1", "b2", "b3", "b4"]
    assert result.mean_accuracy_chosen == pytest.approx(0.875)
    assert result.mean_accuracy_all == pytest.approx(34 / 48)
    assert sorted(result.item_keys) == sorted(f"llama-3.1-8b/GCG/{b}/{i}" for b in ("b1", "b2") for i in range(4))


def test_reliable_bench_per_judge_accuracy_on_the_chosen_items():
    """On b1 and b2 (8 items): A 8/8, B 8/8, C (4+1)/8."""
    result = reliable_bench(reliable_fixture(), ReliableBenchConfig(target=0.8, min_items=4))
    assert result.judge_accuracy_chosen == pytest.approx({"A": 1.0, "B": 1.0, "C": 5 / 8})


def test_reliable_bench_leave_one_judge_out():
    """Without A: b1 8/8, b2 5/8, b3 6/8 -> the top two are b1, b3, so b2 drops. Without B: b2 and b3
    tie at 5/8 (b2 first by name), without C: b2 8/8: both keep b1, b2. Only b1 passes."""
    result = reliable_bench(reliable_fixture(), ReliableBenchConfig(target=0.8, min_items=4))
    assert result.leave_one_judge_out == {"A": ["b2"], "B": [], "C": []}
    assert result.loo_pass == ["b1"]


def test_reliable_bench_leaves_out_small_and_single_class_behaviours():
    result = reliable_bench(reliable_fixture(), ReliableBenchConfig(target=0.8, min_items=4))
    assert result.ineligible["b5"] == "3 labelled items, fewer than 4"
    assert result.ineligible["b6"] == "a single class among its labelled items"
    assert "b5" not in result.accuracy_by_behaviour


def test_reliable_bench_can_require_a_steady_accuracy_across_cells():
    """b1 in two cells: all judges right in GCG, all wrong in PAIR -> a_b = 1/2 with cell std 1/2."""
    rows = ([], [], [])
    for attack, right in (("GCG", set(JUDGES)), ("PAIR", set())):
        for index in range(2):
            add(rows, "gemma-3-1b", attack, "b1", index, index, right)
    for index in range(4):
        add(rows, "gemma-3-1b", "GCG", "b2", index, index % 2, set(JUDGES))
    table = build_table(*rows)
    result = reliable_bench(table, ReliableBenchConfig(target=0.5, min_items=4, max_cell_std=0.15))
    assert result.behaviours == ["b2"]
    assert result.ineligible["b1"].startswith("accuracy varies across cells by std 0.500")


def test_balancing_subsamples_the_larger_class_reproducibly():
    y = np.array([1, 1, 1, 1, 0, 0, 1, 0])
    group = np.array([0, 0, 0, 0, 0, 0, 1, 1])
    first = balanced_sample(y, group, np.random.default_rng(4))
    again = balanced_sample(y, group, np.random.default_rng(4))
    assert first.tolist() == again.tolist()
    group0 = [i for i in first if group[i] == 0]
    assert sorted(y[group0].tolist()) == [0, 0, 1, 1]  # both harmless, two of the four harmful
    assert {4, 5} <= set(group0)
    assert [i for i in first if group[i] == 1] == [6, 7]


# JudgeStressTest fixture. Cell GCG (balanced already): who is right on each item.
STRESS = [(1, {"A", "B", "C"}), (0, {"A"}), (1, set()), (0, {"B", "C"})]


def stress_fixture():
    rows = ([], [], [])
    for index, (harmful, right) in enumerate(STRESS):
        add(rows, "qwen-3-32b", "GCG", "b1", index, harmful, right)
    # Cell PAIR: 3 harmful, 1 harmless, every judge right; balancing keeps 1 + 1.
    for index, harmful in enumerate((1, 1, 1, 0)):
        add(rows, "qwen-3-32b", "PAIR", "b2", index, harmful, set(JUDGES))
    # An item judge C has no verdict on: not in the stress test.
    add(rows, "qwen-3-32b", "PAIR", "b3", 0, 1, set())
    rows[2][:] = [(k, v) for k, v in rows[2] if not (k == "qwen-3-32b/PAIR/b3/0" and v.judge == "C")]
    return build_table(*rows)


def test_stress_test_keeps_items_at_most_one_judge_gets_right():
    """GCG items with 3, 1, 0, 2 judges right: items 1 and 2 stay. PAIR's items are all right: none."""
    result = stress_test(stress_fixture(), StressTestConfig(max_correct=1, seed=0))
    assert result.item_keys == ["qwen-3-32b/GCG/b1/1", "qwen-3-32b/GCG/b1/2"]
    assert (result.n_harmful, result.n_harmless) == (1, 1)
    assert result.by_cell == {"qwen-3-32b|GCG": 2}
    assert result.judge_accuracy == pytest.approx({"A": 0.5, "B": 0.0, "C": 0.0})


def test_stress_test_balances_cells_and_skips_incomplete_items():
    """GCG 2+2 stays whole; PAIR 3+1 becomes 1+1: 6 balanced items. b3's item lacks C's verdict."""
    result = stress_test(stress_fixture())
    assert result.n_balanced == 6
    assert result.n_incomplete == 1


def test_stress_test_leave_one_judge_out_accuracies():
    """Held-out B on the balanced GCG items (PAIR's 2 items: both others right, B right):
    the others (A, C) are right on 2, 1, 0, 1 GCG items. Acc@0: item 2 only, B wrong -> 0/1.
    Acc@1: items 1, 2, 3 -> B right on item 3 only -> 1/3. Overall: B right on items 0, 3 and
    both PAIR items -> 4/6. Held-out A: others right on 2, 0, 0, 2 -> Acc@0 = Acc@1 = 1/2 (items 1, 2)."""
    result = stress_test(stress_fixture())
    b, a = result.leave_one_judge_out["B"], result.leave_one_judge_out["A"]
    assert (b.acc_at_0, b.n_at_0) == (0.0, 1)
    assert b.acc_at_1 == pytest.approx(1 / 3) and b.n_at_1 == 3
    assert b.accuracy == pytest.approx(4 / 6) and b.n == 6
    assert (a.acc_at_0, a.n_at_0, a.acc_at_1, a.n_at_1) == (0.5, 2, 0.5, 2)


def test_audit_includes_subsets_when_asked():
    table_rows = ([], [], [])
    for index, (harmful, right) in enumerate(STRESS):
        add(table_rows, "qwen-3-32b", "GCG", "b1", index, harmful, right)
    plain = audit(*table_rows).to_dict()
    with_subsets = audit(*table_rows, config=AuditConfig(subsets=True,
                                                         reliable_bench=ReliableBenchConfig(min_items=4, target=0.0)))
    assert "subsets" not in plain
    data = with_subsets.to_dict()["subsets"]
    assert data["stress_test"]["item_keys"] == ["qwen-3-32b/GCG/b1/1", "qwen-3-32b/GCG/b1/2"]
    assert data["reliable_bench"]["behaviours"] == ["b1"]
