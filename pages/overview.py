"""Research: what is running now — studies and their progress, recent jobs."""

import pandas as pd
import streamlit as st

from engines.platform import jobqueue, study_admin
from pages import _ui as ui

PAGE = {"title": "Overview", "group": "Research", "roles": ["researcher", "annotator"], "icon": ":material/home:",
        "order": 0}

identity = ui.require_role("researcher", "annotator")
st.title("HAI Studio")
st.write(f"Welcome, {identity.display_name or identity.username}.")

studies = study_admin.list_studies()
c1, c2, c3 = st.columns(3)
c1.metric("Studies", len(studies))
c2.metric("Open studies", sum(s.is_open for s in studies))
c3.metric("Completed participants", sum(s.completed for s in studies))

if studies:
    st.subheader("Studies")
    st.dataframe(pd.DataFrame([s.__dict__ for s in studies]), hide_index=True, width="stretch")
jobs = jobqueue.list_jobs(limit=5)
if jobs:
    st.subheader("Recent jobs")
    st.dataframe(pd.DataFrame([{"id": j.id, "kind": j.kind, "status": j.status, "progress": j.progress}
                               for j in jobs]), hide_index=True, width="stretch")
