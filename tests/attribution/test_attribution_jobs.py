"""The attribution jobs in the queue: a tiny training run end to end, and parameters refused at submission."""

from __future__ import annotations

from pathlib import Path

import pytest

from engines.attribution.jobs import EXPERIMENT, TRAIN, read_experiment
from engines.attribution.policies import load_policy
from engines.attribution.policy_set import SHIPPED_DIR, shipped_policies
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
    ({"frames": 0}, "greater than or equal to 1"),
    ({"frames": 100_001}, "less than or equal to 100000"),
    ({"epochs": 101}, "less than or equal to 100"),
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


ASSETS = Path(__file__).resolve().parents[2] / "assets"


def assets_listing() -> dict[str, tuple[int, int]]:
    """Every file under assets/ with its size and modification time."""
    return {str(p.relative_to(ASSETS)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(ASSETS.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(("kind", "params"), [
    (TRAIN, {"rho": 0.5, "seed": 0, "frames": 100, "epochs": 1, "episodes": 5}),
    (EXPERIMENT, {"rhos": [0.5, 1.0], "seeds": [0, 1], "n_masks": 10, "nmr_frames": 1, "episodes": 5,
                  "methods": ["occlusion"], "policies": "shipped"}),
])
def test_quick_jobs_write_only_into_their_result_folder(sqlite_db, kind, params):
    before = assets_listing()
    job_id = jobqueue.submit_job(kind, params)
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    assert assets_listing() == before
    result = Path(jobqueue.get_job(job_id).result["result_path"])
    assert result.parent == jobqueue.job_dir(job_id)
    if kind == EXPERIMENT:
        experiment = read_experiment(job_id)
        assert experiment["config"]["policy_dir"] == "shipped/attribution/policies"
        assert {p["policy"] for p in experiment["policies"]} == {"loaded"}


def test_a_job_result_naming_a_file_outside_the_job_folders_is_not_read(sqlite_db, tmp_path):
    from engines.platform.db import write_transaction
    from engines.platform.models import Job

    (tmp_path / "planted.json").write_text('{"summary": "planted"}')
    with write_transaction() as session:
        job = Job(kind=EXPERIMENT, params={}, status="succeeded",
                  result={"result_path": str(tmp_path / "planted.json"), "summary": "x"})
        session.add(job)
        session.flush()
        job_id = job.id
    with pytest.raises(ValueError, match=f"job #{job_id}: its result file is gone"):
        read_experiment(job_id)


def test_the_shipped_experiment_and_policy_set_read_and_name_no_path_of_a_machine():
    experiment = read_experiment(None)
    assert experiment["config"]["policy_dir"] == "shipped/attribution/policies"
    rows = shipped_policies()
    assert len(rows) == 15 and all(Path(row["path"]).parent == SHIPPED_DIR.resolve() for row in rows)


def test_a_policy_set_whose_report_names_a_file_outside_it_is_refused(data_dir, tmp_path):
    import json

    from engines.attribution.policies import ReachPolicy, save_policy
    from engines.platform.files import FileRefused

    save_policy(ReachPolicy(), tmp_path / "outside.pt", {})
    folder = data_dir / "datasets" / "attribution" / "set"
    folder.mkdir(parents=True)
    (folder / "report.json").write_text(json.dumps({"policies": [{"rho": 1.0, "seed": 0,
                                                                  "file": "../../../../outside.pt"}]}))
    with pytest.raises(FileRefused, match="the policy's weights: '../../../../outside.pt' is outside the folders"):
        shipped_policies(folder)
    with pytest.raises(FileRefused, match="is outside the folders"):
        shipped_policies(tmp_path)


def test_the_default_experiment_job_loads_a_shipped_policy_for_every_cell():
    # The job's defaults are the experiment's (one declaration): every (rho, seed) it asks for is shipped,
    # so a researcher's first experiment loads its policies instead of training most of them for minutes.
    from itertools import product

    from engines.attribution.jobs import ExperimentParams
    from engines.attribution.policy_set import SHIPPED_DIR, policy_file

    params = ExperimentParams()
    assert params.policies == "shipped" and len(params.rhos) * len(params.seeds) >= 3
    missing = [(rho, seed) for rho, seed in product(params.rhos, params.seeds)
               if not policy_file(SHIPPED_DIR, rho, seed).is_file()]
    assert missing == []
