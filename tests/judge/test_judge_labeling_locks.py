"""How the labeling queue behaves while other transactions hold its rows, and the order of what it
lists when the database stores rows out of order.

The lock tests need PostgreSQL (SQLite runs one writer at a time, so nothing is ever held by
another transaction there). Each one holds a lock from a second connection the way a concurrent
annotator's request does, and asks in a thread what the annotator gets. The order tests run on both
databases: PostgreSQL writes an updated row as a new version after the others, so a query without
ORDER BY returns it last; labelling and undoing update rows all the time.
"""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest
from sqlalchemy import text

from engines.judge import labeling, labeling_queue, review
from engines.judge.items import Item
from engines.judge.labeling import ProjectSettings
from engines.platform.db import get_engine, write_transaction
from engines.platform.models import utcnow

NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)
ALL_TWICE = ProjectSettings(overlap_k=2, overlap_fraction=1.0, gold_every=0, quiz_size=0)


def _item(i: int, **extra) -> Item:
    return Item(key=f"m1/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m1",
                attack="direct", semantic_category="harmful", generation=f"generation {i}", extra=extra)


def _needs_postgresql(url: str) -> None:
    if url.startswith("sqlite"):
        pytest.skip("row and advisory locks exist only on PostgreSQL (SQLite serialises writers)")


class _Asking:
    """``next_item`` (or another call) run in a thread, so the test can hold a lock meanwhile."""

    def __init__(self, call, *args, **kwargs):
        self.result = self.error = None
        self._thread = threading.Thread(target=self._run, args=(call, args, kwargs), daemon=True)
        self._thread.start()

    def _run(self, call, args, kwargs):
        try:
            self.result = call(*args, **kwargs)
        except Exception as error:  # noqa: BLE001 - handed to the test, which re-raises it
            self.error = error

    def finished_within(self, seconds: float) -> bool:
        self._thread.join(timeout=seconds)
        if self.error is not None:
            raise self.error
        return not self._thread.is_alive()


def _item_id(key: str) -> int:
    with get_engine().connect() as connection:
        return connection.execute(text("SELECT id FROM labeling_item WHERE key = :key"), {"key": key}).scalar_one()


def _hold_item_row(connection, key: str) -> None:
    """Lock an item's row from ``connection`` as a concurrent annotator's claim does, until rollback."""
    connection.execute(text("SELECT id FROM labeling_item WHERE key = :key FOR UPDATE"), {"key": key})


# ------------------------------------------------------------------ locks (PostgreSQL)


def test_two_requests_of_one_annotator_get_the_same_item_one_after_the_other(any_db):
    """Two tabs of one annotator ask at once: the second waits for the first and gets the item the
    first claimed, rather than claiming another (which would leave the annotator holding two)."""
    _needs_postgresql(any_db)
    labeling.create_project("p1", [_item(i) for i in range(3)], NO_GOLD)
    with write_transaction() as session:
        first = labeling_queue.next_item("p1", "a", session=session)
        second = _Asking(labeling_queue.next_item, "p1", "a")
        assert not second.finished_within(0.5)  # waits on the first tab's transaction
    assert second.finished_within(30)
    assert second.result.key == first.key and second.result.claim_id == first.claim_id


def test_at_the_end_of_the_queue_a_request_waits_for_an_item_another_is_claiming(any_db):
    """The only item left is row-locked by another annotator's request: rather than answering
    "nothing left" while that request may still give it up, this one waits, and gets the item when
    the other request rolls back."""
    _needs_postgresql(any_db)
    labeling.create_project("p1", [_item(0)], NO_GOLD)
    with get_engine().connect() as other:
        _hold_item_row(other, "m1/direct/b0/0")
        asking = _Asking(labeling_queue.next_item, "p1", "a")
        assert not asking.finished_within(0.5)
        other.rollback()
    assert asking.finished_within(30)
    assert asking.result is not None and asking.result.key == "m1/direct/b0/0"


def test_a_request_that_released_a_stale_claim_never_waits_on_another_annotators_rows(any_db):
    """Having released a claim left open too long, a request holds that item's row; if it then
    waited on a row another request holds, and that request waited on this row, both would hang.
    So it answers at once with what is free now (nothing, here), and the stale claim is released."""
    _needs_postgresql(any_db)
    labeling.create_project("p1", [_item(0), _item(1)], ALL_TWICE)
    mine = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(mine.claim_id, "a", 3)
    stale = labeling_queue.next_item("p1", "b")  # the item a started; b goes away
    assert stale.key == mine.key
    with get_engine().begin() as connection:
        connection.execute(text("UPDATE labeling_claim SET claimed_at = :then WHERE id = :id"),
                           {"then": utcnow() - timedelta(days=1), "id": stale.claim_id})
    other_key = "m1/direct/b1/0"
    with get_engine().connect() as other:
        _hold_item_row(other, other_key)
        asking = _Asking(labeling_queue.next_item, "p1", "a")
        answered = asking.finished_within(10)
        other.rollback()
    assert answered and asking.result is None
    assert review.progress("p1").open_claims == 0  # b's stale claim was released


