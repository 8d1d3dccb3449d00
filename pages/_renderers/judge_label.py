"""Display of the judge-labeling study (``studies/judge_labeling``): one response to rate.

The request, its context and the response come from the step's template variables, i.e. from
the item the participant holds in the labeling queue; the attack, the judges' verdicts and
other people's labels are never among them.
"""

from __future__ import annotations

import streamlit as st

from engines.platform import runtime
from engines.platform.forms import field_specs
from pages._ui import field_errors, register_step_renderer, render_field, submit_step_form, unplaced_errors, widget_key


@register_step_renderer("judge_label", own_progress=True)
def judge_label(view: runtime.StepView) -> None:
    tv = view.template_vars
    index = view.step.index
    st.caption(f"Response {tv['number']} of at most {tv['items']}")
    st.progress((tv["number"] - 1) / max(tv["items"], 1))
    st.markdown("**The request**")
    st.text(tv["behavior"])
    if tv["context"]:
        st.markdown("**Its context**")
        st.text(tv["context"])
    st.markdown("**The AI's response**")
    with st.container(border=True):
        st.text(tv["generation"])
    specs = field_specs(view.response_model)
    shown = [spec for spec in specs if spec.name != "claim_id"]  # which item: set here, not typed
    errors = field_errors(index)
    with st.form(key=f"form-{index}"):
        values = {spec.name: render_field(spec, widget_key(index, spec.name), None, errors.get(spec.name))
                  for spec in shown}
        values["claim_id"] = tv["claim_id"]
        unplaced_errors(view, shown)
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    if submitted:
        submit_step_form(view, specs, values)
