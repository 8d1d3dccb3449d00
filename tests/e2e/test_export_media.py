"""Exports in Chromium against a real server: a downloaded export does not stay at its /media/ address.

Streamlit serves a download button's file at ``/media/<id>`` to anyone who has the URL, no login
needed, for as long as the file is in its media store. The Studies page makes the zip on click
(a deferred download) and leaves nothing referencing it, so the store drops it after the next
script runs (the page's progress fragment reruns every 5 s). With the old ``data=bytes`` button
the same URL kept answering for the whole session.
"""

from __future__ import annotations

import io
import secrets
import time
import urllib.error
import urllib.request
import zipfile

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

from engines.platform import auth, runtime
from tests.e2e.browser_bot import STEP_TIMEOUT_MS, wait_ready

pytestmark = pytest.mark.browser

PASSWORD = "export-media-passphrase-42"
GONE_WITHIN_S = 60  # a deadline to give up waiting, not a measured speed: a few fragment runs


def _log_in_to_studies(page, base: str, engine) -> None:
    name = f"exp{secrets.token_hex(3)}"
    auth.create_user(name, PASSWORD, "researcher", engine=engine)
    page.goto(base)
    wait_ready(page)
    page.locator(".st-key-login-username input").fill(name)
    page.locator(".st-key-login-password input").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    wait_ready(page)
    page.get_by_role("link", name="Studies", exact=True).click()  # in-app navigation: the same session
    wait_ready(page)
    expect(page.get_by_role("heading", name="Studies")).to_be_visible()


_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy from the environment


def _status(url: str) -> int:
    """The HTTP status of a plain GET: no cookies, no Streamlit session."""
    try:
        with _LOCAL.open(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _download(page):
    """Click the export button and return the download; a second click if the first brought none.

    The page's progress fragment reruns every 5 s and redraws the page around the button; a click
    that lands while it does can be lost (seen on a loaded machine: no download within 20 s), and a
    person would click again.
    """
    button = page.get_by_role("button", name="Download export (.zip)")
    for attempt in range(2):
        wait_ready(page)
        try:
            expect(button).to_be_enabled(timeout=STEP_TIMEOUT_MS)
        except AssertionError as exc:  # seen twice in many runs; say what the page showed
            state = page.locator("[data-testid='stApp']").evaluate(
                "app => [app.dataset.testScriptState, app.dataset.testConnectionState]")
            alerts = page.locator("[data-testid='stAlert']").all_inner_texts()
            raise AssertionError(f"{exc}\nscript and connection state: {state}; alerts: {alerts}") from None
        try:
            with page.expect_download(timeout=15_000) as info:
                button.click()
            return info.value
        except PlaywrightTimeoutError:
            if attempt:
                raise
    raise AssertionError("unreachable")


def _status_once_settled(url: str) -> int:
    deadline = time.monotonic() + GONE_WITHIN_S
    status = _status(url)
    while status != 404 and time.monotonic() < deadline:
        time.sleep(0.5)
        status = _status(url)
    return status


def test_downloaded_export_stops_answering_at_its_media_address(new_page, app_server, e2e_db):
    page = new_page()
    _log_in_to_studies(page, app_server.base, e2e_db.engine)
    download = _download(page)
    with open(download.path(), "rb") as handle:
        names = zipfile.ZipFile(io.BytesIO(handle.read())).namelist()
    assert "demo/responses.csv" in names  # the researcher got the export
    assert "/media/" in download.url
    assert _status_once_settled(download.url) == 404


def test_pseudonymised_download_holds_no_raw_panel_id(new_page, app_server, e2e_db):
    raw = {"PROLIFIC_PID": f"5f{secrets.token_hex(11)}", "STUDY_ID": f"65{secrets.token_hex(11)}",
           "SESSION_ID": f"se{secrets.token_hex(8)}"}
    runtime.enter("demo", raw, engine=e2e_db.engine)
    page = new_page()
    _log_in_to_studies(page, app_server.base, e2e_db.engine)
    page.locator(".st-key-export-pseudonymise").get_by_text("Pseudonymise participant ids").click()
    download = _download(page)
    assert download.suggested_filename == "demo-export-pseudonymised.zip"
    with open(download.path(), "rb") as handle:
        archive = zipfile.ZipFile(io.BytesIO(handle.read()))
    contents = {name: archive.read(name) for name in archive.namelist()}
    assert "demo/participants.csv" in contents
    assert [(name, v) for name, content in contents.items() for v in raw.values() if v.encode() in content] == []
