"""Layering: engines/ and studies/ never import streamlit; pages never import torch; engines never import studies."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _files(folder: str):
    return sorted((ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("folder", ["engines", "studies"])
def test_no_streamlit_below_pages(folder):
    offenders = [str(p.relative_to(ROOT)) for p in _files(folder) if "streamlit" in _imports(p)]
    assert offenders == []


def test_engines_do_not_import_studies_or_pages():
    offenders = [str(p.relative_to(ROOT)) for p in _files("engines") if {"studies", "pages"} & _imports(p)]
    assert offenders == []


def test_pages_do_not_import_torch():
    offenders = [str(p.relative_to(ROOT)) for p in _files("pages") + [ROOT / "app.py"] if "torch" in _imports(p)]
    assert offenders == []


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _engine_import_graph() -> dict[str, set[str]]:
    """{module: the engines modules it imports}, at module or function level (``from a import b`` counts
    ``a.b`` when b is a module, else ``a``; relative imports resolved)."""
    modules = {_module_name(p): p for p in _files("engines")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                            for alias in node.names}
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a -> ... -> a) per strongly connected group of modules that import each other."""
    found, state = [], {}  # state: 1 on the current path, 2 done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                found.append(stack[stack.index(target):] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_engine_modules_import_no_cycle():
    cycles = [" -> ".join(cycle) for cycle in _cycles(_engine_import_graph())]
    assert cycles == [], "import cycles: " + "; ".join(cycles)


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


# Areas: the platform imports none, areas do not import each other

def _area_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "engines" else None


def _cross_area_imports(graph: dict[str, set[str]]) -> list[str]:
    """Imports from one area (or the platform) into another area: "importer -> imported"."""
    found = []
    for module, targets in sorted(graph.items()):
        source = _area_of(module)
        for target in sorted(targets):
            area = _area_of(target)
            if area not in (None, "platform", source):
                found.append(f"{module} -> {target}")
    return found


def test_platform_imports_no_area_and_areas_do_not_import_each_other():
    assert _cross_area_imports(_engine_import_graph()) == []


def test_the_area_check_finds_a_cross_import():
    graph = {"engines.platform.jobs": {"engines.collab.jobs"}, "engines.judge.x": {"engines.collab.store"},
             "engines.collab.a": {"engines.collab.b", "engines.platform.db"}}
    assert _cross_area_imports(graph) == ["engines.judge.x -> engines.collab.store",
                                          "engines.platform.jobs -> engines.collab.jobs"]


# Pages and studies reach the database only through engine calls

DATABASE_MODULES = ("sqlmodel", "sqlalchemy", "psycopg", "sqlite3", "engines.platform.db")


def _database_access(path: Path) -> list[str]:
    """Database imports, and uses of a raw session (``ctx.session``, ``.exec(``), in one page or study file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        found += [f"imports {n}" for n in names if any(n == m or n.startswith(m + ".") for m in DATABASE_MODULES)]
        if isinstance(node, ast.Attribute) and node.attr == "session":
            found.append(f"line {node.lineno}: .session")
        if isinstance(node, ast.Attribute) and node.attr in ("exec", "execute") and isinstance(node.value, ast.Name) \
                and "session" in node.value.id:
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return sorted(set(found))


def test_pages_and_studies_reach_the_database_only_through_engine_calls():
    offenders = {str(p.relative_to(ROOT)): _database_access(p)
                 for p in _files("pages") + _files("studies") + [ROOT / "app.py"]}
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_database_check_finds_a_raw_session(tmp_path):
    page = tmp_path / "page.py"
    page.write_text("from sqlmodel import select\nfrom engines.platform.db import read_session\n"
                    "def after_submit(ctx):\n    store.open_stream(ctx.session, 'k')\n")
    assert _database_access(page) == ["imports engines.platform.db", "imports engines.platform.db.read_session",
                                      "imports sqlmodel", "imports sqlmodel.select", "line 4: .session"]
