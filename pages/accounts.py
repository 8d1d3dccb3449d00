"""Admin: manage researcher, annotator and admin accounts."""

import pandas as pd
import streamlit as st

from engines.platform import auth
from engines.platform.models import Role
from pages import _access as access

PAGE = {"title": "Accounts", "group": "Admin", "roles": ["admin"], "icon": ":material/group:", "order": 20}

identity = access.require_role(Role.ADMIN)
st.title("Accounts")

FLASH = "accounts-flash"  # a message that survives the rerun after a change
if (flash := st.session_state.pop(FLASH, None)) is not None:
    st.success(flash)

users = auth.list_users()
st.dataframe(pd.DataFrame([{"username": u.username, "role": u.role, "active": u.is_active,
                            "created": u.created_at, "last login": u.last_login_at} for u in users]),
             hide_index=True, width="stretch")

with st.form("create-account", clear_on_submit=True):
    st.subheader("New account")
    username = st.text_input("Username", key="new-username")
    role = st.selectbox("Role", Role.ALL, index=1, key="new-role")
    password = st.text_input("One-time password (they choose their own at the first login)", type="password",
                             key="new-password")
    lifetime_hours = auth.one_time_password_lifetime().total_seconds() / 3600
    st.caption(f"It stops working after {lifetime_hours:g} hours (HAI_INVITATION_HOURS); after that, reset it below.")
    if st.form_submit_button("Create account"):
        try:
            auth.create_user(username.strip(), password, role, must_change_password=True,
                             expires_after=auth.one_time_password_lifetime())
        except auth.AuthError as exc:
            st.error(str(exc))
        else:
            st.success(f"Created {role} account '{username.strip()}'.")
            st.rerun()

st.subheader("Change an account")
target = st.selectbox("Account", [u.username for u in users], key="edit-account")
user = next(u for u in users if u.username == target)
col1, col2, col3 = st.columns(3)
with col1:
    new_role = st.selectbox("Role", Role.ALL, index=Role.ALL.index(user.role), key="edit-role")
    if st.button("Save role", key="save-role"):
        try:
            auth.update_user(target, role=new_role)
        except auth.AuthError as exc:
            st.error(str(exc))
        else:
            st.session_state[FLASH] = (f"'{target}' is now {new_role}; their open logins were ended."
                                       if new_role != user.role else f"'{target}' stays {new_role}.")
            st.rerun()
with col2:
    label = "Deactivate" if user.is_active else "Reactivate"
    if st.button(label, key="toggle-active"):
        try:
            auth.update_user(target, is_active=not user.is_active)
        except auth.AuthError as exc:
            st.error(str(exc))
        else:
            st.session_state[FLASH] = (f"Reactivated '{target}'." if not user.is_active
                                       else f"Deactivated '{target}'; their open logins were ended.")
            st.rerun()
with col3:
    reset = st.text_input("New password", type="password", key="reset-password")
    if st.button("Reset password", key="reset-button"):
        try:
            auth.set_password(target, reset, must_change=True, expires_after=auth.one_time_password_lifetime())
        except auth.AuthError as exc:
            st.error(str(exc))
        else:
            hours = auth.one_time_password_lifetime().total_seconds() / 3600
            st.success(f"Password reset; their open logins were ended, and they must choose a new password when "
                       f"they next log in, within {hours:g} hours.")
