"""The collab job kinds run through the job queue and leave a valid result file; a trained CNN feeds simulations."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from engines.collab import jobs as collab_jobs
from engines.collab.jobs import SIMULATE, SWEEP, TRAIN_COUNTER
from engines.collab.result_files import load_result_file
from engines.platform import jobqueue
from tests.helpers import QUICK_TRAINING, trained_counter_job


def test_collab_job_kinds_are_discovered_with_small_defaults():
    kinds = jobqueue.discover_job_kinds()
    assert {SIMULATE, SWEEP, TRAIN_COUNTER} <= set(kinds)
    assert kinds[SIMULATE].params().T <= 10_000  # a click on the simulations page finishes in seconds
    assert kinds[SWEEP].description


@pytest.mark.parametrize("kind, params, expected", [
    (SIMULATE, {"schedule": "abrupt_switch", "T": 1_000, "n_calibration": 100}, "simulate"),
    (SWEEP, {"T": 500, "n_calibration": 100, "alpha_harm_grid": [0.02, 0.05], "alpha_comp_grid": [0.1]},
     "sweep"),
])
def test_submit_and_run(sqlite_db, kind, params, expected):
    job_id = jobqueue.submit_job(kind, params)
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    path = Path(job.result["result_path"])
    assert path.is_file() and job.result_path == str(path) and job.progress == 1.0
    data = json.loads(path.read_text())
    assert load_result_file(data).kind == expected
    assert data["config"]["T" if expected == "simulate" else "base"] is not None
    assert job.result["kind"] == expected and "wrote" in job.log
    listed = collab_jobs.simulation_jobs()
    assert [j.id for j in listed] == [job_id] and [j.status for j in listed] == ["succeeded"]
    assert collab_jobs.simulation_result(job_id).kind == expected


def test_invalid_parameters_are_refused_at_submit(sqlite_db):
    with pytest.raises(jobqueue.JobError, match="unknown schedule"):
        jobqueue.submit_job(SIMULATE, {"schedule": "nope"})
    with pytest.raises(jobqueue.JobError, match="strictly increasing"):
        jobqueue.submit_job(SWEEP, {"alpha_harm_grid": [0.1, 0.05]})
    with pytest.raises(jobqueue.JobError, match="alpha_harm"):
        jobqueue.submit_job(SIMULATE, {"alpha_harm": 1.5})
    with pytest.raises(jobqueue.JobError, match="LLM humans: the command line"):
        jobqueue.submit_job(SWEEP, {"human": "llm", "schedule": "stationary"})


def test_simulate_job_takes_rules_by_name_and_parameters(sqlite_db):
    import pytest

    from engines.platform import jobqueue

    job_id = jobqueue.submit_job(SIMULATE, {
        "T": 300, "n_calibration": 50, "protect_rule": "held_for_rounds", "protect_params": {"rounds": 2},
        "supply_rule": "supply_when_low_confidence", "supply_params": {"threshold": 0.6}})
    assert jobqueue.run_job(job_id) == "succeeded"
    with pytest.raises(jobqueue.JobError, match="no_such_rule|unknown|Unknown"):
        jobqueue.submit_job(SIMULATE, {"T": 300, "protect_rule": "no_such_rule"})


# Neither parameter is its rule's default (rounds 2, threshold 0.5), so a dropped one shows.
RULES = {"protect_rule": "held_for_rounds", "protect_params": {"rounds": 3},
         "supply_rule": "supply_when_low_confidence", "supply_params": {"threshold": 0.6}}


def _result_config(job_id: int) -> dict:
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    return json.loads(Path(jobqueue.get_job(job_id).result["result_path"]).read_text())["config"]


def test_a_simulate_job_stores_and_runs_with_the_rule_parameters_given(sqlite_db):
    job_id = jobqueue.submit_job(SIMULATE, {"T": 300, "n_calibration": 50, **RULES})
    assert {k: jobqueue.get_job(job_id).params[k] for k in RULES} == RULES
    config = _result_config(job_id)
    assert {k: config[k] for k in RULES} == RULES


def test_a_simulate_job_gives_what_simulate_gives_with_those_rule_parameters(sqlite_db):
    from engines.collab.simulate import SimulationConfig, simulate

    base = {"T": 300, "n_calibration": 50, "schedule": "drift"}
    job_id = jobqueue.submit_job(SIMULATE, {**base, **RULES})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    data = json.loads(Path(jobqueue.get_job(job_id).result["result_path"]).read_text())
    direct = simulate(SimulationConfig(**base, **RULES)).online
    without = simulate(SimulationConfig(**base, **{**RULES, "protect_params": {}, "supply_params": {}})).online
    assert without.final_thresholds != direct.final_thresholds  # the parameters change this run
    assert data["online"]["final_thresholds"] == direct.final_thresholds
    assert data["online"]["accuracy"] == direct.accuracy


def test_a_sweep_job_carries_a_study_rule_and_its_width_into_its_base_config(sqlite_db):
    job_id = jobqueue.submit_job(SWEEP, {"T": 300, "n_calibration": 50, "alpha_harm_grid": [0.05],
                                         "alpha_comp_grid": [0.1], "protect_rule": "near_count",
                                         "protect_params": {"width": 2}, "supply_rule": "supply_when_low_confidence",
                                         "supply_params": {"threshold": 0.6}})
    assert jobqueue.get_job(job_id).params["protect_params"] == {"width": 2}  # near_count's default is 1
    base = _result_config(job_id)["base"]
    assert (base["protect_rule"], base["protect_params"]) == ("near_count", {"width": 2})
    assert (base["supply_rule"], base["supply_params"]) == ("supply_when_low_confidence", {"threshold": 0.6})


@pytest.mark.parametrize("kind", [SIMULATE, SWEEP])
def test_a_forms_rule_parameters_reach_the_submitted_job(sqlite_db, kind):
    from engines.collab.jobs import simulation_job_params

    form = dict(T=300, alpha_harm_grid="0.05", alpha_comp_grid="0.1", protect_rule="near_count",
                protect_params={"width": 2}, supply_rule="supply_when_low_confidence", supply_params={"threshold": 0.6})
    params = simulation_job_params(kind, **form)
    assert (params["protect_params"], params["supply_params"]) == ({"width": 2}, {"threshold": 0.6})
    stored = jobqueue.get_job(jobqueue.submit_job(kind, params)).params
    assert (stored["protect_rule"], stored["protect_params"]) == ("near_count", {"width": 2})
    assert (stored["supply_rule"], stored["supply_params"]) == ("supply_when_low_confidence", {"threshold": 0.6})


# ---------------------------------------------------------------- training the counting CNN as a job
ASSETS = Path(__file__).resolve().parents[2] / "assets" / "collab"


def test_train_counter_params_have_minute_defaults_and_are_validated(sqlite_db):
    params = jobqueue.get_kind(TRAIN_COUNTER).params()
    assert params.train_size * params.epochs <= 40_000 and not params.quick  # under a minute on 2 CPU cores
    assert params.train_difficulty == (0.0, 1.0)
    with pytest.raises(jobqueue.JobError, match="train_difficulty"):
        jobqueue.submit_job(TRAIN_COUNTER, {"train_difficulty": [0.8, 0.2]})
    with pytest.raises(jobqueue.JobError, match="at least batch_size"):
        jobqueue.submit_job(TRAIN_COUNTER, {"train_size": 100, "batch_size": 128})
    with pytest.raises(jobqueue.JobError, match="out"):
        jobqueue.submit_job(TRAIN_COUNTER, {"out": "assets/collab/counter.pt"})  # no path can be given


def test_train_counter_job_runs_in_a_child_process_and_writes_into_its_folder(start_executor):
    executor = start_executor(max_workers=1)
    shipped = {p.name: p.read_bytes() for p in ASSETS.glob("counter*")}
    job_id = jobqueue.submit_job(TRAIN_COUNTER, QUICK_TRAINING)
    executor.wake()
    job = jobqueue.wait_for_job(job_id, timeout_s=90)
    assert job.status == "succeeded", job.error
    assert job.worker == executor.worker and job.progress == 1.0
    assert "epoch 1/1: loss" in job.log  # progress reported per epoch
    folder = jobqueue.job_dir(job_id)
    for name in ("counter.pt", "counter_report.json", "counter_scores.npz", "counter_reliability.png",
                 "counter_accuracy.png"):
        assert (folder / name).is_file(), name
    result = job.result
    assert result["result_path"] == str(folder / "counter_report.json") == job.result_path
    assert [Path(p).name for p in result["plots"]] == ["counter_reliability.png", "counter_accuracy.png"]
    report = json.loads((folder / "counter_report.json").read_text())
    assert report["quick"] and report["seed"] == 3 and str(folder / "counter.pt") in report["command"]
    assert result["overall"] == {k: report["metrics"]["overall"][k] for k in ("n", "accuracy", "ece")}
    assert {"easy", "medium", "hard", "difficulty 0.00-0.33"} <= set(result["by_difficulty"])
    scores = np.load(folder / "counter_scores.npz")
    accuracy = float((scores["probs"].argmax(1) == scores["labels"]).mean())
    assert accuracy == pytest.approx(result["overall"]["accuracy"], abs=1e-4)
    assert {p.name: p.read_bytes() for p in ASSETS.glob("counter*")} == shipped  # shipped files untouched


def test_simulate_and_sweep_use_the_scores_of_a_training_job(sqlite_db):
    from engines.collab.simulate import SimulationConfig, prepare

    job_id = trained_counter_job()
    npz = jobqueue.job_dir(job_id) / "counter_scores.npz"
    scores = np.load(npz)
    npz_accuracy = float((scores["probs"].argmax(1) == scores["labels"]).mean())
    base = {"schedule": "stationary", "T": 3_000, "n_calibration": 200}
    sim = jobqueue.submit_job(SIMULATE, {**base, "ai": "cnn", "counter_job_id": job_id})
    assert jobqueue.run_job(sim) == "succeeded", jobqueue.get_job(sim).error
    result = jobqueue.get_job(sim).result
    data = json.loads(Path(result["result_path"]).read_text())
    assert data["config"]["ai"] == "cnn" and data["config"]["ai_scores"] == str(npz)
    assert result["counter_job_id"] == job_id
    # The AI's accuracy is that of the rows drawn from this npz (resampled with replacement) ...
    prepared = prepare(SimulationConfig(**data["config"]))
    drawn = float((prepared.cases.probs.argmax(1) == prepared.cases.labels).mean())
    assert data["ai_alone_accuracy"] == pytest.approx(drawn)
    rows = {tuple(r) for r in scores["probs"].astype(float).round(6)}
    assert {tuple(r) for r in prepared.cases.probs.round(6)} <= rows
    # ... so close to the npz's own accuracy, and far from the shipped model's (~0.81).
    assert data["ai_alone_accuracy"] == pytest.approx(npz_accuracy, abs=0.04)
    shipped = jobqueue.submit_job(SIMULATE, {**base, "ai": "cnn"})
    assert jobqueue.run_job(shipped) == "succeeded"
    assert jobqueue.get_job(shipped).result["accuracy"]["ai_alone"] > npz_accuracy + 0.3
    sweep = jobqueue.submit_job(SWEEP, {**base, "T": 500, "ai": "cnn", "counter_job_id": job_id,
                                                 "alpha_harm_grid": [0.05], "alpha_comp_grid": [0.1]})
    assert jobqueue.run_job(sweep) == "succeeded", jobqueue.get_job(sweep).error
    sweep_data = json.loads(Path(jobqueue.get_job(sweep).result["result_path"]).read_text())
    assert sweep_data["config"]["base"]["ai_scores"] == str(npz)


def test_bad_counter_job_ids_are_refused_with_the_reason(sqlite_db):
    simulation = jobqueue.submit_job(SIMULATE, {"T": 300, "n_calibration": 50})
    queued = jobqueue.submit_job(TRAIN_COUNTER, QUICK_TRAINING)
    for kind in (SIMULATE, SWEEP):
        with pytest.raises(jobqueue.JobError, match="there is no job #999"):
            jobqueue.submit_job(kind, {"ai": "cnn", "counter_job_id": 999})
        with pytest.raises(jobqueue.JobError, match=f"job #{simulation} is a collab.simulate job, not collab.train"):
            jobqueue.submit_job(kind, {"ai": "cnn", "counter_job_id": simulation})
        with pytest.raises(jobqueue.JobError, match=f"job #{queued} has status 'queued'"):
            jobqueue.submit_job(kind, {"ai": "cnn", "counter_job_id": queued})
    with pytest.raises(jobqueue.JobError, match="needs ai='cnn'"):
        jobqueue.submit_job(SIMULATE, {"counter_job_id": queued})
    with pytest.raises(jobqueue.JobError, match=r"has no parameter\(s\) 'ai_scores'"):
        jobqueue.submit_job(SIMULATE, {"ai": "cnn", "ai_scores": "/etc/passwd"})  # never a path
    with pytest.raises(jobqueue.JobError, match="ai"):
        jobqueue.submit_job(SIMULATE, {"ai": "assets/collab/counter_scores.npz"})
    # A training job whose folder lost its scores is refused at submit, and fails clearly if it goes later.
    trained = trained_counter_job()
    job_id = jobqueue.submit_job(SIMULATE, {"T": 300, "n_calibration": 50, "ai": "cnn",
                                                     "counter_job_id": trained})
    (jobqueue.job_dir(trained) / "counter_scores.npz").unlink()
    with pytest.raises(jobqueue.JobError, match="has no counter_scores.npz"):
        jobqueue.submit_job(SIMULATE, {"ai": "cnn", "counter_job_id": trained})
    assert jobqueue.run_job(job_id) == "failed"
    assert "has no counter_scores.npz" in jobqueue.get_job(job_id).error


def test_a_cancelled_training_job_stops_and_writes_no_model(sqlite_db):
    job_id = jobqueue.submit_job(TRAIN_COUNTER, QUICK_TRAINING)
    assert jobqueue.claim(job_id, "w")
    jobqueue.cancel_job(job_id)  # seen at the job's first progress report
    assert jobqueue.run_job(job_id, worker="w") == "cancelled"
    assert not (jobqueue.job_dir(job_id) / "counter.pt").exists()
    assert list(collab_jobs.ai_score_choices()) == ["synthetic", "shipped"]


def test_a_study_rule_validates_in_a_fresh_worker_process(sqlite_db):
    # The worker imports only the job modules; the study's own rule must still be known there.
    import subprocess
    import sys

    code = ("from engines.platform.jobqueue import discover_job_kinds; discover_job_kinds();"
            "from engines.collab.jobs import SimulateParams;"
            "print(SimulateParams(protect_rule='near_count', protect_params={'width': 2}).protect_rule)")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "near_count"


# ---------------------------------------------------------------- one declaration: SimulationConfig and SweepConfig

def test_job_parameters_are_the_configs_fields_with_small_defaults():
    import dataclasses

    from engines.collab import jobs
    from engines.collab.simulate import JOB_DEFAULTS, SIMULATE_ONLY, SimulationConfig
    from engines.collab.sweep import JOB_DEFAULTS as SWEEP_DEFAULTS
    from engines.collab.sweep import SweepConfig

    offered = {f.name for f in dataclasses.fields(SimulationConfig) if f.metadata.get("job", True)}
    assert set(jobs.SimulateParams.model_fields) == offered | {"counter_job_id"}
    assert set(jobs.SweepParams.model_fields) == (offered - set(SIMULATE_ONLY)) | {
        "counter_job_id", "alpha_harm_grid", "alpha_comp_grid"}
    assert not {"ai_scores", "ddxplus_dir", "engine"} & set(jobs.SimulateParams.model_fields)  # never a path
    params, sweep = jobs.SimulateParams(), jobs.SweepParams()
    assert {k: getattr(params, k) for k in JOB_DEFAULTS} == JOB_DEFAULTS
    assert (sweep.alpha_harm_grid, sweep.alpha_comp_grid) == (SWEEP_DEFAULTS["alpha_harm_grid"],
                                                               SWEEP_DEFAULTS["alpha_comp_grid"])
    assert sweep.sweep_config().alpha_harm_grid != SweepConfig().alpha_harm_grid  # the job's grid is the quick one
    # Bounds and titles come from the fields' metadata.
    t = jobs.SimulateParams.model_fields["T"]
    assert t.title == "Interactions" and [m.ge for m in t.metadata if hasattr(m, "ge")] == [10]
    with pytest.raises(ValueError, match="task"):
        jobs.SimulateParams(task="chemistry")


def test_simulation_job_params_from_a_form(sqlite_db):
    from engines.collab.jobs import simulation_job_params

    form = dict(T=3_000, seed=1, schedule="stationary", alpha_harm=0.1, alpha_comp=0.05,
                alpha_harm_grid="0.02, 0.05", alpha_comp_grid=" 0.1 ")
    params = simulation_job_params(SWEEP, **form)
    assert params["alpha_harm_grid"] == [0.02, 0.05] and params["alpha_comp_grid"] == [0.1]
    assert "alpha_harm" not in params and params["n_calibration"] == 300  # a tenth of T
    params = simulation_job_params(SIMULATE, **form)
    assert params["alpha_harm"] == 0.1 and "alpha_harm_grid" not in params
    assert simulation_job_params(SIMULATE, T=50_000)["n_calibration"] == 1000  # at most 1000
    assert simulation_job_params(SIMULATE, T=50)["n_calibration"] == 10  # at least 10
    job_id = jobqueue.submit_job(SIMULATE, simulation_job_params(SIMULATE, **form))
    assert jobqueue.get_job(job_id).params["n_calibration"] == 300
    with pytest.raises(ValueError, match="expected comma-separated numbers such as 0.01,0.05,0.1, got '0.1, x'"):
        simulation_job_params(SWEEP, alpha_harm_grid="0.1, x")
    with pytest.raises(jobqueue.JobError, match="nonsense"):  # an unknown name is left to the job to refuse
        jobqueue.submit_job(SIMULATE, simulation_job_params(SIMULATE, nonsense=1))
