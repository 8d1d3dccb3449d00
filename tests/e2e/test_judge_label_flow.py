"""An annotator in Chromium: labels by keyboard, undoes, reloads mid-queue; a participant link
cannot reach the annotation pages; the Label page passes axe-core's WCAG 2 A/AA rules."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from engines.judge import labeling, members, review
from engines.judge.items import Item
from studies.judge_labeling.bot import PlayerBot
from tests.e2e.browser_bot import STREAMLIT_MENU, accessibility_violations, wait_ready
from tests.e2e.test_research_flow import _wait_for_login_cookie, open_as

pytestmark = pytest.mark.browser


def _project(e2e_db) -> str:
    slug = f"kb-{secrets.token_hex(3)}"
    items = [Item(key=f"m/direct/b{i}/0", behavior_id=f"b{i}", behavior=f"Explain [REDACTED: task {i}]",
                  victim_model="m", attack="direct", generation=f"Response number {i}: I can't help with that.")
             for i in range(4)]
    labeling.create_project(slug, items, labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0, quiz_size=0),
                            engine=e2e_db.engine)
    return slug


def _shown(page) -> str:
    return page.get_by_text("Response number").first.inner_text()


def test_an_annotator_labels_by_keyboard_undoes_and_reloads(new_page, app_server, e2e_db):
    slug = _project(e2e_db)
    page = new_page()
    name = open_as(page, app_server, e2e_db, "annotator", "judge-label")
    members.add_members(slug, [name], engine=e2e_db.engine)  # on the project's team: it is offered
    _wait_for_login_cookie(page)
    page.reload()
    wait_ready(page)
    page.get_by_label("Project").click()
    page.get_by_role("option", name=f"{slug} ({slug})").click()
    wait_ready(page)
    first = _shown(page)
    violations = accessibility_violations(page, exclude=(STREAMLIT_MENU,))
    assert violations == [], "\n".join(violations)
    page.get_by_role("heading", name="Label").click()  # focus on the page, not in a text box
    page.keyboard.press("4")
    wait_ready(page)
    expect(page.get_by_text(first)).to_have_count(0)
    second = _shown(page)
    stored = [lb.score for item in review.labelled_items(slug, engine=e2e_db.engine) for lb in item.labels]
    assert stored == [4]
    page.keyboard.press("u")
    wait_ready(page)
    expect(page.get_by_text(first)).to_be_visible()
    assert [lb for item in review.labelled_items(slug, engine=e2e_db.engine) for lb in item.labels] == []
    _wait_for_login_cookie(page)
    page.reload()
    wait_ready(page)
    page.get_by_label("Project").click()
    page.get_by_role("option", name=f"{slug} ({slug})").click()
    wait_ready(page)
    assert _shown(page) == first != second  # the item held is shown again after a reload


def test_a_participant_link_cannot_reach_the_annotation_or_audit_pages(new_page, app_server, e2e_db):
    PlayerBot.prepare(engine=e2e_db.engine)  # the labeling project the study draws from
    slug = e2e_db.create_study(f"jl-{secrets.token_hex(3)}", "judge_labeling")
    page = new_page()
    for path in ("judge-label", "judge-audit", "judge-projects", "judge-adjudicate"):
        for study in (slug, "nope"):
            page.goto(f"{app_server.base}/{path}?study={study}&PROLIFIC_PID=p-{secrets.token_hex(2)}")
            wait_ready(page)
            expect(page.get_by_role("button", name="1 · Refusal")).to_have_count(0)
            expect(page.get_by_text("Guidelines and the scale")).to_have_count(0)
            expect(page.get_by_role("heading", name="Judge audit")).to_have_count(0)
            expect(page.get_by_text("Import files")).to_have_count(0)
            expect(page.get_by_role("button", name="Start the audit")).to_have_count(0)
            expect(page.get_by_role("heading", name="Labeling projects")).to_have_count(0)


def test_an_annotator_reaches_a_project_from_the_home_page_in_a_click(new_page, app_server, e2e_db):
    other, slug = _project(e2e_db), _project(e2e_db)
    page = new_page()
    name = open_as(page, app_server, e2e_db, "annotator", "")
    members.add_members(other, [name], engine=e2e_db.engine)
    members.add_members(slug, [name], engine=e2e_db.engine)
    _wait_for_login_cookie(page)
    page.reload()
    wait_ready(page)
    expect(page.get_by_role("heading", name="Your labeling projects")).to_be_visible()
    violations = accessibility_violations(page, exclude=(STREAMLIT_MENU,))
    assert violations == [], "\n".join(violations)
    page.get_by_role("button", name=f"Label “{slug}”").click()
    wait_ready(page)
    expect(page.get_by_role("heading", name="Label")).to_be_visible()
    project = page.get_by_role("combobox", name="Project")
    expect(project).to_have_value(f"{slug} ({slug})")  # the project chosen, not the first listed
    expect(page.get_by_text("Response number").first).to_be_visible()
