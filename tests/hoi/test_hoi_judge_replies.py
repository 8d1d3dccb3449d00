"""HOI-Eval judge replies as models write them: fenced JSON, prose around it, numbers as text,
percentages; what does not parse becomes the field's error (skipped by the scorer), never a zero."""

from __future__ import annotations

import pytest

from engines.hoi.judge_replies import (
    JudgeReplyError,
    Match,
    YesNo,
    interaction_fields,
    match_fields,
    parse_match,
    parse_yes_no,
)


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"answer": "yes", "confidence": 0.9, "reasoning": "the hand grips the cup"}',
     YesNo("yes", 0.9, "the hand grips the cup")),
    ('Here is my answer:\n```json\n{"answer": "Yes.", "confidence": "0.75"}\n```', YesNo("yes", 0.75, "")),
    ('{"answer": "no", "confidence": 0.8, "reasoning": "not touching"}', YesNo("no", 0.0, "not touching")),
    ('{"answer": "YES", "confidence": "85%"}', YesNo("yes", 0.85, "")),
    ('{"answer": "yes", "confidence": 1}', YesNo("yes", 1.0, "")),
])
def test_yes_no_replies(reply, expected):
    assert parse_yes_no(reply) == expected


@pytest.mark.parametrize(("reply", "problem"), [
    ("The person is holding the cup.", "no JSON object in the reply"),
    ('{"answer": "maybe", "confidence": 0.5}', "answer is neither yes nor no ('maybe')"),
    ('{"answer": "yes"}', "no confidence in the reply"),
    ('{"answer": "yes", "confidence": "high"}', "confidence is not a number ('high')"),
    ('{"answer": "yes", "confidence": 150}', "confidence 150 is outside 0-1"),
    ('{"answer": "yes", "confidence": 0.9', "no JSON object in the reply"),
])
def test_yes_no_replies_that_do_not_parse_say_why(reply, problem):
    with pytest.raises(JudgeReplyError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        parse_yes_no(reply)


def test_match_replies_recompute_a_missing_similarity():
    assert parse_match('{"best_match_id": 2, "identity_score": 0.8, "quality_score": 0.5, "similarity": 0.4}') == \
        Match(2, 0.8, 0.5, 0.4, "")
    # No similarity given: identity x quality = 0.9 x 0.5 = 0.45.
    assert parse_match('{"best_match_id": "1", "identity_score": 0.9, "quality_score": 0.5}').similarity == \
        pytest.approx(0.45)
    assert parse_match('{"best_match_id": null, "identity_score": 0, "quality_score": 0}').best_match_id is None
    with pytest.raises(JudgeReplyError, match="no quality_score in the reply"):
        parse_match('{"best_match_id": 1, "identity_score": 0.9}')
    with pytest.raises(JudgeReplyError, match=r"best_match_id is not a candidate number \('the left one'\)"):
        parse_match('{"best_match_id": "the left one", "identity_score": 0.9, "quality_score": 0.9}')


def test_interaction_fields_take_the_best_yes_and_record_failures_as_errors():
    replies = ['{"answer": "no", "confidence": 0.9}', '{"answer": "yes", "confidence": 0.6}',
               '{"answer": "yes", "confidence": 0.7}']
    assert interaction_fields(replies, "tracked") == {"mode": "tracked", "max_yes_confidence": 0.7}
    assert interaction_fields(['{"answer": "no", "confidence": 0.9}'], "top5") == \
        {"mode": "top5", "max_yes_confidence": 0.0}  # every pair says no: 0, a real score
    failed = interaction_fields(['{"answer": "yes", "confidence": 0.7}', "I cannot tell."], "top5")
    assert set(failed) == {"mode", "max_yes_confidence_error"} and "no JSON object" in failed["max_yes_confidence_error"]
    assert interaction_fields([], "top5") == {"mode": "top5", "max_yes_confidence_error": "no person-object pair to judge"}


def test_match_fields_name_the_entity():
    assert match_fields("subject", '{"best_match_id": 1, "identity_score": 0.9, "quality_score": 0.8}') == {
        "subject_identity_score": 0.9, "subject_quality_score": 0.8, "subject_similarity": pytest.approx(0.72)}
    assert set(match_fields("object", "no idea")) == {"object_similarity_error"}
    with pytest.raises(ValueError, match="entity must be 'subject' or 'object', got 'tool'"):
        match_fields("tool", "{}")


def test_records_built_from_replies_are_scored_with_errors_skipped(tmp_path):
    # A failed interaction reply makes the record an error record: the scorer skips it, not zero.
    import json

    from engines.hoi.scoring import parse_records

    record = {**interaction_fields(["garbled"], "top5"),
              **match_fields("subject", '{"best_match_id": 1, "identity_score": 1, "quality_score": 1}'),
              **match_fields("object", '{"best_match_id": 1, "identity_score": 1, "quality_score": 1}'), "qa": []}
    records = parse_records({"method": "m", "L1L2": {"a.jpg": record}})
    assert records.get("L1L2", "a.jpg").failed
    assert json.dumps(record)  # plain JSON, as the records file holds


def test_upstream_style_candidate_ids_give_their_number():
    from engines.hoi.judge_replies import parse_match

    reply = '{"best_match_id": "O2", "identity_score": 0.5, "quality_score": 0.5}'
    assert parse_match(reply).best_match_id == 2
    assert parse_match(reply.replace('"O2"', '"S0"')).best_match_id == 0
