"""Research: a collaboration study's participants. Accuracy by condition, over time and per participant; export."""

import streamlit as st

from engines.collab import store
from engines.collab.study import report as study_report
from engines.platform import study_admin
from engines.platform.export import export_study
from pages import _ui as ui

PAGE = {"title": "Collaboration: participants", "group": "Research", "roles": ["researcher"],
        "icon": ":material/groups:", "order": 52}

identity = ui.require_role("researcher")
st.title("Study participants")
st.caption("Accuracy human alone (first answer) against the final answer, by condition and stream phase, over "
           "the interactions and per participant, as participants finish.")


@st.fragment(run_every="10s")
def study_section() -> None:
    studies = [s.slug for s in study_admin.list_studies() if s.protocol == "collab_shapes"]
    if not studies:
        st.info("No collaboration study yet (Admin → Studies, protocol collab_shapes).")
        return
    slug = st.selectbox("Study", studies, key="collab-study")
    streams = store.list_streams(study=slug)
    if streams:
        st.caption("Controller streams of this study (figures under Collaboration: live streams): "
                   + ", ".join(f"`{s.key}` ({s.updates} interactions)" for s in streams))
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
