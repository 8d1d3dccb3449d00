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
