"""The collaboration pages do what they say: live streams, simulations and their figures, the AI model.

(Setting up a study and the study's participants: ``tests/collab/test_study_setup.py`` and
``tests/collab/test_study_report.py``; that every page renders for every role: ``test_smoke.py``.)
"""

from __future__ import annotations

import json

from engines.collab import store
from engines.collab.controller import ControllerConfig, ControllerState
from engines.platform import jobqueue
from tests.apptest_driver import APP, ROOT, page_as
from tests.helpers import trained_counter_job

SHIPPED_REPORT = ROOT / "assets" / "collab" / "counter_report.json"
PAGES = ROOT / "pages"


def _stream(key: str, errors: list[tuple[int, int]]) -> None:
    state = ControllerState.initial(ControllerConfig(alpha_harm=0.1, alpha_comp=0.2, eta_harm=0.5, eta_comp=0.25))
    store.ensure_stream(key, state)
    for i, (h, c) in enumerate(errors):
        store.record_interaction(key, f"i{i}", err_harm=bool(h), err_comp=bool(c))


def test_streams_page_shows_a_stream(sqlite_db):
    at = page_as("collab_streams", "researcher")
    assert not at.exception, at.exception
    assert any("No controller streams yet" in i.value for i in at.info)
    _stream("demo:online", [(1, 0), (0, 0), (0, 1), (1, 0), (0, 0), (0, 0), (0, 1), (0, 1)])
    _stream("demo:empty", [])
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert [t.value for t in at.title] == ["Live controller streams"]
    assert at.selectbox(key="collab-stream").options[0].startswith("demo:empty")
    assert any("No interactions recorded" in i.value for i in at.info)
    at.selectbox(key="collab-stream").select("demo:online").run()
    assert at.metric[0].value == "8"
    assert len(at.get("plotly_chart")) == 2  # violations, thresholds
    table = next(d.value for d in at.dataframe if "constraint" in d.value.columns)
    assert table["violations"].tolist() == [2, 3]


def test_streams_page_says_when_a_stream_is_calibrating_or_fixed(sqlite_db):
    fixed = ControllerState.initial(ControllerConfig(eta_harm=0.0, eta_comp=0.0))
    store.ensure_stream("demo:fixed", fixed, calibration_size=3)
    for i, s in enumerate((0.1, 0.2)):
        store.record_interaction("demo:fixed", f"c{i}", err_harm=False, err_comp=False, score_true=s)
    at = page_as("collab_streams", "researcher")
    assert not at.exception, at.exception
    assert any("the 2 recorded so far froze their thresholds before the calibration fit (a batch of 3)" in i.value
               for i in at.info), [i.value for i in at.info]
    store.record_interaction("demo:fixed", "c2", err_harm=False, err_comp=False, score_true=0.3)  # the fit
    store.record_interaction("demo:fixed", "d0", err_harm=False, err_comp=False, score_true=0.0, frozen_seq=3)
    at.run()
    assert [m.label for m in at.metric] == ["Interactions at the fixed thresholds (after calibration)"]
    assert at.metric[0].value == "1"
    assert any("no finite-sample guarantee" in c.value for c in at.caption)


def test_simulations_page_shows_a_finished_job(sqlite_db):
    at = page_as("collab_simulations", "researcher")
    assert not at.exception, at.exception
    assert any("No finished collaboration job yet" in i.value for i in at.info)
    job_id = jobqueue.submit_job("collab.simulate", {"T": 500, "n_calibration": 100})
    assert jobqueue.run_job(job_id) == "succeeded"
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert [t.value for t in at.title] == ["Simulations"] and "Result figures" in [h.value for h in at.header]
    assert at.selectbox(key="collab-job").value == job_id
    assert len(at.get("plotly_chart")) == 3  # violations, thresholds, accuracy
    assert at.subheader[0].value.startswith("Simulation: schedule drift, T = 500")
    (download,) = at.get("download_button")
    assert download.proto.label == "Download this result (JSON)"
    assert at.selectbox(key="collab-ai").options == ["synthetic AI (parametric)", "shipped CNN (assets/collab)"]


