"""The collaboration study in Chromium: a Prolific participant completes it, reloading mid-interaction."""

from __future__ import annotations

import secrets
import time

import pytest
from playwright.sync_api import expect

from engines.collab import store
from engines.platform import runtime
from engines.platform.bots import SubmissionMustFail, iterate_with_view
from engines.platform.forms import field_specs
from studies.collab_shapes.bot import PlayerBot
from tests.e2e.browser_bot import errors, set_field, study_link, submit_button, wait_ready

pytestmark = pytest.mark.browser
INTERACTIONS = 2


def _wait_moved_on(view_now, index: int, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        view = view_now()
        if view.finished or view.step.index != index:
            return view
        time.sleep(0.1)
    raise AssertionError(f"the participant did not leave step {index}")


def test_participant_completes_collab_study_with_reload(new_page, app_server, e2e_db):
    engine = e2e_db.engine
    slug = e2e_db.create_study(f"collab-{secrets.token_hex(3)}", "collab_shapes",
                               config={"constants": {"INTERACTIONS": INTERACTIONS}})
    external_id = f"e2e-collab-{secrets.token_hex(4)}"
    page = new_page()
    page.goto(study_link(app_server.base, slug, external_id, STUDY_ID="s1", SESSION_ID="x1"))
    wait_ready(page)
    participant_id = runtime.find_participant(slug, external_id, engine=engine)
    assert participant_id is not None

    def view_now():
        return runtime.current_view(participant_id, engine=engine)

    bot = PlayerBot("follows_ai")
    bot.participant_id = participant_id
    reloaded = False
    for item in iterate_with_view(bot, view_now):
        view = bot.view
        assert view.step.step is item.step, (view.step.name, item.step.__name__)
        index = view.step.index
        if view.step.name == "Trial" and view.step.round_number == 2 and not reloaded:
            # Mid-interaction: the AI's set is on the page; a reload shows the same round and set.
            shown = view.template_vars["ai_set"]
            expect(page.get_by_text("The AI's set of likely counts")).to_be_visible()
            page.reload()
            wait_ready(page)
            assert view_now().step.index == index and view_now().template_vars["ai_set"] == shown
            expect(page.get_by_text("The AI's set of likely counts")).to_be_visible()
            reloaded = True
        specs = [s for s in field_specs(item.step.Response) if s.name in item.data]
        if not all(set_field(page, index, s, item.data[s.name]) for s in specs):
            continue  # a value the widget cannot take (headless bots cover it)
        submit_button(page, index).click()
        if isinstance(item, SubmissionMustFail):
            expect(errors(page).first).to_be_visible()
            wait_ready(page)
            assert view_now().step.index == index, "a rejected answer moved the participant on"
            continue
        _wait_moved_on(view_now, index)
        wait_ready(page)

    final = view_now()
    assert reloaded and final.status == "completed" and final.condition == "online"
    expect(page.get_by_test_id("stCode")).to_contain_text(final.completion.code)
    expect(page.get_by_test_id("stLinkButton").locator("a")).to_have_attribute(
        "href", f"https://app.prolific.com/submissions/complete?cc={final.completion.code}")
    updates = [u for u in store.history(f"{slug}:online", engine=engine) if u.participant_id == participant_id]
    assert [u.interaction_key for u in updates] == [f"{participant_id}:{i}" for i in range(INTERACTIONS)]
    store.audit(f"{slug}:online", engine=engine)
