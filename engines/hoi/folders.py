"""Which folders the HOI-Edit area reads benchmarks from and writes runs to.

Every path the area is handed (the page's benchmark folder, a job's ``benchmark``, a command's
``--benchmark``, ``--records``, ``--votes``, ``--out`` ...) resolves through the platform's one
path policy, ``engines.platform.files.owned_path``:

- a **benchmark** is a folder of the registered data sets (``<data dir>/datasets/hoi/<name>/``),
  the shipped demo (``assets/hoi/demo``) or a job's result folder;
- a **file** a command reads (records, votes, a role config, a playbook) lies in the owned
  folders (uploads, data sets, job results, shipped assets) with the expected suffix;
- an **output** (a command's ``--out``) goes under the registered data sets or a job's result
  folder, never into the shipped assets (read-only while the app runs) nor outside the data folder.

A path may be given as the page shows it: ``shipped/hoi/demo``, ``datasets/hoi/<name>``,
``jobs/<id>`` (relative to its owned folder), or as an absolute path inside those folders.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from engines.platform import files
from engines.platform.files import FileRefused, Folder, area_folder, owned_path, shown_path
from engines.platform.private_files import private_dir

AREA = "hoi"
BENCHMARK_FOLDERS: tuple[Folder, ...] = ("datasets", "shipped", "jobs")
OUTPUT_FOLDERS: tuple[Folder, ...] = ("datasets", "jobs")


def benchmark_folder(path: str | Path, *, what: str = "the benchmark folder") -> Path:
    """``path`` resolved when it is a folder of the registered data sets, the shipped demo or a
    job's results. Raises ``FileRefused`` naming ``what``."""
    return owned_path(path, what=what, folders=BENCHMARK_FOLDERS, kind="dir")


def input_file(path: str | Path, *, what: str, suffixes: Iterable[str]) -> Path:
    """A file a command reads: inside the owned folders, with one of ``suffixes``."""
    return owned_path(path, what=what, suffixes=tuple(suffixes))


def input_folder(path: str | Path, *, what: str) -> Path:
    """A folder a command reads (a method's edits): inside the owned folders."""
    return owned_path(path, what=what, kind="dir")


def output_path(path: str | Path, *, what: str, folders: tuple[Folder, ...] = OUTPUT_FOLDERS) -> Path:
    """Where a command may write ``path``: the platform's ``output_path``, with ``datasets/hoi`` made
    first so that ``datasets/hoi/<run>`` works on a fresh data folder."""
    if "datasets" in folders:
        private_dir(area_folder("datasets", AREA))
    return files.output_path(path, what=what, folders=folders)


def shown(path: str | Path) -> str:
    """``path`` as stored in job parameters and run files, and shown: relative to its owned folder
    (``shipped/hoi/demo``, ``datasets/hoi/<name>``, ``jobs/<id>``), never a server path."""
    return shown_path(Path(path))


__all__ = ["AREA", "BENCHMARK_FOLDERS", "OUTPUT_FOLDERS", "FileRefused", "benchmark_folder", "input_file",
           "input_folder", "output_path", "shown"]
