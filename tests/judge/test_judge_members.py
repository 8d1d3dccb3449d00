"""Project teams: annotator accounts label only the projects they are on (every labeling call checks
it), researchers and admins label any, study participants are admitted by their study; a member
taken off gives back the items held."""

from __future__ import annotations

import pytest
from sqlmodel import select

from engines.judge import labeling, labeling_queue, members, review
from engines.judge.items import Item
from engines.judge.labeling import LabelingError, NotAMember, ProjectSettings
from engines.judge.models import LabelingClaim, LabelingMember
from engines.platform import auth
from engines.platform.db import read_session, write_transaction

NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)
REFUSED = ("You are not on the team of the labeling project 'p1': a researcher adds annotators to a project under "
           "Admin → Labeling projects.")


def _items(n: int) -> list[Item]:
    return [Item(key=f"m1/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m1",
                 attack="direct", generation=f"generation {i}") for i in range(n)]


def _account(name: str, role: str = "annotator") -> str:
    return f"user:{auth.create_user(name, 'a-test-passphrase', role).user_id}"


def test_an_annotator_off_the_team_can_neither_take_nor_label_nor_skip_nor_undo(sqlite_db):
    labeling.create_project("p1", _items(3), NO_GOLD)
    outsider = _account("outsider")
    for call in (lambda: labeling_queue.next_item("p1", outsider), lambda: labeling_queue.undo_last("p1", outsider)):
        with pytest.raises(NotAMember) as refused:
            call()
        assert str(refused.value) == REFUSED
    assert labeling_queue.has_item_for("p1", outsider) is False
    assert labeling_queue.shown_item("p1", outsider) is None
    with read_session() as session:
        assert session.exec(select(LabelingClaim)).all() == []  # nothing was claimed for them


def test_a_member_labels_and_a_member_taken_off_is_refused_and_gives_the_item_back(sqlite_db):
    labeling.create_project("p1", _items(2), NO_GOLD)
    annotator = _account("ann")
    assert members.add_members("p1", ["ann"]) == ["ann"]
    assert members.add_members("p1", ["ann"]) == []  # on it already: nothing added twice
    first = labeling_queue.next_item("p1", annotator)
    labeling_queue.submit_label(first.claim_id, annotator, 2)
    held = labeling_queue.next_item("p1", annotator)
    assert members.remove_member("p1", "ann") is True
    with pytest.raises(NotAMember, match="not on the team of the labeling project 'p1'"):
        labeling_queue.next_item("p1", annotator)
    for call in (lambda: labeling_queue.submit_label(held.claim_id, annotator, 4),
                 lambda: labeling_queue.skip(held.claim_id, annotator, "empty")):
        with pytest.raises(LabelingError, match="This item is not yours to label"):
            call()
    # The held item went back to the queue at once; the label given stays.
    assert labeling_queue.next_item("p1", "someone-else").key == held.key
    assert [lb.score for item in review.labelled_items("p1") for lb in item.labels] == [2]
    assert members.remove_member("p1", "ann") is False


def test_a_claim_taken_while_on_the_team_is_not_labelled_after_leaving_it(sqlite_db):
    labeling.create_project("p1", _items(2), NO_GOLD)
    annotator = _account("ann")
    members.add_members("p1", ["ann"])
    held = labeling_queue.next_item("p1", annotator)
    with write_transaction() as session:  # off the team some other way than remove_member: the claim stays
        for row in session.exec(select(LabelingMember)).all():
            session.delete(row)
    for call in (lambda: labeling_queue.submit_label(held.claim_id, annotator, 4),
                 lambda: labeling_queue.skip(held.claim_id, annotator, "empty")):
        with pytest.raises(NotAMember) as refused:
            call()
        assert str(refused.value) == REFUSED
    assert [lb for item in review.labelled_items("p1") for lb in item.labels] == []


def test_a_member_of_one_project_is_not_a_member_of_another(sqlite_db):
    labeling.create_project("p1", _items(1), NO_GOLD)
    labeling.create_project("p2", _items(1), NO_GOLD)
    annotator = _account("ann")
    members.add_members("p2", ["ann"])
    assert labeling_queue.next_item("p2", annotator) is not None
    with pytest.raises(NotAMember):
        labeling_queue.next_item("p1", annotator)
    assert [p.slug for p in members.projects_to_label(int(annotator.split(":")[1]), "annotator")] == ["p2"]


@pytest.mark.parametrize("role", ["researcher", "admin"])
def test_researchers_and_admins_label_any_project(sqlite_db, role):
    labeling.create_project("p1", _items(1), NO_GOLD)
    person = _account("lead", role)
    shown = labeling_queue.next_item("p1", person)
    labeling_queue.submit_label(shown.claim_id, person, 3)
    assert [p.slug for p in members.projects_to_label(int(person.split(":")[1]), role)] == ["p1"]


def test_a_disabled_or_unknown_account_is_refused(sqlite_db):
    labeling.create_project("p1", _items(1), NO_GOLD)
    annotator = _account("ann")
    members.add_members("p1", ["ann"])
    auth.update_user("ann", is_active=False)
    with pytest.raises(NotAMember):
        labeling_queue.next_item("p1", annotator)
    for name in ("user:999", "user:abc", "user:"):
        with pytest.raises(NotAMember):
            labeling_queue.next_item("p1", name)


def test_study_participants_need_no_account_membership(sqlite_db):
    labeling.create_project("p1", _items(1), NO_GOLD)
    participant = "study:judge-labeling:PROLIFIC123"
    shown = labeling_queue.next_item("p1", participant)
    labeling_queue.submit_label(shown.claim_id, participant, 1)


def test_adding_unknown_names_adds_nobody_and_quotes_the_name_short(sqlite_db):
    labeling.create_project("p1", _items(1), NO_GOLD)
    auth.create_user("ann", "a-test-passphrase", "annotator")
    with pytest.raises(LabelingError) as refused:
        members.add_members("p1", ["ann", "x" * 5000, "nobody"])
    assert str(refused.value).startswith("No account is called 'xxxx")
    assert str(refused.value).endswith("… (nor 1 other name(s)): nobody was added. Invite new people instead.")
    assert len(str(refused.value)) < 250
    assert members.members_of("p1") == []
    with pytest.raises(LabelingError, match="no labeling project called 'nope'"):
        members.add_members("nope", ["ann"])


def test_teams_say_who_is_on_which_project(sqlite_db):
    labeling.create_project("p1", _items(1), NO_GOLD)
    labeling.create_project("p2", _items(1), NO_GOLD)
    for name in ("bea", "al"):
        auth.create_user(name, "a-test-passphrase", "annotator")
    members.add_members("p1", ["bea", "al"])
    assert members.teams() == {"p1": ["al", "bea"], "p2": []}
    assert [(m.username, m.role) for m in members.members_of("p1")] == [("al", "annotator"), ("bea", "annotator")]
