"""Reading a question (engines.video.offline.asking): times in digits and in words, parts of the video,
anchor events, LVBench's zero-width time references, the kinds of question, and options in any
order and number; and the offline planner acting on them."""

from __future__ import annotations

import pytest

from engines.video.offline.asking import count_option, direction_option, kind_of, number, read_question, time_hint
from engines.video.offline.heuristics import HeuristicPlanner
from engines.video.questions import Question
from engines.video.roles import Inspect, Retrieve
from engines.video.spans import Span, parse_time_reference
from engines.video.trajectory import Hit, Step


@pytest.mark.parametrize(("stem", "span", "at"), [
    ("What colour is the square at 04:10?", (247.5, 252.5), 250.0),
    ("What is on screen at 0:42:15?", (2532.5, 2537.5), 2535.0),
    ("Which way does it move around the two-minute mark?", (105.0, 135.0), 120.0),
    ("Where is it around the 3-minute mark?", (165.0, 195.0), 180.0),
    ("How many circles are there at the two and a half minute mark?", (147.5, 152.5), 150.0),
    ("What colour is it in the first minute?", (0.0, 60.0), None),
    ("What appears in the first 2 minutes?", (0.0, 120.0), None),
    ("What colour is it in the last minute?", (3540.0, 3600.0), None),
    ("What colour is the circle near the end?", (3240.0, 3600.0), None),  # the last tenth of an hour
    ("What is shown at the beginning of the video?", (0.0, 360.0), None),
    ("Which way is the square moving between 2:10 and 2:40?", (130.0, 160.0), None),
])
def test_times_in_a_question(stem, span, at):
    hint = time_hint(stem, duration=3600.0)
    assert hint is not None and (hint.span.start, hint.span.end) == span and hint.at == at


def test_a_time_past_an_hour():
    hint = time_hint("What is on screen at 1:02:15?")
    assert (hint.span.start, hint.span.end, hint.at, hint.clock) == (3732.5, 3737.5, 3735.0, True)


def test_near_the_end_of_a_short_video_is_its_last_minute():
    hint = time_hint("How many objects are visible near the end of the video?", duration=300.0)
    assert (hint.span.start, hint.span.end) == (240.0, 300.0)


def test_relative_times_need_the_duration_and_a_question_without_a_time_has_none():
    assert time_hint("What colour is the circle near the end?") is None
    assert time_hint("What colour is the circle?", duration=600.0) is None


@pytest.mark.parametrize(("stem", "relation", "colour", "shape", "event"), [
    ("What colour is the circle that appears right after the blue square disappears?", "after", "blue", "square",
     "disappears"),
    ("What colour are the circles that appear after the blue circles disappear?", "after", "blue", "circles",
     "disappears"),
    ("Where is the red triangle just before the green circle appears?", "before", "green", "circle", "appears"),
])
def test_an_event_of_an_object_places_the_question(stem, relation, colour, shape, event):
    hint = time_hint(stem, duration=600.0)
    assert hint.anchor is not None and hint.span is None
    assert (hint.anchor.relation, hint.anchor.colour, hint.anchor.shape, hint.anchor.event) == \
        (relation, colour, shape, event)


def test_lvbench_zero_width_references_are_points():
    spans, note = parse_time_reference("04:10-04:10")
    assert spans == [Span(250.0, 250.0)] and note is None


@pytest.mark.parametrize(("stem", "options", "kind"), [
    ("What colour is the square at 04:10?", ["red", "blue"], "colour"),
    ("Where on the screen is the pink circle?", ["top-left", "centre"], "position"),
    ("Which way is the cyan triangle moving?", ["upwards", "from left to right"], "motion"),
    ("How many objects are visible on screen at 03:00?", ["1", "2"], "count"),
    ("How many separate times does the brown square appear in the video?", ["1", "2"], "repeat"),
    ("Which of these objects appears first in the video?", ["the red circle", "the blue square"], "order"),
    ("What word is written on the banner at 01:00?", ["FALCON", "ORBIT"], "text"),
    ("What shape are the red objects?", ["circle", "square"], "shape"),
    ("Tell me about 00:20.", ["top left", "bottom right", "the middle"], "position"),  # from the options
])
def test_the_kind_of_a_question(stem, options, kind):
    assert kind_of(stem, options) == kind


