"""Data sets imported on the audit page: uploads stored by the platform (``store_upload``) are checked
with the command line's readers, errors name each file by the browser's name (never a server path),
nothing is registered from a bad upload, a registered set lies under ``datasets/judge/<name>/`` with
server-chosen file names, and an audit job reads what was stored (numbers worked out by hand)."""

from __future__ import annotations

import stat

import pytest

from engines.judge import uploads
from engines.judge.items import JudgeDataError
from engines.judge.jobs import AUDIT, read_audit
from engines.judge.uploads import UploadError
from engines.platform import jobqueue
from engines.platform.settings import get_settings
from engines.platform.uploads import StoredUpload, store_upload
from tests.judge.conftest import HARMBENCH_BEHAVIORS_CSV, HARMBENCH_COMPLETIONS, JBB_ARTIFACT

KEYS = ["m1/gcg/poem_topic/0", "m1/gcg/poem_topic/1", "m1/gcg/passage_summary/0"]


def _upload(label: str, text: str, kind: str) -> StoredUpload:
    return store_upload(text.encode(), label=label, kind=kind, area="judge")


def _harmbench(completions: str = HARMBENCH_COMPLETIONS, behaviors_label: str = "behaviors.csv") -> dict:
    return {"behaviors": _upload(behaviors_label, HARMBENCH_BEHAVIORS_CSV, "csv"),
            "completions": _upload("completions.json", completions, "json")}


def _csv(name: str, header: str, rows: list[str]) -> StoredUpload:
    return _upload(name, header + "\n" + "\n".join(rows) + "\n", "csv")


def _stored_names() -> list[str]:
    root = get_settings().data_dir / "datasets" / "judge"
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_a_harmbench_upload_with_labels_and_verdicts_is_audited_as_stored(sqlite_db):
    # People: the refusal (poem 0) is not harmful, the "Sure" poem (1) and the summary are.
    labels = _csv("labels.csv", "item_key,annotator,score", [f"{KEYS[0]},ann1,1", f"{KEYS[1]},ann1,4",
                                                              f"{KEYS[2]},ann1,5"])
    # The judge calls only poem 1 harmful: TP 1, FN 1, TN 1 -> accuracy 2/3, recall 1/2, precision 1.
    verdicts = _csv("verdicts.csv", "item_key,judge,p_harmful,label",
                    [f"{KEYS[0]},j,0.1,0", f"{KEYS[1]},j,0.9,1", f"{KEYS[2]},j,0.2,0"])
    data_set = uploads.save_upload("hb-run", "harmbench", _harmbench(), labels=labels, verdicts=[verdicts],
                                   model="m1", attack="gcg", title="HarmBench GCG run")
    assert (data_set.n_items, data_set.n_labels, data_set.n_verdicts) == (3, 3, 3)
    assert data_set.items == "datasets/judge/hb-run/items.jsonl"
    assert (data_set.labels, data_set.verdicts) == ("datasets/judge/hb-run/original/labels.csv",
                                                    ["datasets/judge/hb-run/original/verdicts-1.csv"])
    assert [d.name for d in uploads.list_uploads()] == ["hb-run"]
    assert uploads.get_upload("hb-run").title == "HarmBench GCG run"
    folder = get_settings().data_dir / "datasets" / "judge" / "hb-run"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700  # generations may quote harmful text
    assert sorted(p.name for p in (folder / "original").iterdir()) == [
        "behaviors.csv", "completions.json", "labels.csv", "verdicts-1.csv"]
    assert list((get_settings().data_dir / "uploads" / "judge").glob("*.*")) == []  # the uploads were moved in

    job_id = jobqueue.submit_job(AUDIT, {"items": data_set.items, "labels": data_set.labels,
                                         "verdicts": data_set.verdicts})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    pooled = read_audit(job_id)["judges"]["j"]["pooled"]
    assert (pooled["tp"], pooled["fp"], pooled["tn"], pooled["fn"]) == (1, 0, 1, 1)
    assert pooled["accuracy"] == pytest.approx(2 / 3)
    assert "hb-run" in jobqueue.get_job(job_id).result["source"]


def test_a_broken_file_is_named_with_its_line_and_nothing_is_stored(sqlite_db):
    broken = HARMBENCH_COMPLETIONS.replace('"Sure, here is the poem: [REDACTED: verse 1]"', "42")
    with pytest.raises(JudgeDataError) as info:
        uploads.save_upload("bad", "harmbench", _harmbench(broken), model="m1", attack="gcg")
    # The user's file name, the line of the bad value and the JSON path, as the command line says it.
    assert str(info.value) == ("completions.json, line 9: poem_topic[1].generation: "
                               "must be a string, got a number")
    assert _stored_names() == []  # no set, and no temporary folder left behind


def test_labels_of_items_not_uploaded_are_refused_with_the_key(sqlite_db):
    labels = _csv("my labels.csv", "item_key,annotator,score", [f"{KEYS[0]},ann1,1", "m1/gcg/unknown/0,ann1,3"])
    with pytest.raises(JudgeDataError) as info:
        uploads.save_upload("bad-labels", "harmbench", _harmbench(), labels=labels, model="m1", attack="gcg")
    assert info.value.path == "my labels.csv" and info.value.field == "item_key"
    assert "'m1/gcg/unknown/0'" in info.value.problem
    assert _stored_names() == []


