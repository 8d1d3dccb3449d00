"""A panel worker from a Prolific link votes in the HOI-Edit arena in Chromium: the names of the two methods are
hidden until the vote and shown after it, a reload mid-way resumes at the same pair, a double-clicked vote
counts once, the completion code appears at the end, and every page passes axe-core's WCAG 2 A/AA rules."""

from __future__ import annotations

import json
import secrets

import pytest
from playwright.sync_api import Locator, Page, expect

from engines.hoi import arena
from engines.platform import runtime
from studies.hoi_arena import Battle, Consent, Instructions
from tests.e2e.browser_bot import FRESH, BrowserParticipant, submit_button, wait_ready
from tests.hoi.test_hoi_arena import LABELS, dense_outputs, write_benchmark

pytestmark = pytest.mark.browser

ROUNDS = 3
# Every way a method could be named on a page: its folder name and its label.
NAMES = ("bagel", "kontext", "scpe", *LABELS.values())


def vote_button(page: Page, step_index: int, label: str) -> Locator:
    return page.locator(f"[data-testid='stElementContainer']{FRESH}[class*='st-key-FormSubmitter-form-{step_index}-'] "
                        "button").filter(has_text=label)


class ArenaParticipant(BrowserParticipant):
    """A participant whose pair pages are checked for what they show (the other pages as every study's)."""

    def expect_showing(self, view: runtime.StepView) -> None:
        if view.finished or view.step.step is not Battle:
            super().expect_showing(view)
            return
        page, tv, index = self.page, view.template_vars, view.step.index
        expect(page.get_by_test_id("stProgress")).to_contain_text(f"Pair {tv['pair']} of {tv['pairs']}")
        for alt in ("The original photo", "Edit A:", "Edit B:"):
            expect(page.locator(f"img[alt^='{alt}']")).to_have_count(1)
        if tv["phase"] == "vote":
            for label in arena.CHOICES:
                expect(vote_button(page, index, label)).to_be_visible()
            html = page.content()
            assert not [name for name in NAMES if name in html], "a method is named before the vote"
        else:
            expect(submit_button(page, index)).to_be_visible()
            expect(page.get_by_text(f"Edit A: {tv['name_a']}", exact=True)).to_be_visible()
            expect(page.get_by_text(f"Edit B: {tv['name_b']}", exact=True)).to_be_visible()
        self.check_accessible((Battle, tv["phase"]))

    def vote(self, label: str, *, double_click: bool = False) -> runtime.StepView:
        before = self.view()
        assert before.template_vars["phase"] == "vote"
        button = vote_button(self.page, before.step.index, label)
        if double_click:
            button.dblclick(delay=0)
        else:
            button.click()
        return self.wait_moved_on(before)

    def next_pair(self) -> runtime.StepView:
        before = self.view()
        assert before.template_vars["phase"] == "reveal"
        self.click_submit(before.step.index)
        return self.wait_moved_on(before)


def test_a_panel_worker_votes_on_anonymous_pairs_and_sees_the_names_after(new_page, app_server, e2e_db, tmp_path):
    bench = write_benchmark(tmp_path / "bench", dense_outputs(), labels=LABELS)
    slug = e2e_db.create_study(f"arena-{secrets.token_hex(3)}", "hoi_arena",
                               config={"constants": {"BENCHMARK": str(bench), "ROUNDS": ROUNDS}})
    worker = ArenaParticipant(new_page(), app_server.base, slug, f"e2e-{secrets.token_hex(3)}", e2e_db.engine)
    worker.open()
    worker.answer({"agree": True}, step=Consent)
    view = worker.answer({}, step=Instructions)
    assert (view.step.step, view.template_vars["pair"]) == (Battle, 1)

    revealed = worker.vote("A is better")
    assert revealed.template_vars["choice"] == "A is better"
    view = worker.next_pair()

    # A reload mid-way shows the same pair, with the same images.
    edit_a = worker.page.locator("img[alt^='Edit A:']").get_attribute("src")
    reloaded = worker.reload()
    assert (reloaded.step.index, reloaded.template_vars["pair"]) == (view.step.index, 2)
    wait_ready(worker.page)
    assert worker.page.locator("img[alt^='Edit A:']").get_attribute("src") == edit_a

    # A double click on a vote stores one vote and stops at the reveal of that pair.
    revealed = worker.vote("B is better", double_click=True)
    assert (revealed.template_vars["phase"], revealed.template_vars["pair"]) == ("reveal", 2)
    worker.next_pair()
    worker.vote("Both are bad")
    final = worker.next_pair()

    assert final.status == "completed"
    worker.expect_completion(final.completion.code)
    assert final.completion.code == "HOIARENA26"
    votes = [(r.data["pair"], r.data["choice"]) for r in worker.responses() if arena.is_vote(r.data)]
    assert votes == [(1, "A is better"), (2, "B is better"), (3, "Both are bad")]
    reveals = [r.data["pair"] for r in worker.responses() if "pair" in r.data and not arena.is_vote(r.data)]
    assert reveals == [1, 2, 3]
    rows = [json.loads(line) for line in arena.export_votes(slug, engine=e2e_db.engine).decode().splitlines()]
    assert [row["winner"] for row in rows] == ["model_a", "model_b", "tie (bothbad)"]
    assert {Consent, Instructions, (Battle, "vote"), (Battle, "reveal"), "completed"} <= worker.pages_checked
