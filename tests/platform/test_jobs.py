"""Jobs: progress and results persisted, cancel, crash -> failed, stale -> failed, executor in a child process."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from engines.platform import jobqueue, settings
from engines.platform.db import write_transaction
from engines.platform.jobqueue import JobContext, register_job
from engines.platform.models import Job, utcnow

REAPED_AT = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)
REAPED_ERROR = "The worker stopped responding (test)."


@register_job("tests.echo")
def echo_job(ctx: JobContext, value: int = 1, steps: int = 3) -> dict:
    """Reports progress ``steps`` times and returns twice the value."""
    for i in range(steps):
        ctx.log(f"step {i}")
        ctx.progress((i + 1) / steps, f"step {i + 1} of {steps}")
    return {"double": value * 2}


@register_job("tests.boom")
def boom_job(ctx: JobContext) -> dict:
    ctx.progress(0.5, "about to fail")
    raise ValueError("the model diverged")


@register_job("tests.reaped_midway")
def reaped_midway_job(ctx: JobContext) -> dict:
    """Is marked failed (as the reaper does) while it runs, then returns normally."""
    with write_transaction() as session:
        job = session.get(Job, ctx.job_id)
        job.status, job.finished_at, job.error = "failed", REAPED_AT, REAPED_ERROR
        session.add(job)
    return {"value": 1}


def _running_job(heartbeat_seconds_ago: float) -> int:
    """A claimed job whose last heartbeat is written directly, ``heartbeat_seconds_ago`` before now."""
    job_id = jobqueue.submit_job("tests.echo")
    assert jobqueue.claim(job_id, "worker-1")
    with write_transaction() as session:
        job = session.get(Job, job_id)
        job.heartbeat_at = utcnow() - timedelta(seconds=heartbeat_seconds_ago)
        session.add(job)
    return job_id


def _configure_stale_after_s(monkeypatch, seconds: float) -> None:
    monkeypatch.setenv("HAI_JOB_STALE_AFTER_S", str(seconds))
    settings.reset_settings()


def test_job_runs_and_persists_progress_log_and_result(any_db):
    job_id = jobqueue.submit_job("tests.echo", {"value": 21})
    assert jobqueue.get_job(job_id).status == "queued"
    assert jobqueue.run_job(job_id) == "succeeded"
    job = jobqueue.get_job(job_id)
    # A finished job says so, not its last progress line (which stays in the log).
    assert job.result == {"double": 42} and job.progress == 1.0 and job.message == "done"
    assert "step 2" in job.log and job.code_version and job.finished_at >= job.started_at


def test_failing_job_is_marked_failed_with_its_error(sqlite_db):
    job_id = jobqueue.submit_job("tests.boom")
    assert jobqueue.run_job(job_id) == "failed"
    job = jobqueue.get_job(job_id)
    assert "ValueError: the model diverged" in job.error and job.progress == 0.5
    assert job.message == "failed: ValueError: the model diverged"


def test_cancel_queued_and_running(sqlite_db):
    queued = jobqueue.submit_job("tests.echo")
    assert jobqueue.cancel_job(queued) == "cancelled"
    assert jobqueue.run_job(queued) == "cancelled"  # a worker that picks it up later does nothing
    running = jobqueue.submit_job("tests.echo", {"steps": 5})
    assert jobqueue.claim(running, "w")
    jobqueue.cancel_job(running)
    assert jobqueue.run_job(running, worker="w") == "cancelled"


def test_unknown_kind_and_bad_params_are_refused(sqlite_db):
    with pytest.raises(jobqueue.JobError, match="Unknown job kind 'nope'"):
        jobqueue.submit_job("nope")
    with pytest.raises(jobqueue.JobError, match="seconds"):
        jobqueue.submit_job("platform.countdown", {"seconds": -1})
    assert jobqueue.list_jobs() == []


def test_stale_running_job_is_reaped_as_failed(sqlite_db):
    from datetime import timedelta

    job_id = jobqueue.submit_job("tests.echo")
    jobqueue.claim(job_id, "dead-worker")
    with write_transaction() as session:
        job = session.get(Job, job_id)
        job.heartbeat_at = utcnow() - timedelta(minutes=10)
        session.add(job)
    assert jobqueue.reap_stale_jobs(stale_after_s=60) == [job_id]
    job = jobqueue.get_job(job_id)
    assert job.status == "failed" and "stopped responding" in job.error
    assert job.message == "failed: the worker stopped responding"  # not its last progress line


def test_reaper_with_stale_after_zero_reaps_any_running_job(sqlite_db, monkeypatch):
    """0 s means "no grace at all", not "use the configured default" (here an hour)."""
    monkeypatch.setenv("HAI_JOB_STALE_AFTER_S", "3600")
    from engines.platform.settings import get_settings

    get_settings.cache_clear() if hasattr(get_settings, "cache_clear") else None
    job_id = jobqueue.submit_job("tests.echo")
    jobqueue.claim(job_id, "worker")
    assert jobqueue.reap_stale_jobs(stale_after_s=0) == [job_id]


def test_claim_refuses_a_job_another_worker_is_running(any_db):
    job_id = jobqueue.submit_job("tests.echo")
    assert jobqueue.claim(job_id, "worker-1")
    assert not jobqueue.claim(job_id, "worker-2")
    assert jobqueue.get_job(job_id).worker == "worker-1"


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_claim_refuses_a_finished_job(sqlite_db, status):
    job_id = jobqueue.submit_job("tests.echo")
    with write_transaction() as session:
        job = session.get(Job, job_id)
        job.status = status
        session.add(job)
    assert not jobqueue.claim(job_id, "worker-1")
    job = jobqueue.get_job(job_id)
    assert (job.status, job.worker) == (status, None)


def test_reaper_leaves_a_job_with_a_recent_heartbeat_running(any_db):
    job_id = _running_job(heartbeat_seconds_ago=5)
    assert jobqueue.reap_stale_jobs(stale_after_s=60) == []
    job = jobqueue.get_job(job_id)
    assert (job.status, job.error, job.finished_at) == ("running", None, None)


def test_reaper_fails_a_job_silent_longer_than_the_given_stale_after_s(any_db, monkeypatch):
    _configure_stale_after_s(monkeypatch, 3600)  # the setting alone would spare it
    job_id = _running_job(heartbeat_seconds_ago=30)
    assert jobqueue.reap_stale_jobs(stale_after_s=10) == [job_id]
    assert jobqueue.get_job(job_id).status == "failed"


def test_reaper_spares_a_job_silent_shorter_than_the_given_stale_after_s(any_db, monkeypatch):
    _configure_stale_after_s(monkeypatch, 10)  # the setting alone would reap it
    job_id = _running_job(heartbeat_seconds_ago=30)
    assert jobqueue.reap_stale_jobs(stale_after_s=3600) == []
    assert jobqueue.get_job(job_id).status == "running"


def test_reaper_without_stale_after_s_uses_the_configured_one(any_db, monkeypatch):
    _configure_stale_after_s(monkeypatch, 10)
    job_id = _running_job(heartbeat_seconds_ago=30)
    assert jobqueue.reap_stale_jobs() == [job_id]


def test_a_job_failed_while_running_keeps_that_outcome_when_its_function_returns(any_db):
    job_id = jobqueue.submit_job("tests.reaped_midway")
    assert jobqueue.run_job(job_id) == "failed"
    job = jobqueue.get_job(job_id)
    assert (job.status, job.error, job.finished_at, job.result) == ("failed", REAPED_ERROR, REAPED_AT, {})


@pytest.mark.slow
def test_local_executor_runs_jobs_in_child_processes(start_executor):
    executor = start_executor(max_workers=2)
    ok = jobqueue.submit_job("platform.countdown", {"seconds": 0.5})
    bad = jobqueue.submit_job("platform.countdown", {"seconds": 0.2, "fail": True})
    slow = jobqueue.submit_job("platform.countdown", {"seconds": 60})
    executor.wake()
    assert jobqueue.wait_for_job(ok, timeout_s=60).status == "succeeded"
    failed = jobqueue.wait_for_job(bad, timeout_s=60)
    assert failed.status == "failed" and "failed on request" in failed.error
    deadline = time.monotonic() + 30
    while jobqueue.get_job(slow).status != "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    jobqueue.cancel_job(slow)
    assert jobqueue.wait_for_job(slow, timeout_s=30).status == "cancelled"
    assert jobqueue.get_job(ok).worker == executor.worker


@pytest.mark.slow
def test_job_whose_process_dies_is_marked_failed(start_executor):
    executor = start_executor(max_workers=1)
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 120})
    deadline = time.monotonic() + 30
    while job_id not in executor._running and time.monotonic() < deadline:  # noqa: SLF001
        time.sleep(0.1)
    executor._running[job_id].kill()  # noqa: SLF001 - simulate a crash (segfault, OOM kill)
    job = jobqueue.wait_for_job(job_id, timeout_s=30)
    assert job.status == "failed" and "exited with code -9" in job.error


@pytest.mark.slow
def test_a_running_jobs_process_stops_when_its_executor_does(sqlite_db, tmp_path):
    """A server stopped (here: killed) leaves no job process behind; the job says why it failed."""
    import os
    import signal
    import subprocess
    import sys

    from engines.platform.settings import get_settings

    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 120})
    parent = subprocess.Popen([sys.executable, "-c", (
        "import time\n"
        "from engines.platform.jobqueue import LocalExecutor\n"
        f"ex = LocalExecutor(1, database_url={sqlite_db!r}, poll_s=0.2)\n"
        "ex.start()\n"
        # The job row says running (claimed) a moment before its process exists: wait for the process.
        "while not ex._running: time.sleep(0.1)\n"
        "print(next(iter(ex._running.values())).pid, flush=True)\n"
        "time.sleep(600)\n")],
        cwd=jobqueue.REPO_ROOT, env={**os.environ, "HAI_DATA_DIR": str(get_settings().data_dir)},
        stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)  # no clean shutdown: the child must notice by itself
    parent.wait()
    deadline = time.monotonic() + 30
    while jobqueue.get_job(job_id).status == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    job = jobqueue.get_job(job_id)
    assert job.status == "failed" and job.error == jobqueue.PARENT_GONE and job.message == "failed: its executor stopped"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        else:
            try:  # reap it if it is our zombie grandchild's: it was re-parented, so only poll
                os.waitpid(child, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.2)
    else:
        raise AssertionError(f"job process {child} is still alive")

