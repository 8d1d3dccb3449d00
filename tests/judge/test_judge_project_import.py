"""Creating a labeling project stores its items in several short write transactions (annotators'
writes go on between them), keeps the project hidden until the last batch is in, and leaves
nothing behind when a batch fails."""

from __future__ import annotations

import pytest
from sqlalchemy import event, func
from sqlmodel import select

from engines.judge import labeling, labeling_queue, review
from engines.judge.items import Item
from engines.judge.labeling import LabelingError, ProjectSettings
from engines.judge.models import LabelingItem, LabelingProject
from engines.platform.db import get_engine, read_session

NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)


def _items(n: int) -> list[Item]:
    return [Item(key=f"m1/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m1",
                 attack="direct", generation=f"generation {i}") for i in range(n)]


def _rows() -> tuple[int, int]:
    with read_session() as session:
        return (session.exec(select(func.count()).select_from(LabelingProject)).one(),
                session.exec(select(func.count()).select_from(LabelingItem)).one())


@pytest.fixture
def transactions(sqlite_db):
    """For each committed transaction, how many labeling_item rows it inserted (SQLAlchemy events)."""
    engine = get_engine()
    inserted: list[int] = [0]
    done: list[int] = []

    def after_execute(conn, cursor, statement, parameters, context, executemany):  # noqa: ARG001 - event signature
        if statement.lstrip().upper().startswith("INSERT INTO LABELING_ITEM"):
            inserted[0] += cursor.rowcount if cursor.rowcount > 0 else 0

    def on_commit(conn):  # noqa: ARG001 - event signature
        done.append(inserted[0])
        inserted[0] = 0

    event.listen(engine, "after_cursor_execute", after_execute)
    event.listen(engine, "commit", on_commit)
    yield done
    event.remove(engine, "after_cursor_execute", after_execute)
    event.remove(engine, "commit", on_commit)


def test_items_are_stored_in_batches_of_separate_transactions(transactions, monkeypatch):
    monkeypatch.setattr(labeling, "IMPORT_BATCH", 4)
    labeling.create_project("p1", _items(10), NO_GOLD)
    batches = [n for n in transactions if n]
    assert batches == [4, 4, 2]  # 10 items, at most 4 per transaction, each committed on its own
    project = labeling.get_project("p1")
    assert project.is_open and review.progress("p1").items == 10
    with read_session() as session:  # the queue order runs on across the batches
        positions = session.exec(select(LabelingItem.position).where(LabelingItem.project_id == project.id)
                                 .order_by(LabelingItem.position)).all()
    assert positions == list(range(10))


def test_the_project_is_hidden_and_closed_until_its_last_batch_is_in(sqlite_db, monkeypatch):
    monkeypatch.setattr(labeling, "IMPORT_BATCH", 2)
    seen: list[tuple] = []
    store = labeling._store_items

    def watching(session, rows):
        with read_session() as reading:
            hidden = reading.exec(select(LabelingProject)).one()
        for call in (lambda: labeling.get_project(hidden.slug), lambda: labeling_queue.next_item(hidden.slug, "a"),
                     lambda: labeling.require_open_project(hidden.slug)):
            with pytest.raises(LabelingError, match="no labeling project"):
                call()
        seen.append(([p.slug for p in labeling.list_projects()], hidden.is_open, hidden.slug.startswith("~")))
        store(session, rows)

    monkeypatch.setattr(labeling, "_store_items", watching)
    labeling.create_project("p1", _items(5), NO_GOLD)
    # While the batches went in, the project row existed, closed, under a name no page or study can give.
    assert seen == [([], False, True)] * 3
    assert [(p.slug, p.is_open) for p in labeling.list_projects()] == [("p1", True)]


def test_a_failure_midway_leaves_no_project_and_no_items(sqlite_db, monkeypatch):
    monkeypatch.setattr(labeling, "IMPORT_BATCH", 3)
    store, calls = labeling._store_items, []

    def failing(session, rows):
        calls.append(len(rows))
        if len(calls) == 2:
            raise OSError("disk full")
        store(session, rows)

    monkeypatch.setattr(labeling, "_store_items", failing)
    with pytest.raises(OSError, match="disk full"):
        labeling.create_project("p1", _items(8), NO_GOLD)
    assert calls == [3, 3]  # the first batch was committed before the second failed
    assert _rows() == (0, 0)  # and removed again with the project
    monkeypatch.setattr(labeling, "_store_items", store)
    labeling.create_project("p1", _items(8), NO_GOLD)  # the name is free
    assert review.progress("p1").items == 8


def test_a_name_taken_while_the_items_went_in_is_refused_and_the_import_removed(sqlite_db, monkeypatch):
    publish = labeling._publish

    def racing(project_id, slug, engine):
        monkeypatch.setattr(labeling, "_publish", publish)
        labeling.create_project("p1", _items(1), NO_GOLD)  # another researcher, same name, meanwhile
        publish(project_id, slug, engine)

    monkeypatch.setattr(labeling, "_publish", racing)
    with pytest.raises(LabelingError, match="A labeling project called 'p1' already exists."):
        labeling.create_project("p1", _items(3), NO_GOLD)
    assert _rows() == (1, 1)  # only the other researcher's project and its one item


def test_an_import_cut_off_long_ago_is_removed_by_the_next_creation(sqlite_db):
    from datetime import timedelta

    from engines.platform.db import write_transaction
    from engines.platform.models import utcnow

    with write_transaction() as session:
        for name, age in (("old", timedelta(hours=7)), ("running", timedelta(minutes=1))):
            project = LabelingProject(slug=f"{labeling.IMPORTING}{name}", is_open=False, created_at=utcnow() - age)
            session.add(project)
            session.flush()
            session.add(LabelingItem(project_id=project.id, key="k", position=0))
    labeling.create_project("p1", _items(1), NO_GOLD)
    with read_session() as session:
        slugs = sorted(session.exec(select(LabelingProject.slug)).all())
    assert slugs == ["p1", f"{labeling.IMPORTING}running"]  # one still importing elsewhere is left alone
    assert _rows() == (2, 2)
