"""The answer gate (every branch, with its exact reason) and the inspector-reply parser on replies
written the way the upstream prompts ask for them (``visual_inspect.txt``, the typed variant)."""

from __future__ import annotations

import pytest

from engines.video.gate import GateResult, cited_times, gate, parse_answer_only, parse_verdict
from engines.video.spans import Span
from engines.video.trajectory import Verdict

LETTERS = ("A", "B", "C", "D")
SPANS = (Span(10.0, 20.0), Span(700.0, 715.0))  # 00:00:10-00:00:20 and 00:11:40-00:11:55


def answer(letter="B", confidence=0.97, cited=(15.0,)) -> Verdict:
    return Verdict("ANSWER", letter, confidence, "evidence", cited)


# --- gate ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "kw", "reason"),
    [
        (Verdict("SEARCH_MORE", None, 0.99, "x", (15.0,)), {}, "the inspector asked to search more"),
        (answer("E"), {}, "answer 'E' is not among the options A-D"),
        (answer("A,C"), {}, "answer 'A,C' is not among the options A-D"),
        (answer("b"), {}, "answer 'b' is not among the options A-D"),  # letters are matched exactly
        (answer(confidence=0.80), {}, "confidence 0.80 is below 0.95"),
        (answer(confidence=0.949), {}, "confidence 0.949 is below 0.95"),  # not "0.95 is below 0.95"
        (answer(confidence=0.97), {"tau": 0.99}, "confidence 0.97 is below 0.99"),
        (answer(cited=()), {}, "the verdict cites no time in the inspected spans"),
        # 725 s = 00:12:05: 10 s after the second span's end, beyond the 1 s tolerance.
        (answer(cited=(15.0, 725.0)), {}, "cited time 00:12:05 lies outside the inspected spans"),
        # 21.5 s is 1.5 s past 20 s: outside with the default 1 s tolerance.
        (answer(cited=(21.5,)), {}, "cited time 00:00:21 lies outside the inspected spans"),
        (answer(cited=(9.0, 5.0)), {}, "cited time 00:00:05 lies outside the inspected spans"),
    ],
)
def test_gate_fails_with_the_first_failed_condition(verdict, kw, reason):
    result = gate(verdict, LETTERS, SPANS, **kw)
    assert result == GateResult(False, reason)
    assert not result


@pytest.mark.parametrize(
    ("verdict", "kw"),
    [
        (answer(), {}),
        (answer(confidence=0.95), {}),  # the threshold itself passes (>=)
        (answer(cited=(15.0, 707.0)), {}),  # times in two different inspected spans
        (answer(cited=(9.0, 21.0)), {}),  # 1 s either side of [10, 20]: inside the tolerance
        (answer(cited=(21.5,)), {"tolerance_s": 2.0}),
        (answer(confidence=0.30), {"fixed_range": True}),  # fixed-range questions must be answered
        (answer(confidence=0.80), {"tau": 0.8}),
    ],
)
def test_gate_passes(verdict, kw):
    result = gate(verdict, LETTERS, SPANS, **kw)
    assert result == GateResult(True, "passed")
    assert result


def test_gate_condition_order():
    # SEARCH_MORE is reported before anything else, the answer before the confidence, the confidence
    # before the citations.
    assert gate(Verdict("SEARCH_MORE", None, 0.1, "", ()), "ABCD", ()).reason == "the inspector asked to search more"
    assert gate(answer("Z", 0.1, ()), LETTERS, ()).reason == "answer 'Z' is not among the options A-D"
    assert gate(answer("A", 0.1, ()), LETTERS, ()).reason == "confidence 0.10 is below 0.95"
    # fixed_range skips the confidence, not the citations.
    no_citation = "the verdict cites no time in the inspected spans"
    assert gate(answer("A", 0.1, ()), LETTERS, (), fixed_range=True).reason == no_citation


def test_gate_letters_forms():
    assert gate(answer(), "ABCD", SPANS).passed  # a string of letters
    assert gate(answer("C"), ("A", "B", "D"), SPANS).reason == "answer 'C' is not among the options A, B, D"
    assert gate(answer("C"), ("A", "B"), SPANS).reason == "answer 'C' is not among the options A, B"
    assert gate(answer("C"), (), SPANS).reason == "answer 'C' is not among the options (none)"


