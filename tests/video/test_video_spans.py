"""Spans and time references: parsing what benchmarks write (also malformed), and span set sizes
computed by hand."""

from __future__ import annotations

import pytest

from engines.video.spans import (
    Span,
    TimeFormatError,
    format_time,
    intersection_length,
    iou,
    merge,
    parse_time,
    parse_time_reference,
    total_length,
    widen,
)


@pytest.mark.parametrize(("text", "seconds"), [
    ("01:02:03", 3723.0), ("01:02:03.5", 3723.5), ("08:17", 497.0), ("75:30", 4530.0), ("12", 12.0),
    ("0", 0.0), (" 00:00:07 ", 7.0), (12, 12.0), (2.5, 2.5)])
def test_times_in_the_forms_benchmarks_write(text, seconds):
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["None", "", "12:61", "1:02:60", "-5", "ab:cd", "1:2:3:4", True, float("nan"), -1])
def test_what_is_not_a_time_is_refused_with_the_text(text):
    with pytest.raises(TimeFormatError, match="not a time"):
        parse_time(text)


def test_format_time_is_hh_mm_ss_rounded_down():
    assert [format_time(s) for s in (0, 59.99, 61, 3723.7, 36000)] == ["00:00:00", "00:00:59", "00:01:01",
                                                                        "01:02:03", "10:00:00"]


def test_a_time_reference_and_several_joined():
    assert parse_time_reference("08:17-08:45") == ([Span(497, 525)], None)
    assert parse_time_reference("00:10-00:20, 01:00-01:05") == ([Span(10, 20), Span(60, 65)], None)
    assert parse_time_reference("01:00:00-01:00:30") == ([Span(3600, 3630)], None)


def test_malformed_references_are_repaired_with_a_note():
    spans, note = parse_time_reference("08:17-None")
    assert spans == [Span(497, 497)] and note == "'08:17-None': no readable end, kept as the point 00:08:17"
    spans, note = parse_time_reference("08:17-")
    assert spans == [Span(497, 497)] and "no readable end" in note
    spans, note = parse_time_reference("09:00-08:00")
    assert spans == [Span(480, 540)] and note == "'09:00-08:00': end before start, swapped"
    assert parse_time_reference("12:34-12:34") == ([Span(754, 754)], None)  # zero width: a point, no repair


@pytest.mark.parametrize("text", [None, "", "  ", "None", "nan"])
def test_no_reference_gives_no_spans(text):
    assert parse_time_reference(text) == ([], None)


def test_an_unreadable_start_is_an_error():
    with pytest.raises(TimeFormatError, match="'xx:yy'"):
        parse_time_reference("xx:yy-00:10")


def test_spans_refuse_impossible_times():
    for start, end in ((5, 4), (-1, 2), (0, float("inf"))):
        with pytest.raises(TimeFormatError):
            Span(start, end)


def test_merge_joins_overlapping_and_touching_spans():
    spans = [Span(30, 40), Span(0, 10), Span(5, 12), Span(12, 15), Span(35, 38), Span(50, 50)]
    assert merge(spans) == [Span(0, 15), Span(30, 40), Span(50, 50)]
    assert total_length(spans) == 25.0  # 15 + 10 + 0


def test_intersection_of_two_span_sets_by_hand():
    a = [Span(0, 10), Span(20, 30), Span(25, 35)]  # merged: [0, 10], [20, 35]
    b = [Span(5, 22), Span(34, 50)]
    # [5, 10] + [20, 22] + [34, 35] = 5 + 2 + 1
    assert intersection_length(a, b) == 8.0
    assert intersection_length(b, a) == 8.0
    assert intersection_length(a, []) == 0.0


def test_iou_by_hand():
    assert iou(Span(10, 20), Span(15, 30)) == 0.25  # 5 / 20
    assert iou(Span(0, 10), Span(0, 10)) == 1.0
    assert iou(Span(0, 10), Span(10, 20)) == 0.0
    assert iou(Span(5, 5), Span(5, 5)) == 0.0


def test_widen_grows_short_spans_around_their_centre_inside_the_video():
    assert widen(Span(100, 100)) == Span(92.5, 107.5)
    assert widen(Span(100, 130)) == Span(100, 130)
    assert widen(Span(2, 4)) == Span(0, 15)  # shifted at the start, not cut
    assert widen(Span(595, 596), duration=600) == Span(585, 600)  # shifted at the end
    assert widen(Span(1, 2), duration=10) == Span(0, 10)  # a video shorter than the width
