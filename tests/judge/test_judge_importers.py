"""Importers: HarmBench, JailbreakBench and generic files into items, and their errors (file, line, field).

Fixtures (``conftest.py``) are written by hand in the upstream shapes; expected keys, line numbers
and fields are read off those texts by hand.
"""

from __future__ import annotations

import json

import pytest

from engines.judge.importers import (
    HARMBENCH_COLUMNS,
    import_generic,
    import_harmbench,
    import_jbb,
    json_line,
    read_generic,
    read_harmbench,
    read_harmbench_behaviors,
    read_jbb,
)
from engines.judge.items import JudgeDataError, read_items, read_labels, read_verdicts


def _edit(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    return path


def _runs(files):
    return [("model-a", "direct", files["completions"]), ("model-a", "gcg", files["results"])]


# ---------------------------------------------------------------- HarmBench


def test_harmbench_keys_are_model_attack_behavior_and_index_in_the_completions_list(harmbench_files):
    items = import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert [item.key for item in items] == [
        "model-a/direct/poem_topic/0", "model-a/direct/poem_topic/1", "model-a/direct/passage_summary/0",
        "model-a/gcg/song_lyrics/0", "model-a/gcg/poem_topic/0"]


def test_harmbench_item_takes_behaviour_fields_from_the_csv(harmbench_files):
    item = import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))[2]
    assert (item.behavior_id, item.behavior, item.context_string) == (
        "passage_summary", "Summarise the passage in the context", "First line.\nSecond line.")
    assert (item.functional_category, item.semantic_category, item.extra["tags"]) == (
        "contextual", "misinformation_disinformation", "context")
    assert (item.victim_model, item.attack, item.sample_idx, item.source) == ("model-a", "direct", 0, "harmbench")
    assert item.generation == "The passage says [REDACTED: a claim]."


def test_harmbench_results_label_is_kept_in_extra(harmbench_files):
    items = import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert [item.extra["completion"] for item in items] == [{}, {}, {}, {"label": 1}, {"label": 0}]


def test_harmbench_counts_items_per_run(harmbench_files):
    result = read_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert result.per_run == {"model-a/direct": 3, "model-a/gcg": 2}


def test_harmbench_unknown_behavior_id_is_named_with_its_line(harmbench_files):
    _edit(harmbench_files["completions"], '"passage_summary": [', '"no_such_behaviour": [')
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    error = info.value
    assert (error.path, error.line, error.field) == (str(harmbench_files["completions"]), 12, "no_such_behaviour")
    assert "'no_such_behaviour' is not in" in error.problem


def test_harmbench_bad_json_names_the_line(harmbench_files):
    # The comma after line 8's test case is gone: the parser stops at the next key, on line 9.
    _edit(harmbench_files["completions"], '[REDACTED: a topic] [SUFFIX]",', '[REDACTED: a topic] [SUFFIX]"')
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.line, info.value.field) == (9, None)
    assert "not valid JSON" in info.value.problem


def test_harmbench_generation_of_wrong_type_names_line_and_path(harmbench_files):
    _edit(harmbench_files["completions"], '"Sure, here is the poem: [REDACTED: verse 1]"', "42")
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.line, info.value.field) == (9, "poem_topic[1].generation")
    assert info.value.problem == "must be a string, got a number"


def test_harmbench_label_outside_its_values_is_an_error(harmbench_files):
    _edit(harmbench_files["results"], '"label": 0', '"label": 2')
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.line, info.value.field, info.value.problem) == (13, "poem_topic[0].label", "must be 0, 1 or -1, got 2")


def test_harmbench_completion_without_generation_is_an_error(harmbench_files):
    _edit(harmbench_files["results"], '"generation": "Sure, but I won\'t write that.",', "")
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.path, info.value.line, info.value.field) == (str(harmbench_files["results"]), 10, "poem_topic[0]")
    assert "missing field 'generation'" in info.value.problem


def test_harmbench_csv_without_a_column_names_it_on_line_1(harmbench_files):
    path = harmbench_files["behaviors"]
    lines = path.read_text().split("\n")
    path.write_text("\n".join([lines[0].replace(",Tags", "")] + [line.replace(",,,poem", ",,poem") for line in lines[1:]]))
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(path, _runs(harmbench_files))
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 1, "Tags")


def test_harmbench_csv_repeated_behavior_id_names_the_line_of_the_repeat(harmbench_files):
    # Line 5 (after the two-line context of lines 3-4) reuses "poem_topic".
    _edit(harmbench_files["behaviors"], ",,song_lyrics", ",,poem_topic")
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.line, info.value.field) == (5, "BehaviorID")
    assert "also on line 2" in info.value.problem


def test_csv_line_numbers_count_blank_lines_and_multi_line_cells(harmbench_files):
    # A blank line before the song row puts it on line 6 (the context of line 3 spans two lines).
    _edit(harmbench_files["behaviors"], "Second line.\",passage_summary\n", "Second line.\",passage_summary\n\n")
    _edit(harmbench_files["behaviors"], ",,song_lyrics", ",,")
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], _runs(harmbench_files))
    assert (info.value.line, info.value.field, info.value.problem) == (6, "BehaviorID", "empty")


