"""Admin: create, open and close studies; copy participant links; watch progress; export data."""

import functools

import pandas as pd
import plotly.express as px
import streamlit as st

from engines.platform import study_admin
from engines.platform.export import export_zip, zip_name
from engines.platform.panels import LinkError
from engines.platform.pseudonyms import pseudonym_key_problem
from engines.platform.registry import all_protocols
from engines.platform.runtime import StudyError
from pages import _access as access

PAGE = {"title": "Studies", "group": "Admin", "roles": ["admin", "researcher"], "icon": ":material/science:", "url_path": "studies",
        "order": 10}

identity = access.require_role("researcher")
st.title("Studies")

protocols = all_protocols()
studies = study_admin.list_studies()

CREATED = "studies-created"  # the message of a study just created, shown after the rerun that lists it
CREATE_FIELDS = ("create-slug", "create-title", "create-code", "create-screened", "create-constants", "create-cap",
                 "create-prolific-study")
if (created := st.session_state.pop(CREATED, None)) is not None:
    st.success(created)

with st.expander("Create a study", expanded=not studies):
    with st.form("create-study"):
        protocol = st.selectbox("Protocol (from studies/)", sorted(protocols),
                                format_func=lambda n: f"{n} — {protocols[n].title}")
        slug = st.text_input("Study name in the link (lowercase, digits, dashes)", key="create-slug")
        title = st.text_input("Title shown to participants (optional)", key="create-title",
                              help=f"At most {study_admin.MAX_TITLE_LENGTH} characters.")
        code = st.text_input("Completion code (from Prolific; optional)", key="create-code",
                             help="1 to 40 letters, digits, '-' or '_', as Prolific gives it.")
        screened = st.text_input("Screened-out code (optional)", key="create-screened",
                                 help="1 to 40 letters, digits, '-' or '_'.")
        cap = st.number_input("Most participants (optional)", min_value=1, max_value=study_admin.MAX_PARTICIPANTS,
                              value=None, step=1, key="create-cap", placeholder="no limit",
                              help="New participant ids beyond this are turned away, screened-out ones included; "
                                   "set it a little above the places you recruit.")
        prolific_study = st.text_input("Prolific study id (optional)", key="create-prolific-study",
                                       help="The 24-character id of the Prolific study; links carrying another "
                                            "STUDY_ID are refused.")
        constants_text = st.text_area(
            "Constants to change (JSON object, optional)", key="create-constants", height=120,
            placeholder='{"INTERACTIONS": 10}',
            help="Override the protocol's constants (see below) for this study only: targets, rounds, rules, "
                 "conditions... Values are data, checked against the protocol; nothing typed here is run as code.")
        is_open = st.checkbox("Open for participants now", value=True)
        if st.form_submit_button("Create study", type="primary"):
            config = {k: v for k, v in {"completion_code": code.strip(), "screened_out_code": screened.strip(),
                                        "prolific_study_id": prolific_study.strip()}.items() if v}
            if cap is not None:
                config["max_participants"] = int(cap)
            try:
                overrides = study_admin.parse_constants(constants_text)
                if overrides:
                    config["constants"] = overrides
                study_admin.create_study(slug.strip(), protocol, title=title.strip(), config=config,
                                         is_open=is_open, created_by=identity.user_id)
            except (LinkError, StudyError) as exc:
                st.error(str(exc))
            else:
                st.session_state[CREATED] = f"Created study '{slug.strip()}'."
                for key in CREATE_FIELDS:  # an empty form for the next study; kept as typed on an error
                    st.session_state.pop(key, None)
                st.rerun()

    with st.popover("Protocol constants"):
        st.caption("Defaults of each protocol; override any of them above.")
        st.json(study_admin.default_constants(protocol), expanded=1)

if not studies:
    st.info("No studies yet.")
    st.stop()

st.dataframe(pd.DataFrame([s.__dict__ for s in studies]), hide_index=True, width="stretch")
chosen = st.selectbox("Study", [s.slug for s in studies], key="studies-chosen")
study = next(s for s in studies if s.slug == chosen)

left, right = st.columns(2)
with left:
    st.subheader(study.title)
    st.write(f"Protocol `{study.protocol}` — **{'open' if study.is_open else 'closed'}**")
    if st.button("Close study" if study.is_open else "Open study", key="toggle-open"):
        study_admin.set_open(study.slug, not study.is_open)
        st.rerun()
    st.caption("Closing stops new participants; those already in can finish.")
with right:
    st.subheader("Participant links")
    for panel, link in study_admin.participant_links(study.slug).items():
        st.caption(panel)
        st.code(link, language=None, wrap_lines=True)  # wrapped: a scrolling box needs keyboard focus (WCAG 2.1.1)


@st.fragment(run_every="5s")
def show_progress(slug: str) -> None:
    rows = study_admin.progress(slug)
    frame = pd.DataFrame([{"condition": r.condition, "active": r.active, "completed": r.completed,
                           "screened out": r.screened_out} for r in rows])
    st.subheader("Progress by condition")
    st.dataframe(frame, hide_index=True)
    long = frame.melt(id_vars="condition", var_name="status", value_name="participants")
    st.plotly_chart(px.bar(long, x="condition", y="participants", color="status", barmode="stack", height=300))


show_progress(study.slug)

st.subheader("Export")
st.caption("CSV, JSONL, data dictionary, config and a README. The zip is made when you click, straight from the "
           "database, and the server drops its copy within seconds of the download.")
pseudonymise = st.checkbox("Pseudonymise participant ids (for sharing outside the lab)", key="export-pseudonymise",
                           help="Panel ids (PROLIFIC_PID, workerId, SESSION_ID...) become keyed hashes, the same "
                                "in every file and every export of this installation.")
key_problem = pseudonym_key_problem() if pseudonymise else None
if key_problem:
    st.error(key_problem)
# data= a callable: nothing sits in the server's media store until the click, and the file made
# then is unreferenced, so Streamlit deletes it after the next runs (a static `data=bytes` would
# stay downloadable at its /media/ address, without login, for as long as the button is shown).
st.download_button("Download export (.zip)", functools.partial(export_zip, study.slug, pseudonymise=pseudonymise),
                   file_name=zip_name(study.slug, pseudonymised=pseudonymise), mime="application/zip",
                   key="download-export", disabled=bool(key_problem))
