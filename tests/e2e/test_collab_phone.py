"""The shapes trial on a phone: a 390x844 Chromium viewport (an iPhone 12 to 15 held upright).

A participant counts triangles in the image and answers below it, so the image and the whole
answer form (count, confidence, final-answer box, submit button) must be on screen together,
with the progress ("Image n of N · round r of R") and, from round 2, the AI's set: nothing of it
may need a scroll between looking and answering. Checked with the page scrolled to its top, on
each layout a trial has: round 1, round 2 with the AI's set and the final-answer box, the last
round with two earlier rounds listed, and round 1 of the next image under the feedback on the
last one. Each passes axe-core's WCAG 2 A/AA rules and has no sideways scroll. On a laptop the
form stays beside the full-size image.
"""

from __future__ import annotations

import re
import secrets

import pytest
from playwright.sync_api import Locator, Page, expect

from engines.platform import runtime
from studies.collab_shapes import TASK_CHOICES, Trial, rounds_choice
from tests.e2e.browser_bot import BrowserParticipant, accessibility_violations, submit_button, widget

pytestmark = pytest.mark.browser
PHONE = {"width": 390, "height": 844}
SHORT = {"INTERACTIONS": 2, "ROUNDS": 3}
LINK_EXTRA = {"STUDY_ID": "s1", "SESSION_ID": "x1"}
# What comes before the first trial, answered through the runtime API: only the trial is under test.
BEFORE_TRIALS = [{"agree": True}, {}, {"task": TASK_CHOICES[0], "rounds": rounds_choice(SHORT["ROUNDS"])},
                 {"answer": "Rarely"}]


@pytest.fixture
def phone(browser):
    """A page in a phone-sized, touch, mobile-viewport context (closed after the test)."""
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True, device_scale_factor=2)
    context.set_default_timeout(20_000)
    yield context.new_page()
    context.close()


def at_first_trial(slug: str, external_id: str, engine) -> runtime.StepView:
    """Enter the study as ``external_id`` and answer every step before the first trial."""
    entered = runtime.enter(slug, {"PROLIFIC_PID": external_id, **LINK_EXTRA}, engine=engine)
    for data in BEFORE_TRIALS:
        view = runtime.current_view(entered.participant_id, engine=engine)
        result = runtime.submit(entered.participant_id, view.step.index, data, engine=engine)
        assert result.accepted, f"{view.step.name}: {data} was refused ({result})"
    view = runtime.current_view(entered.participant_id, engine=engine)
    assert view.step.step is Trial, view.step.name
    return view


def on_screen(page: Page, locator: Locator, what: str) -> dict[str, float]:
    """The element's box, asserted to lie wholly inside the viewport as the page stands (no scrolling)."""
    expect(locator).to_be_visible()
    box = locator.bounding_box()
    assert box is not None, f"{what} has no box"
    size = page.viewport_size
    inside = (box["x"] >= 0 and box["y"] >= 0 and box["x"] + box["width"] <= size["width"]
              and box["y"] + box["height"] <= size["height"])
    assert inside, f"{what} is not wholly on a {size['width']}x{size['height']} screen: {box}"
    return box


def check_trial_fits(page: Page, view: runtime.StepView, name: str) -> None:
    """Progress, image, AI set (from round 2) and the whole answer form are on screen together."""
    tv, index = view.template_vars, view.step.index
    # Clicking submit may have scrolled Streamlit's scroll container; the check is of the page's top.
    page.evaluate("window.scrollTo(0, 0); document.querySelectorAll('*').forEach(e => { e.scrollTop = 0; })")
    progress = f"Image {tv['interaction']} of {tv['interactions']} · round {tv['round']} of {tv['rounds']}"
    on_screen(page, page.get_by_text(progress, exact=True), "the progress")
    image = on_screen(page, page.get_by_role("img", name=re.compile("coloured shapes to count")), "the image")
    assert image["width"] >= 180, f"the image is too small to count shapes in: {image}"
    if tv["round"] > 1:
        on_screen(page, page.get_by_text("The AI's set", exact=False), "the AI's set")
    for field in ("answer", "confidence") + (("final",) if tv["can_finalise"] and not tv["last_round"] else ()):
        on_screen(page, widget(page, index, field), f"the {field} field")
    submit = on_screen(page, submit_button(page, index), "the submit button")
    assert submit["y"] > image["y"], "the form sits below the image"
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the page scrolls sideways ({width} px wide)"
    violations = accessibility_violations(page)
    assert not violations, f"{name}: accessibility violations:\n" + "\n".join(violations)


def test_a_trial_fits_a_phone_screen(phone, app_server, e2e_db, server_log_on_failure):
    engine = e2e_db.engine
    slug = e2e_db.create_study(f"phone-{secrets.token_hex(3)}", "collab_shapes", config={"constants": SHORT})
    external_id = f"e2e-phone-{secrets.token_hex(4)}"
    first = at_first_trial(slug, external_id, engine)
    assert first.template_vars["mode"] != "none"  # the first participant of a study gets the AI

    p = BrowserParticipant(phone, app_server.base, slug, external_id, engine)
    view = p.open()
    assert view.step.index == first.step.index
    check_trial_fits(phone, view, "round-1")

    view = p.answer({"answer": 3, "confidence": 2}, step=Trial)  # the AI's set follows
    assert view.template_vars["round"] == 2 and view.template_vars["ai_set"] is not None
    check_trial_fits(phone, view, "round-2")  # with the final-answer box

    view = p.answer({"answer": 3, "confidence": 3, "final": False}, step=Trial)
    assert view.template_vars["last_round"] and len(view.template_vars["history"]) == 2
    check_trial_fits(phone, view, "round-3")  # the last round: two earlier rounds listed

    view = p.answer({"answer": 3, "confidence": 4}, step=Trial)
    assert view.template_vars["interaction"] == 2 and view.template_vars["feedback"]
    on_screen(phone, phone.get_by_test_id("stAlertContentInfo").filter(has_text="the correct count was"),
              "the feedback")
    check_trial_fits(phone, view, "next-image")  # under the feedback on the first image


def test_on_a_laptop_the_form_stays_beside_the_image(new_page, app_server, e2e_db, server_log_on_failure):
    engine = e2e_db.engine
    slug = e2e_db.create_study(f"laptop-{secrets.token_hex(3)}", "collab_shapes", config={"constants": SHORT})
    external_id = f"e2e-laptop-{secrets.token_hex(4)}"
    at_first_trial(slug, external_id, engine)
    page = new_page()  # 1280x900
    p = BrowserParticipant(page, app_server.base, slug, external_id, engine)
    p.open()
    view = p.answer({"answer": 3, "confidence": 2}, step=Trial)
    image = on_screen(page, page.get_by_role("img", name=re.compile("coloured shapes to count")), "the image")
    assert image["width"] == 320
    on_screen(page, page.get_by_text("The AI's set", exact=False), "the AI's set")
    form = on_screen(page, page.get_by_test_id("stForm"), "the answer form")
    on_screen(page, submit_button(page, view.step.index), "the submit button")
    assert form["x"] >= image["x"] + image["width"], "the form sits beside the image"
