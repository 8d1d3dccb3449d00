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


@pytest.fixture
def fake_zxcvbn(monkeypatch):
    """zxcvbn's frequency list, six passwords long (three of 8+ characters)."""
    fake = types.ModuleType("zxcvbn.frequency_lists")
    fake.FREQUENCY_LISTS = {"passwords": ["123456", "password", "qwerty", "football1", "letmein", "Dragon12"]}
    monkeypatch.setitem(sys.modules, "zxcvbn", types.ModuleType("zxcvbn"))
    monkeypatch.setitem(sys.modules, "zxcvbn.frequency_lists", fake)


def test_regenerating_keeps_the_long_passwords_in_frequency_order(tmp_path, fake_zxcvbn):
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


def test_the_regenerated_file_says_where_it_comes_from(tmp_path, fake_zxcvbn):
    """The two header lines, as the shipped file has them (written out by hand)."""
    out = tmp_path / "common.txt"
    password_policy.write_list(out)
    assert out.read_text().splitlines()[:2] == [
        "# Common and breached passwords of at least 8 characters, most frequent first.",
        "# From zxcvbn 4.5.0's frequency list (MIT licence); regenerate: python -m engines.platform.password_policy"]


def test_regenerating_creates_missing_folders(tmp_path, fake_zxcvbn):
    out = tmp_path / "checkout" / "assets" / "security" / "common.txt"  # none of the folders exists yet
    assert password_policy.write_list(out) == 3
    assert out.read_text().splitlines()[2:] == ["password", "football1", "Dragon12"]


def test_regenerating_replaces_the_existing_list(tmp_path, fake_zxcvbn):
    out = tmp_path / "security" / "common.txt"
    out.parent.mkdir()
    out.write_text("# an older list\nletmein123\n")
    password_policy.write_list(out)
    assert "letmein123" not in out.read_text().splitlines()
    assert out.read_text().splitlines()[2:] == ["password", "football1", "Dragon12"]


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


@pytest.mark.parametrize(("password", "username"), [
    ("ritarita", "rita"),  # the username twice
    ("xRITA2024x", "rita"),  # anywhere, in any case
    ("rita.silva-2031", "Rita.Silva"),
    ("me-ann@example.org!", "ann@example.org"),
])
def test_a_password_that_contains_the_username_is_refused(password, username):
    with pytest.raises(password_policy.WeakPassword) as refused:
        password_policy.check_new_password(password, username)
    assert str(refused.value) == "The password must not contain the username."


def test_a_username_shorter_than_three_characters_may_appear_in_the_password():
    """"al" or "jo" is a pair of letters in many good passwords; only the username itself is refused."""
    assert password_policy.check_new_password("albatross-9", "al") == "albatross-9"
    assert password_policy.check_new_password("ritual-tax-9", "rita") == "ritual-tax-9"  # "rit" alone is not "rita"
