"""The check behind each area's offline fence: no module of ``engines.<area>`` outside
``engines/<area>/offline/`` imports the stand-ins but the area's role registry (``backends.py``; the judges' ``judges.py``),
so the real path reads on its own (docs/extending.md, "The rooms of an area").

Imports are read with ``ast`` at module and function level (``import``, ``from ... import``, relative
imports resolved); a string that names an offline module (an ``importlib`` target) counts too, but
not a docstring.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def fenced_imports(source: str, module: str, fenced: str, *, is_package: bool = False) -> list[str]:
    """The modules of the package ``fenced`` that ``source`` (the text of ``module``) imports, or names
    in a string that is not a docstring, as ``"line N: name"``."""
    def inside(name: str) -> bool:
        return name == fenced or name.startswith(fenced + ".")

    module_path = re.compile(re.escape(fenced) + r"(\.\w+)*")
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
                and module_path.fullmatch(node.value):
            names = [node.value]
        found += [f"line {node.lineno}: {name}" for name in names if inside(name)]
    return sorted(set(found), key=lambda entry: (int(entry.split(":")[0][5:]), entry))


def registry_module(area: str) -> str:
    """The module of ``area`` that names its stand-ins: its role registry (the judges' registry for judge)."""
    return REGISTRIES.get(area, f"engines.{area}.backends")


REGISTRIES = {"judge": "engines.judge.judges"}


def fence_offenders(area: str, allowed: Mapping[str, set[str]]) -> dict[str, list[str]]:
    """{file: imports of ``engines.<area>.offline``} of every module of the area outside the fence but
    its registry (``registry_module``); ``allowed`` names, per module, fenced names it may use."""
    root, fenced = ROOT / "engines" / area, f"engines.{area}.offline"
    offenders = {}
    for path in sorted(root.rglob("*.py")):
        if root / "offline" in path.parents or module_name(path) == registry_module(area):
            continue
        module = module_name(path)
        found = [entry for entry in fenced_imports(path.read_text(encoding="utf-8"), module, fenced,
                                                   is_package=path.name == "__init__.py")
                 if entry.split(": ", 1)[1] not in allowed.get(module, set())]
        if found:
            offenders[str(path.relative_to(ROOT))] = found
    return offenders


def allowed_names_found(area: str, allowed: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Of each allowed module's names, those it does not use any more (a stale exception hides nothing)."""
    stale = {}
    for module, names in allowed.items():
        path = ROOT / Path(*module.split("."))
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        found = {entry.split(": ", 1)[1]
                 for entry in fenced_imports(path.read_text(encoding="utf-8"), module, f"engines.{area}.offline")}
        if names - found:
            stale[module] = names - found
    return stale