def test_whether_an_item_is_left_is_read_without_waiting_on_or_skipping_claims(any_db):
    """``has_item_for`` is a read: an item another request is claiming right now still counts (it
    answers at once, without waiting for that request to finish)."""
    _needs_postgresql(any_db)
    labeling.create_project("p1", [_item(0)], NO_GOLD)
    with get_engine().connect() as other:
        _hold_item_row(other, "m1/direct/b0/0")
        asking = _Asking(labeling_queue.has_item_for, "p1", "a")
        answered = asking.finished_within(10)
        other.rollback()
    assert answered and asking.result is True


# ------------------------------------------------------------------ orders (both databases)


def _touch(table: str, row_id: int) -> None:
    """Rewrite a row unchanged: PostgreSQL stores the new version after the others."""
    with get_engine().begin() as connection:
        connection.execute(text(f"UPDATE {table} SET id = id WHERE id = :id"), {"id": row_id})
    _analyze()


def _analyze() -> None:
    """Gather table statistics, as autovacuum does: PostgreSQL then reads these small tables by
    sequential scan, which returns rows in storage order (an index scan would follow the index)."""
    with get_engine().begin() as connection:
        connection.execute(text("ANALYZE"))


def test_projects_are_listed_oldest_first_also_after_one_was_closed_and_reopened(any_db):
    labeling.create_project("first", [_item(0)], NO_GOLD)
    labeling.create_project("second", [_item(0)], NO_GOLD)
    labeling.set_open("first", False)
    labeling.set_open("first", True)
    assert [project.slug for project in labeling.list_projects()] == ["first", "second"]


def test_the_export_lists_items_in_queue_order_after_their_rows_changed(any_db):
    labeling.create_project("p1", [_item(i) for i in range(3)], NO_GOLD)
    queue = [item.key for item in review.labelled_items("p1")]
    a = labeling_queue.next_item("p1", "a")
    b = labeling_queue.next_item("p1", "b")
    labeling_queue.skip(a.claim_id, "a", "unreadable")  # the first item's row changes last
    labeling_queue.submit_label(b.claim_id, "b", 2)
    assert [a.key, b.key] == queue[:2]
    _analyze()
    assert [item.key for item in review.labelled_items("p1")] == queue


def test_an_items_labels_are_exported_in_the_order_they_were_given(any_db):
    labeling.create_project("p1", [_item(0)], ALL_TWICE)
    for annotator, score in (("a", 1), ("b", 5)):
        labeling_queue.submit_label(labeling_queue.next_item("p1", annotator).claim_id, annotator, score)
    with get_engine().connect() as connection:
        first_label = connection.execute(text("SELECT min(id) FROM human_label")).scalar_one()
    _touch("human_label", first_label)
    [item] = review.labelled_items("p1")
    assert [(label.annotator_id, label.score) for label in item.labels] == [("a", 1), ("b", 5)]


def test_disagreements_follow_the_queue_not_the_order_labels_came_in(any_db):
    """The last item of the queue is labelled first; the adjudication list still starts with the
    first item, and each item's labels stay in the order they were given."""
    labeling.create_project("p1", [_item(i) for i in range(3)], ALL_TWICE)
    queue = [item.key for item in review.labelled_items("p1")]
    held = {annotator: labeling_queue.next_item("p1", annotator) for annotator in "abcdef"}
    assert [held[a].key for a in "abcdef"] == [queue[0], queue[0], queue[1], queue[1], queue[2], queue[2]]
    for annotator, score in (("e", 1), ("f", 4), ("c", 3), ("d", 3), ("a", 5), ("b", 2)):
        labeling_queue.submit_label(held[annotator].claim_id, annotator, score)
    with get_engine().connect() as connection:
        label_of_a = connection.execute(text("SELECT id FROM human_label WHERE annotator = 'a'")).scalar_one()
    _touch("human_label", label_of_a)
    found = review.disagreements("p1")
    assert [(d.key, d.labels) for d in found] == [(queue[0], (("a", 5), ("b", 2))),
                                                  (queue[2], (("e", 1), ("f", 4)))]


def test_undo_takes_the_later_of_two_labels_stored_at_the_same_instant(any_db):
    """A coarse clock can give two labels one timestamp: the one stored later is undone."""
    labeling.create_project("p1", [_item(0), _item(1)], NO_GOLD)
    first = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(first.claim_id, "a", 2)
    second = labeling_queue.next_item("p1", "a")
    labeling_queue.submit_label(second.claim_id, "a", 4)
    with get_engine().begin() as connection:
        connection.execute(text("UPDATE labeling_claim SET finished_at = :at"), {"at": datetime(2026, 1, 2, 3, 4, 5)})
    assert labeling_queue.undo_last("p1", "a") == second.key


def test_extra_fields_with_dates_are_stored_as_text(any_db):
    """Items built in Python (a data frame's rows) may carry dates in ``extra``: they are stored
    as ISO text rather than refused by the database's JSON encoder."""
    labeling.create_project("p1", [_item(0, collected=datetime(2026, 1, 2, 3, 4, 5))], NO_GOLD)
    [item] = review.labelled_items("p1")
    assert item.extra == {"collected": "2026-01-02T03:04:05"}
