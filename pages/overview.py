"""Home: an annotator's labeling projects, one click from labeling; a researcher's studies, open
labeling projects and recent jobs."""

import pandas as pd
import streamlit as st

from engines.judge import labeling, labeling_queue, members
from engines.platform import jobqueue, study_admin
from pages import _access as access

PAGE = {"title": "Overview", "group": "Research", "roles": ["researcher", "annotator"], "icon": ":material/home:",
        "order": 0}
LABEL_PAGE = "pages/judge_label.py"  # opened on a project by ?project=<slug>, as an invitation link does

identity = access.require_role("researcher", "annotator")
st.title("HAI Studio")
st.write(f"Welcome, {identity.display_name or identity.username}.")


def labeling_projects_table(projects, annotator: str) -> None:
    """One row per project with this person's own counts, and a button that opens it on the Label page."""
    rows = []
    for project in projects:
        status = labeling_queue.status_of(project.slug, annotator)
        rows.append({"Project": project.title or project.slug, "You labelled": status.labelled,
                     "Skipped": status.skipped, "Paused": status.paused or ""})
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    for project in projects:
        if st.button(f"Label “{project.title or project.slug}”", key=f"overview-label-{project.slug}"):
            st.switch_page(LABEL_PAGE, query_params={"project": project.slug})


def annotator_home() -> None:
    projects = members.projects_to_label(identity.user_id, identity.role)
    st.subheader("Your labeling projects")
    if not projects:
        st.info("No open labeling project has you on its team yet. The researcher who invited you adds you to "
                "one; it then appears here.")
        return
    labeling_projects_table(projects, f"user:{identity.user_id}")


def researcher_home() -> None:
    studies = study_admin.list_studies()
    c1, c2, c3 = st.columns(3)
    c1.metric("Studies", len(studies))
    c2.metric("Open studies", sum(s.is_open for s in studies))
    c3.metric("Completed participants", sum(s.completed for s in studies))
    if studies:
        st.subheader("Studies")
        st.dataframe(pd.DataFrame([{"Study": s.slug, "Title": s.title, "Protocol": s.protocol,
                                    "Open": s.is_open, "Participants": s.participants, "Completed": s.completed}
                                   for s in studies]), hide_index=True, width="stretch")
    projects = [p for p in labeling.list_projects() if p.is_open]
    if projects:
        st.subheader("Open labeling projects")
        st.dataframe(pd.DataFrame([{"Project": p.title or p.slug, "Slug": p.slug} for p in projects]),
                     hide_index=True, width="stretch")
    jobs = jobqueue.list_jobs(limit=5)
    if jobs:
        st.subheader("Recent jobs")
        st.dataframe(pd.DataFrame([{"Job": j.id, "Kind": j.kind, "Status": j.status,
                                    "Progress": f"{j.progress:.0%}"} for j in jobs]), hide_index=True, width="stretch")


if identity.role == "annotator":
    annotator_home()
else:
    researcher_home()
