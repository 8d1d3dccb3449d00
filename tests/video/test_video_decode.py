"""Frame-accurate decoding: every frame the generator writes carries its number in a code strip, so
the frame returned for a time can be checked against floor(t * fps) computed here by hand."""

from __future__ import annotations

import math
import random

import av
import numpy as np
import pytest

from engines.video.decode import VideoError, budget_size, open_video, sample_times
from engines.video.render import read_frame_code
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, generate

FPS = 4


@pytest.fixture(scope="module", params=[2, 0], ids=["b-frames", "no-b-frames"])
def video(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"video-b{request.param}")
    [script] = generate(out, SyntheticConfig(minutes=1.5, seed=3, fps=FPS, b_frames=request.param,
                                             keyframe_interval_s=2.0))
    return out / f"{script.video_id}.mp4"


def _numbers(frames) -> list[int]:
    return [read_frame_code(frame) for frame in frames]


def test_the_stream_really_has_b_frames_when_asked(video):
    # The test above means something only if the encoder reordered frames: decode order != presentation order.
    with av.open(str(video)) as container:
        pts = [p.pts for p in container.demux(container.streams.video[0]) if p.pts is not None]
    assert (pts != sorted(pts)) == video.parent.name.startswith("video-b2")


def test_metadata_of_a_ninety_second_video(video):
    with open_video(video) as reader:
        info = reader.info
        keyframes = reader.keyframe_times()
    # 90 s at 4 fps = 360 frames; a keyframe every 2 s = every 8 frames: 45 keyframes; 160 x 120 H.264.
    assert (info.n_frames, info.fps, info.duration_s) == (360, 4.0, 90.0)
    assert (info.width, info.height, info.codec) == (160, 120, "h264")
    assert keyframes[:3] == [0.0, 2.0, 4.0] and len(keyframes) == 45


def test_frames_are_exact_also_once_the_keyframes_are_known(video):
    # With the keyframe index read, runs are grouped by keyframe instead of by distance: same frames.
    rng = random.Random(9)
    times = [rng.uniform(0, 90) for _ in range(120)]
    with open_video(video) as reader:
        reader.keyframe_times()
        assert _numbers(reader.frames_at(times)) == [math.floor(t * FPS) for t in times]


def test_hundreds_of_random_times_give_exactly_the_frame_shown(video):
    rng = random.Random(5)
    times = [rng.uniform(0, 90) for _ in range(300)]
    with open_video(video) as reader:
        frames = reader.frames_at(times)
    assert _numbers(frames) == [math.floor(t * FPS) for t in times]


def test_times_around_keyframes_and_on_frame_boundaries(video):
    # Keyframes at frames 0, 8, 16, ...: ask for the frames just before, at and after each of a few,
    # at the boundary time k / fps itself (a float product that may fall a hair short) and a hair before it.
    times, expected = [], []
    for keyframe in (8, 16, 96, 352):
        for k in (keyframe - 1, keyframe, keyframe + 1):
            times += [k / FPS, k / FPS - 1e-4, (k + 0.5) / FPS]
            expected += [k, k - 1, k]
    times += [0.3 * 10 / FPS * 0.1 * 10]  # 0.75 as a rounded product: frame 3
    expected += [3]
    with open_video(video) as reader:
        singly = [read_frame_code(reader.frame_at(t)) for t in times]
        together = _numbers(reader.frames_at(times))
    assert singly == expected and together == expected


def test_the_last_frame_and_the_end_of_the_video(video):
    with open_video(video) as reader:
        assert read_frame_code(reader.frame_at(89.99)) == 359
        with pytest.raises(VideoError, match=r"time 90.000 s lies beyond the end of the video \(360 frames, 90.000 s\)"):
            reader.frame_at(90.0)
        with pytest.raises(VideoError, match="is not a time in the video"):
            reader.frame_at(-1.0)


def test_repeated_and_unsorted_times_come_back_in_the_order_asked(video):
    times = [50.0, 1.0, 50.0, 0.0, 89.5, 1.1]
    with open_video(video, threads=1) as one, open_video(video, threads=4) as four:
        assert _numbers(one.frames_at(times)) == [200, 4, 200, 0, 358, 4]
        assert all(np.array_equal(a, b) for a, b in zip(one.frames_at(times), four.frames_at(times), strict=True))


def test_frames_are_rgb_and_can_be_scaled(video):
    with open_video(video) as reader:
        full = reader.frame_at(10.0)
        small = reader.frame_at(10.0, size=(80, 60))
    assert full.shape == (120, 160, 3) and full.dtype == np.uint8
    assert small.shape == (60, 80, 3)
    # The code's block 0 (most significant bit of 40) is black in both; a scaled frame keeps the picture.
    assert abs(float(full[:112].mean()) - float(small[:56].mean())) < 3


def test_sample_spreads_the_frames_over_the_spans(video):
    with open_video(video) as reader:
        times, frames = reader.sample([Span(10, 12), Span(40, 41)], fps=2.0, max_frames=48)
    # 2 s at 2 fps: 4 frames centred in their half-second slots; 1 s: 2 frames.
    assert times == [10.25, 10.75, 11.25, 11.75, 40.25, 40.75]
    assert _numbers(frames) == [41, 43, 45, 47, 161, 163]


