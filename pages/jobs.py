"""Research: background jobs. Submit one, watch its progress live, read its log, cancel it."""

import json

import pandas as pd
import streamlit as st

from engines.platform import jobqueue
from engines.platform.param_form import ParamField, ParamFormError, form_params, json_text, param_fields
from pages import _access as access
from pages import _research_widgets as widgets

PAGE = {"title": "Jobs", "group": "Research", "roles": ["researcher"], "icon": ":material/pending_actions:",
        "order": 90}

identity = access.require_role("researcher")
st.title("Jobs")
st.caption("Long work runs in the background; this page and any other browser show the same jobs.")

kinds = jobqueue.discover_job_kinds()


def param_widget(field: ParamField, key: str):
    """The widget of one parameter (its value; None or "" when left empty)."""
    label = field.label + (" *" if field.required else "")
    help_text = field.help or None
    if field.widget == "checkbox":
        return st.checkbox(label, value=bool(field.default), key=key, help=help_text)
    if field.widget == "choice":
        index = field.options.index(field.default) if field.default in field.options else 0
        return st.selectbox(label, field.options, index=index, key=key, help=help_text)
    if field.widget in ("int", "float"):
        whole = field.widget == "int"
        cast = int if whole else float
        return st.number_input(
            label, value=field.default, key=key, help=help_text, step=1 if whole else None,
            format="%d" if whole else None, placeholder="empty: the default" if field.optional else "a number",
            min_value=None if field.minimum is None else cast(field.minimum),
            max_value=None if field.maximum is None else cast(field.maximum))
    if field.widget == "text":
        return st.text_input(label, value=field.default or "", key=key, help=help_text)
    return st.text_input(label + " (JSON)", value=json_text(field.default), key=key, help=help_text)


with st.expander("Start a job"):
    kind = st.selectbox("Kind", sorted(kinds), format_func=lambda k: kinds[k].title, key="job-kind")
    st.caption(kinds[kind].description)
    fields = param_fields(kinds[kind].params)
    with st.form(f"job-form-{kind}"):
        values = {field.name: param_widget(field, f"job-param-{kind}-{field.name}") for field in fields}
        if any(field.required for field in fields):
            st.caption("Fields marked * have no default and must be filled.")
        started = st.form_submit_button("Start", type="primary")
    if started:
        try:
            job_id = jobqueue.submit_job(kind, form_params(fields, values), submitted_by=identity.user_id)
        except (ParamFormError, jobqueue.JobError) as exc:
            st.error(str(exc))
        else:
            st.success(f"Queued job {job_id}.")


@st.fragment(run_every="2s")
def job_table() -> None:
    jobs = jobqueue.list_jobs(limit=50)
    widgets.jobs_table(pd.DataFrame([{
        "id": j.id, "kind": j.kind, "status": j.status, "progress": j.progress, "message": j.message,
        "created": j.created_at, "finished": j.finished_at,
    } for j in jobs], columns=["id", "kind", "status", "progress", "message", "created", "finished"]), "No jobs yet.")
    if not jobs:
        return
    job_id = st.selectbox("Details of job", [j.id for j in jobs], key="job-detail")
    job = jobqueue.get_job(job_id)
    st.write(f"**{job.kind}** — {job.status} ({job.progress:.0%}) {job.message}")
    if job.status in ("queued", "running") and st.button("Cancel job", key=f"cancel-{job.id}"):
        jobqueue.cancel_job(job.id)
        st.rerun(scope="fragment")
    st.caption(f"parameters: `{json.dumps(job.params)}` · code {job.code_version}")
    if job.error:
        st.error(job.error)
    if job.result:
        st.json(job.result)
    if job.log:
        st.code(job.log[-5000:], language=None)


job_table()
