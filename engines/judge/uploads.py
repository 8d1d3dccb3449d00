"""Data sets uploaded from the audit page: items (as ``items.jsonl``, a HarmBench run or a
JailbreakBench artifact), optional human labels and optional judge verdicts, checked and stored
under ``<data_dir>/judge/uploads/<name>/`` where ``judge.run`` and ``judge.audit`` jobs read them.

The same readers as the command line check every file before anything is stored; an error names
the uploaded file (not a temporary path), the line and the field. A set is written into a
temporary folder and renamed into place, so a failed upload leaves nothing behind and a stored
set is never half written. Generations may quote harmful text: the folders are private to the
service's user.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from engines.judge.importers import read_harmbench, read_jbb
from engines.judge.items import Item, JudgeDataError, read_items, read_labels, read_verdicts, write_items
from engines.platform.private_files import private_dir
from engines.platform.settings import get_settings

UPLOADS = Path("judge") / "uploads"  # under the data directory
MANIFEST = "upload.json"
ITEMS_FILE = "items.jsonl"
LABELS_FILE = "labels.csv"
NAME = re.compile(r"^[a-z0-9][a-z0-9\-]{0,62}$")
SAFE_FILE_NAME = re.compile(r"[^A-Za-z0-9._\-]+")
Format = Literal["items", "harmbench", "jbb"]
FORMATS: dict[str, str] = {
    "items": "items.jsonl (the app's item schema, from `python -m engines.judge import ...`)",
    "harmbench": "HarmBench: behaviours CSV + one run's completions JSON",
    "jbb": "JailbreakBench artifact JSON (+ the JBB-Behaviors CSV, optional)",
}


class UploadError(ValueError):
    """An upload that cannot be stored; the message says what to change."""


@dataclass(frozen=True)
class UploadedFile:
    """A file as the browser sent it: its name on the researcher's disk and its bytes."""

    name: str
    data: bytes


@dataclass
class DataSet:
    """A stored upload. Paths are relative to the data directory (what the jobs' parameters take)."""

    name: str
    title: str
    items: str
    labels: str | None
    verdicts: list[str] = field(default_factory=list)
    n_items: int = 0
    n_labels: int = 0
    n_verdicts: int = 0
    source_files: list[str] = field(default_factory=list)
    created_at: str = ""
    created_by: int | None = None


def _root() -> Path:
    return get_settings().data_dir / UPLOADS


def _check(upload: UploadedFile | None, what: str) -> UploadedFile:
    if upload is None or not upload.data:
        raise UploadError(f"Choose the {what} to upload." if upload is None else f"{upload.name} is empty.")
    return upload


def _saved(upload: UploadedFile, folder: Path) -> Path:
    """The upload written under its own (sanitised) name, so the readers' errors name that file."""
    name = SAFE_FILE_NAME.sub("_", Path(upload.name).name).strip("._") or "upload"
    path = folder / name
    while path.exists():  # two uploads of one name (behaviours.csv twice) keep both
        path = path.with_name("_" + path.name)
    path.write_bytes(upload.data)
    return path


def _named(exc: JudgeDataError, folder: Path) -> JudgeDataError:
    """The error with the temporary folder taken out of the file's name."""
    path = Path(exc.path)
    shown = path.name if path.parent == folder else exc.path
    return JudgeDataError(shown, exc.line, exc.field, exc.problem)


def read_upload_items(fmt: Format, files: dict[str, UploadedFile | None], folder: Path, *,
                      model: str = "", attack: str = "") -> list[Item]:
    """Items from the uploaded files of one format (``files`` by role: items, behaviors, completions, artifact)."""
    if fmt == "items":
        return read_items(_saved(_check(files.get("items"), "items.jsonl"), folder))
    if fmt == "harmbench":
        behaviors = _saved(_check(files.get("behaviors"), "HarmBench behaviours CSV"), folder)
        completions = _saved(_check(files.get("completions"), "completions JSON"), folder)
        if not model.strip() or not attack.strip():
            raise UploadError("Name the victim model and the attack of the completions (they make the item keys).")
        return read_harmbench(behaviors, [(model.strip(), attack.strip(), completions)]).items
    if fmt == "jbb":
        artifact = _saved(_check(files.get("artifact"), "JailbreakBench artifact JSON"), folder)
        behaviors = files.get("behaviors")
        return read_jbb(artifact, _saved(behaviors, folder) if behaviors is not None else None).items
    raise UploadError(f"Unknown format {fmt!r}; the formats are {', '.join(FORMATS)}.")


