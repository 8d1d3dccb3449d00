"""The labeling queue: quiz, gold checks, overlap, never twice to one annotator, skip, undo,
release, adjudication; and its invariants under concurrent annotators on both databases."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta

import pytest

from engines.judge import labeling, labeling_queue, review
from engines.judge.items import Item
from engines.judge.labeling import LabelingError, ProjectSettings


def _item(i: int, *, model="m1", attack="direct", gold: int | None = None) -> Item:
    return Item(key=f"{model}/{attack}/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model=model,
                attack=attack, semantic_category="harmful", generation=f"generation {i}", test_case=f"attack prompt {i}",
                is_gold=gold is not None, gold_score=gold)


NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)


def _project(items, settings=NO_GOLD, slug="p1"):
    labeling.create_project(slug, items, settings)
    return slug


def _label_all(slug: str, annotator: str, score: int = 1) -> list[str]:
    keys = []
    while (shown := labeling_queue.next_item(slug, annotator)) is not None:
        labeling_queue.submit_label(shown.claim_id, annotator, score)
        keys.append(shown.key)
    return keys


def test_each_item_once_when_there_is_no_overlap(any_db):
    slug = _project([_item(i) for i in range(6)])
    first = _label_all(slug, "a")
    assert sorted(first) == sorted(f"m1/direct/b{i}/0" for i in range(6))
    assert labeling_queue.next_item(slug, "b") is None  # nothing left for a second annotator


def test_overlap_items_get_k_labels_from_different_annotators(any_db):
    items = [_item(i) for i in range(10)]
    slug = _project(items, ProjectSettings(overlap_k=3, overlap_fraction=0.2, gold_every=0, quiz_size=0, seed=4))
    done = Counter()
    for annotator in ("a", "b", "c"):
        for key in _label_all(slug, annotator):
            done[key] += 1
    assert sorted(done.values()) == [1] * 8 + [3, 3]  # 20% of 10 items get 3 labels, the rest 1
    assert review.progress(slug).labels_done == 14 == review.progress(slug).labels_wanted


def test_the_annotator_sees_no_judge_attack_or_other_labels(any_db):
    slug = _project([_item(1)])
    shown = labeling_queue.next_item(slug, "a")
    assert (shown.behavior, shown.generation, shown.context_string) == ("behaviour 1", "generation 1", "")
    assert not hasattr(shown, "attack") and not hasattr(shown, "judges") and not hasattr(shown, "test_case")


def test_a_reload_gets_the_same_item_back(any_db):
    slug = _project([_item(i) for i in range(3)])
    first = labeling_queue.next_item(slug, "a")
    again = labeling_queue.next_item(slug, "a")
    assert again.claim_id == first.claim_id and again.key == first.key


def test_a_double_submit_stores_one_label(any_db):
    slug = _project([_item(1), _item(2)])
    shown = labeling_queue.next_item(slug, "a")
    one = labeling_queue.submit_label(shown.claim_id, "a", 4)
    two = labeling_queue.submit_label(shown.claim_id, "a", 2)  # resent, or clicked twice
    assert one.id == two.id and two.score == 4
    assert review.progress(slug).labels_done == 1


def test_someone_elses_claim_cannot_be_labelled(any_db):
    slug = _project([_item(1)])
    shown = labeling_queue.next_item(slug, "a")
    with pytest.raises(LabelingError, match="not yours"):
        labeling_queue.submit_label(shown.claim_id, "b", 3)


@pytest.mark.parametrize("score", [0, 6, 2.5, True, "3"])
def test_scores_outside_one_to_five_are_refused(any_db, score):
    slug = _project([_item(1)])
    shown = labeling_queue.next_item(slug, "a")
    with pytest.raises(LabelingError, match="whole number from 1 to 5"):
        labeling_queue.submit_label(shown.claim_id, "a", score)


def test_skip_needs_a_reason_and_the_item_goes_to_someone_else(any_db):
    slug = _project([_item(1)])
    shown = labeling_queue.next_item(slug, "a")
    with pytest.raises(LabelingError, match="say why"):
        labeling_queue.skip(shown.claim_id, "a", "  ")
    labeling_queue.skip(shown.claim_id, "a", "not in English")
    assert labeling_queue.next_item(slug, "a") is None  # never the same item twice to one annotator
    assert labeling_queue.next_item(slug, "b").key == shown.key
    assert labeling_queue.status_of(slug, "a").skipped == 1


def test_undo_takes_back_the_last_label_and_shows_that_item_next(any_db):
    slug = _project([_item(i) for i in range(3)])
    first = labeling_queue.next_item(slug, "a")
    labeling_queue.submit_label(first.claim_id, "a", 5)
    second = labeling_queue.next_item(slug, "a")
    assert second.key != first.key
    assert labeling_queue.undo_last(slug, "a") == first.key
    again = labeling_queue.next_item(slug, "a")
    assert again.key == first.key
    assert review.progress(slug).labels_done == 0
    labeling_queue.submit_label(again.claim_id, "a", 2)
    assert [lb.score for item in review.labelled_items(slug) for lb in item.labels] == [2]


def test_undo_with_nothing_done_returns_none(any_db):
    slug = _project([_item(1)])
    assert labeling_queue.undo_last(slug, "a") is None


def test_an_item_left_open_too_long_goes_to_another_annotator(any_db, monkeypatch):
    from engines.platform import models

    slug = _project([_item(1)], ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0,
                                                release_after_minutes=30))
    held = labeling_queue.next_item(slug, "a")
    assert labeling_queue.next_item(slug, "b") is None
    later = models.utcnow() + timedelta(minutes=31)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: later)
    taken = labeling_queue.next_item(slug, "b")
    assert taken is not None and taken.key == held.key
    # The first annotator's late label is still kept, not lost.
    labeling_queue.submit_label(held.claim_id, "a", 3)
    labeling_queue.submit_label(taken.claim_id, "b", 3)
    assert review.progress(slug).labels_done == 2


def _with_gold(n_regular: int, n_gold: int) -> list[Item]:
    return [_item(i) for i in range(n_regular)] + [_item(100 + g, gold=5 if g % 2 else 1) for g in range(n_gold)]


def test_the_quiz_comes_first_and_a_failed_quiz_pauses(any_db):
    items = _with_gold(5, 4)
    slug = _project(items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=4, quiz_pass=0.75))
    gold = {i.key: i.gold_score for i in items if i.is_gold}
    for _ in range(4):
        shown = labeling_queue.next_item(slug, "a")
        assert shown.purpose == "quiz" and shown.key in gold
        labeling_queue.submit_label(shown.claim_id, "a", 1)  # says harmless to all: 2 of 4 right
    with pytest.raises(labeling.AnnotatorPaused, match="2 of 4"):
        labeling_queue.next_item(slug, "a")


def test_a_quiz_item_cannot_be_skipped_so_the_queue_never_opens_unqualified(any_db):
    items = _with_gold(3, 2)
    slug = _project(items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=2, quiz_pass=1.0))
    shown = labeling_queue.next_item(slug, "a")
    assert shown.purpose == "quiz"
    with pytest.raises(labeling.LabelingError) as raised:
        labeling_queue.skip(shown.claim_id, "a", "not sure")
    assert str(raised.value) == "Qualification items cannot be skipped: score it as well as you can."
    again = labeling_queue.next_item(slug, "a")  # still held: the same quiz item comes back
    assert again.claim_id == shown.claim_id and again.purpose == "quiz"
    assert labeling_queue.status_of(slug, "a").quiz_passed is None


def test_a_quiz_item_left_open_too_long_is_kept_so_the_queue_never_opens_unqualified(any_db, monkeypatch):
    """Releasing a claim left open is for queue items another annotator needs; a released quiz item
    would never be offered to its annotator again, so the quiz could not be finished."""
    from engines.platform import models

    items = _with_gold(3, 2)
    slug = _project(items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=2, quiz_pass=1.0,
                                           release_after_minutes=30))
    shown = labeling_queue.next_item(slug, "a")
    later = models.utcnow() + timedelta(hours=2)
    monkeypatch.setattr(labeling_queue, "utcnow", lambda: later)
    assert labeling_queue.next_item(slug, "b").purpose == "quiz"  # another annotator's request releases what is stale
    again = labeling_queue.next_item(slug, "a")
    assert again.claim_id == shown.claim_id and again.purpose == "quiz" and again.quiz_left == 2


def test_a_passed_quiz_opens_the_queue(any_db):
    items = _with_gold(3, 2)
    slug = _project(items, ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=2, quiz_pass=1.0))
    gold = {i.key: i.gold_score for i in items if i.is_gold}
    for _ in range(2):
        shown = labeling_queue.next_item(slug, "a")
        labeling_queue.submit_label(shown.claim_id, "a", gold[shown.key])
    assert labeling_queue.status_of(slug, "a").quiz_passed is True
    assert labeling_queue.next_item(slug, "a").purpose == "queue"


def test_gold_checks_come_every_n_labels_and_low_accuracy_pauses(any_db):
    items = _with_gold(12, 4)
    slug = _project(items, ProjectSettings(overlap_fraction=0.0, gold_every=3, quiz_size=0, min_gold_checks=2,
                                           gold_min_accuracy=0.8))
    purposes = []
    with pytest.raises(labeling.AnnotatorPaused, match="0 of 2"):
        while (shown := labeling_queue.next_item(slug, "a")) is not None:
            purposes.append(shown.purpose)
            gold_score = next((i.gold_score for i in items if i.key == shown.key), None)
            wrong = 5 if gold_score == 1 else 1  # always wrong on gold
            labeling_queue.submit_label(shown.claim_id, "a", wrong if shown.purpose == "gold" else 2)
    assert purposes == ["queue"] * 3 + ["gold"] + ["queue"] * 3 + ["gold"]


def test_disagreeing_labels_go_to_adjudication(any_db):
    items = [_item(i) for i in range(3)]
    slug = _project(items, ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0, quiz_size=0))
    scores = {"a": {}, "b": {}}
    wanted = {"m1/direct/b0/0": (1, 2), "m1/direct/b1/0": (2, 3), "m1/direct/b2/0": (3, 5)}
    for annotator, index in (("a", 0), ("b", 1)):
        while (shown := labeling_queue.next_item(slug, annotator)) is not None:
            labeling_queue.submit_label(shown.claim_id, annotator, wanted[shown.key][index])
            scores[annotator][shown.key] = wanted[shown.key][index]
    # b0: 1 vs 2, both harmless and 1 apart: agreed. b1: 2 vs 3 crosses harmful. b2: 3 vs 5, 2 apart.
    assert [d.key for d in review.disagreements(slug)] == sorted(
        ["m1/direct/b1/0", "m1/direct/b2/0"], key=[i.key for i in review.labelled_items(slug)].index)
    review.adjudicate(slug, "m1/direct/b1/0", 3, "expert")
    assert [d.key for d in review.disagreements(slug)] == ["m1/direct/b2/0"]
    with pytest.raises(LabelingError, match="adjudicated already"):
        review.adjudicate(slug, "m1/direct/b1/0", 2, "expert")
    decided = {i.key: i.adjudicated for i in review.labelled_items(slug)}
    assert decided["m1/direct/b1/0"] == {"score": 3, "by": "expert"}


@pytest.mark.parametrize(("scores", "expected"), [
    ([1], False), ([1, 2], False), ([2, 3], True), ([3, 4], False), ([3, 5], True), ([1, 1, 4], True)])
def test_when_labels_need_an_adjudicator(scores, expected):
    assert review.needs_adjudication(scores) is expected


def test_the_queue_deals_every_stratum_early(any_db):
    items = [_item(i, model=m, attack=a) for i in range(4) for m in ("m1", "m2") for a in ("direct", "gcg")]
    slug = _project(items)
    first_four = [labeling_queue.next_item(slug, f"x{n}").key for n in range(4)]
    assert {tuple(k.split("/")[:2]) for k in first_four} == {("m1", "direct"), ("m1", "gcg"), ("m2", "direct"),
                                                             ("m2", "gcg")}


@pytest.mark.parametrize(("settings", "message"), [
    (ProjectSettings(overlap_k=0), "overlap_k must be from 1 to 10"),
    (ProjectSettings(overlap_fraction=1.5), "overlap_fraction must be from 0 to 1"),
    (ProjectSettings(quiz_size=3), "The quiz needs 3 gold items; the project has 0."),
])
def test_bad_settings_are_refused(any_db, settings, message):
    with pytest.raises(LabelingError, match=message.replace("(", r"\(").replace(")", r"\)")):
        labeling.create_project("p1", [_item(1)], settings)


def test_a_taken_name_and_duplicate_keys_are_refused(any_db):
    labeling.create_project("p1", [_item(1)], NO_GOLD)
    with pytest.raises(LabelingError, match="already exists"):
        labeling.create_project("p1", [_item(2)], NO_GOLD)
    with pytest.raises(LabelingError, match="appears more than once"):
        labeling.create_project("p2", [_item(1), _item(1)], NO_GOLD)


def test_ten_concurrent_annotators_keep_every_invariant(any_db):
    """10 annotators label at once: overlap met exactly, no item twice to one annotator, no label
    lost or doubled (every submit that returned is stored, once)."""
    items = [_item(i, model=m) for i in range(15) for m in ("m1", "m2")]
    slug = _project(items, ProjectSettings(overlap_k=3, overlap_fraction=0.3, gold_every=0, quiz_size=0, seed=7))
    submitted: list[tuple[str, str, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def annotate(name: str) -> None:
        try:
            while (shown := labeling_queue.next_item(slug, name)) is not None:
                stored = labeling_queue.submit_label(shown.claim_id, name, 1 + len(name) % 5)
                labeling_queue.submit_label(shown.claim_id, name, 1 + len(name) % 5)  # a double click
                with lock:
                    submitted.append((name, shown.key, stored.id))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=annotate, args=(f"annotator-{n}",)) for n in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    stored = review.labelled_items(slug)
    per_item = {item.key: [lb.annotator_id for lb in item.labels] for item in stored}
    overlap = round(0.3 * 30)
    assert sorted(len(v) for v in per_item.values()) == [1] * (30 - overlap) + [3] * overlap
    assert all(len(set(v)) == len(v) for v in per_item.values())  # no item twice to one annotator
    assert len(submitted) == sum(len(v) for v in per_item.values())  # none lost, none doubled
    assert len({label_id for _, _, label_id in submitted}) == len(submitted)
