"""Jobs on a Ray cluster: each queued job runs as one Ray task (``HAI_JOB_EXECUTOR=ray``).

Ray: Moritz et al., "Ray: A Distributed Framework for Emerging AI Applications" (OSDI 2018),
https://github.com/ray-project/ray. The cluster is ``HAI_RAY_ADDRESS``: empty starts a local Ray
from this process, ``auto`` joins the cluster this machine is a node of, ``ray://host:10001``
connects through a cluster's client server.

The job's rows in the database stay the truth, exactly as with ``jobqueue.LocalExecutor``: the
task calls the same ``jobqueue.run_job`` against the same database URL, so it claims the job,
writes progress, heartbeat, log, result or failure reason, and honours a cancel at its next
progress report. The executor only starts tasks and settles what a task cannot say itself: a job
whose task died (its worker was killed, its node went down) or whose cluster went away is marked
failed with the reason, and a cancel the job does not reach in time stops its task by force.

A job is claimed by its task, not before: a job waiting for a free slot on the cluster stays
``queued`` (and so is never taken for a dead job by ``jobqueue.reap_stale_jobs``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import ray
from sqlalchemy import update

from engines.platform.credentials import SecretRefused, check_key_variable, child_environment
from engines.platform.db import write_transaction
from engines.platform.jobqueue import (
    CANCEL_GRACE_S,
    PARENT_GONE,
    Dispatcher,
    JobContext,
    _finish,
    get_job,
    run_job,
)
from engines.platform.models import Job, JobStatus
from engines.platform.settings import REPO_ROOT, get_settings, reset_settings

RECONNECT_AFTER_S = 10.0  # a cluster that could not be reached is tried again after this long
OUTPUT_TAIL_CHARS = 4000  # of a dead task's output, kept in the job's error (as the local executor does)


def task_runtime_env(secrets: Mapping[str, str] | None = None) -> dict:
    """The Ray runtime environment of this project's tasks: the repository on the import path, and
    ``secrets`` (``job_secret_env``) as environment variables of the task's worker.

    Ray workers do not inherit the driver's ``sys.path``; the nodes' own ``PYTHONPATH`` is kept
    after it (Ray expands ``${PYTHONPATH}`` on the node). Secrets travel here, never as task
    arguments, which Ray keeps in its object store and shows with the task.
    """
    return {"env_vars": {"PYTHONPATH": f"{REPO_ROOT}:${{PYTHONPATH}}", **(secrets or {})}}


def connect(address: str | None = None) -> bool:
    """Join Ray from this process unless it already has; True when this call did.

    Args:
        address: ``HAI_RAY_ADDRESS`` by default. Empty starts a local Ray (all of this machine's
            cores, no dashboard: the app's Jobs page is the dashboard of its jobs).

    Raises:
        ConnectionError: no cluster answers at ``address`` (Ray's own message says why).
    """
    if ray.is_initialized():
        return False
    address = get_settings().ray_address if address is None else address
    if address:
        ray.init(address=address, log_to_driver=False)
    else:
        # A local Ray's processes (raylet, workers) inherit this process's environment: start them
        # with the child environment, so tasks see the server's other secrets no more than local jobs do.
        with _process_environment(child_environment()):
            ray.init(include_dashboard=False, log_to_driver=False)
    return True


@contextlib.contextmanager
def _process_environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is ``env`` for the block (what processes started in it inherit), then as before."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# Settings that are secrets: they reach a task as its environment (``task_runtime_env``), never as
# an argument. The first admin's password reaches no job at all.
SECRET_SETTINGS = frozenset({"database_url", "pseudonym_key", "arena_key"})
NEVER_SENT = frozenset({"admin_password"})


def _setting_variable(name: str) -> str:
    return f"HAI_{name.upper()}"


def job_settings_env() -> dict[str, str]:
    """The non-secret ``HAI_*`` variables a job's task runs under: this process's settings.

    A task on another node sees neither this process's environment nor its ``.env`` file, and a
    job must read the settings the app reads (its data folder, device). Its secrets (the database
    URL, the server keys, the API keys) are ``job_secret_env``.
    """
    values = get_settings().model_dump(exclude=SECRET_SETTINGS | NEVER_SENT)
    values.update(job_executor="ray")
    return {_setting_variable(name): str(value) for name, value in values.items()}


def job_secret_env(database_url: str) -> dict[str, str]:
    """The secrets a job's task runs with: the database URL (``database_url``), the server keys
    and the API keys of this process's declared variables (those ``credentials.check_key_variable``
    accepts), the same a local job's process gets (``credentials.child_environment``)."""
    settings = get_settings()
    secrets = {_setting_variable(name): str(getattr(settings, name)) for name in sorted(SECRET_SETTINGS)}
    secrets[_setting_variable("database_url")] = database_url
    secrets.update({name: value for name, value in os.environ.items() if _is_key_variable(name)})
    return secrets


def _is_key_variable(name: str) -> bool:
    """Whether ``name`` is declared for API keys (``credentials.check_key_variable`` accepts it)."""
    try:
        return check_key_variable(name) is not None
    except SecretRefused:
        return False


@contextlib.contextmanager
def _output_into(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (also what C libraries print) to ``path`` for the block.

    The job's ``process.log``, as the local executor writes it; the worker's own streams come
    back afterwards, since Ray reuses the worker for the next task.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with path.open("w") as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
    finally:
        for fd in saved:
            os.close(fd)


# No retry: a task that died may have half-run its job, and the job's row already says so.
@ray.remote(num_cpus=1, max_retries=0)
def run_job_task(job_id: int, settings_env: dict[str, str]) -> str:
    """On a Ray worker: run job ``job_id`` with ``jobqueue.run_job`` (claiming it) and return its status.

    ``settings_env`` holds the non-secret settings; the secrets are already in this worker's
    environment (``task_runtime_env``).
    """
    os.environ.update(settings_env)
    reset_settings()  # a reused worker may have read another database's settings
    with _output_into(JobContext(job_id).result_dir / "process.log"):
        return run_job(job_id, worker=f"{os.uname().nodename}:{os.getpid()}:ray")


def _output_tail(job_id: int) -> str:
    output = JobContext(job_id).result_dir / "process.log"
    return output.read_text(errors="replace")[-OUTPUT_TAIL_CHARS:] if output.exists() else ""


class RayExecutor(Dispatcher):
    """Submits each queued job as a Ray task (``run_job_task``), up to ``max_workers`` at once.

    Args:
        max_workers: jobs on the cluster at once (``HAI_JOB_WORKERS`` by default); more stay queued.
        database_url: the database the tasks write to (the configured one by default); every node
            must reach it (PostgreSQL for a cluster; a SQLite file only with a local Ray).
        address: the cluster (``HAI_RAY_ADDRESS`` by default; see ``connect``).
        poll_s: how often the dispatcher looks for queued jobs and finished tasks.
        cancel_grace_s: how long a job may take to reach its next progress report after a cancel
            before its task is stopped by force.
        reconnect_after_s: how long after a failed connection (or a lost cluster) to try again;
            queued jobs wait meanwhile, their message saying why.
    """

    thread_name = "hai-ray-dispatcher"

    def __init__(self, max_workers: int | None = None, *, database_url: str | None = None,
                 address: str | None = None, poll_s: float = 1.0, cancel_grace_s: float = CANCEL_GRACE_S,
                 reconnect_after_s: float = RECONNECT_AFTER_S):
        super().__init__(max_workers, database_url=database_url, poll_s=poll_s)
        self.address = get_settings().ray_address if address is None else address
        self.cancel_grace_s = cancel_grace_s
        self.reconnect_after_s = reconnect_after_s
        self._tasks: dict[int, ray.ObjectRef] = {}
        self._stopping_since: dict[int, float] = {}  # job id -> when its task was first due to stop
        self._connected = False
        self._started_ray = False
        self._failed_at: float | None = None

    @property
    def cluster(self) -> str:
        """The cluster in words, for messages."""
        return f"the Ray cluster at {self.address}" if self.address else "the local Ray"

    def _stop_running(self) -> None:
        """Stop the running jobs' tasks (a job never outlives its executor)."""
        if self._connected and ray.is_initialized():
            for job_id, ref in list(self._tasks.items()):
                with contextlib.suppress(Exception):  # a cluster already gone has stopped the task itself
                    ray.cancel(ref, force=True)
                if get_job(job_id, engine=self.engine).status == JobStatus.RUNNING:  # a queued one waits for the next
                    _finish(job_id, JobStatus.FAILED, engine=self.engine, message="failed: its executor stopped",
                            error=PARENT_GONE)
        self._tasks.clear()
        if self._started_ray and ray.is_initialized():
            ray.shutdown()

    # ------------------------------------------------------------------ the dispatcher

    def _dispatch_once(self) -> None:
        if self._ensure_connected():
            self._watch_tasks()
            self._start_queued()

    def _ensure_connected(self) -> bool:
        if self._connected:
            if ray.is_initialized():
                return True
            # Ray was shut down under this executor: a Ray call now would quietly start a new one.
            self._cluster_lost("Ray was shut down in this process")
            return False
        if self._failed_at is not None and time.monotonic() - self._failed_at < self.reconnect_after_s:
            return False
        try:
            self._started_ray = connect(self.address) or self._started_ray
        except Exception as exc:  # noqa: BLE001 - any failure to connect leaves the jobs queued, saying why
            self._failed_at = time.monotonic()
            self._tell_queued(f"waiting for {self.cluster}: {type(exc).__name__}: {exc}"[:200])
            return False
        self._connected, self._failed_at = True, None
        return True

    def _tell_queued(self, message: str) -> None:
        """Say on every queued job why it does not start (the Jobs page shows the message)."""
        with write_transaction(self.engine) as session:
            session.exec(update(Job).where(Job.status == JobStatus.QUEUED, Job.message != message)
                         .values(message=message))

    def _start_queued(self) -> None:
        queued = self._queued(self.max_workers - len(self._tasks), besides=tuple(self._tasks))
        if not queued:
            return
        settings_env = job_settings_env()
        runtime_env = task_runtime_env(job_secret_env(self.database_url))
        for job_id in queued:
            self._tasks[job_id] = run_job_task.options(runtime_env=runtime_env, name=f"hai-job-{job_id}") \
                .remote(job_id, settings_env)

    def _watch_tasks(self) -> None:
        if not self._tasks:
            return
        try:
            ready, _ = ray.wait(list(self._tasks.values()), num_returns=len(self._tasks), timeout=0)
        except Exception as exc:  # noqa: BLE001 - asking about our own tasks fails only when the cluster is gone
            self._cluster_lost(f"{type(exc).__name__}: {exc}")
            return
        ready = set(ready)
        for job_id, ref in list(self._tasks.items()):
            if ref in ready:
                del self._tasks[job_id]
                self._stopping_since.pop(job_id, None)
                self._settle(job_id, ref)
            else:
                self._stop_if_due(job_id, ref)

    def _settle(self, job_id: int, ref: ray.ObjectRef) -> None:
        """A finished task: its job's row already says how it ended, unless the task died first."""
        try:
            ray.get(ref)
            return
        except ray.exceptions.RayError as exc:
            died = exc
        job = get_job(job_id, engine=self.engine)
        if job.status in JobStatus.FINISHED:
            return
        reason = f"{type(died).__name__}: {died}".strip()
        _finish(job_id, JobStatus.FAILED, engine=self.engine, message=f"failed: its Ray task died ({type(died).__name__})",
                error=f"The Ray task running this job ended before the job did ({reason[:2000]}).\n{_output_tail(job_id)}")

    def _stop_if_due(self, job_id: int, ref: ray.ObjectRef) -> None:
        """Stop a task by force when its job was cancelled and did not stop by itself in time, or when
        its job's row was finished by someone else (cancelled while queued, reaped)."""
        job = get_job(job_id, engine=self.engine)
        due = job.status in JobStatus.FINISHED or (job.status == JobStatus.RUNNING and job.cancel_requested)
        if not due:
            self._stopping_since.pop(job_id, None)
            return
        since = self._stopping_since.setdefault(job_id, time.monotonic())
        if time.monotonic() - since <= self.cancel_grace_s:
            return
        if job.status == JobStatus.RUNNING:
            _finish(job_id, JobStatus.CANCELLED, engine=self.engine, message="cancelled (stopped by force)")
        ray.cancel(ref, force=True)
        del self._tasks[job_id]
        self._stopping_since.pop(job_id, None)

    def _cluster_lost(self, reason: str) -> None:
        """Fail the jobs that were running on the cluster; queued ones wait for it to come back.

        Seen through ``ray://`` (Ray's client raises ``ConnectionError`` once the cluster is gone). A
        process joined to the cluster as a driver (an empty address or ``auto``) ends with its
        cluster, as Ray ends drivers; the next executor's ``reap_stale_jobs`` fails its jobs then.
        """
        for job_id, ref in list(self._tasks.items()):
            with contextlib.suppress(Exception):  # a task on a flaky connection is stopped with its job
                ray.cancel(ref, force=True)
            if get_job(job_id, engine=self.engine).status == JobStatus.RUNNING:
                _finish(job_id, JobStatus.FAILED, engine=self.engine, message="failed: its Ray cluster went away",
                        error=f"This job's cluster went away while it ran ({self.cluster}; {reason[:2000]}); "
                              f"submit it again.\n{_output_tail(job_id)}")
        self._tasks.clear()
        self._stopping_since.clear()
        self._connected, self._failed_at = False, time.monotonic()
        if self._started_ray:  # a client reconnects from scratch: forget the dead connection
            with contextlib.suppress(Exception):
                ray.shutdown()
