"""Find what registers itself: the per-area modules of ``engines/`` and the study protocols.

Areas add job kinds and tables by creating ``engines.<area>.jobs`` / ``engines.<area>.models``;
studies (the ``studies`` package, ``HAI_STUDIES_PACKAGE``) register protocols and, when a study
needs one, rules of their own. ``discover_all`` imports all of them, once, so the command line, a
job worker and the app see the same registries; nothing else needs wiring.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from types import ModuleType

AREA_MODULES = ("models", "jobs")

_LOCK = threading.RLock()
_AREAS_IMPORTED = False


def import_area_modules(name: str) -> list[ModuleType]:
    """Import ``engines.<area>.<name>`` for every area that has one; a missing one is skipped."""
    import engines

    modules = []
    for info in pkgutil.iter_modules(engines.__path__, prefix="engines."):
        if not info.ispkg:
            continue
        try:
            modules.append(importlib.import_module(f"{info.name}.{name}"))
        except ModuleNotFoundError as exc:
            if exc.name != f"{info.name}.{name}":
                raise  # the module exists but one of its own imports is missing
    return modules


def discover_all() -> None:
    """Import every area's ``models`` and ``jobs`` modules and the studies package (idempotent, thread-safe).

    A call made while discovery is under way in the same thread (a module being imported asks
    for it) returns at once; other threads wait until it has finished.
    """
    global _AREAS_IMPORTED
    from engines.platform.registry import discover  # the studies package, per HAI_STUDIES_PACKAGE

    with _LOCK:
        if not _AREAS_IMPORTED:
            _AREAS_IMPORTED = True
            try:
                for name in AREA_MODULES:
                    import_area_modules(name)
            except BaseException:
                _AREAS_IMPORTED = False
                raise
    discover()  # outside the lock: the registry has its own, and studies import engine modules
