"""The attribution jobs in the queue: a tiny training run end to end, and parameters refused at submission."""

from __future__ import annotations

import pytest

from engines.attribution.jobs import EXPERIMENT, TRAIN
from engines.attribution.policies import load_policy
from engines.platform import jobqueue


def test_a_training_job_writes_a_policy_that_loads(sqlite_db):
    job_id = jobqueue.submit_job(TRAIN, {"rho": 1.0, "seed": 1, "frames": 100, "epochs": 1, "episodes": 5})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    model, meta = load_policy(job.result["result_path"])
    assert meta["train"]["rho"] == 1.0 and set(job.result["evaluation"]) == {"normal", "random", "none"}
    assert job.progress == 1.0


@pytest.mark.parametrize(("params", "message"), [
    ({"rho": 1.5}, "less than or equal to 1"),
    ({"frames": 10}, "greater than or equal to 100"),
])
def test_bad_training_parameters_are_refused_when_submitted(sqlite_db, params, message):
    with pytest.raises(jobqueue.JobError, match=message):
        jobqueue.submit_job(TRAIN, params)


@pytest.mark.parametrize(("params", "message"), [
    ({"rhos": [0.0], "seeds": [0, 1]}, "at least 3 policies"),
    ({"methods": ["lime"]}, "unknown method 'lime'"),
    ({"rhos": [0.0, 2.0, 1.0]}, "every rho is a probability"),
    ({"policies": "/etc"}, "'shipped' or 'train'"),
])
def test_bad_experiment_parameters_are_refused_when_submitted(sqlite_db, params, message):
    with pytest.raises(jobqueue.JobError, match=message):
        jobqueue.submit_job(EXPERIMENT, params)
