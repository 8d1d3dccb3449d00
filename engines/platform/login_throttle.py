"""Slow down password guessing: failed logins counted per username and per client address.

OWASP's Authentication Cheat Sheet ("Protect against automated attacks") and NIST SP 800-63B
section 5.2.2 ask for a limit on consecutive failed attempts. After ``MAX_FAILURES_PER_USERNAME``
failures for one username within ``WINDOW``, or ``MAX_FAILURES_PER_ADDRESS`` from one client
address, further attempts are refused, without checking the password, until enough of those
failures are older than the window. Refused attempts are not counted, so the lockout ends on its
own; unknown usernames are counted like known ones, so the lockout reveals no account. The
counts live in the database, so they hold across app processes and restarts.

The client address is the browser's, never the proxy's (``client_address``): behind a reverse proxy
every request comes from the proxy, and counting them under its address would let twenty wrong
passwords lock out everyone. ``X-Forwarded-For`` is read only when the request comes from one of
``HAI_TRUSTED_PROXIES``, so a client talking to the app directly cannot choose its address.
"""

from __future__ import annotations

import functools
import ipaddress
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import delete, select

from engines.platform.db import read_session, write_transaction
from engines.platform.models import LoginFailure, utcnow
from engines.platform.settings import Network, get_settings, trusted_networks

WINDOW = timedelta(minutes=15)
MAX_FAILURES_PER_USERNAME = 5
MAX_FAILURES_PER_ADDRESS = 20


@dataclass(frozen=True)
class Lockout:
    """Why attempts are refused now, and when they are accepted again."""

    per: str  # "username" | "address"
    until: datetime

    def message(self, now: datetime | None = None) -> str:
        minutes = max(1, math.ceil(((self.until - (now or utcnow())).total_seconds()) / 60))
        who = "this account" if self.per == "username" else "this network address"
        unit = "minute" if minutes == 1 else "minutes"
        return f"Too many failed logins for {who}. Try again in {minutes} {unit}."


ADDRESS_LENGTH = 64  # LoginFailure.address's width


@functools.lru_cache(maxsize=8)
def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None
    # A dual-stack socket reports an IPv4 peer as ::ffff:a.b.c.d; it is the IPv4 address.
    return ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped else ip


def _trusted(address: str, networks: tuple[Network, ...]) -> bool:
    ip = _ip(address)
    return ip is not None and any(ip.version == net.version and ip in net for net in networks)


def client_address(peer: str | None, forwarded_for: str | None, trusted: str | None = None) -> str:
    """The address a login attempt is counted under.

    Args:
        peer: the direct peer of the connection (Streamlit's ``st.context.ip_address``).
        forwarded_for: the ``X-Forwarded-For`` header, several headers joined with commas.
        trusted: the trusted proxies (default: the ``trusted_proxies`` setting).

    Returns:
        The peer, unless it is a trusted proxy: then the ``X-Forwarded-For`` entries are read from
        the right (each one added by the proxy after it), skipping trusted proxies, and the first
        other one is the client. Entries left of it were written by the client and are never read.
        Empty when the only address known is a trusted proxy's (a proxy that sends no header): its
        address stands for everyone behind it, and only the per-username limit applies.
    """
    networks = trusted_networks(get_settings().trusted_proxies if trusted is None else trusted)
    peer = (peer or "").strip()
    if not _trusted(peer, networks):
        return peer[:ADDRESS_LENGTH]
    for hop in reversed([entry.strip() for entry in (forwarded_for or "").split(",")]):
        if hop and not _trusted(hop, networks):
            return hop[:ADDRESS_LENGTH]
    return ""


def _key(username: str) -> str:
    return (username or "").strip().lower()[:255]


def _unlocks_at(session, column, value: str, limit: int, now: datetime) -> datetime | None:
    # Locked while ``limit`` or more failures lie in the window; it opens when the limit-th most
    # recent one leaves it.
    recent = session.exec(select(LoginFailure.failed_at).where(column == value, LoginFailure.failed_at > now - WINDOW)
                          .order_by(LoginFailure.failed_at.desc()).offset(limit - 1).limit(1)).first()
    return recent + WINDOW if recent is not None else None


def lockout(username: str, address: str = "", *, engine: Engine | None = None) -> Lockout | None:
    """The lockout that applies to a login attempt now, or None when it may go ahead."""
    now = utcnow()
    with read_session(engine) as session:
        until = _unlocks_at(session, LoginFailure.username, _key(username), MAX_FAILURES_PER_USERNAME, now)
        if until is not None:
            return Lockout("username", until)
        if address:
            # Looked up as stored: cut to the column's 64 characters.
            until = _unlocks_at(session, LoginFailure.address, address[:ADDRESS_LENGTH], MAX_FAILURES_PER_ADDRESS,
                                now)
            if until is not None:
                return Lockout("address", until)
    return None


def record_failure(username: str, address: str = "", *, engine: Engine | None = None) -> None:
    """Count one failed attempt, and forget failures that have left the window."""
    now = utcnow()
    with write_transaction(engine) as session:
        session.exec(delete(LoginFailure).where(LoginFailure.failed_at <= now - WINDOW))
        session.add(LoginFailure(username=_key(username), address=(address or "")[:ADDRESS_LENGTH], failed_at=now))


def clear_failures(username: str, *, engine: Engine | None = None) -> None:
    """A successful login forgets its username's failures (the address's count stays)."""
    with write_transaction(engine) as session:
        session.exec(delete(LoginFailure).where(LoginFailure.username == _key(username)))


def failure_count(username: str = "", address: str = "", *, engine: Engine | None = None) -> int:
    """Failures within the window for ``username`` (or, without it, for ``address``)."""
    column, value = (LoginFailure.username, _key(username)) if username else (LoginFailure.address, address)
    with read_session(engine) as session:
        return session.exec(select(func.count()).select_from(LoginFailure)
                            .where(column == value, LoginFailure.failed_at > utcnow() - WINDOW)).one()
