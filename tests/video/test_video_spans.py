"""Spans and time references: parsing what benchmarks write (also malformed), and span set sizes
computed by hand."""

from __future__ import annotations

import re

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
    ("0", 0.0), (" 00:00:07 ", 7.0), (12, 12.0), (2.5, 2.5),
    ("90", 90.0), ("125.5", 125.5)])  # bare seconds may pass 60, as a number does: 90 s is 90 s
def test_times_in_the_forms_benchmarks_write(text, seconds):
    assert parse_time(text) == seconds


@pytest.mark.parametrize("text", ["None", "", "12:61", "1:02:60", "1:60:00", "-5", "ab:cd", "1:2:3:4", True, float("nan"), -1])
def test_what_is_not_a_time_is_refused_with_the_text(text):
    with pytest.raises(TimeFormatError, match="not a time"):
        parse_time(text)


def test_format_time_is_hh_mm_ss_rounded_down():
    assert [format_time(s) for s in (0, 59.99, 61, 3723.7, 36000)] == ["00:00:00", "00:00:59", "00:01:01",
                                                                        "01:02:03", "10:00:00"]
    assert format_time(3540) == "00:59:00"  # 3540 = 59 * 60: the last whole minute before an hour


def test_a_span_labels_itself_as_hh_mm_ss_start_and_end():
    assert Span(497, 525).label() == "00:08:17-00:08:45"  # 497 = 8 * 60 + 17, 525 = 8 * 60 + 45


def test_contains_takes_both_ends_and_widens_by_the_tolerance():
    span = Span(10, 20)
    # the ends count (a cited time at the very end of an inspected span is inside it); 9.5 and 20.5 do not
    assert [span.contains(t) for t in (9.5, 10, 15, 20, 20.5)] == [False, True, True, True, False]
    # tolerance 2 reaches from 10 - 2 = 8 to 20 + 2 = 22
    assert [span.contains(t, 2) for t in (7.9, 8, 9, 21, 22, 22.1)] == [False, True, True, True, True, False]
    assert Span(5, 5).contains(5)  # a point contains itself


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
    # no "-" at all: the start alone, kept as a point (8 * 60 + 17 = 497)
    assert parse_time_reference("08:17") == ([Span(497, 497)], "'08:17': no readable end, kept as the point 00:08:17")


def test_several_repairs_give_one_note_joined_by_semicolons():
    spans, note = parse_time_reference("08:17-None, 09:00-08:00")
    assert spans == [Span(497, 497), Span(480, 540)]  # in the order written; 480 = 8 * 60, 540 = 9 * 60
    assert note == ("'08:17-None': no readable end, kept as the point 00:08:17; "
                    "'09:00-08:00': end before start, swapped")


def test_empty_pieces_between_separators_are_skipped_not_the_end():
    # a doubled comma and a leading ";" leave empty pieces; the spans after them still count
    assert parse_time_reference("00:10-00:20,, 01:00-01:05") == ([Span(10, 20), Span(60, 65)], None)
    assert parse_time_reference("; 00:10-00:20") == ([Span(10, 20)], None)


@pytest.mark.parametrize("text", [None, "", "  ", "None", "nan", "null", "NULL", " Null "])
def test_no_reference_gives_no_spans(text):
    assert parse_time_reference(text) == ([], None)


def test_an_unreadable_start_is_an_error():
    with pytest.raises(TimeFormatError, match="'xx:yy'"):
        parse_time_reference("xx:yy-00:10")


def test_spans_refuse_impossible_times():
    for start, end in ((5, 4), (-1, 2), (0, float("inf"))):
        with pytest.raises(TimeFormatError):
            Span(start, end)


def test_a_refused_span_says_why_and_which_times():
    with pytest.raises(TimeFormatError, match=re.escape("a span must satisfy 0 <= start <= end, got 5..4")):
        Span(5, 4)
    with pytest.raises(TimeFormatError, match=re.escape("a span needs finite times, got 0..inf")):
        Span(0, float("inf"))


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
    assert intersection_length([Span(0, 5)], [Span(10, 20)]) == 0.0  # disjoint: nothing in common


def test_iou_by_hand():
    assert iou(Span(10, 20), Span(15, 30)) == 0.25  # 5 / 20
    assert iou(Span(0, 10), Span(0, 10)) == 1.0
    assert iou(Span(0, 10), Span(10, 20)) == 0.0
    assert iou(Span(5, 5), Span(5, 5)) == 0.0
    assert iou(Span(10, 10.5), Span(10, 10.5)) == 1.0  # short but equal spans: 0.5 / 0.5, however small the union


def test_widen_grows_short_spans_around_their_centre_inside_the_video():
    assert widen(Span(100, 100)) == Span(92.5, 107.5)
    assert widen(Span(100, 130)) == Span(100, 130)
    assert widen(Span(2, 4)) == Span(0, 15)  # shifted at the start, not cut
    assert widen(Span(595, 596), duration=600) == Span(585, 600)  # shifted at the end
    assert widen(Span(1, 2), duration=10) == Span(0, 10)  # a video shorter than the width
    assert widen(Span(8, 8)) == Span(0.5, 15.5)  # 8 - 7.5 = 0.5: just inside the start, not shifted


def test_widen_leaves_spans_that_are_exactly_wide_enough_or_just_fit_where_they_are():
    # 15.1 - 0.1 is already 15 s: returned as it is (rebuilding it from its centre, 7.6 - 7.5, would
    # not give back 0.1 exactly in floating point)
    assert widen(Span(0.1, 15.1)) == Span(0.1, 15.1)
    # centre 12.6 +- 7.5 = 5.1..20.1 ends exactly at the video's end (20.1): nothing to shift, and the
    # start stays 12.6 - 7.5 = 5.1 (not 20.1 - 15, which floating point makes 5.100000000000001)
    assert widen(Span(12.6, 12.6), duration=20.1) == Span(5.1, 20.1)
