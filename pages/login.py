"""Log in with a HAI Studio account (researchers, annotators, admins)."""

import streamlit as st

from engines.platform.settings import get_settings
from pages import _access as access

PAGE = {"title": "Log in", "group": "Account", "roles": ["public"], "icon": ":material/login:", "order": 0}

st.title("HAI Studio")
st.caption("Human–AI studies and research demos. Participants: please use the link from your recruitment panel.")

access.login_form()

provider = get_settings().oidc_provider
if provider:
    if st.button(f"Log in with {provider}"):
        st.login(provider)
    if getattr(st.user, "is_logged_in", False) and (refused := st.session_state.get(access.OIDC_REFUSED_KEY)):
        st.warning(f"Signed in with {provider}, but not let in: {refused}")
