"""Frame-accurate frames of a video at given times, with PyAV.

The frame shown at time t is the last one whose presentation time is at or before t: frame
``floor(t * fps)`` at a constant frame rate, and at a variable one (frames at irregular times) the
earlier frame of the gap a time falls in, never the next one. Seeking with OpenCV's
``CAP_PROP_POS_FRAMES`` can land on a neighbouring frame (opencv/opencv #9053, #4890, #26827;
upstream VideoSEAL seeks about a second early and reads forward), so this module seeks the demuxer
to the keyframe at or before the target and decodes forward past the target's presentation time:
exact also just before and after keyframes and for streams with B-frames, since the decoder hands
frames out in presentation order.

Many times at once (:meth:`VideoReader.frames_at`) are grouped by the keyframe before them (a
keyframe index read from the packets, without decoding), so that each group of pictures is decoded
once, and the groups are decoded in threads, each with its own container (PyAV containers are not
thread-safe; FFmpeg's decoding releases the GIL). docs/video.md, "Frames".

A stream whose frames hold more than ``HAI_MAX_FRAME_PIXELS`` pixels (width x height; default
3840 x 2160) is refused when it is opened, before any frame is decoded: one 8192 x 8192 frame is
200 MB as RGB, and an inspection decodes dozens. The limit refuses rather than downscales, so that
a reader never hands out frames that are not the video's own.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from engines.platform.settings import get_settings
from engines.video.spans import Span

# Times are floats; a time meant to be exactly a frame boundary (k / fps) may come out a hair
# below it (0.3 * 10 = 2.9999999999999996), which must not fall back to the previous frame.
_EPSILON_FRAMES = 1e-6
DEFAULT_THREADS = 4


class VideoError(ValueError):
    """A file that is not a readable video, or a time outside it; the message names the file."""


class _MissedSeek(Exception):
    """A seek that did not land at or before the wanted frame."""


@dataclass(frozen=True)
class VideoInfo:
    """What a reader knows about its video. ``n_frames`` is counted from the packets when the
    container does not store it; the keyframes are :meth:`VideoReader.keyframe_times`."""

    path: str
    duration_s: float
    fps: float
    n_frames: int
    width: int
    height: int
    codec: str


@dataclass(frozen=True)
class _Stream:
    fps: Fraction
    time_base: Fraction
    start_pts: int


def open_video(path: str | Path, *, threads: int = DEFAULT_THREADS) -> VideoReader:
    """A reader of the video at ``path``. Raises :class:`VideoError` when the file is missing, is
    not a video PyAV can read, or has no video stream."""
    return VideoReader(path, threads=threads)


class VideoReader:
    """Frames of one video by time. Use as a context manager, or call :meth:`close`."""

    def __init__(self, path: str | Path, *, threads: int = DEFAULT_THREADS) -> None:
        self.path = str(path)
        if not Path(self.path).is_file():
            raise VideoError(f"{self.path}: no such file")
        self._threads = max(1, threads)
        self._local = threading.local()
        self._containers: list[av.container.InputContainer] = []
        self._lock = threading.Lock()
        container = self._container()
        stream = container.streams.video[0]
        self._check_frame_size(stream.codec_context.width, stream.codec_context.height)
        # MP4 and MOV store the frame count; other containers (MPEG-TS, Matroska) are counted from
        # their packets, which also gives the keyframes (otherwise read only when asked for).
        self._keyframe_pts: list[int] | None = None
        n_frames, rate, span = stream.frames, stream.average_rate, None
        time_base = Fraction(stream.time_base)
        if n_frames <= 0:
            self._keyframe_pts, n_frames, (first, last) = self._scan_packets()
            if n_frames > 1 and last > first:
                span = (first, last)
                if not rate:
                    # No average rate stored (MPEG-TS): the packets' own, between the first frame
                    # and the last (the guessed rate of a variable-rate stream is its fastest).
                    rate = Fraction(n_frames - 1) / ((last - first) * time_base)
        rate = rate or stream.guessed_rate
        if not rate:
            raise VideoError(f"{self.path}: the video stream has no frame rate")
        self._stream = _Stream(Fraction(rate), time_base, stream.start_time or 0)
        if n_frames == 0:
            raise VideoError(f"{self.path}: the video stream holds no frames")
        duration = Fraction(n_frames) / self._stream.fps
        if span is not None and (span[1] - self._stream.start_pts) * time_base >= duration:
            # A variable rate whose stored rate is not its average (Matroska stores the nominal
            # one): the frames run past n / fps; the last is shown for an average frame's time.
            duration = (span[1] - self._stream.start_pts) * time_base + (span[1] - span[0]) * time_base / (n_frames - 1)
        self._duration = duration
        self.info = VideoInfo(self.path, float(duration), float(self._stream.fps), n_frames,
                              stream.codec_context.width, stream.codec_context.height, stream.codec_context.name)

    def _check_frame_size(self, width: int, height: int) -> None:
        """Refuse frames larger than the setting allows (each decoded frame is width x height x 3 bytes)."""
        limit = get_settings().max_frame_pixels
        if width * height > limit:
            self.close()
            raise VideoError(f"{self.path}: frames of {width} x {height} pixels are more than the {limit:,} "
                             "allowed (HAI_MAX_FRAME_PIXELS)")

    # ------------------------------------------------------------------ containers

    def _container(self) -> av.container.InputContainer:
        """This thread's open container (opened on first use)."""
        container = getattr(self._local, "container", None)
        if container is None:
            try:
                container = av.open(self.path)
            except av.error.FFmpegError as error:
                raise VideoError(f"{self.path}: not a video PyAV can read ({error})") from error
            if not container.streams.video:
                container.close()
                raise VideoError(f"{self.path}: the file has no video stream")
            container.streams.video[0].thread_type = "AUTO"
            self._local.container = container
            with self._lock:
                self._containers.append(container)
        return container

    def _scan_packets(self) -> tuple[list[int], int, tuple[int, int]]:
        """Keyframe presentation times, the number of frames and the first and last presentation
        times, from the packets (no decoding)."""
        container = self._container()
        stream = container.streams.video[0]
        keyframes, count, first, last = [], 0, None, None
        try:
            for packet in container.demux(stream):
                if packet.size == 0 or packet.pts is None:
                    continue  # the flush packet at the end, or a packet without a time
                count += 1
                first = packet.pts if first is None else min(first, packet.pts)
                last = packet.pts if last is None else max(last, packet.pts)
                if packet.is_keyframe:
                    keyframes.append(packet.pts)
        except av.error.FFmpegError as error:
            raise VideoError(f"{self.path}: the file is corrupt after {count} frames ({error})") from error
        container.seek(0, stream=stream)  # back to the start for the first decode
        return sorted(keyframes), count, (first or 0, last or 0)

    def keyframe_times(self) -> list[float]:
        """Presentation times (s) of the keyframes, read from the packets on first use."""
        if self._keyframe_pts is None:
            self._keyframe_pts, _, _ = self._scan_packets()
        return [float((pts - self._stream.start_pts) * self._stream.time_base) for pts in self._keyframe_pts]

    def close(self) -> None:
        with self._lock:
            for container in self._containers:
                container.close()
            self._containers.clear()
        self._local = threading.local()

    def __enter__(self) -> VideoReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ times and frame numbers

    def index_at(self, t: float) -> int:
        """The nominal number of the frame shown at ``t`` seconds, ``floor(t * fps)`` at the stream's
        average rate (the frame's number itself at a constant rate); raises :class:`VideoError` for
        a time that is not in the video."""
        if not math.isfinite(t) or t < 0:
            raise VideoError(f"{self.path}: time {t!r} is not a time in the video (seconds, 0 or more)")
        index = math.floor(t * self._stream.fps + _EPSILON_FRAMES)
        if Fraction(t) + Fraction(_EPSILON_FRAMES) / self._stream.fps >= self._duration:
            raise VideoError(f"{self.path}: time {t:.3f} s lies beyond the end of the video "
                             f"({self.info.n_frames} frames, {self.info.duration_s:.3f} s)")
        return index

    def _target(self, t: float) -> Fraction:
        """The latest presentation time (s, from the stream's start) a frame shown at ``t`` may have:
        ``t`` itself, plus a millionth of a frame for a time meant to be exactly a frame boundary."""
        self.index_at(t)  # refuses a time outside the video
        return Fraction(t) + Fraction(_EPSILON_FRAMES) / self._stream.fps

    def _time_of(self, pts: int) -> Fraction:
        """The presentation time (s, from the stream's start) of a frame or packet.

        Timestamps are whole ticks of the time base, so a frame of a constant-rate stream in a
        coarse time base (Matroska's milliseconds) sits up to half a tick off its nominal time k /
        fps (frame 2 at 30 fps: 67 ms for 66.67 ms); a time within half a tick of the nominal grid
        is taken to be on it. Any other time (a variable frame rate) is taken as it is."""
        seconds = (pts - self._stream.start_pts) * self._stream.time_base
        nominal = Fraction(round(seconds * self._stream.fps)) / self._stream.fps
        return nominal if abs(seconds - nominal) <= self._stream.time_base / 2 else seconds

    def _pts_at(self, seconds: Fraction) -> int:
        """The last timestamp at or before ``seconds`` (from the stream's start)."""
        return self._stream.start_pts + math.floor(seconds / self._stream.time_base)

    # ------------------------------------------------------------------ frames

    def frame_at(self, t: float, *, size: tuple[int, int] | None = None) -> np.ndarray:
        """The RGB frame (H, W, 3) uint8 shown at ``t`` seconds; ``size`` (width, height) rescales it."""
        return self.frames_at([t], size=size)[0]

    def frames_at(self, times: Sequence[float], *, size: tuple[int, int] | None = None) -> list[np.ndarray]:
        """The frames shown at each of ``times`` (any order, repeats allowed), in that order: for each
        time, the last frame whose presentation time is at or before it, also when the frames come
        at irregular times (a variable frame rate) and the time falls in a gap between two.

        Targets are grouped by the keyframe before them; each group is one seek and one forward
        decode, and groups run in threads."""
        targets = [self._target(t) for t in times]
        runs = self._runs(sorted(set(targets)))
        if len(runs) == 1 or self._threads == 1:
            decoded = [self._decode_run(keyframe, wanted, size) for keyframe, wanted in runs]
        else:
            with ThreadPoolExecutor(max_workers=min(self._threads, len(runs))) as pool:
                decoded = list(pool.map(lambda run: self._decode_run(run[0], run[1], size), runs))
        frames = {target: frame for part in decoded for target, frame in part.items()}
        return [frames[target] for target in targets]

    def _runs(self, wanted: list[Fraction]) -> list[tuple[int, list[Fraction]]]:
        """Sorted target times grouped into runs, each (where to seek, its targets): by the keyframe
        at or before them when the keyframes are known; else a target less than two seconds after
        the previous one is decoded on to rather than sought (a keyframe is rarely closer)."""
        runs: list[tuple[int, list[Fraction]]] = []
        if self._keyframe_pts is not None:
            keyframe_times = [self._time_of(pts) for pts in self._keyframe_pts]
            groups: dict[int, list[Fraction]] = {}
            for target in wanted:
                position = bisect.bisect_right(keyframe_times, target) - 1
                groups.setdefault(self._keyframe_pts[max(position, 0)], []).append(target)
            return list(groups.items())
        for target in wanted:
            if runs and target - runs[-1][1][-1] <= 2:
                runs[-1][1].append(target)
            else:
                runs.append((self._pts_at(target), [target]))
        return runs

    def _decode_run(self, keyframe_pts: int, wanted: list[Fraction],
                    size: tuple[int, int] | None) -> dict[Fraction, np.ndarray]:
        """Seek to the keyframe at or before ``keyframe_pts`` and decode forward, keeping the frames
        shown at the ``wanted`` target times (sorted).

        Some demuxers (MPEG-TS) cannot seek by a stream's time and land at the end, or past the
        target; then the run starts again from the beginning of the file, slower but exact."""
        try:
            return self._decode_from(keyframe_pts, wanted, size)
        except _MissedSeek:
            return self._decode_from(None, wanted, size)

    def _decode_from(self, keyframe_pts: int | None, wanted: list[Fraction],
                     size: tuple[int, int] | None) -> dict[Fraction, np.ndarray]:
        container = self._container()
        stream = container.streams.video[0]
        found: dict[Fraction, np.ndarray] = {}
        position, last = 0, None
        try:
            if keyframe_pts is None:
                container.seek(0)
            else:
                container.seek(keyframe_pts, stream=stream, backward=True)
            for frame in container.decode(stream):
                if frame.pts is None:
                    continue
                shown = self._time_of(frame.pts)
                # The frame shown at a wanted time is the last one whose time is at or before it: the
                # one before the first frame that comes after it (never that later frame, which is
                # not on screen yet, however close, nor an earlier one, however far back).
                while position < len(wanted) and shown > wanted[position]:
                    if last is None:
                        if keyframe_pts is None:
                            raise VideoError(f"{self.path}: the stream starts after "
                                             f"{float(wanted[position]):.3f} s")
                        raise _MissedSeek
                    found[wanted[position]] = self._picture(last, size)
                    position += 1
                if position == len(wanted):
                    break
                last = frame
        except av.error.FFmpegError as error:
            raise VideoError(f"{self.path}: decoding failed near {float(wanted[position]):.3f} s ({error}); "
                             "the file may be truncated or corrupt") from error
        if last is None and keyframe_pts is not None:
            raise _MissedSeek
        while position < len(wanted) and last is not None:
            found[wanted[position]] = self._picture(last, size)  # the stream ended: its last frame stays shown
            position += 1
        if position < len(wanted):
            raise VideoError(f"{self.path}: the stream ends before {float(wanted[position]):.3f} s; "
                             "the file is shorter than its packets say (truncated?)")
        return found

    @staticmethod
    def _picture(frame: av.VideoFrame, size: tuple[int, int] | None) -> np.ndarray:
        if size is None:
            return frame.to_ndarray(format="rgb24")
        return frame.to_ndarray(format="rgb24", width=size[0], height=size[1], interpolation="AREA")

    # ------------------------------------------------------------------ sampling

    def sample(self, spans: Iterable[Span] | None = None, *, fps: float = 2.0, max_frames: int = 48,
               pixel_budget: int | None = None) -> tuple[list[float], list[np.ndarray]]:
        """Frames at ``fps`` inside ``spans`` (default: the whole video), at most ``max_frames`` in
        all, shared between the spans by length (each gets at least one), and scaled so that all
        of them together hold at most ``pixel_budget`` pixels. Returns the times and the frames."""
        spans = list(spans) if spans is not None else [Span(0.0, self.info.duration_s)]
        times = sample_times(spans, fps=fps, max_frames=max_frames, duration=self.info.duration_s)
        size = budget_size(self.info.width, self.info.height, len(times), pixel_budget)
        return times, self.frames_at(times, size=size)


