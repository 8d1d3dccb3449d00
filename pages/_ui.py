"""Shared helpers of the Streamlit pages: start-up, identity, role checks, form widgets.

Pages stay thin: they read widgets, call one engine function, and render. Everything here is
about Streamlit itself; algorithms live in ``engines/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import streamlit as st

from engines.platform import auth, login_throttle, migrate, runtime
from engines.platform.auth import Identity
from engines.platform.config_schema import FieldInfo
from engines.platform.forms import FieldSpec
from engines.platform.jobqueue import start_executor
from engines.platform.private_files import make_private
from engines.platform.settings import get_settings

SESSION_COOKIE = "hai_session"
IDENTITY_KEY = "hai_identity"
TOKEN_KEY = "hai_token"
COOKIE_PENDING_KEY = "hai_cookie_pending"
SHOWN_STEP_KEY = "hai_shown_step"  # (participant, step, status) this tab showed last
SUBMITTED_HERE_KEY = "hai_submitted_here"  # this tab stored an answer just now
OIDC_REFUSED_KEY = "hai_oidc_refused"  # why a single sign-on login was not accepted, for the login page


@st.cache_resource(show_spinner="Preparing the database...")
def _boot(database_url: str) -> bool:
    # Once per process and database: files from now on private to this user, the schema at the
    # latest migration, and the local job executor started (so queued jobs run even if no one
    # keeps a page open).
    make_private(get_settings().data_dir)
    migrate.upgrade(database_url)
    if get_settings().run_jobs_in_app:
        start_executor()
    return True


def boot() -> None:
    _boot(get_settings().resolved_database_url)


# ------------------------------------------------------------------ identity


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


# ------------------------------------------------------------------ forms


def widget_key(step_index: int, name: str) -> str:
    return f"step{step_index}-{name}"


def render_field(spec: FieldSpec, key: str, default: Any = None, error: str | None = None) -> Any:
    """Draw the widget for one response field and return its value (None when left empty).

    ``default`` prefills it (a revision round starts from the previous answer); ``error`` is shown
    right under the field, in a container keyed ``error-<key>``.
    """
    value = _field_widget(spec, key, default)
    if error:
        with st.container(key=f"error-{key}"):
            st.error(error)
    return value


def _field_widget(spec: FieldSpec, key: str, default: Any) -> Any:
    label = spec.label + ("" if spec.required or spec.widget in ("checkbox", "text", "textarea") else " (optional)")
    if default is None:
        default = spec.default
    if spec.widget == "checkbox":
        return st.checkbox(label, key=key, help=spec.help or None, value=bool(default))
    index = spec.options.index(default) if default in spec.options else None
    if spec.widget == "likert":
        # The scale's anchors must be visible, not hidden in a tooltip.
        value = st.radio(label, spec.options, index=index, key=key, horizontal=True)
        if spec.help:
            st.caption(spec.help)
        return value
    if spec.widget == "radio":
        return st.radio(label, spec.options, index=index, key=key, help=spec.help or None)
    if spec.widget == "number":
        return st.number_input(label, value=default, step=1, format="%d", key=key, help=spec.help or None,
                               placeholder="type a number")
    if spec.widget == "float":
        return st.number_input(label, value=default, key=key, help=spec.help or None, placeholder="type a number")
    # No max_chars on the widget: the browser would silently drop a longer paste. The limit is shown,
    # and a longer answer is refused on submit with its length, the typed text kept.
    limit = f"At most {spec.max_length} characters." if spec.max_length else None
    if spec.widget == "textarea":
        value = st.text_area(label, key=key, help=spec.help or None, value=default or "")
    else:
        value = st.text_input(label, key=key, help=spec.help or None, value=default or "")
    if limit:
        st.caption(limit)
    return value


def form_values(specs: list[FieldSpec], values: dict[str, Any]) -> dict[str, Any]:
    """Widget values -> submission data: empty optional fields are left out (schema defaults apply)."""
    data = {}
    for spec in specs:
        value = values.get(spec.name)
        if value is None or (value == "" and not spec.required):
            continue
        if spec.widget == "number" and isinstance(value, float) and value.is_integer():
            value = int(value)
        data[spec.name] = value
    return data


def _errors_key(step_index: int) -> str:
    return f"hai_errors-{step_index}"


def field_errors(step_index: int) -> dict[str, str]:
    """The errors of the last refused submission of step ``step_index`` in this tab: field name -> message."""
    return st.session_state.get(_errors_key(step_index), {})


def unplaced_errors(view, specs: list[FieldSpec]) -> None:
    """Errors of fields the form does not show (a rule across fields): shown once, where this is called."""
    shown = {spec.name for spec in specs}
    for name, message in field_errors(view.step.index).items():
        if name not in shown:
            st.error(message)


def submit_step_form(view, specs: list[FieldSpec], values: dict[str, Any]) -> None:
    """Store a participant's form answer for the current step, then rerun to show the next one.

    A refused answer reruns the same step with each error under its field (``render_field``'s
    ``error``); the typed values stay in their widgets and nothing is stored.
    """
    errors: dict[str, str] = {}
    try:
        result = runtime.submit(view.participant_id, view.step.index, form_values(specs, values))
    except runtime.InvalidResponse as exc:
        errors = dict(exc.errors)
    except runtime.StepOutOfOrder:
        pass  # another tab moved on; the rerun shows the current step and says so
    else:  # this tab stored it and moves on: no "answered elsewhere" notice (unless it was stored already)
        st.session_state[SUBMITTED_HERE_KEY] = not result.duplicate
    st.session_state[_errors_key(view.step.index)] = errors
    st.rerun()


def step_form(view, specs: list[FieldSpec], defaults: dict[str, Any] | None = None) -> tuple[dict[str, Any], bool]:
    """The generic form of a step: one widget per field (prefilled from ``defaults``), errors under each.

    Returns (values, submitted).
    """
    index = view.step.index
    errors = field_errors(index)
    with st.form(key=f"form-{index}"):
        values = {spec.name: render_field(spec, widget_key(index, spec.name), (defaults or {}).get(spec.name),
                                          errors.get(spec.name)) for spec in specs}
        unplaced_errors(view, specs)
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    return values, submitted


def reopen_step(view, fmt: Callable[[str, dict], str]) -> None:
    """An expander with an earlier step's text (``Step.reopen``), e.g. the instructions, to read again."""
    step = view.reopen_step
    if step is None:
        return
    with st.expander(f"Read again: {fmt(step.title, view.reopen_vars) or 'instructions'}"):
        st.markdown(fmt(step.body, view.reopen_vars))


