"""The shipped HOI-Edit files name no path of the machine that made them, and read as they are:
the demo's run file names its benchmark relative to the data folders, and that name resolves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from engines.hoi import browse
from engines.hoi.folders import benchmark_folder
from engines.hoi.offline.demo import DEMO_DIR
from engines.platform.settings import REPO_ROOT

SHIPPED = REPO_ROOT / "assets" / "hoi"
MACHINE_PATH = re.compile(r"(^|[\s\"'`(=])(/(work|home|tmp|Users|root|mnt|opt|var)/|[A-Za-z]:\\)")


def strings(value):
    """Every string of a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def shipped_text_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl", ".md", ".txt", ".csv"))


def absolute_paths(path: Path) -> list[str]:
    """The strings of a shipped file that are absolute paths (JSON) or name a machine's folders (text)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        values = list(strings(json.loads(text)))
    elif path.suffix == ".jsonl":
        values = [s for line in text.splitlines() if line.strip() for s in strings(json.loads(line))]
    else:
        return [m.group(0) for m in MACHINE_PATH.finditer(text)]
    return [s for s in values if s.startswith("/") or s.startswith("~") or MACHINE_PATH.search(s)]


def test_no_shipped_file_names_a_path_of_a_machine():
    files = shipped_text_files(SHIPPED)
    assert len(files) > 50  # the demo's records, traces, run file, methods, votes, README
    found = {str(p.relative_to(SHIPPED)): bad for p in files if (bad := absolute_paths(p))}
    assert found == {}


@pytest.mark.skipif(not DEMO_DIR.is_dir(), reason="the shipped demo is written by `python -m engines.hoi demo`")
def test_the_demo_run_names_its_benchmark_by_a_name_that_resolves_and_reads():
    run = json.loads((DEMO_DIR / "scpe_run.json").read_text())
    assert run["benchmark"] == "shipped/hoi/demo"
    assert benchmark_folder(run["benchmark"]) == DEMO_DIR.resolve()
    workspace = browse.open_workspace(benchmark_folder(run["benchmark"]))
    assert run["method"] in workspace.scores and len(workspace.benchmark) == run["counts"]["items"]


def test_the_check_finds_a_machine_path(tmp_path):
    (tmp_path / "run.json").write_text(json.dumps({"benchmark": "/work/main/assets/hoi/demo", "ok": "images/a.png"}))
    (tmp_path / "notes.md").write_text("made in `/home/me/hoi` from images/L1L2\n")
    assert absolute_paths(tmp_path / "run.json") == ["/work/main/assets/hoi/demo"]
    assert len(absolute_paths(tmp_path / "notes.md")) == 1
