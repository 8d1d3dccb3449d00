"""Admin: labeling projects. Create one from imported items, set overlap, gold and quiz, watch progress,
and choose who is on each project's team (annotator accounts label only the projects they are on)."""

import pandas as pd
import streamlit as st

from engines.judge import invites, labeling, members, review, uploads
from engines.judge.items import JudgeDataError, read_items
from engines.judge.study.plan import project_summary
from engines.platform import auth
from engines.platform.settings import REPO_ROOT, get_settings
from engines.platform.uploads import remove_stored
from pages import _access as access
from pages._upload import file_input

PAGE = {"title": "Labeling projects", "group": "Admin", "roles": ["admin", "researcher"],
        "icon": ":material/checklist:", "order": 15}
DEMO_ITEMS = REPO_ROOT / "assets" / "judge" / "demo_items.jsonl"
CREATED = "judge-project-created"

identity = access.require_role("admin", "researcher")
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
        upload = file_input("items.jsonl (from `python -m engines.judge import ...`)", kind="jsonl", area="judge",
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
            # A file chosen but refused: file_input says why beside the picker.
            refused = upload is None and st.session_state.get("judge-new-upload") is not None
            try:
                if source == "The synthetic demo set":
                    items = read_items(DEMO_ITEMS)
                elif upload is None:
                    raise labeling.LabelingError("The items file was not accepted (see above)." if refused
                                                 else "Choose an items.jsonl file to upload.")
                else:
                    items = uploads.read_stored_items(upload)  # errors name the file as the browser did
                settings = labeling.ProjectSettings(
                    title=title.strip(), guidelines=guidelines, overlap_k=int(overlap_k),
                    overlap_fraction=overlap_pct / 100, quiz_size=int(quiz), gold_every=int(gold_every),
                    gold_min_accuracy=gold_min / 100, release_after_minutes=float(release))
                labeling.create_project(slug.strip(), items, settings, created_by=identity.user_id)
            except (labeling.LabelingError, uploads.UploadError, JudgeDataError) as exc:
                st.error(str(exc))
            else:
                if source != "The synthetic demo set":
                    remove_stored(upload)  # the project holds the items now
                st.session_state[CREATED] = (f"Created labeling project '{slug.strip()}' with {len(items):,} items. "
                                             "Add annotators to its team below.")
                st.rerun()

if not projects:
    st.info("No labeling project yet.")
    st.stop()

slug = st.selectbox("Project", [p.slug for p in projects], key="judge-projects-pick")
project = next(p for p in projects if p.slug == slug)
progress = review.progress(slug)
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
st.caption("Annotator accounts on the project's team label under Annotate → Label (researchers and admins may "
           "label any project). Panel workers (Prolific, MTurk) need no account: they label from the same queue "
           "through a study of the judge_labeling protocol with PROJECT set to this project.")
st.caption(project_summary(slug))

st.subheader("Team")
team = members.members_of(slug)
if team:
    st.dataframe(pd.DataFrame([{"username": m.username, "role": m.role, "active": m.is_active,
                                "added": m.added_at.strftime("%Y-%m-%d %H:%M")} for m in team]),
                 hide_index=True, width="stretch")
else:
    st.info("Nobody is on this project's team yet: annotator accounts cannot label it until you add them.")
with st.form("judge-team-add"):
    names = st.text_area("Add accounts to the team: usernames, one per line", key="judge-team-names", height=80)
    add_clicked = st.form_submit_button("Add to the team")
if add_clicked:
    try:
        added = members.add_members(slug, invites.parse_usernames(names), added_by=identity.user_id)
    except labeling.LabelingError as exc:
        st.error(str(exc))
    else:
        st.session_state[CREATED] = (f"Added {', '.join(added)} to the team of '{slug}'." if added
                                     else "They were on the team already.")
        st.rerun()
if team:
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    leaving = left.selectbox("Take off the team", [m.username for m in team], key="judge-team-remove-name")
    if right.button("Remove", key="judge-team-remove"):
        members.remove_member(slug, leaving)
        st.session_state[CREATED] = f"Took {leaving} off the team of '{slug}'; the items they held go back to the queue."
        st.rerun()
with st.expander("Who is on which project"):
    st.dataframe(pd.DataFrame([{"project": name, "team": ", ".join(people) or "—"}
                               for name, people in members.teams().items()]), hide_index=True, width="stretch")

with st.expander("Invite annotators"):
    hours = get_settings().invitation_hours
    st.markdown(f"Each name gets a one-time password, valid for {hours:g} hours and changed at the first login, "
                f"and the link to this project's Label page: `{invites.label_link(slug)}`. Someone who already has "
                "an account keeps their own password and can ignore the one shown (the list does not say who has "
                "an account; an annotator whose one-time password expired gets a new one). Everyone invited is "
                "put on this project's team.")
    with st.form("judge-invite"):
        names = st.text_area("Usernames or e-mail addresses, one per line", key="judge-invite-names", height=100)
        invite_clicked = st.form_submit_button("Invite", type="primary")
    if invite_clicked:
        try:
            invited = invites.invite_annotators(slug, invites.parse_usernames(names), added_by=identity.user_id)
        except (auth.AuthError, labeling.LabelingError) as exc:
            st.error(str(exc))
        else:
            expires = min(i.expires_at for i in invited)
            st.warning(f"Copy the one-time passwords now: they are shown only this once, and stop working at "
                       f"{expires:%Y-%m-%d %H:%M} UTC (an admin can reset a password under Admin → Accounts).")
            # A code block has a copy button; a table's cells do not copy well.
            st.code("\n".join(f"{i.username}\t{i.temporary_password}\t{i.link}" for i in invited), language=None)
label = "Close the project" if project.is_open else "Reopen the project"
if st.button(label, key="judge-project-toggle"):
    labeling.set_open(slug, not project.is_open)
    st.rerun()