def test_gate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="tau"):
        gate(answer(), LETTERS, SPANS, tau=1.5)
    with pytest.raises(ValueError, match="tolerance_s"):
        gate(answer(), LETTERS, SPANS, tolerance_s=-1)


# --- parse_verdict -----------------------------------------------------------------------------------

PLAIN = """Answer: B
Evidence: At 00:12:05 the man in the blue coat opens the red door; from 00:12:09–00:12:12 he walks through it.
Confidence: 0.97
"""

MARKDOWN = """**answer:**   c
**Evidence:**  The scoreboard reads 3-1 at 01:02 and again at 1:05:30.
**Confidence:** **0.96**
"""

SEARCH_MORE_TYPED = """Answer: SEARCH_MORE
Evidence: The frames at 00:03:10-00:03:25 show a kitchen, but no one is holding a knife.
Confidence: 0.40
SearchMoreType: SPAN_MISMATCH
Missing: the person holding the knife; what they cut
Next search: person cutting vegetables; knife on cutting board
Reminder: do NOT call visual_inspect next; use visual_retrieve to find new spans.
"""

SEARCH_MORE_UNTYPED = """Answer: SEARCH_MORE
Evidence: A crowd is visible at 00:45:00 but the jersey numbers are too small to read.
Confidence: 0.55
Missing: jersey number of the scorer
Next search: red jersey number 10, goal celebration close-up

Reminder: the NEXT tool call should NOT be visual_inspect.
"""

MULTILINE = """I looked at every frame carefully.

- **Answer**: (B) a red car
- **Evidence**: A red car enters at 00:00:12.
  It parks by the gate at 00:00:18.
- **Confidence**: 95%
"""

NEXT_SEARCH_BULLETS = """Answer: search_more
Evidence: nothing relevant
Confidence: 0.2
search more type: visual unclear
Missing: None
Next search:
1. "licence plate of the red car"
2. driver's face
Reminder: use retrieval.
"""


def test_parse_plain_answer():
    v = parse_verdict(PLAIN)
    # 00:12:05 = 725 s, 00:12:09 = 729 s, 00:12:12 = 732 s.
    assert v == Verdict(
        "ANSWER", "B", 0.97,
        "At 00:12:05 the man in the blue coat opens the red door; from 00:12:09–00:12:12 he walks through it.",
        (725.0, 729.0, 732.0),
    )


def test_parse_markdown_case_and_spacing():
    v = parse_verdict(MARKDOWN)
    # 01:02 (MM:SS) = 62 s; 1:05:30 = 3600 + 300 + 30 = 3930 s; "3-1" is a score, no time.
    assert (v.status, v.answer, v.confidence, v.cited_times) == ("ANSWER", "C", 0.96, (62.0, 3930.0))
    assert v.evidence == "The scoreboard reads 3-1 at 01:02 and again at 1:05:30."


def test_parse_typed_search_more():
    v = parse_verdict(SEARCH_MORE_TYPED)
    # 00:03:10 = 190 s, 00:03:25 = 205 s.
    assert v == Verdict(
        "SEARCH_MORE", None, 0.40,
        "The frames at 00:03:10-00:03:25 show a kitchen, but no one is holding a knife.",
        (190.0, 205.0),
        missing="the person holding the knife; what they cut",
        next_queries=("person cutting vegetables", "knife on cutting board"),
        search_more_type="SPAN_MISMATCH",
    )


def test_parse_untyped_search_more():
    v = parse_verdict(SEARCH_MORE_UNTYPED)
    assert (v.status, v.answer, v.confidence, v.search_more_type) == ("SEARCH_MORE", None, 0.55, None)
    assert v.cited_times == (2700.0,)  # 00:45:00 = 45 * 60 s
    assert v.missing == "jersey number of the scorer"
    assert v.next_queries == ("red jersey number 10", "goal celebration close-up")


def test_parse_bullets_continuation_lines_and_percent():
    v = parse_verdict(MULTILINE)
    assert (v.status, v.answer, v.confidence) == ("ANSWER", "B", 0.95)
    assert v.evidence == "A red car enters at 00:00:12.\nIt parks by the gate at 00:00:18."
    assert v.cited_times == (12.0, 18.0)


def test_parse_lowercase_fields_and_bulleted_next_search():
    v = parse_verdict(NEXT_SEARCH_BULLETS)
    assert (v.status, v.search_more_type, v.missing) == ("SEARCH_MORE", "VISUAL_UNCLEAR", "")
    assert v.next_queries == ("licence plate of the red car", "driver's face")


