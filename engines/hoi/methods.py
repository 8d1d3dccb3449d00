"""The editing methods of a benchmark folder: their output folders and ``methods.json``.

Upstream keeps each model's edits in ``data/<model>_frames/{L1L2,L3}/<key>`` (HOI-Edit, ICML 2026;
``docs/hoi.md``, "Method: Task and benchmark format"). This project adds ``methods.json`` beside them:
``{method: {"kind": "image_edit" | "i2v", "label": ..., "offline": bool, "description": ...}}``,
read by the page, the arena and the demo generator alike.

A benchmark folder is read-only while the app runs: a job writes its methods' edits, records and
``methods.json`` into its own result folder, in the same layout, and ``method_sources`` reads the
benchmark and those folders as one (the newest folder wins).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal, NotRequired

from pydantic import Strict
from typing_extensions import TypedDict  # pydantic needs this one's TypedDict before Python 3.12

from engines.platform.files import echo
from engines.platform.formats import FormatError, StrippedText, read_json

# A method's name is a folder name: <method>_frames, records/<method>.json.
METHOD_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$"

METHODS_FILE = "methods.json"
FRAMES_SUFFIX = "_frames"  # upstream data/<model>_frames/<split>/<key>


class MethodsFileError(FormatError):
    """A ``methods.json`` that does not read; the message names the file, the method and the field."""


class MethodEntry(TypedDict):
    """One method of ``methods.json``; its ``label`` is the method's name when the file gives none.
    Other fields are kept as given."""

    __pydantic_config__ = {"extra": "allow"}  # type: ignore[misc] - pydantic reads it

    kind: NotRequired[Literal["image_edit", "i2v"]]
    label: NotRequired[StrippedText]
    offline: NotRequired[Annotated[bool, Strict()]]
    description: NotRequired[str]


def read_methods(root: str | Path) -> dict[str, dict]:
    """method -> its entry from ``<root>/methods.json``, each with a non-empty ``label`` (the method's
    name when the file gives none); {} without the file.

    Raises:
        MethodsFileError: not JSON, or an entry that does not follow :class:`MethodEntry` (naming the
            file, the method and the field).
    """
    path = Path(root) / METHODS_FILE
    if not path.is_file():
        return {}
    entries = read_json(path, dict[str, MethodEntry], format_name="a method's entry", error=MethodsFileError)
    return {method: {**entry, "label": entry.get("label", method)} for method, entry in entries.items()}


def write_method(root: str | Path, name: str, entry: dict) -> None:
    """List a method in ``<root>/methods.json`` (kind "image_edit" or "i2v", label, offline,
    description), keeping the methods already listed."""
    if entry.get("kind") not in ("image_edit", "i2v"):
        raise ValueError(f"method {echo(name)}: kind must be 'image_edit' or 'i2v', got {echo(entry.get('kind'))}")
    listed = read_methods(root)
    listed[name] = {"kind": entry["kind"], "label": entry.get("label", name), "offline": bool(entry.get("offline")),
                    "description": entry.get("description", "")}
    path = Path(root) / METHODS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(listed, indent=1) + "\n", encoding="utf-8")


def method_folders(root: str | Path) -> dict[str, Path]:
    """method -> its ``<method>_frames`` folder, at the top of ``root`` or under ``data/`` (upstream's
    place); the top wins when both have one."""
    folders: dict[str, Path] = {}
    for base in (Path(root), Path(root) / "data"):
        if base.is_dir():
            for path in sorted(base.glob(f"*{FRAMES_SUFFIX}")):
                if path.is_dir() and len(path.name) > len(FRAMES_SUFFIX):
                    folders.setdefault(path.name[: -len(FRAMES_SUFFIX)], path)
    return folders


@dataclass(frozen=True)
class MethodSource:
    """Where a method's files are, over a benchmark and the job folders read with it."""

    frames_dir: Path
    records_path: Path | None = None  # records/<method>.json, from the frames' folder or a newer one
    entry: dict = field(default_factory=dict)  # its methods.json entry (kind, label, offline, description)


def method_sources(roots: Sequence[str | Path]) -> dict[str, MethodSource]:
    """Each method found in ``roots`` (a benchmark folder, then job result folders, oldest first).

    A later folder's ``<method>_frames`` replaces an earlier one's (with the records beside it, if
    any: older records judged other edits); a later ``records/<method>.json`` alone (an evaluation
    job) replaces the records only. ``methods.json`` entries merge, the later's fields winning.
    """
    found: dict[str, MethodSource] = {}
    for root in map(Path, roots):
        described = read_methods(root)
        frames = method_folders(root)
        for name, folder in frames.items():
            records = root / "records" / f"{name}.json"
            entry = found[name].entry if name in found else {}
            found[name] = MethodSource(folder, records if records.is_file() else None, entry)
        records_dir = root / "records"
        if records_dir.is_dir():
            for records in sorted(records_dir.glob("*.json")):
                if records.stem in found and records.stem not in frames and records.is_file():
                    found[records.stem] = replace(found[records.stem], records_path=records)
        for name, entry in described.items():
            if name in found:
                found[name] = replace(found[name], entry={**found[name].entry, **entry})
    return found
