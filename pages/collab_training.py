"""Research: the AI of the collaboration engine, a counting CNN. Its report, training jobs, and its use in simulations."""

import streamlit as st

from engines.collab import jobs as collab_jobs
from engines.collab import plots
from engines.collab.result_files import ResultFileError, shipped_counter_report
from engines.platform import jobqueue
from pages import _access as access
from pages import _research_widgets as widgets

PAGE = {"title": "Collaboration: AI model", "group": "Research", "roles": ["researcher"],
        "icon": ":material/model_training:", "order": 54}
PICKED_AI = "collab-ai-picked"  # read (once) by the Simulations page's "AI scores" select

identity = access.require_role("researcher")
st.title("AI model (counting CNN)")
st.caption("The AI whose probabilities a simulation can use: the shipped counting CNN, or one trained here as a "
           "background job on generated images (accuracy and ECE by difficulty on held-out images).")

shipped = shipped_counter_report()
if shipped is None:
    st.info("No shipped model report (assets/collab/counter_report.json).")
else:
    view = plots.counter_view(shipped)
    st.caption(view.title)
    st.dataframe(view.table, hide_index=True, width="stretch")

with st.expander("Train a counting CNN"):
    defaults = collab_jobs.train_counter_defaults()
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
                job_id = jobqueue.submit_job(collab_jobs.TRAIN_COUNTER, {
                    "train_size": int(train_size), "epochs": int(epochs), "seed": int(train_seed), "lr": float(lr),
                    "train_difficulty": list(difficulty), "quick": quick}, submitted_by=identity.user_id)
            except ValueError as exc:
                st.error(str(exc))
            else:
                st.success(f"Queued training job {job_id}; it appears below.")


@st.fragment(run_every="2s")
def training_jobs() -> None:
    widgets.jobs_table(plots.counter_jobs_table(collab_jobs.counter_jobs(limit=20)), "No training jobs yet.")


training_jobs()


def use_scores(key: str) -> None:
    st.session_state[PICKED_AI] = key


trained = {key: label for key, label in collab_jobs.ai_score_choices().items() if key.startswith("job:")}
if trained:
    counter_key = st.selectbox("Trained model", list(trained), key="collab-counter-job", format_func=trained.get)
    try:
        view = plots.counter_view(collab_jobs.counter_job_report(collab_jobs.ai_score_params(counter_key)["counter_job_id"]))
    except ResultFileError as exc:
        st.error(str(exc))
    else:
        st.caption(view.title)
        st.dataframe(view.table, hide_index=True, width="stretch")
        for column, path in zip(st.columns(len(view.plots)) if view.plots else [], view.plots, strict=True):
            column.image(str(path))
        st.code(view.summary, language=None)
        st.button("Use this model's scores in simulations", key="collab-use-scores", on_click=use_scores,
                  args=(counter_key,), help="Selects it under “AI scores” in the form of the Simulations page.")
        if st.session_state.get(PICKED_AI) == counter_key:
            st.success(f"{trained[counter_key]} is selected under “AI scores” on the Simulations page.")
