"""Drive a study's ``PlayerBot`` through the real participant page in Chromium.

The same bot data that ``engines.platform.bots.run_bot`` submits through the runtime API is
typed into the real widgets here. Widgets are found by the CSS class Streamlit gives every keyed
element (``st-key-<key>``); the participant page keys form widgets ``step{index}-{field}``
(``pages._step_form.widget_key``) and its forms ``form-{index}``, so the submit button of step ``i``
sits in ``.st-key-FormSubmitter-form-{i}-<label>``. The widget kind of each field comes from
``engines.platform.forms.field_specs``, exactly as the page chooses it.

A browser cannot submit an answer that is not among a radio's options (e.g. the bot's
``{"helpfulness": 9}`` on a 1..7 scale, or ``{"task": "Not an option"}``). For such a
``SubmissionMustFail`` the driver leaves the choice empty, which is the nearest rejection a
participant can produce, and still expects the error on the same field.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from playwright.sync_api import Locator, Page, expect

import pages._renderers  # noqa: F401 - registers the displays, as the page does
from engines.platform import runtime
from engines.platform.bots import Bot, Submission, SubmissionMustFail, iterate_with_view, stored_responses
from engines.platform.forms import FieldSpec, field_specs
from engines.platform.study import StepInstance
from pages._step_displays import shows_step_count
from pages._step_form import widget_key

# axe-core's WCAG 2 A and AA rules (2.0 and 2.1): what every page a participant sees must pass.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
READY = "[data-testid='stApp'][data-test-script-state='notRunning']"
CONNECTED = "[data-testid='stApp'][data-test-connection-state='CONNECTED']"
FRESH = "[data-stale='false']"
STEP_TIMEOUT_MS = 20_000


def wait_ready(page: Page, timeout_ms: int = STEP_TIMEOUT_MS) -> None:
    """Wait until Streamlit finished its script run and drew everything.

    The short pause first lets a click's rerun request (widget debounce) reach the server, so
    the check does not pass against the page from before the rerun. The script state is
    ``initial`` until the first run ends, so a freshly loaded page is not ready too early.
    """
    page.wait_for_timeout(300)
    page.wait_for_selector(CONNECTED, timeout=timeout_ms)
    page.wait_for_selector(READY, timeout=timeout_ms)
    expect(page.get_by_test_id("stSkeleton")).to_have_count(0, timeout=timeout_ms)


def study_link(base: str, slug: str | None, external_id: str | None = None, **extra: str) -> str:
    params: dict[str, str] = {}
    if slug is not None:
        params["study"] = slug
    if external_id is not None:
        params["PROLIFIC_PID"] = external_id
    params.update(extra)
    return f"{base}/?{urlencode(params)}"


def key_class(key: str) -> str:
    # Streamlit's rule for the class name: st-key-<key with characters other than [a-zA-Z0-9_-] as '-'>.
    return "st-key-" + re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())


def widget(page: Page, step_index: int, name: str) -> Locator:
    return page.locator(f"[data-testid='stElementContainer']{FRESH}.{key_class(widget_key(step_index, name))}")


def submit_button(page: Page, step_index: int) -> Locator:
    return page.locator(
        f"[data-testid='stElementContainer']{FRESH}[class*='st-key-FormSubmitter-form-{step_index}-'] button"
    )


def errors(page: Page) -> Locator:
    return page.locator(f"[data-testid='stElementContainer']{FRESH} [data-testid='stAlertContentError']")


def field_error(page: Page, step_index: int, name: str) -> Locator:
    """The error shown under a field (``pages._step_form.render_field`` keys it ``error-<widget key>``)."""
    key = key_class("error-" + widget_key(step_index, name))
    return page.locator(f"[data-testid='stVerticalBlock'].{key} [data-testid='stAlertContentError']")


def warnings(page: Page) -> Locator:
    return page.locator(f"[data-testid='stElementContainer']{FRESH} [data-testid='stAlertContentWarning']")


def progress_text(position: int, total: int) -> str:
    return f"Step {position + 1} of {total}"


def set_field(page: Page, step_index: int, spec: FieldSpec, value: Any) -> bool:
    """Put ``value`` into the field's widget. Returns False when a browser cannot enter it
    (a choice that is not among the options): the widget is then left as it is."""
    box = widget(page, step_index, spec.name)
    expect(box).to_have_count(1)
    if spec.widget == "checkbox":
        checkbox = box.locator("input[type='checkbox']")
        if checkbox.is_checked() != bool(value):
            box.locator("label").first.click()
        expect(checkbox).to_be_checked(checked=bool(value))
        return True
    if spec.widget in ("radio", "likert"):
        if value not in spec.options:
            return False
        option = box.get_by_test_id("stRadioOption").filter(has=page.get_by_text(str(value), exact=True))
        expect(option).to_have_count(1)
        option.click()
        expect(option.locator("input[type='radio']")).to_be_checked()
        return True
    entry = box.locator("textarea" if spec.widget == "textarea" else "input")
    entry.fill("" if value is None else str(value))
    entry.blur()  # Streamlit commits a text or number entry on blur (or Enter, which would submit the form)
    return True


# Streamlit's own sidebar menu (shown to accounts, never to participants) puts its section headers
# inside <ul> without <li> (axe: list, listitem); the app cannot change that markup, so account
# pages are checked without it, and everything the app draws is checked.
STREAMLIT_MENU = "[data-testid='stSidebarNavItems']"


def accessibility_violations(page: Page, *, exclude: tuple[str, ...] = ()) -> list[str]:
    """axe-core's WCAG 2 A/AA violations on the page as drawn now, one line each (rule: what, where).

    ``exclude``: CSS selectors of parts not checked (``STREAMLIT_MENU`` on account pages).
    """
    context = {"exclude": [[selector] for selector in exclude]} if exclude else None
    results = _axe().run(page, context=context,
                         options={"runOnly": {"type": "tag", "values": WCAG_TAGS}, "resultTypes": ["violations"]})
    return [f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in results.response["violations"]]


@functools.cache
def _axe():
    from axe_playwright_python.sync_playwright import Axe

    return Axe()


def radio_is_empty(page: Page, step_index: int, spec: FieldSpec) -> bool:
    return widget(page, step_index, spec.name).locator("input[type='radio']:checked").count() == 0


@dataclass
class BrowserParticipant:
    """One participant with one page, identified by ``external_id`` (their PROLIFIC_PID)."""

    page: Page
    base: str
    slug: str
    external_id: str
    engine: Any
    extra: dict[str, str] = field(default_factory=lambda: {"STUDY_ID": "s1", "SESSION_ID": "x1"})
    submitted: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    must_fail_checked: int = 0
    # Steps (and "completion"/"screened_out") whose page passed the accessibility rules; each kind of
    # page is checked the first time it is shown (a step's rounds share their layout).
    pages_checked: set[Any] = field(default_factory=set)

    @property
    def link(self) -> str:
        return study_link(self.base, self.slug, self.external_id, **self.extra)

    # -------------------------------------------------------------- database side

    @property
    def participant_id(self) -> int:
        pid = runtime.find_participant(self.slug, self.external_id, engine=self.engine)
        assert pid is not None, f"participant {self.external_id} of {self.slug} is not in the database"
        return pid

    def view(self) -> runtime.StepView:
        return runtime.current_view(self.participant_id, engine=self.engine)

    def responses(self):
        return stored_responses(self.participant_id, engine=self.engine)

    # -------------------------------------------------------------- page side

    def open(self, page: Page | None = None) -> runtime.StepView:
        """Open the study link (in ``page``, or this participant's page) and wait for the current step."""
        if page is not None:
            self.page = page
        self.page.goto(self.link)
        wait_ready(self.page)
        view = self.view()
        self.expect_showing(view)
        return view

    def reload(self) -> runtime.StepView:
        self.page.reload()
        wait_ready(self.page)
        view = self.view()
        self.expect_showing(view)
        return view

    def expect_showing(self, view: runtime.StepView) -> None:
        """The page shows ``view``: its step's form and progress text, or the completion code."""
        page = self.page
        expect(page.get_by_test_id("stHeading").filter(has_text=view.study_title).first).to_be_visible()
        if view.finished:
            self.expect_completion(view.completion.code)
            self.check_accessible(view.status)
            return
        expect(submit_button(page, view.step.index)).to_be_visible()
        if shows_step_count(view.step.step):
            expect(page.get_by_test_id("stProgress")).to_contain_text(progress_text(view.position, view.total_steps))
        self.check_accessible(view.step.step)

    def check_accessible(self, kind: Any) -> None:
        """The page passes axe-core's WCAG 2 A/AA rules (checked once per kind of page)."""
        if kind in self.pages_checked:
            return
        violations = accessibility_violations(self.page)
        assert not violations, f"{kind}: accessibility violations:\n" + "\n".join(violations)
        self.pages_checked.add(kind)

    def expect_completion(self, code: str) -> None:
        expect(self.page.get_by_test_id("stCode")).to_contain_text(code)

    def fill(self, instance: StepInstance, data: dict[str, Any]) -> list[str]:
        """Fill the step's widgets from ``data``; returns the fields a browser could not enter."""
        skipped = []
        for spec in field_specs(self.view().response_model):
            if spec.name not in data:
                continue
            if widget(self.page, instance.index, spec.name).count() == 0:
                skipped.append(spec.name)  # the page fixes this value (e.g. the last round is final)
                continue
            if not set_field(self.page, instance.index, spec, data[spec.name]):
                assert radio_is_empty(self.page, instance.index, spec), (
                    f"{spec.name}: cannot enter {data[spec.name]!r} and the choice is not empty")
                skipped.append(spec.name)
        return skipped

    def click_submit(self, step_index: int, clicks: int = 1) -> None:
        button = submit_button(self.page, step_index)
        expect(button).to_be_enabled()
        if clicks == 1:
            button.click()
        else:
            button.click(click_count=clicks, delay=0)

    def answer(self, data: dict[str, Any] | None = None, *, step=None) -> runtime.StepView:
        """Answer the current step with ``data`` (it must be accepted); returns the next view."""
        before = self.view()
        assert not before.finished, f"{self.external_id} already finished ({before.status})"
        if step is not None:
            assert before.step.step is step, f"at {before.step.name}, expected {step.__name__}"
        skipped = self.fill(before.step, data or {})
        assert not [name for name in skipped if widget(self.page, before.step.index, name).count()], (
            f"cannot enter {skipped} of {data}")
        self.click_submit(before.step.index)
        after = self.wait_moved_on(before)
        self.submitted.append((before.step.index, dict(data or {})))
        return after

    def wait_moved_on(self, before: runtime.StepView) -> runtime.StepView:
        """Wait for the page to leave ``before``'s step and show the participant's next state."""
        expect(submit_button(self.page, before.step.index)).to_have_count(0, timeout=STEP_TIMEOUT_MS)
        wait_ready(self.page)
        after = self.view()
        assert after.finished or after.step.index != before.step.index, "the page moved on but the database did not"
        self.expect_showing(after)
        return after

    def answer_must_fail(self, item: SubmissionMustFail) -> None:
        """Submit data the step must reject: an error (or a check's warning) appears, nothing moves."""
        before = self.view()
        stored_before = len(self.responses())
        assert before.step.step is item.step, f"at {before.step.name}, expected {item.step.__name__}"
        self.fill(before.step, item.data)
        self.click_submit(before.step.index)
        if item.check:
            expect(warnings(self.page).first).to_be_visible(timeout=STEP_TIMEOUT_MS)
            expect(warnings(self.page).first).to_contain_text(item.step.check.feedback)
        else:
            expect(errors(self.page).first).to_be_visible(timeout=STEP_TIMEOUT_MS)
            wait_ready(self.page)
            for name in item.error_fields:  # each error sits right under its field
                expect(field_error(self.page, before.step.index, name)).to_be_visible()
        wait_ready(self.page)
        after = self.view()
        assert after.step is not None and after.step.index == before.step.index, (
            f"a rejected submission moved {self.external_id} from step {before.step.index} to {after.step}")
        assert len(self.responses()) == stored_before, "a rejected submission stored a response"
        expect(submit_button(self.page, before.step.index)).to_be_visible()
        self.must_fail_checked += 1

    def play(self, bot: Bot) -> runtime.StepView:
        """Play every item of ``bot.play()`` through the page; returns the final view."""
        for item in iterate_with_view(bot, self.view):
            self.play_one(item, bot)
        return self.view()

    def play_one(self, item: Submission | SubmissionMustFail, bot: Bot) -> None:
        """Enter one of the bot's submissions on the page (``bot.view`` is the page it was chosen on)."""
        view = bot.view
        bot.participant_id, bot.condition = view.participant_id, view.condition
        if isinstance(item, SubmissionMustFail):
            wait_ready(self.page)
            if any(widget(self.page, view.step.index, name).count() == 0 for name in item.data):
                return  # the page has no widget to enter this with (it fixes the value)
            self.answer_must_fail(item)
        else:
            assert isinstance(item, Submission)
            self.answer(item.data, step=item.step)

    def check_stored(self) -> None:
        """Every submitted value is stored, once per step, as submitted."""
        rows = self.responses()
        indices = [r.step_index for r in rows]
        assert len(indices) == len(set(indices)), f"a step was stored twice: {indices}"
        by_index = {r.step_index: r.data for r in rows}
        for index, data in self.submitted:
            assert index in by_index, f"step {index} was not stored"
            for key, value in data.items():
                assert by_index[index].get(key) == value, f"step {index}: stored {by_index[index]}, submitted {data}"

