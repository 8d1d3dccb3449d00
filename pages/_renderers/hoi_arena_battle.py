"""Display of the HOI-Edit arena (``studies/hoi_arena``): one pair of anonymous edits, then its reveal.

The vote page shows the instruction, the original photo and edits A and B side by side (on a phone
too: the two compared edits are always in view together), with upstream's four buttons
(GenAI-Arena's "A is better", "B is better", "Tie", "Both are bad"); the button pressed is the
answer. The methods' names are not among the vote page's template values at
all; the next step (the reveal) names them under the same images, beside the stored vote. An
image is opened only inside the benchmark folders the app owns (``engines.hoi.folders``).
"""

from __future__ import annotations

import re

import streamlit as st

from engines.hoi.arena import CHOICES
from engines.hoi.folders import BENCHMARK_FOLDERS
from engines.platform import runtime
from engines.platform.files import FileRefused, owned_path
from engines.platform.forms import field_specs
from pages._step_displays import register_step_renderer
from pages._step_form import field_errors, submit_step_form

# Pixels: beside the two edits on a wide screen, and small enough on a phone that both edits and
# the buttons follow it on one screen.
ORIGINAL_WIDTH = 180


def plain(text: str) -> str:
    """Benchmark text shown as written: markdown's special characters escaped."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|>~<])", r"\\\1", text)


def _image(path: str, alt: str, width: int | str = "stretch") -> None:
    """One image of the pair, opened only inside a benchmark folder the app owns (a registered data
    set, the shipped demo, a job's results): the path comes from the participant's stored plan.
    Anything else is not shown, and the participant is told so without the server's path."""
    try:
        image = owned_path(path, what="an arena image", folders=BENCHMARK_FOLDERS)
    except FileRefused:
        st.warning("This image cannot be shown; please tell the researcher.")
        return
    st.image(image, width=width, alt=alt)


def _images(tv: dict, captions: tuple[str, str]) -> None:
    """The original photo, then edits A and B in one row that never stacks (``wrap=False``): on a
    phone (390 px wide) stacked edits put A and B a screen apart, so the two compared images were
    never in view together. The original is kept small for the same reason: with it, both edits
    and the first row of buttons fit a 390 x 844 screen."""
    instruction = tv["instruction"]
    st.markdown("**Original photo**")
    _image(tv["source"], f"The original photo, before editing. Instruction: {instruction}", width=ORIGINAL_WIDTH)
    edit_a, edit_b = st.columns(2, gap="small", wrap=False)
    for column, side, caption, key in ((edit_a, "A", captions[0], "edit_a"), (edit_b, "B", captions[1], "edit_b")):
        with column:
            st.markdown(f"**{plain(caption)}**")
            _image(tv[key], f"Edit {side}: the photo edited by an AI system following the instruction: {instruction}")


@register_step_renderer("hoi_arena_battle", own_progress=True)
def hoi_arena_battle(view: runtime.StepView) -> None:
    tv = view.template_vars
    index = view.step.index
    revealed = tv["phase"] == "reveal"
    st.progress((tv["pair"] - 1 + revealed) / max(tv["pairs"], 1), text=f"Pair {tv['pair']} of {tv['pairs']}")
    st.markdown(f"**Instruction:** {plain(tv['instruction'])}")
    specs = field_specs(view.response_model)
    errors = field_errors(index)
    if not revealed:
        _images(tv, ("Edit A", "Edit B"))
        st.markdown("Which edit follows the instruction better?")
        pressed = None
        with st.form(key=f"form-{index}", border=False):
            # Two buttons a row, in rows that never stack: all four in reach under the edits on a phone.
            labels = list(CHOICES)
            for row in (labels[:2], labels[2:]):
                for column, label in zip(st.columns(2, gap="small", wrap=False), row, strict=True):
                    with column:
                        if st.form_submit_button(label, width="stretch"):
                            pressed = label
        for message in errors.values():
            st.error(message)
        if pressed is not None:
            # A double click sends the same answer for the same step twice: the runtime stores the first.
            submit_step_form(view, specs, {"pair": tv["pair"], "choice": pressed})
        return
    _images(tv, (f"Edit A: {tv['name_a']}", f"Edit B: {tv['name_b']}"))
    st.success(f"Your vote: **{tv['choice']}**. Edit A was made by **{plain(tv['name_a'])}**, "
               f"edit B by **{plain(tv['name_b'])}**.")
    with st.form(key=f"form-{index}", border=False):
        submitted = st.form_submit_button(view.step.step.submit_label, type="primary")
    for message in errors.values():
        st.error(message)
    if submitted:
        submit_step_form(view, specs, {"pair": tv["pair"]})
