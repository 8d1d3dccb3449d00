"""Subtitles (SRT): what the narrator says and when, read into the index beside the captions."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from engines.platform.files import echo
from engines.video.spans import Span

_TIMING = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d{1,3})\s*-->\s*(\d+):(\d\d):(\d\d)[,.](\d{1,3})")


class SubtitleFormatError(ValueError):
    """An SRT file that cannot be read; the message names the file and the line."""


@dataclass(frozen=True)
class Subtitle:
    span: Span
    text: str


def _seconds(hours: str, minutes: str, seconds: str, millis: str) -> float:
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds) + int(millis.ljust(3, "0")) / 1000


def read_srt(path: str | Path) -> list[Subtitle]:
    """The cues of an SRT file in time order. Tolerates a byte-order mark, blank lines, missing
    cue numbers, ``.`` for ``,`` and markup tags (dropped); a timing line that cannot be read is an
    error naming its line."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as error:
        raise SubtitleFormatError(f"{path}: not UTF-8 text ({error})") from error
    cues: list[Subtitle] = []
    number, text, span = 0, [], None
    for number, line in enumerate([*lines, ""], start=1):
        stripped = line.strip()
        if "-->" in stripped:
            match = _TIMING.search(stripped)
            if match is None:
                raise SubtitleFormatError(f"{path}, line {number}: unreadable timing {echo(stripped)}")
            start, end = _seconds(*match.groups()[:4]), _seconds(*match.groups()[4:])
            span, text = Span(start, max(start, end)), []
        elif not stripped:
            if span is not None and text:
                cues.append(Subtitle(span, " ".join(text)))
            span, text = None, []
        elif span is not None:
            text.append(re.sub(r"<[^>]+>", "", stripped))
    return sorted(cues, key=lambda cue: cue.span)


def write_srt(subtitles: list[Subtitle], path: Path) -> None:
    """Write cues as SRT (numbered from 1), through a temporary file."""
    def stamp(seconds: float) -> str:
        millis = int(round(seconds * 1000))
        return f"{millis // 3_600_000:02d}:{millis // 60_000 % 60:02d}:{millis // 1000 % 60:02d},{millis % 1000:03d}"
    blocks = [f"{n}\n{stamp(s.span.start)} --> {stamp(s.span.end)}\n{s.text}\n" for n, s in enumerate(subtitles, 1)]
    partial = path.with_name(path.name + ".partial")
    partial.write_text("\n".join(blocks))
    os.replace(partial, path)
