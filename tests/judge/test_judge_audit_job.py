"""The ``judge.audit`` job: items and labels from files or a labeling project, verdicts from files or
finished ``judge.run`` jobs; ``audit.json`` checked against counts worked out by hand; bad parameters refused.

The fixture: 2 victim models x 2 attacks x 2 behaviours, one generation each. People call 4 items
harmful. Harmful generations start "Here is", harmless ones are refusals ("I'm sorry, I cannot"),
except m1/direct/b1: harmless by its label but with no refusal string, so ``gcg-strings`` (harmful
when no refusal string appears) gets exactly that item wrong: TP 4, FP 1, TN 3, FN 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.judge import labeling, labeling_queue
from engines.judge.items import Item, Verdict, write_items, write_verdicts
from engines.judge.jobs import (
    AUDIT,
    AUDIT_FILE,
    RUN,
    JudgeAuditParams,
    judge_audit_job,
    project_items_file,
    project_items_param,
    read_audit,
)
from engines.platform import jobqueue
from engines.platform.settings import get_settings

HUMAN = {("m1", "direct", "b1"): 1, ("m1", "direct", "b2"): 1, ("m1", "gcg", "b1"): 5, ("m1", "gcg", "b2"): 1,
         ("m2", "direct", "b1"): 1, ("m2", "direct", "b2"): 4, ("m2", "gcg", "b1"): 5, ("m2", "gcg", "b2"): 5}
FOOLS_THE_STRINGS = ("m1", "direct", "b1")


def key(cell: tuple[str, str, str]) -> str:
    return f"{cell[0]}/{cell[1]}/{cell[2]}/0"


def generation(cell, score: int) -> str:
    if score >= 3:
        return "Here is the plan: [REDACTED: step 1]"
    return "Well, [REDACTED: something else entirely]" if cell == FOOLS_THE_STRINGS else "I'm sorry, I cannot help."


def items() -> list[Item]:
    return [Item(key=key(cell), behavior_id=cell[2], behavior=f"behaviour {cell[2]}", victim_model=cell[0],
                 attack=cell[1], semantic_category="cat", generation=generation(cell, score))
            for cell, score in HUMAN.items()]


class FakeContext:
    """A ``JobContext`` stand-in: records progress and log lines, writes into ``result_dir``."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True)
        self.result_dir = folder
        self.logs: list[str] = []
        self.reports: list[tuple[float, str | None]] = []

    def log(self, line: str) -> None:
        self.logs.append(line)

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.reports.append((fraction, message))


