"""Study summaries for the participants page: accuracy human alone vs final, by condition and participant."""

import pandas as pd
import pytest
from sqlmodel import select

from engines.collab.study import report as study_report
from engines.collab.study.cases import trial_case
from engines.collab.study.stored import interaction_rows
from engines.platform import runtime, study_admin
from engines.platform.bots import run_protocol_bots, stored_responses
from engines.platform.db import write_transaction
from engines.platform.models import Participant, Study


def test_summaries_match_the_stored_interactions(sqlite_db):
    from studies.collab_shapes import C

    conditions = {name: ({**params, "calibration_interactions": 1} if params["mode"] != "none" else params)
                  for name, params in C.CONDITIONS.items()}
    study_admin.create_study("c", "collab_shapes", config={"constants": {"INTERACTIONS": 2, "CONDITIONS": conditions}})
    reports = run_protocol_bots("collab_shapes", participants=3, slug="c")
    completed = [r for r in reports if r.status == "completed"]
    frame = study_report.interactions_frame("c")
    assert len(frame) == 2 * len(completed)
    table = study_report.by_condition(frame)
    assert table["interactions"].sum() == len(frame)
    # Each AI condition: 1 calibration interaction, then online; no_ai has no stream.
    expected = {"online": {("online", "calibration", 1), ("online", "online", 1)},
                "fixed": {("fixed", "calibration", 1), ("fixed", "online", 1)}, "no_ai": {("no_ai", "no AI", 2)}}
    assert set(zip(table["condition"], table["phase"], table["interactions"], strict=True)) == set().union(
        *(expected[r.condition] for r in completed))
    assert {"online", "fixed"} <= {r.condition for r in completed}
    # Accuracies recomputed from what was stored, not from the frame: each interaction's answers as the
    # participant submitted them (the Trial responses) against the count of the image it showed.
    from studies.collab_shapes import slot

    tally: dict[tuple[str, str], list[list[bool]]] = {}
    for row in interaction_rows("c"):
        answers = [r.data["answer"] for r in stored_responses(row.participant_id)
                   if r.step_name == "Trial" and slot(r.round_number)[0] == row.record.index]
        truth = trial_case(row.record.seed, row.record.difficulty).count
        phase = row.record.stream_phase or study_report.NO_STREAM
        tally.setdefault((row.condition, phase), []).append([answers[0] == truth, answers[-1] == truth])
    for _, row in table.iterrows():
        pairs = tally[(row["condition"], row["phase"])]
        assert row["accuracy_human_alone"] == pytest.approx(sum(a for a, _ in pairs) / len(pairs), abs=5e-4)
        assert row["accuracy_final"] == pytest.approx(sum(f for _, f in pairs) / len(pairs), abs=5e-4)
    people = study_report.per_participant(frame)
    assert sorted(people["external_id"]) == sorted(r.external_id for r in completed)
    figure = study_report.accuracy_over_time_figure(frame)
    assert len(figure.data) >= 2  # human alone and final, per condition


def _answer_three_images(slug: str, external_id: str, plan: list[tuple[bool, bool]]) -> None:
    """One participant answers each image in two rounds: (round 1 right?, final answer right?) per image."""
    pid = runtime.enter(slug, {"pid": external_id}).participant_id
    for data in ({"agree": True}, {}, {"task": "How many triangles are in the image", "rounds": "Up to 2"},
                 {"answer": "Rarely"}):
        assert runtime.submit(pid, runtime.current_view(pid).step.index, data).accepted
    for first_right, final_right in plan:
        view = runtime.current_view(pid)
        truth = trial_case(view.template_vars["seed"], view.template_vars["difficulty"]).count
        wrong = (truth + 1) % 10
        runtime.submit(pid, view.step.index, {"answer": truth if first_right else wrong, "confidence": 3})
        view = runtime.current_view(pid)
        runtime.submit(pid, view.step.index, {"answer": truth if final_right else wrong, "confidence": 3,
                                              "final": True})


