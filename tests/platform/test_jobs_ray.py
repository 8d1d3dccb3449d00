"""Jobs on Ray (``HAI_JOB_EXECUTOR=ray``): the job suite against a real local Ray, started once here.

The rows a job leaves must read exactly as with the local executor (``test_jobs.py``): success,
failure, cancel; a job whose worker is killed, or whose cluster goes away, is failed with the
reason. A sweep fanned out over Ray tasks, or over local processes, gives the serial result.
The jobs are the platform's ``platform.countdown`` (a Ray worker knows only the registered kinds,
not this module's).
"""

from __future__ import annotations

import functools
import json
import operator
import os
import signal
import sys
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest
import ray
from pydantic import ValidationError

from engines.collab.jobs import SWEEP, SweepParams
from engines.collab.sweep import run_sweep
from engines.platform import jobqueue, settings
from engines.platform.fanout import map_cells
from engines.platform.ray_executor import RayExecutor

# Task slots of the test cluster (logical, not cores): more than two, so that a task an earlier test
# left running (a job stopped by force) cannot make two cells that must run side by side take turns.
RAY_SLOTS = 4


@pytest.fixture(scope="module")
def ray_cluster():
    ray.init(num_cpus=RAY_SLOTS, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def on_ray(ray_cluster, sqlite_db, monkeypatch):
    """Jobs and sweeps configured to run on Ray (Ray itself back up, should a test have shut it down)."""
    if not ray.is_initialized():
        ray.init(num_cpus=RAY_SLOTS, include_dashboard=False, log_to_driver=False)
    monkeypatch.setenv("HAI_JOB_EXECUTOR", "ray")
    settings.reset_settings()
    return sqlite_db


@pytest.fixture
def executor(on_ray):
    """``start(**options)``: a Ray executor on the test's database, polling fast; shut down after the test."""
    started: list[RayExecutor] = []

    def start(**options) -> RayExecutor:
        started.append(RayExecutor(2, poll_s=0.2, **options))
        started[-1].start()
        return started[-1]

    yield start
    for running in started:
        running.shutdown()


def _wait_until_running(job_id: int, timeout_s: float = 30) -> jobqueue.Job:
    deadline = time.monotonic() + timeout_s
    while (job := jobqueue.get_job(job_id)).status != "running":
        assert time.monotonic() < deadline and job.status == "queued", f"job {job_id} is {job.status}: {job.error}"
        time.sleep(0.1)
    return job


def _pid_of(job: jobqueue.Job) -> int:
    node, pid, kind = job.worker.split(":")
    assert (node, kind) == (os.uname().nodename, "ray")
    return int(pid)


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_configured_executor_is_the_ray_one(on_ray):
    made = jobqueue.make_executor(3)
    assert isinstance(made, RayExecutor) and made.max_workers == 3 and made.address == ""


def test_ray_configured_where_it_is_not_installed_is_refused_with_how_to_install_it(monkeypatch):
    monkeypatch.setenv("HAI_JOB_EXECUTOR", "ray")
    settings.reset_settings()
    monkeypatch.setitem(sys.modules, "ray", None)  # what an environment without Ray imports
    monkeypatch.delitem(sys.modules, "engines.platform.ray_executor")
    with pytest.raises(jobqueue.JobError, match=r"HAI_JOB_EXECUTOR=ray needs Ray .*pip install ray==2\.60\.0"):
        jobqueue.make_executor()
    with pytest.raises(RuntimeError, match=r"fans sweeps out over Ray, which is not installed here"):
        map_cells(abs, [-1, 2])
    settings.reset_settings()


def test_a_ray_address_of_no_known_form_is_refused_with_the_setting_named(monkeypatch):
    monkeypatch.setenv("HAI_RAY_ADDRESS", "http://head:8265")
    settings.reset_settings()
    with pytest.raises(ValidationError, match="HAI_RAY_ADDRESS must be empty .* got 'http://head:8265'"):
        settings.get_settings()
    settings.reset_settings()


def test_a_job_runs_as_a_ray_task_and_reads_as_a_local_one(executor):
    executor()
    ok = jobqueue.submit_job("platform.countdown", {"seconds": 0.2})
    bad = jobqueue.submit_job("platform.countdown", {"seconds": 0.1, "fail": True})
    job = jobqueue.wait_for_job(ok, timeout_s=40)
    assert (job.status, job.result, job.progress, job.message) == ("succeeded", {"slept_s": 0.2}, 1.0, "done")
    assert _pid_of(job) != os.getpid()  # it ran in a Ray worker, not here
    assert (jobqueue.job_dir(ok) / "process.log").is_file()
    failed = jobqueue.wait_for_job(bad, timeout_s=40)
    assert failed.status == "failed" and failed.message == "failed: RuntimeError: failed on request (fail=true)"
    assert "RuntimeError: failed on request (fail=true)" in failed.error
    assert failed.progress == 0.9  # the countdown's last report before it failed: 9 of 10 ticks


def test_a_running_job_cancelled_stops_at_its_next_report(executor):
    executor(cancel_grace_s=60)  # no stop by force, however slow this machine is today
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 10})  # a report every second
    _wait_until_running(job_id)
    jobqueue.cancel_job(job_id)
    job = jobqueue.wait_for_job(job_id, timeout_s=20)
    assert (job.status, job.message) == ("cancelled", "cancelled")


