"""What the video page offers, and which files the video area opens on a person's behalf.

- The shipped demo's videos and runs (``assets/video/demo``), runs written by jobs, and videos
  people upload. An upload goes through the platform's ``store_upload`` (kind ``video``: the
  content must be a video PyAV decodes, within the size and frame-size limits) into
  ``<data dir>/uploads/video/``; this area then refuses one longer than four hours and removes it.
- Every path the area is handed (a job's video, a run file, a trajectory's ``video_path``, a sweep's
  ``summary.json``) resolves through ``engines.platform.files.owned_path``: inside the folders the
  app owns (uploads, datasets, jobs, the shipped assets) with the expected suffix, or it is
  refused with ``FileRefused`` and never opened.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from engines.platform.files import ALL_FOLDERS, FileRefused, Folder, area_folder, owned_path
from engines.platform.uploads import VIDEO_SUFFIXES, StoredUpload, UploadRefused, remove_stored, store_upload
from engines.video.decode import VideoError, open_video
from engines.video.roles import ASSETS

DEMO = ASSETS / "demo"
AREA = "video"
MAX_DURATION_S = 4 * 3600.0
RUN_SUFFIXES = (".jsonl",)


@dataclass(frozen=True)
class RunFile:
    """A trajectories file and where it came from."""

    label: str
    path: Path


def demo_runs() -> list[RunFile]:
    """The shipped demo's runs (``python -m engines.video demo``): the gated agent's first, the
    largest step budget first."""
    def order(path: Path) -> tuple[bool, int]:
        budget = path.stem.rpartition("-steps")[2]
        return not path.name.startswith("gated"), -int(budget) if budget.isdigit() else 0

    runs = sorted((DEMO / "runs").glob("*.jsonl"), key=order)
    return [RunFile(f"demo: {p.stem.replace('-steps', ' agent, ')} steps", p) for p in runs]


def demo_videos() -> list[Path]:
    return sorted(DEMO.glob("*.mp4"))


def uploads_dir() -> Path:
    """Where this area's uploads are kept: ``<data dir>/uploads/video/``."""
    return area_folder("uploads", AREA)


def uploaded_videos() -> list[Path]:
    folder = uploads_dir()
    return sorted(p for p in folder.glob("*") if p.suffix in VIDEO_SUFFIXES) if folder.is_dir() else []


def video_file(path: str | Path, *, what: str = "the video", base: Path | None = None,
               folders: tuple[Folder, ...] = ALL_FOLDERS) -> Path:
    """``path`` resolved when it is a video file (a ``VIDEO_SUFFIXES`` suffix) inside the folders the
    app owns; a relative path starts from ``base`` (a trajectory's own folder). Raises FileRefused."""
    return owned_path(path, what=what, suffixes=VIDEO_SUFFIXES, folders=folders, base=base)


def run_file(path: str | Path, *, folders: tuple[Folder, ...] = ALL_FOLDERS) -> Path:
    """``path`` resolved when it is a trajectories file (``.jsonl``) inside the owned folders."""
    return owned_path(path, what="the run file", suffixes=RUN_SUFFIXES, folders=folders)


def checked_upload(upload: StoredUpload) -> Path:
    """The stored video of ``upload`` once this area accepts it: at most four hours long.

    Raises:
        UploadRefused: longer than four hours (the stored file is removed), or no longer kept.
    """
    if not upload.path.is_file():
        raise UploadRefused(f"{upload.label}: the upload is no longer kept; upload it again.")
    try:
        with open_video(upload.path) as reader:
            duration = reader.info.duration_s
    except VideoError as error:
        remove_stored(upload)
        raise UploadRefused(f"{upload.label}: {str(error).split(': ', 1)[-1]}") from None
    if duration > MAX_DURATION_S:
        remove_stored(upload)
        raise UploadRefused(f"{upload.label}: {duration / 3600:.1f} hours is longer than the "
                            f"{MAX_DURATION_S / 3600:g} hours allowed.")
    return upload.path


def save_upload(source: BinaryIO | bytes, label: str | None) -> Path:
    """Keep an uploaded video: ``store_upload`` (size, type and frame size), then the duration check.
    Returns where it is kept; raises UploadRefused with the reason, leaving nothing behind."""
    return checked_upload(store_upload(source, label=label, kind="video", area=AREA))


__all__ = ["DEMO", "MAX_DURATION_S", "FileRefused", "RunFile", "UploadRefused", "checked_upload", "demo_runs",
           "demo_videos", "run_file", "save_upload", "uploaded_videos", "uploads_dir", "video_file"]
