"""Invitations: their one-time passwords expire after ``invitation_hours``, an expired one is renewed by
inviting again, and the answer is the same whether a name has an account or not."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engines.judge import invites, labeling
from engines.judge.items import Item
from engines.platform import auth, login_throttle
from tests.apptest_driver import page_as

START = datetime(2031, 5, 1, 9, 0, 0, tzinfo=UTC)
HOURS_72 = timedelta(hours=72)


@pytest.fixture
def clock(monkeypatch):
    now = {"t": START}
    for module in (auth, login_throttle, invites):
        monkeypatch.setattr(module, "utcnow", lambda: now["t"])

    def set_to(t: datetime) -> None:
        now["t"] = t

    return set_to


@pytest.fixture
def project(sqlite_db) -> str:
    items = [Item(key=f"m/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m",
                  attack="direct", generation=f"generation {i}") for i in range(3)]
    labeling.create_project("wave-1", items, labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0))
    return "wave-1"


def test_an_invitation_password_stops_working_after_the_invitation_hours(project, clock):
    (invited,) = invites.invite_annotators(project, ["ann"])
    assert invited.expires_at == START + HOURS_72
    clock(START + HOURS_72 - timedelta(seconds=1))
    assert auth.authenticate("ann", invited.temporary_password).role == "annotator"
    clock(START + HOURS_72)
    with pytest.raises(auth.PasswordExpired, match="Ask for a new invitation"):
        auth.authenticate("ann", invited.temporary_password)


def test_the_invitation_hours_setting_sets_the_lifetime(project, clock, monkeypatch):
    from engines.platform.settings import reset_settings

    monkeypatch.setenv("HAI_INVITATION_HOURS", "2")
    reset_settings()
    (invited,) = invites.invite_annotators(project, ["ann"])
    assert invited.expires_at == START + timedelta(hours=2)
    clock(START + timedelta(hours=2))
    with pytest.raises(auth.PasswordExpired):
        auth.authenticate("ann", invited.temporary_password)


def test_inviting_again_renews_an_expired_invitation(project, clock):
    (first,) = invites.invite_annotators(project, ["ann"])
    clock(START + HOURS_72 + timedelta(hours=1))
    (second,) = invites.invite_annotators(project, ["ann"])
    assert second.temporary_password != first.temporary_password
    identity = auth.authenticate("ann", second.temporary_password)
    assert identity.role == "annotator" and auth.must_change_password(identity.user_id)
    with pytest.raises(auth.AuthError, match="Wrong username or password."):
        auth.authenticate("ann", first.temporary_password)
    clock(START + HOURS_72 + timedelta(hours=1) + HOURS_72)
    with pytest.raises(auth.PasswordExpired):
        auth.authenticate("ann", second.temporary_password)


def test_inviting_again_does_not_take_over_a_password_that_still_works(project, clock):
    """Whoever invites second must not get a working password for an account someone else holds."""
    (first,) = invites.invite_annotators(project, ["ann"])
    (second,) = invites.invite_annotators(project, ["ann"])
    assert auth.authenticate("ann", first.temporary_password).username == "ann"
    with pytest.raises(auth.AuthError, match="Wrong username or password."):
        auth.authenticate("ann", second.temporary_password)


def test_an_expired_reset_of_another_roles_account_is_never_renewed_by_an_invitation(project, clock):
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.set_password("boss", "reset-by-root-1", must_change=True, expires_after=HOURS_72)
    clock(START + HOURS_72 + timedelta(hours=1))
    (invited,) = invites.invite_annotators(project, ["boss"])
    with pytest.raises(auth.AuthError, match="Wrong username or password."):
        auth.authenticate("boss", invited.temporary_password)


def test_the_answer_is_the_same_whether_a_name_has_an_account(project, clock, monkeypatch):
    auth.create_user("lead", "a-test-passphrase", "researcher")
    auth.create_user("boss", "head-of-lab-pw", "admin")
    auth.create_user("kept", "keeps-own-pw-1", "annotator")
    auth.create_user("gone", "was-here-pw-1", "annotator")
    auth.update_user("gone", is_active=False)
    hashed = []
    real_hash = auth.hash_password
    monkeypatch.setattr(auth, "hash_password", lambda password: hashed.append(password) or real_hash(password))
    names = ["new-one", "lead", "boss", "kept", "gone"]
    invited = invites.invite_annotators(project, names, base_url="https://studies.example.org")
    # Every row alike: the name, a fresh 16-character password, the link, the expiry; no refusal for
    # the disabled account; and the same work (one Argon2 hash) for each name.
    assert [i.username for i in invited] == names
    assert {len(i.temporary_password) for i in invited} == {16}
    assert len({i.temporary_password for i in invited}) == len(names)
    assert {(i.link, i.expires_at) for i in invited} == {
        ("https://studies.example.org/judge-label?project=wave-1", START + HOURS_72)}
    assert len(hashed) == len(names)
    # Only the new name got an account; the others keep their passwords, and their rows' log no one in.
    assert auth.authenticate("new-one", invited[0].temporary_password).role == "annotator"
    for invitation, own in zip(invited[1:4], ["a-test-passphrase", "head-of-lab-pw", "keeps-own-pw-1"], strict=True):
        with pytest.raises(auth.AuthError, match="Wrong username or password."):
            auth.authenticate(invitation.username, invitation.temporary_password)
        assert auth.authenticate(invitation.username, own).username == invitation.username
    assert [u.username for u in auth.list_users() if not u.is_active] == ["gone"]


def test_the_page_lists_every_name_alike(project):
    auth.create_user("kept", "keeps-own-pw-1", "annotator")
    at = page_as("judge_projects", "researcher")
    at.text_area(key="judge-invite-names").input("ann1\nkept")
    next(b for b in at.button if b.label == "Invite").click().run()
    assert not at.exception, at.exception
    (block,) = [c.value for c in at.code]
    rows = [line.split("\t") for line in block.splitlines()]
    assert [(r[0], len(r[1]), r[2]) for r in rows] == [
        ("ann1", 16, "http://localhost:8501/judge-label?project=wave-1"),
        ("kept", 16, "http://localhost:8501/judge-label?project=wave-1")]
