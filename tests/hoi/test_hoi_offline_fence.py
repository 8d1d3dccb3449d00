"""The offline stand-ins are fenced: no module of ``engines.hoi`` outside ``engines/hoi/offline/`` imports
them but the role registry ``engines.hoi.backends``, which names them, so the real path reads on its own.

Imports are read with ``ast`` at module and function level (``import``, ``from ... import``, relative
imports resolved); a string that names an offline module (an ``importlib`` target) counts too, except
the command table's entry for ``python -m engines.hoi demo``, which is itself built from the stand-ins.
"""

from __future__ import annotations

import pytest

from tests import offline_fence
from tests.offline_fence import ROOT

AREA = ROOT / "engines" / "hoi"
FENCED = "engines.hoi.offline"
REGISTRY = "engines.hoi.backends"  # the one module outside the fence that imports it
# Strings that name a fenced module by design: the command table's lazily loaded demo command.
# (tests/test_area_shape.py checks the fence itself; this file, what HOI's registry does with it.)
NAMED_BY_STRING = {"engines.hoi.__main__": {"engines.hoi.offline.demo"}}


def fenced_imports(source: str, module: str) -> list[str]:
    return offline_fence.fenced_imports(source, module, FENCED)


def test_the_registry_imports_them_so_the_offline_names_resolve():
    registry = AREA / "backends.py"
    assert fenced_imports(registry.read_text(encoding="utf-8"), REGISTRY)  # the one place that names them

    from engines.hoi import backends

    for kind in backends.KINDS:
        assert "offline" in backends.names(kind), kind
    assert {"offline-faithful", "offline-drift", "offline-timid", "offline-noisy"} <= set(backends.names("editor"))


def test_the_allowed_strings_are_still_there():
    """The exceptions name what is there (a stale one would hide nothing and should go)."""
    assert offline_fence.allowed_names_found("hoi", NAMED_BY_STRING) == {}


def test_serve_offers_the_tiny_pipelines_there_are():
    from engines.hoi.offline.tiny_pipelines import TINY_NAMES
    from engines.hoi.serve import TINY_CHOICES

    assert TINY_CHOICES == TINY_NAMES


@pytest.mark.parametrize(("source", "expected"), [
    ("from engines.hoi.offline import scenes\n", ["line 1: engines.hoi.offline", "line 1: engines.hoi.offline.scenes"]),
    ("import engines.hoi.offline.demo\n", ["line 1: engines.hoi.offline.demo"]),
    ("from engines.hoi import offline\n", ["line 1: engines.hoi.offline"]),
    ("def f():\n    from .offline.reading import iou\n", ["line 2: engines.hoi.offline.reading",
                                                         "line 2: engines.hoi.offline.reading.iou"]),
    ("import importlib\nimportlib.import_module('engines.hoi.offline.generation')\n",
     ["line 2: engines.hoi.offline.generation"]),
    ('"""Docstrings may name engines.hoi.offline."""\nfrom engines.hoi import offline_notes, roles\n', []),
])
def test_the_check_finds_an_import_of_the_fenced_package(source, expected):
    assert fenced_imports(source, "engines.hoi.example") == expected
