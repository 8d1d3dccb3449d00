"""Time spans in a video: parsing benchmark time references, merging, and the set arithmetic the
groundedness metrics are made of.

Times are seconds (floats). A span is closed-open ``[start, end)`` with ``end >= start``; a zero-
width span is a point in time, as LVBench's 263 references of the form ``"12:34-12:34"`` are
(docs/video.md, "Method: benchmark formats"). Metrics widen points to a window first (:func:`widen`), as the
upstream inspector widens every span to at least 15 s (``normalize_window_min_width``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from engines.platform.files import echo

MIN_WIDTH_S = 15.0  # upstream ``normalize_window_min_width``: an inspected or reference span is at least this wide


class TimeFormatError(ValueError):
    """A time or time reference that cannot be read; the message says which text and why."""


@dataclass(frozen=True, order=True)
class Span:
    """``[start, end)`` in seconds from the start of the video."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            raise TimeFormatError(f"a span needs finite times, got {self.start}..{self.end}")
        if self.start < 0 or self.end < self.start:
            raise TimeFormatError(f"a span must satisfy 0 <= start <= end, got {self.start}..{self.end}")

    @property
    def length(self) -> float:
        return self.end - self.start

    def contains(self, t: float, tolerance: float = 0.0) -> bool:
        return self.start - tolerance <= t <= self.end + tolerance

    def label(self) -> str:
        return f"{format_time(self.start)}-{format_time(self.end)}"


def parse_time(text: str | float | int) -> float:
    """Seconds from ``"HH:MM:SS(.fff)"``, ``"MM:SS"``, ``"SS"`` or a number.

    >>> parse_time("01:02:03.5"), parse_time("08:17"), parse_time(12)
    (3723.5, 497.0, 12.0)
    """
    if isinstance(text, bool):
        raise TimeFormatError(f"not a time: {echo(text)}")
    if isinstance(text, int | float):
        value = float(text)
    else:
        cleaned = str(text).strip()
        if not re.fullmatch(r"\d+(:\d{1,2}){0,2}(\.\d+)?", cleaned):
            raise TimeFormatError(f"not a time: {echo(text)} (expected HH:MM:SS, MM:SS or seconds)")
        *head, last = cleaned.split(":")
        if any(int(part) >= 60 for part in ([*head[1:], last.split(".")[0]] if head else [])):
            raise TimeFormatError(f"not a time: {echo(text)} (minutes and seconds must be below 60)")
        value = 0.0
        for part in head:
            value = value * 60 + int(part)
        value = value * 60 + float(last) if head else float(last)
    if not math.isfinite(value) or value < 0:
        raise TimeFormatError(f"not a time: {echo(text)} (must be a finite number of seconds, 0 or more)")
    return value


def format_time(seconds: float) -> str:
    """``HH:MM:SS`` (whole seconds, rounded down), the form the planner and inspector cite."""
    whole = int(max(0.0, seconds))
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def parse_time_reference(text: str | None) -> tuple[list[Span], str | None]:
    """The spans of a benchmark time reference and a note on anything that was repaired.

    Accepts ``"MM:SS-MM:SS"`` and ``"HH:MM:SS-HH:MM:SS"``, several joined by ``,`` or ``;``. A
    malformed end (``"08:17-None"``, an empty end) leaves the point at the start, with a note; an
    end before its start is swapped, with a note; an empty or missing reference gives no spans.
    Raises :class:`TimeFormatError` when a start cannot be read at all.
    """
    if text is None or not str(text).strip() or str(text).strip().lower() in {"none", "nan", "null"}:
        return [], None
    spans, notes = [], []
    for piece in re.split(r"[;,]", str(text)):
        piece = piece.strip()
        if not piece:
            continue
        start_text, _, end_text = piece.partition("-")
        start = parse_time(start_text)
        try:
            end = parse_time(end_text) if end_text.strip() else None
        except TimeFormatError:
            end = None
        if end is None:
            notes.append(f"{echo(piece)}: no readable end, kept as the point {format_time(start)}")
            end = start
        elif end < start:
            notes.append(f"{echo(piece)}: end before start, swapped")
            start, end = end, start
        spans.append(Span(start, end))
    return spans, ("; ".join(notes) or None)


def merge(spans: Iterable[Span]) -> list[Span]:
    """The union of ``spans`` as sorted, disjoint spans (touching spans join)."""
    merged: list[Span] = []
    for span in sorted(spans):
        if merged and span.start <= merged[-1].end:
            if span.end > merged[-1].end:
                merged[-1] = Span(merged[-1].start, span.end)
        else:
            merged.append(span)
    return merged


def total_length(spans: Iterable[Span]) -> float:
    """|S|: the length of the union of ``spans``."""
    return sum(span.length for span in merge(spans))


def intersection_length(first: Iterable[Span], second: Iterable[Span]) -> float:
    """|A ∩ B| of two sets of spans (each merged first, so overlaps within a set count once)."""
    a, b = merge(first), merge(second)
    i = j = 0
    total = 0.0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i].end, b[j].end) - max(a[i].start, b[j].start))
        if a[i].end < b[j].end:
            i += 1
        else:
            j += 1
    return total


def iou(first: Span, second: Span) -> float:
    """|a ∩ b| / |a ∪ b| of two spans; 0 when both are points."""
    overlap = max(0.0, min(first.end, second.end) - max(first.start, second.start))
    union = first.length + second.length - overlap
    return overlap / union if union > 0 else 0.0


def widen(span: Span, min_width: float = MIN_WIDTH_S, duration: float | None = None) -> Span:
    """``span`` grown symmetrically to at least ``min_width`` seconds, kept inside [0, duration]
    (shifted, not cut, when it meets an end; cut only when the video is shorter than the width)."""
    if span.length >= min_width:
        return span
    centre = (span.start + span.end) / 2
    start, end = centre - min_width / 2, centre + min_width / 2
    if start < 0:
        start, end = 0.0, min_width
    if duration is not None and end > duration:
        start, end = max(0.0, duration - min_width), duration
    return Span(start, end)
