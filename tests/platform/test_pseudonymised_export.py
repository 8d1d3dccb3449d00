"""Pseudonymised study export: participants' panel ids become keyed hashes in every file.

The expected pseudonym is computed here from the documented formula, ``"anon-" +
HMAC-SHA256(key, id)`` truncated to 16 hex digits, with Python's ``hmac`` and a key fixed by the test.
"""

import csv
import hashlib
import hmac
import io
import json
import os
import stat

import pytest
from sqlmodel import select

from engines.platform import runtime, settings
from engines.platform.bots import run_bot
from engines.platform.db import write_transaction
from engines.platform.export import export_study, pseudonymise_files
from engines.platform.models import Participant, StepResponse
from engines.platform.pseudonyms import Pseudonymiser, PseudonymKeyError, load_key
from studies.demo_survey import PlayerBot

KEY = "k" * 40
# Ids as the panels issue them: Prolific (24 hex digits), MTurk (worker, assignment, HIT).
PROLIFIC = {"PROLIFIC_PID": "5f8a0c3b9e1d2a4b6c7d8e9f", "STUDY_ID": "65a1b2c3d4e5f60718293a4b",
            "SESSION_ID": "sess7Hq2Lm9Xz"}
MTURK = {"workerId": "A1B2C3D4E5F6G7", "assignmentId": "3X4Y5Z6A7B8C9D0E1F2G3H4I5J6K7L", "hitId": "3HIT0NE2345678",
         "turkSubmitTo": "https://workersandbox.mturk.com"}
RAW_IDS = [*PROLIFIC.values(), *(v for k, v in MTURK.items() if k != "turkSubmitTo")]


def by_hand(raw: str, key: str = KEY) -> str:
    return "anon-" + hmac.new(key.encode(), raw.encode(), hashlib.sha256).hexdigest()[:16]


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("HAI_PSEUDONYM_KEY", KEY)
    settings.reset_settings()
    return KEY


@pytest.fixture
def panel_study(demo_study, key):
    """A Prolific participant who typed their id into the comment box, and an MTurk participant who retried."""
    runtime.enter(demo_study, PROLIFIC)
    run_bot(demo_study, PlayerBot("diligent"), PROLIFIC["PROLIFIC_PID"])  # same participant, by their id
    runtime.enter(demo_study, MTURK)
    run_bot(demo_study, PlayerBot("retries_comprehension"), MTURK["workerId"])
    with write_transaction() as session:
        participant = session.exec(select(Participant).where(
            Participant.external_id == PROLIFIC["PROLIFIC_PID"])).one()
        survey = session.exec(select(StepResponse).where(StepResponse.participant_id == participant.id,
                                                         StepResponse.step_name == "Survey")).one()
        survey.data = {**survey.data, "comments": f"My Prolific ID is {PROLIFIC['PROLIFIC_PID']}."}
        session.add(survey)
    return demo_study


def _rows(export, name):
    return list(csv.DictReader(io.StringIO(export.files[name].decode(), newline="")))


def test_no_raw_participant_id_in_any_file(panel_study):
    export = export_study(panel_study, pseudonymise=True)
    found = {(name, raw) for name, content in export.files.items() for raw in RAW_IDS if raw.encode() in content}
    assert found == set()


def test_the_plain_export_still_holds_the_raw_ids(panel_study):
    """The check above can fail: without the option the same ids are there."""
    participants = _rows(export_study(panel_study), "participants.csv")
    assert [p["external_id"] for p in participants] == [PROLIFIC["PROLIFIC_PID"], MTURK["workerId"]]


def test_external_id_is_the_keyed_hash_in_every_file(panel_study):
    export = export_study(panel_study, pseudonymise=True)
    pid = by_hand(PROLIFIC["PROLIFIC_PID"])
    worker = by_hand(MTURK["workerId"])
    assert [p["external_id"] for p in _rows(export, "participants.csv")] == [pid, worker]
    assert {r["external_id"] for r in _rows(export, "responses.csv")} == {pid, worker}
    assert {a["external_id"] for a in _rows(export, "attempts.csv")} == {worker}
    lines = [json.loads(line) for line in export.files["responses.jsonl"].decode().splitlines()]
    assert [line["external_id"] for line in lines] == [pid, worker]


def test_panel_ids_are_hashed_and_the_mturk_host_kept(panel_study):
    participants = _rows(export_study(panel_study, pseudonymise=True), "participants.csv")
    # The panel's own id is external_id; panel_params holds the link's other parameters.
    assert json.loads(participants[0]["panel_params"]) == {
        "STUDY_ID": by_hand(PROLIFIC["STUDY_ID"]), "SESSION_ID": by_hand(PROLIFIC["SESSION_ID"])}
    assert json.loads(participants[1]["panel_params"]) == {
        "assignmentId": by_hand(MTURK["assignmentId"]), "hitId": by_hand(MTURK["hitId"]),
        "turkSubmitTo": "https://workersandbox.mturk.com"}


def test_an_id_typed_into_an_answer_becomes_the_pseudonym(panel_study):
    responses = _rows(export_study(panel_study, pseudonymise=True), "responses.csv")
    (comment,) = [r["value"] for r in responses if r["field"] == "comments" and r["external_id"] == by_hand(
        PROLIFIC["PROLIFIC_PID"])]
    assert comment == f"My Prolific ID is {by_hand(PROLIFIC['PROLIFIC_PID'])}."


def test_answers_other_than_ids_are_unchanged(panel_study):
    plain = _rows(export_study(panel_study), "responses.csv")
    hidden = _rows(export_study(panel_study, pseudonymise=True), "responses.csv")
    assert [(r["field"], r["value"]) for r in hidden if r["field"] != "comments"] == [
        (r["field"], r["value"]) for r in plain if r["field"] != "comments"]


