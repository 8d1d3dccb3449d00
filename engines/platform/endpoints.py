"""Which hosts a model endpoint URL may point at (judges, HOI evaluators, Gradio spaces, chat models).

An endpoint URL comes from a researcher's form or job parameters and is sent requests carrying an
API key, so it is checked like any other input: ``http``/``https`` only, no credentials in the URL,
and a host admitted by ``HAI_ENDPOINT_HOSTS`` (comma separated):

- ``*`` (the default of ``make run``, a researcher's own machine) admits any host, except link-local
  addresses (``169.254.0.0/16``, ``fe80::/10``: cloud metadata services), which must be listed;
- a list admits only its hosts (names or literal addresses, compared case-insensitively);
- empty admits none: ``make serve`` starts that way unless the operator sets the list.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from engines.platform.files import echo
from engines.platform.settings import get_settings


class EndpointRefused(ValueError):
    """An endpoint URL the app will not send requests to; the message says why."""


def allowed_hosts() -> tuple[bool, frozenset[str]]:
    """(any host admitted, the hosts listed by name) from ``HAI_ENDPOINT_HOSTS``."""
    entries = [entry.strip().lower() for entry in get_settings().endpoint_hosts.split(",") if entry.strip()]
    return "*" in entries, frozenset(entry for entry in entries if entry != "*")


def _link_local(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_link_local
    except ValueError:
        return False


def check_endpoint_url(url: str, *, field: str = "base_url") -> str:
    """``url`` when requests may be sent to it, else ``EndpointRefused`` naming ``field``."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointRefused(f"{field}: {echo(url)} is not an http(s) URL with a host.")
    if parts.username or parts.password:
        raise EndpointRefused(f"{field}: put the API key in a declared variable, not in the URL.")
    host = parts.hostname.lower()
    any_host, listed = allowed_hosts()
    if host in listed or (any_host and not _link_local(host)):
        return url
    if not listed and not any_host:
        raise EndpointRefused(f"{field}: no endpoint host is allowed on this server; the operator lists the hosts "
                              "in HAI_ENDPOINT_HOSTS.")
    raise EndpointRefused(f"{field}: the host {echo(host)} is not among the endpoint hosts this server allows "
                          "(HAI_ENDPOINT_HOSTS).")


__all__ = ["EndpointRefused", "allowed_hosts", "check_endpoint_url"]
