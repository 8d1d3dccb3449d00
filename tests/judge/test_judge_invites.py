"""Inviting annotators: accounts with temporary passwords that must be changed, links that open the
project, existing accounts left alone, and a bad list refused before any account is made."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from engines.judge import invites, labeling, members
from engines.judge.items import Item
from engines.platform import auth
from tests.apptest_driver import ROOT, page_as


def _project(slug: str = "wave-1") -> str:
    items = [Item(key=f"m/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m",
                  attack="direct", generation=f"generation {i}") for i in range(3)]
    labeling.create_project(slug, items, labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    return slug


def test_new_names_get_annotator_accounts_that_must_change_the_temporary_password(sqlite_db):
    slug = _project()
    auth.create_user("lead", "a-test-passphrase", "researcher")
    invited = invites.invite_annotators(slug, ["ann.one@example.org", "lead"],
                                        base_url="https://studies.example.org/")
    assert [(i.username, i.link) for i in invited] == [
        ("ann.one@example.org", "https://studies.example.org/judge-label?project=wave-1"),
        ("lead", "https://studies.example.org/judge-label?project=wave-1")]
    new, existing = invited
    # An existing account keeps its password; its row's password (there so that the answer does not
    # say who has an account) logs no one in.
    with pytest.raises(auth.AuthError, match="Wrong username or password."):
        auth.authenticate("lead", existing.temporary_password)
    identity = auth.authenticate("ann.one@example.org", new.temporary_password)
    assert identity.role == "annotator" and auth.must_change_password(identity.user_id)
    assert auth.authenticate("lead", "a-test-passphrase").role == "researcher"


def test_a_list_with_a_bad_name_invites_nobody(sqlite_db):
    slug = _project()
    with pytest.raises(auth.AuthError) as refused:
        invites.invite_annotators(slug, ["good-name", "has space?"])
    assert str(refused.value) == ("'has space?': Username must be 2-64 letters, digits or _.@+- characters. "
                                  "Nobody was invited.")
    assert auth.list_users() == []


def test_a_closed_or_unknown_project_cannot_be_invited_to(sqlite_db):
    slug = _project()
    labeling.set_open(slug, False)
    with pytest.raises(labeling.LabelingError, match="closed; reopen it"):
        invites.invite_annotators(slug, ["someone"])
    with pytest.raises(labeling.LabelingError, match="no labeling project called 'nope'"):
        invites.invite_annotators("nope", ["someone"])
    labeling.set_open(slug, True)
    with pytest.raises(auth.AuthError, match="at least one username"):
        invites.invite_annotators(slug, [])


def test_usernames_are_read_one_per_line_or_separated_by_commas():
    assert invites.parse_usernames(" a@x.org, b\n\nc  a@x.org\n") == ["a@x.org", "b", "c"]


def test_the_page_invites_and_shows_each_temporary_password_once(sqlite_db):
    slug = _project()
    at = page_as("judge_projects", "researcher")
    at.text_area(key="judge-invite-names").input("ann1\nann2")
    next(b for b in at.button if b.label == "Invite").click().run()
    assert not at.exception, at.exception
    (block,) = [c.value for c in at.code]
    rows = [line.split("\t") for line in block.splitlines()]
    assert [(r[0], r[2]) for r in rows] == [("ann1", f"http://localhost:8501/judge-label?project={slug}"),
                                             ("ann2", f"http://localhost:8501/judge-label?project={slug}")]
    assert auth.authenticate("ann2", rows[1][1]).role == "annotator"
    assert [m.username for m in members.members_of(slug)] == ["ann1", "ann2"]  # invited onto the team
    at.run()  # the next run of the page no longer shows them
    assert [c.value for c in at.code] == []


def test_the_invitation_link_opens_its_project_on_the_label_page(sqlite_db):
    _project("wave-1")
    _project("wave-2")
    identity = auth.create_user("ann", "a-test-passphrase", "annotator")
    members.add_members("wave-1", ["ann"])
    members.add_members("wave-2", ["ann"])
    at = AppTest.from_file(str(ROOT / "pages" / "judge_label.py"), default_timeout=60)
    at.session_state["hai_token"] = auth.start_login_session(identity)
    at.query_params["project"] = "wave-2"
    at.run()
    assert at.selectbox(key="judge-label-project").value == "wave-2"
