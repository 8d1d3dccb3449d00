"""Benchmark questions: the one :class:`Question` type every reader returns, its options and letters.

The readers of each long-video QA benchmark format are in :mod:`engines.video.loaders`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engines.platform.files import echo
from engines.video.spans import Span

BENCHMARKS = ("lvbench", "longvideobench", "videomme", "mlvu", "egoschema", "synthetic")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

# A clock time in a question stem ("12:34", "01:02:03"): the question names its own time range,
# and upstream's inspector prompt requires such "fixed-range" questions always be answered.
_CLOCK_TIME = re.compile(r"(?<![\d:])\d{1,2}(?::[0-5]\d){1,2}(?![\d:])")
# An LVBench option marker: "(A)" at the start of a line (leading blanks allowed).
_OPTION_MARKER = re.compile(r"^[ \t]*\(([A-Z])\)", re.MULTILINE)


class QuestionFormatError(ValueError):
    """A benchmark file (or a :class:`Question`) that cannot be read; the message names the file,
    where in it (``line N`` / ``record N``) and the field, when known."""

    def __init__(self, problem: str, *, path: str | Path | None = None, location: str | None = None,
                 field: str | None = None) -> None:
        self.problem, self.path, self.location, self.field = problem, path, location, field
        where = [str(path)] if path is not None else []
        where += [location] if location else []
        where += [f"field {field!r}"] if field else []
        super().__init__(f"{', '.join(where)}: {problem}" if where else problem)


@dataclass(frozen=True)
class Question:
    """One multiple-choice question about one video, whatever benchmark it came from."""

    uid: str
    video_id: str  # the video file's name without its extension
    question: str  # the stem, without the options
    options: tuple[str, ...]  # option texts, without their "(A) " prefix
    answer: str | None  # the correct letter; None when the benchmark does not publish it (EgoSchema's test set)
    question_type: tuple[str, ...] = ()
    gt_spans: tuple[Span, ...] = ()  # ground-truth evidence; empty when the benchmark has none (all but LVBench)
    time_reference: str | None = None  # the benchmark's raw text, kept for the trajectory record
    benchmark: str = "lvbench"
    duration_s: float | None = None
    note: str | None = None  # what a reader repaired (e.g. a malformed time reference)

    def __post_init__(self) -> None:
        # Lists are accepted for convenience; stored as tuples so a question stays hashable.
        for name in ("options", "question_type", "gt_spans"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.benchmark not in BENCHMARKS:
            raise QuestionFormatError(f"unknown benchmark {echo(self.benchmark)} (one of {', '.join(BENCHMARKS)})",
                                      field="benchmark")
        problem = _options_problem(self.options)
        if problem:
            raise QuestionFormatError(problem, field="options")
        problem = _answer_problem(self.answer, len(self.options))
        if problem:
            raise QuestionFormatError(problem, field="answer")
        if not all(isinstance(span, Span) for span in self.gt_spans):
            raise QuestionFormatError("every ground-truth span must be a Span", field="gt_spans")

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters, ``("A", "B", ...)``."""
        return tuple(LETTERS[: len(self.options)])

    def option_text(self, letter: str) -> str:
        """The text of option ``letter``; ``ValueError`` if the question has no such option."""
        if letter not in self.letters:
            raise ValueError(f"question {echo(self.uid)} has no option {echo(letter)} (options {', '.join(self.letters)})")
        return self.options[self.letters.index(letter)]

    @property
    def fixed_range(self) -> bool:
        """True when the stem names a time ("at 12:34", "between 01:02:03 and 01:05:00"): upstream's
        inspector must then always answer, never search more. Options are not looked at, as
        temporal-grounding questions list times as their options."""
        return bool(_CLOCK_TIME.search(self.question))

    def prompt_text(self) -> str:
        """Stem and options in LVBench's shape: ``"stem\\n(A) text\\n(B) text..."``."""
        lines = [f"({letter}) {text}" for letter, text in zip(self.letters, self.options, strict=True)]
        return "\n".join([self.question, *lines])


# ---------------------------------------------------------------- validation shared by Question and the readers


def _options_problem(options: Iterable[Any]) -> str | None:
    options = tuple(options)
    if len(options) < 2:
        return f"a question needs at least 2 options, got {len(options)}"
    if len(options) > len(LETTERS):
        return f"at most {len(LETTERS)} options can be lettered, got {len(options)}"
    for i, text in enumerate(options):
        if not isinstance(text, str) or not text.strip():
            return f"option {LETTERS[i]} is {echo(text)}, not a non-empty text"
    return None


def _answer_problem(answer: Any, n_options: int) -> str | None:
    letters = LETTERS[:n_options]
    if answer is None or (isinstance(answer, str) and answer in letters):
        return None
    return f"{echo(answer)} is not one of the option letters {', '.join(letters)}"


def parse_options(text: str) -> tuple[str, tuple[str, ...]]:
    """The stem and option texts of an LVBench question, ``"stem\\n(A) ...\\n(B) ..."``.

    Each option starts a line with ``(A)``, ``(B)``... in order; an option's text runs to the next
    marker and may wrap onto further lines. Runs of whitespace inside an option become one space,
    so the options read back the same from :meth:`Question.prompt_text`. Raises ``ValueError``.
    """
    markers = list(_OPTION_MARKER.finditer(text))
    if not markers or markers[0].group(1) != "A":
        raise ValueError("no options: expected lines starting (A), (B), ... after the stem")
    found = "".join(marker.group(1) for marker in markers)
    if found != LETTERS[: len(found)]:
        raise ValueError(f"options must be lettered (A), (B), ... in order, found {', '.join(found)}")
    ends = [marker.start() for marker in markers[1:]] + [len(text)]
    options = tuple(" ".join(text[marker.end() : end].split()) for marker, end in zip(markers, ends, strict=True))
    return text[: markers[0].start()].strip(), options
