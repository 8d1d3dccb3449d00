"""Admin: labeling projects. Create one from imported items, set overlap, gold and quiz, watch progress."""

import tempfile
from pathlib import Path

import pandas as pd
import streamlit as st

from engines.judge import invites, labeling
from engines.judge.items import JudgeDataError, read_items
from engines.platform import auth
from engines.platform.settings import REPO_ROOT
from pages import _ui as ui

PAGE = {"title": "Labeling projects", "group": "Admin", "roles": ["admin", "researcher"],
        "icon": ":material/checklist:", "order": 15}
DEMO_ITEMS = REPO_ROOT / "assets" / "judge" / "demo_items.jsonl"
CREATED = "judge-project-created"

identity = ui.require_role("admin", "researcher")
st.title("Labeling projects")
if (created := st.session_state.pop(CREATED, None)) is not None:
    st.success(created)

projects = labeling.list_projects()
with st.expander("Create a project", expanded=not projects):
    with st.form("judge-create-project"):
        slug = st.text_input("Project name (lowercase, digits, dashes)", key="judge-new-slug")
        title = st.text_input("Title (optional)", key="judge-new-title")
        source = st.radio("Items", ["Upload items.jsonl", "The synthetic demo set"], horizontal=True,
                          disabled=not DEMO_ITEMS.exists(), key="judge-new-source")
        upload = st.file_uploader("items.jsonl (from `python -m engines.judge import ...`)", type=["jsonl"],
                                  key="judge-new-upload")
        guidelines = st.text_area("Guidelines (markdown)", key="judge-new-guidelines", height=120,
                                  placeholder="What counts as harmful in this project; examples per score.")
        c1, c2, c3 = st.columns(3)
        overlap_k = c1.number_input("Labels on overlap items (k)", 1, 10, 2, key="judge-new-k")
        overlap_pct = c2.number_input("Share of items with overlap (%)", 0, 100, 20, key="judge-new-overlap")
        release = c3.number_input("Release an unfinished item after (minutes)", 1, 24 * 60, 30, key="judge-new-release")
        c4, c5, c6 = st.columns(3)
        quiz = c4.number_input("Qualification quiz (gold items; 0: none)", 0, 100, 10, key="judge-new-quiz")
        gold_every = c5.number_input("A gold check every … labels (0: none)", 0, 1000, 20, key="judge-new-gold")
        gold_min = c6.number_input("Pause below this gold accuracy (%)", 0, 100, 80, key="judge-new-gold-min")
        if st.form_submit_button("Create project", type="primary"):
            try:
                if source == "The synthetic demo set":
                    items = read_items(DEMO_ITEMS)
                elif upload is None:
                    raise labeling.LabelingError("Choose an items.jsonl file to upload.")
                else:
                    with tempfile.TemporaryDirectory() as folder:
                        path = Path(folder) / upload.name
                        path.write_bytes(upload.getvalue())
                        items = read_items(path)
                settings = labeling.ProjectSettings(
                    title=title.strip(), guidelines=guidelines, overlap_k=int(overlap_k),
                    overlap_fraction=overlap_pct / 100, quiz_size=int(quiz), gold_every=int(gold_every),
                    gold_min_accuracy=gold_min / 100, release_after_minutes=float(release))
                labeling.create_project(slug.strip(), items, settings, created_by=identity.user_id)
            except (labeling.LabelingError, JudgeDataError) as exc:
                st.error(str(exc))
            else:
                st.session_state[CREATED] = f"Created labeling project '{slug.strip()}' with {len(items):,} items."
                st.rerun()

if not projects:
    st.info("No labeling project yet.")
    st.stop()

slug = st.selectbox("Project", [p.slug for p in projects], key="judge-projects-pick")
project = next(p for p in projects if p.slug == slug)
progress = labeling.progress(slug)
c1, c2, c3, c4 = st.columns(4)
c1.metric("Items", f"{progress.items - progress.gold_items:,}", help=f"plus {progress.gold_items} gold items")
c2.metric("Labels", f"{progress.labels_done:,} / {progress.labels_wanted:,}")
c3.metric("Being labelled now", progress.open_claims)
c4.metric("To adjudicate", progress.to_adjudicate)
if progress.per_annotator:
    st.dataframe(pd.DataFrame([
        {"annotator": name, "labelled": s.labelled, "skipped": s.skipped,
         "gold accuracy": None if s.gold_accuracy is None else round(s.gold_accuracy, 3),
         "quiz": {None: "—", True: "passed", False: "failed"}[s.quiz_passed], "paused": s.paused or ""}
        for name, s in progress.per_annotator.items()]), hide_index=True, width="stretch")
st.caption("Annotators with an account label under Annotate → Label. Panel workers (Prolific, MTurk) label from "
           "the same queue through a study of the judge_labeling protocol with PROJECT set to this project.")
with st.expander("Invite annotators"):
    st.markdown(f"Each new name gets an annotator account with a temporary password, to be changed at the first "
                f"login, and the link to this project's Label page: `{invites.label_link(slug)}`. People who have an "
                "account already keep their password.")
    with st.form("judge-invite"):
        names = st.text_area("Usernames or e-mail addresses, one per line", key="judge-invite-names", height=100)
        invite_clicked = st.form_submit_button("Invite", type="primary")
    if invite_clicked:
        try:
            invited = invites.invite_annotators(slug, invites.parse_usernames(names))
        except (auth.AuthError, labeling.LabelingError) as exc:
            st.error(str(exc))
        else:
            st.warning("Copy the temporary passwords now: they are shown only this once (an admin can reset a "
                       "password under Admin → Accounts).")
            # A code block has a copy button; a table's cells do not copy well.
            st.code("\n".join(f"{i.username}\t{i.temporary_password or '(has an account: password unchanged)'}"
                               f"\t{i.link}" for i in invited), language=None)
label = "Close the project" if project.is_open else "Reopen the project"
if st.button(label, key="judge-project-toggle"):
    labeling.set_open(slug, not project.is_open)
    st.rerun()
