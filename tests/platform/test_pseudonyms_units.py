"""The pseudonym key and the Pseudonymiser on their own: key file, messages, fingerprint, scrubbing.

Expected pseudonyms are computed here from the documented formula, ``"anon-" +
HMAC-SHA256(key, id)`` cut to 16 hex digits, with Python's ``hmac``; the whole-export checks are in
``test_pseudonymised_export.py``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import stat

import pytest

from engines.platform import credentials, pseudonyms, settings
from engines.platform.pseudonyms import Pseudonymiser, PseudonymKeyError, load_key, pseudonym_key_problem

KEY = b"k" * 40


def by_hand(raw: str, key: bytes = KEY) -> str:
    return "anon-" + hmac.new(key, raw.encode(), hashlib.sha256).hexdigest()[:16]


@pytest.fixture
def configure(monkeypatch, tmp_path):
    """``configure(key, data_dir)``: set HAI_PSEUDONYM_KEY ("" hides a developer's own) and HAI_DATA_DIR."""
    def set_to(key: str = "", data_dir=None) -> None:
        monkeypatch.setenv("HAI_PSEUDONYM_KEY", key)
        monkeypatch.setenv("HAI_DATA_DIR", str(data_dir if data_dir is not None else tmp_path / "data"))
        settings.reset_settings()

    yield set_to
    settings.reset_settings()


# --- The key ---------------------------------------------------------------------------------------


def test_the_generated_key_is_64_hex_digits_on_one_line(configure, tmp_path):
    configure()
    key = load_key(tmp_path)
    assert re.fullmatch(rb"[0-9a-f]{64}", key)
    assert (tmp_path / "pseudonym.key").read_text() == key.decode() + "\n"


def test_the_key_file_goes_into_the_configured_data_folder(configure, tmp_path):
    configure(data_dir=tmp_path / "lab" / "data")  # neither folder exists yet
    key = load_key()
    assert (tmp_path / "lab" / "data" / "pseudonym.key").read_text().strip().encode() == key


def test_making_the_key_leaves_no_temporary_file(configure, tmp_path):
    configure()
    load_key(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pseudonym.key"]


def test_a_key_made_by_another_process_in_the_meantime_is_kept(configure, tmp_path):
    """Two processes both found no key file: the second one's link fails and the first key stays."""
    configure()
    path = tmp_path / "pseudonym.key"
    credentials._new_key_file(path)
    first = path.read_text()
    credentials._new_key_file(path)
    assert path.read_text() == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pseudonym.key"]


def test_the_configured_key_is_used_as_it_is_set_without_surrounding_spaces(configure, tmp_path):
    configure("  " + "c" * 32 + "  ")
    assert load_key(tmp_path) == b"c" * 32
    assert not (tmp_path / "pseudonym.key").exists()


def test_a_configured_key_of_31_characters_is_refused_with_a_way_to_make_one(configure):
    configure("c" * 31)
    with pytest.raises(PseudonymKeyError) as refused:
        load_key()
    assert str(refused.value) == ("HAI_PSEUDONYM_KEY has 31 characters; use at least 32 "
                                  "(for example: python -c 'import secrets; print(secrets.token_hex(32))')")


def test_a_key_file_the_group_can_read_is_refused_with_the_fix(configure, tmp_path):
    configure()
    load_key(tmp_path)
    path = tmp_path / "pseudonym.key"
    os.chmod(path, 0o640)
    with pytest.raises(PseudonymKeyError) as refused:
        load_key(tmp_path)
    assert str(refused.value) == f"{path} is readable by other users (mode 640); run: chmod 600 {path}"


@pytest.mark.parametrize("mode", [0o604, 0o610, 0o601, 0o620])
def test_any_permission_for_others_is_refused(configure, tmp_path, mode):
    configure()
    load_key(tmp_path)
    os.chmod(tmp_path / "pseudonym.key", mode)
    with pytest.raises(PseudonymKeyError, match="readable by other users"):
        load_key(tmp_path)


def test_an_empty_key_file_is_refused_with_the_fix(configure, tmp_path):
    configure()
    path = tmp_path / "pseudonym.key"
    path.write_text("  \n")
    os.chmod(path, 0o600)
    with pytest.raises(PseudonymKeyError) as refused:
        load_key(tmp_path)
    assert str(refused.value) == f"{path} is empty; delete it to make a new key (older exports will no longer join)"


def test_the_key_problem_is_shown_before_an_export(configure):
    configure("short")
    assert pseudonym_key_problem() == ("No pseudonymised export: HAI_PSEUDONYM_KEY has 5 characters; use at least 32 "
                                       "(for example: python -c 'import secrets; print(secrets.token_hex(32))')")


def test_a_data_folder_that_cannot_be_made_is_a_key_problem_too(configure, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the data folder should be")
    configure(data_dir=blocker)
    assert pseudonym_key_problem().startswith("No pseudonymised export: ")


def test_no_key_problem_with_a_good_key(configure):
    configure("c" * 32)
    assert pseudonym_key_problem() is None


def test_the_pseudonymiser_reads_the_key_of_the_given_folder(configure, tmp_path):
    configure()
    (tmp_path / "pseudonym.key").write_text("my-lab-key\n")
    os.chmod(tmp_path / "pseudonym.key", 0o600)
    assert pseudonyms.pseudonymiser(tmp_path)("5f8a0c3b9e1d2a4b6c7d8e9f") == by_hand(
        "5f8a0c3b9e1d2a4b6c7d8e9f", b"my-lab-key")


# --- The Pseudonymiser -----------------------------------------------------------------------------


def test_the_key_id_is_a_keyed_fingerprint_of_eight_hex_digits():
    expected = hmac.new(KEY, b"hai-studio pseudonym key id", hashlib.sha256).hexdigest()[:8]
    assert Pseudonymiser(KEY).key_id == expected


def test_empty_panel_values_and_the_mturk_host_stay_as_they_are():
    params = {"STUDY_ID": "65a1b2c3", "SESSION_ID": "", "hitId": None,
              "turkSubmitTo": "https://www.mturk.com", "assignmentId": 12345}
    assert Pseudonymiser(KEY).panel_params(params) == {
        "STUDY_ID": by_hand("65a1b2c3"), "SESSION_ID": "", "hitId": None,
        "turkSubmitTo": "https://www.mturk.com", "assignmentId": by_hand("12345")}


def test_ids_shorter_than_six_characters_are_not_scrubbed_from_text():
    content = b"answer: 12345 and 123456"
    assert Pseudonymiser(KEY).scrub(content, ["12345"]) == content
    assert Pseudonymiser(KEY).scrub(content, ["123456", "12345"]) == (
        b"answer: 12345 and " + by_hand("123456").encode())


def test_an_id_that_begins_another_id_does_not_cut_the_longer_one():
    """``abcdef`` is a prefix of ``abcdefgh``: each is replaced by its own pseudonym."""
    content = b"abcdefgh, abcdef; abcdefg."
    out = Pseudonymiser(KEY).scrub(content, ["abcdef", "abcdefgh"])
    assert out == f"{by_hand('abcdefgh')}, {by_hand('abcdef')}; abcdefg.".encode()


def test_ids_sharing_a_start_and_ids_apart_are_all_replaced():
    ids = ["A1B2C3D4", "A1B2C3XY", "A1Z9Z9Z9", "Q7Q7Q7Q7"]
    content = b"|A1B2C3D4|A1B2C3XY|A1Z9Z9Z9|Q7Q7Q7Q7|A1B2C3|"
    out = Pseudonymiser(KEY).scrub(content, ids)
    assert out == ("|" + "|".join(by_hand(i) for i in ids) + "|A1B2C3|").encode()


def test_an_id_with_regex_characters_is_matched_literally():
    out = Pseudonymiser(KEY).scrub(b"id a.b+c(d) and aXb+c(d)", ["a.b+c(d)"])
    assert out == f"id {by_hand('a.b+c(d)')} and aXb+c(d)".encode()


def test_an_id_next_to_punctuation_is_replaced_but_not_inside_a_word():
    out = Pseudonymiser(KEY).scrub(b"(5f8a0c3b)-5f8a0c3b_ z5f8a0c3b 5f8a0c3b9", ["5f8a0c3b"])
    assert out == f"({by_hand('5f8a0c3b')})-{by_hand('5f8a0c3b')}_ z5f8a0c3b 5f8a0c3b9".encode()


def test_the_generated_key_file_is_private_from_the_start(configure, tmp_path):
    """Even with a permissive umask the file is created 0600 (never briefly world-readable)."""
    configure()
    old = os.umask(0)
    try:
        load_key(tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "pseudonym.key").st_mode) == 0o600