def test_options_are_read_whatever_their_wording():
    assert [direction_option(o) for o in ("from left to right", "Right to left", "upwards", "it does not move",
                                          "stays still", "moving down")] == ["right", "left", "up", "still", "still",
                                                                             "down"]
    assert [count_option(o) for o in ("3", "three", "2 times", "twice", "none")] == [3, 3, 2, 2, 0]
    assert number("twenty five") == 25 and number("two and a half") == 2.5 and number("many") is None


def test_the_object_a_question_is_about_leaves_out_the_asked_colour_and_the_anchor():
    q = Question("q", "v", "What colour is the circle that appears right after the blue square disappears?",
                 ("red", "green", "blue", "pink", "white"), "B", benchmark="lvbench", duration_s=600.0)
    ask = read_question(q)
    assert ask.kind == "colour" and ask.colour is None and ask.shape == "circle" and ask.target == "circle"
    ordered = read_question(Question("q", "v", "Which of these objects appears last in the video?",
                                     ("the red circle", "the blue square"), "A", benchmark="lvbench"))
    assert ordered.kind == "order" and ordered.last


def test_the_planner_inspects_a_time_in_words_first():
    q = Question("q", "v", "Which way is the cyan triangle moving around the two-minute mark?",
                 ("upwards", "downwards", "from left to right", "it does not move"), "A", benchmark="lvbench",
                 duration_s=600.0)
    action = HeuristicPlanner().act(q, (), 8)
    assert isinstance(action, Inspect) and action.spans == (Span(105.0, 135.0),)
    near_end = Question("q", "v", "How many objects are visible near the end of the video?", ("1", "2"), "A",
                        benchmark="lvbench", duration_s=600.0)
    assert HeuristicPlanner().act(near_end, (), 8).spans == (Span(540.0, 600.0),)


def test_the_planner_looks_at_every_stretch_of_an_object_and_the_gaps_for_a_repeat_question():
    q = Question("q", "v", "How many separate times does the brown square appear in the video?",
                 ("1", "2", "3", "4"), "B", benchmark="lvbench", duration_s=600.0)
    planner = HeuristicPlanner()
    search = planner.act(q, (), 8)
    assert isinstance(search, Retrieve) and search.query == "brown square"
    hits = (Hit(Span(96, 112), 3.0, "Visual: a brown square at left.", "caption"),
            Hit(Span(112, 128), 3.0, "Visual: a brown square at left.", "caption"),
            Hit(Span(400, 416), 2.0, "Visual: a brown square at centre.", "caption"),
            Hit(Span(200, 216), 1.0, "Visual: a red square at centre.", "caption"))  # another square: not it
    action = planner.act(q, (Step(1, "retrieve", {"query": "brown square"}, "", 0.0, hits=hits),), 7)
    assert isinstance(action, Inspect)
    assert action.spans == (Span(90, 134), Span(135, 393), Span(394, 422))


@pytest.mark.parametrize(("stem", "kind", "last"), [
    ("In which direction does the blue circle move in the first minute?", "motion", False),
    ("Which way does the red square move at first?", "motion", False),
    ("What colour is the circle in the last 2 minutes?", "colour", False),
    ("Which shape appears first in the last minute?", "order", False),
    ("Which shape appears last in the first 3 minutes?", "order", True),
])
def test_words_that_place_a_question_in_time_do_not_change_its_kind(stem, kind, last):
    options = ("from left to right", "upwards", "the red square", "the blue circle")
    ask = read_question(Question("q", "v", stem, options, "A", benchmark="lvbench", duration_s=600.0))
    assert (ask.kind, ask.last) == (kind, last)
