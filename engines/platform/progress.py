"""One progress protocol for long work: ``progress(done, total, message="")``.

Long work (training, a sweep, judging items, rendering videos) takes an optional ``progress``
callable and calls it as it goes: how much is done of how much, in the work's own unit (epochs,
items, frames; a fraction is ``done`` of ``total=1``), and what it is doing. Its consumers are
built here, so no area writes its own:

- ``ProgressBar``: the command line's bar on stderr (tqdm), off with ``--no-progress``;
- ``job_progress(ctx)``: a job's progress on the Jobs page (``JobContext.progress``, which also
  stops the work when the job is cancelled), mapped into a share of the job's whole.

Benchmarks use ``ProgressBar`` as the command line does.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Protocol


class Progress(Protocol):
    """``progress(done, total, message)``: ``done`` of ``total`` (same unit, ``total`` > 0), and what is being done."""

    def __call__(self, done: float, total: float, message: str = "") -> None: ...


COUNT_EVERY_S = 0.5  # a job's "done of total" message, at most this often


def share(done: float, total: float) -> float:
    """``done / total`` kept within [0, 1] (a total of 0 or less counts as finished)."""
    return 1.0 if total <= 0 else min(1.0, max(0.0, done / total))


def after(progress: Progress | None, before: float, total: float, label: str = "") -> Progress | None:
    """Progress of one piece of a larger work: the piece's ``done`` counts after ``before`` of the
    whole's ``total`` (both in the whole's unit); its message is ``label`` where it says nothing.
    ``None`` stays ``None``, so a piece need not ask whether anyone listens."""
    if progress is None:
        return None

    def report(done: float, piece_total: float, message: str = "") -> None:
        progress(before + done, total, message or label)

    return report


def _count(done: float, total: float, unit: str) -> str:
    """"1,200 of 5,000 items judged"; work measured in shares of 1 (no unit) as "80%"."""
    if total == 1 and not unit:
        return f"{share(done, total):.0%}"
    return f"{done:,.0f} of {total:,.0f}" + (f" {unit}" if unit else "")


def job_progress(ctx: Any, start: float = 0.0, end: float = 1.0, *, prefix: str = "", unit: str = "") -> Progress:
    """Progress of work that is the part ``start``..``end`` of a job, reported on the job (``ctx.progress``),
    which raises ``JobCancelled`` when the job is cancelled: the work stops at its next report.

    The job's message is ``prefix`` and the work's message, or, where the work says nothing,
    "``done`` of ``total`` ``unit``" ("1,200 of 5,000 items judged"; a share of 1: "80%"). A new message is stored at
    once; a repeated one, and the count at most every ``COUNT_EVERY_S`` (and at the end), so that
    work reporting every item does not write the job's row for each: the fraction alone is
    stored at the job's own pace.
    """
    if not 0.0 <= start <= end <= 1.0:
        raise ValueError(f"a job's part runs from start to end within [0, 1], got {start} to {end}")
    last = {"said": None, "counted_at": -float("inf")}

    def report(done: float, total: float, message: str = "") -> None:
        fraction = start + (end - start) * share(done, total)
        said = prefix + (message or _count(done, total, unit))
        now = time.monotonic()
        if message:
            tell = said != last["said"]
        else:
            tell = now - last["counted_at"] >= COUNT_EVERY_S or done >= total
            if tell:
                last["counted_at"] = now
        if tell:
            last["said"] = said
            ctx.progress(fraction, said)
        else:
            ctx.progress(fraction)

    return report


class ProgressBar:
    """A tqdm bar on stderr that follows ``progress(done, total, message)`` calls; nothing when disabled.

    Use it as a context manager (the bar is closed at the end); the first call's ``total`` sizes it
    and a later one resizes it, so the work, not the caller, says how much there is.
    """

    def __init__(self, description: str, unit: str = "it", *, enabled: bool = True) -> None:
        self.description, self.unit, self.enabled = description, unit, enabled
        self._bar = None

    def __call__(self, done: float, total: float, message: str = "") -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=self.description, unit=self.unit, file=sys.stderr)
        elif self._bar.total != total:
            self._bar.total = total
        self._bar.update(done - self._bar.n)
        if message:
            self._bar.set_postfix_str(message, refresh=False)

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
