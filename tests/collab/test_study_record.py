"""The typed interaction record: the stored JSON layout, old records, and a finished study read back typed."""

from __future__ import annotations

import copy
import json

import pytest
from pydantic import ValidationError

from engines.collab.study.record import InteractionLog, InteractionRecord, RoundRecord, StudyInteraction
from engines.collab.study.stored import interaction_rows, participant_interactions
from engines.platform import runtime, study_admin
from engines.platform.bots import run_bot
from engines.platform.db import read_session, write_transaction
from engines.platform.models import Participant

# Written by the study before the record was typed (copied from a bot run's participant vars).
OLD_FINISHED = {
    "index": 1, "seed": 7675435452374210756, "difficulty": 0.971, "mode": "online", "stream": "shapes:online",
    "q_harm": 0.9, "q_comp": 0.8,
    "rounds": [{"answer": 5, "confidence": 4, "protect": [5], "supply": [0, 1, 2, 3, 4, 6, 7, 8, 9], "ai_set": [4, 5]},
               {"answer": 5, "confidence": 4, "protect": [5], "supply": [0, 1, 2, 3, 4, 6, 7, 8, 9], "ai_set": [4, 5]},
               {"answer": 5, "confidence": 4, "protect": None, "supply": None, "ai_set": None}],
    "frozen_seq": 1, "calibrating": True, "final_round": 3, "final_answer": 5, "true_count": 5, "correct": True,
    "err_harm": False, "err_comp": False, "fired_harm": True, "fired_comp": False, "stream_seq": 2,
    "stream_phase": "calibration", "q_harm_after": 0.9, "q_comp_after": 0.8,
}
OLD_NO_AI = {
    "index": 0, "seed": 7209286212594136611, "difficulty": 0.51, "mode": "none", "stream": None, "q_harm": None,
    "q_comp": None, "rounds": [{"answer": 9, "confidence": 4, "protect": None, "supply": None, "ai_set": None}],
    "final_round": 1, "final_answer": 9, "true_count": 8, "correct": False,
}
# After round 1 of an AI interaction: the set to show next, no outcome yet.
OLD_IN_PROGRESS = {
    "index": 1, "seed": 7675435452374210756, "difficulty": 0.971, "mode": "online", "stream": "shapes:online",
    "q_harm": 0.9, "q_comp": 0.8,
    "rounds": [{"answer": 5, "confidence": 4, "protect": [5], "supply": [0, 1, 2, 3, 4, 6, 7, 8, 9], "ai_set": [4, 5]}],
    "frozen_seq": 1, "calibrating": True,
}
# The earliest layout: no frozen_seq, calibrating or stream_phase yet.
OLD_EARLIEST = {key: value for key, value in OLD_FINISHED.items()
                if key not in ("frozen_seq", "calibrating", "stream_phase")}


@pytest.mark.parametrize("stored", [OLD_FINISHED, OLD_NO_AI, OLD_IN_PROGRESS, OLD_EARLIEST],
                         ids=["finished", "no_ai", "in_progress", "earliest"])
def test_old_records_load_and_are_stored_back_unchanged(stored):
    record = InteractionRecord.from_dict(stored)
    assert record.to_dict() == stored
    assert json.dumps(record.to_dict()) == json.dumps(stored)  # same keys in the same order
    assert InteractionRecord.model_validate_json(json.dumps(stored)) == record


def test_typed_views_of_a_record():
    finished, in_progress, alone = (InteractionRecord.from_dict(d) for d in (OLD_FINISHED, OLD_IN_PROGRESS, OLD_NO_AI))
    assert finished.is_final and finished.has_ai and finished.final_round == 3 and finished.correct is True
    assert [r.ai_set for r in finished.shown_rounds] == [[4, 5], [4, 5]] == finished.ai_sets
    assert finished.first_answer == 5 and finished.last_set is None  # no set after the final answer
    assert finished.stream_seq == 2 and finished.stream_phase == "calibration"
    assert not in_progress.is_final and in_progress.last_set == [4, 5] and in_progress.err_harm is None
    assert isinstance(in_progress.rounds[0], RoundRecord) and in_progress.rounds[0].shown
    assert alone.is_final and not alone.has_ai and alone.shown_rounds == [] and alone.correct is False


def test_stage_fields_stay_out_of_the_json_until_reached():
    record = InteractionRecord(index=0, seed=1, difficulty=0.5, mode="none")
    assert record.to_dict() == {"index": 0, "seed": 1, "difficulty": 0.5, "mode": "none", "stream": None,
                                "q_harm": None, "q_comp": None, "rounds": []}
    record.rounds.append(RoundRecord(answer=3, confidence=4))
    record.final_round, record.final_answer, record.true_count, record.correct = 1, 3, 3, True
    stored = record.to_dict()
    assert stored["rounds"] == [{"answer": 3, "confidence": 4, "protect": None, "supply": None, "ai_set": None}]
    assert "err_harm" not in stored and "frozen_seq" not in stored and stored["correct"] is True
    assert InteractionRecord.from_dict(stored) == record


