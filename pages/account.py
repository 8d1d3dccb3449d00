"""Your account: change your password, log out."""

import streamlit as st

from engines.platform import auth
from pages import _access as access

PAGE = {"title": "My account", "group": "Account", "roles": ["researcher", "annotator", "admin"],
        "icon": ":material/person:", "order": 90}

identity = access.require_role("researcher", "annotator", "admin")
st.title("My account")
st.write(f"**{identity.username}** — role: {identity.role}")

FLASH = "account-flash"  # a message that survives the rerun after a change
if (flash := st.session_state.pop(FLASH, None)) is not None:
    st.success(flash)
if auth.must_change_password(identity.user_id):
    st.warning("You are using a one-time password. Choose a new password now.")

with st.form("change-password", clear_on_submit=True):
    current = st.text_input("Current password", type="password", key="account-current")
    new = st.text_input("New password", type="password", key="account-new")
    again = st.text_input("Repeat the new password", type="password", key="account-again")
    st.caption(f"At least {auth.MIN_PASSWORD_LENGTH} characters, without your username in it, and not one of the "
               "common or breached passwords that HAI Studio refuses.")
    if st.form_submit_button("Change password"):
        if new != again:
            st.error("The two passwords differ.")
        else:
            try:
                auth.change_own_password(identity.username, current, new, address=access.client_address())
            except auth.AuthError as exc:
                st.error(str(exc))
            else:
                # Changing the password ends every login, this one's token included: start a new one, and
                # rerun so that its cookie is written, the menu comes back and the warning goes.
                access.log_in(identity)
                st.session_state[FLASH] = "Password changed."
                st.rerun()

if st.button("Log out"):
    access.log_out()
    st.rerun()
