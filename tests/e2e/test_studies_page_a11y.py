"""The Studies page passes axe-core's WCAG 2 A/AA rules as an admin sees it; Streamlit's own sidebar
menu is the one known upstream failure, and this test shows exactly what it is."""

from __future__ import annotations

import pytest

from tests.e2e.browser_bot import STREAMLIT_MENU, accessibility_violations
from tests.e2e.test_research_flow import open_as

pytestmark = pytest.mark.browser


def test_the_studies_page_passes_axe_and_only_streamlits_menu_fails_the_list_rule(new_page, app_server, e2e_db):
    page = new_page()
    open_as(page, app_server, e2e_db, "admin", "studies")
    page.get_by_text("Participant links").wait_for()
    assert accessibility_violations(page, exclude=(STREAMLIT_MENU,)) == []
    # Streamlit's sidebar menu puts its section headers inside <ul> without <li>: upstream markup the
    # app cannot change. If this starts passing, drop the exclusion above from the account pages.
    whole = accessibility_violations(page)
    assert whole and all(v.split(" ")[0] in ("list", "listitem") for v in whole), whole
