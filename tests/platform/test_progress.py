"""One progress protocol, ``progress(done, total, message)``, and its two consumers: a job's progress
on the Jobs page and the command line's bar."""

from __future__ import annotations

import pytest

from engines.platform import jobqueue
from engines.platform.progress import ProgressBar, job_progress, share


class _Job:
    def __init__(self) -> None:
        self.reports: list[tuple[float, str]] = []

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.reports.append((round(fraction, 6), message))


def test_a_jobs_part_maps_the_work_into_its_share_of_the_job():
    job = _Job()
    report = job_progress(job, 0.2, 0.6, prefix="SCPE: ")
    report(0, 4, "learning epoch 1/2")
    report(1, 4)
    report(4, 4, "done")
    assert job.reports == [(0.2, "SCPE: learning epoch 1/2"), (0.3, "SCPE: 1 of 4"), (0.6, "SCPE: done")]


def test_without_a_message_the_job_says_how_many_of_how_many_in_the_works_unit():
    job = _Job()
    job_progress(job, 0.0, 0.95, unit="items judged")(1200, 5000)
    assert job.reports == [(round(0.95 * 1200 / 5000, 6), "1,200 of 5,000 items judged")]
    shares = _Job()
    job_progress(shares, 0.0, 0.5)(0.8, 1)  # work measured in shares of the whole
    assert shares.reports == [(0.4, "80%")]


def test_shares_stay_within_the_job_and_a_bad_part_is_refused():
    assert (share(5, 0), share(-1, 4), share(9, 4), share(1, 4)) == (1.0, 0.0, 1.0, 0.25)
    with pytest.raises(ValueError, match="within \\[0, 1\\]"):
        job_progress(_Job(), 0.5, 0.4)


def test_a_cancelled_job_stops_the_work_at_its_next_report(sqlite_db):
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 0})
    assert jobqueue.claim(job_id, "a-test-worker")  # running: a cancel now waits for the next report
    report = job_progress(jobqueue.JobContext(job_id), 0.0, 1.0)
    report(1, 10, "working")
    assert jobqueue.get_job(job_id).message == "working"
    jobqueue.cancel_job(job_id)
    with pytest.raises(jobqueue.JobCancelled):
        report(2, 10, "still working")


def test_the_bar_follows_the_work_and_is_silent_when_disabled(capsys):
    with ProgressBar("judging", "item") as bar:
        bar(0, 10)
        bar(4, 10, "judge gcg")
        bar(6, 12)  # the work found more to do
        bar(12, 12)
    err = capsys.readouterr().err
    assert "judging" in err and "12/12" in err and "item" in err
    with ProgressBar("judging", "item", enabled=False) as quiet:
        quiet(3, 10, "anything")
    assert capsys.readouterr().err == ""


def test_work_reporting_every_item_updates_the_jobs_message_only_when_it_says_something_new(monkeypatch):
    """A count is told at most every COUNT_EVERY_S and at the end, a repeated message once; the
    fraction goes with every report (the job stores it at its own pace)."""
    from engines.platform import progress as progress_module

    clock = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    job = _Job()
    report = job_progress(job, 0.0, 1.0, unit="items")
    for item in range(1, 5):
        report(item, 4)  # four reports within 0.3 s: the first count is told, then the end
        clock[0] += 0.1
    clock[0] += 1.0
    report(4, 4, "online")
    report(4, 4, "online")
    assert job.reports == [(0.25, "1 of 4 items"), (0.5, None), (0.75, None), (1.0, "4 of 4 items"),
                           (1.0, "online"), (1.0, None)]
