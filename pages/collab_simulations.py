"""Research: collaboration simulations. Start simulate and sweep jobs, follow them, and draw their results."""

import streamlit as st

from engines.collab import jobs as collab_jobs
from engines.collab import plots
from engines.collab.humans import HUMAN_PRESETS, SCHEDULES
from engines.collab.result_files import ResultFileError, load_result_file
from engines.collab.simulate import TASKS
from engines.platform import jobqueue
from engines.platform.config_schema import field_info
from engines.platform.files import echo
from engines.platform.settings import get_settings
from pages import _access as access
from pages import _research_widgets as widgets
from pages._upload import file_input

PAGE = {"title": "Collaboration: simulations", "group": "Research", "roles": ["researcher"],
        "icon": ":material/query_stats:", "order": 53}
PICKED_AI = "collab-ai-picked"  # set by "Use this model's scores in simulations" on the AI model page

identity = access.require_role("researcher")
st.title("Simulations")
st.caption("Simulated interactions under the online controller and the fixed baseline, or final accuracy over a "
           "grid of targets, run as background jobs; then the running violation rates against their targets with "
           "the finite-sample bound band (spec §5), from a finished job or an uploaded result file.")

# Defaults and bounds of the form: the jobs' own (derived from SimulationConfig and SweepConfig), never restated here.
fields = field_info(collab_jobs.SweepParams) | field_info(collab_jobs.SimulateParams)
ai_choices = collab_jobs.ai_score_choices()
picked = st.session_state.pop(PICKED_AI, None)
if picked in ai_choices:
    st.session_state["collab-ai"] = picked

with st.expander("Start a simulation or sweep", expanded=picked in ai_choices):
    pick_left, pick_right = st.columns(2)
    with pick_left:
        protect_rule, protect_params = widgets.rule_picker("protect", "human_holds")
    with pick_right:
        supply_rule, supply_params = widgets.rule_picker("supply", "human_lacks")
    with st.form("collab-job"):
        kind = st.radio("Job", [collab_jobs.SIMULATE, collab_jobs.SWEEP], horizontal=True,
                        format_func={collab_jobs.SIMULATE: "simulate (online vs fixed)",
                                     collab_jobs.SWEEP: "sweep (accuracy over targets)"}.get)
        left, right = st.columns(2)
        schedule = left.selectbox("Schedule", sorted(SCHEDULES), index=sorted(SCHEDULES).index(fields["schedule"].default))
        human = right.selectbox("Human model", sorted(HUMAN_PRESETS),
                                index=sorted(HUMAN_PRESETS).index(fields["human"].default))
        T = widgets.number_from_field(left, "Interactions T", fields["T"], step=1_000)
        seed = widgets.number_from_field(right, "Seed", fields["seed"], step=1, help=None)
        task = right.selectbox("Task", TASKS, key="collab-task",
                               help="medical: the synthetic diagnosis task (12 pathologies, Bayes-posterior AI)")
        by_age = right.checkbox("Medical: patients in order of age (calibrate on the youngest)", key="collab-by-age")
        overlap = widgets.number_from_field(left, "Participants in flight on one stream", fields["overlap"],
                                      key="collab-overlap",
                                      help="P > 1: each update lands P - 1 updates late, as in a study with P "
                                           "participants at once; the bound widens accordingly.")
        alpha_harm = widgets.number_from_field(left, "alpha_harm (simulate)", fields["alpha_harm"], step=0.01, format="%.3f")
        alpha_comp = widgets.number_from_field(right, "alpha_comp (simulate)", fields["alpha_comp"], step=0.01, format="%.3f")
        harm_grid = left.text_input("alpha_harm grid (sweep)", ", ".join(map(str, fields["alpha_harm_grid"].default)))
        comp_grid = right.text_input("alpha_comp grid (sweep)", ", ".join(map(str, fields["alpha_comp_grid"].default)))
        ai_source = st.selectbox("AI scores", list(ai_choices), format_func=ai_choices.get, key="collab-ai",
                                 help="The AI's probabilities: synthetic, or a counting CNN's held-out scores "
                                      "(the shipped model, or one trained on the AI model page).")
        if st.form_submit_button("Start job", type="primary"):
            try:
                params = collab_jobs.simulation_job_params(
                    kind, schedule=schedule, human=human, T=int(T), seed=int(seed), overlap=int(overlap), task=task,
                    case_order="age" if by_age else "random", protect_rule=protect_rule,
                    protect_params=protect_params, supply_rule=supply_rule, supply_params=supply_params,
                    alpha_harm=alpha_harm, alpha_comp=alpha_comp, alpha_harm_grid=harm_grid, alpha_comp_grid=comp_grid,
                    **collab_jobs.ai_score_params(ai_source))
                job_id = jobqueue.submit_job(kind, params, submitted_by=identity.user_id)
            except ValueError as exc:  # JobError, or a grid that is not numbers
                st.error(str(exc))
            else:
                st.success(f"Queued job {job_id}; it appears below.")


