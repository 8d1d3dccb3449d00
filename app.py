"""HAI Studio: the entry point. Decides who is here and builds the navigation for them.

- A study link (``?study=<slug>&PROLIFIC_PID=...``) shows only the participant page.
- Otherwise an account logs in, and sees the pages its role allows, grouped as
  Research, Annotate, Admin and Account. Pages are discovered from ``pages/*.py``.

Run: ``make run`` (or ``streamlit run app.py``).
"""

from __future__ import annotations

import gc
import socket
import sys

import streamlit as st

from engines.platform import auth
from engines.platform.navigation import discover_pages
from engines.platform.served_address import record_served_port
from pages import _access as access
from pages import _startup as startup
from pages._upload import install_upload_quota

st.set_page_config(page_title="HAI Studio", page_icon=":material/handshake:", layout="wide")
startup.boot()


# ------------------------------------------------------------------ once per process: latency


def _set_nodelay(sock: socket.socket) -> None:
    if sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@st.cache_resource(show_spinner=False)
def send_small_writes_at_once() -> bool:
    """Turn Nagle's algorithm off on every connection the server accepts from now on.

    asyncio disables Nagle only for sockets whose ``proto`` is ``IPPROTO_TCP``, and the server's
    listening socket is created with proto 0, so its connections keep Nagle on. A response written
    as headers then body, and a run's many small WebSocket frames, then wait for the browser's
    delayed ACK: about 40 ms per static file after a connection's first (the first page load fetches
    ~60 script files over 6 connections) and pauses of 40 ms inside a run's stream of elements.
    Connections accepted before the first run of a fresh process keep Nagle on.
    """
    import asyncio.base_events

    if not hasattr(asyncio.base_events, "_set_nodelay"):
        return False
    asyncio.base_events._set_nodelay = _set_nodelay
    return True


@st.cache_resource(show_spinner=False)
def _heap_state() -> dict[str, int]:
    return {"modules": 0}


def freeze_long_lived_objects() -> None:
    """Keep full garbage collections short: freeze what imports created.

    A full collection walks every tracked object while holding the GIL. With torch, pandas and
    plotly imported that is ~300,000 objects and 150-250 ms, during which every session's messages
    wait unsent and no script run can go on. Streamlit's own collection after every run is off
    (``runner.postScriptGC`` in .streamlit/config.toml); Python's generational collector still
    reaches the oldest generation now and then. Nearly all of those objects belong to imported
    modules and live as long as the process, so whenever new modules have appeared since the last
    look, ``gc.freeze`` moves everything to the permanent generation, which collections skip.
    Almost nothing that could be freed is frozen (frozen objects are still freed by reference
    counting; only a cycle among them would stay), and this happens only the few times the set of
    imported modules grows.
    """
    state = _heap_state()
    if len(sys.modules) != state["modules"]:
        gc.collect()  # the garbage first, so that only what lives on is frozen
        gc.freeze()
        state["modules"] = len(sys.modules)


@st.cache_resource(show_spinner=False)
def remember_served_port() -> int:
    """Record this process's port, so participant links printed elsewhere (``studies links``) follow it."""
    port = int(st.get_option("server.port"))
    record_served_port(port)
    return port


@st.cache_resource(show_spinner=False)
def _discover_pages():
    # Reading every page's PAGE declaration parses its source; the files do not change while serving.
    return discover_pages()


send_small_writes_at_once()
install_upload_quota()
remember_served_port()
freeze_long_lived_objects()
pages = _discover_pages()


def _page(spec, *, default: bool = False) -> st.Page:
    return st.Page(str(spec.path), title=spec.title, icon=spec.icon, url_path=spec.url_path, default=default)


if access.in_participant_mode():
    participate = [s for s in pages if s.group == "Participate"]
    navigation = st.navigation([_page(participate[0], default=True)], position="hidden")
else:
    identity = access.current_identity()
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

access.sync_login_cookie()
navigation.run()
