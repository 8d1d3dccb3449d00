"""Research -> Judge audit in AppTest: empty state, judge runs and audits submitted from the page, a finished
audit's tables and figures (numbers worked out by hand), and the role check."""

from __future__ import annotations

import json

import pytest

from engines.judge.items import Item, Verdict, write_items, write_verdicts
from engines.judge.jobs import AUDIT, RUN
from engines.platform import jobqueue
from engines.platform.settings import get_settings
from tests.apptest_driver import page_as

PAGE = "judge_audit"
# 1 model x 2 attacks x 2 behaviours; people call the gcg items harmful.
HUMAN = {"m1/direct/b1/0": 1, "m1/direct/b2/0": 2, "m1/gcg/b1/0": 5, "m1/gcg/b2/0": 4}


def _finished_audit() -> int:
    """An audit job over files: judge "always" calls all 4 items harmful, judge "half" only m1/gcg/b1."""
    folder = get_settings().data_dir / "datasets" / "judge" / "imp"
    folder.mkdir(parents=True)
    items = [Item(key=k, behavior_id=k.split("/")[2], behavior="behaviour", victim_model="m1", attack=k.split("/")[1],
                  generation="[REDACTED]") for k in HUMAN]
    write_items(items, folder / "items.jsonl")
    (folder / "labels.csv").write_text("item_key,annotator,score\n" + "".join(f"{k},ann1,{s}\n" for k, s in HUMAN.items()),
                                       encoding="utf-8")
    write_verdicts([(k, Verdict(judge="always", label=1)) for k in HUMAN]
                   + [(k, Verdict(judge="half", label=int(k == "m1/gcg/b1/0"))) for k in HUMAN], folder / "v.csv")
    job_id = jobqueue.submit_job(AUDIT, {"items": "datasets/judge/imp/items.jsonl", "labels": "datasets/judge/imp/labels.csv",
                                         "verdicts": ["datasets/judge/imp/v.csv"], "subsets": True})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    return job_id