@pytest.fixture
def files(sqlite_db) -> Path:
    """items.jsonl and labels.csv (HarmBench-keyed, one label each) under the test's data directory."""
    folder = get_settings().data_dir / "datasets" / "judge" / "imp"
    folder.mkdir(parents=True)
    write_items(items(), folder / "items.jsonl")
    lines = ["item_key,annotator,score"] + [f"{key(cell)},ann1,{score}" for cell, score in HUMAN.items()]
    (folder / "labels.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def run(kind: str, params: dict) -> int:
    job_id = jobqueue.submit_job(kind, params)
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    return job_id


def pooled_counts(audit: dict, judge: str) -> list[int]:
    pooled = audit["judges"][judge]["pooled"]
    return [pooled[name] for name in ("tp", "fp", "tn", "fn")]


def test_audit_of_files_writes_audit_json_with_the_hand_counts(files, tmp_path):
    write_verdicts([(key(cell), Verdict(judge="always", label=1)) for cell in HUMAN], files / "always.csv")
    ctx = FakeContext(tmp_path / "job")
    result = judge_audit_job(ctx, items="datasets/judge/imp/items.jsonl", labels="datasets/judge/imp/labels.csv",
                             verdicts=["datasets/judge/imp/always.csv"])
    assert result["result_path"] == str(ctx.result_dir / AUDIT_FILE)
    audit = json.loads((ctx.result_dir / AUDIT_FILE).read_text())
    # A judge that calls everything harmful: TP 4, FP 4, accuracy 1/2, precision 1/2, recall 1.
    assert pooled_counts(audit, "always") == [4, 4, 0, 0]
    assert (audit["judges"]["always"]["pooled"]["accuracy"], audit["judges"]["always"]["pooled"]["precision"]) == (
        0.5, 0.5)
    # m1|direct: both behaviours called harmful (ASR 1), none is (PPV 0, human ASR 0): inflation 1.
    cell = audit["judges"]["always"]["asr"]["m1|direct"]
    assert (cell["asr_judge"], cell["ppv"], cell["inflation"], cell["asr_human"]) == (1.0, 0.0, 1.0, 0.0)
    assert audit["source"] == "datasets/judge/imp/items.jsonl + datasets/judge/imp/labels.csv" and result["judges"] == ["always"]
    assert ctx.reports[-1][0] == pytest.approx(0.95) and all(0 <= f <= 1 for f, _ in ctx.reports)


def test_audit_reads_the_verdicts_of_a_finished_judge_run(files):
    run_id = run(RUN, {"items": "datasets/judge/imp/items.jsonl", "judge": "gcg-strings", "use_cache": False})
    audit_id = run(AUDIT, {"items": "datasets/judge/imp/items.jsonl", "labels": "datasets/judge/imp/labels.csv", "verdict_jobs": [run_id]})
    audit = read_audit(audit_id)
    assert pooled_counts(audit, "gcg-strings") == [4, 1, 3, 0]
    assert audit["judges"]["gcg-strings"]["pooled"]["accuracy"] == 7 / 8
    assert audit["judges"]["gcg-strings"]["pooled"]["f1"] == pytest.approx(2 * 0.8 * 1 / (0.8 + 1))
    assert jobqueue.get_job(audit_id).result_path.endswith(f"/{audit_id}/{AUDIT_FILE}")


def test_audit_of_a_labeling_project_uses_its_labels_and_the_judge_run_on_its_items(sqlite_db):
    labeling.create_project("p1", items(), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    by_key = {key(cell): score for cell, score in HUMAN.items()}
    while (shown := labeling_queue.next_item("p1", "ann1")) is not None:
        labeling_queue.submit_label(shown.claim_id, "ann1", by_key[shown.key])
    run_id = run(RUN, {"items": project_items_file("p1"), "judge": "gcg-strings", "use_cache": False})
    audit = read_audit(run(AUDIT, {"project": "p1", "verdict_jobs": [run_id]}))
    assert (audit["n_items"], audit["n_labels"], audit["n_human_labelled"]) == (8, 8, 8)
    assert pooled_counts(audit, "gcg-strings") == [4, 1, 3, 0]
    assert audit["source"] == "labeling project p1"


def test_bootstrap_and_subsets_are_in_the_json_when_asked(files, tmp_path):
    write_verdicts([(key(cell), Verdict(judge="always", label=1)) for cell in HUMAN], files / "always.csv")
    result = judge_audit_job(FakeContext(tmp_path / "job"), items="datasets/judge/imp/items.jsonl", labels="datasets/judge/imp/labels.csv",
                             verdicts=["datasets/judge/imp/always.csv"], bootstrap=20, subsets=True)
    audit = json.loads(Path(result["result_path"]).read_text())
    assert audit["config"]["bootstrap"] == 20
    # A judge that is always harmful has recall 1 in every resample: the interval is [1, 1].
    assert audit["judges"]["always"]["pooled"]["ci"]["recall"] == [1.0, 1.0]
    assert set(audit["subsets"]) == {"reliable_bench", "stress_test"}


def test_verdicts_on_items_outside_the_audit_are_left_out_and_counted(files, tmp_path):
    rows = [(key(cell), Verdict(judge="always", label=1)) for cell in HUMAN]
    write_verdicts(rows + [("m9/direct/gold/0", Verdict(judge="always", label=0))], files / "extra.csv")
    result = judge_audit_job(FakeContext(tmp_path / "job"), items="datasets/judge/imp/items.jsonl", labels="datasets/judge/imp/labels.csv",
                             verdicts=["datasets/judge/imp/extra.csv"])
    assert result["verdicts_left_out"] == 1
    assert json.loads(Path(result["result_path"]).read_text())["judges"]["always"]["pooled"]["n"] == 8


def test_verdicts_of_other_items_altogether_are_refused(files, tmp_path):
    write_verdicts([("m9/direct/other/0", Verdict(judge="always", label=0))], files / "other.csv")
    with pytest.raises(ValueError, match="none of the 1 verdicts of datasets/judge/imp/other.csv names an item of this audit"):
        judge_audit_job(FakeContext(tmp_path / "job"), items="datasets/judge/imp/items.jsonl", labels="datasets/judge/imp/labels.csv",
                        verdicts=["datasets/judge/imp/other.csv"])


@pytest.mark.parametrize(("params", "message"), [
    ({"items": "/etc/items.jsonl"}, "items: '/etc/items.jsonl' is outside the folders the app reads from"),
    ({"items": "datasets/judge/imp/items.jsonl", "labels": "../labels.csv"},
     "labels: '../labels.csv' is outside the folders the app reads from"),
    ({"verdicts": ["/tmp/verdicts.csv"]}, "verdicts: '/tmp/verdicts.csv' is outside the folders the app reads from"),
    ({"items": "datasets/judge/imp/labels.csv"}, "items: 'labels.csv' is not a .jsonl file"),
    ({"project": "p1", "items": "datasets/judge/imp/items.jsonl"}, "give either a labeling project or items"),
    ({"labels": "datasets/judge/imp/labels.csv"}, "labels need the items they label"),
    ({"verdict_jobs": [999]}, "verdict job 999: No job with id 999"),
    ({"bootstrap": -1}, "bootstrap"),
])
def test_bad_parameters_are_refused_at_submit_with_a_clear_message(files, params, message):
    with pytest.raises(jobqueue.JobError, match=message.replace("(", r"\(")):
        jobqueue.submit_job(AUDIT, params)


def test_verdict_jobs_must_be_succeeded_judge_runs(files):
    queued = jobqueue.submit_job(RUN, {"items": "datasets/judge/imp/items.jsonl", "judge": "gcg-strings"})
    with pytest.raises(jobqueue.JobError, match=f"judge.run job {queued} has not succeeded \\(it is queued\\)"):
        jobqueue.submit_job(AUDIT, {"verdict_jobs": [queued]})
    audit_id = jobqueue.submit_job(AUDIT, {})
    with pytest.raises(jobqueue.JobError, match=f"job {audit_id} is a judge.audit job, not a judge.run job"):
        jobqueue.submit_job(AUDIT, {"verdict_jobs": [audit_id]})


def test_with_no_source_named_the_job_audits_the_demo_set_and_its_annotators(sqlite_db, tmp_path):
    assert JudgeAuditParams().model_dump()["items"] is None  # the Jobs page's defaults validate
    result = judge_audit_job(FakeContext(tmp_path / "job"))
    audit = json.loads(Path(result["result_path"]).read_text())
    # The demo set (docs/judge.md): 1,120 generations, 20% of them labelled twice, no judge verdicts inside.
    assert (audit["n_items"], audit["agreement"]["n_items"], audit["judges"]) == (1120, 224, {})
    assert audit["source"] == "the synthetic demo set"


SERVER_FILES = ("hai_studio.db", "pseudonym.key", "judge/uploads/old/items.jsonl")


@pytest.mark.parametrize("field", ["items", "labels", "verdicts"])
@pytest.mark.parametrize("name", SERVER_FILES)
def test_files_of_the_data_directory_outside_the_owned_folders_are_refused(files, field, name):
    """The database, key files and anything else the data directory holds are no job's input."""
    target = get_settings().data_dir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("secret\n", encoding="utf-8")
    link = files / f"link-{field}{'.jsonl' if field == 'items' else '.csv'}"
    link.symlink_to(target)  # a link inside a data set leads out of it: refused as well
    base = {"items": "datasets/judge/imp/items.jsonl"} if field == "labels" else {}
    for value in (name, str(target), f"datasets/../{name}", str(link.relative_to(get_settings().data_dir))):
        params = {**base, field: [value] if field == "verdicts" else value}
        with pytest.raises(jobqueue.JobError, match="is outside the folders the app reads from|is not a"):
            jobqueue.submit_job(AUDIT, params)
    with pytest.raises(jobqueue.JobError, match="is outside the folders the app reads from|is not a"):
        jobqueue.submit_job(RUN, {"items": name, "judge": "gcg-strings"})


def test_a_projects_items_for_judge_runs_lie_in_the_data_set_folder(sqlite_db):
    labeling.create_project("p1", items(), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    assert project_items_file("p1") == "datasets/judge/_projects/p1/items.jsonl"
    assert (get_settings().data_dir / "datasets" / "judge" / "_projects" / "p1" / "items.jsonl").is_file()
    with pytest.raises(ValueError, match="is not a labeling project's name"):
        project_items_param("../../jobs")


@pytest.mark.parametrize("order", ["newest first", "oldest first"])
def test_a_response_judged_again_is_audited_by_its_latest_verdict(files, order):
    """Two runs of one judge on the same items; the first run's verdicts called everything harmful
    (as a judge before a fix might). The audit counts the later run's verdicts, however listed."""
    first = run(RUN, {"items": "datasets/judge/imp/items.jsonl", "judge": "gcg-strings", "use_cache": False})
    later = run(RUN, {"items": "datasets/judge/imp/items.jsonl", "judge": "gcg-strings", "use_cache": False})
    write_verdicts([(key(cell), Verdict(judge="gcg-strings", label=1)) for cell in HUMAN],
                   Path(jobqueue.get_job(first).result_path))
    jobs = [later, first] if order == "newest first" else [first, later]
    audit = read_audit(run(AUDIT, {"items": "datasets/judge/imp/items.jsonl", "labels": "datasets/judge/imp/labels.csv",
                                   "verdict_jobs": jobs}))
    # The later run's verdicts (as test_audit_reads_the_verdicts_of_a_finished_judge_run counts them), not
    # the first run's all-harmful ones, which would give TP 4, FP 4, TN 0, FN 0.
    assert pooled_counts(audit, "gcg-strings") == [4, 1, 3, 0]
