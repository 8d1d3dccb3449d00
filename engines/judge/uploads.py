"""Data sets imported from the audit page: items (as ``items.jsonl``, a HarmBench run or a
JailbreakBench artifact), optional human labels and optional judge verdicts, checked and registered
under the platform's data-set folder, ``<data_dir>/datasets/judge/<name>/``, where ``judge.run`` and
``judge.audit`` jobs read them.

The files arrive as uploads the platform stored (``engines.platform.uploads.store_upload``, under
names the server chose); the browser's file name is only their label. The same readers as the
command line check every file before anything is registered, and an error names the file by that
label, with the line and the field. A set is written into a temporary folder (the originals under
names chosen here, by their role) and renamed into place, so a failed import leaves nothing behind
and a registered set is never half written. Generations may quote harmful text: the folders are
private to the service's user.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from engines.judge.importers import read_harmbench, read_jbb
from engines.judge.items import Item, JudgeDataError, read_items, read_labels, read_verdicts, write_items
from engines.platform.files import FileRefused, area_folder, echo, owned_path
from engines.platform.private_files import private_dir
from engines.platform.settings import get_settings
from engines.platform.uploads import KINDS, StoredUpload, remove_stored

AREA = "judge"
MANIFEST = "upload.json"
ITEMS_FILE = "items.jsonl"
ORIGINALS = "original"
NAME = re.compile(r"^[a-z0-9][a-z0-9\-]{0,62}$")
Format = Literal["items", "harmbench", "jbb"]
FORMATS: dict[str, str] = {
    "items": "items.jsonl (the app's item schema, from `python -m engines.judge import ...`)",
    "harmbench": "HarmBench: behaviours CSV + one run's completions JSON",
    "jbb": "JailbreakBench artifact JSON (+ the JBB-Behaviors CSV, optional)",
}
# What each uploaded file is, the kind of upload it must be, and the name its copy gets in the set.
ROLES: dict[str, tuple[str, str, str]] = {
    "items": ("items.jsonl", "jsonl", "items.jsonl"),
    "behaviors": ("behaviours CSV", "csv", "behaviors.csv"),
    "completions": ("completions JSON", "json", "completions.json"),
    "artifact": ("JailbreakBench artifact JSON", "json", "artifact.json"),
    "labels": ("labels.csv", "csv", "labels.csv"),
    "verdicts": ("verdicts.csv", "csv", "verdicts.csv"),
}


class UploadError(ValueError):
    """An upload that cannot be stored; the message says what to change."""


@dataclass
class DataSet:
    """A registered data set. Paths are relative to the data directory (what the jobs' parameters take)."""

    name: str
    title: str
    items: str
    labels: str | None
    verdicts: list[str] = field(default_factory=list)
    n_items: int = 0
    n_labels: int = 0
    n_verdicts: int = 0
    source_files: list[str] = field(default_factory=list)  # the uploads' labels (the browser's names)
    created_at: str = ""
    created_by: int | None = None


def datasets_root() -> Path:
    """``<data_dir>/datasets/judge``: one folder per registered set."""
    return area_folder("datasets", AREA)


def _relative(path: Path) -> str:
    return str(path.relative_to(get_settings().data_dir))


def stored_file(upload: StoredUpload | None, role: str) -> Path:
    """The stored file of an upload used as ``role``: inside the uploads folder, of the right kind.

    Raises:
        UploadError: nothing chosen, an upload of another kind, or one no longer kept.
    """
    what, kind, _ = ROLES[role]
    if upload is None:
        raise UploadError(f"Choose the {what} to upload.")
    if upload.kind != kind:
        raise UploadError(f"{upload.label}: the {what} must be a {KINDS[kind].description} file.")
    if not Path(upload.path).is_file():
        raise UploadError(f"{upload.label}: the uploaded file is no longer kept; choose it again.")
    try:
        return owned_path(upload.path, what=upload.label, suffixes=KINDS[kind].suffixes, folders=("uploads",))
    except FileRefused as exc:
        raise UploadError(str(exc)) from None


def named(exc: JudgeDataError, uploads: Sequence[StoredUpload]) -> JudgeDataError:
    """The error with each stored file's path replaced by the upload's label (the name the person knows)."""
    path, problem = exc.path, exc.problem
    for upload in uploads:
        for form in {str(upload.path), str(Path(upload.path).resolve())}:
            path = upload.label if path == form else path
            problem = problem.replace(form, upload.label)
    return JudgeDataError(path, exc.line, exc.field, problem)


def read_stored_items(upload: StoredUpload | None) -> list[Item]:
    """The items of an uploaded items.jsonl; errors name it by its label.

    Raises:
        UploadError: no file, or not a JSON-lines upload.
        JudgeDataError: a line that does not read (label, line and field in the message).
    """
    path = stored_file(upload, "items")
    try:
        return read_items(path)
    except JudgeDataError as exc:
        raise named(exc, [upload]) from None


def read_upload_items(fmt: Format, files: dict[str, StoredUpload | None], *, model: str = "",
                      attack: str = "") -> list[Item]:
    """Items from the uploaded files of one format (``files`` by role: items, behaviors, completions, artifact)."""
    if fmt == "items":
        return read_items(stored_file(files.get("items"), "items"))
    if fmt == "harmbench":
        behaviors = stored_file(files.get("behaviors"), "behaviors")
        completions = stored_file(files.get("completions"), "completions")
        if not model.strip() or not attack.strip():
            raise UploadError("Name the victim model and the attack of the completions (they make the item keys).")
        return read_harmbench(behaviors, [(model.strip(), attack.strip(), completions)]).items
    if fmt == "jbb":
        artifact = stored_file(files.get("artifact"), "artifact")
        behaviors = files.get("behaviors")
        return read_jbb(artifact, stored_file(behaviors, "behaviors") if behaviors is not None else None).items
    raise UploadError(f"Unknown format {echo(fmt)}; the formats are {', '.join(FORMATS)}.")


def _checked_labels(upload: StoredUpload, keys: set[str]) -> int:
    """The number of labels in the uploaded labels file; every label must name an uploaded item."""
    path = stored_file(upload, "labels")
    rows = read_labels(path)
    unknown = sorted({key for key, _ in rows} - keys)
    if unknown:
        raise JudgeDataError(path, None, "item_key", f"{len(unknown)} item key(s) are not among the uploaded "
                                                     f"items, e.g. {echo(unknown[0])}")
    return len(rows)


def _checked_verdicts(upload: StoredUpload, keys: set[str]) -> int:
    """The number of verdicts in an uploaded verdicts file; some must name uploaded items (the audit
    leaves the others out and counts them)."""
    path = stored_file(upload, "verdicts")
    rows = read_verdicts(path)
    if rows and not any(key in keys for key, _ in rows):
        raise JudgeDataError(path, None, "item_key", "none of its verdicts names an uploaded item")
    return len(rows)


def _keep_originals(fmt: Format, files: dict[str, StoredUpload | None], labels: StoredUpload | None,
                    verdicts: Sequence[StoredUpload], folder: Path) -> tuple[str | None, list[str]]:
    """Copy the checked uploads into ``folder`` under names chosen by their role; returns the labels
    file's and the verdicts files' names there."""
    roles = {"items": ("items",), "harmbench": ("behaviors", "completions"), "jbb": ("artifact", "behaviors")}[fmt]
    for role in roles:
        if files.get(role) is not None:
            shutil.copyfile(files[role].path, folder / ROLES[role][2])
    labels_name = None
    if labels is not None:
        labels_name = ROLES["labels"][2]
        shutil.copyfile(labels.path, folder / labels_name)
    verdict_names = [f"verdicts-{number}.csv" for number in range(1, len(verdicts) + 1)]
    for upload, name in zip(verdicts, verdict_names, strict=True):
        shutil.copyfile(upload.path, folder / name)
    return labels_name, verdict_names


def save_upload(name: str, fmt: Format, files: dict[str, StoredUpload | None], *, labels: StoredUpload | None = None,
                verdicts: Sequence[StoredUpload] = (), title: str = "", model: str = "", attack: str = "",
                created_by: int | None = None) -> DataSet:
    """Check the uploaded files and register them as the data set ``name``; the uploads are removed
    once the set holds its copies.

    Raises:
        UploadError: a bad name, a name in use, a missing file or one of the wrong kind.
        JudgeDataError: a file that does not read (its label, line and field in the message); nothing is stored.
    """
    name = (name or "").strip()
    if not NAME.match(name):
        raise UploadError(f"The name {echo(name)} must be 1-63 lowercase letters, digits and dashes, starting with a "
                          "letter or digit.")
    if len(title) > 200:
        raise UploadError(f"The title has {len(title):,} characters; at most 200 are allowed.")
    uploads = [u for u in (*files.values(), labels, *verdicts) if u is not None]
    root = private_dir(datasets_root())
    final = root / name
    if final.exists():
        raise UploadError(f"There is already an uploaded data set called '{name}'; choose another name.")
    work = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        try:
            items = read_upload_items(fmt, files, model=model, attack=attack)
            if not items:
                raise UploadError("The upload has no items.")
            keys = {item.key for item in items}
            # Without a labels file: the items' own labels.
            n_labels = _checked_labels(labels, keys) if labels is not None else sum(len(i.labels) for i in items)
            n_verdicts = sum(_checked_verdicts(upload, keys) for upload in verdicts)
        except JudgeDataError as exc:
            raise named(exc, uploads) from None
        write_items(items, work / ITEMS_FILE)
        labels_name, verdict_names = _keep_originals(fmt, files, labels, verdicts, private_dir(work / ORIGINALS))
        originals = final / ORIGINALS
        data_set = DataSet(
            name=name, title=title.strip() or name, items=_relative(final / ITEMS_FILE),
            labels=_relative(originals / labels_name) if labels_name else None,
            verdicts=[_relative(originals / n) for n in verdict_names], n_items=len(items), n_labels=n_labels,
            n_verdicts=n_verdicts, source_files=[upload.label for upload in uploads],
            created_at=datetime.now(UTC).isoformat(timespec="seconds"), created_by=created_by)
        (work / MANIFEST).write_text(json.dumps(asdict(data_set), indent=1), encoding="utf-8")
        try:
            work.rename(final)  # atomic: the set appears whole or not at all
        except OSError:
            raise UploadError(f"There is already an uploaded data set called '{name}'; choose another name.") from None
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    for upload in uploads:
        remove_stored(upload)
    return data_set


def _readable(data_set: DataSet) -> bool:
    """Whether the manifest's paths are files of the data-set folder (a manifest is a file: its
    paths are checked like any other before a job is given them)."""
    try:
        for path, suffixes in [(data_set.items, (".jsonl",))] + [(p, (".csv",)) for p in
                                                                  [data_set.labels, *data_set.verdicts] if p]:
            owned_path(path, what=f"data set {data_set.name}", suffixes=suffixes, folders=("datasets",))
    except FileRefused:
        return False
    return True


def list_uploads() -> list[DataSet]:
    """The registered data sets, newest first (folders without a readable, consistent manifest are skipped)."""
    root = datasets_root()
    if not root.is_dir():
        return []
    sets = []
    for manifest in root.glob(f"*/{MANIFEST}"):
        try:
            data_set = DataSet(**json.loads(manifest.read_text(encoding="utf-8")))
        except (OSError, ValueError, TypeError):
            continue
        if data_set.name == manifest.parent.name and _readable(data_set):
            sets.append(data_set)
    return sorted(sets, key=lambda s: (s.created_at, s.name), reverse=True)


def get_upload(name: str) -> DataSet:
    for data_set in list_uploads():
        if data_set.name == name:
            return data_set
    raise UploadError(f"There is no uploaded data set called {echo(name)}.")