FINISHED_SEEN = "collab-finished-seen"  # the succeeded jobs the result section below was drawn with


@st.fragment(run_every="2s")
def recent_jobs() -> None:
    jobs = collab_jobs.simulation_jobs(limit=20)
    widgets.jobs_table(plots.simulation_jobs_table(jobs), "No collaboration jobs yet.")
    succeeded = {job.id for job in jobs if job.status == "succeeded"}
    if not succeeded <= st.session_state.get(FINISHED_SEEN, set()):
        st.rerun()  # a job just finished: redraw the page so its figures can be picked without a reload


# Read before the jobs table, which compares against it: a job that finishes later reruns the page once.
finished = {job.id: job.kind for job in collab_jobs.simulation_jobs(limit=50, succeeded=True)}
st.session_state[FINISHED_SEEN] = set(finished)
recent_jobs()

# RESULT FIGURES: a finished job, or an uploaded result JSON

st.header("Result figures")


@st.cache_data(max_entries=16, show_spinner=False)
def finished_job_result(job_id: int, database_url: str):
    """A succeeded job's result file (it never changes), read and checked once per database and job."""
    return collab_jobs.simulation_result(job_id)


source = st.radio("Result from", ["finished job", "uploaded file"], horizontal=True, key="collab-source")
result = raw = None
if source == "finished job":
    if not finished:
        st.info("No finished collaboration job yet: start one above, or upload a result file.")
    else:
        job_id = st.selectbox("Job", list(finished), key="collab-job", format_func=lambda i: f"#{i} {finished[i]}")
        try:
            result = finished_job_result(int(job_id), str(get_settings().database_url))
        except ResultFileError as exc:
            st.error(str(exc))
else:
    # Stored under the server's name in uploads/collab (file_input shows a refusal itself); read from there.
    upload = file_input("Result JSON (from `python -m engines.collab simulate/sweep --out ...`)", kind="json",
                        area="collab", key="collab-result-upload")
    if upload is not None:
        raw = upload.path.read_bytes()
        try:
            result = load_result_file(raw)
        except ResultFileError as exc:  # the browser's file name, quoted: it is the uploader's text
            st.error(f"{echo(upload.label)} is not a collaboration result: {exc}")

if result is not None:
    view = plots.result_view(result)
    st.subheader(view.title)
    for name, fig in view.figures.items():
        st.plotly_chart(fig, key=f"result-{name}")
    for name, table in view.tables.items():
        st.caption(name)
        st.dataframe(table, width="stretch")
    if view.summary:
        st.code(view.summary, language=None)
    # The displayed result as it is: the uploaded bytes, or the job's file as it was written.
    st.download_button("Download this result (JSON)", raw if raw is not None else result.to_json(),
                       file_name=f"collab-{view.kind}.json", mime="application/json")
