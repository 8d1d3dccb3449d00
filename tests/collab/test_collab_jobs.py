"""The collab job kinds run through the job queue and leave a valid result file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.collab import dashboard
from engines.platform import jobqueue


def test_collab_job_kinds_are_discovered_with_small_defaults():
    kinds = jobqueue.discover_job_kinds()
    assert {"collab.simulate", "collab.sweep"} <= set(kinds)
    assert kinds["collab.simulate"].params().T <= 10_000  # a dashboard click finishes in seconds
    assert kinds["collab.sweep"].description


@pytest.mark.parametrize("kind, params, expected", [
    ("collab.simulate", {"schedule": "abrupt_switch", "T": 1_000, "n_calibration": 100}, "simulate"),
    ("collab.sweep", {"T": 500, "n_calibration": 100, "alpha_harm_grid": [0.02, 0.05], "alpha_comp_grid": [0.1]},
     "sweep"),
])
def test_submit_and_run(sqlite_db, kind, params, expected):
    job_id = jobqueue.submit_job(kind, params)
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    path = Path(job.result["result_path"])
    assert path.is_file() and job.result_path == str(path) and job.progress == 1.0
    data = json.loads(path.read_text())
    assert dashboard.validate_result(data) == expected
    assert data["config"]["T" if expected == "simulate" else "base"] is not None
    assert job.result["kind"] == expected and "wrote" in job.log
    listed = dashboard.collab_jobs()
    assert listed["id"].tolist() == [job_id] and listed["status"].tolist() == ["succeeded"]
    assert dashboard.job_result(job_id)[0] == expected


def test_invalid_parameters_are_refused_at_submit(sqlite_db):
    with pytest.raises(jobqueue.JobError, match="unknown schedule"):
        jobqueue.submit_job("collab.simulate", {"schedule": "nope"})
    with pytest.raises(jobqueue.JobError, match="strictly increasing"):
        jobqueue.submit_job("collab.sweep", {"alpha_harm_grid": [0.1, 0.05]})
    with pytest.raises(jobqueue.JobError, match="alpha_harm"):
        jobqueue.submit_job("collab.simulate", {"alpha_harm": 1.5})


def test_simulate_job_takes_rules_by_name_and_parameters(sqlite_db):
    import pytest

    from engines.platform import jobqueue

    job_id = jobqueue.submit_job("collab.simulate", {
        "T": 300, "n_calibration": 50, "protect_rule": "held_for_rounds", "protect_params": {"rounds": 2},
        "supply_rule": "supply_when_low_confidence", "supply_params": {"threshold": 0.6}})
    assert jobqueue.run_job(job_id) == "succeeded"
    with pytest.raises(jobqueue.JobError, match="no_such_rule|unknown|Unknown"):
        jobqueue.submit_job("collab.simulate", {"T": 300, "protect_rule": "no_such_rule"})
