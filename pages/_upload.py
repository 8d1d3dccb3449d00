"""Uploads in the pages: one widget helper over the platform's upload rule (``engines.platform.uploads``).

- ``file_input`` shows a file picker whose help text states the size limit from the settings, and
  returns the upload stored through ``store_upload`` (never under the browser's file name), or None
  with the refusal shown beside the picker.
- ``refuse_upload`` is for an upload the area could not read after all (weights of another model):
  its stored file is removed at once and the reason is shown again on every rerun while the same
  file stays chosen, so refused files never pile up on the server's disk.
- ``install_upload_quota`` makes the web server refuse (HTTP 413) an upload beyond the per-session
  and total quotas before it holds the bytes in memory; ``app.py`` calls it once per process.
"""

from __future__ import annotations

import threading

import streamlit as st

from engines.platform.settings import get_settings
from engines.platform.uploads import KINDS, StoredUpload, UploadRefused, quota_problem, remove_stored, store_upload

_STORED = "hai_stored_uploads"  # session state: widget file id -> StoredUpload (a rerun does not copy again)
_REFUSED = "hai_refused_uploads"  # session state: widget file id -> why the area could not read it
_INSTALL_LOCK = threading.Lock()


def limit_text() -> str:
    return f"At most {get_settings().upload_max_mb} MB."


def file_input(label: str, *, kind: str, area: str, key: str, help: str | None = None,
               container=st) -> StoredUpload | None:
    """A file picker for one ``kind`` of file; the stored upload, or None (nothing chosen or refused)."""
    spec = KINDS[kind]
    chosen = container.file_uploader(label, type=[s.lstrip(".") for s in spec.suffixes], key=key,
                                     help=" ".join(part for part in (help, limit_text()) if part))
    if chosen is None:
        return None
    refused: dict = st.session_state.setdefault(_REFUSED, {})
    if chosen.file_id in refused:
        container.error(refused[chosen.file_id])
        return None
    stored: dict = st.session_state.setdefault(_STORED, {})
    if chosen.file_id in stored:
        return stored[chosen.file_id]
    try:
        upload = store_upload(chosen, label=chosen.name, kind=kind, area=area)
    except UploadRefused as exc:
        container.error(str(exc))
        return None
    stored[chosen.file_id] = upload
    return upload


def refuse_upload(upload: StoredUpload, reason: str, *, container=st) -> None:
    """The area could not read ``upload``: remove its stored file and show ``reason`` (again on reruns)."""
    remove_stored(upload)
    stored: dict = st.session_state.setdefault(_STORED, {})
    for file_id, kept in list(stored.items()):
        if kept == upload:
            del stored[file_id]
            st.session_state.setdefault(_REFUSED, {})[file_id] = reason
    container.error(reason)


def install_upload_quota() -> bool:
    """Wrap Streamlit's uploaded-file store so that each new upload passes ``quota_problem`` first.

    Streamlit keeps every upload in memory (``MemoryUploadedFileManager``) until its session ends;
    its PUT handler calls ``add_file``, where an ``HTTPException`` becomes the response. A private
    Streamlit API (docs/design.md lists it); False when there is no running server (AppTest).
    """
    from starlette.exceptions import HTTPException
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return False
    manager = Runtime.instance().uploaded_file_mgr
    with _INSTALL_LOCK:
        if getattr(manager, "_hai_quota", False):
            return True
        original = manager.add_file

        def add_file(session_id, file) -> None:
            with manager._lock:
                held = [len(rec.data) for fid, rec in manager.file_storage.get(session_id, {}).items()
                        if fid != file.file_id]
                total = manager._total_bytes
            problem = quota_problem(held, len(file.data), total)
            if problem is not None:
                raise HTTPException(status_code=413, detail=f"Upload refused: {problem}.")
            original(session_id, file)

        manager.add_file = add_file
        manager._hai_quota = True
    return True


__all__ = ["UploadRefused", "file_input", "install_upload_quota", "limit_text", "refuse_upload"]