def test_parse_missing_confidence_is_zero_and_fails_the_gate():
    v = parse_verdict("Answer: A\nEvidence: The cat sleeps at 00:00:12.")
    assert (v.status, v.answer, v.confidence, v.cited_times) == ("ANSWER", "A", 0.0, (12.0,))
    assert gate(v, LETTERS, SPANS).reason == "confidence 0.00 is below 0.95"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Answer: a, c", "A,C"),
        ("Answer: A,C", "A,C"),
        ("Answer: (D)", "D"),
        ("Answer: B.", "B"),
        ("Answer: B) a red car", "B"),
        ("Answer: `B`", "B"),
        ("Answer: the red car", "the red car"),  # kept: the gate rejects it with its text
    ],
)
def test_parse_answer_forms(line, expected):
    assert parse_verdict(f"{line}\nEvidence: at 00:00:15\nConfidence: 0.99").answer == expected


def test_parse_unparsable_reply():
    raw = "I think the answer is probably B, the red car."
    assert parse_verdict(raw) == Verdict("SEARCH_MORE", None, 0.0, raw, (), "unparsable inspector reply", (), None)
    assert parse_verdict("").missing == "unparsable inspector reply"
    assert parse_verdict("Answer:\nEvidence: at 00:00:15").missing == "unparsable inspector reply"


def test_parse_first_answer_line_counts_and_type_ignored_on_answers():
    v = parse_verdict("Answer: B\nEvidence: at 00:00:15\nConfidence: 0.99\nSearchMoreType: SPAN_MISMATCH\nAnswer: C")
    assert (v.answer, v.search_more_type) == ("B", None)


def test_parse_out_of_range_confidence_is_zero():
    assert parse_verdict("Answer: B\nConfidence: 250").confidence == 0.0
    assert parse_verdict("Answer: B\nConfidence: 1").confidence == 1.0
    assert parse_verdict("Answer: B\nConfidence: high").confidence == 0.0


def test_cited_times_skips_non_times():
    # 12:75 has 75 seconds (no time); 123:45 is part of a longer number; 00:00:15 repeats once.
    assert cited_times("at 12:75, 123:45, 00:00:15 and 00:00:15.5 and 00:00:15") == (15.0, 15.5)


# --- parse_answer_only --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("B", "B"),
        ("(C)", "C"),
        ("The best answer is: (C)", "C"),
        ("Answer: D", "D"),
        ("E", None),  # not an option
        ("A or B", None),  # two options named
        ("no idea", None),
    ],
)
def test_parse_answer_only(reply, expected):
    assert parse_answer_only(reply, LETTERS) == expected


# --- edges pinned by mutation testing -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("verdict", "kw", "reason"),
    [
        # tau and tolerance_s accept their bounds: tau = 0 and tau = 1, tolerance 0 and a fraction of a second.
        (answer(confidence=0.0), {"tau": 0.0}, "passed"),
        (answer(confidence=1.0), {"tau": 1.0}, "passed"),
        (answer(confidence=0.99), {"tau": 1.0}, "confidence 0.99 is below 1.00"),
        (answer(cited=(20.0,)), {"tolerance_s": 0.0}, "passed"),  # the span's own end, no tolerance needed
        # 20.5 s is 0.5 s past the end of [10, 20]: outside with no tolerance, inside with 0.5 s.
        (answer(cited=(20.5,)), {"tolerance_s": 0.0}, "cited time 00:00:20 lies outside the inspected spans"),
        (answer(cited=(20.5,)), {"tolerance_s": 0.5}, "passed"),
    ],
)
def test_gate_parameter_bounds(verdict, kw, reason):
    assert gate(verdict, LETTERS, SPANS, **kw).reason == reason


def test_gate_describes_three_consecutive_letters_as_a_range():
    # A, B, C are consecutive and more than two: "A-C"; two letters stay a list ("A, B", above).
    assert gate(answer("D"), ("A", "B", "C"), SPANS).reason == "answer 'D' is not among the options A-C"


