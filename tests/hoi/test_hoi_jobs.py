"""The HOI-Edit jobs in the queue, on a copy of the shipped demo: HOI-Eval of a method's edits
(records the page reads), SCPE with the offline roles then HOI-Eval of its frames, and parameters
refused at submission with what is wrong."""

from __future__ import annotations

import json
import shutil

import pytest

from engines.hoi import browse
from engines.hoi.demo import DEMO_DIR
from engines.hoi.jobs import EVALUATE, SCPE, hoi_jobs, jobs_frame
from engines.platform import jobqueue

pytestmark = pytest.mark.skipif(not DEMO_DIR.is_dir(), reason="the shipped demo is written by "
                                "`python -m engines.hoi demo`")


@pytest.fixture()
def demo(tmp_path):
    root = tmp_path / "demo"
    shutil.copytree(DEMO_DIR, root)
    return root


def test_an_evaluation_job_writes_records_the_page_scores(sqlite_db, demo):
    (demo / "records" / "offline-faithful.json").unlink()
    job_id = jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "offline-faithful", "limit": 3})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    records = json.loads((demo / "records" / "offline-faithful.json").read_text())
    assert len(records["L1L2"]) + len(records.get("L3", {})) == 3
    assert job.result["summary"].startswith("offline-faithful: 3 item(s) judged")
    assert "offline-faithful" in browse.open_workspace(demo).scores
    assert [j.id for j in hoi_jobs()] == [job_id]
    assert list(jobs_frame(hoi_jobs())["job"]) == ["evaluate offline-faithful (judge offline)"]


def test_an_scpe_job_adds_a_method_with_frames_traces_and_scores(sqlite_db, demo):
    job_id = jobqueue.submit_job(SCPE, {"benchmark": str(demo), "limit": 2, "method": "scpe-job", "epochs": 0})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    assert job.result["counts"]["written"] == 2
    workspace = browse.open_workspace(demo)
    assert "scpe-job" in workspace.methods and "scpe-job" in workspace.scores
    first = workspace.benchmark.items()[0]
    view = browse.item_view(workspace, first.split, first.key, ["scpe-job"])
    assert len(view.outputs[0].strip) == 15 and view.outputs[0].trace is not None


@pytest.mark.parametrize(("params", "message"), [
    ({"benchmark": "/nowhere", "method": "m"}, "is not a folder"),
    ({"method": "../escape"}, "should match pattern"),
    ({"method": "offline-faithful", "judge": "gpt"}, "unknown judge 'gpt'"),
])
def test_bad_parameters_are_refused_with_the_reason(sqlite_db, demo, params, message):
    with pytest.raises(jobqueue.JobError, match=message):
        jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), **params})
