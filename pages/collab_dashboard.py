"""Research: collaboration dashboard. Live controller streams, simulation jobs, result figures."""

import json

import pandas as pd
import streamlit as st

from engines.collab import dashboard, rules, store, study_report, study_setup
from engines.collab.humans import HUMAN_PRESETS, SCHEDULES
from engines.platform import jobqueue, study_admin
from engines.platform.export import export_study
from engines.platform.panels import LinkError
from engines.platform.runtime import StudyError
from engines.platform.settings import get_settings
from pages import _ui as ui

PAGE = {"title": "Collaboration dashboard", "group": "Research", "roles": ["researcher"],
        "icon": ":material/monitoring:", "order": 50}

identity = ui.require_role("researcher")
st.title("Collaboration dashboard")
st.caption("Running violation rates of the online controller against their targets, with the finite-sample "
           "bound band (spec §5): live from study streams, or from a simulation.")


def rule_picker(role: str, default: str, prefix: str = "rule") -> tuple[str, dict]:
    """A registered rule for ``role`` and its typed parameters (researchers never type code)."""
    names = rules.available_rules(role)
    name = st.selectbox(f"{role.capitalize()} rule", names, index=names.index(default), key=f"{prefix}-{role}",
                        help=rules.rule_schema(default)["doc"])
    params = {}
    for param in rules.rule_schema(name)["params"]:
        number = float if param["type"] == "float" else int
        params[param["name"]] = st.number_input(
            f"{name}: {param['name']}", value=number(param["default"]), help=param.get("help"),
            min_value=number(param["min"]) if "min" in param else None,
            max_value=number(param["max"]) if "max" in param else None, key=f"{prefix}-{role}-{param['name']}")
    return name, params


# (0) A NEW COLLABORATION STUDY: conditions, targets and rules as data

with st.expander("Set up a new collaboration study"):
    st.caption("One row per condition: *online* (the controller moves its thresholds), *fixed* (calibrated once, "
               "then frozen) or *none* (no AI). The first `calibration_interactions` interactions of an AI "
               "condition fit its starting thresholds. Participants are assigned least-filled over the rows.")
    protocol_c = study_admin.default_constants(study_setup.PROTOCOL)
    edited = st.data_editor(
        pd.DataFrame(study_setup.condition_rows(protocol_c["CONDITIONS"])), num_rows="dynamic",
        key="setup-conditions", hide_index=True, width="stretch",
        column_config={"mode": st.column_config.SelectboxColumn("mode", options=list(study_setup.MODES),
                                                                required=True)})
    rows = edited.to_dict("records")
    pick_left, pick_right = st.columns(2)
    with pick_left:
        setup_protect = rule_picker("protect", protocol_c["PROTECT_RULE"]["name"], prefix="setup")
    with pick_right:
        setup_supply = rule_picker("supply", protocol_c["SUPPLY_RULE"]["name"], prefix="setup")
    with st.form("collab-setup"):
        left, middle, right = st.columns(3)
        setup_slug = left.text_input("Study name in the link", key="setup-slug")
        interactions = middle.number_input("Interactions per participant", 1, protocol_c["INTERACTIONS"],
                                           protocol_c["INTERACTIONS"], key="setup-interactions")
        rounds = right.number_input("Rounds per interaction", 1, protocol_c["ROUNDS"], protocol_c["ROUNDS"],
                                    key="setup-rounds")
        feedback = left.selectbox("Feedback after each image", ["truth", "none"], key="setup-feedback")
        setup_title = middle.text_input("Title (optional)", key="setup-title")
        if st.form_submit_button("Create study", type="primary"):
            try:
                constants = study_setup.study_constants(
                    conditions=study_setup.conditions_from_rows(rows), protect_rule=setup_protect[0],
                    protect_params=setup_protect[1], supply_rule=setup_supply[0], supply_params=setup_supply[1],
                    interactions=interactions, rounds=rounds, feedback=feedback)
                study_setup.create_collab_study(setup_slug.strip(), constants, title=setup_title.strip(),
                                                created_by=identity.user_id)
            except (ValueError, LinkError, StudyError) as exc:
                st.error(str(exc))
            else:
                st.success(f"Created study '{setup_slug.strip()}': its links are in Admin → Studies.")

