"""Shared by the benchmark scripts: the result file, the machine block, the PostgreSQL URL."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

# Where a benchmark looks for a PostgreSQL URL when none is passed, first non-empty wins.
PG_ENV_VARS = ("HAI_BENCH_PG_URL", "HAI_TEST_DATABASE_URL")


def write_result(result: dict, out: Path) -> None:
    """Write ``result`` as indented JSON to ``out`` without ever leaving a half-written file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)


def positive_counts(text: str) -> tuple[int, ...]:
    """An ``argparse`` type: comma-separated counts of 1 or more, such as ``1,10,50``."""
    import argparse

    try:
        counts = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,10,50, got {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"counts must be >= 1, got {text!r}")
    return counts


def pg_url_from_env() -> str:
    """The PostgreSQL URL from ``$HAI_BENCH_PG_URL``, else ``$HAI_TEST_DATABASE_URL``; "" when neither is set."""
    return next((os.environ[v] for v in PG_ENV_VARS if os.environ.get(v)), "")


def cpu_steal_s() -> float | None:
    """CPU seconds the hypervisor gave to other guests so far, summed over CPUs (Linux; else None)."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
        return int(fields[8]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def machine_info(load_before: float | None = None, steal_before: float | None = None) -> dict:
    """The result file's "machine" block.

    ``load_avg_1min`` is the 1-minute load now; given ``load_before`` (the load when the run
    started), it is ``[load_before, load now]``, since other work on the machine skews latency.
    Given ``steal_before`` (``cpu_steal_s()`` when the run started), ``cpu_steal_s`` is the CPU
    time a virtual machine's CPUs were taken away during the run: another skew, often the larger.
    """
    load_now = round(os.getloadavg()[0], 2)
    info = {"cpu_count": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "processor": platform.machine(),
            "load_avg_1min": load_now if load_before is None else [load_before, load_now]}
    steal_now = cpu_steal_s()
    if steal_before is not None and steal_now is not None:
        info["cpu_steal_s"] = round(steal_now - steal_before, 2)
    return info


def emit(run: Callable[[], dict], out: Path) -> dict:
    """Run a benchmark, write its result to ``out`` and print it as one JSON line on stdout.

    Only that line goes to stdout: anything a library prints during the run goes to stderr.
    """
    with contextlib.redirect_stdout(sys.stderr):
        result = run()
    write_result(result, out)
    print(json.dumps(result, separators=(",", ":")))
    return result