def test_simulation_form_opens_with_the_jobs_defaults_and_bounds(sqlite_db):
    """The form restates nothing: a job default declared beside the config is what the form opens with."""
    from engines.collab import simulate

    at = page_as("collab_simulations", "researcher")
    number = {n.label: n for n in at.number_input}
    assert number["Interactions T"].value == 5_000 and number["Interactions T"].max == 2_000_000
    assert number["Interactions T"].min == 10 and number["Seed"].min == 0
    assert number["alpha_harm (simulate)"].value == 0.05 and number["alpha_harm (simulate)"].max == 0.999
    assert {t.label: t.value for t in at.text_input}["alpha_harm grid (sweep)"] == "0.01, 0.02, 0.05"
    assert next(b for b in at.selectbox if b.label == "Schedule").value == simulate.JOB_DEFAULTS["schedule"]
    assert number["Interactions T"].value == simulate.JOB_DEFAULTS["T"]


def test_simulations_page_starts_a_sweep_from_its_grids(sqlite_db):
    at = page_as("collab_simulations", "researcher")
    at.radio[0].set_value("collab.sweep")
    at.number_input(key="collab-overlap").set_value(3)
    next(t for t in at.text_input if t.label == "alpha_harm grid (sweep)").input("0.02, 0.1")
    next(n for n in at.number_input if n.label == "Interactions T").set_value(2_000)
    next(b for b in at.form_submit_button if b.label == "Start job").click().run()
    assert not at.exception, at.exception
    (job,) = jobqueue.list_jobs()
    assert job.kind == "collab.sweep" and job.params["alpha_harm_grid"] == [0.02, 0.1]
    assert job.params["alpha_comp_grid"] == [0.02, 0.1] and job.params["n_calibration"] == 200
    assert job.params["overlap"] == 3 and job.params["ai"] == "synthetic"
    assert any(f"Queued job {job.id}" in s.value for s in at.success)
    next(t for t in at.text_input if t.label == "alpha_comp grid (sweep)").input("0.1, lots")
    next(b for b in at.form_submit_button if b.label == "Start job").click().run()
    assert [e.value for e in at.error] == ["expected comma-separated numbers such as 0.01,0.05,0.1, got '0.1, lots'"]
    assert len(jobqueue.list_jobs()) == 1


def test_training_page_shows_the_shipped_model_and_queues_a_training_job(sqlite_db):
    at = page_as("collab_training", "researcher")
    assert not at.exception, at.exception
    assert [t.value for t in at.title] == ["AI model (counting CNN)"]
    shipped = json.loads(SHIPPED_REPORT.read_text())["metrics"]
    tables = [d.value for d in at.dataframe if "set" in d.value.columns]
    assert tables and tables[0].set_index("set").loc["hard", "accuracy"] == shipped["hard"]["accuracy"]
    next(n for n in at.number_input if n.label == "Epochs").set_value(2)
    next(s for s in at.slider if s.label.startswith("Training images' difficulty")).set_value((0.0, 0.5))
    next(b for b in at.form_submit_button if b.label == "Start training").click().run()
    assert not at.exception, at.exception
    (job,) = jobqueue.list_jobs()
    assert job.kind == "collab.train_counter" and job.status == "queued"
    assert job.params["epochs"] == 2 and job.params["train_difficulty"] == [0.0, 0.5]
    assert any("Queued training job" in s.value for s in at.success)


def test_a_trained_model_is_used_in_simulations(sqlite_db):
    job_id = trained_counter_job()
    at = page_as(APP, "researcher")
    at.switch_page(str(PAGES / "collab_training.py")).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="collab-counter-job").value == f"job:{job_id}"
    assert len(at.image) == 2  # reliability diagram, accuracy/ECE by difficulty
    at.button(key="collab-use-scores").click().run()
    assert any("is selected under “AI scores”" in s.value for s in at.success)
    at.switch_page(str(PAGES / "collab_simulations.py")).run()
    assert not at.exception, at.exception
    assert at.selectbox(key="collab-ai").value == f"job:{job_id}"
    next(b for b in at.form_submit_button if b.label == "Start job").click().run()
    assert not at.exception, at.exception
    simulation = next(j for j in jobqueue.list_jobs() if j.kind == "collab.simulate")
    assert simulation.params["ai"] == "cnn" and simulation.params["counter_job_id"] == job_id


def test_collab_pages_are_in_the_research_menu(sqlite_db):
    from engines.platform.navigation import discover_pages

    collab = [s for s in discover_pages() if s.path.stem.startswith("collab_")]
    assert [s.path.stem for s in collab] == ["collab_setup", "collab_streams", "collab_participants",
                                            "collab_simulations", "collab_training"]
    assert all(s.group == "Research" and s.roles == ("researcher",) for s in collab)