# (a) LIVE CONTROLLER STREAMS

st.header("Live controller streams")


@st.fragment(run_every="5s")
def live_stream() -> None:
    streams = dashboard.list_streams()
    if not streams:
        st.info("No controller streams yet: they appear when a collaboration study records its first interaction.")
        return
    counts = {s.key: s.updates for s in streams}
    key = st.selectbox("Stream (study:condition)", list(counts), key="collab-stream",
                       format_func=lambda k: f"{k} ({counts[k]} interactions)")
    try:
        view = dashboard.stream_view(key)
    except store.StreamError as exc:  # the audit refused the stored history: say so, show nothing wrong
        st.error(f"This stream's history does not pass its audit: {exc}")
        return
    st.metric("Online interactions (counted by the guarantee)", view.interactions)
    st.dataframe(view.phases, hide_index=True, width="stretch")
    st.caption("The first interactions of a stream may form its calibration batch (q₁ is fitted on them). "
               "With overlapping participants an update lands after others that finished in between (its delay); "
               "the bound uses the largest delay D seen, and the table also shows the bound without delay.")
    st.dataframe(view.table, hide_index=True, width="stretch")
    if not view.figures:
        st.info("No interactions recorded in this stream yet.")
        return
    for name, fig in view.figures.items():
        st.plotly_chart(fig, key=f"stream-{name}")


live_stream()

# (a') STUDY PARTICIPANTS: accuracy by condition, over time, per participant

st.header("Study participants")


@st.fragment(run_every="10s")
def study_section() -> None:
    studies = [s.slug for s in study_admin.list_studies() if s.protocol == "collab_shapes"]
    if not studies:
        st.info("No collaboration study yet (Admin → Studies, protocol collab_shapes).")
        return
    slug = st.selectbox("Study", studies, key="collab-study")
    frame = study_report.interactions_frame(slug)
    st.dataframe(study_report.by_condition(frame), hide_index=True, width="stretch")
    st.plotly_chart(study_report.accuracy_over_time_figure(frame), key="study-accuracy")
    st.caption("Per participant")
    st.dataframe(study_report.per_participant(frame), hide_index=True, width="stretch")
    left, right = st.columns(2)
    left.download_button("Download interactions (CSV)", frame.to_csv(index=False),
                         file_name=f"{slug}-interactions.csv", mime="text/csv", key="study-csv")
    if right.button("Prepare study bundle (zip: answers, interactions, stream histories, audits)",
                    key="study-bundle"):
        st.session_state["collab-bundle"] = (slug, export_study(slug).zip_bytes())
    prepared = st.session_state.get("collab-bundle")
    if prepared and prepared[0] == slug:
        right.download_button("Download study bundle (.zip)", prepared[1], file_name=f"{slug}-bundle.zip",
                              mime="application/zip", key="study-bundle-download")


study_section()

# (b) SIMULATIONS AS JOBS

st.header("Simulations")