def test_a_malformed_record_is_rejected():
    with pytest.raises(ValidationError, match="unexpected"):
        InteractionRecord.from_dict({**OLD_NO_AI, "unexpected": 1})
    with pytest.raises(ValidationError, match="mode"):
        InteractionRecord.from_dict({**OLD_NO_AI, "mode": "sometimes"})
    with pytest.raises(ValidationError, match="answer"):
        InteractionRecord.from_dict({**OLD_NO_AI, "rounds": [{"confidence": 4}]})
    record = InteractionRecord.from_dict(OLD_NO_AI)
    with pytest.raises(ValidationError):
        record.final_round = "last"  # assignments are checked too


def test_log_reads_and_writes_the_participants_vars():
    vars_ = {"collab": {"interactions": [copy.deepcopy(OLD_NO_AI), copy.deepcopy(OLD_IN_PROGRESS)], "note": "kept"},
             "other": 1}
    log = InteractionLog.from_vars(vars_)
    assert len(log) == 2 and [r.index for r in log] == [0, 1] and log[1].stream == "shapes:online"
    assert log.get(1) is log[1] and log.get(2) is None and log.last is log[1]
    written: dict = {"collab": {"note": "kept"}, "other": 1}
    log.write_to(written)
    assert written == vars_  # the same JSON, other keys kept
    log.start(InteractionRecord(index=1, seed=2, difficulty=0.4, mode="none"))  # restarting drops from there on
    assert [r.seed for r in log] == [OLD_NO_AI["seed"], 2]
    log.start(InteractionRecord(index=0, seed=3, difficulty=0.4, mode="none"))
    assert [r.seed for r in log] == [3]
    for empty in ({}, None, {"collab": None}, {"collab": {}}):
        assert len(InteractionLog.from_vars(empty)) == 0 and InteractionLog.from_vars(empty).last is None


def test_study_interaction_flattens_to_an_export_row():
    row = StudyInteraction(participant_id=7, external_id="p7", condition="online",
                           record=InteractionRecord.from_dict(OLD_FINISHED))
    assert row.to_row() == {"participant_id": 7, "external_id": "p7", "condition": "online", **OLD_FINISHED}


def _raw_vars(participant_id: int) -> dict:
    with read_session() as session:
        return session.get(Participant, participant_id).vars


def test_a_finished_study_reads_back_typed(any_db):
    from studies.collab_shapes import C, PlayerBot

    conditions = {name: ({**params, "calibration_interactions": 1} if params["mode"] != "none" else params)
                  for name, params in C.CONDITIONS.items()}
    study_admin.create_study("typed", "collab_shapes", config={"constants": {"INTERACTIONS": 3, "CONDITIONS": conditions}})
    bots = [PlayerBot(case) for case in ("follows_ai", "ignores_ai", "follows_ai")]
    reports = [run_bot("typed", bot, f"typed-{n}") for n, bot in enumerate(bots)]
    assert [r.condition for r in reports] == ["online", "fixed", "no_ai"]
    rows = interaction_rows("typed")
    assert len(rows) == 3 * 3 and all(isinstance(row.record, InteractionRecord) for row in rows)
    for report, bot in zip(reports, bots, strict=True):
        log = participant_interactions(bot.participant_id)
        assert len(log) == 3 and all(record.is_final for record in log)
        assert [record.index for record in log] == [0, 1, 2]
        assert log.model_dump(mode="json") == _raw_vars(bot.participant_id)["collab"]["interactions"]
        mine = [row.record for row in rows if row.participant_id == bot.participant_id]
        assert mine == list(log)
        if report.condition == "no_ai":
            assert all(not r.has_ai and r.err_harm is None and r.shown_rounds == [] for r in log)
        else:
            assert all(r.has_ai and r.shown_rounds and r.stream_seq is not None for r in log)
            assert [r.stream_phase for r in log][0] in ("calibration", "online")
    assert len(participant_interactions(10**6)) == 0  # an unknown participant has none


def test_a_participant_stored_in_the_old_layout_goes_on(any_db):
    """Vars written before the record was typed drive the next interaction and are stored back as they were."""
    study_admin.create_study("old", "collab_shapes", config={"constants": {
        "INTERACTIONS": 2, "CONDITIONS": {"no_ai": {"mode": "none"}}}})
    pid = runtime.enter("old", {"pid": "old-layout"}).participant_id
    view = runtime.current_view(pid)
    for data in ({"agree": True}, {}, {"task": "How many triangles are in the image", "rounds": "Up to 3"},
                 {"answer": "Rarely"}, {"answer": 9, "confidence": 4, "final": True}):
        runtime.submit(pid, view.step.index, data)
        view = runtime.current_view(pid)
    old = {**OLD_NO_AI, "seed": _raw_vars(pid)["collab"]["interactions"][0]["seed"]}
    with write_transaction() as session:
        participant = session.get(Participant, pid)
        participant.vars = {"collab": {"interactions": [old]}}
        session.add(participant)
    view = runtime.current_view(pid)
    assert view.template_vars["interaction"] == 2 and view.template_vars["round"] == 1
    assert view.template_vars["feedback"] == ("Previous image: the correct count was **8**; your final answer 9 "
                                              "was not right.")
    runtime.submit(pid, view.step.index, {"answer": 2, "confidence": 3, "final": True})
    stored = _raw_vars(pid)["collab"]["interactions"]
    assert stored[0] == old and len(stored) == 2 and stored[1]["index"] == 1 and stored[1]["final_answer"] == 2