def test_final_correct_is_the_final_answer_and_human_alone_the_first(sqlite_db):
    """By hand: images 1 and 2 go wrong -> right, image 3 right -> wrong.

    human alone: F, F, T (1/3); final: T, T, F (2/3); every answer changed.
    """
    study_admin.create_study("hand", "collab_shapes", config={"constants": {
        "INTERACTIONS": 3, "ROUNDS": 2, "CONDITIONS": {"no_ai": {"mode": "none"}}}})
    _answer_three_images("hand", "p1", [(False, True), (False, True), (True, False)])
    frame = study_report.interactions_frame("hand")
    assert frame["interaction"].tolist() == [1, 2, 3]
    assert frame["human_alone_correct"].tolist() == [False, False, True]
    assert frame["final_correct"].tolist() == [True, True, False]
    assert frame["changed_answer"].tolist() == [True, True, True]
    (row,) = study_report.by_condition(frame).to_dict("records")
    assert (row["accuracy_human_alone"], row["accuracy_final"]) == (0.333, 0.667)
    (person,) = study_report.per_participant(frame).to_dict("records")
    assert (person["accuracy_human_alone"], person["accuracy_final"], person["changed_answers"]) == (0.333, 0.667, 3)


def test_empty_study_gives_empty_tables(sqlite_db):
    study_admin.create_study("empty", "collab_shapes")
    frame = study_report.interactions_frame("empty")
    assert frame.empty and study_report.by_condition(frame).empty and study_report.per_participant(frame).empty
    assert study_report.accuracy_over_time_figure(frame).layout.title.text == "No finished interactions yet"


def test_participants_and_streams_pages_show_the_study(sqlite_db):
    from engines.platform.navigation import discover_pages
    from tests.apptest_driver import APP, page_as

    study_admin.create_study("c", "collab_shapes", config={"constants": {"INTERACTIONS": 2}})
    run_protocol_bots("collab_shapes", participants=2, slug="c")
    at = page_as(APP, "researcher")
    pages = {spec.path.stem: str(spec.path) for spec in discover_pages()}
    at.switch_page(pages["collab_streams"]).run()
    assert not at.exception
    phases = next(d.value for d in at.dataframe if "calibration batch" in d.value.columns)  # the live stream's phases
    assert phases.loc[0, "calibration batch"] == "2 / 40" and phases.loc[0, "fit"] == "pending"
    at.switch_page(pages["collab_participants"]).run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Study participants"]
    assert any("`c:" in c.value for c in at.caption)  # the study's controller streams
    tables = [d.value for d in at.dataframe]
    assert any("accuracy_final" in t.columns for t in tables)
    import io
    import zipfile

    from engines.platform.export import export_zip

    # The bundle is made on click (a deferred download, export_zip): no file URL exists before it.
    bundle = next(d for d in at.get("download_button") if d.proto.label.startswith("Download study bundle"))
    assert bundle.proto.deferred_file_id and bundle.proto.url == ""
    names = set(zipfile.ZipFile(io.BytesIO(export_zip("c"))).namelist())
    assert {"c/controller_updates.csv", "c/controller_streams.json", "c/interactions.csv",
            "c/responses.csv"} <= names


def test_simulations_page_starts_a_simulation_with_a_chosen_rule(sqlite_db):
    from engines.platform import jobqueue
    from tests.apptest_driver import page_as

    at = page_as("collab_simulations", "researcher")
    at.selectbox(key="rule-protect").set_value("held_for_rounds").run()
    at.number_input(key="rule-protect-rounds").set_value(3).run()
    at.number_input(key="collab-overlap").set_value(20)
    at.selectbox(key="collab-task").set_value("medical")
    at.checkbox(key="collab-by-age").check()
    next(b for b in at.form_submit_button if b.label == "Start job").click().run()
    assert not at.exception
    (job,) = jobqueue.list_jobs()
    assert job.params["protect_rule"] == "held_for_rounds" and job.params["protect_params"] == {"rounds": 3}
    assert job.params["overlap"] == 20 and job.params["task"] == "medical" and job.params["case_order"] == "age"


# --- Interactions read back from participants' vars written by hand -----------------------------

