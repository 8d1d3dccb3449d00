"""A panel worker from a Prolific link labels in Chromium: the judge-labeling study's bot plays it
through the page, every page passes axe-core's WCAG 2 A/AA rules, a reload mid-queue keeps the
item, and each rating is stored both as the step's answer and as a label in the project's queue."""

from __future__ import annotations

import secrets

import pytest

from engines.judge import labeling
from engines.platform.bots import Submission, iterate_with_view
from studies.judge_labeling import Label
from studies.judge_labeling.bot import PlayerBot, bot_items
from tests.e2e.browser_bot import BrowserParticipant

pytestmark = pytest.mark.browser


def test_a_panel_worker_rates_every_item_and_the_labels_reach_the_project(new_page, app_server, e2e_db):
    engine = e2e_db.engine
    project = f"panel-{secrets.token_hex(3)}"
    labeling.create_project(project, bot_items(3), labeling.ProjectSettings(overlap_fraction=0.0, gold_every=0,
                                                                            quiz_size=0), engine=engine)
    slug = e2e_db.create_study(f"jl-{secrets.token_hex(3)}", "judge_labeling", config={"constants": {
        "PROJECT": project, "ITEMS": 3}})
    worker = BrowserParticipant(new_page(), app_server.base, slug, f"e2e-{secrets.token_hex(3)}", engine)
    worker.open()
    bot = PlayerBot()
    reloaded = None
    for item in iterate_with_view(bot, worker.view):
        if item.step is Label and isinstance(item, Submission) and reloaded is None:
            # An item to rate is on the page; a reload shows the same one.
            shown = bot.view.template_vars["claim_id"]
            reloaded = worker.reload().template_vars["claim_id"]
            assert reloaded == shown
        worker.play_one(item, bot)
    assert reloaded is not None
    final = worker.view()
    assert final.status == "completed"
    worker.expect_completion(final.completion.code)
    worker.check_stored()
    assert Label in worker.pages_checked and "completed" in worker.pages_checked
    labels = [(lb.annotator_id, lb.score) for it in labeling.labelled_items(project, engine=engine) for lb in it.labels]
    assert labels == [(f"study:{slug}:{worker.external_id}", score) for score in bot.rated] and len(labels) == 3
