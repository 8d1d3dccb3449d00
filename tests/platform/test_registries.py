"""One registry type for every table of named things (engines.platform.registries), and the table of
docs/extending.md written from them."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from engines.platform.registries import Registry, UnknownName
from engines.platform.settings import REPO_ROOT


def test_a_registry_holds_entries_by_name_with_their_descriptions():
    shapes = Registry("tests", "test shapes")

    @shapes.register("square")
    def square():
        """Four equal sides.

        More words that are not the summary."""

    shapes.add("circle", "round", "No corners")
    assert dict(shapes) == {"square": square, "circle": "round"}
    assert shapes.described() == [("circle", "No corners"), ("square", "Four equal sides.")]
    assert "square" in shapes and len(shapes) == 2 and sorted(shapes) == ["circle", "square"]


def test_a_registry_filled_by_a_module_imports_it_when_first_read_and_not_before(tmp_path, monkeypatch):
    module = "hai_test_registry_filler"
    (tmp_path / f"{module}.py").write_text(
        "from engines.platform.registries import every_registry\n"
        "filled = next(r for r in every_registry() if r.holds == 'test models filled on reading')\n"
        "filled.add('heavy', 'the model', 'A stand-in that would import torch')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    models = Registry("tests", "test models filled on reading", filled_by=module)
    assert module not in sys.modules  # created: nothing imported yet
    assert sorted(models) == ["heavy"] and module in sys.modules
    assert models["heavy"] == "the model" and models.described() == [("heavy", "A stand-in that would import torch")]


def test_a_registry_whose_module_fails_to_import_says_so_at_every_read():
    broken = Registry("tests", "test models of a missing module", filled_by="hai_no_such_filler_module")
    for _ in range(2):  # not filled once and then silently empty
        with pytest.raises(ModuleNotFoundError):
            sorted(broken)


def test_video_roles_are_registered_when_read_though_discovery_does_not_import_their_models():
    code = ("import sys\nfrom engines.platform.discovery import discover_all\ndiscover_all()\n"
            "print('torch' in sys.modules)\nfrom engines.video.roles import PLANNERS\n"
            "print(sorted(PLANNERS))")
    ran = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    torch_after_discovery, planners = ran.stdout.splitlines()
    assert torch_after_discovery == "False"
    assert {"heuristic", "coupled-heuristic"} <= set(eval(planners))  # noqa: S307 - our own printed list


def test_a_taken_name_is_refused_unless_replaced_and_an_unknown_one_names_the_choices():
    roles = Registry("tests", "test roles")
    roles.add("offline", 1)
    with pytest.raises(ValueError, match="a test role named 'offline' is already registered"):
        roles.add("offline", 2)
    roles.add("offline", 2, replace=True)
    assert roles["offline"] == 2
    with pytest.raises(UnknownName, match=r"unknown test role 'gpu'; choose one of: offline"):
        roles["gpu"]  # noqa: B018
    with pytest.raises(ValueError, match="needs a name"):
        roles.add(" ", 3)
    roles.remove("offline")
    roles.remove("offline")  # gone already: nothing happens
    assert list(roles) == []


def test_a_test_may_put_an_entry_in_for_its_own_duration(monkeypatch):
    kinds = Registry("tests", "test kinds")
    kinds.add("kept", 1)
    with monkeypatch.context() as patch:
        patch.setitem(kinds, "for-now", 2)
        assert kinds["for-now"] == 2
    assert dict(kinds) == {"kept": 1}


def test_the_extending_page_lists_every_registry_as_the_command_writes_it():
    # A fresh process: only what the product registers (tests register entries of their own).
    written = subprocess.run([sys.executable, "-m", "engines.platform", "registries"], cwd=REPO_ROOT,
                             capture_output=True, text=True, check=True).stdout.strip()
    page = (REPO_ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    shown = re.search(r"<!-- registries: begin -->\n(.*?)\n<!-- registries: end -->", page, re.S)
    assert shown is not None and shown.group(1) == written, (
        "docs/extending.md's registry table is out of date: python -m engines.platform registries")
    # Every area's tables are there, each with what it holds.
    for area, holds in [("platform", "job kinds"), ("platform", "study protocols"), ("collab", "study rules"),
                        ("collab", "human schedules"), ("judge", "judges"), ("judge", "judge backends"),
                        ("video", "planners"), ("hoi", "image editors")]:
        assert f"| {area} | {holds} |" in written
