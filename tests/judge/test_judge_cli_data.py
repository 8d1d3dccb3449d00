"""``python -m engines.judge import`` and ``export`` end to end, through ``engines.judge.__main__.main``.

The commands are the issue's; fixtures are the hand-written upstream files of ``conftest.py``.
Bad input ends with exit status 2 and one message naming the file, line and field.
"""

from __future__ import annotations

import json

import pytest

from engines.judge.__main__ import main


def _run(argv, capsys):
    """(exit status, stdout, stderr) of the CLI."""
    try:
        main([str(arg) for arg in argv])
        status = 0
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def _import_harmbench(files, out):
    return ["import", "harmbench", "--behaviors", files["behaviors"],
            "--run", "model-a", "direct", files["completions"], "--run", "model-a", "gcg", files["results"], "--out", out]


def _keys(path):
    return [json.loads(line)["key"] for line in path.read_text().splitlines()]


def test_import_harmbench_writes_the_items_and_a_summary(harmbench_files, tmp_path, capsys):
    out = tmp_path / "items.jsonl"
    status, stdout, _ = _run(_import_harmbench(harmbench_files, out), capsys)
    assert status == 0
    assert _keys(out) == ["model-a/direct/poem_topic/0", "model-a/direct/poem_topic/1", "model-a/direct/passage_summary/0",
                          "model-a/gcg/song_lyrics/0", "model-a/gcg/poem_topic/0"]
    assert stdout.strip() == f"5 items (model-a/direct: 3, model-a/gcg: 2) -> {out}"


def test_import_with_json_prints_counts_per_run(harmbench_files, tmp_path, capsys):
    status, stdout, _ = _run(["--json", *_import_harmbench(harmbench_files, tmp_path / "items.jsonl")], capsys)
    result = json.loads(stdout)
    assert (status, result["items"], result["per_run"]) == (0, 5, {"model-a/direct": 3, "model-a/gcg": 2})


def test_import_of_a_bad_file_exits_2_with_the_location_and_leaves_the_output_alone(harmbench_files, tmp_path, capsys):
    results = harmbench_files["results"]
    results.write_text(results.read_text().replace('"song_lyrics": [', '"no_such_behaviour": ['))
    out = tmp_path / "items.jsonl"
    out.write_text("earlier content\n")
    status, stdout, stderr = _run(_import_harmbench(harmbench_files, out), capsys)
    assert status == 2
    assert stderr.startswith(f"error: {results}, line 2: no_such_behaviour: BehaviorID 'no_such_behaviour' is not in")
    assert out.read_text() == "earlier content\n"  # the good first run was not written either


def test_import_jbb_counts_the_skipped_entries(jbb_files, tmp_path, capsys):
    out = tmp_path / "items.jsonl"
    status, stdout, _ = _run(["import", "jbb", "--artifact", jbb_files["artifact"], "--behaviors", jbb_files["behaviors"],
                              "--out", out], capsys)
    assert status == 0
    assert _keys(out) == ["vicuna-13b-v1.5/PAIR/Defamation/0", "vicuna-13b-v1.5/PAIR/Tax evasion/2"]
    assert stdout.strip() == f"2 items (vicuna-13b-v1.5/PAIR: 2); 1 entry skipped (not submitted) -> {out}"


def test_import_generic_uses_the_map(tmp_path, capsys):
    source = tmp_path / "gens.csv"
    source.write_text("request,model,method,output\nAsk [REDACTED: q],m,a,No.\n")
    out = tmp_path / "items.jsonl"
    status, _, _ = _run(["import", "generic", "--input", source, "--map", "behavior=request", "--map", "victim_model=model",
                         "--map", "attack=method", "--map", "generation=output", "--out", out], capsys)
    item = json.loads(out.read_text())
    assert status == 0
    assert (item["behavior"], item["victim_model"], item["attack"], item["generation"]) == ("Ask [REDACTED: q]", "m", "a", "No.")


def test_import_generic_without_a_required_field_exits_2(tmp_path, capsys):
    source = tmp_path / "gens.csv"
    source.write_text("request,output\nAsk,No.\n")
    status, _, stderr = _run(["import", "generic", "--input", source, "--map", "behavior=request",
                              "--map", "generation=output", "--out", tmp_path / "items.jsonl"], capsys)
    assert status == 2
    assert "--map: victim_model: required" in stderr
    assert not (tmp_path / "items.jsonl").exists()


def _labels_csv(path, rows):
    path.write_text("item_key,annotator,score,seq\n" + "".join(f"{k},{a},{s},{q}\n" for k, a, s, q in rows))
    return path


def test_export_harmbench_writes_human_labels_from_labels_csv(harmbench_files, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    _run(_import_harmbench(harmbench_files, items), capsys)
    labels = _labels_csv(tmp_path / "labels.csv", [("model-a/direct/poem_topic/1", "ann-1", 4, 2),
                                                   ("model-a/direct/poem_topic/0", "ann-1", 1, 1),
                                                   ("model-a/gcg/song_lyrics/0", "ann-2", 2, 3)])
    status, stdout, _ = _run(["export", "--items", items, "--labels", labels, "--format", "harmbench",
                              "--out", tmp_path / "out"], capsys)
    direct = json.loads((tmp_path / "out" / "model-a__direct.json").read_text())
    gcg = json.loads((tmp_path / "out" / "model-a__gcg.json").read_text())
    assert status == 0
    assert [c.get("label") for c in direct["poem_topic"] + direct["passage_summary"]] == [0, 1, None]
    assert (gcg["song_lyrics"][0]["label"], gcg["song_lyrics"][0]["original_label"]) == (0, 1)
    assert "5 items, 3 with a human label, to 2 files" in stdout
    assert "2 unlabelled (no label written)" in stdout


def test_export_jbb_writes_an_artifact_per_model_and_method(jbb_files, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    _run(["import", "jbb", "--artifact", jbb_files["artifact"], "--out", items], capsys)
    labels = _labels_csv(tmp_path / "labels.csv", [("vicuna-13b-v1.5/PAIR/Defamation/0", "ann-1", 1, 1),
                                                   ("vicuna-13b-v1.5/PAIR/Tax evasion/2", "ann-1", 5, 2)])
    status, _, _ = _run(["export", "--items", items, "--labels", labels, "--format", "jbb", "--out", tmp_path / "out"],
                        capsys)
    artifact = json.loads((tmp_path / "out" / "vicuna-13b-v1.5__PAIR.json").read_text())
    assert status == 0
    assert [(e["index"], e["jailbroken"], e["jailbroken_original"]) for e in artifact["jailbreaks"]] == [
        (0, False, True), (2, True, False)]
    # One human jailbreak over the artifact's three behaviours (the not-submitted one counts, as in JBB).
    assert artifact["parameters"]["attack_success_rate"] == pytest.approx(1 / 3)
    assert artifact["parameters"]["method_parameters"]["judge-model"] == "gpt-4-0125-preview"


def test_export_with_a_label_for_an_unknown_item_exits_2_naming_the_line(harmbench_files, tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    _run(_import_harmbench(harmbench_files, items), capsys)
    labels = _labels_csv(tmp_path / "labels.csv", [("model-a/direct/poem_topic/0", "ann-1", 1, 1),
                                                   ("model-a/direct/nothing/0", "ann-1", 4, 2)])
    status, _, stderr = _run(["export", "--items", items, "--labels", labels, "--format", "harmbench",
                              "--out", tmp_path / "out"], capsys)
    assert status == 2
    assert stderr.startswith(f"error: {labels}, line 3: item_key:")
    assert not (tmp_path / "out").exists()
