"""The collab job functions one at a time, on tiny inputs: parameters, rule parameters, result files, progress, messages.

The simulations themselves are replaced by fakes (``simulate``, ``run_sweep``, ``train_counter``) so
every test runs in well under a second; ``test_collab_jobs.py`` runs the real jobs end to end.
Job rows are written by hand (``_job``) to reach states such as "a succeeded training job".
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from engines.collab import jobs
from engines.collab.jobs import SIMULATE, SWEEP, TRAIN_COUNTER
from engines.collab.result_files import ResultFileError
from engines.platform import jobqueue
from engines.platform.db import write_transaction
from engines.platform.models import Job

RULES = {"protect_rule": "held_for_rounds", "protect_params": {"rounds": 3},
         "supply_rule": "supply_when_low_confidence", "supply_params": {"threshold": 0.6}}


class FakeContext:
    """A ``JobContext`` stand-in: records log lines and progress reports, writes into ``folder``."""

    def __init__(self, folder: Path):
        self.result_dir = folder
        self.logs: list[str] = []
        self.reports: list[tuple[float, str | None]] = []

    def log(self, line: str) -> None:
        self.logs.append(line)

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.reports.append((fraction, message))


def _job(kind: str, status: str = "queued", *, engine=None, **values) -> int:
    """A job row written directly (no validation, no run); returns its id."""
    with write_transaction(engine) as session:
        job = Job(kind=kind, params=values.pop("params", {}), status=status, **values)
        session.add(job)
        session.flush()
        return job.id



def _scores_file(job_id: int) -> Path:
    folder = jobqueue.job_dir(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "counter_scores.npz"
    path.write_bytes(b"not read by these tests")
    return path


# ---------------------------------------------------------------- counter_scores_path


def test_counter_scores_path_of_a_missing_job_says_there_is_none(sqlite_db):
    with pytest.raises(ValueError, match=re.escape("counter_job_id 999: there is no job #999")):
        jobs.counter_scores_path(999)


def test_counter_scores_path_refuses_another_kind_of_job(sqlite_db):
    job_id = _job(SIMULATE, "succeeded")
    message = f"counter_job_id {job_id}: job #{job_id} is a collab.simulate job, not collab.train_counter"
    with pytest.raises(ValueError, match=re.escape(message)):
        jobs.counter_scores_path(job_id)


@pytest.mark.parametrize("status", ["queued", "running", "failed"])
def test_counter_scores_path_refuses_a_training_job_that_has_not_succeeded(sqlite_db, status):
    job_id = _job(TRAIN_COUNTER, status)
    _scores_file(job_id)
    message = (f"counter_job_id {job_id}: training job #{job_id} has status '{status}'; "
               "only a succeeded training job's scores can be used")
    with pytest.raises(ValueError, match=re.escape(message)):
        jobs.counter_scores_path(job_id)


def test_counter_scores_path_refuses_a_training_job_without_its_scores_file(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    message = f"counter_job_id {job_id}: training job #{job_id} has no counter_scores.npz in its folder"
    with pytest.raises(ValueError, match=re.escape(message)):
        jobs.counter_scores_path(job_id)


def test_counter_scores_path_is_the_scores_file_in_the_training_jobs_folder(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    expected = _scores_file(job_id)
    assert jobs.counter_scores_path(job_id) == expected


# ---------------------------------------------------------------- simulation parameters


def test_an_llm_human_is_refused_in_a_job_with_where_to_run_it():
    message = ("human must be one of ['adversarial', 'expert', 'overtrusting', 'parametric', 'skeptic'] in a job "
               "(LLM humans: the command line, simulate --human llm), got 'llm'")
    for model in (jobs.SimulateParams, jobs.SweepParams):
        with pytest.raises(ValueError, match=re.escape(message)):
            model(human="llm")


def test_every_parametric_human_preset_is_accepted_in_a_job():
    for human in ("adversarial", "expert", "overtrusting", "parametric", "skeptic"):
        assert jobs.SimulateParams(human=human).base_config().human == human


def test_counter_job_id_must_be_positive_and_is_labelled_for_the_form():
    with pytest.raises(ValueError, match="counter_job_id"):
        jobs.SimulateParams(ai="cnn", counter_job_id=0)
    assert jobs.SimulateParams.model_fields["counter_job_id"].title == (
        "With ai='cnn': the succeeded collab.train_counter job whose scores to use (none: the shipped model's)")


def test_a_job_without_counter_job_reads_the_shipped_scores():
    params = jobs.SimulateParams(ai="cnn")
    assert params.ai_scores_path() == "assets/collab/counter_scores.npz"
    assert params.base_config().ai_scores == "assets/collab/counter_scores.npz"


def test_a_counter_job_id_needs_the_cnn_ai(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    _scores_file(job_id)
    message = f"counter_job_id {job_id} needs ai='cnn' (got ai='synthetic')"
    for model in (jobs.SimulateParams, jobs.SweepParams):
        with pytest.raises(ValueError, match=re.escape(message)):
            model(counter_job_id=job_id)


def test_a_counter_job_ids_scores_become_the_configs_ai_scores(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    path = _scores_file(job_id)
    params = jobs.SimulateParams(ai="cnn", counter_job_id=job_id)
    assert params.ai_scores_path() == str(path)
    config = params.base_config()
    assert (config.ai, config.ai_scores) == ("cnn", str(path))
    assert jobs.SweepParams(ai="cnn", counter_job_id=job_id).sweep_config().base.ai_scores == str(path)


def test_a_bad_counter_job_id_is_refused_when_the_parameters_are_built(sqlite_db):
    with pytest.raises(ValueError, match="there is no job #77"):
        jobs.SimulateParams(ai="cnn", counter_job_id=77)
    with pytest.raises(ValueError, match="there is no job #77"):
        jobs.SweepParams(ai="cnn", counter_job_id=77)


def test_base_config_carries_the_jobs_values_and_the_overrides():
    params = jobs.SimulateParams(T=400, n_calibration=40, schedule="abrupt_switch", seed=7, alpha_harm=0.1, **RULES)
    config = params.base_config()
    assert (config.T, config.n_calibration, config.schedule, config.seed, config.alpha_harm) == (
        400, 40, "abrupt_switch", 7, 0.1)
    assert {k: getattr(config, k) for k in RULES} == RULES
    assert params.base_config(seed=9, with_fixed=False).seed == 9
    assert params.base_config(seed=9, with_fixed=False).with_fixed is False


def test_an_invalid_simulation_is_refused_when_the_parameters_are_built():
    with pytest.raises(ValueError, match="unknown schedule"):
        jobs.SimulateParams(schedule="nope")
    with pytest.raises(ValueError, match="unknown schedule"):
        jobs.SweepParams(schedule="nope")


def test_a_simulate_job_runs_the_baselines_and_a_sweep_base_does_not():
    simulate = jobs.SimulateParams().base_config()
    assert (simulate.with_fixed, simulate.with_matched) == (True, True)
    base = jobs.SweepParams().sweep_config().base
    assert (base.with_fixed, base.with_matched) == (False, False)


def test_a_sweep_config_has_the_jobs_grids_and_base():
    params = jobs.SweepParams(T=400, n_calibration=40, schedule="abrupt_switch", alpha_harm_grid=[0.02, 0.05],
                              alpha_comp_grid=[0.1], **RULES)
    config = params.sweep_config()
    assert config.alpha_harm_grid == (0.02, 0.05) and config.alpha_comp_grid == (0.1,)
    assert (config.base.T, config.base.n_calibration, config.base.schedule) == (400, 40, "abrupt_switch")
    assert {k: getattr(config.base, k) for k in RULES} == RULES


def test_a_decreasing_sweep_grid_is_refused_when_the_parameters_are_built():
    with pytest.raises(ValueError, match="strictly increasing"):
        jobs.SweepParams(alpha_harm_grid=[0.1, 0.05])


# ---------------------------------------------------------------- simulation_job_params


def test_simulation_job_params_refuses_another_kind():
    message = "not a simulation job kind: 'collab.train_counter' (known: collab.simulate, collab.sweep)"
    with pytest.raises(ValueError, match=re.escape(message)):
        jobs.simulation_job_params(TRAIN_COUNTER, T=100)


def test_simulation_job_params_leaves_out_the_sweeps_grids_for_a_simulate_job():
    params = jobs.simulation_job_params(SIMULATE, alpha_harm=0.1, alpha_comp=0.2, with_fixed=False,
                                        alpha_harm_grid="0.02", alpha_comp_grid=[0.1], seed=3)
    assert params == {"alpha_harm": 0.1, "alpha_comp": 0.2, "with_fixed": False, "seed": 3}


def test_simulation_job_params_leaves_out_the_simulate_only_fields_for_a_sweep_job():
    params = jobs.simulation_job_params(SWEEP, alpha_harm=0.1, alpha_comp=0.2, with_fixed=False, with_matched=True,
                                        alpha_harm_grid=[0.02, 0.05], alpha_comp_grid=[0.1], seed=3)
    assert params == {"alpha_harm_grid": [0.02, 0.05], "alpha_comp_grid": [0.1], "seed": 3}


def test_simulation_job_params_reads_grids_typed_as_text():
    params = jobs.simulation_job_params(SWEEP, alpha_harm_grid="0.01, 0.02,0.05", alpha_comp_grid=" 0.1 ")
    assert params == {"alpha_harm_grid": [0.01, 0.02, 0.05], "alpha_comp_grid": [0.1]}


def test_simulation_job_params_quotes_a_grid_that_is_not_numbers():
    with pytest.raises(ValueError, match=re.escape("got '0.1, x'")):
        jobs.simulation_job_params(SWEEP, alpha_comp_grid="0.1, x")


def test_simulation_job_params_sizes_the_pilot_batch_from_T():
    # A tenth of T, at least 10 and at most 1000 (simulate.calibration_size).
    assert jobs.simulation_job_params(SIMULATE, T=3_000) == {"T": 3_000, "n_calibration": 300}
    assert jobs.simulation_job_params(SWEEP, T=50)["n_calibration"] == 10
    assert jobs.simulation_job_params(SIMULATE, T=50_000)["n_calibration"] == 1_000


def test_simulation_job_params_keeps_a_pilot_batch_given_and_adds_none_without_T():
    assert jobs.simulation_job_params(SIMULATE, T=3_000, n_calibration=77)["n_calibration"] == 77
    assert jobs.simulation_job_params(SIMULATE, seed=1) == {"seed": 1}


def test_simulation_job_params_passes_unknown_names_on_for_the_job_to_refuse():
    assert jobs.simulation_job_params(SIMULATE, nonsense=1) == {"nonsense": 1}


def test_simulation_job_params_carries_the_rule_parameters():
    assert jobs.simulation_job_params(SWEEP, **RULES) == RULES
    assert jobs.simulation_job_params(SIMULATE, **RULES) == RULES


# ---------------------------------------------------------------- the simulate job, with a fake simulation


def _fake_run(fixed: bool = True):
    def run(which: str, violation: float, accuracy: float):
        return SimpleNamespace(violation_rate={"harm": violation, "comp": violation / 2}, accuracy=accuracy,
                               within_bound={"harm": which == "online", "comp": True})

    online = run("online", 0.04, 0.83)
    return SimpleNamespace(
        online=online, fixed=run("fixed", 0.09, 0.71) if fixed else None, human_alone_accuracy=0.6,
        ai_alone_accuracy=0.75, wall_s=1.25,
        to_dict=lambda: {"online": {"accuracy": 0.83}, "summary": "50 interactions, all fine", "n": [1, 2]})


@pytest.fixture
def fake_simulate(monkeypatch):
    """Replace ``simulate`` by a fake that reports half its interactions then all; ``calls`` records its configs."""
    calls = []

    def simulate(config, progress=None):
        calls.append({"config": config})
        progress(config.T // 2, config.T)
        progress(config.T, config.T)
        return _fake_run()

    monkeypatch.setattr(jobs, "simulate", simulate)
    return calls


def test_simulate_job_runs_the_configured_simulation(tmp_path, fake_simulate):
    jobs.simulate_job(FakeContext(tmp_path), T=400, n_calibration=40, schedule="abrupt_switch", **RULES)
    config = fake_simulate[0]["config"]
    assert (config.T, config.n_calibration, config.schedule) == (400, 40, "abrupt_switch")
    assert {k: getattr(config, k) for k in RULES} == RULES


def test_simulate_job_writes_the_full_result_to_result_json(tmp_path, fake_simulate):
    ctx = FakeContext(tmp_path)
    result = jobs.simulate_job(ctx, T=400, n_calibration=40)
    path = tmp_path / "result.json"
    assert result["result_path"] == str(path)
    assert json.loads(path.read_text()) == {"online": {"accuracy": 0.83}, "summary": "50 interactions, all fine",
                                            "n": [1, 2]}


def test_simulate_job_logs_the_file_and_the_summary(tmp_path, fake_simulate):
    ctx = FakeContext(tmp_path)
    jobs.simulate_job(ctx, T=400, n_calibration=40)
    assert ctx.logs == [f"wrote {tmp_path / 'result.json'}", "50 interactions, all fine"]


def test_simulate_job_reports_progress_up_to_writing(tmp_path, fake_simulate):
    ctx = FakeContext(tmp_path)
    jobs.simulate_job(ctx, T=4_000, n_calibration=40, schedule="drift")
    # The simulation's own fractions fill [0, 0.95].
    assert ctx.reports == [(0.0, "simulating 4,000 interactions, schedule drift"),
                           (0.475, "simulating: 2,000 of 4,000 interactions"),
                           (0.95, "simulating: 4,000 of 4,000 interactions"),
                           (0.97, "writing the result")]


def test_simulate_job_result_summarises_the_run(tmp_path, fake_simulate):
    result = jobs.simulate_job(FakeContext(tmp_path), T=400, n_calibration=40, schedule="drift")
    assert result == {
        "result_path": str(tmp_path / "result.json"), "kind": "simulate", "schedule": "drift", "T": 400,
        "ai": "synthetic", "counter_job_id": None,
        "violation_rate": {"online": {"harm": 0.04, "comp": 0.02}, "fixed": {"harm": 0.09, "comp": 0.045}},
        "within_bound": {"harm": True, "comp": True},
        "accuracy": {"human_alone": 0.6, "ai_alone": 0.75, "online": 0.83, "fixed": 0.71},
        "wall_s": 1.25,
    }


def test_simulate_job_result_without_a_fixed_run_has_none_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(jobs, "simulate", lambda config, progress=None: _fake_run(fixed=False))
    result = jobs.simulate_job(FakeContext(tmp_path), T=400, n_calibration=40, with_fixed=False)
    assert result["violation_rate"] == {"online": {"harm": 0.04, "comp": 0.02}, "fixed": None}
    assert result["accuracy"]["fixed"] is None and result["accuracy"]["online"] == 0.83


def test_simulate_job_result_names_the_counter_job(sqlite_db, tmp_path, fake_simulate):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    path = _scores_file(job_id)
    result = jobs.simulate_job(FakeContext(tmp_path), T=400, n_calibration=40, ai="cnn", counter_job_id=job_id)
    assert (result["ai"], result["counter_job_id"]) == ("cnn", job_id)
    assert fake_simulate[0]["config"].ai_scores == str(path)


# ---------------------------------------------------------------- the sweep job, with a fake sweep


@pytest.fixture
def fake_sweep(monkeypatch):
    calls = []

    def run_sweep(config, progress=None):
        calls.append(config)
        progress(1, 2, "cell 1/2")
        progress(2, 2, "cell 2/2")
        return SimpleNamespace(accuracy=[[0.7, 0.8]], wall_s=2.5,
                               to_dict=lambda: {"accuracy": [[0.7, 0.8]], "summary": "2 cells, fine",
                                                "trends": {"harm": "down"}})

    monkeypatch.setattr(jobs, "run_sweep", run_sweep)
    return calls


SWEEP_PARAMS = {"T": 2_000, "n_calibration": 40, "schedule": "abrupt_switch", "human": "expert",
                "alpha_harm_grid": [0.05], "alpha_comp_grid": [0.1, 0.2]}


def test_sweep_job_runs_the_configured_grid(tmp_path, fake_sweep):
    jobs.sweep_job(FakeContext(tmp_path), **SWEEP_PARAMS, **RULES)
    config = fake_sweep[0]
    assert (config.alpha_harm_grid, config.alpha_comp_grid) == ((0.05,), (0.1, 0.2))
    assert (config.base.T, config.base.schedule, config.base.human) == (2_000, "abrupt_switch", "expert")
    assert {k: getattr(config.base, k) for k in RULES} == RULES


def test_sweep_job_writes_result_json_and_logs_it(tmp_path, fake_sweep):
    ctx = FakeContext(tmp_path)
    jobs.sweep_job(ctx, **SWEEP_PARAMS)
    path = tmp_path / "result.json"
    assert json.loads(path.read_text()) == {"accuracy": [[0.7, 0.8]], "summary": "2 cells, fine",
                                            "trends": {"harm": "down"}}
    assert ctx.logs == [f"wrote {path}", "2 cells, fine"]


def test_sweep_job_reports_the_cells_and_their_progress(tmp_path, fake_sweep):
    ctx = FakeContext(tmp_path)
    jobs.sweep_job(ctx, **SWEEP_PARAMS)
    assert ctx.reports == [(0.0, "2 cells of 2,000 interactions"), (0.475, "cell 1/2"), (0.95, "cell 2/2"),
                           (0.97, "writing the result")]


def test_sweep_job_result_summarises_the_grid(tmp_path, fake_sweep):
    result = jobs.sweep_job(FakeContext(tmp_path), **SWEEP_PARAMS)
    assert result == {
        "result_path": str(tmp_path / "result.json"), "kind": "sweep", "schedule": "abrupt_switch", "T": 2_000,
        "ai": "synthetic", "counter_job_id": None, "cells": 2, "accuracy": [[0.7, 0.8]],
        "trends": {"harm": "down"}, "wall_s": 2.5,
        "base": {"schedule": "abrupt_switch", "human": "expert", "T": 2_000},
    }


def test_sweep_job_result_names_the_counter_job(sqlite_db, tmp_path, fake_sweep):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    _scores_file(job_id)
    result = jobs.sweep_job(FakeContext(tmp_path), **SWEEP_PARAMS, ai="cnn", counter_job_id=job_id)
    assert (result["ai"], result["counter_job_id"]) == ("cnn", job_id)


def test_the_job_kinds_have_their_titles_and_parameter_models():
    kinds = jobqueue.discover_job_kinds()
    assert (kinds[SIMULATE].title, kinds[SIMULATE].params) == (
        "Collaboration: simulate interactions (online vs fixed)", jobs.SimulateParams)
    assert (kinds[SWEEP].title, kinds[SWEEP].params) == (
        "Collaboration: final accuracy over a grid of targets", jobs.SweepParams)
    assert (kinds[TRAIN_COUNTER].title, kinds[TRAIN_COUNTER].params) == (
        "Collaboration: train the shape-counting CNN", jobs.TrainCounterParams)


# ---------------------------------------------------------------- training parameters


def test_train_counter_defaults_are_the_minute_training():
    assert jobs.train_counter_defaults() == {
        "seed": 2026, "train_size": 6_000, "epochs": 6, "batch_size": 128, "lr": 4e-3,
        "train_difficulty": (0.0, 1.0), "quick": False, "threads": 2, "device": "cpu"}


@pytest.mark.parametrize("field, lowest, highest", [
    ("train_size", 2, 200_000), ("epochs", 1, 100), ("batch_size", 2, 4_096), ("threads", 1, 64)])
def test_train_counter_integer_bounds_are_inclusive(field, lowest, highest):
    for value in (lowest, highest):
        assert getattr(jobs.TrainCounterParams(quick=True, **{field: value}), field) == value
    for value in (lowest - 1, highest + 1):
        with pytest.raises(ValueError, match=field):
            jobs.TrainCounterParams(quick=True, **{field: value})


def test_train_counter_seed_may_be_zero_but_not_negative():
    assert jobs.TrainCounterParams(seed=0).seed == 0
    with pytest.raises(ValueError, match="seed"):
        jobs.TrainCounterParams(seed=-1)


def test_train_counter_learning_rate_is_in_zero_one():
    assert jobs.TrainCounterParams(lr=1.0).lr == 1.0
    assert jobs.TrainCounterParams(lr=1e-6).lr == 1e-6
    for lr in (0.0, 1.01):
        with pytest.raises(ValueError, match="lr"):
            jobs.TrainCounterParams(lr=lr)


def test_train_counter_device_is_cpu_cuda_or_mps():
    for device in ("cpu", "cuda", "cuda:1", "cuda:12", "mps"):
        assert jobs.TrainCounterParams(device=device).device == device
    for device in ("tpu", "cuda:", "cpu0", "xcpu", "cuda:x"):
        with pytest.raises(ValueError, match="device"):
            jobs.TrainCounterParams(device=device)


def test_train_counter_refuses_unknown_parameters_such_as_an_output_path():
    with pytest.raises(ValueError, match="out"):
        jobs.TrainCounterParams(out="assets/collab/counter.pt")


@pytest.mark.parametrize("difficulty", [(0.0, 1.0), (0.5, 0.5), (0.0, 0.0), (1.0, 1.0), (0.2, 0.7)])
def test_train_counter_accepts_a_difficulty_range_inside_zero_one(difficulty):
    assert jobs.TrainCounterParams(train_difficulty=difficulty).train_difficulty == difficulty


@pytest.mark.parametrize("lo, hi", [(0.8, 0.2), (-0.1, 0.5), (0.2, 1.1)])
def test_train_counter_refuses_a_difficulty_range_outside_zero_one(lo, hi):
    message = f"train_difficulty must be (lo, hi) with 0 <= lo <= hi <= 1, got ({lo}, {hi})"
    with pytest.raises(ValueError, match=re.escape(message)):
        jobs.TrainCounterParams(train_difficulty=(lo, hi))


def test_train_counter_needs_a_batch_of_training_images_unless_quick():
    with pytest.raises(ValueError, match=re.escape("train_size (127) must be at least batch_size (128)")):
        jobs.TrainCounterParams(train_size=127, batch_size=128)
    assert jobs.TrainCounterParams(train_size=128, batch_size=128).train_size == 128
    assert jobs.TrainCounterParams(train_size=100, batch_size=128, quick=True).train_size == 100


def test_train_counter_form_labels():
    titles = {name: f.title for name, f in jobs.TrainCounterParams.model_fields.items()}
    assert titles == {
        "seed": "Seed of torch and all generated images", "train_size": "Training images",
        "epochs": "Passes over the training images", "batch_size": "Images per optimiser step",
        "lr": "Peak learning rate (one-cycle)",
        "train_difficulty": "Training images' difficulty ~ U[lo, hi] (evaluation: U[0, 1])",
        "quick": "Tiny sizes (seconds; a useless model, for checks)", "threads": "Torch CPU threads",
        "device": "Torch device"}


def test_train_config_carries_the_parameters():
    config = jobs.TrainCounterParams(seed=5, train_size=300, epochs=2, batch_size=32, lr=0.01,
                                     train_difficulty=(0.2, 0.6), threads=3, device="cpu").config()
    assert (config.seed, config.train_size, config.epochs, config.batch_size, config.lr, config.threads,
            config.device) == (5, 300, 2, 32, 0.01, 3, "cpu")
    assert config.train_difficulty == (0.2, 0.6)
    assert (config.val_size, config.scores_size) == (2_000, 5_000)  # TrainConfig's own sizes


def test_train_config_quick_takes_the_command_lines_quick_sizes():
    config = jobs.TrainCounterParams(seed=5, quick=True).config()
    # counter_config.QUICK, as --quick sets them.
    assert (config.train_size, config.epochs, config.batch_size, config.val_size, config.test_size,
            config.scores_size) == (256, 1, 64, 128, 64, 128)
    assert config.seed == 5


# ---------------------------------------------------------------- the training job, with a fake training


REPORT = {
    "metrics": {
        "overall": {"n": 128, "accuracy": 0.5, "ece": 0.1, "mean_confidence": 0.6, "nll": 1.2},
        "easy": {"n": 64, "accuracy": 0.75, "ece": 0.05, "mean_confidence": 0.7, "nll": 0.8},
        "uncalibrated overall": {"n": 128, "accuracy": 0.5, "ece": 0.3, "mean_confidence": 0.8, "nll": 1.9},
        "uncalibrated easy": {"n": 64, "accuracy": 0.75, "ece": 0.2, "mean_confidence": 0.9, "nll": 1.1},
    },
    "temperature": 1.7, "n_parameters": 12_345, "total_time_s": 3.5,
}
SUMMARY = {"overall": {"n": 128, "accuracy": 0.5, "ece": 0.1},
           "by_difficulty": {"easy": {"n": 64, "accuracy": 0.75, "ece": 0.05}},
           "temperature": 1.7, "n_parameters": 12_345}


def test_counter_summary_keeps_accuracy_and_ece_of_the_calibrated_sets():
    assert jobs.counter_summary(REPORT) == SUMMARY


@pytest.fixture
def fake_training(monkeypatch):
    from engines.collab import counter_training

    calls = {}

    def train_counter(config, out, *, quick, progress):
        calls["train"] = {"config": config, "out": out, "quick": quick}
        progress(0.5, 1.0, "epoch 1/2: loss 1.0")
        progress(0.8, 1.0)
        return REPORT

    def write_plots(report, folder, stem):
        calls["plots"] = (report, folder, stem)
        return [folder / f"{stem}_reliability.png", folder / f"{stem}_accuracy.png"]

    monkeypatch.setattr(counter_training, "train_counter", train_counter)
    monkeypatch.setattr(counter_training, "write_plots", write_plots)
    monkeypatch.setattr(counter_training, "format_summary", lambda report: f"summary of {report['temperature']}")
    return calls


def test_train_counter_job_trains_into_its_own_folder(tmp_path, fake_training):
    jobs.train_counter_job(FakeContext(tmp_path), seed=4, quick=True)
    train = fake_training["train"]
    assert train["out"] == tmp_path / "counter.pt"
    assert train["quick"] is True
    assert (train["config"].seed, train["config"].train_size) == (4, 256)
    assert fake_training["plots"] == (REPORT, tmp_path, "counter")


def test_train_counter_job_logs_and_reports_the_trainings_progress(tmp_path, fake_training):
    ctx = FakeContext(tmp_path)
    jobs.train_counter_job(ctx, quick=True)
    assert ctx.reports == [(0.475, "training: epoch 1/2: loss 1.0"), (0.76, "training: 80%"),
                           (0.96, "drawing the plots")]
    assert ctx.logs == ["epoch 1/2: loss 1.0", "summary of 1.7"]


def test_train_counter_job_result_names_its_files_and_metrics(tmp_path, fake_training):
    result = jobs.train_counter_job(FakeContext(tmp_path), quick=True)
    assert result == {
        "result_path": str(tmp_path / "counter_report.json"), "kind": "train_counter", "quick": True,
        "weights_path": str(tmp_path / "counter.pt"), "report_path": str(tmp_path / "counter_report.json"),
        "scores_path": str(tmp_path / "counter_scores.npz"),
        "plots": [str(tmp_path / "counter_reliability.png"), str(tmp_path / "counter_accuracy.png")],
        **SUMMARY, "total_time_s": 3.5}


def test_train_counter_job_without_matplotlib_still_succeeds_without_plots(tmp_path, fake_training, monkeypatch):
    from engines.collab import counter_training

    def no_matplotlib(report, folder, stem):
        raise ImportError("No module named 'matplotlib'")

    monkeypatch.setattr(counter_training, "write_plots", no_matplotlib)
    ctx = FakeContext(tmp_path)
    result = jobs.train_counter_job(ctx, quick=False, train_size=256, batch_size=64)
    assert result["plots"] == [] and result["quick"] is False
    assert ctx.logs == ["epoch 1/2: loss 1.0", "no plots: No module named 'matplotlib'", "summary of 1.7"]


# ---------------------------------------------------------------- queries


def test_simulation_jobs_lists_simulate_and_sweep_jobs_newest_first(sqlite_db):
    first = _job(SIMULATE, "succeeded")
    _job(TRAIN_COUNTER, "succeeded")
    second = _job(SWEEP, "failed")
    third = _job(SIMULATE, "queued")
    assert [j.id for j in jobs.simulation_jobs()] == [third, second, first]
    assert [j.id for j in jobs.simulation_jobs(succeeded=True)] == [first]
    assert [j.id for j in jobs.simulation_jobs(limit=2)] == [third, second]


def test_simulation_jobs_shows_the_newest_twenty_by_default(sqlite_db):
    ids = [_job(SWEEP, "succeeded") for _ in range(21)]
    assert [j.id for j in jobs.simulation_jobs()] == ids[::-1][:20]


def test_counter_jobs_lists_training_jobs_newest_first(sqlite_db):
    first = _job(TRAIN_COUNTER, "succeeded")
    _job(SIMULATE, "succeeded")
    second = _job(TRAIN_COUNTER, "running")
    third = _job(TRAIN_COUNTER, "succeeded")
    assert [j.id for j in jobs.counter_jobs()] == [third, second, first]
    assert [j.id for j in jobs.counter_jobs(succeeded=True)] == [third, first]
    assert [j.id for j in jobs.counter_jobs(limit=1)] == [third]


def test_counter_jobs_shows_the_newest_twenty_by_default(sqlite_db):
    ids = [_job(TRAIN_COUNTER, "succeeded") for _ in range(21)]
    assert [j.id for j in jobs.counter_jobs()] == ids[::-1][:20]


def test_the_job_lists_read_the_database_given(other_engine):
    _job(SIMULATE, "succeeded")
    _job(TRAIN_COUNTER, "succeeded")
    sweep = _job(SWEEP, "succeeded", engine=other_engine)
    older = _job(TRAIN_COUNTER, "succeeded", engine=other_engine)
    newer = _job(TRAIN_COUNTER, "succeeded", engine=other_engine)
    assert [(j.id, j.kind) for j in jobs.simulation_jobs(engine=other_engine)] == [(sweep, SWEEP)]
    assert [j.id for j in jobs.counter_jobs(engine=other_engine)] == [newer, older]
    assert list(jobs.ai_score_choices(engine=other_engine)) == ["synthetic", "shipped", f"job:{newer}", f"job:{older}"]


SWEEP_FILE = {"config": {"alpha_harm_grid": [0.05], "alpha_comp_grid": [0.1, 0.2]}, "cells": [],
              "accuracy": [[0.7, 0.8]], "human_alone_accuracy": 0.6, "ai_alone_accuracy": 0.7}


def test_simulation_result_reads_the_jobs_result_file(sqlite_db, tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(SWEEP_FILE))
    job_id = _job(SWEEP, "succeeded", result_path=str(path))
    result = jobs.simulation_result(job_id)
    assert result.kind == "sweep" and result.accuracy == [[0.7, 0.8]]


def test_simulation_result_of_a_job_in_another_database(other_engine, tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(SWEEP_FILE))
    job_id = _job(SWEEP, "succeeded", result_path=str(path), engine=other_engine)
    assert jobs.simulation_result(job_id, engine=other_engine).accuracy == [[0.7, 0.8]]


def test_simulation_result_says_why_there_is_none(sqlite_db):
    with pytest.raises(ResultFileError, match=re.escape("No job with id 999.")):
        jobs.simulation_result(999)
    job_id = _job(SIMULATE, "running")
    with pytest.raises(ResultFileError, match=re.escape(f"job {job_id} has no result file (status running)")):
        jobs.simulation_result(job_id)


REPORT_FILE = {"command": "python -m engines.collab train-counter --quick", "n_parameters": 12_345,
               "temperature": 1.7, "metrics": {"overall": REPORT["metrics"]["overall"]}}


def _report_file(job_id: int, *plots: str) -> Path:
    folder = jobqueue.job_dir(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "counter_report.json").write_text(json.dumps(REPORT_FILE))
    for name in plots:
        (folder / name).write_bytes(b"png")
    return folder


def test_counter_job_report_reads_the_report_and_the_plots_present(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    folder = _report_file(job_id, "counter_accuracy.png")
    report = jobs.counter_job_report(job_id)
    assert (report.job_id, report.temperature, report.n_parameters) == (job_id, 1.7, 12_345)
    assert report.plots == [folder / "counter_accuracy.png"]


def test_counter_job_report_lists_both_plots_reliability_first(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    folder = _report_file(job_id, "counter_accuracy.png", "counter_reliability.png")
    assert jobs.counter_job_report(job_id).plots == [folder / "counter_reliability.png",
                                                     folder / "counter_accuracy.png"]


def test_counter_job_report_of_a_job_in_another_database(other_engine):
    job_id = _job(TRAIN_COUNTER, "succeeded", engine=other_engine)
    _report_file(job_id)
    assert jobs.counter_job_report(job_id, engine=other_engine).job_id == job_id


def test_counter_job_report_refuses_a_missing_job(sqlite_db):
    with pytest.raises(ResultFileError, match=re.escape("No job with id 999.")):
        jobs.counter_job_report(999)


@pytest.mark.parametrize("kind, status", [(SIMULATE, "succeeded"), (TRAIN_COUNTER, "queued"),
                                          (TRAIN_COUNTER, "failed")])
def test_counter_job_report_refuses_a_job_that_is_not_a_succeeded_training(sqlite_db, kind, status):
    job_id = _job(kind, status)
    _report_file(job_id)
    message = f"job #{job_id} is not a succeeded collab.train_counter job ({kind}, {status})"
    with pytest.raises(ResultFileError, match=re.escape(message)):
        jobs.counter_job_report(job_id)


def test_counter_job_report_says_the_report_is_missing(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded")
    with pytest.raises(ResultFileError, match=re.escape(f"training job #{job_id} has no counter_report.json")):
        jobs.counter_job_report(job_id)


# ---------------------------------------------------------------- AI score sources


def test_ai_score_choices_offer_synthetic_shipped_and_each_succeeded_training(sqlite_db):
    older = _job(TRAIN_COUNTER, "succeeded", result={"overall": {"n": 128, "accuracy": 0.61234}},
                 params={"quick": True})
    _job(TRAIN_COUNTER, "failed", result={"overall": {"accuracy": 0.9}})
    _job(SIMULATE, "succeeded")
    newer = _job(TRAIN_COUNTER, "succeeded", result={}, params={"quick": False})
    assert jobs.ai_score_choices() == {
        "synthetic": "synthetic AI (parametric)", "shipped": "shipped CNN (assets/collab)",
        f"job:{newer}": f"CNN from job #{newer}", f"job:{older}": f"CNN from job #{older}, accuracy 0.612, quick"}
    assert list(jobs.ai_score_choices(limit=1)) == ["synthetic", "shipped", f"job:{newer}"]


def test_ai_score_choices_offer_the_newest_fifty_trainings_by_default(sqlite_db):
    ids = [_job(TRAIN_COUNTER, "succeeded") for _ in range(51)]
    assert list(jobs.ai_score_choices())[2:] == [f"job:{i}" for i in ids[::-1][:50]]


def test_ai_score_choices_without_a_result_or_params_show_the_job_only(sqlite_db):
    job_id = _job(TRAIN_COUNTER, "succeeded", result=None, params=None)
    assert jobs.ai_score_choices()[f"job:{job_id}"] == f"CNN from job #{job_id}"


def test_ai_score_params_of_each_source():
    assert jobs.ai_score_params("synthetic") == {"ai": "synthetic"}
    assert jobs.ai_score_params("shipped") == {"ai": "cnn"}
    assert jobs.ai_score_params("job:12") == {"ai": "cnn", "counter_job_id": 12}


@pytest.mark.parametrize("key", ["job:", "job:x", "job:x1", "jobs:1", "job:1a", "Shipped", "1"])
def test_ai_score_params_refuses_an_unknown_source(key):
    with pytest.raises(ValueError, match=re.escape(f"unknown AI score source {key!r} (synthetic, shipped or job:<id>)")):
        jobs.ai_score_params(key)
