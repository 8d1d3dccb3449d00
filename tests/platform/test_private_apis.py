"""The private APIs of other packages the app relies on still exist (docs/design.md lists each and why)."""

from __future__ import annotations

import asyncio.base_events
import inspect


def test_asyncio_still_sets_nodelay_through_the_hook_the_app_replaces():
    assert callable(asyncio.base_events._set_nodelay)
    # The hook is looked up at call time by the transports, so replacing the module attribute works.
    source = inspect.getsource(asyncio.selector_events)
    assert "base_events._set_nodelay(" in source


def test_streamlits_upload_store_has_what_the_quota_wraps():
    from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager

    manager = MemoryUploadedFileManager("/_stcore/upload_file")
    assert callable(manager.add_file)
    assert isinstance(manager.file_storage, dict)
    assert manager._total_bytes == 0
    with manager._lock:
        pass
