"""A participant's path through the real app in Chromium: ``streamlit run app.py`` + Playwright.

Each test opens the study link a participant gets from Prolific and checks the page and the
rows it leaves in the database. The server and the database are shared by the module (see
``conftest.py``); every test uses participant ids of its own.
"""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (install Debian's chromium: make chromium)", allow_module_level=True)

from playwright.sync_api import expect  # noqa: E402

from engines.platform import runtime, study_admin  # noqa: E402
from engines.platform.bots import stored_responses  # noqa: E402
from engines.platform.panels import PROLIFIC_COMPLETE_URL  # noqa: E402
from studies.demo_survey import C, Comprehension, Consent, Instructions, PlayerBot, Rating  # noqa: E402
from tests.e2e.browser_bot import (  # noqa: E402
    BrowserParticipant,
    errors,
    study_link,
    submit_button,
    wait_ready,
)

pytestmark = pytest.mark.browser
RESEARCHER_TITLES = re.compile(r"^\s*(Studies|Accounts|Jobs)\s*$")

CONSENT = {"agree": True}
COMPREHENSION = {"task": "Rate how helpful each suggestion is"}


def new_pid(label: str) -> str:
    return f"e2e-{label}-{secrets.token_hex(4)}"


def participant(new_page, server, db, label: str, slug: str = "demo") -> BrowserParticipant:
    return BrowserParticipant(new_page(), server.base, slug, new_pid(label), db.engine)


def advance_to_rating(p: BrowserParticipant) -> runtime.StepView:
    p.open()
    p.answer(CONSENT, step=Consent)
    p.answer({}, step=Instructions)
    return p.answer(COMPREHENSION, step=Comprehension)


# ------------------------------------------------------------------ 1. the whole study


def test_diligent_bot_completes_the_study_in_the_browser(new_page, app_server, e2e_db, server_log_on_failure):
    p = participant(new_page, app_server, e2e_db, "diligent")
    first = p.open()
    assert first.step.step is Consent and first.position == 0
    p.page.screenshot(path="/tmp/e2e-participant-consent.png", full_page=True)

    bot = PlayerBot("diligent")
    final = p.play(bot)

    # The page: completion code and the link back to Prolific.
    assert final.status == "completed"
    p.expect_completion("DEMO2026")
    link = p.page.get_by_test_id("stLinkButton").locator("a")
    expect(link).to_have_attribute("href", f"{PROLIFIC_COMPLETE_URL}?cc=DEMO2026")
    expect(link).to_contain_text("Return to Prolific")
    p.page.screenshot(path="/tmp/e2e-participant-complete.png", full_page=True)

    # The database: every answer stored once, as typed; panel parameters kept.
    pid = runtime.find_participant("demo", p.external_id, engine=e2e_db.engine)
    assert pid == p.participant_id
    p.check_stored()
    rows = stored_responses(pid, engine=e2e_db.engine)
    assert [r.step_name for r in rows] == [
        "Consent", "Instructions", "Comprehension", "Rating", "Rating", "Rating", "Attention", "Survey"]
    assert [r.data["helpfulness"] for r in rows if r.step_name == "Rating"] == [3, 4, 5]
    assert [r.data["would_accept"] for r in rows if r.step_name == "Rating"] == [True, False, True]
    survey = rows[-1].data
    assert (survey["age"], survey["ai_use"], survey["comments"]) == (34, "Weekly", "Clear and quick.")
    assert rows[2].data["_check_passed"] is True and rows[6].data["_check_passed"] is True
    assert p.must_fail_checked == 4
    bot.check_stored([r.data for r in rows])
    view = p.view()
    assert view.completion.code == "DEMO2026" and view.completion.url.endswith("cc=DEMO2026")


# ------------------------------------------------------------------ 2. reload and reopened tab


def test_reload_and_reopened_tab_resume_at_the_same_step(new_page, app_server, e2e_db, server_log_on_failure):
    p = participant(new_page, app_server, e2e_db, "reload")
    at = advance_to_rating(p)
    assert at.step.step is Rating and at.step.round_number == 1

    again = p.reload()
    assert again.step.index == at.step.index
    expect(p.page.get_by_test_id("stHeading").filter(has_text="Suggestion 1 of 3")).to_be_visible()

    p.answer({"helpfulness": 6, "would_accept": True}, step=Rating)
    context = p.page.context
    p.page.close()  # the tab is closed ...
    resumed = p.open(context.new_page())  # ... and the same link opened again
    assert resumed.step.step is Rating and resumed.step.round_number == 2
    expect(p.page.get_by_test_id("stHeading").filter(has_text="Suggestion 2 of 3")).to_be_visible()

    rows = p.responses()
    assert [(r.step_index, r.step_name) for r in rows] == [
        (0, "Consent"), (1, "Instructions"), (2, "Comprehension"), (3, "Rating")]
    assert rows[3].data["helpfulness"] == 6 and rows[3].data["would_accept"] is True
    p.check_stored()


# ------------------------------------------------------------------ 3. server restart


def test_server_restart_resumes_at_the_same_step(new_page, restartable_server, e2e_db):
    p = participant(new_page, restartable_server, e2e_db, "restart")
    p.open()
    p.answer(CONSENT, step=Consent)
    at = p.answer({}, step=Instructions)
    assert at.step.step is Comprehension

    restartable_server.restart()
    assert restartable_server.starts == 2
    resumed = p.reload()
    assert resumed.step.index == at.step.index
    expect(p.page.get_by_test_id("stHeading").filter(has_text="Quick check")).to_be_visible()
    # The resumed page still works: the next answer is taken and stored once.
    after = p.answer(COMPREHENSION, step=Comprehension)
    assert after.step.step is Rating
    assert [r.step_index for r in p.responses()] == [0, 1, 2]


# ------------------------------------------------------------------ 4. two participants at once


def test_two_concurrent_participants_get_balanced_conditions(new_page, app_server, e2e_db):
    slug = e2e_db.create_study(f"balance-{secrets.token_hex(3)}")
    people = [participant(new_page, app_server, e2e_db, f"pair{i}", slug=slug) for i in range(2)]
    for person in people:  # both links start loading before either is waited for
        person.page.goto(person.link, wait_until="commit")
    for person in people:
        wait_ready(person.page)
        person.expect_showing(person.view())

    conditions = sorted(person.view().condition for person in people)
    assert conditions == sorted(C.CONDITIONS), conditions
    assert len({person.participant_id for person in people}) == 2
    assert {row.condition: row.active for row in study_admin.progress(slug, engine=e2e_db.engine)} == {
        "plain": 1, "explained": 1}

    # Each sees the instructions of their own condition.
    for person in people:
        person.answer(CONSENT, step=Consent)
        body = person.page.get_by_test_id("stMarkdownContainer").filter(has_text="You will see a sentence")
        explained = person.view().condition == "explained"
        if explained:
            expect(body).to_contain_text("together with the AI's explanation")
        else:
            expect(body).not_to_contain_text("explanation")


def test_explained_condition_sees_the_ai_explanation(new_page, app_server, e2e_db):
    slug = e2e_db.create_study(f"explain-{secrets.token_hex(3)}")
    first = runtime.enter(slug, {"pid": new_pid("api")}, engine=e2e_db.engine)  # takes "plain" (ties go in order)
    assert first.condition == "plain"
    p = participant(new_page, app_server, e2e_db, "explained", slug=slug)
    at = advance_to_rating(p)
    assert at.condition == "explained" and at.step.round_number == 1
    explanation = C.ITEMS[0][2]
    p.page.screenshot(path="/tmp/e2e-explained-rating.png", full_page=True)
    expect(p.page.get_by_test_id("stMarkdownContainer").filter(has_text=explanation)).to_have_count(1, timeout=2000)


# ------------------------------------------------------------------ 5. no researcher pages by link


def test_participant_link_cannot_reach_researcher_pages(new_page, app_server, e2e_db):
    base = app_server.base
    pid = new_pid("nav")
    page = new_page()
    page.goto(study_link(base, "demo", pid))
    wait_ready(page)
    expect(page.get_by_test_id("stHeading").filter(has_text=C.TITLE)).to_be_visible()
    expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    expect(page.get_by_test_id("stSidebar")).to_have_count(0)
    for name in ("Studies", "Accounts", "Jobs", "Overview", "Log in"):
        expect(page.get_by_role("link", name=name, exact=True)).to_have_count(0)

    for path in ("studies", "accounts", "jobs", "overview"):
        page.goto(f"{base}/{path}?study=demo&PROLIFIC_PID={pid}")
        wait_ready(page)
        # The participant page (their current step), never the researcher page.
        expect(submit_button(page, 0)).to_be_visible()
        expect(page.get_by_test_id("stHeading").filter(has_text=C.TITLE)).to_be_visible()
        for text in ("Create a study", "New account", "Please log in", "You do not have access"):
            expect(page.get_by_text(text)).to_have_count(0)
        expect(page.get_by_test_id("stHeading").filter(has_text=RESEARCHER_TITLES)).to_have_count(0)
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)
    assert runtime.find_participant("demo", pid, engine=e2e_db.engine) is not None

    # Without a study link and without a login, every researcher page is the login page.
    for path in ("studies", "accounts"):
        page.goto(f"{base}/{path}")
        wait_ready(page)
        expect(page.get_by_test_id("stFormSubmitButton").filter(has_text="Log in")).to_be_visible()
        expect(page.get_by_text("Create a study")).to_have_count(0)
        expect(page.get_by_text("New account")).to_have_count(0)
        expect(page.get_by_test_id("stHeading").filter(has_text=RESEARCHER_TITLES)).to_have_count(0)
        expect(page.get_by_test_id("stSidebarNav")).to_have_count(0)


