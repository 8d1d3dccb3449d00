"""Displays of the shape-counting study (``studies/collab_shapes``): a trial round and the worked example.

The trial page fits a laptop screen: the image on the left; on the right the question, the
progress, the earlier rounds, the AI's set as chips and the answer form (type the count and
pick a confidence, submit; a revision starts from the previous answer). Everything shown comes from the step's template variables, i.e. from what is
stored: the AI set drawn here is the one the study stored when the previous round was submitted.
"""

from __future__ import annotations

import streamlit as st

from engines.collab.study import support
from engines.platform import runtime
from engines.platform.forms import field_specs
from pages._ui import (
    field_errors,
    register_step_renderer,
    render_field,
    submit_step_form,
    unplaced_errors,
    widget_key,
)


def chips(labels: list[int]) -> str:
    return " ".join(f":blue-badge[**{y}**]" for y in labels)


@register_step_renderer("collab_trial", own_progress=True)
def collab_trial(view: runtime.StepView) -> None:
    tv = view.template_vars
    index = view.step.index
    if tv.get("feedback"):
        st.info(tv["feedback"])
    left, right = st.columns([1, 1], gap="large")
    with left:
        st.image(support.trial_png(tv["seed"], tv["difficulty"]), width=320,
                 alt=f"Image {tv['interaction']}: coloured shapes to count. {tv['question']}")
    with right:
        st.caption(f"Image {tv['interaction']} of {tv['interactions']} · round {tv['round']} of {tv['rounds']}")
        st.progress((tv["interaction"] - 1) / max(tv["interactions"], 1))
        st.markdown(f"### {tv['question']}")
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
            submit_step_form(view, specs, values)  # errors appear beside their fields, in this column


@register_step_renderer("collab_instructions")
def collab_instructions(view: runtime.StepView) -> None:
    tv = view.template_vars
    question = support.trial_question(tv["example_seed"], tv["example_difficulty"])
    st.image(support.trial_png(tv["example_seed"], tv["example_difficulty"]), width=240,
             alt=f"Worked example: an image of coloured shapes. {question}")
    st.markdown(f"Worked example: {question}")  # not st.image's caption, whose grey text is too faint to read
    with st.form(key=f"form-{view.step.index}"):
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    if submitted:
        submit_step_form(view, [], {})