def _checked_labels(upload: UploadedFile, folder: Path, keys: set[str]) -> tuple[Path, int]:
    """The stored labels file and its number of labels; every label must name an uploaded item."""
    path = _saved(upload, folder)
    rows = read_labels(path)
    unknown = sorted({key for key, _ in rows} - keys)
    if unknown:
        raise JudgeDataError(path.name, None, "item_key", f"{len(unknown)} item key(s) are not among the uploaded "
                                                          f"items, e.g. {unknown[0]!r}")
    return path, len(rows)


def _checked_verdicts(upload: UploadedFile, folder: Path, keys: set[str]) -> tuple[Path, int]:
    """The stored verdicts file and its number of verdicts; some must name uploaded items (the audit
    leaves the others out and counts them)."""
    path = _saved(upload, folder)
    rows = read_verdicts(path)
    if rows and not any(key in keys for key, _ in rows):
        raise JudgeDataError(path.name, None, "item_key", "none of its verdicts names an uploaded item")
    return path, len(rows)


def save_upload(name: str, fmt: Format, files: dict[str, UploadedFile | None], *, labels: UploadedFile | None = None,
                verdicts: list[UploadedFile] | tuple[UploadedFile, ...] = (), title: str = "", model: str = "",
                attack: str = "", created_by: int | None = None) -> DataSet:
    """Check the uploaded files and store them as the data set ``name``.

    Raises:
        UploadError: a bad name, a name in use, a missing file.
        JudgeDataError: a file that does not read (file, line and field in the message); nothing is stored.
    """
    name = (name or "").strip()
    if not NAME.match(name):
        raise UploadError(f"The name {name!r} must be 1-63 lowercase letters, digits and dashes, starting with a "
                          "letter or digit.")
    if len(title) > 200:
        raise UploadError(f"The title has {len(title)} characters; at most 200 are allowed.")
    root = private_dir(_root())
    final = root / name
    if final.exists():
        raise UploadError(f"There is already an uploaded data set called '{name}'; choose another name.")
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        originals = private_dir(work / "original")
        try:
            items = read_upload_items(fmt, files, originals, model=model, attack=attack)
            if not items:
                raise UploadError("The upload has no items.")
            keys = {item.key for item in items}
            labels_file, n_labels = _checked_labels(labels, originals, keys) if labels is not None else (
                None, sum(len(item.labels) for item in items))  # without a labels file: the items' own
            verdict_files = [_checked_verdicts(upload, originals, keys) for upload in verdicts]
        except JudgeDataError as exc:
            raise _named(exc, originals) from None
        write_items(items, work / ITEMS_FILE)
        relative = UPLOADS / name
        data_set = DataSet(
            name=name, title=title.strip() or name, items=str(relative / ITEMS_FILE),
            labels=str(relative / "original" / labels_file.name) if labels_file is not None else None,
            verdicts=[str(relative / "original" / path.name) for path, _ in verdict_files],
            n_items=len(items), n_labels=n_labels, n_verdicts=sum(n for _, n in verdict_files),
            source_files=sorted(path.name for path in originals.iterdir()),
            created_at=datetime.now(UTC).isoformat(timespec="seconds"), created_by=created_by)
        (work / MANIFEST).write_text(json.dumps(asdict(data_set), indent=1), encoding="utf-8")
        try:
            work.rename(final)  # atomic: the set appears whole or not at all
        except OSError:
            raise UploadError(f"There is already an uploaded data set called '{name}'; choose another name.") from None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return data_set


def list_uploads() -> list[DataSet]:
    """The stored data sets, newest first (folders without a readable manifest are skipped)."""
    root = _root()
    if not root.is_dir():
        return []
    sets = []
    for manifest in root.glob(f"*/{MANIFEST}"):
        try:
            sets.append(DataSet(**json.loads(manifest.read_text(encoding="utf-8"))))
        except (OSError, ValueError, TypeError):
            continue
    return sorted(sets, key=lambda s: (s.created_at, s.name), reverse=True)


def get_upload(name: str) -> DataSet:
    for data_set in list_uploads():
        if data_set.name == name:
            return data_set
    raise UploadError(f"There is no uploaded data set called '{name}'.")
