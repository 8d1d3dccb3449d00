"""The participant page: runs any study from ``studies/`` for a participant who arrived by link.

Every answer is stored before the next step is drawn, so a refresh or a reopened link resumes
at the same step. The page keeps nothing in session state that the database does not have.
"""

import logging
from html import escape

import streamlit as st

from engines.platform import runtime
from engines.platform.forms import field_specs
from engines.platform.panels import LinkError
from pages import _renderers  # noqa: F401 - registers custom step displays
from pages import _startup as startup
from pages import _step_displays as displays
from pages import _step_form as step_forms

PAGE = {"title": "Study", "group": "Participate", "roles": [], "icon": ":material/assignment:"}
LOG = logging.getLogger("hai.participate")
# What a participant reads when something breaks: no traceback, no server path (the log has them).
PLAIN_ERROR = ("Something went wrong on our side. Your answers so far are saved: reload the page to go on. "
               "If it happens again, please contact the researcher through your panel.")


class _Defaults(dict):
    def __missing__(self, key):  # a body placeholder the step did not fill stays visible as-is
        return "{" + key + "}"


def fmt(text: str, values: dict) -> str:
    return text.format_map(_Defaults(values)) if text else ""


def show_completion(view: runtime.StepView) -> None:
    target = view.completion
    if view.status == "screened_out":
        st.header("Thank you for your time")
        st.write("Unfortunately you cannot continue with this study. Your answers so far are saved.")
    else:
        step = view.step.step if view.step else None
        st.header(fmt(step.title, view.template_vars) if step else "Thank you!")
        st.write(fmt(step.body, view.template_vars) if step else "Your answers are saved.")
    st.markdown("Your completion code:")
    st.code(target.code, language=None)
    if target.kind == "redirect":
        st.link_button("Return to Prolific to finish", target.url, type="primary")
    elif target.kind == "post":
        fields = "".join(f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in target.fields.items())
        st.html(f'<form method="POST" action="{escape(target.url)}">{fields}'
                '<button type="submit">Submit the HIT</button></form>')
    else:
        st.caption("Copy this code back into the site that sent you here.")


def notice_if_moved_on_elsewhere(view: runtime.StepView) -> None:
    """Say so when this tab's step was answered in another tab or window since its last run.

    The participant may have typed an answer here for a step that is stored already: it is not
    stored twice, and they should know that rather than lose it silently.
    """
    now = (view.participant_id, view.step.index if view.step else None, view.status)
    before = st.session_state.get(step_forms.SHOWN_STEP_KEY)
    submitted_here = st.session_state.pop(step_forms.SUBMITTED_HERE_KEY, False)
    st.session_state[step_forms.SHOWN_STEP_KEY] = now
    if before is not None and before[0] == now[0] and before != now and not submitted_here:
        st.info("This step was already answered in another tab or window, so what you entered here was not "
                "saved again. You are now at the next step.", icon=":material/tab:")


def show_step(view: runtime.StepView) -> None:
    instance = view.step
    step = instance.step
    runtime.record_shown(view.participant_id, instance.index)
    if displays.shows_step_count(step):
        st.progress(view.position / max(view.total_steps, 1), text=f"Step {view.position + 1} of {view.total_steps}")
    if step.title:
        st.subheader(fmt(step.title, view.template_vars))
    if step.body:
        st.markdown(fmt(step.body, view.template_vars))
    if step.template:
        renderer = displays.STEP_RENDERERS.get(step.template)
        if renderer is None:
            st.error(f"This study needs the '{step.template}' display, which this server does not have.")
            st.stop()
        renderer(view)
    else:
        if view.failed_attempts and step.check:
            st.warning(f"{step.check.feedback} (attempt {view.failed_attempts + 1} of {step.check.max_attempts})")
        specs = field_specs(view.response_model)
        values, submitted = step_forms.step_form(view, specs)
        if submitted:
            step_forms.submit_step_form(view, specs, values)
    step_forms.reopen_step(view, fmt)


startup.boot()
params = {key: st.query_params.get_all(key) for key in st.query_params}
slug = st.query_params.get("study", "")
# Entering is a write (it may create the participant); once per browser session and link is
# enough: every later rerun of this session shows the same participant.
link_key = (slug, tuple(sorted((k, tuple(v)) for k, v in params.items())))
entered = st.session_state.get("hai_entered", {}).get(link_key)
if entered is None:
    try:
        entered = runtime.enter(slug, params)
    except (LinkError, runtime.StudyError) as exc:
        st.error(str(exc))
        st.stop()
    st.session_state.setdefault("hai_entered", {})[link_key] = entered

if entered.preview:
    st.header("Preview")
    st.write("Accept the HIT to start the study.")
    st.stop()

try:
    view = runtime.current_view(entered.participant_id)
    st.title(view.study_title)
    notice_if_moved_on_elsewhere(view)
    if view.finished:
        show_completion(view)
    else:
        show_step(view)
except Exception:  # st.stop and st.rerun are BaseExceptions and pass through
    LOG.exception("participant page failed (study %r, participant %s)", slug, entered.participant_id)
    st.error(PLAIN_ERROR)