def test_a_collab_sweep_job_fans_out_over_ray_and_gives_the_serial_cells(executor, monkeypatch):
    executor()
    params = {"T": 400, "n_calibration": 60, "alpha_harm_grid": [0.02, 0.1], "alpha_comp_grid": [0.05, 0.2]}
    job_id = jobqueue.submit_job(SWEEP, params)
    job = jobqueue.wait_for_job(job_id, timeout_s=60)
    assert job.status == "succeeded", job.error
    fanned_out = json.loads(Path(job.result["result_path"]).read_text())
    monkeypatch.setenv("HAI_JOB_EXECUTOR", "local")
    settings.reset_settings()
    serial = run_sweep(SweepParams(**params).sweep_config())
    assert fanned_out["cells"] == serial.cells and fanned_out["accuracy"] == serial.accuracy
    assert [(c["alpha_harm"], c["alpha_comp"]) for c in fanned_out["cells"]] == [
        (0.02, 0.05), (0.02, 0.2), (0.1, 0.05), (0.1, 0.2)]  # grid order: alpha_harm outer, alpha_comp inner


def test_cells_on_ray_come_back_in_their_order_and_a_failing_cell_raises_its_own_error(on_ray):
    finished = []
    triple = functools.partial(operator.mul, 3)
    assert map_cells(triple, [5, 1, 4], on_done=lambda index, done: finished.append((index, done))) == [15, 3, 12]
    assert sorted(finished) == sorted(set(finished)) and [done for _, done in finished] == [1, 2, 3]
    with pytest.raises(ValueError, match="invalid literal for int"):
        map_cells(int, ["1", "x"])


def test_cells_on_ray_that_finish_out_of_order_come_back_in_grid_order(on_ray, tmp_path):
    from tests.helpers import last_cell_first

    finished = []
    cells = [(2, str(tmp_path), 3), (3, str(tmp_path), 3)]  # the first waits for the second to finish
    assert map_cells(last_cell_first, cells, on_done=lambda index, done: finished.append(index)) == [4, 9]
    assert finished == [1, 0]


def test_a_job_that_does_not_reach_a_report_in_time_is_stopped_by_force(executor):
    executor(cancel_grace_s=0.5)
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 120})
    pid = _pid_of(_wait_until_running(job_id))
    deadline = time.monotonic() + 30
    while jobqueue.get_job(job_id).message != "120.0 s left":  # its first report: the next is 12 s away
        assert time.monotonic() < deadline
        time.sleep(0.1)
    jobqueue.cancel_job(job_id)
    job = jobqueue.wait_for_job(job_id, timeout_s=20)
    assert (job.status, job.message) == ("cancelled", "cancelled (stopped by force)")
    deadline = time.monotonic() + 20
    while _is_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _is_alive(pid)


def test_a_job_whose_worker_is_killed_is_marked_failed_with_the_reason(executor):
    executor()
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 120})
    os.kill(_pid_of(_wait_until_running(job_id)), signal.SIGKILL)  # a crash: segfault, OOM kill
    job = jobqueue.wait_for_job(job_id, timeout_s=30)
    assert (job.status, job.message) == ("failed", "failed: its Ray task died (WorkerCrashedError)")
    assert job.error.startswith("The Ray task running this job ended before the job did (WorkerCrashedError: ")


def test_a_job_whose_cluster_goes_away_is_marked_failed_with_the_reason(executor, monkeypatch):
    """Through ``ray://``, Ray's client raises ``ConnectionError`` from every call once the cluster is gone.
    That one call is made to fail here: a cluster really going away takes this process's Ray (a driver's)
    with it, and every other test of this module needs it."""
    executor()
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 120})
    pid = _pid_of(_wait_until_running(job_id))

    def cluster_gone(*args, **kwargs):
        raise ConnectionError("Failed during this or a previous request: the connection to the cluster was lost")

    monkeypatch.setattr(ray, "wait", cluster_gone)
    job = jobqueue.wait_for_job(job_id, timeout_s=30)
    assert (job.status, job.message) == ("failed", "failed: its Ray cluster went away")
    assert job.error.startswith("This job's cluster went away while it ran (the local Ray; ConnectionError: Failed "
                                "during this or a previous request: the connection to the cluster was lost); "
                                "submit it again.")
    deadline = time.monotonic() + 20
    while _is_alive(pid) and time.monotonic() < deadline:  # and its task is stopped, should it still run
        time.sleep(0.2)
    assert not _is_alive(pid)


def test_cells_in_local_processes_give_the_serial_collab_sweep(sqlite_db, monkeypatch):
    params = {"T": 400, "n_calibration": 60, "alpha_harm_grid": [0.02, 0.1], "alpha_comp_grid": [0.05]}
    config = SweepParams(**params).sweep_config()
    serial = run_sweep(config)
    monkeypatch.setenv("HAI_FANOUT_WORKERS", "2")
    settings.reset_settings()
    assert run_sweep(config).cells == serial.cells
    with pytest.raises(ValueError, match="cannot run in 2 processes: its function .* does not pickle"):
        map_cells(lambda cell: cell, [1, 2])
    with pytest.raises(BrokenProcessPool):  # a cell whose process dies is an error, not a wait for ever
        map_cells(os._exit, [3, 4])