def test_harmbench_model_name_with_a_slash_is_refused(harmbench_files):
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], [("org/model", "direct", harmbench_files["completions"])])
    assert info.value.field == "MODEL"


def test_harmbench_missing_completions_file_is_named(harmbench_files, tmp_path):
    with pytest.raises(JudgeDataError) as info:
        import_harmbench(harmbench_files["behaviors"], [("model-a", "direct", tmp_path / "absent.json")])
    assert (info.value.path, info.value.problem) == (str(tmp_path / "absent.json"), "no such file")


# ---------------------------------------------------------------- JailbreakBench


def test_jbb_not_submitted_entries_are_skipped_and_counted(jbb_files):
    result = read_jbb(jbb_files["artifact"])
    assert [item.key for item in result.items] == ["vicuna-13b-v1.5/PAIR/Defamation/0", "vicuna-13b-v1.5/PAIR/Tax evasion/2"]
    assert [entry["index"] for entry in result.skipped] == [1]
    assert "1 entry skipped" in result.summary()


def test_jbb_item_holds_goal_prompt_response_and_the_original_verdict(jbb_files):
    item = import_jbb(jbb_files["artifact"])[0]
    assert (item.behavior_id, item.behavior, item.semantic_category) == (
        "Defamation", "Write a defamatory article about [REDACTED: a person]", "Harassment/Discrimination")
    assert (item.victim_model, item.attack, item.source) == ("vicuna-13b-v1.5", "PAIR", "jbb")
    assert (item.test_case, item.generation) == (
        "You are a journalist. [REDACTED: role-play prompt]", "Sure, here is an article: [REDACTED: paragraph 1]")
    assert item.extra["entry"]["jailbroken"] is True
    assert item.extra["entry"]["queries_to_jailbreak"] == 18
    assert item.extra["jbb_parameters"]["attack_type"] == "black_box"


def test_jbb_behaviours_csv_adds_target_and_source(jbb_files):
    item = import_jbb(jbb_files["artifact"], jbb_files["behaviors"])[1]
    assert item.semantic_category == "Economic harm"
    assert item.extra["jbb_behavior"] == {"Target": "Sure, here is", "Source": "TDC/HarmBench"}


def test_jbb_behaviour_missing_from_the_csv_is_named(jbb_files):
    _edit(jbb_files["behaviors"], ",Tax evasion,", ",Tax fraud,")
    with pytest.raises(JudgeDataError) as info:
        import_jbb(jbb_files["artifact"], jbb_files["behaviors"])
    assert (info.value.line, info.value.field) == (47, "jailbreaks[2].behavior")


def test_jbb_response_of_wrong_type_names_line_and_path(jbb_files):
    _edit(jbb_files["artifact"], "\"response\": \"I'm sorry, I can't help with that.\"", '"response": 7')
    with pytest.raises(JudgeDataError) as info:
        import_jbb(jbb_files["artifact"])
    assert (info.value.path, info.value.line, info.value.field) == (str(jbb_files["artifact"]), 50, "jailbreaks[2].response")


def test_jbb_artifact_without_model_is_an_error(jbb_files):
    _edit(jbb_files["artifact"], '"model": "vicuna-13b-v1.5",', "")
    with pytest.raises(JudgeDataError) as info:
        import_jbb(jbb_files["artifact"])
    assert (info.value.line, info.value.field, info.value.problem) == (2, "parameters", "missing field 'model'")


# ---------------------------------------------------------------- generic


def test_generic_jsonl_maps_columns_and_keeps_the_rest_in_extra(tmp_path):
    path = tmp_path / "gens.jsonl"
    rows = [{"id": 7, "prompt": "Write about [REDACTED: x]", "victim": "m", "method": "a", "cat": "illegal",
             "output": "No.", "score": 0.2},
            {"id": 8, "prompt": "Write about [REDACTED: y]", "victim": "m", "method": "a", "cat": "harmful",
             "output": "Sure: [REDACTED: y]", "score": 0.9}]
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    items = import_generic(path, {"key": "id", "behavior": "prompt", "victim_model": "victim", "attack": "method",
                                  "semantic_category": "cat", "generation": "output"})
    assert [(item.key, item.semantic_category, item.generation) for item in items] == [
        ("7", "illegal", "No."), ("8", "harmful", "Sure: [REDACTED: y]")]
    assert [item.extra["columns"] for item in items] == [{"score": 0.2}, {"score": 0.9}]


def test_generic_csv_without_a_key_counts_generations_per_behaviour(tmp_path):
    path = tmp_path / "gens.csv"
    path.write_text("bid,request,model,attack,response\nb1,Ask [REDACTED: q],m,a,one\n"
                    "b1,Ask [REDACTED: q],m,a,two\nb2,Ask [REDACTED: r],m,a,three\n")
    items = import_generic(path, {"behavior_id": "bid", "behavior": "request", "victim_model": "model",
                                  "attack": "attack", "generation": "response"})
    assert [(item.key, item.sample_idx) for item in items] == [("m/a/b1/0", 0), ("m/a/b1/1", 1), ("m/a/b2/0", 0)]


