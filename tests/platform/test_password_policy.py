"""The shipped list of common passwords, and how it is regenerated."""

from __future__ import annotations

import sys
import types

import pytest

from engines.platform import password_policy


def test_the_shipped_list_holds_the_most_common_long_passwords():
    listed = password_policy.common_passwords()
    assert len(listed) == 11_611  # zxcvbn 4.5.0's 30,000 passwords, those of 8+ characters
    assert {"password", "12345678", "iloveyou", "sunshine"} <= listed
    assert all(len(p) >= 8 for p in listed)


def test_regenerating_keeps_the_long_passwords_in_frequency_order(tmp_path, monkeypatch):
    fake = types.ModuleType("zxcvbn.frequency_lists")
    fake.FREQUENCY_LISTS = {"passwords": ["123456", "password", "qwerty", "football1", "letmein", "Dragon12"]}
    monkeypatch.setitem(sys.modules, "zxcvbn", types.ModuleType("zxcvbn"))
    monkeypatch.setitem(sys.modules, "zxcvbn.frequency_lists", fake)
    out = tmp_path / "security" / "common.txt"
    assert password_policy.write_list(out) == 3
    lines = out.read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1].startswith("# ")
    assert lines[2:] == ["password", "football1", "Dragon12"]
    password_policy.common_passwords.cache_clear()
    try:
        assert password_policy.common_passwords(out) == frozenset({"password", "football1", "dragon12"})
    finally:
        password_policy.common_passwords.cache_clear()


@pytest.mark.parametrize(("password", "message"), [
    ("", "Password must have at least 8 characters."),
    (None, "Password must have at least 8 characters."),
    ("x" * 7, "Password must have at least 8 characters."),
    ("y" * 1025, "Password must have at most 1024 characters."),
    ("DRAGON12", "This password is on a list of common or breached passwords; choose another."),
])
def test_refused_passwords_say_why(password, message):
    with pytest.raises(password_policy.WeakPassword) as refused:
        password_policy.check_new_password(password, "someone")
    assert str(refused.value) == message


def test_the_limits_themselves_are_accepted():
    assert password_policy.check_new_password("k3#vq8!z") == "k3#vq8!z"
    assert password_policy.check_new_password("z" * 1023 + "q") == "z" * 1023 + "q"
    assert password_policy.check_new_password("someone-else", "") == "someone-else"  # no username given