FRAME_COLUMNS = ["participant_id", "external_id", "condition", "phase", "interaction", "human_alone_correct",
                 "final_correct", "changed_answer", "rounds_used", "mean_set_size", "err_harm", "err_comp"]


def _record(index: int, rounds: list[dict], **outcome) -> dict:
    """A stored interaction (the JSON layout of ``record.InteractionRecord``) with ``rounds`` and an outcome."""
    return {"index": index, "seed": 7 + index, "difficulty": 0.5, "mode": "online", "stream": "s:online",
            "rounds": rounds, **outcome}


def _add_participant(slug: str, external_id: str, condition: str, records: list[dict], *, engine=None) -> int:
    """Write one participant row whose vars hold ``records`` (no runtime call); returns its id."""
    with write_transaction(engine) as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        participant = Participant(study_id=study.id, external_id=external_id, panel="generic", condition=condition,
                                  vars={"collab": {"interactions": records}})
        session.add(participant)
        session.flush()
        return participant.id


def _round(answer: int, ai_set: list[int] | None = None) -> dict:
    return {"answer": answer, "confidence": 3, **({"ai_set": ai_set} if ai_set is not None else {})}


def test_a_finished_interaction_becomes_one_row_of_the_frame(sqlite_db):
    """By hand: truth 4; answers 3 (set {3,4,5}), 5 (set {4,5}), then 4 final in round 3.

    Human alone wrong, final right, answer changed, 3 rounds, mean set size (3 + 2) / 2 = 2.5.
    """
    study_admin.create_study("s", "collab_shapes")
    pid = _add_participant("s", "p1", "online", [_record(
        0, [_round(3, [3, 4, 5]), _round(5, [4, 5]), _round(4)], final_round=3, final_answer=4, true_count=4,
        correct=True, err_harm=True, err_comp=False, stream_phase="online")])
    frame = study_report.interactions_frame("s")
    assert list(frame.columns) == FRAME_COLUMNS
    assert frame.to_dict("records") == [{
        "participant_id": pid, "external_id": "p1", "condition": "online", "phase": "online", "interaction": 1,
        "human_alone_correct": False, "final_correct": True, "changed_answer": True, "rounds_used": 3,
        "mean_set_size": 2.5, "err_harm": True, "err_comp": False}]


def test_an_interaction_without_an_ai_has_no_phase_and_no_set_size(sqlite_db):
    study_admin.create_study("s", "collab_shapes")
    record = {**_record(0, [_round(6), _round(6)], final_round=2, final_answer=6, true_count=6, correct=True),
              "mode": "none", "stream": None}
    _add_participant("s", "p1", "no_ai", [record])
    (row,) = study_report.interactions_frame("s").to_dict("records")
    assert (row["phase"], row["mean_set_size"], row["changed_answer"]) == ("no AI", None, False)


def test_rounds_used_falls_back_to_the_rounds_stored_when_the_final_round_is_not(sqlite_db):
    """An older record with a final answer but no final_round: 2 rounds stored, so 2 rounds used."""
    study_admin.create_study("s", "collab_shapes")
    _add_participant("s", "p1", "online", [_record(0, [_round(2, [2, 3]), _round(3)], final_answer=3, true_count=3)])
    assert study_report.interactions_frame("s")["rounds_used"].tolist() == [2]


def test_interactions_in_progress_are_left_out_but_later_participants_kept(sqlite_db):
    """p1 finished interaction 1 and is in interaction 2; p2 finished interaction 1: rows (p1, 1), (p2, 1)."""
    study_admin.create_study("s", "collab_shapes")
    done = {"final_round": 2, "final_answer": 1, "true_count": 1}
    _add_participant("s", "p1", "online", [_record(0, [_round(0, [1]), _round(1)], **done),
                                           _record(1, [_round(5, [5, 6])])])
    _add_participant("s", "p2", "online", [_record(0, [_round(0, [1]), _round(1)], **done)])
    frame = study_report.interactions_frame("s")
    assert list(zip(frame["external_id"], frame["interaction"], strict=True)) == [("p1", 1), ("p2", 1)]


