"""Research: set up a new collaboration study. Conditions, targets and rules as data, then a study link."""

import pandas as pd
import streamlit as st

from engines.collab.study import setup as study_setup
from engines.platform import study_admin
from engines.platform.panels import LinkError
from engines.platform.runtime import StudyError
from pages import _access as access
from pages import _research_widgets as widgets

PAGE = {"title": "Collaboration: new study", "group": "Research", "roles": ["researcher"],
        "icon": ":material/add_circle:", "order": 50}

identity = access.require_role("researcher")
st.title("Set up a new collaboration study")
st.caption("One row per condition: *online* (the controller moves its thresholds), *fixed* (calibrated once, "
           "then frozen) or *none* (no AI). The first `calibration_interactions` interactions of an AI "
           "condition fit its starting thresholds. Participants are assigned least-filled over the rows.")

protocol_c = study_admin.default_constants(study_setup.PROTOCOL)
edited = st.data_editor(
    pd.DataFrame(study_setup.condition_rows(protocol_c["CONDITIONS"])), num_rows="dynamic",
    key="setup-conditions", hide_index=True, width="stretch",
    column_config={"mode": st.column_config.SelectboxColumn("mode", options=list(study_setup.MODES), required=True)})
rows = edited.to_dict("records")
pick_left, pick_right = st.columns(2)
with pick_left:
    protect_rule, protect_params = widgets.rule_picker("protect", protocol_c["PROTECT_RULE"]["name"], prefix="setup")
with pick_right:
    supply_rule, supply_params = widgets.rule_picker("supply", protocol_c["SUPPLY_RULE"]["name"], prefix="setup")

with st.form("collab-setup"):
    left, middle, right = st.columns(3)
    slug = left.text_input("Study name in the link", key="setup-slug")
    interactions = middle.number_input("Interactions per participant", 1, protocol_c["INTERACTIONS"],
                                       protocol_c["INTERACTIONS"], key="setup-interactions")
    rounds = right.number_input("Rounds per interaction", 1, protocol_c["ROUNDS"], protocol_c["ROUNDS"],
                                key="setup-rounds")
    feedback = left.selectbox("Feedback after each image", ["truth", "none"], key="setup-feedback")
    title = middle.text_input("Title (optional)", key="setup-title")
    if st.form_submit_button("Create study", type="primary"):
        try:
            constants = study_setup.study_constants(
                conditions=study_setup.conditions_from_rows(rows), protect_rule=protect_rule,
                protect_params=protect_params, supply_rule=supply_rule, supply_params=supply_params,
                interactions=interactions, rounds=rounds, feedback=feedback)
            study_setup.create_collab_study(slug.strip(), constants, title=title.strip(), created_by=identity.user_id)
        except (ValueError, LinkError, StudyError) as exc:
            st.error(str(exc))
        else:
            st.success(f"Created study '{slug.strip()}': its links are in Admin → Studies.")