def test_sample_times_cap_shares_by_length():
    # 100 s and 20 s at 2 fps want 200 + 40 frames; a cap of 12 shares 10 : 2 by length.
    times = sample_times([Span(0, 100), Span(200, 220)], fps=2.0, max_frames=12, duration=300)
    assert len(times) == 12
    assert [t for t in times if t < 100] == [5.0 + 10.0 * k for k in range(10)]
    assert [t for t in times if t >= 200] == [205.0, 215.0]


def test_sample_times_give_a_short_span_at_least_one_frame_and_stay_inside_the_video():
    times = sample_times([Span(0, 1000), Span(50, 50.1)], fps=1.0, max_frames=4, duration=60)
    # The first span is cut at the video's end (60 s): it has 3 frames, the tiny one 1.
    # Shares: floor(4 * 60 / 60.1) = 3 for the long one (at 10, 30, 50), at least 1 for the tiny one.
    assert times == pytest.approx([10.0, 30.0, 50.0, 50.05])


def test_budget_size_keeps_the_aspect_and_even_sides():
    assert budget_size(160, 120, 10, None) is None
    assert budget_size(160, 120, 10, 10 * 160 * 120) is None
    # A quarter of the pixels: half of each side, 80 x 60.
    assert budget_size(160, 120, 10, 10 * 160 * 120 // 4) == (80, 60)


def test_a_file_that_is_not_a_video_gets_a_clear_error(tmp_path):
    text = tmp_path / "notes.mp4"
    text.write_text("these are notes, not a video\n" * 20)
    with pytest.raises(VideoError, match=r"notes.mp4: not a video PyAV can read"):
        open_video(text)
    with pytest.raises(VideoError, match="no such file"):
        open_video(tmp_path / "missing.mp4")


def test_an_audio_only_file_has_no_video_stream(tmp_path):
    path = tmp_path / "tone.wav"
    with av.open(str(path), "w") as container:
        stream = container.add_stream("pcm_s16le", rate=8000)
        frame = av.AudioFrame.from_ndarray(np.zeros((1, 800), np.int16), format="s16", layout="mono")
        frame.sample_rate = 8000
        container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    with pytest.raises(VideoError, match="tone.wav: the file has no video stream"):
        open_video(path)


def test_a_truncated_video_gets_a_clear_error(video, tmp_path):
    # An MP4 cut short loses its index (written at the end), so it cannot be opened at all.
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(video.read_bytes()[: video.stat().st_size // 2])
    with pytest.raises(VideoError, match="cut.mp4: not a video PyAV can read"):
        open_video(cut)


def test_a_truncated_stream_without_an_index_reads_up_to_where_it_ends(tmp_path):
    # A raw MPEG-TS stream cut in half still opens: the frames before the cut are exact, and a time
    # after it is refused as beyond the end.
    source = tmp_path / "full.ts"
    with av.open(str(source), "w", format="mpegts") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = 160, 120, "yuv420p"
        from engines.video.render import Scene, render

        for index in range(120):
            frame = av.VideoFrame.from_ndarray(render(Scene((40, 40, 40), (80, 80, 80), 1), None, None, 0, index),
                                               format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    cut = tmp_path / "cut.ts"
    cut.write_bytes(source.read_bytes()[: source.stat().st_size // 2])
    with open_video(cut) as reader:
        n = reader.info.n_frames
        assert 10 < n < 120
        assert read_frame_code(reader.frame_at(1.0)) == 4
        with pytest.raises(VideoError, match="beyond the end of the video"):
            reader.frame_at(29.0)


def test_sample_scales_frames_to_the_pixel_budget(video):
    with open_video(video) as reader:
        times, frames = reader.sample([Span(10, 14)], fps=2.0, max_frames=48, pixel_budget=8 * 80 * 60)
    # 8 frames of 160 x 120 would hold 4x the budget: each is scaled to 80 x 60, the picture kept.
    assert len(times) == 8 and all(f.shape == (60, 80, 3) for f in frames)



@pytest.fixture
def frame_pixels(monkeypatch):
    """``set(n)``: HAI_MAX_FRAME_PIXELS for this test (the settings are read afresh)."""
    from engines.platform.settings import reset_settings

    def set_limit(pixels: int) -> None:
        monkeypatch.setenv("HAI_MAX_FRAME_PIXELS", str(pixels))
        reset_settings()

    yield set_limit
    monkeypatch.undo()
    reset_settings()


def test_a_stream_with_frames_over_the_pixel_setting_is_refused_when_opened(video, frame_pixels):
    # 160 x 120 = 19,200 pixels a frame: refused under a limit of 64 x 64, named with its setting.
    frame_pixels(64 * 64)
    with pytest.raises(VideoError, match=r"frames of 160 x 120 pixels are more than the 4,096 allowed "
                                         r"\(HAI_MAX_FRAME_PIXELS\)"):
        open_video(video)
    frame_pixels(160 * 120)  # exactly at the limit: read as before
    with open_video(video) as reader:
        assert reader.frame_at(1.0).shape == (120, 160, 3)
