"""The failed-login counter itself: what it stores, what it counts, where the window ends.

These call ``login_throttle`` directly (no Argon2 check), with a fake clock; the end-to-end
lockout through ``auth.authenticate`` is in ``test_login_security.py``. Expected values are
worked out by hand from the rule: 5 failures per username or 20 per address within 15 minutes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from engines.platform import login_throttle
from engines.platform.db import read_session
from engines.platform.login_throttle import Lockout
from engines.platform.models import LoginFailure

START = datetime(2031, 5, 1, 9, 0, 0, tzinfo=UTC)


@pytest.fixture
def clock(monkeypatch):
    """A settable 'now' for the throttle, starting at 09:00."""
    now = {"t": START}
    monkeypatch.setattr(login_throttle, "utcnow", lambda: now["t"])

    def set_to(t: datetime) -> None:
        now["t"] = t

    return set_to


def _stored() -> list[tuple[str, str]]:
    with read_session() as session:
        return [(f.username, f.address) for f in session.exec(select(LoginFailure).order_by(LoginFailure.id)).all()]


# --- The message ---------------------------------------------------------------------------------


def test_the_wait_is_rounded_up_to_whole_minutes():
    """10 min 1 s left: 601 s / 60 = 10.02 minutes, which the message rounds up to 11."""
    locked = Lockout("username", START + timedelta(minutes=10, seconds=1))
    assert locked.message(START) == "Too many failed logins for this account. Try again in 11 minutes."


def test_the_address_lockout_names_the_network_address():
    locked = Lockout("address", START + timedelta(minutes=3))
    assert locked.message(START) == "Too many failed logins for this network address. Try again in 3 minutes."


def test_a_lockout_that_just_ended_still_says_one_minute():
    """Never "0 minutes" or less: at least one, in the singular."""
    locked = Lockout("username", START - timedelta(seconds=30))
    assert locked.message(START) == "Too many failed logins for this account. Try again in 1 minute."


def test_without_a_time_the_message_counts_from_now(clock):
    clock(START + timedelta(minutes=7))
    assert Lockout("username", START + timedelta(minutes=15)).message() == (
        "Too many failed logins for this account. Try again in 8 minutes.")


# --- What is stored ------------------------------------------------------------------------------


def test_failures_are_stored_under_the_trimmed_lower_cased_username(any_db, clock):
    login_throttle.record_failure("  Rhea.Silva ", "203.0.113.7")
    assert _stored() == [("rhea.silva", "203.0.113.7")]


def test_a_failure_without_an_address_stores_an_empty_one(any_db, clock):
    login_throttle.record_failure("rhea")
    login_throttle.record_failure("rhea", "")
    assert _stored() == [("rhea", ""), ("rhea", "")]


def test_a_failure_with_an_empty_username_is_stored_under_the_empty_name(any_db, clock):
    login_throttle.record_failure("")
    login_throttle.record_failure(None)
    assert _stored() == [("", ""), ("", "")]
    assert login_throttle.failure_count("xxxx") == 0


def test_a_long_address_is_cut_to_the_column_width(any_db, clock):
    """The address column holds 64 characters; PostgreSQL refuses anything longer."""
    login_throttle.record_failure("rhea", "a" * 60 + "bcdefgh")
    assert _stored() == [("rhea", "a" * 60 + "bcde")]


def test_a_long_username_is_cut_to_the_column_width_and_counted_by_its_first_255_characters(any_db, clock):
    login_throttle.record_failure("n" * 255 + "-one")
    login_throttle.record_failure("N" * 255 + "-two")  # the same first 255 characters, once lower-cased
    assert _stored() == [("n" * 255, ""), ("n" * 255, "")]
    assert login_throttle.failure_count("n" * 255 + "-three") == 2


def test_a_failure_exactly_one_window_old_is_swept_by_the_next_one(any_db, clock):
    login_throttle.record_failure("rhea")
    clock(START + timedelta(minutes=15))  # the first failure is now exactly 15 minutes old
    login_throttle.record_failure("ann")
    assert _stored() == [("ann", "")]


def test_a_failure_just_inside_the_window_is_kept_by_the_sweep(any_db, clock):
    login_throttle.record_failure("rhea")
    clock(START + timedelta(minutes=14, seconds=59))
    login_throttle.record_failure("ann")
    assert _stored() == [("rhea", ""), ("ann", "")]


def test_a_success_forgets_only_that_usernames_failures(any_db, clock):
    login_throttle.record_failure("rhea", "203.0.113.7")
    login_throttle.record_failure("ann", "203.0.113.7")
    login_throttle.clear_failures("RHEA")
    assert _stored() == [("ann", "203.0.113.7")]


# --- What is counted -----------------------------------------------------------------------------


def test_the_count_for_a_username_includes_every_address(any_db, clock):
    login_throttle.record_failure("rhea", "203.0.113.7")
    login_throttle.record_failure("rhea", "198.51.100.2")
    login_throttle.record_failure("ann", "203.0.113.7")
    assert login_throttle.failure_count("Rhea") == 2


def test_the_count_for_an_address_includes_every_username(any_db, clock):
    login_throttle.record_failure("rhea", "203.0.113.7")
    login_throttle.record_failure("ann", "203.0.113.7")
    login_throttle.record_failure("rhea", "198.51.100.2")
    assert login_throttle.failure_count(address="203.0.113.7") == 2


def test_without_username_or_address_the_failures_without_an_address_are_counted(any_db, clock):
    login_throttle.record_failure("rhea")
    login_throttle.record_failure("ann")
    login_throttle.record_failure("rhea", "203.0.113.7")
    assert login_throttle.failure_count() == 2


def test_the_count_leaves_out_failures_older_than_the_window(any_db, clock):
    login_throttle.record_failure("rhea")
    clock(START + timedelta(minutes=10))
    login_throttle.record_failure("rhea")
    clock(START + timedelta(minutes=15))  # the first is now exactly 15 minutes old: out
    assert login_throttle.failure_count("rhea") == 1
    clock(START + timedelta(minutes=24, seconds=59))  # the second is 14:59 old: still in
    assert login_throttle.failure_count("rhea") == 1
    clock(START + timedelta(minutes=25))
    assert login_throttle.failure_count("rhea") == 0


def test_four_failures_do_not_lock_and_the_fifth_does(any_db, clock):
    for _ in range(4):
        login_throttle.record_failure("rhea")
    assert login_throttle.lockout("rhea") is None
    login_throttle.record_failure("rhea")
    assert login_throttle.lockout("rhea") == Lockout("username", START + timedelta(minutes=15))


def test_the_lockout_opens_fifteen_minutes_after_the_fifth_most_recent_failure(any_db, clock):
    """Six failures at 09:00, 09:01, ..., 09:05: the fifth most recent is 09:01, so locked until 09:16."""
    for minute in range(6):
        clock(START + timedelta(minutes=minute))
        login_throttle.record_failure("rhea")
    assert login_throttle.lockout("rhea") == Lockout("username", START + timedelta(minutes=16))


def test_an_attempt_without_an_address_ignores_every_address_count(any_db, clock):
    """Twenty failures stored under a placeholder address lock that address, not address-less attempts."""
    for i in range(20):
        login_throttle.record_failure(f"spray-{i}", "XXXX")
    assert login_throttle.lockout("spray-new", "XXXX") == Lockout("address", START + timedelta(minutes=15))
    assert login_throttle.lockout("spray-new") is None


def test_the_address_lockout_opens_when_its_twentieth_most_recent_failure_leaves(any_db, clock):
    """Failures at 09:00:00 and then one a second until 09:00:19 from one address, each for another
    username: the 20th most recent is the one at 09:00:00, so the address is locked until 09:15:00."""
    login_throttle.record_failure("spray-0", "203.0.113.7")
    for second in range(1, 20):
        clock(START + timedelta(seconds=second))
        login_throttle.record_failure(f"spray-{second}", "203.0.113.7")
    assert login_throttle.lockout("rhea", "203.0.113.7") == Lockout("address", START + timedelta(minutes=15))
    assert login_throttle.lockout("rhea", "198.51.100.2") is None
    assert login_throttle.lockout("rhea") is None  # no address given: only the username counts


# --- The engine argument -------------------------------------------------------------------------



def test_every_function_uses_the_engine_it_is_given(other_engine, clock):
    other = {"engine": other_engine}
    for _ in range(5):
        login_throttle.record_failure("rhea", "203.0.113.7", **other)
    login_throttle.record_failure("ann")  # in the default database
    assert login_throttle.failure_count("rhea", **other) == 5
    assert login_throttle.failure_count("rhea") == 0
    assert login_throttle.lockout("rhea", **other) == Lockout("username", START + timedelta(minutes=15))
    assert login_throttle.lockout("rhea") is None
    login_throttle.clear_failures("rhea", **other)
    assert login_throttle.failure_count(address="203.0.113.7", **other) == 0
    assert login_throttle.failure_count("ann") == 1


def test_an_address_longer_than_the_column_still_locks(any_db):
    """Stored cut to 64 characters, and looked up the same way (a forwarded header can be long)."""
    long_address = "2001:db8::1" + "-" * 60 + "x"
    for i in range(login_throttle.MAX_FAILURES_PER_ADDRESS):
        login_throttle.record_failure(f"name-{i}", long_address)
    locked = login_throttle.lockout("someone-else", long_address)
    assert locked is not None and locked.per == "address"


# --- Whose address: the peer, or the client a trusted proxy names ------------------------------------


def test_a_forwarded_for_header_from_an_untrusted_peer_is_ignored():
    """A client talking to the app directly cannot choose the address its failures count under."""
    assert login_throttle.client_address("198.51.100.7", "203.0.113.99", trusted="") == "198.51.100.7"
    assert login_throttle.client_address("198.51.100.7", "203.0.113.99", trusted="127.0.0.1") == "198.51.100.7"


def test_from_a_trusted_proxy_the_last_forwarded_entry_is_the_client():
    """The proxy appends the address it saw; what the client put in front of it is not read."""
    assert login_throttle.client_address("127.0.0.1", "6.6.6.6, 203.0.113.7", trusted="127.0.0.1") == "203.0.113.7"
    assert login_throttle.client_address("127.0.0.1", " 203.0.113.7 ", trusted="127.0.0.1") == "203.0.113.7"


def test_a_trusted_network_is_given_in_cidr_form():
    assert login_throttle.client_address("10.20.30.40", "203.0.113.7", trusted="10.0.0.0/8") == "203.0.113.7"
    assert login_throttle.client_address("11.0.0.1", "203.0.113.7", trusted="10.0.0.0/8") == "11.0.0.1"
    assert login_throttle.client_address("2001:db8::5", "203.0.113.7", trusted="2001:db8::/32") == "203.0.113.7"
    # A dual-stack socket's IPv4 peer.
    assert login_throttle.client_address("::ffff:10.0.0.5", "203.0.113.7", trusted="10.0.0.0/8") == "203.0.113.7"


def test_a_chain_of_trusted_proxies_is_walked_from_the_right():
    """TLS proxy 10.0.0.5 -> nginx on 127.0.0.1 -> app: the first untrusted hop from the right is the client."""
    trusted = "127.0.0.1, 10.0.0.0/8"
    assert login_throttle.client_address("127.0.0.1", "6.6.6.6, 203.0.113.7, 10.0.0.5", trusted=trusted) == "203.0.113.7"


def test_a_trusted_proxy_that_names_no_client_gives_no_address():
    """Its own address would stand for everyone behind it: twenty failures would lock them all out."""
    assert login_throttle.client_address("127.0.0.1", "", trusted="127.0.0.1") == ""
    assert login_throttle.client_address("127.0.0.1", None, trusted="127.0.0.1") == ""
    assert login_throttle.client_address("127.0.0.1", "10.0.0.5, 127.0.0.1", trusted="127.0.0.1,10.0.0.5") == ""


def test_no_peer_gives_no_address():
    assert login_throttle.client_address(None, "203.0.113.7", trusted="127.0.0.1") == ""
    assert login_throttle.client_address("", "203.0.113.7", trusted="") == ""


def test_the_trusted_proxies_come_from_the_setting(monkeypatch):
    from engines.platform.settings import reset_settings

    monkeypatch.setenv("HAI_TRUSTED_PROXIES", "192.0.2.0/24")
    reset_settings()
    try:
        assert login_throttle.client_address("192.0.2.10", "203.0.113.7") == "203.0.113.7"
        assert login_throttle.client_address("198.51.100.7", "203.0.113.7") == "198.51.100.7"
    finally:
        monkeypatch.delenv("HAI_TRUSTED_PROXIES")
        reset_settings()


def test_a_trusted_proxy_entry_that_is_no_address_is_refused_by_name():
    with pytest.raises(ValueError, match=r"HAI_TRUSTED_PROXIES: 'proxy\.lan' is not an IP address or CIDR network"):
        login_throttle.client_address("127.0.0.1", "203.0.113.7", trusted="127.0.0.1, proxy.lan")
