"""The offline stand-ins are fenced: no module of ``engines.hoi`` outside ``engines/hoi/offline/`` imports
them but the role registry ``engines.hoi.backends``, which names them, so the real path reads on its own.

Imports are read with ``ast`` at module and function level (``import``, ``from ... import``, relative
imports resolved); a string that names an offline module (an ``importlib`` target) counts too, except
the command table's entry for ``python -m engines.hoi demo``, which is itself built from the stand-ins.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AREA = ROOT / "engines" / "hoi"
FENCED = "engines.hoi.offline"
REGISTRY = "engines.hoi.backends"  # the one module outside the fence that imports it
# Strings that name a fenced module by design: the command table's lazily loaded demo command.
NAMED_BY_STRING = {"engines.hoi.__main__": {"engines.hoi.offline.demo"}}
_MODULE_PATH = re.compile(r"engines\.hoi\.offline(\.\w+)*")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _fenced(name: str) -> bool:
    return name == FENCED or name.startswith(FENCED + ".")


def fenced_imports(source: str, module: str, *, is_package: bool = False) -> list[str]:
    """The fenced modules ``source`` (the text of ``module``) imports, or names in a string that is not
    a docstring, as ``"line N: name"``."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([node.module] if node.module else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                and _MODULE_PATH.fullmatch(node.value):
            names = [node.value]
        found += [f"line {node.lineno}: {name}" for name in names if _fenced(name)]
    return sorted(set(found), key=lambda entry: (int(entry.split(":")[0][5:]), entry))


def _outside_the_fence() -> list[Path]:
    return [path for path in sorted(AREA.rglob("*.py")) if (AREA / "offline") not in path.parents]


def test_only_the_registry_imports_the_offline_stand_ins():
    offenders = {}
    for path in _outside_the_fence():
        module = module_name(path)
        if module == REGISTRY:
            continue
        allowed = NAMED_BY_STRING.get(module, set())
        found = [entry for entry in fenced_imports(path.read_text(encoding="utf-8"), module,
                                                   is_package=path.name == "__init__.py")
                 if entry.split(": ", 1)[1] not in allowed]
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}, "only engines/hoi/backends.py may import engines.hoi.offline: " + repr(offenders)


def test_the_registry_imports_them_so_the_offline_names_resolve():
    registry = AREA / "backends.py"
    assert fenced_imports(registry.read_text(encoding="utf-8"), REGISTRY)  # the one place that names them

    from engines.hoi import backends

    for kind in backends.KINDS:
        assert "offline" in backends.names(kind), kind
    assert {"offline-faithful", "offline-drift", "offline-timid", "offline-noisy"} <= set(backends.names("editor"))


def test_the_allowed_strings_are_still_there():
    """The exceptions name what is there (a stale one would hide nothing and should go)."""
    for module, names in NAMED_BY_STRING.items():
        path = ROOT / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        found = {entry.split(": ", 1)[1] for entry in fenced_imports(path.read_text(encoding="utf-8"), module)}
        assert names <= found, module


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
