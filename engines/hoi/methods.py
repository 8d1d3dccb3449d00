"""The editing methods of a benchmark folder: their output folders and ``methods.json``.

Upstream keeps each model's edits in ``data/<model>_frames/{L1L2,L3}/<key>`` (HOI-Edit, ICML 2026;
``shared/specs/hoi_edit.md`` §2). This project adds ``methods.json`` beside them:
``{method: {"kind": "image_edit" | "i2v", "label": ..., "offline": bool, "description": ...}}``,
read by the page, the arena and the demo generator alike.
"""

from __future__ import annotations

import json
from pathlib import Path

METHODS_FILE = "methods.json"
FRAMES_SUFFIX = "_frames"  # upstream data/<model>_frames/<split>/<key>


class MethodsFileError(ValueError):
    """A ``methods.json`` that does not read; the message names the file, the method and the field."""


def read_methods(root: str | Path) -> dict[str, dict]:
    """method -> its entry from ``<root>/methods.json``, each with a non-empty ``label`` (the method's
    name when the file gives none); {} without the file."""
    path = Path(root) / METHODS_FILE
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MethodsFileError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict):
        raise MethodsFileError(f"{path}: expected an object {{method: {{\"label\": ...}}}}, got {type(data).__name__}")
    methods = {}
    for method, entry in data.items():
        if not isinstance(entry, dict):
            raise MethodsFileError(f"{path}: method {method!r}: expected an object, got {entry!r}")
        label = entry.get("label", method)
        if not isinstance(label, str) or not label.strip():
            raise MethodsFileError(f"{path}: method {method!r}: field 'label' must be non-empty text, got {label!r}")
        methods[method] = {**entry, "label": label.strip()}
    return methods


def write_method(root: str | Path, name: str, entry: dict) -> None:
    """List a method in ``<root>/methods.json`` (kind "image_edit" or "i2v", label, offline,
    description), keeping the methods already listed."""
    if entry.get("kind") not in ("image_edit", "i2v"):
        raise ValueError(f"method {name!r}: kind must be 'image_edit' or 'i2v', got {entry.get('kind')!r}")
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
