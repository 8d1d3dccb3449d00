"""Research: background jobs. Submit one, watch its progress live, read its log, cancel it."""

import json

import pandas as pd
import streamlit as st

from engines.platform import jobqueue
from pages import _ui as ui

PAGE = {"title": "Jobs", "group": "Research", "roles": ["researcher"], "icon": ":material/pending_actions:",
        "order": 90}

identity = ui.require_role("researcher")
st.title("Jobs")
st.caption("Long work runs in the background; this page and any other browser show the same jobs.")

kinds = jobqueue.discover_job_kinds()
with st.expander("Start a job"):
    kind = st.selectbox("Kind", sorted(kinds), format_func=lambda k: kinds[k].title, key="job-kind")
    st.caption(kinds[kind].description)
    defaults = kinds[kind].params().model_dump(mode="json") if kinds[kind].params else {}
    params_text = st.text_area("Parameters (JSON)", json.dumps(defaults, indent=2), key=f"job-params-{kind}")
    if st.button("Start", type="primary", key="job-start"):
        try:
            job_id = jobqueue.submit_job(kind, json.loads(params_text or "{}"), submitted_by=identity.user_id)
        except json.JSONDecodeError as exc:
            st.error(f"Parameters are not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}")
        except jobqueue.JobError as exc:
            st.error(str(exc))
        else:
            st.success(f"Queued job {job_id}.")


@st.fragment(run_every="2s")
def job_table() -> None:
    jobs = jobqueue.list_jobs(limit=50)
    ui.jobs_table(pd.DataFrame([{
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
