"""A researcher in Chromium on Research -> Video inspector: the shipped demo's trajectory, a click on
an inspected span of the timeline, and the player seeking to where that span starts."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from engines.video import library
from tests.e2e.browser_bot import wait_ready
from tests.e2e.test_research_flow import open_as

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not library.demo_runs(), reason="the shipped demo is written by "
                                 "`python -m engines.video demo`")]


def test_a_click_on_a_span_of_the_timeline_plays_the_video_there(new_page, app_server, e2e_db):
    page = new_page()
    open_as(page, app_server, e2e_db, "researcher", "video-inspector")
    expect(page.get_by_role("heading", name="Video inspector")).to_be_visible()
    expect(page.get_by_text("Synthetic demo").first).to_be_visible()
    timeline = page.locator(".js-plotly-plot").first
    expect(timeline).to_be_visible()
    expect(page.get_by_text("Playing from 0 s")).to_be_visible()
    # The evidence lane is the top one; its bar is the first trace's. Click the last bar drawn (an
    # inspected span, drawn after the hits) and read back where it starts from the hover text.
    bars = timeline.locator("g.trace.bars path")
    expect(bars.first).to_be_visible()
    bars.last.click(force=True)
    wait_ready(page)
    caption = page.get_by_text("Playing from ").first
    expect(caption).not_to_have_text("Playing from 0 s")
    start = float(caption.inner_text().split("Playing from ")[1].split(" s")[0])
    video = page.locator("video").first
    expect(video).to_be_visible()
    page.wait_for_function("v => v.readyState >= 1", arg=video.element_handle(), timeout=15_000)
    current = video.evaluate("v => v.currentTime")
    assert abs(current - start) <= 1.0, (current, start)