# Custom step renderers, by ``Step.template`` name: fn(view) -> None.
STEP_RENDERERS: dict[str, Callable[..., None]] = {}
# Displays that draw their own progress (e.g. "Image 3 of 20 · round 2 of 3") instead of "Step n of m".
OWN_PROGRESS: set[str] = set()


def register_step_renderer(name: str, *, own_progress: bool = False) -> Callable[[Callable[..., None]], Callable[..., None]]:
    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        STEP_RENDERERS[name] = fn
        if own_progress:
            OWN_PROGRESS.add(name)
        return fn

    return wrap


def shows_step_count(step) -> bool:
    """Whether the participant page draws "Step n of m" above this step (not when its display draws its own)."""
    return step.template not in OWN_PROGRESS


def jobs_table(frame, empty_message: str) -> None:
    """Background jobs as a table with a progress bar column (``frame``: a DataFrame with a "progress" column)."""
    if frame.empty:
        st.info(empty_message)
        return
    st.dataframe(frame, hide_index=True, width="stretch",
                 column_config={"progress": st.column_config.ProgressColumn("progress", min_value=0.0, max_value=1.0)})


def rule_picker(role: str, default: str, prefix: str = "rule") -> tuple[str, dict]:
    """A registered collaboration rule for ``role`` ("protect" or "supply") and its typed parameters.

    Researchers pick rules by name and fill in their declared parameters; they never type code.
    Widget keys: ``<prefix>-<role>`` for the rule, ``<prefix>-<role>-<param>`` for each parameter.
    """
    from engines.collab import rules

    names = rules.available_rules(role)
    name = st.selectbox(f"{role.capitalize()} rule", names, index=names.index(default), key=f"{prefix}-{role}",
                        help=rules.rule_schema(default)["doc"])
    params = {}
    for param in rules.rule_schema(name)["params"]:
        number = float if param["type"] == "float" else int
        params[param["name"]] = st.number_input(
            f"{name}: {param['name']}", value=number(param["default"]), help=param.get("help"),
            min_value=number(param["min"]) if "min" in param else None,
            max_value=number(param["max"]) if "max" in param else None, key=f"{prefix}-{role}-{param['name']}")
    return name, params


def number_from_field(container, label: str, field: FieldInfo, **kwargs) -> int | float:
    """A number input with a job parameter's own default and bounds (``config_schema.field_info``), so a
    page never restates them; ``kwargs`` (step, format, help, key) pass through. An exclusive bound
    (a rate in (0, 1)) becomes the nearest value the widget's format shows inside it."""
    integer = isinstance(field.default, int) and not isinstance(field.default, bool)
    cast = int if integer else float
    inside = 1 if integer else 0.001
    low = field.ge if field.ge is not None else (None if field.gt is None else field.gt + inside)
    high = field.le if field.le is not None else (None if field.lt is None else field.lt - inside)
    return container.number_input(label, value=cast(field.default), min_value=None if low is None else cast(low),
                                  max_value=None if high is None else cast(high),
                                  help=kwargs.pop("help", field.title), **kwargs)
