"""Study summaries for the participants page: accuracy human alone vs final, by condition and participant."""

from engines.collab.study import report as study_report
from engines.platform import study_admin
from engines.platform.bots import run_protocol_bots


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
    row = table.iloc[0]
    subset = frame[(frame["condition"] == row["condition"]) & (frame["phase"] == row["phase"])]
    assert row["accuracy_final"] == round(subset["final_correct"].mean(), 3)
    assert row["accuracy_human_alone"] == round(subset["human_alone_correct"].mean(), 3)
    people = study_report.per_participant(frame)
    assert sorted(people["external_id"]) == sorted(r.external_id for r in completed)
    figure = study_report.accuracy_over_time_figure(frame)
    assert len(figure.data) >= 2  # human alone and final, per condition


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
