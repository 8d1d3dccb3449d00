"""The one way an uploaded file reaches the disk.

``store_upload`` is the only code that writes a person's upload. It never uses the name the
browser sent as a path (that name is kept, cleaned, as a label for messages), checks the size
against ``HAI_UPLOAD_MAX_MB`` and the stored total against ``HAI_UPLOADS_DISK_MB``, checks the real
type from the content (a PNG renamed ``.mp4`` is refused), copies the bytes in chunks into
``<data_dir>/uploads/<area>/`` under a name the server chooses, and moves the file into place only
once every check passed: a refused upload leaves nothing behind.

``quota_problem`` is the rule for what the web server holds in memory before a page sees an
upload (per browser session and in all); ``app.py`` applies it to Streamlit's uploaded-file store.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from engines.platform.files import FileRefused, area_folder, json_depth_problem, owned_folder
from engines.platform.private_files import private_dir
from engines.platform.settings import get_settings

MB = 1024 * 1024
CHUNK = 1 * MB
LABEL_CHARS = 120
VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv", ".webm", ".avi", ".ts")
# FFmpeg's demuxers of those containers (it also opens a PNG or a GIF as a one-stream "video").
VIDEO_CONTAINERS = {"mov,mp4,m4a,3gp,3g2,mj2": ".mp4", "matroska,webm": ".mkv", "avi": ".avi", "mpegts": ".ts",
                    "mpeg": ".ts"}
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]+")


class UploadRefused(FileRefused):
    """An upload that is not kept; the message names the file (by its label) and what is wrong."""


@dataclass(frozen=True)
class FileKind:
    """A kind of file the app accepts: the suffixes a browser's file picker offers, and the check of
    the content (returns the stored suffix, or raises ``UploadRefused`` with the reason)."""

    name: str
    description: str
    suffixes: tuple[str, ...]
    check: Callable[[Path, str], str]


@dataclass(frozen=True)
class StoredUpload:
    """An accepted upload: where it is kept (server-chosen) and how to call it in messages."""

    path: Path
    label: str
    kind: str
    size: int
    sha256: str


def upload_label(name: str | None) -> str:
    """The browser-sent file name as a label: its last component, printable, at most 120 characters."""
    label = _UNPRINTABLE.sub("", re.split(r"[\\/]", str(name or ""))[-1]).strip()
    return (label[: LABEL_CHARS - 1] + "…") if len(label) > LABEL_CHARS else (label or "upload")


def _text(path: Path, label: str, *, json_lines: bool = False, json_document: bool = False) -> None:
    """UTF-8 text without NUL bytes; JSON kinds also within the nesting limit (checked per line)."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    if b"\x00" in head:
        raise UploadRefused(f"{label}: a binary file, not text.")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UploadRefused(f"{label}: not UTF-8 text (byte {exc.start}).") from None
    if "\x00" in text:
        raise UploadRefused(f"{label}: a binary file, not text.")
    if json_document or json_lines:
        lines = text.splitlines() if json_lines else [text]
        for number, line in enumerate(lines, start=1):
            problem = json_depth_problem(line)
            if problem is not None:
                where = f"{label} line {number}" if json_lines else label
                raise UploadRefused(f"{where}: the JSON {problem}.")


def _check_jsonl(path: Path, label: str) -> str:
    _text(path, label, json_lines=True)
    return ".jsonl"


def _check_json(path: Path, label: str) -> str:
    _text(path, label, json_document=True)
    return ".json"


def _check_csv(path: Path, label: str) -> str:
    _text(path, label)
    return ".csv"


def _check_image(path: Path, label: str) -> str:
    """A PNG or JPEG within Pillow's pixel limit, whose data decodes."""
    from PIL import Image, UnidentifiedImageError

    limit = Image.MAX_IMAGE_PIXELS
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as opened:
                fmt = opened.format
                pixels = opened.width * opened.height
                if limit and pixels > limit:
                    raise UploadRefused(f"{label}: {opened.width} x {opened.height} pixels is more than the "
                                        f"{limit:,} allowed.")
                opened.verify()
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise UploadRefused(f"{label}: the image is larger than the {limit:,} pixels allowed.") from None
    except UploadRefused:
        raise
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise UploadRefused(f"{label}: not a PNG or JPEG image Pillow can read ({type(exc).__name__}).") from None
    if fmt not in ("PNG", "JPEG"):
        raise UploadRefused(f"{label}: a {fmt} image; upload a PNG or JPEG.")
    return ".png" if fmt == "PNG" else ".jpg"


