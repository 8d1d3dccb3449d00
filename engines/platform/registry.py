"""Registry of study protocols, discovered from a package (``studies`` by default).

Engines never import ``studies`` statically (it sits above them); the package is named by the
``HAI_STUDIES_PACKAGE`` setting and loaded on first use, the way datasette loads plugins.
Protocols built in code (benchmarks, tests) register directly with ``register_protocol``.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from engines.platform.registries import Registry
from engines.platform.settings import get_settings
from engines.platform.study import StudyProtocol, protocol_from_module

_PROTOCOLS: Registry[StudyProtocol] = Registry("platform", "study protocols")
_DISCOVERED: set[str] = set()
_IN_CODE: set[str] = set()  # registered by register_protocol rather than discovered from a package
_LOCK = threading.RLock()


class UnknownProtocol(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register_protocol(protocol: StudyProtocol, *, replace: bool = False) -> StudyProtocol:
    """Register a protocol built in code (a benchmark's, a test's)."""
    _put(protocol, replace=replace)
    with _LOCK:
        _IN_CODE.add(protocol.name)
    return protocol


def _put(protocol: StudyProtocol, *, replace: bool) -> StudyProtocol:
    with _LOCK:
        existing = _PROTOCOLS.get(protocol.name)
        if existing is not None and existing is not protocol and not replace:
            raise ValueError(f"a study protocol named {protocol.name!r} is already registered")
        _PROTOCOLS.add(protocol.name, protocol, getattr(protocol, "title", "") or "", replace=True)
    return protocol


def unregister_protocol(name: str) -> None:
    """Forget a protocol registered in code (a benchmark's or a test's), so that nothing later in the
    process (demo data, the studies page) takes it for a shipped study."""
    with _LOCK:
        if name in _IN_CODE:
            _IN_CODE.discard(name)
            _PROTOCOLS.remove(name)


def names_registered_in_code() -> set[str]:
    """The names ``register_protocol`` has registered (not those discovered from a package)."""
    with _LOCK:
        return set(_IN_CODE)


def discover(package: str | None = None) -> dict[str, StudyProtocol]:
    """Import every subpackage or module of ``package`` that declares a study, once."""
    package = package or get_settings().studies_package
    with _LOCK:
        if package in _DISCOVERED:
            return dict(_PROTOCOLS)
        root = importlib.import_module(package)
        for info in pkgutil.iter_modules(root.__path__, prefix=f"{package}."):
            if info.name.rsplit(".", 1)[-1].startswith("_"):
                continue
            module = importlib.import_module(info.name)
            if hasattr(module, "step_sequence"):
                _put(protocol_from_module(module), replace=True)
        _DISCOVERED.add(package)
        return dict(_PROTOCOLS)


def all_protocols() -> dict[str, StudyProtocol]:
    return discover()


def get_protocol(name: str) -> StudyProtocol:
    protocols = discover()
    if name not in protocols:
        known = ", ".join(sorted(protocols)) or "none"
        raise UnknownProtocol(f"No study protocol named {name!r} (known: {known}).")
    return protocols[name]
