"""What the video page offers: the shipped demo's videos and runs, runs written by jobs, and videos
people upload (checked before anything is kept).

Uploads land in ``<data dir>/video/uploads/<sha256 prefix><suffix>``: the same file uploaded twice
is kept once, and a file that is not a readable video (or is too large or too long) is refused with
the reason, leaving nothing behind.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

from engines.platform.private_files import private_dir
from engines.platform.settings import get_settings
from engines.video.decode import VideoError, open_video
from engines.video.roles import ASSETS

DEMO = ASSETS / "demo"
UPLOADS = Path("video") / "uploads"  # under the data directory
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".ts")
MAX_UPLOAD_MB = 500
MAX_DURATION_S = 4 * 3600.0


class UploadError(ValueError):
    """An upload that is refused; the message says why and nothing was kept."""


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
    return get_settings().data_dir / UPLOADS


def uploaded_videos() -> list[Path]:
    folder = uploads_dir()
    return sorted(p for p in folder.glob("*") if p.suffix in VIDEO_SUFFIXES) if folder.is_dir() else []


def save_upload(name: str, data: bytes) -> Path:
    """Keep an uploaded video after checking it: a video suffix, at most 500 MB, readable by PyAV
    with a video stream, at most four hours. Returns where it is kept."""
    suffix = Path(name).suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise UploadError(f"{name}: not a video file name (expected one of {', '.join(VIDEO_SUFFIXES)})")
    if len(data) > MAX_UPLOAD_MB * 1_000_000:
        raise UploadError(f"{name}: {len(data) / 1e6:.0f} MB is more than the {MAX_UPLOAD_MB} MB allowed")
    if not data:
        raise UploadError(f"{name}: the file is empty")
    folder = private_dir(uploads_dir())
    target = folder / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if target.is_file():
        return target
    partial = folder / f".{target.name}.partial{suffix}"
    partial.write_bytes(data)
    try:
        with open_video(partial) as reader:
            duration = reader.info.duration_s
    except VideoError as error:
        partial.unlink(missing_ok=True)
        raise UploadError(f"{name}: {str(error).split(': ', 1)[-1]}") from None
    if duration > MAX_DURATION_S:
        partial.unlink(missing_ok=True)
        raise UploadError(f"{name}: {duration / 3600:.1f} hours is longer than the 4 hours allowed")
    os.replace(partial, target)
    return target


def allowed_video(path: str | Path) -> Path:
    """``path`` if it is a shipped demo video or an upload, else UploadError: a job never reads a
    file a person merely named."""
    resolved = Path(path).resolve()
    for folder in (DEMO.resolve(), uploads_dir().resolve()):
        if resolved.parent == folder and resolved.suffix in VIDEO_SUFFIXES and resolved.is_file():
            return resolved
    raise UploadError(f"{path}: not a shipped or uploaded video")