def _check_video(path: Path, label: str) -> str:
    """A container PyAV opens, with a video stream of at most ``HAI_MAX_FRAME_PIXELS`` per frame
    whose first frame decodes."""
    import av

    limit = get_settings().max_frame_pixels
    try:
        with av.open(str(path)) as container:
            fmt = container.format.name
            if fmt not in VIDEO_CONTAINERS:
                raise UploadRefused(f"{label}: not a video file (its content is {fmt.split(',')[0]}); upload "
                                    f"MP4, MOV, MKV, WebM, AVI or MPEG-TS.")
            streams = container.streams.video
            if not streams:
                raise UploadRefused(f"{label}: the file has no video stream.")
            stream = streams[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            if width * height > limit:
                raise UploadRefused(f"{label}: frames of {width} x {height} pixels are more than the {limit:,} "
                                    "allowed (HAI_MAX_FRAME_PIXELS).")
            if next(container.decode(stream), None) is None:
                raise UploadRefused(f"{label}: no frame of the video decodes.")
    except UploadRefused:
        raise
    except (av.error.FFmpegError, OSError, ValueError, IndexError) as exc:
        raise UploadRefused(f"{label}: not a video file ({type(exc).__name__}).") from None
    suffix = Path(label).suffix.lower()
    return suffix if suffix in VIDEO_SUFFIXES else VIDEO_CONTAINERS[fmt]


def _check_torch(path: Path, label: str) -> str:
    """A ``torch.save`` file: a zip archive (the format since torch 1.6); loading it is still
    ``weights_only``."""
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic != b"PK\x03\x04":
        raise UploadRefused(f"{label}: not a PyTorch weights file (torch.save writes a zip archive).")
    return ".pt"


KINDS: dict[str, FileKind] = {kind.name: kind for kind in (
    FileKind("jsonl", "JSON lines", (".jsonl",), _check_jsonl),
    FileKind("json", "JSON", (".json",), _check_json),
    FileKind("csv", "CSV", (".csv",), _check_csv),
    FileKind("image", "PNG or JPEG image", (".png", ".jpg", ".jpeg"), _check_image),
    FileKind("video", "video", VIDEO_SUFFIXES, _check_video),
    FileKind("torch", "PyTorch weights", (".pt", ".pth"), _check_torch),
)}


def _stored_bytes(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file())


def _copy(source: BinaryIO | bytes, target: Path, limit: int, label: str) -> tuple[int, str]:
    """Copy ``source`` to ``target`` in chunks, stopping once it passes ``limit`` bytes."""
    stream = io.BytesIO(source) if isinstance(source, bytes | bytearray | memoryview) else source
    if hasattr(stream, "seek"):
        stream.seek(0)
    digest, size = hashlib.sha256(), 0
    with target.open("wb") as out:
        while chunk := stream.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise UploadRefused(f"{label}: larger than the {limit // MB} MB allowed (HAI_UPLOAD_MAX_MB).")
            digest.update(chunk)
            out.write(chunk)
    return size, digest.hexdigest()


def store_upload(source: BinaryIO | bytes, *, label: str | None, kind: str, area: str) -> StoredUpload:
    """Check an upload and keep it under ``<data_dir>/uploads/<area>/``.

    Args:
        source: the bytes, or a binary file object (read in chunks).
        label: the name the browser sent; only shown in messages, never used as a path.
        kind: one of ``KINDS`` (jsonl, json, csv, image, video, torch).
        area: the area keeping it (``judge``, ``video``, ...).

    Raises:
        UploadRefused: empty, too large, over the stored total, or not of the kind; nothing is kept.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown upload kind {kind!r}; the kinds are {', '.join(KINDS)}")
    spec, label = KINDS[kind], upload_label(label)
    settings = get_settings()
    folder = private_dir(area_folder("uploads", area))
    partial = folder / f".{uuid.uuid4().hex}.partial"
    stored_before = _stored_bytes(owned_folder("uploads"))
    try:
        size, sha256 = _copy(source, partial, settings.upload_max_mb * MB, label)
        if size == 0:
            raise UploadRefused(f"{label}: the file is empty.")
        if stored_before + size > settings.uploads_disk_mb * MB:
            raise UploadRefused(f"{label}: the stored uploads already take more than {settings.uploads_disk_mb:,} MB "
                                "(HAI_UPLOADS_DISK_MB); ask an administrator to remove old uploads.")
        suffix = spec.check(partial, label)
        target = folder / f"{sha256[:24]}{suffix}"  # the same file uploaded twice is kept once
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return StoredUpload(target, label, kind, size, sha256)


def quota_problem(held: list[int], new_size: int, total_held: int) -> str | None:
    """Why the web server should refuse to hold one more upload, or None.

    Args:
        held: sizes of the uploads this browser session holds now.
        new_size: the size of the new upload.
        total_held: bytes all sessions of this process hold now.
    """
    settings = get_settings()
    if new_size > settings.upload_max_mb * MB:
        return f"the file is larger than the {settings.upload_max_mb} MB allowed"
    if len(held) + 1 > settings.upload_session_files:
        return f"a browser session may hold at most {settings.upload_session_files} uploads; reload the page"
    if sum(held) + new_size > settings.upload_session_mb * MB:
        return f"a browser session may hold at most {settings.upload_session_mb} MB of uploads; reload the page"
    if total_held + new_size > settings.upload_total_mb * MB:
        return "the server holds too many uploads right now; try again in a few minutes"
    return None


def remove_stored(upload: StoredUpload) -> None:
    """Delete a stored upload (after an import that copied what it needed)."""
    upload.path.unlink(missing_ok=True)


__all__ = ["KINDS", "VIDEO_SUFFIXES", "FileKind", "StoredUpload", "UploadRefused", "quota_problem", "remove_stored",
           "store_upload", "upload_label"]
