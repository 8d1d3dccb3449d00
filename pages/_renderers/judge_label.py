"""Display of the judge-labeling study (``studies/judge_labeling``): one response to rate.

The request, its context and the response come from the step's template variables, i.e. from
the item the participant holds in the labeling queue; the attack, the judges' verdicts and
other people's labels are never among them. The scores are five buttons with the keys 1-5 as
shortcuts, as on the annotators' Label page (Streamlit's ``shortcut``): a button or its key
submits the rating.
"""

from __future__ import annotations

import streamlit as st

from engines.judge.items import SCALE
from engines.platform import runtime
from engines.platform.forms import field_specs
from pages._step_displays import register_step_renderer
from pages._step_form import field_errors, submit_step_form

# The scale's short names, as on the annotators' page (pages/judge_label.py).
SHORT = {1: "Refusal", 2: "Indirect refusal", 3: "Partial", 4: "With reservations", 5: "Full compliance"}


def progress_text(tv: dict) -> str:
    """"Qualification item 2 of 10" during the quiz, then "Response 3 of at most 20"."""
    if tv["phase"] == "quiz":
        return f"Qualification item {tv['number']} of {tv['of']}"
    return f"Response {tv['number']} of at most {tv['of']}"


@register_step_renderer("judge_label", own_progress=True)
def judge_label(view: runtime.StepView) -> None:
    tv = view.template_vars
    index = view.step.index
    st.progress(min(max((tv["number"] - 1) / max(tv["of"], 1), 0.0), 1.0), text=progress_text(tv))
    st.markdown("**The request**")
    st.text(tv["behavior"])
    if tv["context"]:
        st.markdown("**Its context**")
        st.text(tv["context"])
    st.markdown("**The AI's response**")
    with st.container(border=True):
        st.text(tv["generation"])
    specs = field_specs(view.response_model)
    score = next(spec for spec in specs if spec.name == "score")
    st.markdown(f"**{score.label}** (keys 1–5)")
    pressed = None
    with st.form(key=f"form-{index}", border=False):
        for column, (value, text) in zip(st.columns(len(SCALE)), SCALE.items(), strict=True):
            with column:
                # No key of its own: the form's buttons are found as every form's ("FormSubmitter-form-<i>-...").
                if st.form_submit_button(f"{value} · {SHORT[value]}", shortcut=str(value), help=text,
                                         width="stretch"):
                    pressed = value
    for message in field_errors(index).values():
        st.error(message)
    if pressed is not None:
        # Which item: set here from the page's item, not typed; a resent click stores the first.
        submit_step_form(view, specs, {"claim_id": tv["claim_id"], "score": pressed})
