"""Job queue, function by function: rows and clocks set by hand, no child processes.

``test_jobs.py`` runs whole jobs (and the executor's processes); these tests call one function of
``engines.platform.jobqueue`` at a time on ``any_db``, passed as an explicit engine (the settings
point elsewhere), with a fake clock and a fake ``Popen`` where time or processes would otherwise
decide the outcome.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from datetime import UTC, date, datetime, timedelta
from types import SimpleNamespace

import pytest
from pydantic import BaseModel, Field
from sqlalchemy.engine import Engine

from engines.platform import auth, db, jobqueue, settings
from engines.platform.db import write_transaction
from engines.platform.jobqueue import JobContext, register_job
from engines.platform.models import Job

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC)


@register_job("tests.units.free")
def free_job(ctx: JobContext, **params) -> dict:
    """Returns what it was given (a kind without a parameter schema)."""
    return {"given": params}


class _ScaleParams(BaseModel):
    factor: int = Field(default=3, ge=1)


@register_job("tests.units.scaled", title="Scale", params=_ScaleParams)
def scaled_job(ctx: JobContext, factor: int) -> dict:
    return {"scaled": 7 * factor}


@register_job("tests.units.returns_none")
def returns_none_job(ctx: JobContext) -> None:
    return None


@register_job("tests.units.returns_a_set")
def returns_a_set_job(ctx: JobContext) -> dict:
    return {"ids": {1, 2}}


@register_job("tests.units.with_result_file")
def with_result_file_job(ctx: JobContext) -> dict:
    return {"result_path": "/srv/results/table.csv", "rows": 3}


@register_job("tests.units.long_error")
def long_error_job(ctx: JobContext) -> dict:
    raise ValueError("x" * 300)


@register_job("tests.units.interrupted")
def interrupted_job(ctx: JobContext) -> dict:
    raise KeyboardInterrupt


@register_job("tests.units.two_quick_lines")
def two_quick_lines_job(ctx: JobContext) -> dict:
    ctx.log("first")
    ctx.log("second")  # within the 0.5 s throttle: written only by run_job's last flush
    return {}


@register_job("tests.units.waits_for_heartbeat")
def waits_for_heartbeat_job(ctx: JobContext) -> dict:
    """Returns once its heartbeat moved past the claim time (at most 10 s, the beat is every 10 ms here)."""
    claimed = jobqueue.get_job(ctx.job_id, engine=ctx._engine).heartbeat_at  # noqa: SLF001
    for _ in range(500):
        if jobqueue.get_job(ctx.job_id, engine=ctx._engine).heartbeat_at > claimed:  # noqa: SLF001
            return {"beat": True}
        time.sleep(0.02)
    return {"beat": False}


@register_job("tests.units.cancel_self")
def cancel_self_job(ctx: JobContext) -> dict:
    jobqueue.cancel_job(ctx.job_id, engine=ctx._engine)  # noqa: SLF001 - the job's own database
    ctx.progress(0.5, "half way")  # the next report sees the cancel
    return {"never": True}


@pytest.fixture
def engine(any_db, tmp_path, monkeypatch) -> Engine:
    """The test's database as an explicit engine, with the settings pointing at an empty one:
    a call that drops the ``engine=`` it was given fails ("no such table")."""
    monkeypatch.setenv("HAI_DATABASE_URL", f"sqlite:///{tmp_path / 'empty.db'}")
    settings.reset_settings()
    return db.get_engine(any_db)


class _DatedParams(BaseModel):
    day: date
    sizes: list[int] = [1]


@register_job("tests.units.dated", params=_DatedParams)
def dated_job(ctx: JobContext, day: date, sizes: list[int]) -> dict:
    return {"weekday": day.isoweekday()}


def _fail_deep(depth: int) -> None:
    if depth:
        _fail_deeper(depth - 1)  # two functions in turn: Python's traceback folds only repeats of one frame
    raise ValueError("deep")


def _fail_deeper(depth: int) -> None:
    _fail_deep(depth)


@register_job("tests.units.deep_error")
def deep_error_job(ctx: JobContext) -> dict:
    _fail_deep(150)  # a traceback of 150+ frames: far more than 8000 characters
    return {}


class FakeClock:
    """Stands in for ``utcnow`` (``now``) and ``time.monotonic`` (``mono``), moved on by hand."""

    def __init__(self) -> None:
        self.now = T0
        self.mono = 100.0
        self.sleeps: list[float] = []

    def __call__(self) -> datetime:
        return self.now

    def monotonic(self) -> float:
        return self.mono

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.mono += 1.0


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(jobqueue, "utcnow", fake)
    monkeypatch.setattr(jobqueue, "time", SimpleNamespace(monotonic=fake.monotonic, sleep=fake.sleep))
    return fake


def _set(engine: Engine, job_id: int, **values) -> None:
    """Write columns of a job row directly (no jobqueue call)."""
    with write_transaction(engine) as session:
        job = session.get(Job, job_id)
        for key, value in values.items():
            setattr(job, key, value)
        session.add(job)


def _log_of(engine: Engine, job_id: int) -> str:
    return jobqueue.get_job(job_id, engine=engine).log


# ------------------------------------------------------------------ registry


def test_a_kind_without_a_title_is_titled_by_its_name_and_described_by_its_docstring(monkeypatch):
    monkeypatch.setattr(jobqueue._KINDS, "_entries", {})  # noqa: SLF001 - an empty registry for this test

    @register_job("tests.units.plain")
    def plain(ctx):
        """  Counts sheep.
        """

    @register_job("tests.units.titled", title="Sheep counter")
    def titled(ctx):
        return {}

    kinds = jobqueue._KINDS  # noqa: SLF001 - what the registry holds
    assert (kinds["tests.units.plain"].title, kinds["tests.units.plain"].description) == ("tests.units.plain",
                                                                                        "Counts sheep.")
    assert (kinds["tests.units.titled"].title, kinds["tests.units.titled"].description) == ("Sheep counter", "")
    assert kinds["tests.units.titled"].fn is titled and kinds["tests.units.titled"].params is None
    assert kinds["tests.units.titled"].name == "tests.units.titled"


def test_a_kind_keeps_its_parameter_schema():
    kind = jobqueue.get_kind("tests.units.scaled")
    assert (kind.name, kind.title, kind.params) == ("tests.units.scaled", "Scale", _ScaleParams)


def test_kinds_registered_by_discovery_are_known(monkeypatch):
    def discover_all():  # as importing an area's jobs.py would
        register_job("tests.units.discovered")(free_job)

    monkeypatch.setattr(jobqueue._KINDS, "_entries", {})  # noqa: SLF001 - an empty registry for this test
    monkeypatch.setattr(jobqueue, "discover_all", discover_all)
    assert jobqueue.get_kind("tests.units.discovered").fn is free_job


def test_unknown_kind_message_lists_the_known_kinds_in_order(monkeypatch):
    monkeypatch.setattr(jobqueue, "discover_all", lambda: None)
    monkeypatch.setattr(jobqueue._KINDS, "_entries", {})  # noqa: SLF001 - an empty registry for this test
    jobqueue._KINDS["b.two"] = jobqueue._KINDS["a.one"] = None  # noqa: SLF001
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.get_kind("nope")
    assert str(caught.value) == "Unknown job kind 'nope' (known: a.one, b.two)."


def test_unknown_kind_message_says_none_are_known_when_none_are(monkeypatch):
    monkeypatch.setattr(jobqueue, "discover_all", lambda: None)
    monkeypatch.setattr(jobqueue._KINDS, "_entries", {})  # noqa: SLF001 - an empty registry for this test
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.get_kind("nope")
    assert str(caught.value) == "Unknown job kind 'nope' (known: none)."


# ------------------------------------------------------------------ JobContext


def test_log_lines_are_stamped_and_written_at_most_every_half_second(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    ctx = JobContext(job_id, engine)
    clock.mono = 0.75  # monotonic time starts anywhere; 0.75 s is past the first half second
    ctx.log("a")  # the first line is written at once
    assert _log_of(engine, job_id) == "[09:00:00] a\n"
    clock.mono += 0.25
    clock.now += timedelta(seconds=1)
    ctx.log("b")  # 0.25 s after the last write: kept back
    assert _log_of(engine, job_id) == "[09:00:00] a\n"
    clock.mono += 0.25
    clock.now += timedelta(seconds=1)
    ctx.log("c")  # exactly 0.5 s after it (binary fractions: no rounding): both written
    assert _log_of(engine, job_id) == "[09:00:00] a\n[09:00:01] b\n[09:00:02] c\n"


def test_the_log_keeps_its_last_200000_characters(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    ctx = JobContext(job_id, engine)
    ctx.log("x" * 150_000)
    clock.mono += 1
    ctx.log("y" * 60_000 + "END")
    # 11 + 150_000 + 1 + 11 + 60_003 + 1 = 210_027 characters written: the first 10_027 (the
    # first line's 11-character stamp and 10_016 x) are dropped.
    assert _log_of(engine, job_id) == "x" * 139_984 + "\n[09:00:00] " + "y" * 60_000 + "END\n"


@pytest.mark.parametrize(("given", "stored"), [(-0.2, 0.0), (0.25, 0.25), (1.5, 1.0)])
def test_progress_is_clamped_to_zero_to_one(engine, clock, given, stored):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    JobContext(job_id, engine).progress(given, "now")
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.progress, job.message) == (stored, "now")


def test_progress_with_a_message_is_written_at_once_without_one_it_waits(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    ctx = JobContext(job_id, engine)
    ctx.progress(0.1)  # first report: written
    clock.mono += 0.1
    ctx.progress(0.2)  # no message, within 0.5 s: kept back
    assert jobqueue.get_job(job_id, engine=engine).progress == 0.1
    ctx.progress(0.3, "a third done")  # a message is written at once
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.progress, job.message) == (0.3, "a third done")


def test_a_report_without_a_message_keeps_the_last_message(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    ctx = JobContext(job_id, engine)
    ctx.progress(0.1, "loading")
    clock.mono += 1
    ctx.progress(0.2)
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.progress, job.message) == (0.2, "loading")


def test_a_log_line_leaves_progress_and_message_alone(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    ctx = JobContext(job_id, engine)
    ctx.progress(0.4, "training")
    clock.mono += 1
    ctx.log("epoch 2")
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.progress, job.message, job.log) == (0.4, "training", "[09:00:00] epoch 2\n")


def test_every_write_renews_the_heartbeat(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    JobContext(job_id, engine).check_cancelled()
    assert jobqueue.get_job(job_id, engine=engine).heartbeat_at == T0


def test_check_cancelled_raises_once_a_cancel_is_requested(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    ctx = JobContext(job_id, engine)
    ctx.check_cancelled()  # no cancel yet: returns
    jobqueue.cancel_job(job_id, engine=engine)
    with pytest.raises(jobqueue.JobCancelled):
        ctx.check_cancelled()  # forced: no throttle hides the cancel


def test_result_dir_is_created_under_the_data_dir(engine):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    expected = settings.get_settings().data_dir / "jobs" / str(job_id)
    assert not expected.exists()
    assert JobContext(job_id, engine).result_dir == expected and expected.is_dir()
    assert jobqueue.job_dir(job_id) == expected


# ------------------------------------------------------------------ heartbeat, claim, finish


class _Stop:
    """A stop event whose ``wait`` returns False ``beats`` times (a beat is due), then True."""

    def __init__(self, beats: int) -> None:
        self.beats = beats
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        self.beats -= 1
        return self.beats < 0


def test_the_heartbeat_loop_renews_a_running_job_every_two_seconds_until_stopped(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    clock.now = T0 + timedelta(seconds=30)
    stop = _Stop(beats=1)
    jobqueue._heartbeat_loop(job_id, stop, engine)  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).heartbeat_at == T0 + timedelta(seconds=30)
    assert stop.waits == [2.0, 2.0]  # one beat, then the stop


def test_the_heartbeat_loop_renews_only_its_own_job(engine, clock):
    mine, other = (jobqueue.submit_job("tests.units.free", engine=engine) for _ in range(2))
    assert jobqueue.claim(mine, "w", engine=engine) and jobqueue.claim(other, "w", engine=engine)
    clock.now = T0 + timedelta(seconds=30)
    jobqueue._heartbeat_loop(mine, _Stop(beats=1), engine)  # noqa: SLF001
    assert jobqueue.get_job(other, engine=engine).heartbeat_at == T0


def test_the_heartbeat_loop_leaves_a_finished_job_alone(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    _set(engine, job_id, status="failed")  # e.g. reaped meanwhile
    clock.now = T0 + timedelta(seconds=30)
    jobqueue._heartbeat_loop(job_id, _Stop(beats=2), engine)  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).heartbeat_at == T0


def test_claim_marks_the_job_running_for_the_worker_from_now(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "node-7", engine=engine)
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.worker, job.started_at, job.heartbeat_at) == ("running", "node-7", T0, T0)


def test_finish_stores_the_outcome_and_the_time(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    jobqueue._finish(job_id, "failed", message="failed: boom", error="boom", engine=engine)  # noqa: SLF001
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.finished_at, job.message, job.error) == ("failed", T0, "failed: boom", "boom")


def test_finish_leaves_an_already_finished_job_as_it_was(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, status="cancelled", message="cancelled before it started")
    jobqueue._finish(job_id, "failed", message="failed: late", engine=engine)  # noqa: SLF001
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.finished_at, job.message) == ("cancelled", None, "cancelled before it started")


# ------------------------------------------------------------------ run_job


def test_run_job_claims_for_this_process_by_default(engine):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    assert jobqueue.get_job(job_id, engine=engine).worker == f"{os.uname().nodename}:{os.getpid()}"


def test_run_job_of_a_missing_job_is_refused(engine):
    with pytest.raises(jobqueue.JobError, match=r"^No job with id 999\.$"):
        jobqueue.run_job(999, engine=engine)


def test_run_job_leaves_a_job_another_worker_claimed_first(engine, monkeypatch):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)

    def claimed_by_someone_else(job_id, worker, *, engine=None):
        _set(engine, job_id, status="running", worker="other")
        return False

    monkeypatch.setattr(jobqueue, "claim", claimed_by_someone_else)
    assert jobqueue.run_job(job_id, worker="me", engine=engine) == "running"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.worker, job.result) == ("other", {})


def test_run_job_passes_validated_parameters_with_their_defaults(engine):
    job_id = jobqueue.submit_job("tests.units.scaled", engine=engine)
    _set(engine, job_id, params={})  # e.g. a row queued before the default existed
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    assert jobqueue.get_job(job_id, engine=engine).result == {"scaled": 21}


def test_run_job_passes_a_schemaless_kinds_parameters_as_given(engine):
    job_id = jobqueue.submit_job("tests.units.free", {"a": 1, "b": [2]}, engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    assert jobqueue.get_job(job_id, engine=engine).result == {"given": {"a": 1, "b": [2]}}


def test_a_job_returning_nothing_succeeds_with_an_empty_result(engine):
    job_id = jobqueue.submit_job("tests.units.returns_none", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.result, job.result_path, job.progress, job.message) == ({}, None, 1.0, "done")


def test_a_job_whose_result_is_not_json_fails_and_says_so(engine):
    job_id = jobqueue.submit_job("tests.units.returns_a_set", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "failed"
    job = jobqueue.get_job(job_id, engine=engine)
    assert job.message == "failed: TypeError: Object of type set is not JSON serializable"
    assert job.error.startswith("TypeError: Object of type set is not JSON serializable\n\nTraceback")


def test_a_job_naming_a_result_file_stores_its_path(engine):
    job_id = jobqueue.submit_job("tests.units.with_result_file", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.result_path, job.result) == ("/srv/results/table.csv",
                                             {"result_path": "/srv/results/table.csv", "rows": 3})


def test_a_failure_message_is_cut_to_200_characters_the_error_keeps_all(engine):
    job_id = jobqueue.submit_job("tests.units.long_error", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "failed"
    job = jobqueue.get_job(job_id, engine=engine)
    assert job.message == "failed: ValueError: " + "x" * 180
    assert job.error.startswith("ValueError: " + "x" * 300 + "\n\nTraceback (most recent call last):")
    assert 'raise ValueError("x" * 300)' in job.error


def test_a_failed_jobs_error_keeps_the_last_8000_characters_of_a_long_traceback(engine):
    job_id = jobqueue.submit_job("tests.units.deep_error", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "failed"
    error = jobqueue.get_job(job_id, engine=engine).error
    head = "ValueError: deep\n\n"
    assert error.startswith(head) and len(error) == len(head) + 8000
    assert error.endswith('raise ValueError("deep")\nValueError: deep\n')


def test_a_keyboard_interrupt_fails_the_job_and_still_stops_the_process(engine):
    job_id = jobqueue.submit_job("tests.units.interrupted", engine=engine)
    with pytest.raises(KeyboardInterrupt):
        jobqueue.run_job(job_id, engine=engine)
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.message) == ("failed", "failed: KeyboardInterrupt: ")


def test_a_job_cancelled_while_running_ends_cancelled_at_its_next_report(engine):
    job_id = jobqueue.submit_job("tests.units.cancel_self", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "cancelled"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.message, job.result) == ("cancelled", "cancelled", {})


def test_run_job_writes_log_lines_still_held_back_when_the_job_returns(engine, monkeypatch):
    monkeypatch.setattr(jobqueue, "time", SimpleNamespace(monotonic=lambda: 100.0))  # both lines at once
    job_id = jobqueue.submit_job("tests.units.two_quick_lines", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    assert [line[11:] for line in _log_of(engine, job_id).splitlines()] == ["first", "second"]


def _recording_threads(monkeypatch) -> list[threading.Thread]:
    """Make jobqueue's threads as usual, keeping each in the returned list."""
    started: list[threading.Thread] = []
    real_thread = threading.Thread

    def recording_thread(*args, **kwargs):
        started.append(real_thread(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(jobqueue, "threading", SimpleNamespace(Thread=recording_thread, Event=threading.Event,
                                                              Lock=threading.Lock))
    return started


def test_run_job_beats_while_the_job_runs(engine, monkeypatch):
    monkeypatch.setattr(jobqueue, "HEARTBEAT_EVERY_S", 0.01)
    started = _recording_threads(monkeypatch)
    job_id = jobqueue.submit_job("tests.units.waits_for_heartbeat", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    started[0].join(timeout=5)  # its last beat (a no-op on a finished job) is done before the database goes
    assert jobqueue.get_job(job_id, engine=engine).result == {"beat": True}


def test_run_job_stops_its_heartbeat_thread(engine, monkeypatch):
    started = _recording_threads(monkeypatch)
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    (beat,) = started
    beat.join(timeout=1.0)  # stopped: returns at once, long before the 2 s beat
    assert not beat.is_alive() and beat.daemon


# ------------------------------------------------------------------ submitting


def test_parameters_that_are_not_an_object_are_refused_with_what_was_given(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("platform.countdown", [1, 2], engine=engine)
    assert str(caught.value) == ('Parameters of job \'platform.countdown\' must be a JSON object such as '
                                 '{"T": 500}, got list [1, 2]')
    assert jobqueue.list_jobs(engine=engine) == []


def test_unknown_parameters_are_named_with_the_kinds_parameters(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("platform.countdown", {"zzz": 1, "secs": 2}, engine=engine)
    assert str(caught.value) == ("Job 'platform.countdown' has no parameter(s) 'secs', 'zzz' "
                                 "(its parameters: fail, seconds)")


def test_invalid_parameters_name_the_field_and_the_rule(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("platform.countdown", {"seconds": -1, "fail": "maybe"}, engine=engine)
    assert str(caught.value) == ("Invalid parameters for job 'platform.countdown': "
                                 "seconds: Input should be greater than or equal to 0; "
                                 "fail: Input should be a valid boolean, unable to interpret input")


def test_parameters_that_are_not_an_object_are_shown_cut_to_80_characters(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("platform.countdown", list(range(40)), engine=engine)
    assert str(caught.value).endswith(
        "got list [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 2")


def test_parameters_that_are_not_even_json_are_shown_as_text(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("platform.countdown", {3, 4}, engine=engine)
    assert str(caught.value).endswith('got set "{3, 4}"')


def test_an_invalid_item_of_a_list_parameter_is_named_by_its_position(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("tests.units.dated", {"day": "2026-03-02", "sizes": [1, "many"]}, engine=engine)
    assert str(caught.value) == ("Invalid parameters for job 'tests.units.dated': "
                                 "sizes.1: Input should be a valid integer, unable to parse string as an integer")


def test_parameters_are_stored_as_json_and_run_as_their_types(engine):
    job_id = jobqueue.submit_job("tests.units.dated", {"day": "2026-03-02"}, engine=engine)
    assert jobqueue.get_job(job_id, engine=engine).params == {"day": "2026-03-02", "sizes": [1]}
    assert jobqueue.run_job(job_id, engine=engine) == "succeeded"
    assert jobqueue.get_job(job_id, engine=engine).result == {"weekday": 1}  # 2 March 2026 is a Monday


def test_submitted_parameters_are_stored_with_their_defaults(engine):
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 2}, engine=engine)
    assert jobqueue.get_job(job_id, engine=engine).params == {"seconds": 2.0, "fail": False}


def test_a_schemaless_kind_refuses_parameters_that_are_not_json(engine):
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.submit_job("tests.units.free", {"when": T0}, engine=engine)
    assert str(caught.value) == "Job parameters must be JSON values: Object of type datetime is not JSON serializable"
    assert jobqueue.list_jobs(engine=engine) == []


def test_a_submitted_job_records_who_and_which_code(engine, monkeypatch):
    monkeypatch.setattr(jobqueue, "code_version", lambda: "0.3.1+abc123")
    user = auth.create_user("runner", "long-enough-password", "researcher", engine=engine)
    job_id = jobqueue.submit_job("tests.units.free", submitted_by=user.user_id, engine=engine)
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.submitted_by, job.code_version, job.kind) == ("queued", user.user_id, "0.3.1+abc123",
                                                                         "tests.units.free")


def test_submitting_wakes_the_running_executor(engine, monkeypatch):
    woken = []
    monkeypatch.setattr(jobqueue, "_EXECUTOR", SimpleNamespace(wake=lambda: woken.append(True)))
    jobqueue.submit_job("tests.units.free", engine=engine)
    assert woken == [True]


def test_get_job_of_a_missing_job_is_refused(engine):
    with pytest.raises(jobqueue.JobError, match=r"^No job with id 999\.$"):
        jobqueue.get_job(999, engine=engine)


def test_list_jobs_shows_the_newest_50_by_default(engine):
    with write_transaction(engine) as session:
        session.add_all([Job(kind="tests.units.free", params={}) for _ in range(51)])
    jobs = jobqueue.list_jobs(engine=engine)
    assert (len(jobs), jobs[0].id, jobs[-1].id) == (50, 51, 2)


def test_list_jobs_filters_and_puts_the_newest_first(engine):
    a1 = jobqueue.submit_job("tests.units.free", engine=engine)
    b = jobqueue.submit_job("tests.units.returns_none", engine=engine)
    a2 = jobqueue.submit_job("tests.units.free", engine=engine)
    c = jobqueue.submit_job("tests.units.scaled", engine=engine)
    _set(engine, a1, status="succeeded")

    def ids(**filters):
        return [job.id for job in jobqueue.list_jobs(**filters, engine=engine)]

    assert ids() == [c, a2, b, a1]
    assert ids(limit=2) == [c, a2]
    assert ids(kind="tests.units.free") == [a2, a1]
    assert ids(kinds=["tests.units.free", "tests.units.scaled"]) == [c, a2, a1]
    assert ids(kinds=[]) == []
    assert ids(status="succeeded") == [a1]


def test_list_jobs_finds_jobs_by_a_parameter_behind_newer_jobs_of_other_parameters(engine):
    """The HOI page's runs of one benchmark, the judge's verdicts on one items file: a job older than
    the newest N of its kind is still found, because the parameter is compared in the database."""
    with write_transaction(engine) as session:
        session.add(Job(kind="tests.units.free", params={"benchmark": "shipped/hoi/demo", "n": 1}))
        session.add_all([Job(kind="tests.units.free", params={"benchmark": "uploads/other"}) for _ in range(60)])
        session.add(Job(kind="tests.units.free", params={"benchmark": "shipped/hoi/demo-2"}))
        session.add(Job(kind="tests.units.free", params={}))
    found = jobqueue.list_jobs(params={"benchmark": "shipped/hoi/demo"}, limit=5, engine=engine)
    assert [(job.id, job.params["n"]) for job in found] == [(1, 1)]
    assert len(jobqueue.list_jobs(params={"benchmark": "uploads/other"}, limit=None, engine=engine)) == 60
    assert jobqueue.list_jobs(params={"benchmark": "shipped/hoi"}, engine=engine) == []


# ------------------------------------------------------------------ cancel


def test_cancelling_a_queued_job_ends_it_at_once(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.cancel_job(job_id, engine=engine) == "cancelled"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.finished_at, job.message, job.cancel_requested) == (
        "cancelled", T0, "cancelled before it started", False)


def test_cancelling_a_running_job_asks_it_to_stop(engine):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    assert jobqueue.cancel_job(job_id, engine=engine) == "running"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.cancel_requested, job.finished_at) == ("running", True, None)


def test_cancelling_a_finished_job_changes_nothing(engine):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, status="succeeded", message="done")
    assert jobqueue.cancel_job(job_id, engine=engine) == "succeeded"
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.cancel_requested, job.message) == ("succeeded", False, "done")


def test_cancelling_a_missing_job_is_refused(engine):
    with pytest.raises(jobqueue.JobError, match=r"^No job with id 999\.$"):
        jobqueue.cancel_job(999, engine=engine)


# ------------------------------------------------------------------ reaper


def _silent_job(engine: Engine, **values) -> int:
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, status="running", **values)
    return job_id


def test_the_reaper_spares_a_job_silent_exactly_stale_after_s(engine, clock):
    job_id = _silent_job(engine, started_at=T0 - timedelta(minutes=5), heartbeat_at=T0 - timedelta(seconds=60))
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == []
    assert jobqueue.get_job(job_id, engine=engine).status == "running"


def test_the_reaper_says_when_the_last_heartbeat_was(engine, clock):
    job_id = _silent_job(engine, started_at=T0 - timedelta(minutes=5), heartbeat_at=T0 - timedelta(seconds=61))
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == [job_id]
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.finished_at) == ("failed", T0)
    assert job.error == ("The worker stopped responding (last heartbeat 2026-03-02 08:58:59 UTC); "
                         "the process died or the server restarted.")


def test_the_reaper_falls_back_to_the_start_time_without_a_heartbeat(engine, clock):
    job_id = _silent_job(engine, started_at=T0 - timedelta(minutes=2))
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == [job_id]
    assert "(last heartbeat 2026-03-02 08:58:00 UTC)" in jobqueue.get_job(job_id, engine=engine).error


def test_the_reaper_spares_a_recently_started_job_without_a_heartbeat(engine, clock):
    job_id = _silent_job(engine, started_at=T0 - timedelta(seconds=10))
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == []
    assert jobqueue.get_job(job_id, engine=engine).status == "running"


def test_the_reaper_fails_a_running_job_that_never_started(engine, clock):
    job_id = _silent_job(engine)
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == [job_id]
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.error, job.message) == ("failed", "The worker never started.",
                                                    "failed: the worker stopped responding")


