"""The collaboration study in Chromium, as a Prolific participant meets it on a shortened instance.

The instance overrides ``{"ROUNDS": 2, "INTERACTIONS": 3}``: every text, choice and count on the
pages must follow it (the consent's length, "Up to 2" rounds, "Step n of 9"). One participant is
screened out by the comprehension check, and does not count toward balance; the next one
completes the study with a reload in the middle of an interaction; every page both see passes
axe-core's WCAG 2 A/AA rules.
"""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from engines.collab import store
from engines.platform.bots import SubmissionMustFail, iterate_with_view
from engines.platform.panels import PROLIFIC_COMPLETE_URL
from studies.collab_shapes import Comprehension, Consent, Trial
from studies.collab_shapes.bot import PlayerBot
from tests.e2e.browser_bot import BrowserParticipant, widget

pytestmark = pytest.mark.browser
SHORT = {"INTERACTIONS": 3, "ROUNDS": 2}


def play_with_reload(p: BrowserParticipant, bot: PlayerBot) -> bool:
    """Play ``bot`` through the page, reloading once when round 2 of an image shows the AI's set."""
    reloaded = False
    for item in iterate_with_view(bot, p.view):
        view = bot.view
        bot.participant_id, bot.condition = view.participant_id, view.condition
        if view.step.step is Trial and view.step.round_number == 2 and not reloaded:
            shown = view.template_vars["ai_set"]
            expect(p.page.get_by_text("The AI's set")).to_be_visible()
            after = p.reload()  # the same round, the same stored set
            assert after.step.index == view.step.index and after.template_vars["ai_set"] == shown
            expect(p.page.get_by_text("The AI's set")).to_be_visible()
            reloaded = True
        if isinstance(item, SubmissionMustFail):
            if any(widget(p.page, view.step.index, name).count() == 0 for name in item.data):
                continue  # the page offers no widget for this value (the last round is final)
            p.answer_must_fail(item)
        else:
            p.answer(item.data, step=item.step)
    return reloaded


def test_shortened_study_with_a_screen_out_and_a_reload(new_page, app_server, e2e_db, server_log_on_failure):
    engine = e2e_db.engine
    slug = e2e_db.create_study(f"collab-{secrets.token_hex(3)}", "collab_shapes", config={"constants": SHORT})

    # A participant who misreads the instructions twice is screened out, at the page.
    out = BrowserParticipant(new_page(), app_server.base, slug, f"e2e-out-{secrets.token_hex(3)}", engine)
    first = out.open()
    assert first.step.step is Consent and (first.position, first.total_steps) == (0, 9)
    page_text = out.page.get_by_test_id("stMarkdownContainer").all_inner_texts()
    assert any("3 small images (about 5 minutes)" in t for t in page_text), page_text
    final = out.play(PlayerBot("fails_comprehension"))
    assert final.status == "screened_out" and final.condition == "online"
    out.expect_completion("SHAPESSCREEN")
    out.reload()  # still the screened-out page after a reload

    # The next participant lands in "online" too: a screen-out does not count toward balance.
    p = BrowserParticipant(new_page(), app_server.base, slug, f"e2e-collab-{secrets.token_hex(4)}", engine)
    p.open()
    bot = PlayerBot("follows_ai")
    reloaded = play_with_reload(p, bot)
    final = p.view()
    assert reloaded and final.status == "completed" and final.condition == "online"
    p.expect_completion(final.completion.code)
    expect(p.page.get_by_test_id("stLinkButton").locator("a")).to_have_attribute(
        "href", f"{PROLIFIC_COMPLETE_URL}?cc={final.completion.code}")
    p.check_stored()

    # What was stored: three images of at most two rounds, one stream update each, in order.
    trials = [r for r in p.responses() if r.step_name == "Trial"]
    assert 3 <= len(trials) <= 6
    updates = [u for u in store.history(f"{slug}:online", engine=engine) if u.participant_id == p.participant_id]
    assert [u.interaction_key for u in updates] == [f"{p.participant_id}:{i}" for i in range(3)]
    store.audit(f"{slug}:online", engine=engine)
    assert Comprehension in {v for v in p.pages_checked} and Trial in p.pages_checked