def sample_times(spans: Sequence[Span], *, fps: float, max_frames: int, duration: float) -> list[float]:
    """Sorted times at ``fps`` inside each span (centred in their 1/fps slots), at most ``max_frames``
    in all: when the spans would take more, each gets a share proportional to its length, at least one.

    >>> sample_times([Span(0, 2)], fps=2, max_frames=48, duration=10)
    [0.25, 0.75, 1.25, 1.75]
    """
    if fps <= 0 or max_frames < 1:
        raise ValueError(f"fps must be positive and max_frames at least 1, got {fps} and {max_frames}")
    spans = [Span(min(s.start, duration), min(s.end, duration)) for s in spans]
    spans = [s for s in spans if s.start < duration] or [Span(0.0, duration)]
    wanted = [max(1, math.floor(s.length * fps + _EPSILON_FRAMES)) for s in spans]
    if sum(wanted) > max_frames:
        total = sum(s.length for s in spans) or 1.0
        wanted = [max(1, min(w, math.floor(max_frames * s.length / total))) for w, s in zip(wanted, spans, strict=True)]
        while sum(wanted) > max_frames and max(wanted) > 1:
            wanted[wanted.index(max(wanted))] -= 1
    times = []
    for span, n in zip(spans, wanted, strict=True):
        step = span.length / n
        times.extend(min(span.start + (k + 0.5) * step, duration - 1e-6) for k in range(n))
    return sorted(times)[:max_frames]


def budget_size(width: int, height: int, n_frames: int, pixel_budget: int | None) -> tuple[int, int] | None:
    """(width, height) for ``n_frames`` frames to hold at most ``pixel_budget`` pixels together, the
    aspect kept and both sides even; None when the frames fit as they are."""
    if pixel_budget is None or n_frames * width * height <= pixel_budget:
        return None
    scale = math.sqrt(pixel_budget / (n_frames * width * height))
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)
