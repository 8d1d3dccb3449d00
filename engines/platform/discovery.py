"""Find the per-area modules of ``engines/`` by name (``engines.<area>.jobs``, ``engines.<area>.models``).

Areas add job kinds and tables by creating such a module; nothing else needs wiring.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType


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
