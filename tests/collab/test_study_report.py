"""Study summaries for the participants page: accuracy human alone vs final, by condition and participant."""

import pytest

from engines.collab.study import report as study_report
from engines.collab.study import support
from engines.platform import runtime, study_admin
from engines.platform.bots import run_protocol_bots, stored_responses


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
    for row in support.interaction_rows("c"):
        answers = [r.data["answer"] for r in stored_responses(row.participant_id)
                   if r.step_name == "Trial" and slot(r.round_number)[0] == row.record.index]
        truth = support.trial_case(row.record.seed, row.record.difficulty).count
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
        truth = support.trial_case(view.template_vars["seed"], view.template_vars["difficulty"]).count
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
    at.button(key="study-bundle").click().run()
    assert not at.exception
    import io
    import zipfile

    slug, archive = at.session_state["collab-bundle"]
    names = set(zipfile.ZipFile(io.BytesIO(archive)).namelist())
    assert slug == "c" and {"c/controller_updates.csv", "c/controller_streams.json", "c/interactions.csv",
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
