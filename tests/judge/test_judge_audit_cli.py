"""``python -m engines.judge audit`` end to end on tiny files: items.jsonl, labels.csv, verdicts.csv.

The items are HarmBench-derived (key ``<model>/<attack>/<BehaviorID>/<index>``, written with
``items.write_items``); the expected numbers are counted by hand from the rows below.
"""

from __future__ import annotations

import argparse
import json

import pytest

from engines.judge import audit_cli
from engines.judge.__main__ import main
from engines.judge.items import Item, JudgeDataError, write_items

MODEL = "llama-3.1-8b"
ITEMS = [  # (attack, BehaviorID, index in the completions list, SemanticCategory)
    ("GCG", "dimethylmercury_instructions", 0, "chemical_biological"),
    ("GCG", "dimethylmercury_instructions", 1, "chemical_biological"),
    ("GCG", "bank_phishing_email", 0, "cybercrime_intrusion"),
    ("PAIR", "dimethylmercury_instructions", 0, "chemical_biological"),
    ("PAIR", "bank_phishing_email", 0, "cybercrime_intrusion"),
    ("PAIR", "bank_phishing_email", 1, "cybercrime_intrusion"),
]
KEYS = [f"{MODEL}/{attack}/{behaviour}/{index}" for attack, behaviour, index, _ in ITEMS]
# seq, item, annotator, score. Item 1 (GCG/dimethylmercury/1): 4 then 2 -> a tie under majority, harmful under first.
LABELS = [(1, 0, "ann1", 5), (2, 1, "ann1", 4), (3, 2, "ann1", 1), (4, 3, "ann2", 2), (5, 4, "ann2", 3),
          (6, 5, "ann2", 1), (7, 1, "ann2", 2), (8, 0, "ann2", 4)]
# item, judge, p_harmful, label ("" = the reply did not parse)
VERDICTS = [(0, "harmbench_cls", 0.9, 1), (1, "harmbench_cls", 0.8, 1), (2, "harmbench_cls", 0.7, 1),
            (3, "harmbench_cls", 0.2, 0), (4, "harmbench_cls", 0.6, 1), (5, "harmbench_cls", 0.1, 0),
            (0, "gcg_prefix", 1.0, 1), (1, "gcg_prefix", "", ""), (2, "gcg_prefix", 0.0, 0),
            (3, "gcg_prefix", 1.0, 1), (4, "gcg_prefix", 0.0, 0), (5, "gcg_prefix", 0.0, 0)]


@pytest.fixture
def files(tmp_path):
    items = [Item(key=KEYS[k], behavior_id=behaviour, behavior=f"[REDACTED: {behaviour}]",
                  functional_category="standard", semantic_category=category, victim_model=MODEL, attack=attack,
                  sample_idx=index, test_case=f"[REDACTED: {behaviour}] [SUFFIX]",
                  generation="Sure, here is [REDACTED]", source="harmbench")
             for k, (attack, behaviour, index, category) in enumerate(ITEMS)]
    write_items(items, tmp_path / "items.jsonl")
    (tmp_path / "labels.csv").write_text(
        "item_key,annotator,score,seq\n" + "".join(f"{KEYS[i]},{a},{s},{seq}\n" for seq, i, a, s in LABELS))
    (tmp_path / "verdicts.csv").write_text(
        "item_key,judge,p_harmful,label\n" + "".join(f"{KEYS[i]},{j},{p},{lab}\n" for i, j, p, lab in VERDICTS))
    return tmp_path


def argv(path, *extra):
    return ["audit", "--items", str(path / "items.jsonl"), "--labels", str(path / "labels.csv"),
            "--verdicts", str(path / "verdicts.csv"), *extra, "--json"]


def run_cli(capsys, path, *extra) -> dict:
    main(argv(path, *extra))
    return json.loads(capsys.readouterr().out)


def test_audit_json_end_to_end(files, capsys):
    """Majority: item 1 ties (no adjudicator) and drops out; humans say harmful for items 0 (5, 4) and 4 (3).
    harmbench_cls on items 0, 2, 3, 4, 5: TP 0, 4; FP 2; TN 3, 5 -> accuracy 4/5, precision 2/3."""
    result = run_cli(capsys, files)
    cls = result["judges"]["harmbench_cls"]
    pooled = cls["pooled"]
    assert {k: pooled[k] for k in ("n", "tp", "fp", "tn", "fn")} == {"n": 5, "tp": 2, "fp": 1, "tn": 2, "fn": 0}
    assert pooled["accuracy"] == pytest.approx(4 / 5)
    assert pooled["precision"] == pytest.approx(2 / 3)
    assert set(pooled) >= {"recall", "f1", "balanced_accuracy", "cohen_kappa", "auroc"}
    assert set(cls["by_cell"]) == {f"{MODEL}|GCG", f"{MODEL}|PAIR"}
    assert set(cls["by_category"]) == {"chemical_biological", "cybercrime_intrusion"}
    assert result["n_human_labelled"] == 5 and result["human_label_how"]["tie"] == 1
    assert result["summary"].startswith("5/6 items with a human label (majority)")


