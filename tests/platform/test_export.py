"""Study export: CSV, JSONL, data dictionary and config with the code version."""

import csv
import io
import json
import zipfile

from engines.platform import runtime
from engines.platform.bots import run_bot
from engines.platform.export import export_study
from studies.demo_survey import PlayerBot


def test_export_holds_every_answer_with_dictionary_and_config(demo_study, tmp_path):
    run_bot(demo_study, PlayerBot("diligent"), "exp-1")
    run_bot(demo_study, PlayerBot("retries_comprehension"), "exp-2")
    export = export_study(demo_study)
    paths = {p.name for p in export.write(tmp_path)}
    assert paths == {"participants.csv", "responses.csv", "responses.jsonl", "attempts.csv",
                     "data_dictionary.csv", "study_config.json", "README.txt"}
    participants = list(csv.DictReader(io.StringIO(export.files["participants.csv"].decode())))
    assert [p["external_id"] for p in participants] == ["exp-1", "exp-2"]
    assert {p["status"] for p in participants} == {"completed"} and participants[0]["completion_code"] == "DEMO2026"
    responses = list(csv.DictReader(io.StringIO(export.files["responses.csv"].decode())))
    ages = [r["value"] for r in responses if r["field"] == "age"]
    assert ages == ["34", "34"]
    ratings = [r["value"] for r in responses if r["field"] == "helpfulness" and r["external_id"] == "exp-1"]
    assert ratings == ["3", "4", "5"]
    lines = [json.loads(line) for line in export.files["responses.jsonl"].decode().splitlines()]
    assert len(lines) == 2 and len(lines[0]["responses"]) == 8
    attempts = list(csv.DictReader(io.StringIO(export.files["attempts.csv"].decode())))
    assert [a["external_id"] for a in attempts] == ["exp-2"]
    dictionary = list(csv.DictReader(io.StringIO(export.files["data_dictionary.csv"].decode())))
    age = next(d for d in dictionary if d["field"] == "age")
    assert age["label"] == "Your age" and json.loads(age["constraints"]) == {"minimum": 18, "maximum": 99}
    config = json.loads(export.files["study_config.json"])
    assert config["protocol"]["conditions"] == ["plain", "explained"]
    assert config["provenance"]["code_version"] and config["constants"]["COMPLETION_CODE"] == "DEMO2026"
    names = zipfile.ZipFile(io.BytesIO(export.zip_bytes())).namelist()
    assert f"{demo_study}/responses.csv" in names


def test_export_of_unknown_study_is_a_clear_error(sqlite_db):
    import pytest

    with pytest.raises(runtime.UnknownStudy, match="no study called 'ghost'"):
        export_study("ghost")


def test_export_config_shows_the_codes_participants_received(sqlite_db):
    from engines.platform import study_admin

    study_admin.create_study("coded", "demo_survey", config={"completion_code": "PIL0T", "screened_out_code": "SCR33N"})
    run_bot("coded", PlayerBot("diligent"), "c-1")
    config = json.loads(export_study("coded").files["study_config.json"])
    assert config["completion_codes"] == {"completed": "PIL0T", "screened_out": "SCR33N"}
    assert config["constants"]["COMPLETION_CODE"] == "PIL0T"  # not the protocol's DEMO2026
    participants = list(csv.DictReader(io.StringIO(export_study("coded").files["participants.csv"].decode())))
    assert participants[0]["completion_code"] == "PIL0T"


def test_every_participant_row_says_whether_they_were_screened_out_and_why(demo_study):
    # One participant per way through the demo survey: done, screened out by the comprehension check
    # (wrong twice), screened out by one failed attention check (MAX_ATTENTION_FAILURES is 0).
    for case in ("diligent", "fails_comprehension", "inattentive"):
        run_bot(demo_study, PlayerBot(case), f"screen-{case}")
    for pseudonymise in (False, True):
        export = export_study(demo_study, pseudonymise=pseudonymise)
        participants = list(csv.DictReader(io.StringIO(export.files["participants.csv"].decode())))
        assert [(p["status"], p["screened_out"], p["screening_reason"], p["completion_code"]) for p in participants] == [
            ("completed", "False", "", "DEMO2026"),
            ("screened_out", "True", "failed the comprehension check of step Comprehension 2 times (wrong: task)",
             "DEMOSCREEN"),
            ("screened_out", "True", "1 failed attention check, more than the 0 allowed", "DEMOSCREEN")]
        lines = [json.loads(line) for line in export.files["responses.jsonl"].decode().splitlines()]
        assert [line["screened_out"] for line in lines] == [False, True, True]
        assert "screened_out (True/False) and screening_reason (why)" in export.files["README.txt"].decode()
