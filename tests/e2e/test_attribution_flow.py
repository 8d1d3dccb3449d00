"""A researcher in Chromium on Research -> Attribution heatmaps: the cue-reliant shipped policy's maps and
NMR on a scene, another scene with the cue removed, a wrong weights file named in the error."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.e2e.browser_bot import wait_ready
from tests.e2e.test_research_flow import open_as

pytestmark = pytest.mark.browser


def _nmr(page) -> str:
    metric = page.get_by_test_id("stMetric").filter(has_text="NMR, contrast map (mass)")
    return metric.get_by_test_id("stMetricValue").inner_text()


def test_a_researcher_sees_the_maps_of_a_shipped_policy_and_a_wrong_file_is_named(new_page, app_server, e2e_db,
                                                                                   tmp_path):
    page = new_page()
    open_as(page, app_server, e2e_db, "researcher", "attribution-heatmaps")
    expect(page.get_by_role("heading", name="Attribution heatmaps")).to_be_visible()
    expect(page.get_by_role("combobox", name="Reaching policy")).to_have_value(
        "reaching policy trained at rho = 1, seed 0 (success 100% in distribution, 50% with the cue randomised)")
    expect(page.get_by_text("95% CI").first).to_be_visible()
    first = _nmr(page)
    # Six figures at least: the frame, the two ISS maps, the cells, the action, the baselines.
    expect(page.locator(".js-plotly-plot").nth(5)).to_be_visible()

    page.get_by_label("Scene number").fill("3")
    page.get_by_label("Scene number").press("Enter")
    wait_ready(page)
    expect(page.get_by_text("Frame: reaching task, rho=1, scene 3, cue normal.")).to_be_visible()
    assert _nmr(page) != first

    page.get_by_text("a weights file (.pt)").click()
    wait_ready(page)
    wrong = tmp_path / "notes.pt"
    wrong.write_bytes(b"these are notes, not weights")
    uploader = page.get_by_test_id("stFileUploader")
    uploader.locator("input[type=file]").set_input_files(str(wrong))
    wait_ready(page)
    expect(page.get_by_text("notes.pt: not a PyTorch weights file")).to_be_visible()
    expect(page.get_by_text("Choose a policy and a frame above to see its maps.")).to_be_visible()
