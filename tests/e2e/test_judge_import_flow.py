"""A researcher in Chromium imports a HarmBench run on the Judge audit page: the uploaded files are
checked, stored and offered as data; a broken file gets an error that names it, its line and field,
and imports nothing."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from tests.e2e.browser_bot import wait_ready
from tests.e2e.test_research_flow import open_as
from tests.judge.conftest import HARMBENCH_BEHAVIORS_CSV, HARMBENCH_COMPLETIONS

pytestmark = pytest.mark.browser
HARMBENCH = "HarmBench: behaviours CSV + one run's completions JSON"


def _upload(page, label: str, path) -> None:
    uploader = page.get_by_test_id("stFileUploader").filter(has_text=label)
    uploader.locator("input[type=file]").set_input_files(str(path))
    expect(uploader.get_by_role("button", name=f"Remove {path.name}")).to_be_visible()


def _import_harmbench(page, tmp_path, name: str, completions: str) -> None:
    behaviors = tmp_path / "behaviors.csv"
    behaviors.write_text(HARMBENCH_BEHAVIORS_CSV, encoding="utf-8")
    run = tmp_path / f"{name}-completions.json"
    run.write_text(completions, encoding="utf-8")
    page.locator(".st-key-judge-upload-name input").fill(name)
    _upload(page, "Behaviours CSV", behaviors)
    _upload(page, "Completions JSON", run)
    page.locator(".st-key-judge-upload-hb-model input").fill("model-a")
    page.locator(".st-key-judge-upload-hb-attack input").fill("gcg")
    page.get_by_role("button", name="Import").click()
    wait_ready(page)


def test_a_researcher_imports_a_harmbench_run_and_a_broken_file_is_named(new_page, app_server, e2e_db, tmp_path):
    page = new_page()
    open_as(page, app_server, e2e_db, "researcher", "judge-audit")
    page.get_by_text("Import files").click()
    page.get_by_text(HARMBENCH).click()
    wait_ready(page)

    broken = HARMBENCH_COMPLETIONS.replace('"Sure, here is the poem: [REDACTED: verse 1]"', "42")
    _import_harmbench(page, tmp_path, "broken", broken)
    expect(page.get_by_text("Nothing was imported. broken-completions.json, line 9: "
                            "poem_topic[1].generation: must be a string, got a number")).to_be_visible()

    slug = f"hb-{secrets.token_hex(3)}"
    _import_harmbench(page, tmp_path, slug, HARMBENCH_COMPLETIONS)
    expect(page.get_by_text(f"Imported '{slug}': 3 items, 0 labels, 0 verdicts.")).to_be_visible()
    # The new set is the data now chosen, and the broken one was never stored.
    expect(page.get_by_label("Items and human labels")).to_have_value(f"Imported files: {slug} ({slug})")
    expect(page.get_by_text("3 items, no human labels")).to_be_visible()
    page.get_by_label("Items and human labels").click()
    expect(page.get_by_role("option", name="Imported files: broken (broken)")).to_have_count(0)
