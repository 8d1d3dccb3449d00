"""Research: a collaboration study's participants. Accuracy by condition, over time and per participant; export."""

import functools

import streamlit as st

from engines.collab import store
from engines.collab.study import report as study_report
from engines.platform import study_admin
from engines.platform.export import export_zip, zip_name
from engines.platform.pseudonyms import pseudonym_key_problem
from pages import _access as access

PAGE = {"title": "Collaboration: participants", "group": "Research", "roles": ["researcher"],
        "icon": ":material/groups:", "order": 52}

identity = access.require_role("researcher")
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
    # Both files are made on click (data= a callable), so no copy waits in the server's media store
    # at a /media/ address before the click, and the one made then is dropped after the next runs.
    left, right = st.columns(2)
    left.download_button("Download interactions (CSV)", functools.partial(study_report.interactions_csv, slug),
                         file_name=f"{slug}-interactions.csv", mime="text/csv", key="study-csv")
    pseudonymise = right.checkbox("Pseudonymise participant ids (for sharing outside the lab)",
                                  key="study-bundle-pseudonymise")
    key_problem = pseudonym_key_problem() if pseudonymise else None
    if key_problem:
        right.error(key_problem)
    right.download_button("Download study bundle (zip: answers, interactions, stream histories, audits)",
                          functools.partial(export_zip, slug, pseudonymise=pseudonymise),
                          file_name=zip_name(slug, pseudonymised=pseudonymise), mime="application/zip",
                          key="study-bundle", disabled=bool(key_problem))


study_section()
