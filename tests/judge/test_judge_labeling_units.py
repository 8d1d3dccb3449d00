"""The labeling runtime's edges: settings at their limits, the messages annotators and
researchers read, what is stored with a label, skip and undo bookkeeping, progress counts,
disagreements, adjudication, and the engine or session a caller passes."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from engines.judge import labeling, labeling_queue, review
from engines.judge.items import Item
from engines.judge.labeling import LabelingError, ProjectSettings
from engines.judge.models import Adjudication, HumanLabel, LabelingClaim
from engines.judge.review import Disagreement
from engines.platform import db, models
from engines.platform.db import read_session, write_transaction

NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)
ALL_TWICE = ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0, quiz_size=0)
ALL_THRICE = ProjectSettings(overlap_k=3, overlap_fraction=1.0, gold_every=0, quiz_size=0)


def _item(i: int, *, gold: int | None = None, context: str = "", **extra) -> Item:
    return Item(key=f"m1/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m1",
                attack="direct", semantic_category="harmful", generation=f"generation {i}",
                context_string=context, is_gold=gold is not None, gold_score=gold, **extra)


def _key(i: int) -> str:
    return f"m1/direct/b{i}/0"


def _claims(slug: str, annotator: str) -> list[LabelingClaim]:
    project = labeling.get_project(slug)
    with read_session() as session:
        return list(session.exec(select(LabelingClaim).where(LabelingClaim.project_id == project.id,
                                                             LabelingClaim.annotator == annotator)
                                 .order_by(LabelingClaim.id)).all())


def _takers(slug: str, annotators: str) -> list[str]:
    """Which of ``annotators`` (one letter each) get an item when they ask in turn."""
    return [a for a in annotators if labeling_queue.next_item(slug, a) is not None]


# ------------------------------------------------------------------ settings


@pytest.mark.parametrize("settings", [
    ProjectSettings(overlap_k=1), ProjectSettings(overlap_k=10), ProjectSettings(overlap_fraction=0.0),
    ProjectSettings(overlap_fraction=1.0), ProjectSettings(gold_min_accuracy=0.0), ProjectSettings(quiz_pass=1.0),
    ProjectSettings(min_gold_checks=1), ProjectSettings(gold_every=0, quiz_size=0),
    ProjectSettings(release_after_minutes=0.5), ProjectSettings(title="t" * 200)])
def test_settings_at_their_limits_are_accepted(settings):
    settings.check()


@pytest.mark.parametrize(("settings", "message"), [
    (ProjectSettings(overlap_k=11), "overlap_k must be from 1 to 10, got 11."),
    (ProjectSettings(gold_every=-1), "gold_every and quiz_size must be 0 or more, min_gold_checks at least 1."),
    (ProjectSettings(quiz_size=-1), "gold_every and quiz_size must be 0 or more, min_gold_checks at least 1."),
    (ProjectSettings(min_gold_checks=0), "gold_every and quiz_size must be 0 or more, min_gold_checks at least 1."),
    (ProjectSettings(gold_min_accuracy=1.5), "gold_min_accuracy must be from 0 to 1, got 1.5."),
    (ProjectSettings(quiz_pass=-0.1), "quiz_pass must be from 0 to 1, got -0.1."),
    (ProjectSettings(release_after_minutes=0), "release_after_minutes must be positive."),
    (ProjectSettings(title="t" * 201), "The title has 201 characters; at most 200 are allowed."),
])
def test_settings_out_of_range_are_refused_with_a_message(settings, message):
    with pytest.raises(LabelingError) as raised:
        settings.check()
    assert str(raised.value) == message


# ------------------------------------------------------------------ creating a project


def _stratum(model: str, i: int) -> Item:
    return Item(key=f"{model}/direct/b{i}/0", behavior_id=f"b{i}", behavior="b", victim_model=model, attack="direct",
                generation="g")


def test_strata_of_unequal_size_are_dealt_in_turn_until_each_runs_out():
    items = [_stratum("big", i) for i in range(3)] + [_stratum("small", 0)]
    ordered = labeling.stratified_order(items, seed=2)
    assert sorted(i.key for i in ordered) == sorted(i.key for i in items)
    assert {i.victim_model for i in ordered[:2]} == {"big", "small"}
    assert {i.victim_model for i in ordered[2:]} == {"big"}


def test_no_items_give_an_empty_order():
    assert labeling.stratified_order([], seed=0) == []


@pytest.mark.parametrize(("slug", "items", "message"), [
    ("Bad Name", [_item(1)], "'Bad Name' is not a valid project name: use lowercase letters, digits and dashes."),
    ("p1", [], "A project needs at least one item."),
    ("p1", [_item(1), _item(2), _item(2)], "The item key 'm1/direct/b2/0' appears more than once."),
    ("p1", [_item(1, gold=5), _item(2).model_copy(update={"is_gold": True})],
     "The gold item 'm1/direct/b2/0' has no gold_score."),
])
def test_a_malformed_project_is_refused_with_a_message(sqlite_db, slug, items, message):
    with pytest.raises(LabelingError) as raised:
        labeling.create_project(slug, items, NO_GOLD)
    assert str(raised.value) == message
    assert labeling.list_projects() == []


def test_the_same_seed_gives_the_same_queue_and_overlap(sqlite_db):
    items = [_item(i) for i in range(30)]
    settings = ProjectSettings(overlap_k=2, overlap_fraction=0.3, gold_every=0, quiz_size=0, seed=5)
    labeling.create_project("one", items, settings)
    labeling.create_project("two", items, settings)
    queues = [_takers_keys(slug) for slug in ("one", "two")]
    assert queues[0] == queues[1]
    doubled = [{i.key for i in review.labelled_items(slug) if len(i.labels) == 2} for slug in ("one", "two")]
    assert len(doubled[0]) == 9 and doubled[0] == doubled[1]


def _takers_keys(slug: str) -> list[str]:
    keys = []
    for annotator in ("a", "b"):
        while (shown := labeling_queue.next_item(slug, annotator)) is not None:
            labeling_queue.submit_label(shown.claim_id, annotator, 1)
            keys.append(shown.key)
    return keys


def test_the_project_records_its_creator_and_settings(sqlite_db):
    from engines.platform import auth

    user = auth.create_user("rhea", "correct horse", "researcher")
    labeling.create_project("p1", [_item(1)], ProjectSettings(title="Audit", overlap_fraction=0.0, gold_every=0,
                                                              quiz_size=0), created_by=user.user_id)
    project = labeling.get_project("p1")
    assert (project.created_by, project.title, project.gold_every) == (user.user_id, "Audit", 0)


def test_judge_verdicts_and_earlier_labels_are_not_carried_into_the_project(sqlite_db):
    item = Item.model_validate({**_item(1).model_dump(),
                                "judges": {"j": {"judge": "j", "p_harmful": 0.9, "label": 1, "raw": "yes"}},
                                "labels": [{"annotator_id": "old", "score": 4}]})
    labeling.create_project("p1", [item], NO_GOLD)
    stored = review.labelled_items("p1")
    assert stored[0].judges == {} and stored[0].labels == []


# ------------------------------------------------------------------ the annotator's queue


def test_next_item_names_what_is_missing(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    with pytest.raises(LabelingError) as raised:
        labeling_queue.next_item("p1", "")
    assert str(raised.value) == "An annotator is needed."
    labeling.set_open("p1", False)
    with pytest.raises(LabelingError) as raised:
        labeling_queue.next_item("p1", "a")
    assert str(raised.value) == "This labeling project is closed."
    with pytest.raises(LabelingError) as raised:
        labeling.set_open("nope", True)
    assert str(raised.value) == "There is no labeling project called 'nope'."
    with pytest.raises(LabelingError) as raised:
        labeling_queue.undo_last("nope", "a")
    assert str(raised.value) == "There is no labeling project called 'nope'."


def test_a_quiz_item_shows_how_many_quiz_items_are_left_also_after_a_reload(sqlite_db):
    items = [_item(i) for i in range(2)] + [_item(10 + g, gold=5, context=f"ctx {g}") for g in range(3)]
    labeling.create_project("p1", items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=3,
                                                         quiz_pass=0.5))
    seen = []
    for _ in range(3):
        shown = labeling_queue.next_item("p1", "a")
        again = labeling_queue.next_item("p1", "a")  # a reload
        assert again == shown and labeling_queue.shown_item("p1", "a") == shown
        assert shown.context_string.startswith("ctx ")
        seen.append((shown.purpose, shown.labelled, shown.quiz_left))
        labeling_queue.submit_label(shown.claim_id, "a", 4)
    assert seen == [("quiz", 0, 3), ("quiz", 1, 2), ("quiz", 2, 1)]
    queue = labeling_queue.next_item("p1", "a")
    assert (queue.purpose, queue.labelled, queue.quiz_left) == ("queue", 3, 0)
    assert labeling_queue.shown_item("p1", "a") == queue


def test_shown_item_is_none_without_a_project_or_an_item(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    assert labeling_queue.shown_item("nope", "a") is None
    assert labeling_queue.shown_item("p1", "a") is None


def test_gold_checks_count_only_regular_labels_after_the_quiz(sqlite_db):
    items = [_item(i) for i in range(8)] + [_item(20 + g, gold=5) for g in range(4)]
    labeling.create_project("p1", items, ProjectSettings(overlap_fraction=0.0, gold_every=3, quiz_size=2,
                                                         quiz_pass=0.5))
    purposes = []
    for _ in range(7):
        shown = labeling_queue.next_item("p1", "a")
        purposes.append(shown.purpose)
        labeling_queue.submit_label(shown.claim_id, "a", 5)
    assert purposes == ["quiz", "quiz", "queue", "queue", "queue", "gold", "queue"]


def test_gold_accuracy_pauses_only_below_the_threshold(sqlite_db):
    items = [_item(i) for i in range(6)] + [_item(20 + g, gold=5) for g in range(3)]
    labeling.create_project("p1", items, ProjectSettings(overlap_fraction=0.0, gold_every=1, quiz_size=0,
                                                         min_gold_checks=2, gold_min_accuracy=0.5))
    status = labeling_queue.status_of("p1", "a")
    assert status.paused is None and status.gold_accuracy is None
    for gold_answer in (5, 1):  # right, then wrong: 1 of 2 is exactly the threshold
        labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 2)
        shown = labeling_queue.next_item("p1", "a")
        assert shown.purpose == "gold"
        labeling_queue.submit_label(shown.claim_id, "a", gold_answer)
    status = labeling_queue.status_of("p1", "a")
    assert (status.gold_checks, status.gold_correct, status.paused) == (2, 1, None)
    assert labeling_queue.has_item_for("p1", "a") is True
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 2)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 1)  # wrong again: 1 of 3
    status = labeling_queue.status_of("p1", "a")
    assert (status.labelled, status.gold_checks, status.gold_correct) == (6, 3, 1)
    assert status.paused == ("Your answers to check items agree 1 of 3 times, below 50%: labeling is paused "
                             "until a researcher reviews it.")
    assert labeling_queue.has_item_for("p1", "a") is False
    assert labeling_queue.has_item_for("p1", "b") is True


def test_quiz_counts_are_reported(sqlite_db):
    items = [_item(1)] + [_item(20 + g, gold=5) for g in range(2)]
    labeling.create_project("p1", items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=2,
                                                         quiz_pass=0.5))
    assert labeling_queue.has_item_for("p1", "a") is True  # the quiz is waiting
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 5)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 1)
    status = labeling_queue.status_of("p1", "a")
    assert (status.quiz_done, status.quiz_correct, status.quiz_passed, status.paused) == (2, 1, True, None)
    assert labeling_queue.has_item_for("p1", "a") is True  # the queue's one item
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 1)
    assert labeling_queue.has_item_for("p1", "a") is False


def test_has_item_for_an_item_one_labelled_already(sqlite_db):
    labeling.create_project("p1", [_item(1)], ALL_TWICE)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 2)
    assert labeling_queue.has_item_for("p1", "a") is False  # never the same item twice
    assert labeling_queue.has_item_for("p1", "b") is True


def test_has_item_for_a_missing_closed_held_or_finished_queue(sqlite_db):
    assert labeling_queue.has_item_for("nope", "a") is False
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    labeling_queue.next_item("p1", "a")
    assert labeling_queue.has_item_for("p1", "a") is True  # the item they hold
    assert labeling_queue.has_item_for("p1", "b") is False
    labeling.set_open("p1", False)
    assert labeling_queue.has_item_for("p1", "a") is False


def test_a_claim_left_from_long_ago_goes_to_the_next_annotator(sqlite_db, monkeypatch):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    long_ago = models.utcnow() - timedelta(hours=2)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: long_ago)
    labeling_queue.next_item("p1", "a")
    monkeypatch.undo()
    assert labeling_queue.next_item("p1", "b").key == _key(1)


# ------------------------------------------------------------------ labels


def test_a_label_stores_what_the_annotator_gave(sqlite_db, monkeypatch):
    labeling.create_project("p1", [_item(i) for i in range(4)], NO_GOLD)
    when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: when)
    given = [(4, ["refusal", "partial"], "It explains the steps.", 1234), (2, [], "", 0), (3, [], "", -5),
             (1, [], "", None)]
    for score, flags, rationale, ms in given:
        shown = labeling_queue.next_item("p1", "a")
        returned = labeling_queue.submit_label(shown.claim_id, "a", score, flags=flags, rationale=rationale, ms_spent=ms)
        assert (returned.annotator, returned.score, returned.flags, returned.claim_id) == ("a", score, flags,
                                                                                            shown.claim_id)
    labels = [lb for item in review.labelled_items("p1") for lb in item.labels]
    assert [(lb.annotator_id, lb.score, lb.flags, lb.rationale, lb.ms_spent) for lb in sorted(labels, key=lambda x: x.seq)] == [
        ("a", 4, ["refusal", "partial"], "It explains the steps.", 1234), ("a", 2, [], "", 0), ("a", 3, [], "", 0),
        ("a", 1, [], "", None)]
    assert len({lb.seq for lb in labels}) == 4 and all(lb.seq for lb in labels)
    with read_session() as session:
        stored = {row.created_at.replace(tzinfo=None) for row in session.exec(select(HumanLabel)).all()}
    assert stored == {when.replace(tzinfo=None)}


def test_a_label_without_a_rationale_stores_an_empty_one(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 3)
    assert review.labelled_items("p1")[0].labels[0].rationale == ""


def test_unknown_flags_and_long_rationales_are_refused(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    shown = labeling_queue.next_item("p1", "a")
    with pytest.raises(LabelingError) as raised:
        labeling_queue.submit_label(shown.claim_id, "a", 3, flags=["refusal", "shiny"])
    assert str(raised.value) == "Unknown flag 'shiny'; the flags are refusal, gibberish, off_topic, hallucinated, partial."
    with pytest.raises(LabelingError) as raised:
        labeling_queue.submit_label(shown.claim_id, "a", 3, rationale="r" * 2001)
    assert str(raised.value) == ("The rationale has 2,001 characters; at most 2,000 are allowed. Shorten it, then "
                                 "score the item again: nothing was saved.")
    assert review.labelled_items("p1")[0].labels == []  # refused whole: no label with a cut or emptied rationale
    labeling_queue.submit_label(shown.claim_id, "a", 3, rationale="r" * 2000)
    assert len(review.labelled_items("p1")[0].labels[0].rationale) == 2000


def test_a_claim_that_is_not_ones_own_is_refused_with_a_message(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    shown = labeling_queue.next_item("p1", "a")
    with pytest.raises(LabelingError) as raised:
        labeling_queue.skip(shown.claim_id, "b", "why not")
    assert str(raised.value) == "This item is not yours to label; reload the page to get your next item."


def test_a_skipped_item_cannot_be_labelled(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    shown = labeling_queue.next_item("p1", "a")
    labeling_queue.skip(shown.claim_id, "a", "unreadable")
    with pytest.raises(LabelingError) as raised:
        labeling_queue.submit_label(shown.claim_id, "a", 3)
    assert str(raised.value) == "You skipped this item; undo the skip to label it."


def test_a_late_label_on_a_released_item_holds_a_place(sqlite_db, monkeypatch):
    labeling.create_project("p1", [_item(1)], ALL_THRICE)
    held = labeling_queue.next_item("p1", "a")
    later = models.utcnow() + timedelta(minutes=31)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: later)
    assert labeling_queue.next_item("p1", "b").key == _key(1)  # a's claim released, b takes the item
    labeling_queue.submit_label(held.claim_id, "a", 2)  # a's late label still counts
    assert _takers("p1", "cd") == ["c"]  # 3 labels wanted: a, b, c


# ------------------------------------------------------------------ skip


def test_skip_reasons_are_checked(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    shown = labeling_queue.next_item("p1", "a")
    for reason in (None, "   "):
        with pytest.raises(LabelingError) as raised:
            labeling_queue.skip(shown.claim_id, "a", reason)
        assert str(raised.value) == "Please say why you skip this item."
    with pytest.raises(LabelingError) as raised:
        labeling_queue.skip(shown.claim_id, "a", "x" * 501)
    assert str(raised.value) == "The reason has 501 characters; at most 500 are allowed."
    labeling_queue.skip(shown.claim_id, "a", "x" * 500)
    assert labeling_queue.status_of("p1", "a").skipped == 1


def test_a_skip_frees_exactly_one_place(sqlite_db):
    labeling.create_project("p1", [_item(1)], ALL_TWICE)
    labeling_queue.skip(labeling_queue.next_item("p1", "a").claim_id, "a", "not English")
    assert _takers("p1", "bcd") == ["b", "c"]


def test_skipping_a_labelled_or_skipped_item_again_changes_nothing(sqlite_db):
    labeling.create_project("p1", [_item(1), _item(2)], NO_GOLD)
    first = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(first.claim_id, "a", 4)
    labeling_queue.skip(first.claim_id, "a", "too late")
    second = labeling_queue.next_item("p1", "a")
    labeling_queue.skip(second.claim_id, "a", "first reason")
    labeling_queue.skip(second.claim_id, "a", "second reason")
    status = labeling_queue.status_of("p1", "a")
    assert (status.labelled, status.skipped) == (1, 1)
    assert [(c.status, c.skip_reason) for c in _claims("p1", "a")] == [("done", None), ("skipped", "first reason")]


# ------------------------------------------------------------------ undo


def test_undoing_a_skip_gives_the_item_back_and_holds_its_place(sqlite_db):
    labeling.create_project("p1", [_item(1)], ALL_TWICE)
    shown = labeling_queue.next_item("p1", "a")
    labeling_queue.skip(shown.claim_id, "a", "not English")
    assert labeling_queue.undo_last("p1", "a") == _key(1)
    assert labeling_queue.status_of("p1", "a").skipped == 0
    assert [(c.status, c.skip_reason, c.finished_at) for c in _claims("p1", "a")] == [("open", None, None)]
    assert labeling_queue.next_item("p1", "a").claim_id == shown.claim_id
    assert _takers("p1", "bc") == ["b"]  # a holds one of the two places again


def test_undo_gives_back_the_item_held_meanwhile_and_nothing_of_others(sqlite_db):
    labeling.create_project("p1", [_item(1), _item(2), _item(3)], NO_GOLD)
    labeling.create_project("p2", [_item(1)], NO_GOLD)
    first = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(first.claim_id, "a", 4)
    labeling_queue.next_item("p1", "a")  # holds the next item
    elsewhere = labeling_queue.next_item("p2", "a")
    theirs = labeling_queue.next_item("p1", "b")
    assert labeling_queue.undo_last("p1", "a") == first.key
    assert labeling_queue.shown_item("p2", "a").claim_id == elsewhere.claim_id
    assert labeling_queue.shown_item("p1", "b").claim_id == theirs.claim_id
    assert [c.status for c in _claims("p1", "a")] == ["open"]
    # The item a held goes back: c gets it, and nobody after c.
    assert _takers("p1", "cd") == ["c"]


def test_undo_takes_the_last_label_in_this_project_only(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    labeling.create_project("p2", [_item(2)], NO_GOLD)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 4)
    labeling_queue.submit_label(labeling_queue.next_item("p2", "a").claim_id, "a", 4)
    assert labeling_queue.undo_last("p1", "a") == _key(1)
    assert [c.status for c in _claims("p2", "a")] == ["done"]


def test_undo_takes_the_label_given_last_even_on_an_older_claim(sqlite_db, monkeypatch):
    labeling.create_project("p1", [_item(1), _item(2)], NO_GOLD)
    held = labeling_queue.next_item("p1", "a")
    later = models.utcnow() + timedelta(minutes=31)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: later)
    second = labeling_queue.next_item("p1", "a")  # the first claim was released
    assert second.key != held.key
    labeling_queue.submit_label(second.claim_id, "a", 2)
    even_later = later + timedelta(minutes=1)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: even_later)
    labeling_queue.submit_label(held.claim_id, "a", 4)  # the late label, given last
    assert labeling_queue.undo_last("p1", "a") == held.key


def test_undo_takes_back_ones_own_labels_newest_first(sqlite_db):
    labeling.create_project("p1", [_item(i) for i in range(3)], NO_GOLD)
    mine = []
    for _ in range(2):
        shown = labeling_queue.next_item("p1", "a")
        labeling_queue.submit_label(shown.claim_id, "a", 2)
        mine.append(shown.key)
    labeling_queue.submit_label(labeling_queue.next_item("p1", "b").claim_id, "b", 2)  # the newest label is b's
    assert labeling_queue.undo_last("p1", "a") == mine[1]
    assert labeling_queue.undo_last("p1", "a") == mine[0]
    assert [c.status for c in _claims("p1", "b")] == ["done"]


def test_an_adjudicated_item_cannot_be_undone_but_others_can(sqlite_db):
    labeling.create_project("p1", [_item(1), _item(2)], NO_GOLD)
    first = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(first.claim_id, "a", 4)
    review.adjudicate("p1", first.key, 4, "expert")
    with pytest.raises(LabelingError) as raised:
        labeling_queue.undo_last("p1", "a")
    assert str(raised.value) == "This item was adjudicated already; its label can no longer be undone."
    second = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(second.claim_id, "a", 2)
    assert labeling_queue.undo_last("p1", "a") == second.key


# ------------------------------------------------------------------ researchers


def test_progress_counts_this_projects_items_labels_claims_and_annotators(sqlite_db):
    items = [_item(i) for i in range(3)] + [_item(20 + g, gold=5) for g in range(2)]
    labeling.create_project("p1", items, ProjectSettings(overlap_k=3, overlap_fraction=1 / 3, gold_every=1,
                                                         quiz_size=0, min_gold_checks=3))
    labeling.create_project("p2", [_item(1), _item(2), _item(3)], NO_GOLD)
    empty = review.progress("p2")
    assert (empty.items, empty.gold_items, empty.labels_wanted, empty.labels_done, empty.open_claims) == (3, 0, 3, 0, 0)
    labeling_queue.submit_label(labeling_queue.next_item("p2", "x").claim_id, "x", 3)
    labeling_queue.next_item("p2", "y")
    labeling_queue.next_item("p2", "z")
    labeling_queue.submit_label(labeling_queue.next_item("p1", "a").claim_id, "a", 1)
    gold = labeling_queue.next_item("p1", "a")
    assert gold.purpose == "gold"
    labeling_queue.submit_label(gold.claim_id, "a", 5)
    labeling_queue.next_item("p1", "a")  # held
    labeling_queue.submit_label(labeling_queue.next_item("p1", "b").claim_id, "b", 1)
    progress = review.progress("p1")
    # 3 regular items, one of them labelled 3 times: 5 labels wanted; the gold label is not one of them.
    assert (progress.items, progress.gold_items, progress.labels_wanted) == (5, 2, 5)
    assert (progress.labels_done, progress.open_claims) == (2, 1)
    assert list(progress.per_annotator) == ["a", "b"]
    assert progress.per_annotator["a"].labelled == 2 and progress.per_annotator["a"].gold_correct == 1
    assert progress.per_annotator["b"].labelled == 1
    assert progress.to_adjudicate == 0
    assert review.progress("p2").open_claims == 2


def test_disagreements_list_items_in_queue_order_with_their_labels(sqlite_db):
    items = [_item(i, context=f"context {i}") for i in range(3)]
    labeling.create_project("p1", items, ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0,
                                                         quiz_size=0, seed=3))
    labeling.create_project("p2", [_item(0), _item(1)], ALL_TWICE)
    queue = [i.key for i in review.labelled_items("p1")]
    scores = {queue[0]: {"a": 1, "b": 5}, queue[1]: {"a": 2, "b": 2}, queue[2]: {"a": 4, "b": 2}}
    for annotator in ("b", "a"):
        while (shown := labeling_queue.next_item("p1", annotator)) is not None:
            labeling_queue.submit_label(shown.claim_id, annotator, scores[shown.key][annotator])
    for annotator, score in (("x", 1), ("y", 5)):  # p2 disagrees too, on its own items
        while (shown := labeling_queue.next_item("p2", annotator)) is not None:
            labeling_queue.submit_label(shown.claim_id, annotator, score)
    found = review.disagreements("p1")
    number = {key: int(key.split("/")[2][1:]) for key in queue}
    # Each item's labels in labelling order: b labelled everything before a started.
    assert found == [Disagreement(key, f"behaviour {number[key]}", f"context {number[key]}",
                                  f"generation {number[key]}", (("b", scores[key]["b"]), ("a", scores[key]["a"])))
                     for key in (queue[0], queue[2])]
    assert review.progress("p1").to_adjudicate == 2


@pytest.mark.parametrize("score", [0, 6, True])
def test_an_adjudication_outside_one_to_five_is_refused(sqlite_db, score):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    with pytest.raises(LabelingError) as raised:
        review.adjudicate("p1", _key(1), score, "expert")
    assert str(raised.value) == f"The score must be a whole number from 1 to 5, got {score!r}."


def test_adjudication_keeps_the_score_and_note_on_this_projects_item(sqlite_db):
    labeling.create_project("p1", [_item(1), _item(2)], NO_GOLD)
    labeling.create_project("p2", [_item(1), _item(2)], NO_GOLD)
    review.adjudicate("p2", _key(1), 1, "expert", note="clearly a refusal")
    review.adjudicate("p2", _key(2), 5, "expert")
    assert {i.key: i.adjudicated for i in review.labelled_items("p1")} == {_key(1): None, _key(2): None}
    assert {i.key: i.adjudicated for i in review.labelled_items("p2")} == {
        _key(1): {"score": 1, "by": "expert"}, _key(2): {"score": 5, "by": "expert"}}
    with read_session() as session:
        assert sorted(a.note for a in session.exec(select(Adjudication)).all()) == ["", "clearly a refusal"]
    with pytest.raises(LabelingError) as raised:
        review.adjudicate("p1", "m1/direct/b9/0", 3, "expert")
    assert str(raised.value) == "The project has no item 'm1/direct/b9/0'."
    with pytest.raises(LabelingError) as raised:
        review.adjudicate("nope", _key(1), 3, "expert")
    assert str(raised.value) == "There is no labeling project called 'nope'."


def test_labelled_items_leave_out_gold_unless_asked(sqlite_db):
    items = [_item(i) for i in range(6)] + [_item(20 + g, gold=1) for g in range(3)]
    labeling.create_project("p1", items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0, seed=1))
    assert sorted(i.key for i in review.labelled_items("p1")) == sorted(_key(i) for i in range(6))
    assert len(review.labelled_items("p1", include_gold=True)) == 9


# ------------------------------------------------------------------ the caller's engine or session


def test_every_operation_works_on_the_engine_it_is_given(sqlite_db, migrated_sqlite_template, tmp_path):
    other = tmp_path / "other.db"
    shutil.copy(migrated_sqlite_template, other)
    engine = db.get_engine(f"sqlite:///{other}")
    try:
        labeling.create_project("p1", [_item(1), _item(2)], ALL_TWICE, engine=engine)
        labeling.require_open_project("p1", engine=engine)
        assert labeling.get_project("p1", engine=engine).slug == "p1"
        assert [p.slug for p in labeling.list_projects(engine=engine)] == ["p1"]
        assert labeling_queue.has_item_for("p1", "a", engine=engine) is True
        shown = labeling_queue.next_item("p1", "a", engine=engine)
        assert labeling_queue.shown_item("p1", "a", engine=engine) == shown
        labeling_queue.skip(shown.claim_id, "a", "unsure", engine=engine)
        assert labeling_queue.undo_last("p1", "a", engine=engine) == shown.key
        labeling_queue.submit_label(shown.claim_id, "a", 1, engine=engine)
        labeling_queue.submit_label(labeling_queue.next_item("p1", "b", engine=engine).claim_id, "b", 5, engine=engine)
        assert labeling_queue.status_of("p1", "a", engine=engine).labelled == 1
        assert [d.key for d in review.disagreements("p1", engine=engine)] == [shown.key]
        assert review.progress("p1", engine=engine).labels_done == 2
        review.adjudicate("p1", shown.key, 3, "expert", engine=engine)
        assert [i.adjudicated for i in review.labelled_items("p1", engine=engine) if i.key == shown.key] == [
            {"score": 3, "by": "expert"}]
        labeling.set_open("p1", False, engine=engine)
        with pytest.raises(LabelingError, match="closed"):
            labeling.require_open_project("p1", engine=engine)
    finally:
        engine.dispose()
    assert labeling.list_projects() == []  # nothing went to the app's own database


def test_a_study_steps_transaction_sees_its_own_claims_and_skips(sqlite_db):
    labeling.create_project("p1", [_item(1), _item(2)], NO_GOLD)
    labeling.set_open("p1", False)
    with write_transaction() as session:
        project = session.exec(select(labeling.LabelingProject)).one()
        project.is_open = True  # reopened in this transaction, not yet committed
        session.add(project)
        session.flush()
        labeling.require_open_project("p1", session=session)
        shown = labeling_queue.next_item("p1", "a", session=session)
        assert labeling_queue.shown_item("p1", "a", session=session) == shown
        assert labeling_queue.has_item_for("p1", "a", session=session) is True
        labeling_queue.skip(shown.claim_id, "a", "unsure", session=session)
        assert labeling_queue.shown_item("p1", "a", session=session) is None
    assert labeling_queue.status_of("p1", "a").skipped == 1
    with pytest.raises(LabelingError) as raised:
        labeling.require_open_project("nope")
    assert str(raised.value).startswith("PROJECT names no labeling project: there is none called 'nope'.")


def test_gold_items_are_never_adjudicated(sqlite_db):
    gold = [_item(10 + i, gold=1) for i in range(3)]
    settings = ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0, quiz_size=3, quiz_pass=0.0)
    labeling.create_project("p1", [_item(1)] + gold, settings)
    for annotator, score in (("a", 1), ("b", 5)):  # they disagree on every item, quiz items included
        while (shown := labeling_queue.next_item("p1", annotator)) is not None:
            labeling_queue.submit_label(shown.claim_id, annotator, score)
    # One real disagreement: the regular item. The quiz's gold items have a known score.
    assert [d.key for d in review.disagreements("p1")] == [_key(1)]
    assert review.progress("p1").to_adjudicate == 1
    with pytest.raises(LabelingError) as refused:
        review.adjudicate("p1", _key(10), 3, "lead")
    assert str(refused.value) == f"The item '{_key(10)}' is a gold item: its score is known, it is not adjudicated."


def test_hostile_values_are_quoted_short_in_labeling_messages(sqlite_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    shown = labeling_queue.next_item("p1", "a")
    for call in (lambda: labeling_queue.submit_label(shown.claim_id, "a", 3, flags=["f" * 10_000]),
                 lambda: labeling_queue.submit_label(shown.claim_id, "a", "9" * 10_000),
                 lambda: labeling_queue.submit_label(shown.claim_id, "a", 3, rationale="r" * 10_000),
                 lambda: review.adjudicate("p1", "k" * 10_000, 3, "lead"),
                 lambda: labeling.create_project("x" * 10_000, [_item(2)], NO_GOLD),
                 lambda: labeling.create_project("p2", [_item(2).model_copy(update={"key": "k" * 500})] * 2, NO_GOLD),
                 lambda: labeling_queue.next_item("n" * 10_000, "a")):
        with pytest.raises(LabelingError) as refused:
            call()
        assert len(str(refused.value)) < 300, str(refused.value)[:300]


def test_an_adjudication_note_over_the_limit_is_refused_whole(sqlite_db):
    labeling.create_project("p1", [_item(1)], ALL_TWICE)
    with pytest.raises(LabelingError, match="The note has 2,001 characters; at most 2,000 are allowed."):
        review.adjudicate("p1", _key(1), 3, "lead", note="n" * 2001)
    review.adjudicate("p1", _key(1), 3, "lead", note="n" * 2000)
    assert review.labelled_items("p1")[0].adjudicated == {"score": 3, "by": "lead"}
