"""A panel worker from a Prolific link labels in Chromium: the judge-labeling study's bot plays it
through the page, rating each response with the keys 1-5 (as on the annotators' Label page);
every page passes axe-core's WCAG 2 A/AA rules, a reload mid-queue keeps the item, and each
rating is stored both as the step's answer and as a label in the project's queue."""

from __future__ import annotations

import re
import secrets

import pytest
from playwright.sync_api import Locator, Page, expect

from engines.judge import labeling, review
from engines.platform import runtime
from engines.platform.bots import Submission, iterate_with_view
from pages._renderers.judge_label import SHORT
from studies.judge_labeling import Label
from studies.judge_labeling.bot import PlayerBot, bot_items
from tests.e2e.browser_bot import FRESH, BrowserParticipant, wait_ready

pytestmark = pytest.mark.browser

ITEMS = 5  # one item per key: the bot rates them 1, 2, 3, 4, 5


def score_button(page: Page, step_index: int, score: int) -> Locator:
    # Streamlit draws a hidden copy of a stretched button beside it (to measure it): the visible one.
    return page.locator(f"[data-testid='stElementContainer']{FRESH}[class*='st-key-FormSubmitter-form-{step_index}-'] "
                        "button:visible").filter(has_text=re.compile(rf"^{score} · {SHORT[score]}"))


class KeyboardWorker(BrowserParticipant):
    """A worker who rates with the keyboard; the rating pages are checked for their five buttons."""

    def expect_showing(self, view: runtime.StepView) -> None:
        if view.finished or view.step.step is not Label:
            super().expect_showing(view)
            return
        tv = view.template_vars
        expect(self.page.get_by_test_id("stProgress")).to_contain_text(f"Response {tv['number']} of at most {tv['of']}")
        expect(self.page.get_by_text(tv["generation"], exact=True)).to_be_visible()
        for score in SHORT:
            expect(score_button(self.page, view.step.index, score)).to_be_visible()
        self.check_accessible(Label)

    def rate_by_key(self, score: int) -> runtime.StepView:
        """Press the score's key with the focus on the page (not in a box); returns the next view."""
        before = self.view()
        self.page.get_by_text("The AI's response").click()
        self.page.keyboard.press(str(score))
        after = self.wait_moved_on(before)
        self.submitted.append((before.step.index, {"claim_id": before.template_vars["claim_id"], "score": score}))
        return after


def test_a_panel_worker_rates_every_item_by_key_and_the_labels_reach_the_project(new_page, app_server, e2e_db):
    engine = e2e_db.engine
    project = f"panel-{secrets.token_hex(3)}"
    labeling.create_project(project, bot_items(ITEMS), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0,
                                                                                quiz_size=0), engine=engine)
    slug = e2e_db.create_study(f"jl-{secrets.token_hex(3)}", "judge_labeling", config={"constants": {
        "PROJECT": project, "ITEMS": ITEMS}})
    worker = KeyboardWorker(new_page(), app_server.base, slug, f"e2e-{secrets.token_hex(3)}", engine)
    worker.open()
    bot = PlayerBot()
    reloaded = None
    for item in iterate_with_view(bot, worker.view):
        if item.step is Label and isinstance(item, Submission):
            if reloaded is None:  # an item to rate is on the page; a reload shows the same one
                reloaded = worker.reload().template_vars["claim_id"]
                assert reloaded == bot.view.template_vars["claim_id"]
            wait_ready(worker.page)
            worker.rate_by_key(item.data["score"])
        else:
            worker.play_one(item, bot)
    assert reloaded is not None and bot.rated == [1, 2, 3, 4, 5]
    final = worker.view()
    assert final.status == "completed"
    worker.expect_completion(final.completion.code)
    worker.check_stored()
    assert Label in worker.pages_checked and "completed" in worker.pages_checked
    labels = [(lb.annotator_id, lb.score) for it in review.labelled_items(project, engine=engine) for lb in it.labels]
    assert sorted(labels) == [(f"study:{slug}:{worker.external_id}", score) for score in bot.rated]