# ------------------------------------------------------------------ 6. bad links, closed study


def test_bad_links_show_clear_errors(new_page, app_server):
    page = new_page()
    page.goto(study_link(app_server.base, "nope", new_pid("nope")))
    wait_ready(page)
    expect(errors(page)).to_contain_text("There is no study called 'nope'")

    page.goto(study_link(app_server.base, "demo"))
    wait_ready(page)
    expect(errors(page)).to_contain_text("This study link has no participant id")

    page.goto(f"{app_server.base}/?study=demo&PROLIFIC_PID=")
    wait_ready(page)
    expect(errors(page)).to_contain_text("'PROLIFIC_PID' is empty")


def test_closed_study_refuses_newcomers_but_resumes_existing(new_page, app_server, e2e_db):
    slug = e2e_db.create_study(f"closing-{secrets.token_hex(3)}")
    existing = participant(new_page, app_server, e2e_db, "existing", slug=slug)
    existing.open()
    at = existing.answer(CONSENT, step=Consent)
    study_admin.set_open(slug, False, engine=e2e_db.engine)
    try:
        page = new_page()
        newcomer = new_pid("late")
        page.goto(study_link(app_server.base, slug, newcomer))
        wait_ready(page)
        expect(errors(page)).to_contain_text("not accepting new participants")
        assert runtime.find_participant(slug, newcomer, engine=e2e_db.engine) is None

        resumed = existing.open(new_page())  # another browser, same participant id
        assert resumed.step.index == at.step.index
        after = existing.answer({}, step=Instructions)
        assert after.step.step is Comprehension
    finally:
        study_admin.set_open(slug, True, engine=e2e_db.engine)


