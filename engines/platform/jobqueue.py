"""Background jobs: long work with progress, log, result and failure reason kept in the database.

A job is a registered function ``fn(ctx: JobContext, **params) -> dict``. Submitting one inserts
a ``queued`` row; an executor claims it atomically and runs it outside the caller's thread. The
local executor runs each job in its own Python process (``python -m engines.platform run-job
ID``), so a crash or a cancel never takes the app down, and the job writes its own heartbeat;
a job whose heartbeat stops (its process died, the server restarted) is marked failed with the
reason, never left running. The ``Executor`` protocol is what a cluster executor implements: with
``HAI_JOB_EXECUTOR=ray`` each job is a Ray task (``engines.platform.ray_executor``) that runs the
same ``run_job`` against the same database, so a job's rows read alike wherever it ran.

Job functions live in ``engines/<area>/jobs.py`` modules, which are discovered automatically
(``engines.platform.discovery.discover_all``).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError
from sqlalchemy import update
from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.platform.credentials import child_environment
from engines.platform.db import get_engine, read_session, write_transaction
from engines.platform.discovery import discover_all
from engines.platform.files import echo
from engines.platform.models import Job, JobStatus, utcnow
from engines.platform.private_files import private_dir
from engines.platform.provenance import code_version
from engines.platform.registries import Registry
from engines.platform.settings import REPO_ROOT, get_settings

HEARTBEAT_EVERY_S = 2.0
CANCEL_GRACE_S = 5.0
LOG_LIMIT_CHARS = 200_000


class JobCancelled(Exception):
    """Raised inside a job when a cancel was requested; the job ends as ``cancelled``."""


class JobError(ValueError):
    """A job cannot be submitted or changed; the message says why."""


@dataclass(frozen=True)
class JobKind:
    name: str
    fn: Callable[..., dict]
    title: str
    description: str
    params: type[BaseModel] | None


_KINDS: Registry[JobKind] = Registry("platform", "job kinds")


def register_job(name: str, *, title: str = "", params: type[BaseModel] | None = None):
    """Decorator: make ``fn(ctx, **params) -> dict`` runnable as job kind ``name``."""

    def wrap(fn: Callable[..., dict]) -> Callable[..., dict]:
        _KINDS.add(name, JobKind(name, fn, title or name, (fn.__doc__ or "").strip(), params), title or name,
                   replace=True)
        return fn

    return wrap


def discover_job_kinds() -> dict[str, JobKind]:
    """The registered job kinds, after ``discovery.discover_all`` (every area's jobs and the studies, once).

    A worker runs jobs through here, so it knows what the app knows: e.g. a rule a study registers.
    """
    discover_all()
    return dict(_KINDS)


def get_kind(name: str) -> JobKind:
    kinds = discover_job_kinds()
    if name not in kinds:
        raise JobError(f"Unknown job kind {echo(name)} (known: {', '.join(sorted(kinds)) or 'none'}).")
    return kinds[name]


# ------------------------------------------------------------------ running side


class JobContext:
    """Handed to a running job: report progress, write log lines, find the result folder."""

    def __init__(self, job_id: int, engine: Engine | None = None):
        self.job_id = job_id
        self._engine = engine
        self._pending_log: list[str] = []
        self._last_flush = 0.0
        self._lock = threading.Lock()

    @property
    def result_dir(self) -> Path:
        path = job_dir(self.job_id)
        private_dir(path.parents[1])  # the data directory: closed to other users of the machine
        path.mkdir(parents=True, exist_ok=True)
        return path

    def log(self, line: str) -> None:
        with self._lock:
            self._pending_log.append(f"[{utcnow():%H:%M:%S}] {line}")
        self._flush(force=False)

    def progress(self, fraction: float, message: str | None = None) -> None:
        """Report progress in [0, 1]; raises ``JobCancelled`` if a cancel was requested."""
        fraction = min(max(float(fraction), 0.0), 1.0)
        self._flush(force=message is not None, progress=fraction, message=message)

    def check_cancelled(self) -> None:
        self._flush(force=True)

    def _flush(self, *, force: bool, progress: float | None = None, message: str | None = None) -> None:
        now = time.monotonic()
        if not force and now - self._last_flush < 0.5:
            return
        with self._lock:
            lines, self._pending_log = self._pending_log, []
            self._last_flush = now
        with write_transaction(self._engine) as session:
            job = session.get(Job, self.job_id)
            if lines:
                job.log = (job.log + "\n".join(lines) + "\n")[-LOG_LIMIT_CHARS:]
            if progress is not None:
                job.progress = progress
            if message is not None:
                job.message = message
            job.heartbeat_at = utcnow()
            cancel = job.cancel_requested
            session.add(job)
        if cancel:
            raise JobCancelled()


def _heartbeat_loop(job_id: int, stop: threading.Event, engine: Engine | None) -> None:
    while not stop.wait(HEARTBEAT_EVERY_S):
        with write_transaction(engine) as session:
            session.exec(update(Job).where(Job.id == job_id, Job.status == JobStatus.RUNNING)
                         .values(heartbeat_at=utcnow()))


def claim(job_id: int, worker: str, *, engine: Engine | None = None) -> bool:
    """Atomically move a queued job to running for ``worker``; False if someone else has it."""
    now = utcnow()
    with write_transaction(engine) as session:
        result = session.exec(
            update(Job).where(Job.id == job_id, Job.status == JobStatus.QUEUED)
            .values(status=JobStatus.RUNNING, worker=worker, started_at=now, heartbeat_at=now)
        )
        return result.rowcount == 1


def _finish(job_id: int, status: str, *, engine: Engine | None = None, **values: Any) -> None:
    with write_transaction(engine) as session:
        # Locked, so a reaper or a second finisher waits and then sees the outcome instead of overwriting it.
        job = session.exec(select(Job).where(Job.id == job_id).with_for_update()).one()
        if job.status in JobStatus.FINISHED:
            return
        job.status = status
        job.finished_at = utcnow()
        for key, value in values.items():
            setattr(job, key, value)
        session.add(job)


def run_job(job_id: int, *, worker: str | None = None, engine: Engine | None = None) -> str:
    """Run one job in this process (claiming it if queued) and return its final status."""
    worker = worker or f"{os.uname().nodename}:{os.getpid()}"
    with read_session(engine) as session:
        job = session.get(Job, job_id)
        if job is None:
            raise JobError(f"No job with id {job_id}.")
    if job.status == JobStatus.QUEUED and not claim(job_id, worker, engine=engine):
        return get_job(job_id, engine=engine).status
    job = get_job(job_id, engine=engine)
    if job.status != JobStatus.RUNNING:
        return job.status
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat_loop, args=(job_id, stop, engine), daemon=True)
    beat.start()
    ctx = JobContext(job_id, engine)
    try:
        kind = get_kind(job.kind)
        params = kind.params.model_validate(job.params).model_dump() if kind.params else dict(job.params)
        result = kind.fn(ctx, **params) or {}
        ctx._flush(force=True)  # noqa: SLF001 - write the last log lines
        json.dumps(result)  # results must be storable; fail the job clearly if not
        # The message was the last progress line ("0.5 s left"): a finished job says it finished.
        _finish(job_id, JobStatus.SUCCEEDED, engine=engine, progress=1.0, result=result, message="done",
                result_path=str(result.get("result_path")) if result.get("result_path") else None)
    except JobCancelled:
        _finish(job_id, JobStatus.CANCELLED, engine=engine, message="cancelled")
    except BaseException as exc:  # noqa: BLE001 - any failure must end the job as failed
        _finish(job_id, JobStatus.FAILED, engine=engine, message=f"failed: {type(exc).__name__}: {exc}"[:200],
                error=f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()[-8000:]}")
        if isinstance(exc, KeyboardInterrupt):
            raise
    finally:
        stop.set()
    return get_job(job_id, engine=engine).status


# ------------------------------------------------------------------ submitting side


def submit_job(kind: str, params: dict[str, Any] | None = None, *, submitted_by: int | None = None,
               engine: Engine | None = None) -> int:
    """Queue a job; returns its id. Params are validated against the kind's schema first.

    Raises:
        JobError: unknown kind; parameters that are not a JSON object, name a parameter the kind
            does not have (never silently dropped: the job would run with defaults), or fail the
            kind's validation. The message says which.
    """
    job_kind = get_kind(kind)
    if params is not None and not isinstance(params, Mapping):
        raise JobError(f"Parameters of job {kind!r} must be a JSON object such as {{\"T\": 500}}, "
                       f"got {type(params).__name__} {json.dumps(params, default=str)[:80]}")
    params = dict(params or {})
    if job_kind.params is not None:  # a kind without a schema takes free-form keyword arguments
        known = set(job_kind.params.model_fields)
        unknown = sorted(set(params) - known)
        if unknown:
            raise JobError(f"Job {echo(kind)} has no parameter(s) {', '.join(map(echo, unknown))} "
                           f"(its parameters: {', '.join(sorted(known))})")
        try:
            params = job_kind.params.model_validate(params).model_dump(mode="json")
        except ValidationError as exc:
            detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise JobError(f"Invalid parameters for job {kind!r}: {detail}") from None
    try:
        json.dumps(params)
    except TypeError as exc:
        raise JobError(f"Job parameters must be JSON values: {exc}") from None
    with write_transaction(engine) as session:
        job = Job(kind=kind, params=params, submitted_by=submitted_by, code_version=code_version())
        session.add(job)
        session.flush()
        job_id = job.id
    executor = _EXECUTOR
    if executor is not None:
        executor.wake()
    return job_id


def get_job(job_id: int, *, engine: Engine | None = None) -> Job:
    with read_session(engine) as session:
        job = session.get(Job, job_id)
        if job is None:
            raise JobError(f"No job with id {job_id}.")
        return job


def job_dir(job_id: int) -> Path:
    """Where job ``job_id`` writes its files (``JobContext.result_dir`` creates it)."""
    return get_settings().data_dir / "jobs" / str(int(job_id))


def list_jobs(*, limit: int | None = 50, kind: str | None = None, kinds: Sequence[str] | None = None,
              status: str | None = None, params: Mapping[str, str] | None = None,
              engine: Engine | None = None) -> list[Job]:
    """The newest ``limit`` jobs (None: all), optionally of one ``kind`` or of any of ``kinds``, with
    ``status``, and whose parameters hold each string value of ``params``. Every filter runs in SQL,
    so that a filter never hides an older job behind the newest ``limit`` of all kinds."""
    with read_session(engine) as session:
        query = select(Job).order_by(Job.id.desc())
        if kind:
            query = query.where(Job.kind == kind)
        if kinds is not None:
            query = query.where(Job.kind.in_(list(kinds)))
        if status is not None:
            query = query.where(Job.status == status)
        for key, value in (params or {}).items():
            query = query.where(Job.params[key].as_string() == value)
        if limit is not None:
            query = query.limit(limit)
        return list(session.exec(query).all())


def cancel_job(job_id: int, *, engine: Engine | None = None) -> str:
    """Cancel a job: a queued one at once, a running one at its next progress report."""
    with write_transaction(engine) as session:
        job = session.get(Job, job_id)
        if job is None:
            raise JobError(f"No job with id {job_id}.")
        if job.status == JobStatus.QUEUED:
            job.status = JobStatus.CANCELLED
            job.finished_at = utcnow()
            job.message = "cancelled before it started"
        elif job.status == JobStatus.RUNNING:
            job.cancel_requested = True
        session.add(job)
        return job.status


def reap_stale_jobs(*, stale_after_s: float | None = None, engine: Engine | None = None) -> list[int]:
    """Mark running jobs whose heartbeat stopped as failed; returns their ids."""
    stale_after_s = get_settings().job_stale_after_s if stale_after_s is None else stale_after_s
    cutoff = utcnow() - timedelta(seconds=stale_after_s)
    reaped = []
    with write_transaction(engine) as session:
        # Locked like _finish: a job finishing at this moment keeps its own outcome.
        jobs = session.exec(select(Job).where(Job.status == JobStatus.RUNNING).with_for_update()).all()
        for job in jobs:
            beat: datetime | None = job.heartbeat_at or job.started_at
            if beat is None or beat < cutoff:
                job.status = JobStatus.FAILED
                job.finished_at = utcnow()
                job.error = (f"The worker stopped responding (last heartbeat {beat:%Y-%m-%d %H:%M:%S} UTC); "
                             "the process died or the server restarted.") if beat else "The worker never started."
                job.message = "failed: the worker stopped responding"  # not its last progress line
                session.add(job)
                reaped.append(job.id)
    return reaped


class Executor(Protocol):
    """Runs queued jobs somewhere: ``LocalExecutor`` in child processes, ``RayExecutor`` as Ray tasks.

    ``start`` begins dispatching, ``wake`` says a job was just queued, ``shutdown`` stops the
    dispatcher and the jobs it runs. Progress, heartbeat, log, result and outcome are written by
    ``run_job`` wherever it runs; an executor only starts jobs and fails those whose runner died.
    """

    def start(self) -> None: ...
    def wake(self) -> None: ...
    def shutdown(self) -> None: ...


PARENT_PID_ENV = "HAI_JOB_PARENT_PID"
PARENT_GONE = ("The app or worker process that started this job stopped, and the job stopped with it "
               "(a job never outlives its executor); start it again.")


def watch_parent(job_id: int, parent_pid: int, *, interval_s: float = 1.0, engine: Engine | None = None) -> threading.Thread:
    """In a job's child process: when ``parent_pid`` (the executor's process) is gone, fail the job and exit.

    A server stopped with Ctrl-C, or killed, would otherwise leave its running jobs' processes
    alive, writing to a database no executor watches. ``os.getppid`` changes when the parent dies
    (the child is re-parented), whatever the signal.
    """

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        _finish(job_id, JobStatus.FAILED, engine=engine, message="failed: its executor stopped", error=PARENT_GONE)
        os._exit(1)

    thread = threading.Thread(target=watch, name="hai-job-parent-watch", daemon=True)
    thread.start()
    return thread


class Dispatcher:
    """What every executor does the same way: a daemon thread that, every ``poll_s`` seconds or
    when woken, reaps stale jobs and runs ``_dispatch_once`` (watch what runs, start what is queued).

    Subclasses set ``thread_name`` and implement ``_dispatch_once``; ``shutdown`` stops the thread
    and then calls ``_stop_running``."""

    thread_name = "hai-job-dispatcher"

    def __init__(self, max_workers: int | None = None, *, database_url: str | None = None, poll_s: float = 1.0):
        settings = get_settings()
        self.max_workers = max_workers or settings.job_workers
        self.database_url = database_url or settings.resolved_database_url
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def engine(self) -> Engine:
        return get_engine(self.database_url)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
            self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def shutdown(self, *, wait: bool = True) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None and wait:
            self._thread.join(timeout=10)
        self._stop_running()

    def _loop(self) -> None:
        last_reap = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() - last_reap > 5:
                    reap_stale_jobs(engine=self.engine)
                    last_reap = time.monotonic()
                self._dispatch_once()
            except Exception:  # noqa: BLE001 - keep dispatching; the error reaches the log
                traceback.print_exc()
            self._wake.wait(self.poll_s)
            self._wake.clear()

    def _queued(self, free: int, *, besides: list[int] | tuple[int, ...] = ()) -> list[int]:
        """Up to ``free`` queued job ids, oldest first, leaving out ``besides``."""
        if free <= 0:
            return []
        with read_session(self.engine) as session:
            query = select(Job.id).where(Job.status == JobStatus.QUEUED)
            if besides:
                query = query.where(Job.id.not_in(list(besides)))
            return list(session.exec(query.order_by(Job.id).limit(free)).all())

    def _dispatch_once(self) -> None:
        raise NotImplementedError

    def _stop_running(self) -> None:
        raise NotImplementedError


class LocalExecutor(Dispatcher):
    """Claims queued jobs and runs each in a child Python process, up to ``max_workers`` at once."""

    def __init__(self, max_workers: int | None = None, *, database_url: str | None = None, poll_s: float = 1.0):
        super().__init__(max_workers, database_url=database_url, poll_s=poll_s)
        self.worker = f"{os.uname().nodename}:{os.getpid()}:local"
        self._running: dict[int, subprocess.Popen] = {}
        self._cancel_seen: dict[int, float] = {}

    def _stop_running(self) -> None:
        for proc in list(self._running.values()):
            proc.terminate()

    def _dispatch_once(self) -> None:
        self._watch_running()
        self._start_queued()

    def _start_queued(self) -> None:
        for job_id in self._queued(self.max_workers - len(self._running)):
            if not claim(job_id, self.worker, engine=self.engine):
                continue
            # What a job needs, not the server's whole environment (credentials.child_environment):
            # a job's code and its parameters must not reach the server's other secrets.
            env = child_environment({"HAI_DATABASE_URL": self.database_url, "PYTHONUNBUFFERED": "1",
                                     PARENT_PID_ENV: str(os.getpid())})  # the child stops with this process (watch_parent)
            # Output goes to a file, not a pipe: a chatty job (progress bars) must never block on it.
            output = JobContext(job_id).result_dir / "process.log"
            with output.open("w") as sink:
                self._running[job_id] = subprocess.Popen(
                    [sys.executable, "-m", "engines.platform", "run-job", str(job_id)],
                    cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                )

    def _watch_running(self) -> None:
        for job_id, proc in list(self._running.items()):
            code = proc.poll()
            job = get_job(job_id, engine=self.engine)
            if code is None:
                if job.cancel_requested:
                    seen = self._cancel_seen.setdefault(job_id, time.monotonic())
                    if time.monotonic() - seen > CANCEL_GRACE_S:
                        # The job did not reach a progress report in time: stop it by force.
                        proc.kill()
                        proc.wait()
                        _finish(job_id, JobStatus.CANCELLED, engine=self.engine, message="cancelled (stopped by force)")
                        del self._running[job_id]
                        self._cancel_seen.pop(job_id, None)
                continue
            self._cancel_seen.pop(job_id, None)
            output = JobContext(job_id).result_dir / "process.log"
            stderr = output.read_text(errors="replace")[-4000:] if output.exists() else ""
            del self._running[job_id]
            if job.status == JobStatus.RUNNING:
                _finish(job_id, JobStatus.FAILED, engine=self.engine,
                        error=f"The job process exited with code {code} before finishing.\n{stderr}")


# Executors by their HAI_JOB_EXECUTOR name; "ray" is imported only when chosen, as Ray is an optional
# dependency (requirements-dev.txt) that a machine running jobs locally need not have.
RAY_EXECUTOR = "engines.platform.ray_executor:RayExecutor"

_EXECUTOR: Executor | None = None
_EXECUTOR_LOCK = threading.Lock()


def make_executor(max_workers: int | None = None) -> Executor:
    """The executor ``HAI_JOB_EXECUTOR`` names, not yet started: "local" or "ray".

    Raises:
        JobError: "ray" is configured but Ray is not installed.
    """
    if get_settings().job_executor == "ray":
        module, _, name = RAY_EXECUTOR.partition(":")
        try:
            executor_class = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as exc:
            if exc.name != "ray":
                raise
            raise JobError("HAI_JOB_EXECUTOR=ray needs Ray in this environment: pip install ray==2.60.0 "
                           "(the version requirements-dev.txt pins)") from None
        return executor_class(max_workers)
    return LocalExecutor(max_workers)


def start_executor(max_workers: int | None = None) -> Executor:
    """The process-wide executor (``make_executor``), started once (the app calls this at start-up)."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is None:
            _EXECUTOR = make_executor(max_workers)
            _EXECUTOR.start()
        return _EXECUTOR


def stop_executor() -> None:
    """Shut the process-wide executor down (its running jobs stop with it); nothing if none runs."""
    global _EXECUTOR
    with _EXECUTOR_LOCK:
        if _EXECUTOR is not None:
            _EXECUTOR.shutdown()
            _EXECUTOR = None


# The names from before there was a choice of executor; they start and stop the configured one.
start_local_executor = start_executor
stop_local_executor = stop_executor


def wait_for_job(job_id: int, *, timeout_s: float = 60.0, engine: Engine | None = None) -> Job:
    """Poll until the job finishes (CLI ``--wait`` and tests)."""
    deadline = time.monotonic() + timeout_s
    while True:
        job = get_job(job_id, engine=engine)
        if job.status in JobStatus.FINISHED or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


# QUERIES


def job_result_file(job_id: int, *, engine: Engine | None = None) -> Path:
    """The file job ``job_id`` names as its result (``Job.result_path``).

    Raises:
        JobError: no such job, or it has no result file (yet, or any more); the message gives its status.
    """
    job = get_job(job_id, engine=engine)
    if not job.result_path or not Path(job.result_path).is_file():
        raise JobError(f"job {job_id} has no result file (status {job.status})")
    return Path(job.result_path)
