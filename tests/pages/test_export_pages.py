"""The pages that export study data: downloads made on click, and the pseudonymised option."""

from __future__ import annotations

import pytest

from engines.platform import settings, study_admin
from tests.apptest_driver import page_as


@pytest.fixture
def studies_page(sqlite_db):
    study_admin.create_study("pilot-1", "demo_survey")
    return page_as("manage_studies", "researcher")


def _export_button(at):
    return next(d for d in at.get("download_button") if d.proto.label == "Download export (.zip)")


def test_studies_page_keeps_no_export_file_before_the_click(studies_page):
    """A deferred download: Streamlit holds a callable, not a file at a /media/ address."""
    assert _export_button(studies_page).proto.url == ""
    assert _export_button(studies_page).proto.deferred_file_id != ""


def test_studies_page_offers_the_pseudonymised_export(studies_page):
    assert studies_page.checkbox(key="export-pseudonymise").label == (
        "Pseudonymise participant ids (for sharing outside the lab)")
    studies_page.checkbox(key="export-pseudonymise").check().run()
    assert not studies_page.exception and not studies_page.error
    assert _export_button(studies_page).proto.disabled is False


def test_studies_page_says_why_the_pseudonym_key_is_unusable(studies_page, monkeypatch):
    monkeypatch.setenv("HAI_PSEUDONYM_KEY", "too-short")
    settings.reset_settings()
    studies_page.checkbox(key="export-pseudonymise").check().run()
    assert [e.value for e in studies_page.error] == [
        "No pseudonymised export: HAI_PSEUDONYM_KEY has 9 characters; use at least 32 "
        "(for example: python -c 'import secrets; print(secrets.token_hex(32))')"]
    assert _export_button(studies_page).proto.disabled is True
