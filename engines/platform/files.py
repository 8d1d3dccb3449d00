"""The one path policy: which files the app opens on a person's behalf.

A path that reaches the app from a person (a form, a job's parameters, a command line) or from a
file (a trajectory's ``video_path``, a benchmark manifest, a run's ``source``) is hostile until
resolved here. ``owned_path`` accepts it only when, after following every symbolic link, it lies
inside one of the folders the app owns for that purpose, has an expected suffix and is of the
expected kind (a regular file or a folder). Everything else is refused with ``FileRefused``,
whose message says what was asked for and why it is not opened; the refused path is echoed
shortened (``echo``), never the content behind it.

The folders (``OWNED``) are the only places the app reads people's inputs from and writes
results to:

========== =========================================== =======================================
name       folder                                      holds
========== =========================================== =======================================
uploads    ``<data_dir>/uploads/<area>/``              files people uploaded (``uploads.py``)
datasets   ``<data_dir>/datasets/<area>/<name>/``      registered data sets (checked on import)
jobs       ``<data_dir>/jobs/<id>/``                   each job's result folder
shipped    ``assets/``                                 demo data and weights shipped read-only
========== =========================================== =======================================

The database, its WAL, the pseudonym and arena keys and ``.env`` live outside all four, so no
path a person names can reach them, whatever ``..`` or link it uses.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from engines.platform.settings import REPO_ROOT, get_settings

Folder = Literal["uploads", "datasets", "jobs", "shipped"]
ALL_FOLDERS: tuple[Folder, ...] = ("uploads", "datasets", "jobs", "shipped")
ECHO_CHARS = 120  # an error quotes at most this much of what it refuses


class FileRefused(ValueError):
    """A path or file the app will not open or keep; the message says which and why."""


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """``repr`` of ``value`` cut to ``limit`` characters, for quoting hostile input in a message."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def owned_folder(name: Folder) -> Path:
    """The folder ``name`` of the table above (not created)."""
    if name == "shipped":
        return REPO_ROOT / "assets"
    if name not in ALL_FOLDERS:
        raise ValueError(f"unknown owned folder {name!r}; the folders are {', '.join(ALL_FOLDERS)}")
    return get_settings().data_dir / name


def area_folder(name: Folder, area: str) -> Path:
    """``owned_folder(name) / area``: where one area keeps its files of that kind."""
    if not area.isidentifier():
        raise ValueError(f"an area is a Python identifier, got {area!r}")
    return owned_folder(name) / area


def owned_path(path: str | Path, *, what: str, suffixes: Sequence[str] = (), folders: Iterable[Folder] = ALL_FOLDERS,
               base: Path | None = None, kind: Literal["file", "dir"] = "file") -> Path:
    """``path`` resolved, when it is a ``kind`` inside one of ``folders`` with one of ``suffixes``.

    Args:
        path: what a person or a file named; a relative path is taken from ``base`` (default: the
            data folder).
        what: what the path should be, for the message ("the trajectory's video").
        suffixes: the accepted suffixes, lowercase with their dot (empty: any).
        folders: the owned folders it may lie in.
        base: the folder a relative path starts from (a file's own folder for paths stored in it).
        kind: a regular file or a folder.

    Raises:
        FileRefused: outside the folders, a wrong suffix, missing, or not a ``kind``.
    """
    raw = str(path)
    if not raw.strip() or "\x00" in raw:
        raise FileRefused(f"{what}: {echo(raw)} is not a path.")
    resolved = _resolved(raw, base)  # follows every link: a link out of the folders is refused below
    roots = [owned_folder(name).resolve() for name in folders]
    if not any(resolved.is_relative_to(root) and resolved != root for root in roots):
        names = ", ".join(folders)  # by name: a message shows no server paths
        raise FileRefused(f"{what}: {echo(raw)} is outside the folders the app reads from ({names}); "
                          "upload the file or register the data set instead.")
    if suffixes and resolved.suffix.lower() not in suffixes and not (kind == "dir" and not resolved.suffix):
        raise FileRefused(f"{what}: {echo(resolved.name)} is not a {' or '.join(suffixes)} file.")
    exists = resolved.is_file() if kind == "file" else resolved.is_dir()
    if not exists:
        article = "file" if kind == "file" else "folder"
        raise FileRefused(f"{what}: {echo(raw)} is not an existing {article}.")
    return resolved


