"""A researcher in Chromium on Research -> HOI-Edit: the shipped demo's leaderboard and an item's edits,
then an arena study's ratings, which change when another participant has voted."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from engines.platform.bots import run_bot
from studies.hoi_arena.bot import PlayerBot
from tests.e2e.browser_bot import wait_ready
from tests.e2e.test_research_flow import open_as

pytestmark = pytest.mark.browser


def _votes_counted(page) -> str:
    return page.get_by_text("votes counted").first.inner_text()


def test_a_researcher_sees_the_leaderboard_the_edits_and_the_arena_ratings_change(new_page, app_server, e2e_db):
    slug = e2e_db.create_study(f"arena-{secrets.token_hex(3)}", "hoi_arena", config={"constants": {"ROUNDS": 4}})
    run_bot(slug, PlayerBot(case="votes_every_pair"), "panel-1", engine=e2e_db.engine)

    page = new_page()
    open_as(page, app_server, e2e_db, "researcher", "hoi-edit")
    expect(page.get_by_role("heading", name="HOI-Edit comparisons")).to_be_visible()
    expect(page.get_by_text("Synthetic demo: drawn scenes")).to_be_visible()
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()  # the paper's table

    page.get_by_role("tab", name="Item browser").click()
    expect(page.get_by_text("Instruction:").first).to_be_visible()
    expect(page.get_by_text("frame", exact=False).first).to_be_visible()
    expect(page.get_by_test_id("stImage").first).to_be_visible()

    page.get_by_role("tab", name="Arena results").click()
    page.get_by_role("combobox", name="Votes of").click()
    page.get_by_role("option", name=f"the arena study “{slug}”").click()
    wait_ready(page)
    expect(page.get_by_text("4 votes counted")).to_be_visible()

    run_bot(slug, PlayerBot(case="votes_every_pair"), "panel-2", engine=e2e_db.engine)
    page.reload()
    wait_ready(page)
    page.get_by_role("tab", name="Arena results").click()
    page.get_by_role("combobox", name="Votes of").click()
    page.get_by_role("option", name=f"the arena study “{slug}”").click()
    wait_ready(page)
    expect(page.get_by_text("8 votes counted")).to_be_visible()