def test_gate_confidence_is_printed_with_at_most_six_decimals():
    # 0.9499999 prints "0.95" with 2 decimals, "0.950" with 3, ... "0.950000" with 6 -- all equal to
    # tau at that precision; the description stops at 6 decimals (7 would give "0.9499999").
    assert gate(answer(confidence=0.9499999), LETTERS, SPANS).reason == "confidence 0.950000 is below 0.95"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Answer: A and C", "A,C"),  # "and" joins letters
        ("Answer: A / C", "A,C"),
        ("Answer: (A), (C)", "A,C"),  # brackets around each letter are dropped
        ("Answer: b.", "B"),  # a lower-case letter with a full stop
        ("Answer: (b) a red car", "B"),  # a lower-case bracketed letter before the option text
        ("Answer: X", "X"),  # a letter outside the options is still read as a letter
        ("Answer: A, X", "A,X"),
    ],
)
def test_parse_more_answer_forms(line, expected):
    assert parse_verdict(f"{line}\nEvidence: at 00:00:15\nConfidence: 0.99").answer == expected


def test_a_letter_outside_the_options_is_rejected_by_name():
    v = parse_verdict("Answer: X\nEvidence: at 00:00:15\nConfidence: 0.99")
    assert gate(v, LETTERS, SPANS).reason == "answer 'X' is not among the options A-D"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("95", 0.95),  # a bare number above 1 is a percentage: 95 / 100
        ("1.5", 0.015),  # just above 1: still a percentage, 1.5 / 100
        ("100", 1.0),  # 100 / 100
        ("150%", 0.0),  # 150 % = 1.5: above 1, unreadable
        ("100.5", 0.0),  # above 100 and no "%": not a percentage, above 1, unreadable
        ("0", 0.0),
    ],
)
def test_parse_confidence_forms(value, expected):
    assert parse_verdict(f"Answer: B\nEvidence: at 00:00:15\nConfidence: {value}").confidence == expected


def test_parse_reply_without_evidence_has_empty_evidence():
    assert parse_verdict("Answer: B\nConfidence: 0.99") == Verdict("ANSWER", "B", 0.99, "", ())


def test_parse_empty_reply_is_the_unparsable_verdict_with_empty_evidence():
    assert parse_verdict("") == Verdict("SEARCH_MORE", None, 0.0, "", (), "unparsable inspector reply", (), None)


def test_parse_answer_line_of_only_backticks_is_unparsable():
    raw = "Answer: ``\nEvidence: at 00:00:15\nConfidence: 0.99"
    # The answer is empty once the backticks are removed: the raw reply is kept as the evidence, the
    # confidence line is not read, no times are cited.
    assert parse_verdict(raw) == Verdict("SEARCH_MORE", None, 0.0, raw, (), "unparsable inspector reply", (), None)


def test_parse_missing_none_with_full_stop_is_empty():
    v = parse_verdict("Answer: SEARCH_MORE\nEvidence: nothing\nConfidence: 0.1\nMissing: None.")
    assert v.missing == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("red car; none", ("red car",)),  # a "none" phrase is dropped, the rest kept
        ("red car. | N/A", ("red car",)),  # the trailing full stop goes too
        ("X-ray of a hand; logo of SpaceX", ("X-ray of a hand", "logo of SpaceX")),  # X's are letters
    ],
)
def test_parse_next_search_phrases(value, expected):
    v = parse_verdict(f"Answer: SEARCH_MORE\nEvidence: nothing\nConfidence: 0.1\nNext search: {value}")
    assert v.next_queries == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("`PARTIAL_EVIDENCE`.", "PARTIAL_EVIDENCE"),  # backticks and a full stop removed
        ("'identity-ambiguous'", "IDENTITY_AMBIGUOUS"),
        ("SPAN_MISMATCHX", None),  # an unknown type (a stray letter) is not guessed
        ("XREPEATED_FAIL", None),
    ],
)
def test_parse_search_more_type_forms(value, expected):
    v = parse_verdict(f"Answer: SEARCH_MORE\nEvidence: nothing\nConfidence: 0.1\nSearchMoreType: {value}")
    assert v.search_more_type == expected


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        # The Answer line decides, though the evidence names another option in brackets.
        ("Answer: C\nEvidence: (B) is ruled out, the car is blue.", "C"),
        # The whole reply read as an answer: "B." then the option text (which starts with "A").
        ("B. A red car drives past", "B"),
        ("b", "B"),  # a lower-case letter
    ],
)
def test_parse_answer_only_more_forms(reply, expected):
    assert parse_answer_only(reply, LETTERS) == expected
