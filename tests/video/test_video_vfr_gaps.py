"""Variable frame rate: a time that falls in a gap between two frames gets the frame on screen then,
the last one whose presentation time is at or before it, never the next one.

The videos are written here with PyAV at presentation times chosen by hand (irregular, in
milliseconds); each frame is a flat grey whose level is its number, so the frame returned for a
time is read back from its pixels and checked against the number expected from the times written."""

from __future__ import annotations

from fractions import Fraction

import av
import numpy as np
import pytest

from engines.video.decode import open_video

# Irregular presentation times (ms): gaps from 10 ms to 700 ms, then a regular tail of 100 ms steps
# (so that the container's duration, which H.264's decoding delay can shorten by a few frames,
# lies well after every gap probed).
IRREGULAR_MS = [0, 100, 350, 400, 900, 1000, 1150, 1600, 1610, 2300, 2350, 2400, 3100, 3140, 3500]
TAIL_MS = [3600 + 100 * k for k in range(8)]
PTS_MS = IRREGULAR_MS + TAIL_MS
STEP = 10  # grey level of frame n: 16 + STEP * n


def _level(n: int) -> int:
    return 16 + STEP * n


def _number(frame: np.ndarray) -> int:
    return round((float(frame.mean()) - 16) / STEP)


def _write(path, pts_ms, *, fmt: str, rate, b_frames: int, keyint: int) -> None:
    with av.open(str(path), "w", format=fmt) as container:
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = 64, 48, "yuv420p"
        stream.time_base = Fraction(1, 1000)
        stream.codec_context.time_base = Fraction(1, 1000)
        stream.options = {"qp": "0", "x264-params": f"keyint={keyint}:min-keyint={keyint}:scenecut=0:bframes={b_frames}"}
        for n, ms in enumerate(pts_ms):
            frame = av.VideoFrame.from_ndarray(np.full((48, 64, 3), _level(n), np.uint8), format="rgb24")
            frame.pts, frame.time_base = ms, Fraction(1, 1000)
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))


@pytest.fixture(scope="module", params=[("mp4", 2), ("mp4", 0), ("mpegts", 2), ("matroska", 2)],
                ids=["mp4-b-frames", "mp4-no-b-frames", "mpegts-b-frames", "matroska-b-frames"])
def vfr_video(request, tmp_path_factory):
    fmt, b_frames = request.param
    suffix = {"mp4": "mp4", "mpegts": "ts", "matroska": "mkv"}[fmt]
    path = tmp_path_factory.mktemp("vfr") / f"vfr-b{b_frames}.{suffix}"
    _write(path, PTS_MS, fmt=fmt, rate=10, b_frames=b_frames, keyint=4)
    return path


def _gap_probes() -> tuple[list[float], list[int]]:
    """Times inside each gap of the irregular part (a quarter, half and three quarters of the way,
    and half a millisecond before the next frame), at each frame's own time, and the frame shown
    at each: the earlier frame of the gap."""
    times, expected = [], []
    for n in range(len(IRREGULAR_MS)):
        start, end = PTS_MS[n], PTS_MS[n + 1]
        for ms in (start, start + (end - start) / 4, (start + end) / 2, start + 3 * (end - start) / 4, end - 0.5):
            times.append(ms / 1000)
            expected.append(n)
    return times, expected


def test_the_video_really_has_irregular_frame_times(vfr_video):
    with av.open(str(vfr_video)) as container:
        stream = container.streams.video[0]
        seconds = sorted(float((frame.pts - (stream.start_time or 0)) * stream.time_base)
                         for frame in container.decode(stream))
    assert seconds == pytest.approx([ms / 1000 for ms in PTS_MS], abs=1e-4)
    assert len({round(b - a, 4) for a, b in zip(seconds, seconds[1:], strict=False)}) > 5


def test_a_time_in_a_gap_gets_the_frame_before_it(vfr_video):
    times, expected = _gap_probes()
    with open_video(vfr_video) as reader:
        assert reader.info.duration_s > max(times)  # every probe is a time inside the video
        singly = [_number(reader.frame_at(t)) for t in times]
        together = [_number(frame) for frame in reader.frames_at(times)]
    assert singly == expected
    assert together == expected


def test_gaps_also_with_the_keyframe_index_and_in_any_order(vfr_video):
    times, expected = _gap_probes()
    order = list(range(len(times)))[::-1]  # reversed, and each time twice
    asked = [times[k] for k in order] * 2
    with open_video(vfr_video, threads=3) as reader:
        reader.keyframe_times()
        got = [_number(frame) for frame in reader.frames_at(asked)]
    assert got == [expected[k] for k in order] * 2


def test_a_constant_rate_in_a_millisecond_time_base_keeps_its_frame_boundaries(tmp_path):
    # 30 fps in Matroska's 1 ms time base: frame 2 is stored at 67 ms (66.67 ms rounded to the tick).
    # At the boundary 2 / 30 s the frame is frame 2, and a tenth of a millisecond before, frame 1.
    path = tmp_path / "cfr30.mkv"
    fps = 30
    _write(path, [round(1000 * k / fps) for k in range(24)], fmt="matroska", rate=fps, b_frames=2, keyint=8)
    times, expected = [], []
    for k in range(1, 23):
        times += [k / fps, k / fps - 1e-4, (k + 0.5) / fps]
        expected += [k, k - 1, k]
    with open_video(path) as reader:
        assert [_number(frame) for frame in reader.frames_at(times)] == expected
