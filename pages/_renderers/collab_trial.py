"""Displays of the shape-counting study (``studies/collab_shapes``): a trial round and the worked example.

The trial page fits a laptop screen and a phone's: the progress and the question across the top,
then the image on the left and, on the right, the earlier rounds, the AI's set as chips and the
answer form (type the count and pick a confidence, submit; a revision starts from the previous
answer). On a phone the columns stack and the page is tightened (``PHONE_CSS``), so the image and
the whole form are on screen together. Everything shown comes from the step's template variables,
i.e. from what is stored: the AI set drawn here is the one the study stored when the previous
round was submitted.
"""

from __future__ import annotations

import streamlit as st

from engines.collab.study.images import trial_png, trial_question
from engines.platform import runtime
from engines.platform.forms import field_specs
from pages._step_displays import register_step_renderer
from pages._step_form import field_errors, render_field, submit_step_form, unplaced_errors, widget_key


def chips(labels: list[int]) -> str:
    """The counts as blue badges (Streamlit markdown)."""
    return " ".join(f":blue-badge[**{y}**]" for y in labels)


# Below 640 px Streamlit stacks columns, and a phone (390x844) must still show the image and the
# whole answer form at once: the participant counts in the image while answering. So on narrow
# screens the image is drawn at 3x its 64 px (192 px), and the page above and inside the trial is
# tightened (top space, the study title, gaps between elements). Scoped to this display's container
# and present only while a trial is drawn; wider screens keep Streamlit's own layout.
PHONE_CSS = """<style>
@media (max-width: 640px) {
  [data-testid="stMainBlockContainer"]:has(.st-key-collab-trial) { padding-top: 4rem; }
  [data-testid="stMainBlockContainer"]:has(.st-key-collab-trial) h1 { font-size: 1.5rem; padding: 0; }
  .st-key-collab-trial, .st-key-collab-trial [data-testid="stVerticalBlock"],
  .st-key-collab-trial [data-testid="stHorizontalBlock"] { gap: 0.5rem; }
  .st-key-collab-trial h3 { font-size: 1.25rem; }
  .st-key-collab-trial-image img { width: 192px !important; }
  .st-key-collab-trial [data-testid="stForm"] { padding: 0.75rem; }
}
</style>"""


def progress_text(tv: dict) -> str:
    """"Image 3 of 20 · round 2 of 3"."""
    return f"Image {tv['interaction']} of {tv['interactions']} · round {tv['round']} of {tv['rounds']}"


@register_step_renderer("collab_trial", own_progress=True)
def collab_trial(view: runtime.StepView) -> None:
    tv = view.template_vars
    st.html(PHONE_CSS)
    with st.container(key="collab-trial"):
        if tv.get("feedback"):
            st.info(tv["feedback"])
        st.progress((tv["interaction"] - 1) / max(tv["interactions"], 1), text=progress_text(tv))
        st.markdown(f"### {tv['question']}")
        left, right = st.columns([1, 1], gap="large")
        with left, st.container(key="collab-trial-image"):
            st.image(trial_png(tv["seed"], tv["difficulty"]), width=320,
                     alt=f"Image {tv['interaction']}: coloured shapes to count. {tv['question']}")
        with right:
            answer_panel(view)


def answer_panel(view: runtime.StepView) -> None:
    """The earlier rounds, the AI's set and the answer form (errors appear beside their fields)."""
    tv = view.template_vars
    index = view.step.index
    for number, past in enumerate(tv["history"], start=1):
        st.markdown(f"Round {number}: you answered **{past['answer']}** "
                    f"(confidence {past['confidence']}/{tv['confidence_max']})")
    if tv["mode"] != "none" and tv["history"]:
        shown = tv["ai_set"] or []
        if shown:
            st.markdown(f"**The AI's set of likely counts:** {chips(shown)}")
        else:
            st.markdown("**The AI's set is empty:** it is not sure enough of any count.")
    specs = [s for s in field_specs(view.response_model) if s.name != "final" or tv["can_finalise"]]
    # A revision round starts from the previous round's answer, so keeping it is one click.
    previous = tv["history"][-1] if tv["history"] else {}
    errors = field_errors(index)
    with st.form(key=f"form-{index}"):
        values = {}
        for spec in specs:
            key = widget_key(index, spec.name)
            if spec.name == "final" and tv["last_round"]:
                values[spec.name] = True  # no box to untick: the last round's answer is final
                st.caption("This is the last round for this image: your answer is final.")
            else:
                values[spec.name] = render_field(spec, key, previous.get(spec.name), errors.get(spec.name))
        unplaced_errors(view, specs)
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    if tv["round"] == 1 and tv["mode"] != "none":
        st.caption("After your answer, the AI shows its set of likely counts and you can revise.")
    if submitted:
        submit_step_form(view, specs, values)


@register_step_renderer("collab_instructions")
def collab_instructions(view: runtime.StepView) -> None:
    tv = view.template_vars
    question = trial_question(tv["example_seed"], tv["example_difficulty"])
    st.image(trial_png(tv["example_seed"], tv["example_difficulty"]), width=240,
             alt=f"Worked example: an image of coloured shapes. {question}")
    st.markdown(f"Worked example: {question}")  # not st.image's caption, whose grey text is too faint to read
    with st.form(key=f"form-{view.step.index}"):
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    if submitted:
        submit_step_form(view, [], {})