def _resolved(raw: str | Path, base: Path | None) -> Path:
    """``raw`` as an absolute path, links followed: a relative path starts from ``base``, or, without
    one, from the data folder, except that ``shipped/...`` (as ``shown_path`` writes it) names ``assets/``."""
    candidate = Path(raw).expanduser()
    if not candidate.is_absolute():
        if base is None and candidate.parts and candidate.parts[0] == "shipped":
            candidate = owned_folder("shipped").joinpath(*candidate.parts[1:])
        else:
            candidate = (base if base is not None else get_settings().data_dir) / candidate
    return candidate.resolve()


def output_path(path: str | Path, *, what: str, folders: Iterable[Folder] = ("datasets", "jobs"),
                regenerates: Path | None = None) -> Path:
    """Where the app may write ``path`` (a file or a folder made later), resolved.

    Its nearest existing folder, after links and ``..`` are resolved, must lie inside ``folders``
    (default: the registered data sets and the job result folders); the shipped assets are
    read-only while the app runs, except for the one shipped file or folder a regeneration command
    names as ``regenerates``.

    Raises:
        FileRefused: the path leads anywhere else, or passes through a file.
    """
    raw = str(path)
    if not raw.strip() or "\x00" in raw:
        raise FileRefused(f"{what}: {echo(raw)} is not a path.")
    resolved = _resolved(raw, None)
    if regenerates is not None and resolved == Path(regenerates).resolve():
        return resolved
    existing = next(p for p in (resolved, *resolved.parents) if p.exists())
    if existing != resolved and not existing.is_dir():
        raise FileRefused(f"{what}: {echo(raw)} passes through a file, not a folder.")
    folder = existing if existing.is_dir() else existing.parent
    names = tuple(folders)
    roots = [owned_folder(name).resolve() for name in names]
    if not any(folder.is_relative_to(root) for root in roots):
        raise FileRefused(f"{what}: {echo(raw)} is outside the folders the app writes to ({', '.join(names)}).")
    return resolved


def shown_path(path: Path) -> str:
    """``path`` as a person may see it: relative to the owned folder holding it (no server paths)."""
    resolved = Path(path).resolve()
    for name in ALL_FOLDERS:
        root = owned_folder(name).resolve()
        if resolved.is_relative_to(root):
            return str(Path(name) / resolved.relative_to(root))
    return resolved.name


def json_depth_problem(text: str, limit: int | None = None) -> str | None:
    """Why ``text`` nests too deeply to parse safely (Python's parser recurses per level), or None.

    A linear scan over brackets outside strings; runs before ``json.loads`` on anything a person gave.
    """
    limit = limit or get_settings().max_json_depth
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return f"nests deeper than {limit} levels"
        elif char in "]}":
            depth -= 1
    return None


def loads_json(text: str, *, where: str) -> Any:
    """``json.loads`` for text from a person: a too-deep or invalid document raises ``FileRefused``
    naming ``where`` (file and line) and the problem, never a ``RecursionError``."""
    problem = json_depth_problem(text)
    if problem is not None:
        raise FileRefused(f"{where}: the JSON {problem}.")
    try:
        return json.loads(text)
    except RecursionError:  # pragma: no cover - the scan above stops it first
        raise FileRefused(f"{where}: the JSON nests too deeply.") from None
    except json.JSONDecodeError as exc:
        raise FileRefused(f"{where}: not valid JSON ({exc.msg} at column {exc.colno}).") from None


__all__ = ["ALL_FOLDERS", "ECHO_CHARS", "FileRefused", "Folder", "area_folder", "echo", "json_depth_problem",
           "loads_json", "output_path", "owned_folder", "owned_path", "shown_path"]
