"""The shape-counting collaboration study: streams, stored sets, conditions, idempotence, the page."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest
from sqlmodel import select

from engines.collab import store
from engines.collab.controller import prediction_set
from engines.collab.study.cases import trial_case
from engines.collab.study.images import interaction_difficulty, interaction_seed
from engines.collab.study.record import InteractionLog
from engines.collab.study.sets import labels_of, mask_of, round_masks
from engines.collab.study.stored import interaction_rows, participant_interactions
from engines.platform import db, runtime, settings, study_admin
from engines.platform.bots import run_bot, stored_responses
from engines.platform.db import read_session
from engines.platform.models import Participant
from studies.collab_shapes import C, PlayerBot, Trial, slot

SLUG = "shapes"


def participant_log(participant_id: int) -> InteractionLog:
    return participant_interactions(participant_id)


def trial_rows(participant_id: int):
    return [r for r in stored_responses(participant_id) if r.step_name == "Trial"]


def advance_to_trials(participant_id: int) -> runtime.StepView:
    view = runtime.current_view(participant_id)
    for data in ({"agree": True}, {}, {"task": "How many triangles are in the image", "rounds": "Up to 3"},
                 {"answer": "Rarely"}):
        runtime.submit(participant_id, view.step.index, data)
        view = runtime.current_view(participant_id)
    assert view.step.step is Trial
    return view


CALIBRATION = 10  # per condition stream, so the six bots (40 interactions per AI condition) go online


def with_calibration(n: int) -> dict:
    return {name: ({**params, "calibration_interactions": n} if params.get("mode") != "none" else params)
            for name, params in C.CONDITIONS.items()}


@pytest.fixture
def study(sqlite_db):
    study_admin.create_study(SLUG, "collab_shapes", config={"constants": {"CONDITIONS": with_calibration(CALIBRATION)}})
    return SLUG


@pytest.fixture(scope="module")
def six_bots_database(migrated_sqlite_template, tmp_path_factory):
    """The six bots' run, once per module: its database file and the bots' reports (running them was most
    of this file's time when each test ran them again); ``six_bots`` gives each test a copy of the file."""
    folder = tmp_path_factory.mktemp("six-bots")
    path = folder / "hai.db"
    shutil.copy(migrated_sqlite_template, path)
    url = f"sqlite:///{path}"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HAI_DATABASE_URL", url)
        patch.setenv("HAI_DATA_DIR", str(folder / "data"))
        patch.setenv("HAI_RUN_JOBS_IN_APP", "false")
        settings.reset_settings()
        try:
            study_admin.create_study(SLUG, "collab_shapes",
                                     config={"constants": {"CONDITIONS": with_calibration(CALIBRATION)}})
            reports = []
            for n, case in enumerate(["follows_ai", "ignores_ai"] * 3):
                bot = PlayerBot(case)
                reports.append((run_bot(SLUG, bot, f"p{n}"), bot))
        finally:
            db.get_engine(url).dispose()
            settings.reset_settings()
    return path, reports


@pytest.fixture
def six_bots(six_bots_database, use_database, tmp_path):
    """Six participants, two per condition (least filled, ties in C.CONDITIONS order), on the test's own
    copy of the module's run."""
    path, reports = six_bots_database
    copy = tmp_path / "hai.db"
    shutil.copy(path, copy)
    url = use_database(f"sqlite:///{copy}")
    yield reports
    db.get_engine(url).dispose()


def test_conditions_are_balanced(six_bots):
    conditions = [report.condition for report, _ in six_bots]
    assert conditions == ["online", "fixed", "no_ai"] * 2
    assert all(report.status == "completed" for report, _ in six_bots)


def test_online_stream_gets_one_update_per_interaction_in_order(six_bots):
    online = [bot.participant_id for report, bot in six_bots if report.condition == "online"]
    updates = store.history(f"{SLUG}:online")
    assert [u.seq for u in updates] == list(range(1, C.INTERACTIONS * len(online) + 1))
    expected = [f"{pid}:{i}" for pid in online for i in range(C.INTERACTIONS)]  # participants ran one after the other
    assert [u.interaction_key for u in updates] == expected
    report = store.audit_report(f"{SLUG}:online")
    assert report.phases == {"calibration": CALIBRATION, "excluded": 0, "online": len(updates) - CALIBRATION}
    assert report.state.t == len(updates) - CALIBRATION and report.max_delay == 0  # one after the other
    assert report.calibration["status"] == "fitted"
    assert all(u.q_harm_before == C.CONDITIONS["online"]["q_harm_init"] for u in updates[:CALIBRATION])
    assert updates[CALIBRATION].q_harm_before == report.state.q1_harm  # online starts at the fitted q_1
    for pid in online:
        items = participant_log(pid)
        assert len(items) == C.INTERACTIONS
        mine = [u for u in updates if u.participant_id == pid]
        for item, update in zip(items, mine, strict=True):
            # Sequential participants: the frozen thresholds are the stream's state when the update applied.
            assert math.isclose(item.q_harm, update.q_harm_before) and math.isclose(item.q_comp, update.q_comp_before)
            assert (item.err_harm, item.err_comp) == (update.err_harm, update.err_comp)
            assert item.stream_seq == update.seq and item.frozen_seq == update.seq - 1
            assert item.stream_phase == update.phase


def test_fixed_stream_is_calibrated_once_then_never_moves(six_bots):
    report = store.audit_report(f"{SLUG}:fixed")
    fixed = report.state
    assert fixed.t == 2 * C.INTERACTIONS - CALIBRATION
    assert (fixed.q_harm, fixed.q_comp) == (fixed.q1_harm, fixed.q1_comp)  # the fit, frozen
    assert report.bound == {"harm": None, "comp": None}  # η = 0: no guarantee
    online = [u for u in store.history(f"{SLUG}:fixed") if u.phase == "online"]
    assert {(u.q_harm_before, u.q_comp_before) for u in online} == {(fixed.q1_harm, fixed.q1_comp)}


def test_export_bundle_has_interactions_and_stream_histories(six_bots):
    import csv
    import io
    import json

    from engines.platform.export import export_study

    files = export_study(SLUG).files
    interactions = list(csv.DictReader(io.StringIO(files["interactions.csv"].decode())))
    assert len(interactions) == 6 * C.INTERACTIONS
    updates = list(csv.DictReader(io.StringIO(files["controller_updates.csv"].decode())))
    assert {u["stream"] for u in updates} == {f"{SLUG}:online", f"{SLUG}:fixed"}
    online = [u for u in updates if u["stream"] == f"{SLUG}:online"]
    assert [int(u["seq"]) for u in online] == list(range(1, 2 * C.INTERACTIONS + 1))
    assert [u["phase"] for u in online].count("calibration") == CALIBRATION
    audits = json.loads(files["controller_streams.json"])
    assert audits[f"{SLUG}:online"]["audit"]["phases"]["online"] == 2 * C.INTERACTIONS - CALIBRATION


def test_exported_online_stream_is_within_target_plus_the_hand_computed_bound(six_bots):
    """The guarantee is deterministic, so the exported stream must hold it; rate and bound recomputed from the bundle.

    Participants ran one after another (D = 0): bound = max(0, B + η(1−α) − q_1)/(η n), B = 1, η = 0.05,
    α = 0.1 for both constraints (C.CONDITIONS["online"]), q_1 the fit, n the online updates.
    """
    import csv
    import io
    import json

    from engines.platform.export import export_study

    files = export_study(SLUG).files
    rows = [u for u in csv.DictReader(io.StringIO(files["controller_updates.csv"].decode()))
            if u["stream"] == f"{SLUG}:online" and u["phase"] == "online"]
    audit = json.loads(files["controller_streams.json"])[f"{SLUG}:online"]["audit"]
    n = len(rows)
    assert n == 2 * C.INTERACTIONS - CALIBRATION
    for name in ("harm", "comp"):
        rate = sum(row[f"err_{name}"] == "True" for row in rows) / n
        q1 = audit["state"][f"q1_{name}"]
        bound = max(0.0, 1.0 + 0.05 * 0.9 - q1) / (0.05 * n)
        assert audit["violation_rate"][name] == pytest.approx(rate)
        assert audit["bound"][name] == pytest.approx(bound)
        assert rate <= 0.1 + bound
        assert audit["within_bound"][name] is True


def test_audit_checks_each_participants_record_against_the_stream(six_bots):
    import json

    from engines.collab.study.export import audit_study_stream, study_files
    from engines.platform.db import write_transaction

    key = f"{SLUG}:online"
    report = audit_study_stream(SLUG, key)
    assert report.claims_checked == 2 * C.INTERACTIONS  # every interaction of both online participants
    online = [bot for rep, bot in six_bots if rep.condition == "online"]
    victim = online[1].participant_id
    with write_transaction() as session:  # the record now says the participant saw another q^H
        participant = session.get(Participant, victim)
        data = json.loads(json.dumps(participant.vars))
        data["collab"]["interactions"][2]["q_harm"] += 0.125
        participant.vars = data
        session.add(participant)
    audit = json.loads(study_files(SLUG)["controller_streams.json"])[key]
    assert audit["audit"] is None
    assert f"participant {victim} (p3), interaction 3 was shown thresholds" in audit["audit_error"]


def test_the_set_shown_is_stored_and_recomputes_from_stored_answers(six_bots):
    checked = 0
    for report, bot in six_bots:
        if report.condition == "no_ai":
            continue
        items = participant_log(bot.participant_id)
        rows = trial_rows(bot.participant_id)
        by_interaction: dict[int, list[dict]] = {}
        for row in rows:
            index, rnd = slot(row.round_number)
            by_interaction.setdefault(index, []).append(row.data)
            assert len(by_interaction[index]) == rnd  # rounds stored in order, none skipped
        for index, item in enumerate(items):
            answers = [d["answer"] for d in by_interaction[index]]
            confidences = [d["confidence"] for d in by_interaction[index]]
            assert [r.answer for r in item.rounds] == answers
            assert item.final_round == len(answers) and by_interaction[index][-1]["final"]
            case = trial_case(item.seed, item.difficulty)
            assert item.true_count == case.count
            for k in range(1, len(answers)):  # rounds 1..final-1 showed a set
                protect, supply = round_masks(C.PROTECT_RULE, C.SUPPLY_RULE, answers[:k], confidences[:k],
                                                      [r.ai_set for r in item.rounds[:k - 1]])
                recomputed = prediction_set(case.scores, protect, item.q_harm, item.q_comp, supply)
                assert labels_of(recomputed) == item.rounds[k - 1].ai_set
                checked += 1
            assert item.rounds[-1].ai_set is None  # no set after the final answer
    assert checked >= 4 * C.INTERACTIONS


def test_no_ai_condition_shows_no_set_and_has_no_stream(six_bots):
    no_ai = [bot.participant_id for report, bot in six_bots if report.condition == "no_ai"]
    for pid in no_ai:
        items = participant_log(pid)
        assert len(items) == C.INTERACTIONS
        assert all(r.ai_set is None for item in items for r in item.rounds)
        assert all(item.stream is None and item.err_harm is None for item in items)
        assert all("err_harm" not in item.to_dict() for item in items)  # stored as before: no error fields
    with pytest.raises(store.StreamError):
        store.history(f"{SLUG}:no_ai")


def test_double_submitting_a_round_stores_once_and_updates_once(study):
    entered = runtime.enter(study, {"pid": "double"})
    assert entered.condition == "online"
    view = advance_to_trials(entered.participant_id)
    first = runtime.submit(entered.participant_id, view.step.index, {"answer": 3, "confidence": 2})
    again = runtime.submit(entered.participant_id, view.step.index, {"answer": 3, "confidence": 2})
    assert first.accepted and again.duplicate
    round2 = runtime.current_view(entered.participant_id)
    assert round2.template_vars["round"] == 2 and round2.template_vars["ai_set"] is not None
    data = {"answer": 3, "confidence": 4, "final": True}
    assert not runtime.submit(entered.participant_id, round2.step.index, data).duplicate
    assert runtime.submit(entered.participant_id, round2.step.index, data).duplicate
    assert len(trial_rows(entered.participant_id)) == 2
    updates = store.history(f"{study}:online")
    assert [u.interaction_key for u in updates] == [f"{entered.participant_id}:0"]
    assert len(participant_log(entered.participant_id)) == 1
    after = runtime.current_view(entered.participant_id)
    assert after.template_vars["interaction"] == 2 and after.template_vars["round"] == 1
    assert "correct count was" in after.template_vars["feedback"]  # C.FEEDBACK == "truth"


def test_round_rules_are_validated(study):
    entered = runtime.enter(study, {"pid": "rules"})
    view = advance_to_trials(entered.participant_id)
    with pytest.raises(runtime.InvalidResponse) as exc:
        runtime.submit(entered.participant_id, view.step.index, {"answer": 3, "confidence": 2, "final": True})
    assert set(exc.value.errors) == {"final"}  # AI conditions: see the set before finalising
    with pytest.raises(runtime.InvalidResponse) as exc:
        runtime.submit(entered.participant_id, view.step.index, {"answer": 10, "confidence": 6})
    assert set(exc.value.errors) == {"answer", "confidence"}
    assert trial_rows(entered.participant_id) == []


def test_interleaved_participants_share_one_stream(study):
    # Two online participants (a no-AI and a fixed one in between keep the balance).
    ids = []
    for name in ("a", "b", "c", "d"):
        ids.append(runtime.enter(study, {"pid": name}))
    online = [e.participant_id for e in ids if e.condition == "online"]
    assert len(online) == 2
    views = {pid: advance_to_trials(pid) for pid in online}
    for pid in online:  # both start interaction 1 before either finishes it
        runtime.submit(pid, views[pid].step.index, {"answer": 2, "confidence": 3})
    for pid in online:
        view = runtime.current_view(pid)
        runtime.submit(pid, view.step.index, {"answer": 2, "confidence": 3, "final": True})
    updates = store.history(f"{study}:online")
    assert [u.interaction_key for u in updates] == [f"{pid}:0" for pid in online]
    store.audit(f"{study}:online")
    frozen = [participant_log(pid)[0].q_harm for pid in online]
    assert frozen[0] == frozen[1] == C.CONDITIONS["online"]["q_harm_init"]  # both froze the initial state
    # Both froze after 0 updates: the second update landed one update after its freeze (delay 1).
    assert [participant_log(pid)[0].frozen_seq for pid in online] == [0, 0]
    assert [store.delay_of(u) for u in updates] == [0, 1]


def test_images_are_deterministic_per_participant_and_interaction():
    a = interaction_seed(C.IMAGE_SEED, SLUG, "p1", 0)
    assert a == interaction_seed(C.IMAGE_SEED, SLUG, "p1", 0)
    assert len({a, interaction_seed(C.IMAGE_SEED, SLUG, "p1", 1),
                interaction_seed(C.IMAGE_SEED, SLUG, "p2", 0)}) == 3
    d = interaction_difficulty(a, *C.DIFFICULTY)
    assert C.DIFFICULTY[0] <= d <= C.DIFFICULTY[1]
    case = trial_case(a, d)
    assert 0 <= case.count <= 9 and math.isclose(sum(case.probs), 1.0)
    assert np.all((case.scores >= 0) & (case.scores <= 1))


def test_the_page_shows_the_stored_set_as_chips_and_none_without_ai(study):
    from tests.apptest_driver import new_participant_app

    shown = {}
    for name in ("online-page", "fixed-page", "no-ai-page"):
        at = new_participant_app(study, name)
        pid = runtime.find_participant(study, name)
        view = advance_to_trials(pid)
        runtime.submit(pid, view.step.index, {"answer": 4, "confidence": 2})
        at.run()
        assert not at.exception
        text = " ".join(m.value for m in at.markdown)
        tv = runtime.current_view(pid).template_vars
        shown[tv["mode"]] = (text, tv)
        assert "round 2 of 3" in " ".join(bar.proto.text for bar in at.get("progress"))
        assert len(at.get("image")) >= 1
    for mode in ("online", "fixed"):
        text, tv = shown[mode]
        assert tv["ai_set"] is not None
        if tv["ai_set"]:
            assert "The AI's set of likely counts" in text
            assert all(f":blue-badge[**{y}**]" in text for y in tv["ai_set"])
        else:
            assert "The AI's set is empty" in text
    text, tv = shown["none"]
    assert tv["ai_set"] is None and "The AI's set" not in text


def test_interaction_rows_flatten_the_derived_data(six_bots):
    with read_session() as session:
        assert len(session.exec(select(Participant)).all()) == 6
    rows = interaction_rows(SLUG)
    assert len(rows) == 6 * C.INTERACTIONS
    online = [r for r in rows if r.condition == "online"]
    assert all(r.record.stream == f"{SLUG}:online" and r.record.stream_seq >= 1 for r in online)
    assert {r.record.mode for r in rows} == {"online", "fixed", "none"}
    flat = online[0].to_row()
    assert flat["condition"] == "online" and flat["stream_seq"] == online[0].record.stream_seq
    assert flat["rounds"] == [r.model_dump(mode="json") for r in online[0].record.rounds]


def test_a_study_instance_can_shorten_the_study(sqlite_db):
    study_admin.create_study("short", "collab_shapes", config={"constants": {"INTERACTIONS": 3, "ROUNDS": 2}})
    bot = PlayerBot("follows_ai")
    report = run_bot("short", bot, "s1")
    assert report.status == "completed"
    items = participant_log(bot.participant_id)
    assert len(items) == 3 and all(item.final_round <= 2 for item in items)
    assert len(store.history("short:online")) == 3


def test_a_rule_registered_in_the_study_module_runs_the_study(sqlite_db):
    from engines.collab import rules

    assert "near_count" in rules.available_rules("protect") and not rules.rule_schema("near_count")["builtin"]
    conditions = {"online": {**C.CONDITIONS["online"], "calibration_interactions": 0}}
    study_admin.create_study("near", "collab_shapes", config={"constants": {
        "CONDITIONS": conditions, "PROTECT_RULE": {"name": "near_count", "params": {"width": 1}}}})
    entered = runtime.enter("near", {"pid": "n1"})
    view = advance_to_trials(entered.participant_id)
    runtime.submit(entered.participant_id, view.step.index, {"answer": 4, "confidence": 2})
    (item,) = participant_log(entered.participant_id)
    first = item.rounds[0]
    assert first.protect == [3, 4, 5]  # the count and its neighbours
    case = trial_case(item.seed, item.difficulty)
    protect, supply = mask_of(first.protect), mask_of(first.supply)
    expected = prediction_set(case.scores, protect, item.q_harm, item.q_comp, supply)
    assert first.ai_set == labels_of(expected)


@pytest.mark.parametrize("width", ["2", None, -1, 1.5, 10, True])
def test_near_count_width_is_checked_before_anyone_enters(sqlite_db, width):
    from engines.platform.runtime import StudyError

    with pytest.raises(StudyError, match="width must be a whole number 0..3"):
        study_admin.create_study("w", "collab_shapes", config={"constants": {
            "PROTECT_RULE": {"name": "near_count", "params": {"width": width}}}})


def test_instructions_say_how_to_submit_a_round(study):
    """The answer needs a count and a confidence: "type the number and press Enter" alone fails."""
    entered = runtime.enter(SLUG, {"pid": "reader"})
    runtime.submit(entered.participant_id, 0, {"agree": True})
    view = runtime.current_view(entered.participant_id)
    text = view.step.step.body.format(**view.template_vars)
    assert "type the number, pick your confidence, then press *Submit answer*" in text
    assert "press Enter" not in text