def test_audit_json_has_the_cell_asr_and_agreement(files, capsys):
    """GCG for harmbench_cls: both behaviours judged harmful somewhere -> ASR 1; PPV on items 0, 2 = 1/2.
    Agreement pairs (first two labels by seq): items 0 (5, 4) and 1 (4, 2) -> binary 1/1 and 1/0."""
    result = run_cli(capsys, files)
    gcg = result["judges"]["harmbench_cls"]["asr"][f"{MODEL}|GCG"]
    assert gcg["asr_judge"] == 1.0 and gcg["ppv"] == pytest.approx(0.5)
    assert gcg["asr_corrected"] == pytest.approx(0.5) and gcg["inflation"] == pytest.approx(0.5)
    assert gcg["asr_human"] == pytest.approx(0.5)  # dimethylmercury harmful (item 0), phishing not (item 2)
    agreement = result["agreement"]
    assert agreement["n_items"] == 2 and agreement["binary_agreement"] == pytest.approx(0.5)
    assert {"kappa_binary", "kappa_quadratic", "alpha_nominal", "alpha_ordinal"} <= set(agreement)
    assert result["concordance"]["n_items"] == 5  # item 1 has one parsed verdict


def test_unparsed_verdict_is_counted_not_scored(files, capsys):
    result = run_cli(capsys, files, "--human-rule", "first")
    prefix = result["judges"]["gcg_prefix"]
    assert prefix["n_unparsed"] == 1 and prefix["n_unparsed_labelled"] == 1
    assert prefix["pooled"]["n"] == 5


def test_first_rule_labels_the_tied_item(files, capsys):
    """First label of item 1 is a 4: harmful; harmbench_cls said harmful -> one more TP (n 6)."""
    pooled = run_cli(capsys, files, "--human-rule", "first")["judges"]["harmbench_cls"]["pooled"]
    assert (pooled["n"], pooled["tp"]) == (6, 3)


def test_bootstrap_gives_every_metric_an_interval(files, capsys):
    result = run_cli(capsys, files, "--bootstrap", "50", "--seed", "3")
    for metric_set in (result["judges"]["harmbench_cls"]["pooled"],
                       *result["judges"]["harmbench_cls"]["by_attack"].values()):
        assert set(metric_set["ci"]) == {"accuracy", "precision", "recall", "f1", "balanced_accuracy",
                                         "cohen_kappa", "auroc"}
        assert all(len(v) == 2 for v in metric_set["ci"].values())
    assert "ci" in result["judges"]["harmbench_cls"]["asr"][f"{MODEL}|GCG"]


def test_summary_line_without_json(files, capsys):
    main(argv(files)[:-1])
    out = capsys.readouterr().out.strip()
    assert out.startswith("5/6 items with a human label") and "harmbench_cls: accuracy 0.800 on 5" in out


def test_unknown_item_key_in_labels_names_file_line_and_field(files):
    with (files / "labels.csv").open("a") as handle:
        handle.write(f"{MODEL}/GCG/no_such_behaviour/0,ann3,2,9\n")
    parser = argparse.ArgumentParser()
    audit_cli.add_arguments(parser)
    with pytest.raises(JudgeDataError) as error:
        audit_cli.run(parser.parse_args(argv(files)[1:-1]))
    assert error.value.path == str(files / "labels.csv")
    assert (error.value.line, error.value.field) == (10, "item_key")  # header + 8 rows, then this one
    assert "no_such_behaviour" in str(error.value)


def test_unknown_item_key_in_verdicts_exits_with_the_location(files, capsys):
    with (files / "verdicts.csv").open("a") as handle:
        handle.write(f"{MODEL}/BoN/bank_phishing_email/0,harmbench_cls,0.5,1\n")
    with pytest.raises(SystemExit) as stop:
        main(argv(files))
    assert stop.value.code == 2
    message = capsys.readouterr().err
    assert f"verdicts.csv, line {len(VERDICTS) + 2}: item_key: " in message


def test_a_second_verdict_of_the_same_judge_is_an_error(files):
    with (files / "verdicts.csv").open("a") as handle:
        handle.write(f"{KEYS[2]},harmbench_cls,0.1,0\n")
    parser = argparse.ArgumentParser()
    audit_cli.add_arguments(parser)
    with pytest.raises(JudgeDataError) as error:
        audit_cli.run(parser.parse_args(argv(files)[1:-1]))
    assert error.value.line == len(VERDICTS) + 2
    assert "the first is on line 4" in str(error.value)


def test_out_writes_the_same_json(files, capsys):
    result = run_cli(capsys, files, "--out", str(files / "audit.json"))
    assert json.loads((files / "audit.json").read_text()) == result
