"""The shape of an area (docs/extending.md, "The rooms of an area"): every folder under engines/
other than the platform is an area, and each has the same rooms, reached the same way.

- a command line: ``engines/<area>/__main__.py`` with ``main(argv)``, answering ``--help``;
- jobs registered through the platform's ``register_job``, each with a parameter model (the Jobs
  page builds its form from it and the queue validates with it);
- at least one page under pages/ built on it;
- its tests under tests/<area>/, a benchmark bench/<area>.py, and its manual docs/<area>.md, which
  the README links to;
- its offline stand-ins, where it has them, under engines/<area>/offline/, imported only by its role
  registry engines/<area>/backends.py (and the named exceptions below), so the real path reads on its own;
- its jobs write only where the path policy lets them (their own result folder, a temporary folder):
  tests/platform/test_job_kinds_keep_the_repository.py runs every kind with an audit hook on the
  files it opens for writing, and fails while a kind has no quick run there.

A sixth area that misses a room fails here with the room named.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from engines.platform.jobqueue import discover_job_kinds
from tests import offline_fence
from tests.helpers import run_main

ROOT = Path(__file__).resolve().parents[1]
AREAS = sorted(p.name for p in (ROOT / "engines").iterdir()
               if p.is_dir() and p.name not in {"platform", "__pycache__"} and (p / "__init__.py").exists())


def test_the_five_areas_are_found():
    assert AREAS == ["attribution", "collab", "hoi", "judge", "video"]


def _functions(path: Path) -> dict[str, ast.FunctionDef]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("area", AREAS)
def test_the_command_line_is_a_main_of_argv_that_answers_help(area, capsys):
    entry = ROOT / "engines" / area / "__main__.py"
    assert entry.is_file(), f"engines/{area} has no __main__.py: `python -m engines.{area}` does nothing"
    main = _functions(entry).get("main")
    if main is None:  # the entry point may take main from the area's cli module
        module = importlib.import_module(f"engines.{area}.__main__")
        assert callable(getattr(module, "main", None)), f"engines/{area}/__main__.py has no main(argv)"
    else:
        assert [a.arg for a in main.args.args] == ["argv"], f"engines.{area}: main takes argv, not {main.args.args}"
    module = importlib.import_module(f"engines.{area}.__main__")
    ran = run_main(module.main, ["--help"], capsys)
    assert ran.returncode == 0 and "usage:" in ran.stdout, (area, ran.stderr[-500:])


@pytest.mark.parametrize("area", AREAS)
def test_jobs_are_registered_through_the_kit_with_a_parameter_model(area):
    kinds = {name: kind for name, kind in discover_job_kinds().items() if name.startswith(f"{area}.")}
    assert kinds, f"engines/{area} registers no job kind named {area}.<kind> with register_job"
    without = sorted(name for name, kind in kinds.items() if kind.params is None)
    assert not without, f"job kinds without a parameter model (the Jobs page cannot build their form): {without}"
    untitled = sorted(name for name, kind in kinds.items() if kind.title == name)
    assert not untitled, f"job kinds without a title for the Jobs page: {untitled}"


def _imports_of(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("area", AREAS)
def test_a_page_is_built_on_the_area(area):
    pages = [p.name for p in sorted((ROOT / "pages").glob("*.py")) if not p.name.startswith("_")
             and any(m == f"engines.{area}" or m.startswith(f"engines.{area}.") for m in _imports_of(p))]
    assert pages, f"no page under pages/ imports engines.{area}"


@pytest.mark.parametrize("area", AREAS)
def test_tests_benchmark_and_manual_are_where_every_area_keeps_them(area):
    assert sorted((ROOT / "tests" / area).glob("test_*.py")), f"no tests under tests/{area}/"
    assert (ROOT / "bench" / f"{area}.py").is_file(), f"no benchmark bench/{area}.py"
    manual = ROOT / "docs" / f"{area}.md"
    assert manual.is_file(), f"no manual docs/{area}.md"
    assert f"docs/{area}.md" in (ROOT / "README.md").read_text(encoding="utf-8"), \
        f"the README does not link the manual docs/{area}.md"


# Modules outside an area's fence that name a stand-in by design: the command that writes HOI's shipped
# demo (built from the stand-ins), and the video command that trains the synthetic benchmark's frame model.
FENCE_EXCEPTIONS = {
    "hoi": {"engines.hoi.__main__": {"engines.hoi.offline.demo"}},
    "video": {"engines.video.cli": {"engines.video.offline.train_inspector",
                                    "engines.video.offline.train_inspector.InspectorTrainConfig",
                                    "engines.video.offline.train_inspector.train_and_save"}},
}
FENCED_AREAS = [area for area in AREAS if (ROOT / "engines" / area / "offline" / "__init__.py").is_file()]


def test_the_areas_with_model_roles_to_stand_in_for_keep_their_stand_ins_fenced():
    assert FENCED_AREAS == ["hoi", "judge", "video"]


@pytest.mark.parametrize("area", FENCED_AREAS)
def test_only_the_role_registry_imports_the_offline_stand_ins(area):
    allowed = FENCE_EXCEPTIONS.get(area, {})
    offenders = offline_fence.fence_offenders(area, allowed)
    registry = offline_fence.registry_module(area)
    assert offenders == {}, f"only {registry} may import engines.{area}.offline: {offenders!r}"
    assert offline_fence.allowed_names_found(area, allowed) == {}, "a stale exception hides nothing: remove it"
    source = (ROOT / (registry.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    assert offline_fence.fenced_imports(source, registry, f"engines.{area}.offline"), f"{registry} names no stand-in"
