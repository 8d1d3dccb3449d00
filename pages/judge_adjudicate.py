"""Annotate: decide items whose labels disagree (harmful vs not, or scores 2 or more apart)."""

import streamlit as st

from engines.judge import labeling, review
from engines.judge.items import SCALE
from pages import _access as access

PAGE = {"title": "Adjudicate", "group": "Annotate", "roles": ["researcher"], "icon": ":material/gavel:",
        "order": 10}

identity = access.require_role("researcher")
st.title("Adjudicate")

projects = labeling.list_projects()
if not projects:
    st.info("No labeling project yet.")
    st.stop()
slug = st.selectbox("Project", [p.slug for p in projects], key="judge-adjudicate-project")
waiting = review.disagreements(slug)
if not waiting:
    st.success("No disagreement waits for a decision.")
    st.stop()

st.caption(f"{len(waiting)} item(s) wait for a decision.")
item = waiting[0]
st.markdown("**Request (behaviour)**")
st.text(item.behavior)
if item.context_string:
    st.markdown("**Context**")
    st.text(item.context_string)
st.markdown("**Response (generation)**")
with st.container(border=True):
    st.text(item.generation)

st.markdown("**The labels**")
for number, (column, (_annotator, score)) in enumerate(zip(st.columns(len(item.labels)), item.labels, strict=True)):
    column.metric(f"Label {number + 1}", score)  # who gave it stays hidden: decide on the text
    column.caption(SCALE[score])

note = st.text_input(f"Note (optional, at most {labeling.RATIONALE_CHARS:,} characters)",
                     key=f"judge-adjudicate-note-{item.key}")
st.markdown("**Decision**")
for column, (score, text) in zip(st.columns(5), SCALE.items(), strict=True):
    if column.button(f"{score} · {text.split(':')[0]}", key=f"judge-decide-{score}", shortcut=str(score),
                     help=text, width="stretch"):
        try:
            review.adjudicate(slug, item.key, score, f"user:{identity.user_id}", note=note)
        except labeling.LabelingError as exc:  # the note stays in its box
            st.error(str(exc))
        else:
            st.rerun()