def test_the_reaper_leaves_queued_and_finished_jobs_alone(engine, clock):
    queued = jobqueue.submit_job("tests.units.free", engine=engine)
    done = _silent_job(engine, heartbeat_at=T0 - timedelta(hours=1))
    _set(engine, done, status="succeeded")
    assert jobqueue.reap_stale_jobs(stale_after_s=60, engine=engine) == []
    assert [jobqueue.get_job(i, engine=engine).status for i in (queued, done)] == ["queued", "succeeded"]


# ------------------------------------------------------------------ watch_parent


def test_a_job_process_whose_parent_is_gone_fails_the_job_and_exits(engine, monkeypatch, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, "w", engine=engine)
    parents = iter([4242, 4242, 1])  # the executor (4242) dies after two checks; init adopts the child
    exits: list[int] = []
    monkeypatch.setattr(jobqueue, "os", SimpleNamespace(getppid=lambda: next(parents), _exit=exits.append))
    thread = jobqueue.watch_parent(job_id, 4242, engine=engine)
    thread.join(timeout=10)
    assert exits == [1] and clock.sleeps == [1.0, 1.0]  # checked once a second
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.message, job.error) == ("failed", "failed: its executor stopped", jobqueue.PARENT_GONE)
    assert thread.daemon and thread.name == "hai-job-parent-watch"


