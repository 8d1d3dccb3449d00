"""Fan the cells of a sweep out: Ray tasks when jobs run on Ray, else local processes, else in turn.

A sweep (``engines.collab.sweep``, ``engines.video.sweep``) is a grid of independent cells.
``map_cells(fn, cells)`` runs ``fn`` on every cell and returns the results in the cells' order,
whatever order they finished in, so a fanned-out sweep gives what a serial one gives. Where they
run follows the configuration, never the caller:

- ``HAI_JOB_EXECUTOR=ray``: one Ray task per cell on the cluster at ``HAI_RAY_ADDRESS`` (a job
  already running as a Ray task spawns them from there); ``fn`` is sent once, as one object.
- otherwise ``HAI_FANOUT_WORKERS`` processes of this machine (``concurrent.futures``, spawned), or,
  with 1 (the default), one cell after another in this process.
"""

from __future__ import annotations

import functools
import multiprocessing
import pickle
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from engines.platform.settings import get_settings

Cell = TypeVar("Cell")
Result = TypeVar("Result")
OnDone = Callable[[int, int], None]


def map_cells(fn: Callable[[Cell], Result], cells: Sequence[Cell], *, on_done: OnDone | None = None,
              workers: int | None = None) -> list[Result]:
    """``[fn(cell) for cell in cells]``, the cells run on Ray, in local processes or here.

    Args:
        fn: what one cell computes; its result must pickle. Sent to other processes: locally it
            must be picklable by ``pickle`` (a module-level function, or ``functools.partial`` of
            one), on Ray by ``cloudpickle`` (closures too).
        cells: the cells' inputs.
        on_done: ``on_done(index, done)`` in this process as each cell finishes: which cell, and
            how many have finished so far. What it raises (a job's ``JobCancelled``) stops the
            cells still running and propagates.
        workers: local processes; ``HAI_FANOUT_WORKERS`` by default. Ignored on Ray.

    Returns:
        The results, ``results[i]`` for ``cells[i]``.

    Raises:
        ValueError: ``workers`` below 1, or ``fn`` cannot be sent to local processes.
        RuntimeError: jobs run on Ray, and Ray is not installed.
        Exception: the first failing cell's own exception.
    """
    cells = list(cells)
    if get_settings().job_executor == "ray":
        return _on_ray(fn, cells, on_done)
    workers = get_settings().fanout_workers if workers is None else workers
    if workers < 1:
        raise ValueError(f"workers must be at least 1 (1 runs the cells in this process), got {workers}")
    if workers == 1 or len(cells) <= 1:
        return _in_turn(fn, cells, on_done)
    return _in_processes(fn, cells, on_done, min(workers, len(cells)))


def _in_turn(fn: Callable, cells: list, on_done: OnDone | None) -> list:
    results = []
    for index, cell in enumerate(cells):
        results.append(fn(cell))
        if on_done is not None:
            on_done(index, index + 1)
    return results


# ------------------------------------------------------------------ local processes

_CELL_FN: Callable | None = None  # in a pool's process: the sweep's function, received once


def _receive(fn: Callable) -> None:
    global _CELL_FN
    _CELL_FN = fn


def _run_indexed(indexed: tuple[int, Any]) -> tuple[int, Any]:
    index, cell = indexed
    return index, _CELL_FN(cell)


def _in_processes(fn: Callable, cells: list, on_done: OnDone | None, workers: int) -> list:
    try:
        pickle.dumps(fn)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise ValueError(f"the cells of this sweep cannot run in {workers} processes: its function {fn!r} does not "
                         f"pickle ({exc}); pass a module-level function or functools.partial of one, or set "
                         "HAI_FANOUT_WORKERS=1") from None
    # Spawned, not forked: a fork would copy this process's threads' locks mid-use (a job's heartbeat
    # thread holds the database's), and torch's thread pool, into every child. concurrent.futures, not
    # multiprocessing.Pool: a worker that dies (killed, out of memory) raises BrokenProcessPool here
    # instead of leaving its cell unanswered for ever.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_receive,
                               initargs=(fn,))
    results: list = [None] * len(cells)
    try:
        futures = {pool.submit(_run_indexed, (index, cell)): index for index, cell in enumerate(cells)}
        for done, future in enumerate(as_completed(futures), start=1):
            index, results[index] = future.result()
            if on_done is not None:
                on_done(index, done)
    except BaseException:
        # A failing cell, or on_done raising (a cancelled job): no further cell starts; those running
        # end on their own.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


# ------------------------------------------------------------------ Ray


def _call(fn: Callable, cell: Any) -> Any:
    return fn(cell)


@functools.cache
def _remote_call():
    import ray  # Ray is an optional dependency: imported only when jobs run on it

    return ray.remote(_call)


def _on_ray(fn: Callable, cells: list, on_done: OnDone | None) -> list:
    try:
        import ray

        from engines.platform.ray_executor import connect, task_runtime_env
    except ModuleNotFoundError as exc:
        if exc.name != "ray":
            raise
        raise RuntimeError("HAI_JOB_EXECUTOR=ray fans sweeps out over Ray, which is not installed here: "
                           "pip install ray==2.60.0 (the version requirements-dev.txt pins)") from None

    connect()  # within a job's task: connected already; a command run with HAI_JOB_EXECUTOR=ray joins the cluster
    shared = ray.put(fn)  # once, not per cell: the cells share the sweep's big inputs (e.g. the drawn cases)
    # Cells are pure, so Ray's retry of a cell whose worker died (the default) changes no result.
    call = _remote_call().options(runtime_env=task_runtime_env())
    refs = [call.remote(shared, cell) for cell in cells]
    position = {ref: index for index, ref in enumerate(refs)}
    results: list = [None] * len(cells)
    pending, done = refs, 0
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                results[position[ref]] = ray.get(ref)
                done += 1
                if on_done is not None:
                    on_done(position[ref], done)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return results