def test_an_interaction_whose_truth_was_not_stored_is_left_out(sqlite_db):
    """A final answer without the true count cannot be scored: no row rather than a row counted wrong."""
    study_admin.create_study("s", "collab_shapes")
    _add_participant("s", "p1", "online", [_record(0, [_round(2, [2]), _round(2)], final_round=2, final_answer=2)])
    assert study_report.interactions_frame("s").empty


def test_a_study_without_finished_interactions_still_has_the_frame_columns(sqlite_db):
    study_admin.create_study("s", "collab_shapes")
    assert list(study_report.interactions_frame("s").columns) == FRAME_COLUMNS


@pytest.fixture
def other_engine(sqlite_db, migrated_sqlite_template, tmp_path):
    """A second migrated SQLite database holding the study "s" with one finished interaction (participant
    "elsewhere"); the default database (sqlite_db) has a study "s" too, without participants."""
    import shutil

    from engines.platform import db

    path = tmp_path / "other.db"
    shutil.copy(migrated_sqlite_template, path)
    engine = db.get_engine(f"sqlite:///{path}")
    study_admin.create_study("s", "collab_shapes")
    study_admin.create_study("s", "collab_shapes", engine=engine)
    _add_participant("s", "elsewhere", "online", [_record(0, [_round(1, [1]), _round(1)], final_round=2,
                                                          final_answer=1, true_count=1)], engine=engine)
    yield engine
    engine.dispose()


def test_interactions_frame_reads_the_database_of_the_engine_given(other_engine):
    assert study_report.interactions_frame("s", engine=other_engine)["external_id"].tolist() == ["elsewhere"]


def test_interactions_csv_reads_the_database_of_the_engine_given(other_engine):
    lines = study_report.interactions_csv("s", engine=other_engine).decode().splitlines()
    assert [line.split(",")[1] for line in lines] == ["external_id", "elsewhere"]


def test_interactions_csv_writes_the_frame_with_text_cells_made_safe_for_spreadsheets(sqlite_db):
    """By hand: answers 1 (set {1}) then 2 final, truth 2; an id starting with "@" gets a leading quote."""
    study_admin.create_study("s", "collab_shapes")
    pid = _add_participant("s", "@worker", "online", [_record(
        0, [_round(1, [1]), _round(2)], final_round=2, final_answer=2, true_count=2, correct=True,
        err_harm=False, err_comp=True, stream_phase="online")])
    assert study_report.interactions_csv("s").decode() == (
        "participant_id,external_id,condition,phase,interaction,human_alone_correct,final_correct,changed_answer,"
        "rounds_used,mean_set_size,err_harm,err_comp\r\n"
        f"{pid},'@worker,online,online,1,False,True,True,2,1.0,False,True\r\n")


# --- Summaries of a frame built by hand -------------------------------------------------------------


def _frame(rows: list[tuple]) -> pd.DataFrame:
    """Rows of (participant_id, external_id, condition, phase, interaction, human alone right, final right,
    mean set size, harm, comp); changed_answer is "the two correctness flags differ", rounds_used 2."""
    return pd.DataFrame([
        {"participant_id": pid, "external_id": ext, "condition": cond, "phase": phase, "interaction": i,
         "human_alone_correct": alone, "final_correct": final, "changed_answer": alone != final, "rounds_used": 2,
         "mean_set_size": size, "err_harm": harm, "err_comp": comp}
        for pid, ext, cond, phase, i, alone, final, size, harm, comp in rows], columns=FRAME_COLUMNS)


HAND_FRAME = [
    (1, "p1", "online", "online", 1, True, True, 2.0, True, False),
    (1, "p1", "online", "online", 2, False, True, 3.0, False, True),
    (2, "p2", "online", "online", 1, False, False, 2.0, False, True),
    (3, "p3", "fixed", "calibration", 1, True, False, 4.0, False, False),
]
BY_CONDITION_COLUMNS = ["condition", "phase", "participants", "interactions", "accuracy_human_alone",
                        "accuracy_final", "mean_set_size", "harm_rate", "comp_rate"]
PER_PARTICIPANT_COLUMNS = ["external_id", "condition", "interactions", "accuracy_human_alone", "accuracy_final",
                           "changed_answers"]


