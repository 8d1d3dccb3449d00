"""A panel worker from a Prolific link votes in the HOI-Edit arena in Chromium: the names of the two methods are
hidden until the vote and shown after it, a reload mid-way resumes at the same pair, a double-clicked vote
counts once, the completion code appears at the end, and every page passes axe-core's WCAG 2 A/AA rules.
On a 390 x 844 phone the two edits of a pair are in view together and every vote button is in reach."""

from __future__ import annotations

import json
import secrets

import pytest
from PIL import Image
from playwright.sync_api import Locator, Page, expect

from engines.hoi import arena
from engines.platform import runtime, settings
from studies.hoi_arena import Battle, Consent, Instructions
from tests.e2e.browser_bot import FRESH, BrowserParticipant, accessibility_violations, submit_button, wait_ready
from tests.hoi.test_hoi_arena import LABELS, dense_outputs, write_benchmark

pytestmark = pytest.mark.browser

ROUNDS = 3
# Every way a method could be named on a page: its folder name and its label.
NAMES = ("bagel", "kontext", "scpe", *LABELS.values())
PHONE = {"width": 390, "height": 844}  # an iPhone 12-14 in CSS pixels
PHOTO = (300, 400)  # a portrait photo, as phones take them: the tallest case for a layout


@pytest.fixture
def arena_study(e2e_db, monkeypatch):
    """``make(rounds)``: an arena study on a benchmark of portrait photos registered in the server's data
    folder (the study checks its folder in this process too, so this process reads that data folder)."""
    monkeypatch.setenv("HAI_DATA_DIR", str(e2e_db.data_dir))
    settings.reset_settings()

    def make(rounds: int) -> str:
        name = f"arena-{secrets.token_hex(3)}"
        bench = write_benchmark(e2e_db.data_dir / "datasets" / "hoi" / name, dense_outputs(), labels=LABELS)
        for number, path in enumerate(sorted(bench.rglob("*.png"))):
            Image.new("RGB", PHOTO, (40 * number % 256, 90, 160)).save(path)
        return e2e_db.create_study(name, "hoi_arena",
                                   config={"constants": {**arena.frozen_methods(bench), "ROUNDS": rounds}})

    yield make
    settings.reset_settings()


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


def test_a_panel_worker_votes_on_anonymous_pairs_and_sees_the_names_after(new_page, app_server, e2e_db, arena_study):
    slug = arena_study(ROUNDS)
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


def in_view(page: Page, locator: Locator) -> bool:
    """The element's whole box lies inside the viewport as scrolled now."""
    box = locator.bounding_box()
    size = page.viewport_size
    return (box is not None and box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"]
            and box["y"] + box["height"] <= size["height"])


def images_loaded(page: Page) -> None:
    page.wait_for_function(f"() => [...document.querySelectorAll(\"{FRESH} img\")]"
                           ".every(img => img.complete && img.naturalWidth > 0)")


def test_on_a_phone_both_edits_are_in_view_together_and_every_button_in_reach(browser, app_server, e2e_db,
                                                                               arena_study):
    slug = arena_study(2)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=3)
    context.set_default_timeout(20_000)
    try:
        worker = ArenaParticipant(context.new_page(), app_server.base, slug, f"phone-{secrets.token_hex(3)}",
                                  e2e_db.engine)
        worker.open()
        worker.answer({"agree": True}, step=Consent)
        worker.answer({}, step=Instructions)
        page = worker.page
        for phase in ("vote", "reveal"):
            assert worker.view().template_vars["phase"] == phase
            images_loaded(page)
            edit_a, edit_b = page.locator("img[alt^='Edit A:']"), page.locator("img[alt^='Edit B:']")
            edit_a.evaluate("image => image.scrollIntoView({block: 'center'})")
            assert in_view(page, edit_a) and in_view(page, edit_b), (
                f"{phase}: edits A and B are not in view together: {edit_a.bounding_box()}, {edit_b.bounding_box()}")
            # Readable, not thumbnails: each edit is at least a third of the screen wide.
            assert min(edit_a.bounding_box()["width"], edit_b.bounding_box()["width"]) >= PHONE["width"] / 3
            assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], "the page scrolls sideways"
            violations = accessibility_violations(page)
            assert not violations, f"{phase} on a phone: accessibility violations:\n" + "\n".join(violations)
            if phase == "vote":
                index = worker.view().step.index
                for label in arena.CHOICES:
                    button = vote_button(page, index, label)
                    button.evaluate("button => button.scrollIntoView({block: 'center'})")
                    assert in_view(page, button) and button.is_enabled(), f"{label!r} is out of reach"
                worker.vote("Tie")
        assert [r.data["choice"] for r in worker.responses() if arena.is_vote(r.data)] == ["Tie"]
    finally:
        context.close()