def test_a_label_out_of_scale_names_its_line(sqlite_db):
    labels = _csv("labels.csv", "item_key,annotator,score", [f"{KEYS[0]},ann1,1", f"{KEYS[1]},ann1,7"])
    with pytest.raises(JudgeDataError) as info:
        uploads.save_upload("bad-score", "harmbench", _harmbench(), labels=labels, model="m1", attack="gcg")
    assert (info.value.path, info.value.line, info.value.field) == ("labels.csv", 3, "score")


def test_verdicts_on_other_items_only_are_refused(sqlite_db):
    verdicts = _csv("verdicts.csv", "item_key,judge,p_harmful,label", ["x/y/z/0,j,0.5,1"])
    with pytest.raises(JudgeDataError, match="none of its verdicts names an uploaded item"):
        uploads.save_upload("other", "harmbench", _harmbench(), verdicts=[verdicts], model="m1", attack="gcg")


def test_names_are_checked_and_never_reused(sqlite_db):
    with pytest.raises(UploadError, match="lowercase letters"):
        uploads.save_upload("Bad Name", "harmbench", _harmbench(), model="m1", attack="gcg")
    uploads.save_upload("once", "harmbench", _harmbench(), model="m1", attack="gcg")
    with pytest.raises(UploadError, match="already an uploaded data set called 'once'"):
        uploads.save_upload("once", "harmbench", _harmbench(), model="m1", attack="gcg")
    assert _stored_names() == ["once"]


def test_missing_files_and_run_names_say_what_to_upload(sqlite_db):
    with pytest.raises(UploadError, match="Choose the completions JSON"):
        uploads.save_upload("x", "harmbench", {"behaviors": _harmbench()["behaviors"]}, model="m1", attack="gcg")
    with pytest.raises(UploadError, match="Name the victim model and the attack"):
        uploads.save_upload("x", "harmbench", _harmbench())
    with pytest.raises(UploadError, match="Choose the items.jsonl"):
        uploads.save_upload("x", "items", {"items": None})
    with pytest.raises(UploadError, match="^behaviors.csv: the items.jsonl must be a JSON lines file.$"):
        uploads.save_upload("x", "items", {"items": _harmbench()["behaviors"]})
    assert _stored_names() == []


def test_a_jbb_artifact_without_the_behaviours_csv_keeps_only_submitted_entries(sqlite_db):
    data_set = uploads.save_upload("jbb", "jbb", {"artifact": _upload("artifact.json", JBB_ARTIFACT, "json")})
    # The fixture's artifact has three entries, one of them not submitted.
    assert data_set.n_items == 2 and data_set.labels is None and data_set.verdicts == []


def test_the_browsers_file_names_are_labels_only_never_paths(sqlite_db, tmp_path):
    hostile = "../../../../escaped-behaviors.csv"
    data_set = uploads.save_upload("named", "harmbench", _harmbench(behaviors_label=hostile), model="m1", attack="gcg")
    assert data_set.source_files == ["escaped-behaviors.csv", "completions.json"]  # the last part, as a label
    assert list(tmp_path.rglob("escaped-behaviors.csv")) == []  # written nowhere under that name
    stored = get_settings().data_dir / "datasets" / "judge" / "named"
    assert sorted(p.name for p in (stored / "original").iterdir()) == ["behaviors.csv", "completions.json"]


def test_an_error_names_the_file_by_its_label_never_by_the_stored_path(sqlite_db):
    broken = HARMBENCH_COMPLETIONS.replace('"poem_topic": [', '"not_a_behaviour": [')
    files = _harmbench(broken, behaviors_label="my behaviours.csv")
    with pytest.raises(JudgeDataError) as info:
        uploads.save_upload("bad", "harmbench", files, model="m1", attack="gcg")
    message = str(info.value)
    assert message.startswith("completions.json, line 2: not_a_behaviour: BehaviorID 'not_a_behaviour' is "
                              "not in my behaviours.csv"), message
    assert str(get_settings().data_dir) not in message
    assert files["behaviors"].path.is_file()  # a refused import keeps the uploads: the form can be sent again


def test_a_value_quoted_in_an_error_is_cut_short(sqlite_db):
    labels = _csv("labels.csv", "item_key,annotator,score", [f"{KEYS[0]},ann1,{'9' * 10_000}"])
    with pytest.raises(JudgeDataError) as info:
        uploads.save_upload("long", "harmbench", _harmbench(), labels=labels, model="m1", attack="gcg")
    assert (info.value.line, info.value.field) == (2, "score")
    assert len(str(info.value)) < 250  # the 10,000 digits are quoted as at most 120 characters


def test_a_set_whose_manifest_points_outside_the_data_set_folder_is_not_offered(sqlite_db):
    import json

    uploads.save_upload("fine", "jbb", {"artifact": _upload("artifact.json", JBB_ARTIFACT, "json")})
    uploads.save_upload("tampered", "jbb", {"artifact": _upload("artifact.json", JBB_ARTIFACT, "json")})
    manifest = get_settings().data_dir / "datasets" / "judge" / "tampered" / uploads.MANIFEST
    data = json.loads(manifest.read_text()) | {"items": "../hai.db"}
    manifest.write_text(json.dumps(data))
    assert [d.name for d in uploads.list_uploads()] == ["fine"]
