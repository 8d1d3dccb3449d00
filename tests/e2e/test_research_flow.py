"""Researchers in Chromium: log in, stay logged in across a reload, see the same job in two browsers."""

from __future__ import annotations

import secrets

import pytest
from playwright.sync_api import expect

from engines.platform import auth, jobqueue
from tests.e2e.browser_bot import wait_ready

pytestmark = pytest.mark.browser


def _log_in(page, base: str, username: str, password: str) -> None:
    page.goto(base)
    wait_ready(page)
    page.locator(".st-key-login-username input").fill(username)
    page.locator(".st-key-login-password input").fill(password)
    page.get_by_role("button", name="Log in").click()
    wait_ready(page)
    if password == "password-123":
        _wait_for_login_cookie(page)


def open_as(page, app_server, e2e_db, role: str, path: str) -> str:
    """Log ``page`` in as a new account with ``role`` and open ``path`` ("judge-audit"); returns the username."""
    name = f"{role[:3]}{secrets.token_hex(3)}"
    auth.create_user(name, "password-123", role, engine=e2e_db.engine)
    _log_in(page, app_server.base, name, "password-123")
    page.goto(f"{app_server.base}/{path}")
    wait_ready(page)
    return name


def _wait_for_login_cookie(page, timeout_ms: int = 10_000) -> None:
    # The page writes the cookie from a script after the run that logs in; a person takes longer
    # than that to click elsewhere, a test does not.
    for _ in range(timeout_ms // 100):
        if any(c["name"] == "hai_session" and c["value"] for c in page.context.cookies()):
            return
        page.wait_for_timeout(100)
    raise AssertionError("the login cookie was never written")


def test_login_survives_reload_and_logout_ends_it(new_page, app_server, e2e_db):
    name = f"res{secrets.token_hex(3)}"
    auth.create_user(name, "password-123", "researcher", engine=e2e_db.engine)
    page = new_page()
    _log_in(page, app_server.base, name, "wrong-password")
    expect(page.get_by_text("Wrong username or password.")).to_be_visible()
    _log_in(page, app_server.base, name, "password-123")
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()
    page.reload()  # session state is gone; the login cookie brings the account back
    wait_ready(page)
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()
    page.goto(f"{app_server.base}/account")
    wait_ready(page)
    page.get_by_role("button", name="Log out").click()
    wait_ready(page)
    page.reload()
    wait_ready(page)
    expect(page.get_by_role("button", name="Log in")).to_be_visible()


def test_two_browsers_see_the_same_job(new_page, app_server, e2e_db):
    name = f"res{secrets.token_hex(3)}"
    auth.create_user(name, "password-123", "researcher", engine=e2e_db.engine)
    job_id = jobqueue.submit_job("platform.countdown", {"seconds": 0}, engine=e2e_db.engine)
    pages = [new_page(), new_page()]
    for page in pages:
        _log_in(page, app_server.base, name, "password-123")
        page.goto(f"{app_server.base}/jobs")
        wait_ready(page)
    jobqueue.run_job(job_id, engine=e2e_db.engine)
    for page in pages:
        # The job table is a fragment that refreshes itself every 2 s: no reload needed.
        expect(page.get_by_text("platform.countdown — succeeded")).to_be_visible(timeout=15_000)


def test_bookmarked_page_asks_for_login_then_opens(new_page, app_server, e2e_db):
    name = f"adm{secrets.token_hex(3)}"
    auth.create_user(name, "password-123", "admin", engine=e2e_db.engine)
    page = new_page()
    page.goto(f"{app_server.base}/studies")
    wait_ready(page)
    expect(page.get_by_text("Please log in to see this page.")).to_be_visible()
    page.locator(".st-key-login-username input").fill(name)
    page.locator(".st-key-login-password input").fill("password-123")
    page.get_by_role("button", name="Log in").click()
    wait_ready(page)
    expect(page.get_by_role("heading", name="Studies")).to_be_visible()
    _wait_for_login_cookie(page)
    assert page.url.endswith("/studies")


def test_changing_a_one_time_password_keeps_the_login_across_a_reload(new_page, app_server, e2e_db):
    name = f"new{secrets.token_hex(3)}"
    auth.create_user(name, "one-time-pass-1", "researcher", must_change_password=True, engine=e2e_db.engine)
    page = new_page()
    _log_in(page, app_server.base, name, "one-time-pass-1")
    expect(page.get_by_text("You are using a one-time password")).to_be_visible()
    page.locator(".st-key-account-current input").fill("one-time-pass-1")
    page.locator(".st-key-account-new input").fill("my-own-pass-12")
    page.locator(".st-key-account-again input").fill("my-own-pass-12")
    page.get_by_role("button", name="Change password").click()
    wait_ready(page)
    expect(page.get_by_text("Password changed.")).to_be_visible()
    expect(page.get_by_text("You are using a one-time password")).to_have_count(0)
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()  # the menu is back
    _wait_for_login_cookie(page)
    page.reload()
    wait_ready(page)
    expect(page.get_by_text(f"Signed in as {name}")).to_be_visible()
    expect(page.get_by_role("button", name="Log in")).to_have_count(0)


def test_a_finished_simulation_appears_without_a_reload(new_page, app_server, e2e_db):
    page = new_page()
    open_as(page, app_server, e2e_db, "researcher", "collab-simulations")
    expect(page.get_by_role("heading", name="Result figures")).to_be_visible()
    job_id = jobqueue.submit_job("collab.simulate", {"T": 300, "n_calibration": 50}, engine=e2e_db.engine)
    assert jobqueue.run_job(job_id, engine=e2e_db.engine) == "succeeded"
    # The jobs table refreshes itself; once it sees the job finish, the page redraws with the job's figures.
    expect(page.get_by_text("Simulation: schedule drift, T = 300")).to_be_visible(timeout=20_000)