def _charts(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def test_with_no_data_yet_the_page_says_what_to_do(sqlite_db):
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    infos = [i.value for i in at.info]
    assert infos == [
        "Only the synthetic demo set is offered so far: import your own files above, or create a labeling project "
        "under Admin → Labeling projects.",
        "No judge has run on this data yet: pick judges above and run them.",
        "No audit yet: choose the judge runs above and start one."]
    assert at.selectbox(key="judge-audit-source").value == "demo"


def test_a_finished_audit_shows_the_pooled_table_with_the_hand_numbers_and_the_figures(sqlite_db):
    job_id = _finished_audit()
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    pooled = next(d.value for d in at.dataframe if "accuracy" in d.value.columns and "tp" in d.value.columns
                  and "model" not in d.value.columns)
    # always: TP 2, FP 2 (accuracy 1/2); half: TP 1, TN 2, FN 1 (accuracy 3/4, precision 1, recall 1/2).
    assert pooled["judge"].tolist() == ["always", "half"]
    assert pooled[["tp", "fp", "tn", "fn"]].values.tolist() == [[2, 2, 0, 0], [1, 0, 2, 1]]
    assert pooled["accuracy"].tolist() == [0.5, 0.75]
    assert pooled["recall"].tolist() == [1.0, 0.5]
    titles = [chart["layout"]["title"]["text"] for chart in _charts(at)]
    assert "Accuracy of each judge, pooled over all items" in titles
    assert "Accuracy of each judge by attack — victim model m1" in titles
    assert any(t.startswith("ASR inflation of always") for t in titles)
    assert any(t.startswith("Annotator agreement") for t in titles)
    heatmap = next(c for c in _charts(at) if c["layout"]["title"]["text"].endswith("victim model m1"))
    assert heatmap["data"][0]["z"] == [[0.0, 1.0], [1.0, 0.5]]  # always: direct 0/2, gcg 2/2; half: 2/2, 1/2
    assert at.selectbox(key="judge-audit-shown").value == job_id
    subsets = [m.value for m in at.markdown if m.value.startswith("**JudgeStressTest-like**")]
    assert len(subsets) == 1 and [b.label for b in at.get("download_button")][-1].startswith("Download the JudgeStress")


def test_run_judges_queues_one_offline_judge_run_per_judge(sqlite_db):
    at = page_as(PAGE, "researcher")
    at.multiselect(key="judge-audit-judges").set_value(["gcg-strings", "minilm-logreg"])
    next(b for b in at.button if b.label == "Run judges").click().run()
    assert not at.exception, at.exception
    runs = jobqueue.list_jobs(kind=RUN)
    assert sorted((j.params["judge"], j.params["items"], j.params["backend"]) for j in runs) == [
        ("gcg-strings", "demo", None), ("minilm-logreg", "demo", None)]


def test_a_prompt_judge_without_a_backend_is_refused(sqlite_db):
    at = page_as(PAGE, "researcher")
    at.multiselect(key="judge-audit-judges").set_value(["pair"])
    next(b for b in at.button if b.label == "Run judges").click().run()
    assert [e.value for e in at.error] == [
        "pair needs a backend: a local model (transformers:PATH) or an OpenAI-compatible endpoint (openai:URL#MODEL)."]
    assert jobqueue.list_jobs(kind=RUN) == []


def test_start_the_audit_queues_an_audit_of_the_finished_runs_with_200_resamples(sqlite_db):
    run_id = jobqueue.submit_job(RUN, {"items": "demo", "judge": "gcg-strings", "use_cache": False})
    assert jobqueue.run_job(run_id) == "succeeded"
    at = page_as(PAGE, "researcher")
    assert at.multiselect(key="judge-audit-verdicts").value == [run_id]
    next(b for b in at.button if b.label == "Start the audit").click().run()
    (job,) = jobqueue.list_jobs(kind=AUDIT)
    assert (job.params["verdict_jobs"], job.params["bootstrap"], job.params["project"]) == ([run_id], 200, None)


def test_an_imported_data_set_is_offered_and_its_files_go_into_the_jobs(sqlite_db):
    from engines.judge import uploads
    from engines.platform.uploads import store_upload

    items = "".join(Item(key=k, behavior_id=k.split("/")[2], behavior="behaviour", victim_model="m1",
                         attack=k.split("/")[1], generation="[REDACTED]").model_dump_json() + "\n" for k in HUMAN)
    labels = "item_key,annotator,score\n" + "".join(f"{k},ann1,{s}\n" for k, s in HUMAN.items())
    verdicts = "item_key,judge,p_harmful,label\n" + "".join(f"{k},mine,,1\n" for k in HUMAN)
    data_set = uploads.save_upload(
        "my-run", "items", {"items": store_upload(items.encode(), label="items.jsonl", kind="jsonl", area="judge")},
        labels=store_upload(labels.encode(), label="labels.csv", kind="csv", area="judge"),
        verdicts=[store_upload(verdicts.encode(), label="verdicts.csv", kind="csv", area="judge")])
    at = page_as(PAGE, "researcher")
    assert not at.exception, at.exception
    source = at.selectbox(key="judge-audit-source")
    assert source.options == ["Imported files: my-run (my-run)",
                              "Synthetic demo set (redacted generations, simulated annotators)"]
    source.set_value("upload:my-run").run()
    assert any("4 items, 4 labels, 4 uploaded verdicts" in c.value for c in at.caption)
    at.multiselect(key="judge-audit-judges").set_value(["gcg-strings"])
    next(b for b in at.button if b.label == "Run judges").click().run()
    (run,) = jobqueue.list_jobs(kind=RUN)
    assert run.params["items"] == data_set.items == "datasets/judge/my-run/items.jsonl"
    next(b for b in at.button if b.label == "Start the audit").click().run()
    (job,) = jobqueue.list_jobs(kind=AUDIT)
    assert (job.params["items"], job.params["labels"], job.params["verdicts"]) == (
        data_set.items, "datasets/judge/my-run/original/labels.csv", ["datasets/judge/my-run/original/verdicts-1.csv"])


@pytest.mark.parametrize("role", ["annotator", None])
def test_people_other_than_researchers_are_refused(sqlite_db, role):
    at = page_as(PAGE, role)
    assert not at.exception
    expected = "You do not have access to this page." if role else "Please log in to see this page."
    assert expected in [e.value for e in at.error] + [w.value for w in at.warning]


def _items_text() -> str:
    return "".join(Item(key=k, behavior_id=k.split("/")[2], behavior="behaviour", victim_model="m1",
                        attack=k.split("/")[1], generation="[REDACTED]").model_dump_json() + "\n" for k in HUMAN)


def test_files_imported_on_the_page_are_stored_under_server_names_and_registered(sqlite_db, tmp_path):
    from engines.judge import uploads

    at = page_as(PAGE, "researcher")
    at.text_input(key="judge-upload-name").input("from-page")
    at.file_uploader(key="judge-upload-items").upload("../../../escaped-items.jsonl", _items_text().encode())
    labels = "item_key,annotator,score\n" + "".join(f"{k},ann1,{s}\n" for k, s in HUMAN.items())
    at.file_uploader(key="judge-upload-labels").upload("../escaped-labels.csv", labels.encode())
    next(b for b in at.button if b.label == "Import").click().run()
    assert not at.exception, at.exception
    assert [s.value for s in at.success][:1] == ["Imported 'from-page': 4 items, 4 labels, 0 verdicts."]
    (data_set,) = uploads.list_uploads()
    assert data_set.source_files == ["escaped-items.jsonl", "escaped-labels.csv"]
    assert list(tmp_path.parent.rglob("escaped-*")) == []  # no file under the browser's name, anywhere


def test_a_refused_labels_file_stops_the_import(sqlite_db):
    from engines.judge import uploads

    at = page_as(PAGE, "researcher")
    at.text_input(key="judge-upload-name").input("half")
    at.file_uploader(key="judge-upload-items").upload("items.jsonl", _items_text().encode())
    at.file_uploader(key="judge-upload-labels").upload("labels.csv", b"\x00\x01binary")
    next(b for b in at.button if b.label == "Import").click().run()
    assert "labels.csv: a binary file, not text." in [e.value for e in at.error]
    assert "Nothing was imported: a file was not accepted (the reason is shown beside it)." in [
        e.value for e in at.error]
    assert uploads.list_uploads() == []  # not imported without the labels it was given