# ------------------------------------------------------------------ LocalExecutor


class FakeProc:
    """Stands in for ``subprocess.Popen``: records how it was started; ``code`` is set by the test."""

    def __init__(self, args, *, cwd, env, stdout, stderr) -> None:
        self.args, self.cwd, self.env, self.stdout_name, self.stderr = args, cwd, env, stdout.name, stderr
        self.code: int | None = None
        self.killed = self.terminated = self.waited = False

    def poll(self) -> int | None:
        return self.code

    def kill(self) -> None:
        self.killed, self.code = True, -9

    def wait(self) -> int | None:
        self.waited = True
        return self.code

    def terminate(self) -> None:
        self.terminated = True


@pytest.fixture
def fake_popen(monkeypatch) -> list[FakeProc]:
    started: list[FakeProc] = []

    def popen(*args, **kwargs) -> FakeProc:
        started.append(FakeProc(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(jobqueue, "subprocess", SimpleNamespace(Popen=popen, STDOUT=subprocess.STDOUT))
    return started


def test_the_executor_defaults_to_the_configured_workers_and_database(any_db, monkeypatch):
    monkeypatch.setenv("HAI_JOB_WORKERS", "3")
    settings.reset_settings()
    executor = jobqueue.LocalExecutor()
    assert (executor.max_workers, executor.database_url, executor.poll_s) == (3, any_db, 1.0)
    assert executor.worker == f"{os.uname().nodename}:{os.getpid()}:local"


def test_the_executor_starts_the_oldest_queued_jobs_up_to_its_workers(any_db, engine, fake_popen):
    ids = [jobqueue.submit_job("tests.units.free", engine=engine) for _ in range(3)]
    _set(engine, ids[0], status="running")  # claimed and handed back: PostgreSQL now stores the oldest row last,
    _set(engine, ids[0], status="queued")  # so the order must be asked for
    executor = jobqueue.LocalExecutor(2, database_url=any_db)
    executor._start_queued()  # noqa: SLF001
    assert [proc.args for proc in fake_popen] == [
        [sys.executable, "-m", "engines.platform", "run-job", str(job_id)] for job_id in ids[:2]]
    assert [jobqueue.get_job(i, engine=engine).status for i in ids] == ["running", "running", "queued"]
    assert {jobqueue.get_job(i, engine=engine).worker for i in ids[:2]} == {executor.worker}
    executor._start_queued()  # noqa: SLF001 - both workers busy: nothing more starts
    assert len(fake_popen) == 2 and jobqueue.get_job(ids[2], engine=engine).status == "queued"


def test_an_executor_with_one_worker_starts_one_job_at_a_time(any_db, engine, fake_popen):
    first, second = (jobqueue.submit_job("tests.units.free", engine=engine) for _ in range(2))
    jobqueue.LocalExecutor(1, database_url=any_db)._start_queued()  # noqa: SLF001
    assert [proc.args[-1] for proc in fake_popen] == [str(first)]
    assert jobqueue.get_job(second, engine=engine).status == "queued"


def test_a_job_process_gets_the_database_its_parent_and_an_output_file(any_db, engine, fake_popen, monkeypatch):
    monkeypatch.delenv("PYTHONUNBUFFERED", raising=False)  # the executor sets it, whatever this process has
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._start_queued()  # noqa: SLF001
    (proc,) = fake_popen
    assert proc.env["HAI_DATABASE_URL"] == any_db and proc.env["PYTHONUNBUFFERED"] == "1"
    assert proc.env[jobqueue.PARENT_PID_ENV] == str(os.getpid())
    assert proc.env["PATH"] == os.environ["PATH"]  # the system basics are passed on
    assert proc.cwd == jobqueue.REPO_ROOT and proc.stderr == subprocess.STDOUT
    assert proc.stdout_name == str(settings.get_settings().data_dir / "jobs" / str(job_id) / "process.log")


def test_a_job_process_gets_the_settings_and_declared_keys_not_the_servers_other_secrets(any_db, engine, fake_popen,
                                                                                         monkeypatch):
    monkeypatch.setenv("SOME_SERVER_SECRET", "x")  # e.g. a cloud token the server's shell happens to have
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    monkeypatch.setenv("HAI_ADMIN_PASSWORD", "first-start-only")
    monkeypatch.setenv("HAI_DEVICE", "cpu")
    monkeypatch.setenv("HAI_API_KEY_TEST", "sk-test")
    monkeypatch.setenv("HAI_API_KEY_VARIABLES", "OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-declared")
    settings.reset_settings()
    jobqueue.submit_job("tests.units.free", engine=engine)
    jobqueue.LocalExecutor(1, database_url=any_db)._start_queued()  # noqa: SLF001
    (proc,) = fake_popen
    assert "SOME_SERVER_SECRET" not in proc.env and "AWS_SECRET_ACCESS_KEY" not in proc.env
    assert "HAI_ADMIN_PASSWORD" not in proc.env  # only the first start of the app needs it
    assert proc.env["HAI_DEVICE"] == "cpu" and proc.env["HAI_API_KEY_TEST"] == "sk-test"
    assert proc.env["OPENAI_API_KEY"] == "sk-declared"  # listed in HAI_API_KEY_VARIABLES


def test_the_executor_skips_a_job_another_worker_claims_first(any_db, engine, fake_popen, monkeypatch):
    first, second = (jobqueue.submit_job("tests.units.free", engine=engine) for _ in range(2))
    real_claim = jobqueue.claim

    def claim(job_id, worker, *, engine=None):
        if job_id == first:
            real_claim(job_id, "someone-else", engine=engine)  # got there between our read and our claim
        return real_claim(job_id, worker, engine=engine)

    monkeypatch.setattr(jobqueue, "claim", claim)
    executor = jobqueue.LocalExecutor(2, database_url=any_db)
    executor._start_queued()  # noqa: SLF001
    assert [proc.args[-1] for proc in fake_popen] == [str(second)]
    assert jobqueue.get_job(first, engine=engine).worker == "someone-else"


def _executor_running(any_db: str, engine: Engine, fake_popen: list[FakeProc]) -> tuple[jobqueue.LocalExecutor, int, FakeProc]:
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._start_queued()  # noqa: SLF001
    return executor, job_id, fake_popen[-1]


def test_a_job_process_that_exits_while_running_fails_the_job_with_its_output(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    (jobqueue.job_dir(job_id) / "process.log").write_text("Segmentation fault\n")
    proc.code = 139
    executor._watch_running()  # noqa: SLF001
    job = jobqueue.get_job(job_id, engine=engine)
    assert job.status == "failed"
    assert job.error == "The job process exited with code 139 before finishing.\nSegmentation fault\n"
    assert executor._running == {}  # noqa: SLF001


def test_only_the_last_4000_characters_of_a_dead_process_output_are_kept(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    (jobqueue.job_dir(job_id) / "process.log").write_text("a" * 5000 + "b" * 4000)
    proc.code = 1
    executor._watch_running()  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).error == "The job process exited with code 1 before finishing.\n" + "b" * 4000


def test_a_dead_process_output_that_is_not_utf8_is_kept_readable(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    (jobqueue.job_dir(job_id) / "process.log").write_bytes(b"bad \xff byte")
    proc.code = 1
    executor._watch_running()  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).error.endswith("finishing.\nbad \ufffd byte")


def test_a_job_process_that_exits_without_output_file_fails_the_job(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    (jobqueue.job_dir(job_id) / "process.log").unlink()
    proc.code = 1
    executor._watch_running()  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).error == "The job process exited with code 1 before finishing.\n"


def test_a_job_process_that_finished_its_job_is_forgotten_quietly(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    _set(engine, job_id, status="succeeded", message="done")
    proc.code = 0
    executor._watch_running()  # noqa: SLF001
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.error, executor._running) == ("succeeded", None, {})  # noqa: SLF001


def test_every_job_process_is_looked_at_in_one_round(any_db, engine, fake_popen):
    ids = [jobqueue.submit_job("tests.units.free", engine=engine) for _ in range(2)]
    executor = jobqueue.LocalExecutor(2, database_url=any_db)
    executor._start_queued()  # noqa: SLF001
    fake_popen[1].code = 1  # the second one died; the first still runs
    executor._watch_running()  # noqa: SLF001
    assert [jobqueue.get_job(i, engine=engine).status for i in ids] == ["running", "failed"]
    assert list(executor._running) == [ids[0]]  # noqa: SLF001


def test_a_running_job_process_is_left_alone(any_db, engine, fake_popen):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    executor._watch_running()  # noqa: SLF001
    assert executor._running == {job_id: proc} and not proc.killed  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).status == "running"


def test_a_cancelled_job_that_does_not_stop_within_5_s_is_killed(any_db, engine, fake_popen, clock):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    jobqueue.cancel_job(job_id, engine=engine)
    executor._watch_running()  # noqa: SLF001 - the cancel is seen at 100 s
    clock.mono += 5.0
    executor._watch_running()  # noqa: SLF001 - 5 s later: still its grace time
    assert not proc.killed and jobqueue.get_job(job_id, engine=engine).status == "running"
    clock.mono += 0.5
    executor._watch_running()  # noqa: SLF001
    assert proc.killed and proc.waited
    job = jobqueue.get_job(job_id, engine=engine)
    assert (job.status, job.message) == ("cancelled", "cancelled (stopped by force)")
    assert executor._running == {} and executor._cancel_seen == {}  # noqa: SLF001


def test_a_cancelled_job_that_stops_in_time_is_not_killed(any_db, engine, fake_popen, clock):
    executor, job_id, proc = _executor_running(any_db, engine, fake_popen)
    jobqueue.cancel_job(job_id, engine=engine)
    executor._watch_running()  # noqa: SLF001
    _set(engine, job_id, status="cancelled", message="cancelled")
    proc.code = 0
    clock.mono += 1.0
    executor._watch_running()  # noqa: SLF001
    assert not proc.killed and executor._running == {} and executor._cancel_seen == {}  # noqa: SLF001
    assert jobqueue.get_job(job_id, engine=engine).message == "cancelled"


class _OneIterationWake:
    """A wake event whose ``wait`` moves the clock on by the next of ``steps``; after the last, it ends the loop."""

    def __init__(self, executor: jobqueue.LocalExecutor, clock: FakeClock, steps: list[float]) -> None:
        self.executor, self.clock, self.steps = executor, clock, list(steps)
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        if self.steps:
            self.clock.mono += self.steps.pop(0)
        else:
            self.executor._stop.set()  # noqa: SLF001
        return False

    def clear(self) -> None:
        pass

    def set(self) -> None:
        pass


def test_the_dispatch_loop_reaps_stale_jobs_at_once_then_every_5_s(any_db, engine, fake_popen, clock, monkeypatch):
    reaps: list[tuple[float, Engine]] = []
    monkeypatch.setattr(jobqueue, "reap_stale_jobs", lambda *, engine: reaps.append((clock.mono, engine)))
    executor = jobqueue.LocalExecutor(1, database_url=any_db, poll_s=0.25)
    clock.mono = 5.5  # 5.5 s since boot: the first round still reaps
    executor._wake = _OneIterationWake(executor, clock, steps=[5.0, 0.5])  # noqa: SLF001
    executor._loop()  # noqa: SLF001 - rounds at 5.5 s, 10.5 s, 11 s
    assert reaps == [(5.5, engine), (11.0, engine)]
    assert executor._wake.waits == [0.25, 0.25, 0.25]  # noqa: SLF001


def test_the_dispatch_loop_starts_queued_jobs(any_db, engine, fake_popen, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._wake = _OneIterationWake(executor, clock, steps=[])  # noqa: SLF001
    executor._loop()  # noqa: SLF001
    assert [proc.args[-1] for proc in fake_popen] == [str(job_id)]


def test_the_dispatch_loop_keeps_going_after_an_error(any_db, engine, fake_popen, clock, monkeypatch, capsys):
    def reap(*, engine):
        raise RuntimeError("database restarting")

    monkeypatch.setattr(jobqueue, "reap_stale_jobs", reap)
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._wake = _OneIterationWake(executor, clock, steps=[10.0])  # noqa: SLF001
    executor._loop()  # noqa: SLF001 - both rounds fail; neither ends the loop
    assert len(executor._wake.waits) == 2  # noqa: SLF001
    assert capsys.readouterr().err.count("RuntimeError: database restarting") == 2


def test_shutdown_stops_the_dispatcher_and_its_job_processes(any_db, engine, fake_popen):
    executor = jobqueue.LocalExecutor(1, database_url=any_db, poll_s=30)
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.claim(job_id, executor.worker, engine=engine)  # before the loop runs: it starts nothing
    executor.start()
    thread = executor._thread  # noqa: SLF001
    executor.start()  # a second start keeps the one dispatcher
    assert executor._thread is thread and thread.is_alive() and thread.daemon  # noqa: SLF001
    assert thread.name == "hai-job-dispatcher"
    proc = FakeProc(["x"], cwd=None, env={}, stdout=SimpleNamespace(name="x"), stderr=None)
    executor._running[job_id] = proc  # noqa: SLF001 - a job process still running
    executor.shutdown()  # wakes the loop (it would sleep 30 s) and waits for it
    assert not thread.is_alive() and proc.terminated


def test_shutdown_of_an_executor_never_started_stops_its_job_processes(any_db, engine):
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    proc = FakeProc(["x"], cwd=None, env={}, stdout=SimpleNamespace(name="x"), stderr=None)
    executor._running[1] = proc  # noqa: SLF001
    executor.shutdown()
    assert proc.terminated


def test_shutdown_waits_at_most_10_s_for_the_dispatcher(any_db, engine):
    joins: list[float] = []
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._thread = SimpleNamespace(join=lambda timeout: joins.append(timeout))  # noqa: SLF001 - a stuck loop
    executor.shutdown()
    assert joins == [10]


def test_shutdown_without_waiting_does_not_join_the_dispatcher(any_db, engine):
    executor = jobqueue.LocalExecutor(1, database_url=any_db)
    executor._thread = SimpleNamespace(join=lambda timeout: pytest.fail("joined"))  # noqa: SLF001
    executor.shutdown(wait=False)
    assert executor._stop.is_set()  # noqa: SLF001 - the loop ends at its next round


def test_the_local_executor_is_started_once_and_stopped(monkeypatch):
    made: list[SimpleNamespace] = []

    def make(max_workers=None):
        made.append(SimpleNamespace(max_workers=max_workers, events=[]))
        made[-1].start = lambda: made[-1].events.append("start")
        made[-1].shutdown = lambda: made[-1].events.append("shutdown")
        return made[-1]

    monkeypatch.setattr(jobqueue, "LocalExecutor", make)
    monkeypatch.setattr(jobqueue, "_EXECUTOR", None)
    first = jobqueue.start_local_executor(3)
    assert jobqueue.start_local_executor(5) is first
    assert (len(made), first.max_workers, first.events) == (1, 3, ["start"])
    jobqueue.stop_local_executor()
    jobqueue.stop_local_executor()  # nothing left to stop
    assert first.events == ["start", "shutdown"] and jobqueue._EXECUTOR is None  # noqa: SLF001


# ------------------------------------------------------------------ queries


def test_wait_for_job_returns_a_finished_job_without_waiting(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, status="failed")
    assert jobqueue.wait_for_job(job_id, timeout_s=3, engine=engine).status == "failed"
    assert clock.sleeps == []


def test_wait_for_job_gives_up_after_its_timeout(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    # The fake clock moves 1 s per poll: checks at 0, 1, 2, 3 s (not past 3 s) and 4 s (past: returns).
    assert jobqueue.wait_for_job(job_id, timeout_s=3, engine=engine).status == "queued"
    assert clock.sleeps == [0.2, 0.2, 0.2, 0.2]


def test_wait_for_job_waits_a_minute_by_default(engine, clock):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    assert jobqueue.wait_for_job(job_id, engine=engine).status == "queued"
    assert len(clock.sleeps) == 61  # checks at 0, 1, ..., 60 s, then 61 s is past the minute


def test_job_result_file_names_the_file_a_job_wrote(engine, tmp_path):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    path = tmp_path / "out.csv"
    path.write_text("a\n")
    _set(engine, job_id, status="succeeded", result_path=str(path))
    assert jobqueue.job_result_file(job_id, engine=engine) == path


@pytest.mark.parametrize("result_path", [None, "/nonexistent/out.csv"])
def test_job_result_file_without_a_file_says_the_status(engine, result_path):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, result_path=result_path)
    with pytest.raises(jobqueue.JobError) as caught:
        jobqueue.job_result_file(job_id, engine=engine)
    assert str(caught.value) == f"job {job_id} has no result file (status queued)"


def test_job_result_file_refuses_a_folder(engine, tmp_path):
    job_id = jobqueue.submit_job("tests.units.free", engine=engine)
    _set(engine, job_id, status="succeeded", result_path=str(tmp_path))
    with pytest.raises(jobqueue.JobError, match="has no result file"):
        jobqueue.job_result_file(job_id, engine=engine)



def test_a_kind_registered_with_parameters_checks_them_when_a_job_is_submitted(any_db, engine):
    @register_job("tests.units.registered_late", params=_ScaleParams)
    def registered_late(ctx, **params) -> dict:
        return {}

    try:
        with pytest.raises(jobqueue.JobError, match="factor"):
            jobqueue.submit_job("tests.units.registered_late", {"factor": 0}, engine=engine)
        assert jobqueue.get_kind("tests.units.registered_late").params is _ScaleParams
    finally:
        jobqueue._KINDS.remove("tests.units.registered_late")  # noqa: SLF001 - registered for this test only
