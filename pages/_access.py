"""Who is at the browser: the login cookie, the account checked on every run, role checks and the
login form. A participant (a study link) never has an account here."""

from __future__ import annotations

import json

import streamlit as st

from engines.platform import auth, login_throttle
from engines.platform.auth import Identity
from engines.platform.settings import get_settings

SESSION_COOKIE = "hai_session"
IDENTITY_KEY = "hai_identity"
TOKEN_KEY = "hai_token"
COOKIE_PENDING_KEY = "hai_cookie_pending"
OIDC_REFUSED_KEY = "hai_oidc_refused"  # why a single sign-on login was not accepted, for the login page


def in_participant_mode() -> bool:
    return "study" in st.query_params


def _cookie_script(value: str, max_age_s: int) -> None:
    # Streamlit can read cookies (st.context.cookies) but not set them; a tiny script does. The
    # browser knows whether the page came over HTTPS (also behind a TLS proxy): then the cookie is
    # marked Secure, so it never travels over plain HTTP.
    st.html(f"<script>{cookie_assignment(value, max_age_s)}</script>", unsafe_allow_javascript=True)


def cookie_assignment(value: str, max_age_s: int) -> str:
    """The script statement that sets the login cookie: Strict same-site, Secure over HTTPS."""
    cookie = f"{SESSION_COOKIE}={value}; path=/; max-age={max_age_s}; SameSite=Strict"
    return f"document.cookie = {json.dumps(cookie)} + (location.protocol === 'https:' ? '; Secure' : '');"


def sync_login_cookie() -> None:
    """Write or clear the login cookie once, on a run that is not cut short by ``st.rerun``.

    ``log_in``/``log_out`` only record what the cookie should be; the app's entry point calls
    this on every run, so the script reaches the browser even when a page reruns right after.
    """
    pending = st.session_state.pop(COOKIE_PENDING_KEY, None)
    if pending is None:
        return
    token, max_age = pending
    _cookie_script(token, max_age)


def client_address() -> str:
    """The browser's network address, for the per-address login limit (``login_throttle.client_address``
    decides; ``HAI_TRUSTED_PROXIES`` says whose ``X-Forwarded-For`` counts)."""
    headers = st.context.headers
    forwarded = ",".join(headers.get_all("X-Forwarded-For")) if headers else ""
    # Streamlit's server (uvicorn) has already put the client a proxy on this machine names in place
    # of that proxy; a proxy elsewhere is resolved by login_throttle. None outside a browser session
    # and for a loopback peer (Streamlit hides those): unknown, so only the per-username limit applies.
    peer = getattr(st.context, "ip_address", None)
    return login_throttle.client_address(peer if isinstance(peer, str) else "", forwarded)


def current_identity() -> Identity | None:
    """The logged-in account of this browser session, checked against the database on every run.

    The token (kept in the session, or in the login cookie after a refresh) is looked up each
    time, so a logout elsewhere, an expiry, an idle timeout, a deactivation or a changed role takes
    effect on the next click, not when the tab is closed.
    """
    if in_participant_mode():
        return None
    cookie = st.context.cookies.get(SESSION_COOKIE) if st.context.cookies else None
    for token in dict.fromkeys(t for t in (st.session_state.get(TOKEN_KEY), cookie) if t):
        identity = auth.identity_from_token(token)
        if identity is not None:
            st.session_state[IDENTITY_KEY] = identity.__dict__
            st.session_state[TOKEN_KEY] = token
            return identity
    if st.session_state.pop(TOKEN_KEY, None) is not None or cookie:
        st.session_state[COOKIE_PENDING_KEY] = ("", 0)  # the login ended: clear its cookie too
    st.session_state.pop(IDENTITY_KEY, None)
    return _oidc_identity()


def _oidc_identity() -> Identity | None:
    # With OIDC configured (HAI_OIDC_PROVIDER + [auth] in secrets.toml), st.login vouches for the
    # provider's subject and e-mail address; auth.identity_for_oidc maps them to an account that
    # an admin created beforehand (its username is the e-mail address), checked on every run.
    if not get_settings().oidc_provider or not getattr(st.user, "is_logged_in", False):
        return None
    try:
        identity = auth.identity_for_oidc(st.user.to_dict())
    except auth.OidcRefused as exc:
        st.session_state[OIDC_REFUSED_KEY] = str(exc)
        return None
    st.session_state.pop(OIDC_REFUSED_KEY, None)
    st.session_state[IDENTITY_KEY] = identity.__dict__
    return identity


def log_in(identity: Identity) -> None:
    token = auth.start_login_session(identity)
    st.session_state[IDENTITY_KEY] = identity.__dict__
    st.session_state[TOKEN_KEY] = token
    st.session_state[COOKIE_PENDING_KEY] = (token, auth.LOGIN_DAYS * 86400)


def log_out() -> None:
    auth.end_login_session(st.session_state.get(TOKEN_KEY))
    st.session_state.pop(IDENTITY_KEY, None)
    st.session_state.pop(TOKEN_KEY, None)
    st.session_state[COOKIE_PENDING_KEY] = ("", 0)
    if get_settings().oidc_provider and getattr(st.user, "is_logged_in", False):
        st.logout()


def login_form() -> None:
    """Username and password form; on success the session is logged in and the page reruns."""
    with st.form("login"):
        username = st.text_input("Username", key="login-username")
        password = st.text_input("Password", type="password", key="login-password")
        submitted = st.form_submit_button("Log in", type="primary")
    if submitted:
        try:
            identity = auth.authenticate(username.strip(), password, address=client_address())
        except auth.AuthError as exc:
            st.error(str(exc))
        else:
            log_in(identity)
            st.rerun()


def require_role(*roles: str) -> Identity:
    """Stop the page unless an account with one of ``roles`` (or an admin) is logged in.

    Pages call this themselves, so a page is protected even if reached outside the menu. A
    visitor who is not logged in gets the login form here, and then the page they asked for.
    """
    identity = current_identity()
    if identity is None:
        if in_participant_mode():
            st.error("You do not have access to this page.")
        else:
            st.warning("Please log in to see this page.")
            login_form()
        st.stop()
    if not identity.can(*roles):
        st.error("You do not have access to this page.")
        st.stop()
    return identity
