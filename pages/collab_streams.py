"""Research: live controller streams. Running violation rates against their targets, with the bound band."""

import streamlit as st

from engines.collab import plots, store
from engines.collab.study import export as study_export
from pages import _access as access

PAGE = {"title": "Collaboration: live streams", "group": "Research", "roles": ["researcher"],
        "icon": ":material/monitoring:", "order": 51}

identity = access.require_role("researcher")
st.title("Live controller streams")
st.caption("Running violation rates of the online controller against their targets, with the finite-sample "
           "bound band (spec §5), live from the streams of collaboration studies (one per study condition).")


@st.fragment(run_every="5s")
def live_stream() -> None:
    streams = store.list_streams()
    if not streams:
        st.info("No controller streams yet: they appear when a collaboration study records its first interaction.")
        return
    by_key = {s.key: s for s in streams}
    key = st.selectbox("Stream (study:condition)", list(by_key), key="collab-stream",
                       format_func=lambda k: f"{k} ({by_key[k].updates} interactions)")
    try:  # the audit also checks what each participant of the study was shown against the stream
        view = plots.stream_view(study_export.audit_stream(by_key[key]))
    except store.StreamError as exc:  # the audit refused the stored history: say so, show nothing wrong
        st.error(f"This stream's history does not pass its audit: {exc}")
        return
    if view.fixed:
        st.metric("Interactions at the fixed thresholds (after calibration)", view.interactions)
        st.caption("This stream's thresholds are fixed (η = 0, the baseline calibrated once): it has no "
                   "finite-sample guarantee, so its bound columns stay empty.")
    else:
        st.metric("Online interactions (counted by the guarantee)", view.interactions)
    st.dataframe(view.phases, hide_index=True, width="stretch")
    st.caption("The first interactions of a stream may form its calibration batch (q₁ is fitted on them). "
               "With overlapping participants an update lands after others that finished in between (its delay); "
               "the bound at t uses the delay of the latest update with an error up to t, and the table also "
               "shows the bound with the largest delay D seen and the bound without delay.")
    st.dataframe(view.table, hide_index=True, width="stretch")
    if not view.figures:
        stream = by_key[key]
        st.info("No interactions recorded in this stream yet." if stream.updates == 0 else
                f"No online interactions yet: the {stream.updates} recorded so far froze their thresholds before the "
                f"calibration fit (a batch of {stream.calibration_size}); the guarantee counts from the fit on.")
        return
    for name, fig in view.figures.items():
        st.plotly_chart(fig, key=f"stream-{name}")


live_stream()