def test_pseudonyms_are_the_same_in_a_later_export(panel_study):
    first = _rows(export_study(panel_study, pseudonymise=True), "participants.csv")
    runtime.enter(panel_study, {"pid": "late-comer-1"})
    later = _rows(export_study(panel_study, pseudonymise=True), "participants.csv")
    assert [p["external_id"] for p in later[:2]] == [p["external_id"] for p in first]


def test_another_installation_gets_other_pseudonyms(panel_study, monkeypatch):
    monkeypatch.setenv("HAI_PSEUDONYM_KEY", "another-installation-key-0123456789")
    settings.reset_settings()
    participants = _rows(export_study(panel_study, pseudonymise=True), "participants.csv")
    assert participants[0]["external_id"] == by_hand(PROLIFIC["PROLIFIC_PID"], "another-installation-key-0123456789")
    assert participants[0]["external_id"] != by_hand(PROLIFIC["PROLIFIC_PID"])


def test_export_says_it_is_pseudonymised(panel_study):
    export = export_study(panel_study, pseudonymise=True)
    provenance = json.loads(export.files["study_config.json"])["provenance"]
    assert provenance["config"]["pseudonymised"] is True
    assert export.zip_name == "demo-export-pseudonymised.zip"
    assert "Pseudonymised export:" in export.files["README.txt"].decode()


def test_ids_in_files_a_study_adds_are_replaced():
    """A study's own files (``export_files``): an ``external_id`` column of any length, and longer ids anywhere."""
    pseudonym = Pseudonymiser(KEY.encode())
    added = {"extra.csv": b"external_id,score\r\np-7,-0.5\r\n",
             "audit.json": b'{"where": "participant 3 (A1B2C3D4E5F6G7), interaction 2"}'}
    out = pseudonymise_files(added, {"p-7", "A1B2C3D4E5F6G7"}, pseudonym)
    assert out["extra.csv"] == f"external_id,score\r\n{by_hand('p-7')},-0.5\r\n".encode()
    out_json = pseudonym.scrub(out["audit.json"], {"p-7", "A1B2C3D4E5F6G7"})
    assert out_json == f'{{"where": "participant 3 ({by_hand("A1B2C3D4E5F6G7")}), interaction 2"}}'.encode()


def test_an_id_inside_a_longer_word_is_left_alone():
    pseudonym = Pseudonymiser(KEY.encode())
    assert pseudonym.scrub(b"A1B2C3D4E5F6G7X and xA1B2C3D4E5F6G7", {"A1B2C3D4E5F6G7"}) == (
        b"A1B2C3D4E5F6G7X and xA1B2C3D4E5F6G7")


def test_cli_writes_a_pseudonymised_export(panel_study, tmp_path, capsys):
    from engines.platform.__main__ import main

    main(["export", panel_study, "--out", str(tmp_path / "shared"), "--pseudonymise"])
    written = {p.name: p.read_bytes() for p in (tmp_path / "shared").iterdir()}
    assert "participants.csv" in written and "README.txt" in written
    assert [raw for raw in RAW_IDS if any(raw.encode() in content for content in written.values())] == []


# --- the key ---------------------------------------------------------------------------------------


@pytest.fixture
def configured_key(monkeypatch):
    """Set HAI_PSEUDONYM_KEY for one test ("" hides a developer's own key or .env)."""
    def configure(value: str) -> None:
        monkeypatch.setenv("HAI_PSEUDONYM_KEY", value)
        settings.reset_settings()

    yield configure
    settings.reset_settings()


@pytest.fixture
def no_configured_key(configured_key):
    configured_key("")


def test_generated_key_file_is_readable_by_its_owner_only(no_configured_key, tmp_path):
    load_key(tmp_path)
    assert stat.S_IMODE(os.stat(tmp_path / "pseudonym.key").st_mode) == 0o600


def test_generated_key_is_reused_by_later_exports(no_configured_key, tmp_path):
    assert load_key(tmp_path) == load_key(tmp_path)


def test_a_key_file_others_can_read_is_refused(no_configured_key, tmp_path):
    load_key(tmp_path)
    os.chmod(tmp_path / "pseudonym.key", 0o644)
    with pytest.raises(PseudonymKeyError, match="chmod 600"):
        load_key(tmp_path)


def test_a_short_configured_key_is_refused(configured_key):
    configured_key("short")
    with pytest.raises(PseudonymKeyError, match="HAI_PSEUDONYM_KEY has 5 characters; use at least 32"):
        load_key()


def test_collaboration_study_files_hold_no_raw_id(sqlite_db, key):
    """The collaboration study adds interactions.csv, controller_updates.csv and controller_streams.json."""
    from engines.platform import study_admin
    from engines.platform.bots import run_protocol_bots
    from engines.platform.db import read_session

    study_admin.create_study("c", "collab_shapes", config={"constants": {"INTERACTIONS": 2}})
    run_protocol_bots("collab_shapes", participants=2, slug="c")
    with read_session() as session:
        raw = [p.external_id for p in session.exec(select(Participant).order_by(Participant.id)).all()]
    export = export_study("c", pseudonymise=True)
    assert {"interactions.csv", "controller_updates.csv", "controller_streams.json"} <= set(export.files)
    assert {(name, r) for name, content in export.files.items() for r in raw if r.encode() in content} == set()
    assert {i["external_id"] for i in _rows(export, "interactions.csv")} == {by_hand(r) for r in raw}
