"""Repeat ("how many separate times does X appear") and order ("which appears first / last")
questions answered by the offline inspector from frames: separate appearances are counted as the
clip's script has them, a flicker of single frames is not a disappearance, a real gap of a few
seconds is, and the order of two objects that appear a couple of seconds apart is read from when
each first appears.

The clips are drawn here with Pillow from a script of what is on screen when; the expected answers
come from that script."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image, ImageDraw

from engines.video.decode import open_video
from engines.video.offline.pixels_inspector import PixelsInspector, appearances
from engines.video.questions import Question
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, encode_frames

FPS = 4
SECONDS = 90
BACKGROUND = ((96, 104, 112), (70, 78, 88))  # a vertical gradient, top to bottom
RGB = {"green": (40, 170, 60), "red": (220, 40, 40), "blue": (40, 80, 230)}


def _frame(objects: list[tuple[str, str, float, float]]) -> np.ndarray:
    """A 160 x 120 frame with ``(shape, colour, x, y)`` objects (centres in pixels), 22 px across."""
    top, bottom = np.array(BACKGROUND[0], float), np.array(BACKGROUND[1], float)
    rows = np.linspace(0, 1, 120)[:, None, None]
    image = Image.fromarray(np.broadcast_to(top + (bottom - top) * rows, (120, 160, 3)).astype(np.uint8))
    draw = ImageDraw.Draw(image)
    for shape, colour, x, y in objects:
        box = (x - 11, y - 11, x + 11, y + 11)
        (draw.ellipse if shape == "circle" else draw.rectangle)(box, fill=RGB[colour])
    return np.asarray(image)


def _clip(path, script) -> None:
    """``script(t, index)`` -> the objects on screen in frame ``index`` (at ``t`` s)."""
    frames = (_frame(script(index / FPS, index)) for index in range(SECONDS * FPS))
    encode_frames(frames, path, SyntheticConfig(fps=FPS, keyframe_interval_s=2.0, crf=18))


def _question(stem: str, options: tuple[str, ...], answer: str) -> Question:
    return Question("q", "clip", stem, options, answer, benchmark="lvbench", duration_s=float(SECONDS))


def _inspect(path, question: Question, spans=(Span(0, SECONDS),), max_frames: int = 24):
    with open_video(path) as reader:
        return PixelsInspector().inspect(reader, list(spans), question, fps=2.0, max_frames=max_frames,
                                         answer_only=True)


# ------------------------------------------------------------------ repeat

# A green circle on screen over 10-34 s and 55-80 s: two separate appearances. It flickers: in the
# first frame of every second (a quarter of a second) it is not drawn, as a detector misses an
# object in a frame now and then; that is not a disappearance.
REPEAT_SPANS = ((10.0, 34.0), (55.0, 80.0))


def _flickering(t: float, index: int):
    shown = any(a <= t < b for a, b in REPEAT_SPANS) and index % FPS != 0
    return [("circle", "green", 80.0, 60.0)] if shown else []


@pytest.fixture(scope="module")
def flickering(tmp_path_factory):
    path = tmp_path_factory.mktemp("repeat") / "flicker.mp4"
    _clip(path, _flickering)
    return path


@pytest.mark.parametrize("max_frames", [16, 24, 48])
def test_a_flickering_object_is_counted_by_its_separate_appearances(flickering, max_frames):
    question = _question("How many separate times does the green circle appear in the video?",
                         ("1", "2", "3", "4"), "B")
    verdict = _inspect(flickering, question, max_frames=max_frames).verdict
    assert verdict.answer == "ABCD"[len(REPEAT_SPANS) - 1], verdict.evidence
    # It cites the start of each appearance: a time inside each of the script's spans.
    assert len(verdict.cited_times) == len(REPEAT_SPANS)
    for cited, (start, end) in zip(verdict.cited_times, REPEAT_SPANS, strict=True):
        assert start <= cited < end


def test_the_frames_and_probes_of_a_repeat_inspection_stay_within_its_frame_budget(flickering):
    question = _question("How many separate times does the green circle appear in the video?",
                         ("1", "2", "3", "4"), "B")
    inspection = _inspect(flickering, question, max_frames=24)
    assert len(inspection.frames) <= 24
    assert all(0 <= f.t <= SECONDS for f in inspection.frames)


# Three appearances with real gaps of 6 s between them: counted as three, not merged.
SEPARATE_SPANS = ((20.0, 30.0), (36.0, 46.0), (52.0, 62.0))


@pytest.fixture(scope="module")
def separate(tmp_path_factory):
    path = tmp_path_factory.mktemp("repeat") / "separate.mp4"
    _clip(path, lambda t, index: [("square", "red", 50.0, 50.0)] if any(a <= t < b for a, b in SEPARATE_SPANS)
          else [])
    return path


def test_appearances_a_few_seconds_apart_stay_separate(separate):
    question = _question("How many separate times does the red square appear in the video?",
                         ("1", "2", "3", "4"), "C")
    verdict = _inspect(separate, question, max_frames=24).verdict
    assert verdict.answer == "ABCD"[len(SEPARATE_SPANS) - 1], verdict.evidence


def test_an_appearance_under_way_at_the_first_frame_is_bounded_by_a_look_toward_the_window_start(separate):
    # Inspected over 19-70 s with 20 frames (and 10 probes), the first frame (20.3 s) already shows the
    # square, which came on at 20 s: only a look between 17 s and that frame shows that the appearance
    # began inside the window, so that every appearance was seen whole and the count is certain. The
    # probes settle the lapses first (they change the count), and then look toward the window's ends.
    question = _question("How many separate times does the red square appear in the video?",
                         ("1", "2", "3", "4"), "C")
    with open_video(separate) as reader:
        inspection = PixelsInspector().inspect(reader, [Span(19.0, 70.0)], question, fps=2.0, max_frames=30)
    assert 19.0 <= min(f.t for f in inspection.frames) < SEPARATE_SPANS[0][0]  # a look before it came on
    assert (inspection.verdict.status, inspection.verdict.answer, inspection.verdict.confidence) == ("ANSWER", "C", 1.0)


def test_appearances_from_a_timeline_of_frames():
    # Seen every 3 s over 0-60 s; the object is there over 9-30 and 42-57, missed at 18 s; a stray
    # sighting at 36 s with no frame showing it a second either side (probes say so).
    truth = lambda t: 9 <= t < 30 or 42 <= t < 57  # noqa: E731
    line = {float(t): truth(t) and t != 18 for t in range(0, 61, 3)}
    line[36.0] = True

    class Frames:  # probes answered from the truth, inside 0-60 s
        def __init__(self):
            self.asked = []

        def between(self, a, b):
            return round((a + b) / 2, 3)

        def look(self, times):
            self.asked += times
            return [(t, truth(t)) for t in times]

    frames = Frames()
    found = appearances(line, frames)
    assert len(found) == 2
    (first_start, first_end), (second_start, second_end) = found
    # Each appearance's first and last frames seen lie within one frame spacing (3 s) inside its span.
    assert 9 <= first_start < 12 and 27 < first_end < 30 and 42 <= second_start < 45 and 54 <= second_end < 57
    assert frames.asked and all(0 < t < 60 for t in frames.asked)
    # Without probes, the frames alone: the lapse at 18 s (a single frame) is taken for a miss, but
    # the stray sighting at 36 s (a single frame, 6 s between its neighbours) cannot be told from a
    # real one, and is taken for the start of the second appearance.
    assert appearances(line) == [(9.0, 27.0), (36.0, 54.0)]


# ------------------------------------------------------------------ order

# A blue circle appears at 19.5 s and a red square at 22 s; both stay until 45 s.
ORDER = {"blue": 19.5, "red": 22.0}


@pytest.fixture(scope="module")
def staggered(tmp_path_factory):
    path = tmp_path_factory.mktemp("order") / "staggered.mp4"

    def script(t: float, index: int):
        objects = []
        if ORDER["blue"] <= t < 45:
            objects.append(("circle", "blue", 40.0, 40.0))
        if ORDER["red"] <= t < 45:
            objects.append(("square", "red", 115.0, 75.0))
        return objects

    _clip(path, script)
    return path


@pytest.mark.parametrize("max_frames", [12, 16])
@pytest.mark.parametrize("word", ["first", "last"])
def test_the_order_of_two_objects_that_appear_seconds_apart(staggered, word, max_frames):
    # The option listed first is the wrong one either way: a tie between frames must not decide.
    wrong_first = ("the red square", "the blue circle") if word == "first" else ("the blue circle", "the red square")
    colour_of = {"the red square": "red", "the blue circle": "blue"}
    pick = (min if word == "first" else max)(wrong_first, key=lambda option: ORDER[colour_of[option]])
    expected = "AB"[wrong_first.index(pick)]
    question = _question(f"Which of these appears {word} in the video?", wrong_first, expected)
    verdict = _inspect(staggered, question, spans=(Span(0, 60),), max_frames=max_frames).verdict
    assert verdict.answer == expected, verdict.evidence
    # It cites a frame where the answer's object has just appeared (probes stop once the order is settled).
    [cited] = verdict.cited_times
    assert ORDER[colour_of[pick]] <= cited <= ORDER[colour_of[pick]] + 3.0
    assert math.isfinite(verdict.confidence) and verdict.confidence > 0


@pytest.fixture(scope="module")
def with_an_earlier_one(tmp_path_factory):
    """The staggered pair, and a green circle on screen from 5 s, before either of them."""
    path = tmp_path_factory.mktemp("order") / "earlier.mp4"

    def script(t: float, index: int):
        objects = [("circle", "green", 130.0, 30.0)] if t >= 5 else []
        if ORDER["blue"] <= t < 45:
            objects.append(("circle", "blue", 40.0, 40.0))
        if ORDER["red"] <= t < 45:
            objects.append(("square", "red", 115.0, 75.0))
        return objects

    _clip(path, script)
    return path


def test_only_the_objects_the_question_names_compete(with_an_earlier_one):
    # The stem asks about two of the options; the green circle, also an option, came earlier.
    options = ("the green circle", "the red square", "the blue circle", "the yellow square")
    question = _question("Which appears first, the red square or the blue circle?", options, "C")
    verdict = _inspect(with_an_earlier_one, question, spans=(Span(0, 60),), max_frames=16).verdict
    assert verdict.answer == "C", verdict.evidence
    # Asked about all of them, the green circle is first.
    question = _question("Which of these appears first in the video?", options, "A")
    assert _inspect(with_an_earlier_one, question, spans=(Span(0, 60),), max_frames=16).verdict.answer == "A"
