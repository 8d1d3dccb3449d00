"""Motion questions ("which way does the red square move?") answered by the offline inspector from
frames: slow drifts that move less than a frame's width in a minute, objects whose colour or shape
reading wavers from frame to frame, backgrounds that change while the object moves, another object
moving the other way, and an object that stays put while the compression noise shifts its edges.

The clips are drawn here with Pillow from a script of where each object is when; the expected
answers come from that script (the sign of the object's velocity)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw

from engines.video.decode import open_video
from engines.video.offline.perception import Region, motion_of, track_motion
from engines.video.offline.pixels_inspector import PixelsInspector
from engines.video.questions import Question
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, encode_frames

FPS = 4
SECONDS = 60
WIDTH, HEIGHT = 320, 180
RGB = {"red": (215, 45, 40), "blue": (40, 80, 230), "yellow": (235, 210, 40), "grey": (128, 128, 128)}
# The background changes every 20 s (three flat colours), as a video's scenes do.
BACKGROUNDS = ((30, 34, 40), (200, 196, 188), (60, 110, 70))
DIRECTIONS = ("from left to right", "from right to left", "upwards", "downwards", "it does not move")


def _frame(t: float, objects) -> np.ndarray:
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUNDS[int(t // 20) % len(BACKGROUNDS)])
    draw = ImageDraw.Draw(image)
    for shape, colour, x, y, size in objects:
        box = (x - size / 2, y - size / 2, x + size / 2, y + size / 2)
        (draw.ellipse if shape == "circle" else draw.rectangle)(box, fill=RGB[colour])
    return np.asarray(image)


def _clip(path, script) -> None:
    """``script(t)`` -> the objects on screen at ``t`` s as ``(shape, colour, x, y, size)`` in pixels."""
    frames = (_frame(index / FPS, script(index / FPS)) for index in range(SECONDS * FPS))
    encode_frames(frames, path, SyntheticConfig(fps=FPS, keyframe_interval_s=2.0, crf=23))


def _ask(path, stem: str, answer: str, spans=(Span(0, SECONDS),), max_frames: int = 16):
    question = Question("q", "clip", stem, DIRECTIONS, answer, benchmark="lvbench", duration_s=float(SECONDS))
    with open_video(path) as reader:
        return PixelsInspector().inspect(reader, list(spans), question, fps=2.0, max_frames=max_frames,
                                         answer_only=True).verdict


# A red square drifting right at 2.5 px/s (0.8% of the width a second: 0.4% between the frames of a
# half-second pair, under what a pair can tell from jitter); a blue circle drifting up at the same
# slow pace; a yellow square that stays where it is (its edges shift with the compression only).
def _drifts(t: float):
    return [("square", "red", 40 + 2.5 * t, 50, 26), ("circle", "blue", 250, 160 - 1.6 * t, 24),
            ("square", "yellow", 160, 120, 22)]


@pytest.fixture(scope="module")
def drifts(tmp_path_factory):
    path = tmp_path_factory.mktemp("motion") / "drifts.mp4"
    _clip(path, _drifts)
    return path


@pytest.mark.parametrize(("stem", "answer"), [
    ("Which way does the red square move?", "A"),
    ("In which direction does the blue circle move in the first minute?", "C"),
    ("How does the yellow square move?", "E"),
])
def test_slow_drifts_are_told_from_objects_that_stay_put(drifts, stem, answer):
    verdict = _ask(drifts, stem, answer)
    assert verdict.answer == answer, verdict.evidence


def test_a_drift_is_read_over_a_named_stretch_of_time(drifts):
    verdict = _ask(drifts, "Between 0:20 and 0:50, which way does the red square move?", "A",
                   spans=(Span(15, 55),))
    assert verdict.answer == "A", verdict.evidence


# A red circle that moves left quickly (40 px/s, an eighth of the width a second) while a blue
# circle crosses it going right; then each turns round at 30 s.
def _crossing(t: float):
    red_x = 280 - 40 * t if t < 30 else 280 - 40 * 30 + 40 * (t - 30)
    red_x = float(np.clip(red_x, 20, 300))
    blue_x = float(np.clip(30 + 8 * t if t < 30 else 270 - 8 * (t - 30), 20, 300))
    return [("circle", "red", red_x, 90, 24), ("circle", "blue", blue_x, 60, 24)]


@pytest.fixture(scope="module")
def crossing(tmp_path_factory):
    path = tmp_path_factory.mktemp("motion") / "crossing.mp4"
    _clip(path, _crossing)
    return path


@pytest.mark.parametrize(("stem", "answer", "span"), [
    ("At 0:03, which way is the red circle moving?", "B", Span(0, 8)),
    ("Which way does the blue circle move between 0:05 and 0:25?", "A", Span(5, 25)),
    ("Which way does the blue circle move between 0:35 and 0:55?", "B", Span(35, 55)),
])
def test_two_objects_moving_opposite_ways_are_told_apart(crossing, stem, answer, span):
    verdict = _ask(crossing, stem, answer, spans=(span,))
    assert verdict.answer == answer, verdict.evidence


def _region(cx: float, cy: float, colour: str = "red", shape: str = "square", rgb=(215, 45, 40)) -> Region:
    return Region(x0=cx - 0.04, y0=cy - 0.05, x1=cx + 0.04, y1=cy + 0.05, cx=cx, cy=cy, area=0.008, rgb=rgb,
                  colour=colour, shape=shape, aspect=1.0)


def test_a_moving_object_is_matched_when_its_colour_name_or_shape_class_wavers():
    # Orange-red read as "orange" in the later frame, a square read as "other" (its corners blurred
    # by motion): still the same object, moved right.
    before = _region(0.3, 0.5)
    after = [_region(0.36, 0.5, colour="orange", shape="other", rgb=(225, 80, 40))]
    assert motion_of(before, after) == "right"
    # A blue object in the same place is not the red one.
    assert motion_of(before, [_region(0.36, 0.5, colour="blue", rgb=(40, 80, 230))]) is None


def test_a_track_of_sparse_frames_gives_the_net_motion():
    # Every 4 s over 40 s: 0.5% of the width a second (2% between frames) to the right, with jitter.
    rng = np.random.default_rng(0)
    track = [(4.0 * k, [_region(0.2 + 0.02 * k + rng.normal(0, 0.003), 0.5 + rng.normal(0, 0.003))])
             for k in range(11)]
    assert track_motion(track) == "right"
    still = [(4.0 * k, [_region(0.5 + rng.normal(0, 0.003), 0.5 + rng.normal(0, 0.003))]) for k in range(11)]
    assert track_motion(still) == "still"
    up = [(4.0 * k, [_region(0.5, 0.8 - 0.03 * k)]) for k in range(11)]
    assert track_motion(up) == "up"
    assert track_motion(track[:1]) is None  # one frame: nothing to tell
