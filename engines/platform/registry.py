"""Registry of study protocols, discovered from a package (``studies`` by default).

Engines never import ``studies`` statically (it sits above them); the package is named by the
``HAI_STUDIES_PACKAGE`` setting and loaded on first use, the way datasette loads plugins.
Protocols built in code (benchmarks, tests) register directly with ``register_protocol``.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from engines.platform.settings import get_settings
from engines.platform.study import StudyProtocol, protocol_from_module

_PROTOCOLS: dict[str, StudyProtocol] = {}
_DISCOVERED: set[str] = set()
_LOCK = threading.RLock()


class UnknownProtocol(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


def register_protocol(protocol: StudyProtocol, *, replace: bool = False) -> StudyProtocol:
    with _LOCK:
        existing = _PROTOCOLS.get(protocol.name)
        if existing is not None and existing is not protocol and not replace:
            raise ValueError(f"a study protocol named {protocol.name!r} is already registered")
        _PROTOCOLS[protocol.name] = protocol
    return protocol


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
                register_protocol(protocol_from_module(module), replace=True)
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
