"""HAI Studio: the entry point. Decides who is here and builds the navigation for them.

- A study link (``?study=<slug>&PROLIFIC_PID=...``) shows only the participant page.
- Otherwise an account logs in, and sees the pages its role allows, grouped as
  Research, Annotate, Admin and Account. Pages are discovered from ``pages/*.py``.

Run: ``make run`` (or ``streamlit run app.py``).
"""

from __future__ import annotations

import streamlit as st

from engines.platform import auth
from engines.platform.navigation import discover_pages
from pages import _ui as ui

st.set_page_config(page_title="HAI Studio", page_icon=":material/handshake:", layout="wide")
ui.boot()

pages = discover_pages()


def _page(spec, *, default: bool = False) -> st.Page:
    return st.Page(str(spec.path), title=spec.title, icon=spec.icon, url_path=spec.url_path, default=default)


if ui.in_participant_mode():
    participate = [s for s in pages if s.group == "Participate"]
    navigation = st.navigation([_page(participate[0], default=True)], position="hidden")
else:
    identity = ui.current_identity()
    role = identity.role if identity else None
    allowed = [s for s in pages if s.allows(role)]
    if identity is None:
        # Protected pages stay addressable (a bookmark to /studies shows the login form there,
        # then the page); each page checks the role itself.
        protected = [_page(s) for s in pages if s.group != "Participate" and s not in allowed]
        public = [_page(s, default=i == 0) for i, s in enumerate(allowed)]
        navigation = st.navigation(public + protected, position="hidden")
    elif auth.must_change_password(identity.user_id):
        # A one-time password (printed by `make run`) must be replaced before anything else.
        account = next(s for s in pages if s.path.stem == "account")
        navigation = st.navigation([_page(account, default=True)], position="hidden")
    else:
        sections: dict[str, list[st.Page]] = {}
        for i, spec in enumerate(s for s in allowed if "public" not in s.roles):
            sections.setdefault(spec.group, []).append(_page(spec, default=i == 0))
        with st.sidebar:
            st.caption(f"Signed in as **{identity.username}** ({identity.role})")
        navigation = st.navigation(sections, position="sidebar", expanded=True)

ui.sync_login_cookie()
navigation.run()
