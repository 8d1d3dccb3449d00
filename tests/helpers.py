"""Plain helpers shared by test files (the fixtures are in conftest.py)."""

from __future__ import annotations

import os
import threading
from typing import NamedTuple

# counter_config.QUICK sizes: 256 images, 1 epoch, seconds
QUICK_TRAINING = {"quick": True, "seed": 3}


class Ran(NamedTuple):
    """What a command line run in this process returned: like ``subprocess.CompletedProcess``."""

    returncode: int
    stdout: str
    stderr: str


def run_main(main, argv, capsys) -> Ran:
    """Run a CLI's ``main(argv)`` in this process (seconds faster than a subprocess: nothing is
    imported again) and return its exit code and output, captured by pytest's ``capsys``. The
    process umask, which a service CLI sets to 077 for its files, is put back afterwards."""
    capsys.readouterr()  # what the test printed before is not the command's
    umask = os.umask(0o022)
    os.umask(umask)
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.umask(umask)
    out, err = capsys.readouterr()
    return Ran(code, out, err)


def run_threads(target, n: int) -> None:
    """Call ``target(i)`` for i in 0..n-1, each in its own thread, all released at once; fail on any error."""
    errors = []
    barrier = threading.Barrier(n)

    def wrapped(i):
        try:
            barrier.wait()
            target(i)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]


def trained_counter_job() -> int:
    """A quick collab.train_counter job run in this process (a few seconds)."""
    from engines.collab.jobs import TRAIN_COUNTER
    from engines.platform import jobqueue

    job_id = jobqueue.submit_job(TRAIN_COUNTER, QUICK_TRAINING)
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    return job_id


def run_async(coroutine):
    """``asyncio.run(coroutine)`` on a thread of its own; its result, or its exception raised here.

    Playwright's sync API keeps an event loop running on the main thread for the whole session once
    a browser test has run, and ``asyncio.run`` refuses to start inside a running loop.
    """
    import asyncio

    outcome: dict = {}

    def run() -> None:
        try:
            outcome["result"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="run-async")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def form_steps_protocol(steps: int):
    """A registered study of ``steps`` one-field form steps (``value``: 0-100) over conditions "a" and "b".

    Named ``store_bench_<steps>``, as the study ``bench/store.py`` times (the bot tests skip those names).
    """
    from typing import ClassVar

    from pydantic import BaseModel, Field

    from engines.platform.registry import register_protocol
    from engines.platform.study import Constants, Step, StudyProtocol

    class Answer(BaseModel):
        value: int = Field(ge=0, le=100, title="A number")

    class C(Constants):
        NAME = f"store_bench_{steps}"
        TITLE = "Form steps"
        CONDITIONS = ("a", "b")

    class Item(Step):
        Response: ClassVar[type[BaseModel]] = Answer
        repeat: ClassVar[int] = steps

    return register_protocol(StudyProtocol(C.NAME, C.TITLE, "", C, [Item]), replace=True)


def last_cell_first(cell: tuple[int, str, int]) -> int:
    """A sweep cell for order tests: every cell but the last waits until the last one has finished
    (a marker file in the shared folder) and two seconds more, so cells finish in another order
    than the grid's whatever the machine's speed. Returns the cell's value squared."""
    import time
    from pathlib import Path

    value, folder, last = cell
    marker = Path(folder) / f"done-{last}"
    if value != last:
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        # Finished moments apart (or this cell started only after the last one ended), two cells can be
        # reported together, in the grid's order: ray.wait lists the ready ones as they were submitted.
        # Two seconds after the last one's end, it has been seen first.
        if marker.exists():
            time.sleep(max(0.0, marker.stat().st_mtime + 2.0 - time.time()))
    else:
        marker.touch()
    return value * value