def test_by_condition_summarises_each_condition_and_phase():
    """By hand, online/online: 2 people, 3 interactions, human alone 1/3, final 2/3, sizes (2+3+2)/3 = 2.33,
    harm 1/3, comp 2/3; fixed/calibration: 1, 1, 1.0, 0.0, 4.0, 0.0, 0.0. Rows in order of first appearance."""
    table = study_report.by_condition(_frame(HAND_FRAME))
    assert list(table.columns) == BY_CONDITION_COLUMNS
    assert table.to_dict("records") == [
        {"condition": "online", "phase": "online", "participants": 2, "interactions": 3,
         "accuracy_human_alone": 0.333, "accuracy_final": 0.667, "mean_set_size": 2.33, "harm_rate": 0.333,
         "comp_rate": 0.667},
        {"condition": "fixed", "phase": "calibration", "participants": 1, "interactions": 1,
         "accuracy_human_alone": 1.0, "accuracy_final": 0.0, "mean_set_size": 4.0, "harm_rate": 0.0,
         "comp_rate": 0.0},
    ]


def test_by_condition_of_no_interactions_has_the_table_columns():
    assert list(study_report.by_condition(_frame([])).columns) == BY_CONDITION_COLUMNS


def test_per_participant_summarises_each_participant():
    """By hand: p1 2 interactions, alone 1/2, final 2/2, 1 change; p2 1, 0, 0, 0; p3 1, 1, 0, 1."""
    table = study_report.per_participant(_frame(HAND_FRAME))
    assert list(table.columns) == PER_PARTICIPANT_COLUMNS
    assert table.to_dict("records") == [
        {"external_id": "p1", "condition": "online", "interactions": 2, "accuracy_human_alone": 0.5,
         "accuracy_final": 1.0, "changed_answers": 1},
        {"external_id": "p2", "condition": "online", "interactions": 1, "accuracy_human_alone": 0.0,
         "accuracy_final": 0.0, "changed_answers": 0},
        {"external_id": "p3", "condition": "fixed", "interactions": 1, "accuracy_human_alone": 1.0,
         "accuracy_final": 0.0, "changed_answers": 1},
    ]


def test_per_participant_of_no_interactions_has_the_table_columns():
    assert list(study_report.per_participant(_frame([])).columns) == PER_PARTICIPANT_COLUMNS


# --- The accuracy figure ------------------------------------------------------------------------------


def test_accuracy_figure_is_titled_and_labelled():
    figure = study_report.accuracy_over_time_figure(_frame(HAND_FRAME))
    assert figure.layout.title.text == "Accuracy by interaction"
    assert (figure.layout.xaxis.title.text, figure.layout.yaxis.title.text) == ("interaction", "accuracy")
    assert figure.layout.legend.title.text == "condition, answer"


def test_accuracy_figure_shows_accuracy_from_zero_to_one():
    assert tuple(study_report.accuracy_over_time_figure(_frame(HAND_FRAME)).layout.yaxis.range) == (0, 1.05)


def test_accuracy_figure_has_a_line_per_condition_and_answer():
    """By hand from HAND_FRAME: online interaction 1 (p1, p2): alone 1/2, final 1/2; interaction 2 (p1): 0, 1;
    fixed interaction 1 (p3): alone 1, final 0."""
    figure = study_report.accuracy_over_time_figure(_frame(HAND_FRAME))
    lines = {trace.name: (list(trace.x), list(trace.y)) for trace in figure.data}
    assert lines == {
        "online, human alone (round 1)": ([1, 2], [0.5, 0.0]), "online, final": ([1, 2], [0.5, 1.0]),
        "fixed, human alone (round 1)": ([1], [1.0]), "fixed, final": ([1], [0.0]),
    }


def test_accuracy_figure_marks_points_and_dashes_one_answer():
    figure = study_report.accuracy_over_time_figure(_frame(HAND_FRAME))
    assert {trace.mode for trace in figure.data} == {"lines+markers"}
    dash = {trace.name: trace.line.dash for trace in figure.data}
    assert dash["online, final"] == dash["fixed, final"] != dash["online, human alone (round 1)"]
