"""A participant's step as a form: one widget per response field, errors under their fields, the
answer stored through the study runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from engines.platform import runtime
from engines.platform.forms import FieldSpec

SHOWN_STEP_KEY = "hai_shown_step"  # (participant, step, status) this tab showed last
SUBMITTED_HERE_KEY = "hai_submitted_here"  # this tab stored an answer just now


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
