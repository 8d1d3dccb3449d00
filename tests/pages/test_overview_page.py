"""The home page: an annotator sees their own labeling projects and reaches one in a click; a
researcher sees the studies, the open labeling projects and recent jobs under readable headings."""

from __future__ import annotations

from engines.judge import labeling, members
from engines.judge.items import Item
from engines.judge.labeling import ProjectSettings
from engines.platform import jobqueue, study_admin
from tests.apptest_driver import APP, page_as

NO_GOLD = ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0)


def _items(n: int) -> list[Item]:
    return [Item(key=f"m1/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"behaviour {i}", victim_model="m1",
                 attack="direct", generation=f"generation {i}") for i in range(n)]


def _projects_with_the_annotator_on_one():
    labeling.create_project("wave-1", _items(3), NO_GOLD)
    labeling.create_project("other-team", _items(2), NO_GOLD)


def test_an_annotator_sees_only_their_projects_with_their_own_counts(sqlite_db):
    _projects_with_the_annotator_on_one()
    at = page_as("overview", "annotator")
    members.add_members("wave-1", ["annotator_user"])
    at.run()
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Your labeling projects"]
    [table] = at.dataframe
    assert table.value.to_dict("records") == [{"Project": "wave-1", "You labelled": 0, "Skipped": 0, "Paused": ""}]
    assert [b.label for b in at.button] == ["Label “wave-1”"]
    assert not at.metric  # study figures are a researcher's, not an annotator's


def test_an_annotator_on_no_team_is_told_how_projects_reach_them(sqlite_db):
    _projects_with_the_annotator_on_one()
    at = page_as("overview", "annotator")
    assert not at.exception and not at.dataframe
    assert "No open labeling project has you on its team yet" in at.info[0].value


def test_the_label_button_opens_the_label_page_on_that_project(sqlite_db):
    labeling.create_project("other-team", _items(2), NO_GOLD)
    labeling.create_project("wave-1", _items(3), NO_GOLD)
    at = page_as(APP, "annotator")  # the whole app: the button moves to another page of its menu
    members.add_members("wave-1", ["annotator_user"])
    members.add_members("other-team", ["annotator_user"])
    at.run()
    at.button(key="overview-label-wave-1").click()
    at.run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Label"]
    assert at.selectbox(key="judge-label-project").value == "wave-1"  # not the first project listed


def test_a_researcher_sees_studies_labeling_projects_and_jobs_with_readable_columns(sqlite_db):
    _projects_with_the_annotator_on_one()
    study_admin.create_study("shapes-pilot", "collab_shapes", title="Pilot")
    jobqueue.submit_job("platform.countdown", {"seconds": 0.0})
    at = page_as("overview", "researcher")
    assert not at.exception
    assert [s.value for s in at.subheader] == ["Studies", "Open labeling projects", "Recent jobs"]
    studies, projects, jobs = (t.value for t in at.dataframe)
    assert list(studies.columns) == ["Study", "Title", "Protocol", "Open", "Participants", "Completed"]
    assert studies.to_dict("records")[0]["Study"] == "shapes-pilot"
    assert sorted(projects["Slug"]) == ["other-team", "wave-1"]
    assert jobs.to_dict("records") == [{"Job": 1, "Kind": "platform.countdown", "Status": "queued",
                                        "Progress": "0%"}]