with st.expander("Start a simulation or sweep"):
    pick_left, pick_right = st.columns(2)
    with pick_left:
        protect_rule, protect_params = rule_picker("protect", "human_holds")
    with pick_right:
        supply_rule, supply_params = rule_picker("supply", "human_lacks")
    with st.form("collab-job"):
        kind = st.radio("Job", ["collab.simulate", "collab.sweep"], horizontal=True,
                        format_func={"collab.simulate": "simulate (online vs fixed)",
                                     "collab.sweep": "sweep (accuracy over targets)"}.get)
        left, right = st.columns(2)
        schedule = left.selectbox("Schedule", sorted(SCHEDULES), index=sorted(SCHEDULES).index("drift"))
        human = right.selectbox("Human model", sorted(HUMAN_PRESETS))
        T = left.number_input("Interactions T", min_value=100, max_value=2_000_000, value=5_000, step=1_000)
        seed = right.number_input("Seed", min_value=0, value=0, step=1)
        task = right.selectbox("Task", ["shapes", "medical"], key="collab-task",
                               help="medical: the synthetic diagnosis task (12 pathologies, Bayes-posterior AI)")
        by_age = right.checkbox("Medical: patients in order of age (calibrate on the youngest)", key="collab-by-age")
        overlap = left.number_input("Participants in flight on one stream", min_value=1, max_value=10_000, value=1,
                                    key="collab-overlap",
                                    help="P > 1: each update lands P - 1 updates late, as in a study with P "
                                         "participants at once; the bound widens accordingly.")
        alpha_harm = left.number_input("alpha_harm (simulate)", 0.001, 0.5, 0.05, step=0.01, format="%.3f")
        alpha_comp = right.number_input("alpha_comp (simulate)", 0.001, 0.5, 0.05, step=0.01, format="%.3f")
        harm_grid = left.text_input("alpha_harm grid (sweep)", "0.01, 0.02, 0.05")
        comp_grid = right.text_input("alpha_comp grid (sweep)", "0.02, 0.1")
        ai_choices = dashboard.ai_score_choices()
        ai_source = st.selectbox("AI scores", list(ai_choices), format_func=ai_choices.get, key="collab-ai",
                                 help="The AI's probabilities: synthetic, or a counting CNN's held-out scores "
                                      "(the shipped model, or one trained below).")
        if st.form_submit_button("Start job", type="primary"):
            params = {"schedule": schedule, "human": human, "T": int(T), "n_calibration": min(1000, max(10, int(T) // 10)),
                      "seed": int(seed), "overlap": int(overlap), "task": task,
                      "case_order": "age" if by_age else "random", "protect_rule": protect_rule,
                      "protect_params": protect_params, "supply_rule": supply_rule, "supply_params": supply_params,
                      **dashboard.ai_score_params(ai_source)}
            try:
                if kind == "collab.simulate":
                    params |= {"alpha_harm": alpha_harm, "alpha_comp": alpha_comp}
                else:
                    params |= {"alpha_harm_grid": [float(x) for x in harm_grid.split(",") if x.strip()],
                               "alpha_comp_grid": [float(x) for x in comp_grid.split(",") if x.strip()]}
                job_id = jobqueue.submit_job(kind, params, submitted_by=identity.user_id)
            except ValueError as exc:  # JobError, or a grid that is not numbers
                st.error(str(exc))
            else:
                st.success(f"Queued job {job_id}; it appears below.")


@st.fragment(run_every="2s")
def recent_jobs() -> None:
    ui.jobs_table(dashboard.collab_jobs(limit=20).drop(columns=["result_path"]), "No collaboration jobs yet.")


recent_jobs()

# (d) AI MODEL: the counting CNN, shipped or trained by a background job

st.header("AI model (counting CNN)")
shipped = dashboard.shipped_counter_view()
if shipped is None:
    st.info("No shipped model report (assets/collab/counter_report.json).")
else:
    st.caption(shipped.title)
    st.dataframe(shipped.table, hide_index=True, width="stretch")

with st.expander("Train a counting CNN"):
    defaults = dashboard.train_counter_defaults()
    with st.form("collab-train"):
        left, right = st.columns(2)
        train_size = left.number_input("Training images", min_value=256, max_value=200_000,
                                       value=defaults["train_size"], step=1_000)
        epochs = right.number_input("Epochs", min_value=1, max_value=100, value=defaults["epochs"])
        train_seed = left.number_input("Seed", min_value=0, value=defaults["seed"], step=1, key="collab-train-seed")
        lr = right.number_input("Peak learning rate", min_value=1e-4, max_value=1.0, value=defaults["lr"],
                                format="%.4f")
        difficulty = st.slider("Training images' difficulty range (evaluation always uses 0–1)", 0.0, 1.0,
                               tuple(defaults["train_difficulty"]), step=0.05)
        quick = st.checkbox("Quick: tiny sizes, seconds (a useless model, to check the pipeline)")
        if st.form_submit_button("Start training", type="primary"):
            try:
                job_id = jobqueue.submit_job("collab.train_counter", {
                    "train_size": int(train_size), "epochs": int(epochs), "seed": int(train_seed), "lr": float(lr),
                    "train_difficulty": list(difficulty), "quick": quick}, submitted_by=identity.user_id)
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued training job {job_id}; it appears below.")


@st.fragment(run_every="2s")
def training_jobs() -> None:
    ui.jobs_table(dashboard.counter_jobs(limit=20), "No training jobs yet.")


training_jobs()


def use_scores(key: str) -> None:
    st.session_state["collab-ai"] = key  # the simulation form's "AI scores" select


trained = {key: label for key, label in ai_choices.items() if key.startswith("job:")}
if trained:
    counter_key = st.selectbox("Trained model", list(trained), key="collab-counter-job", format_func=trained.get)
    try:
        view = dashboard.counter_job_view(dashboard.ai_score_params(counter_key)["counter_job_id"])
    except dashboard.ResultFileError as exc:
        st.error(str(exc))
    else:
        st.caption(view.title)
        st.dataframe(view.table, hide_index=True, width="stretch")
        for column, path in zip(st.columns(len(view.plots)) if view.plots else [], view.plots, strict=True):
            column.image(str(path))
        st.code(view.summary, language=None)
        st.button("Use this model's scores in simulations", key="collab-use-scores", on_click=use_scores,
                  args=(counter_key,), help="Selects it under “AI scores” in the simulation form above.")

# RESULT FIGURES: a finished job, or an uploaded result JSON

st.header("Result figures")


@st.cache_data(max_entries=16, show_spinner=False)
def finished_job_result(job_id: int, database_url: str) -> tuple[str, dict, bytes]:
    """A succeeded job's result file (it never changes), read and validated once per database and job."""
    return dashboard.job_result(job_id)


finished = dashboard.collab_jobs(limit=50)
finished = finished[finished["status"] == "succeeded"]
source = st.radio("Result from", ["finished job", "uploaded file"], horizontal=True, key="collab-source")
data = raw = None
if source == "finished job":
    if finished.empty:
        st.info("No finished collaboration job yet: start one above, or upload a result file.")
    else:
        job_id = st.selectbox("Job", finished["id"].tolist(), key="collab-job",
                              format_func=lambda i: f"#{i} {finished.set_index('id').loc[i, 'kind']}")
        try:
            _, data, raw = finished_job_result(int(job_id), str(get_settings().database_url))
        except dashboard.ResultFileError as exc:
            st.error(str(exc))
else:
    upload = st.file_uploader("Result JSON (from `python -m engines.collab simulate/sweep --out ...`)", type=["json"])
    if upload is not None:
        raw = upload.getvalue()
        try:
            _, data = dashboard.load_result(raw)
        except dashboard.ResultFileError as exc:
            st.error(f"This file is not a collaboration result: {exc}")
            data = None

if data is not None:
    view = dashboard.result_view(data)
    st.subheader(view.title)
    for name, fig in view.figures.items():
        st.plotly_chart(fig, key=f"result-{name}")
    for name, table in view.tables.items():
        st.caption(name)
        st.dataframe(table, width="stretch")
    if view.summary:
        st.code(view.summary, language=None)
    # (c) the displayed result, as it is
    st.download_button("Download this result (JSON)", raw if raw is not None else json.dumps(data),
                       file_name=f"collab-{view.kind}.json", mime="application/json")
