"""The offline default captioner, ``pixels``, and what its inspector (:mod:`engines.video.offline.pixels_inspector`)
sees: general perception from pixels (:mod:`engines.video.offline.perception`), with no model trained on
any generator's videos.

The captioner describes each 16 s clip from frames every two seconds: the objects seen (colour
name, shape and place, and which way they move), and the words Tesseract reads on screen in the
clip's middle frame. The inspector answers colour, shape, position, motion, count, repeat, order
and text questions from the frames of the spans it is given, citing the frames that show it, and
asks to search more when the frames do not settle the question
(:class:`engines.video.offline.pixels_inspector.PixelsInspector`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from engines.video.decode import VideoReader, sample_times
from engines.video.offline.perception import (
    OCR_WIDTH,
    FrameView,
    Region,
    analysis_size,
    find_objects,
    motion_of,
    ocr_available,
    read_text,
)
from engines.video.roles import register
from engines.video.spans import Span

CAPTION_FPS = 0.5  # frames per second the captioner looks at (objects on screen for 2 s or more are indexed)
PAIR_GAP_S = 0.5  # motion: a frame and the one this much later
STEP_S = 0.75  # probes narrow the time of an appearance or disappearance down to this


# ------------------------------------------------------------------ seeing


@dataclass
class Seen:
    """The frames an inspection looked at: their times and what each shows (and, for motion, what
    the frame half a second later shows)."""

    times: list[float]
    views: list[FrameView]
    later: list[FrameView] = field(default_factory=list)


def look(reader: VideoReader, times: Sequence[float], *, pairs: bool = False) -> Seen:
    """Objects in the frames at ``times`` (analysed at most 320 pixels wide)."""
    size = analysis_size(reader.info.width, reader.info.height)
    end = max(0.0, reader.info.duration_s - 1e-3)
    wanted = [min(t, end) for t in times]
    if pairs:
        wanted += [min(t + PAIR_GAP_S, end) for t in times]
    frames = reader.frames_at(wanted, size=size) if wanted else []
    views = [find_objects(frame) for frame in frames]
    return Seen(list(times), views[:len(times)], views[len(times):])


def _midpoint(before: float, after: float) -> float:
    return round((before + after) / 2, 3)


class Probe:
    """More frames for an inspection that needs them, at most ``budget``, only inside its spans:
    where an object appears or disappears between two of the frames already seen, a frame between
    them settles which (see :func:`appearances` and :func:`answer_order`)."""

    def __init__(self, reader: VideoReader, spans: Sequence[Span], budget: int) -> None:
        self.reader, self.spans, self.budget = reader, list(spans), budget
        self.times: list[float] = []

    def between(self, a: float, b: float) -> float | None:
        """A time half way between ``a`` and ``b`` inside the spans (in the longest piece of that
        stretch that lies in them), None when too little of it does."""
        pieces = [(max(a, s.start), min(b, s.end)) for s in self.spans if s.start < b and s.end > a]
        pieces = [(x, y) for x, y in pieces if y - x > STEP_S / 2]
        if not pieces:
            return None
        x, y = max(pieces, key=lambda piece: piece[1] - piece[0])
        return _midpoint(x, y)

    def window(self) -> tuple[float, float]:
        """The stretch the spans cover, first start to last end."""
        return min(s.start for s in self.spans), max(s.end for s in self.spans)

    def look(self, times: Sequence[float]) -> list[tuple[float, FrameView]]:
        """What the frames at ``times`` show (as many as the budget allows)."""
        wanted = [t for t in dict.fromkeys(times) if t not in self.times][:max(0, self.budget - len(self.times))]
        if not wanted:
            return []
        self.times += wanted
        return list(zip(wanted, look(self.reader, wanted).views, strict=True))


def ocr_size(reader: VideoReader) -> tuple[int, int] | None:
    return analysis_size(reader.info.width, reader.info.height, OCR_WIDTH)


def words_at(reader: VideoReader, t: float) -> list[str]:
    """The words on screen at ``t`` (OCR of the text-like regions of the frame)."""
    frame = reader.frame_at(min(t, max(0.0, reader.info.duration_s - 1e-3)), size=ocr_size(reader))
    small = frame
    target = analysis_size(frame.shape[1], frame.shape[0])
    if target is not None:
        small = np.asarray(Image.fromarray(frame).resize(target, Image.Resampling.BOX))
    return read_text(frame, find_objects(small).text_boxes)


# ------------------------------------------------------------------ captioner


def _plural(region: Region, n: int) -> str:
    noun = "shape" if region.shape == "other" else region.shape
    return f"{n} {region.colour} {noun}s" if n > 1 else f"a {region.colour} {noun}"


def caption_views(views: Sequence[FrameView], words: Sequence[str] = ()) -> str:
    """A clip in words from what its frames show (in time order): each kind of object (colour and
    shape), how many at most, where, and which way it moves between frames; then the words read."""
    seen: dict[tuple[str, str], dict] = {}
    for number, view in enumerate(views):
        following = views[number + 1].objects if number + 1 < len(views) else ()
        for region in view.objects:
            key = (region.colour, region.shape)
            entry = seen.setdefault(key, {"region": region, "most": 0, "places": [], "moves": []})
            entry["most"] = max(entry["most"], sum(1 for r in view.objects if (r.colour, r.shape) == key))
            if region.cell not in entry["places"]:
                entry["places"].append(region.cell)
            move = motion_of(region, following) if following else None
            if move is not None:
                entry["moves"].append(move)
    parts = []
    for entry in seen.values():
        text = f"{_plural(entry['region'], entry['most'])} at {', '.join(entry['places'][:3])}"
        moves = [m for m in entry["moves"] if m != "still"]
        if moves and len(moves) * 2 >= len(entry["moves"]):
            text += f" moving {max(set(moves), key=moves.count)}"
        parts.append(text)
    if words:
        parts.append("text on screen: " + " ".join(words))
    return "; ".join(parts) or "no objects"


@register("captioner", "pixels")
class PixelsCaptioner:
    """Captions each clip from its frames every two seconds (see the module docstring)."""

    name = "pixels:1"
    index_suffix = ".pixels.index.json"  # beside a video's other indexes (the shipped demo's), not over them

    def __init__(self, ocr: bool = True) -> None:
        self.ocr = ocr and ocr_available()
        self.name = f"pixels:1{'+ocr' if self.ocr else ''}"

    def caption_clips(self, reader: VideoReader, clips: Sequence[Span]) -> list[str]:
        times_per_clip = [sample_times([clip], fps=CAPTION_FPS, max_frames=16, duration=reader.info.duration_s)
                          for clip in clips]
        seen = look(reader, [t for times in times_per_clip for t in times])
        captions, cursor = [], 0
        for times in times_per_clip:
            views = seen.views[cursor:cursor + len(times)]
            cursor += len(times)
            words: list[str] = []
            middle = len(views) // 2
            if self.ocr and views and views[middle].text_boxes:
                try:
                    words = words_at(reader, times[middle])
                except RuntimeError:
                    words = []
            captions.append(caption_views(views, words) + ".")
        return captions