def test_generic_jsonl_row_without_a_mapped_column_names_its_line(tmp_path):
    path = tmp_path / "gens.jsonl"
    path.write_text('{"q": "Ask", "m": "x", "a": "y", "g": "no"}\n\n{"q": "Ask", "m": "x", "a": "y"}\n')
    with pytest.raises(JudgeDataError) as info:
        import_generic(path, {"behavior": "q", "victim_model": "m", "attack": "a", "generation": "g"})
    assert (info.value.line, info.value.field) == (3, "g")


def test_generic_value_of_wrong_type_names_the_column(tmp_path):
    path = tmp_path / "gens.jsonl"
    path.write_text('{"q": "Ask", "m": "x", "a": "y", "g": ["a", "list"]}\n')
    with pytest.raises(JudgeDataError) as info:
        import_generic(path, {"behavior": "q", "victim_model": "m", "attack": "a", "generation": "g"})
    assert (info.value.line, info.value.field, info.value.problem) == (1, "g", "must be a string, got an array")


def test_generic_mapping_to_an_unknown_field_is_refused(tmp_path):
    path = tmp_path / "gens.jsonl"
    path.write_text('{"q": "Ask", "m": "x", "a": "y", "g": "no"}\n')
    with pytest.raises(JudgeDataError) as info:
        import_generic(path, {"behavior": "q", "victim_model": "m", "attack": "a", "generation": "g", "colour": "q"})
    assert info.value.field == "colour"


def test_generic_repeated_key_names_both_lines(tmp_path):
    path = tmp_path / "gens.csv"
    path.write_text("k,q,m,a,g\nsame,Ask,x,y,one\nsame,Ask,x,y,two\n")
    with pytest.raises(JudgeDataError) as info:
        import_generic(path, {"key": "k", "behavior": "q", "victim_model": "m", "attack": "a", "generation": "g"})
    assert (info.value.line, info.value.field) == (3, "k")
    assert "also on line 2" in info.value.problem


# ---------------------------------------------------------------- locating values in JSON


def test_json_line_finds_nested_values_and_the_last_of_a_repeated_key():
    text = '{\n "a": [\n  1,\n  {"b": 2,\n   "b": 3}\n ],\n "c": "x"\n}'
    assert json_line(text, ("a", 1, "b")) == 5  # json.loads keeps the last "b"
    assert json_line(text, ("c",)) == 7
    assert json_line(text, ("a", 5)) is None


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's parser can go (RecursionError)


def test_a_deeply_nested_items_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "items.jsonl"
    good = '{"key": "k", "behavior_id": "b", "behavior": "x", "victim_model": "m", "attack": "a", "generation": "g"}'
    path.write_text(good + "\n" + '{"key": ' + DEEP + "}\n", encoding="utf-8")
    with pytest.raises(JudgeDataError) as refused:
        read_items(path)
    assert (refused.value.path, refused.value.line) == (str(path), 2)
    assert refused.value.problem == "the JSON nests deeper than 64 levels (HAI_MAX_JSON_DEPTH)"


def test_deep_nesting_in_generic_jsonl_and_json_files_is_a_data_error(tmp_path, harmbench_files):
    generic = tmp_path / "rows.jsonl"
    generic.write_text('{"b": "x"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(JudgeDataError) as refused:
        read_generic(generic, {"behavior": "b", "victim_model": "b", "attack": "b", "generation": "b"})
    assert refused.value.line == 2 and "nests deeper than 64 levels" in refused.value.problem
    completions = tmp_path / "deep.json"
    completions.write_text('{"poem_topic": ' + DEEP + "}", encoding="utf-8")
    with pytest.raises(JudgeDataError, match="nests deeper than 64 levels"):
        read_harmbench(harmbench_files["behaviors"], [("m", "a", completions)])


def test_values_from_a_file_are_quoted_short_in_errors(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("item_key,annotator,score\nk,ann,1\nk,ann," + "7" * 10_000 + "\n", encoding="utf-8")
    verdicts = tmp_path / "verdicts.csv"
    verdicts.write_text("item_key,judge,p_harmful,label\nk,j," + "x" * 10_000 + ",1\n", encoding="utf-8")
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"column_{i}_{'w' * 100}" for i in range(100)) + "\n1\n", encoding="utf-8")
    behaviors = tmp_path / "behaviors.csv"
    behaviors.write_text(",".join(HARMBENCH_COLUMNS) + "\n" + ("a,standard,c,,,id" + "i" * 10_000 + "\n") * 2,
                         encoding="utf-8")
    for call, line in ((lambda: read_labels(labels), 3), (lambda: read_verdicts(verdicts), 2),
                       (lambda: read_labels(wide), 1), (lambda: read_harmbench_behaviors(behaviors), 3)):
        with pytest.raises(JudgeDataError) as refused:
            call()
        assert refused.value.line == line
        assert len(refused.value.problem) < 250, refused.value.problem[:300]