# ------------------------------------------------------------------ 7. double click


@pytest.mark.parametrize("how", ["dblclick", "two-clicks-in-one-task"])
def test_double_click_submits_once(new_page, app_server, e2e_db, how, server_log_on_failure):
    p = participant(new_page, app_server, e2e_db, f"dbl-{how}")
    sent: list[float] = []  # messages the page sends the server (each click is one rerun request)
    p.page.on("websocket", lambda ws: ws.on("framesent", lambda _frame: sent.append(time.monotonic())))
    before = advance_to_rating(p)
    p.fill(before.step, {"helpfulness": 5, "would_accept": True})
    button = submit_button(p.page, before.step.index)
    already_sent = len(sent)
    if how == "dblclick":
        button.dblclick(delay=0)
    else:  # two click events from one script, so no round trip can come between them
        button.evaluate("b => { b.click(); b.click(); }")
    after = p.wait_moved_on(before)
    time.sleep(1.0)  # let any second rerun finish before counting
    wait_ready(p.page)
    assert len(sent) - already_sent >= 2, "the second click never reached the server: the test proves nothing"

    final = p.view()
    assert final.step.index == before.step.index + 1 == after.step.index, (before.step.index, final.step.index)
    rows = [r for r in p.responses() if r.step_index == before.step.index]
    assert len(rows) == 1, rows
    assert rows[0].data["helpfulness"] == 5
    assert [r.step_index for r in p.responses()] == [0, 1, 2, 3]
    expect(p.page.get_by_test_id("stHeading").filter(has_text="Suggestion 2 of 3")).to_be_visible()
