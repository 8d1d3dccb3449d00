"""Open pages in Streamlit's AppTest (as a role, or by a study link) and drive a study bot through them."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from engines.platform import auth, runtime
from engines.platform.bots import Bot, BotFailure, Submission, SubmissionMustFail, iterate_with_view, stored_responses
from engines.platform.forms import FieldSpec, field_specs
from pages._step_form import widget_key

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")


def login_as(at: AppTest, role: str | None) -> None:
    """Log ``at``'s session in as a new account with ``role`` (``None``: stay anonymous)."""
    if role is not None:
        identity = auth.create_user(f"{role}_user", "a-test-passphrase", role)
        at.session_state["hai_token"] = auth.start_login_session(identity)


def page_as(page: str | Path, role: str | None, *, query_params: dict | None = None) -> AppTest:
    """Open and run ``page`` in AppTest logged in as a new account with ``role`` (``None``: anonymous).

    ``page`` is a file (``APP`` for the whole app with its menu) or the name of one in ``pages/``
    ("collab_simulations"); ``query_params`` (a study link's) are set before the run.
    """
    path = page if isinstance(page, Path) or page.endswith(".py") else ROOT / "pages" / f"{page}.py"
    at = AppTest.from_file(str(path), default_timeout=60)
    login_as(at, role)
    for key, value in (query_params or {}).items():
        at.query_params[key] = value
    return at.run()


def new_participant_app(slug: str, external_id: str) -> AppTest:
    return page_as(APP, None, query_params={"study": slug, "PROLIFIC_PID": external_id, "STUDY_ID": "apptest",
                                            "SESSION_ID": "s1"})


def ui_can_enter(spec: FieldSpec, value) -> bool:
    """A radio offers only its options: values outside them cannot be typed in the page at all."""
    return not spec.options or value in spec.options


def _widget(at: AppTest, spec: FieldSpec, key: str):
    if spec.widget == "checkbox":
        return at.checkbox(key=key)
    if spec.widget in ("radio", "likert"):
        return at.radio(key=key)
    if spec.widget in ("number", "float"):
        return at.number_input(key=key)
    return at.text_area(key=key) if spec.widget == "textarea" else at.text_input(key=key)


def on_page(at: AppTest, step_index: int, spec: FieldSpec) -> bool:
    """Whether the page draws a widget for the field (a step may fix a value instead, e.g. a final answer)."""
    try:
        _widget(at, spec, widget_key(step_index, spec.name))
    except KeyError:
        return False
    return True


def fill(at: AppTest, step_index: int, spec: FieldSpec, value) -> None:
    key = widget_key(step_index, spec.name)
    if spec.widget == "checkbox":
        at.checkbox(key=key).set_value(bool(value))
    elif spec.widget in ("radio", "likert"):
        at.radio(key=key).set_value(value)
    elif spec.widget in ("number", "float"):
        at.number_input(key=key).set_value(value)
    elif spec.widget == "textarea":
        at.text_area(key=key).input(value)
    else:
        at.text_input(key=key).input(value)


def play(at: AppTest, slug: str, external_id: str, bot: Bot) -> tuple[int, int]:
    """Play every bot item in the page; returns (accepted submissions, rejections checked)."""
    participant_id = runtime.find_participant(slug, external_id)
    if participant_id is None:
        raise BotFailure(f"the page did not register participant {external_id}: {[e.value for e in at.error]}")
    bot.participant_id = participant_id
    accepted = rejected = 0
    for item in iterate_with_view(bot, lambda: runtime.current_view(participant_id)):
        view = bot.view
        if view.step is None or view.finished or view.step.step is not item.step:
            raise BotFailure(f"page is at {view.step.name if view.step else view.status}, bot expects {item.step.__name__}")
        specs = [s for s in field_specs(view.response_model) if on_page(at, view.step.index, s)]
        enterable = {s.name for s in specs if s.name not in item.data or ui_can_enter(s, item.data[s.name])}
        if isinstance(item, SubmissionMustFail) and not set(item.data) <= enterable:
            continue  # the page itself rules this value out (no such option, or no widget for it)
        for spec in specs:
            if spec.name in item.data:
                fill(at, view.step.index, spec, item.data[spec.name])
        submit = [b for b in at.form_submit_button if b.form_id == f"form-{view.step.index}"]
        if not submit:
            raise BotFailure(f"no submit button for step {view.step.name}")
        submit[0].click()
        at.run()
        if at.exception:
            raise BotFailure(f"page raised: {at.exception[0].value}")
        after = runtime.current_view(participant_id)
        if isinstance(item, SubmissionMustFail):
            rejected += 1
            shown = [e.value for e in at.error] + [w.value for w in at.warning]
            still_here = after.step is not None and after.step.index == view.step.index and not after.finished
            if item.check and after.status == "screened_out":
                still_here = True
            if not still_here or not shown:
                raise BotFailure(f"{item.step.__name__}: {item.data} was not rejected visibly (messages: {shown})")
        else:
            assert isinstance(item, Submission)
            if after.step is not None and after.step.index == view.step.index and not after.finished:
                raise BotFailure(f"{item.step.__name__}: {item.data} was not accepted: {[e.value for e in at.error]}")
            stored = {r.step_index for r in stored_responses(participant_id)}
            accepted += view.step.index in stored  # a final failed check screens out without storing
    return accepted, rejected
