"""Where participants reach the app, for the links the Studies page and ``studies links`` print.

``HAI_PUBLIC_BASE_URL`` when the operator set it (in the environment or ``.env``); otherwise the
address of the app as it is served on this machine: each app process records its port in
``<data_dir>/served.json`` when it starts, so a command run in another terminal prints links on
the port that ``make run PORT=8600`` chose, not the default 8501.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from engines.platform.settings import get_settings

SERVED_FILE = "served.json"


def _served_file() -> Path:
    return get_settings().data_dir / SERVED_FILE


def record_served_port(port: int) -> None:
    """Remember the port this app process serves on (written atomically; the newest start wins)."""
    path = _served_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps({"port": int(port)}))
    os.replace(partial, path)


def public_base_url() -> str:
    """The base URL of participant links (see the module docstring)."""
    settings = get_settings()
    if "public_base_url" in settings.model_fields_set:
        return settings.public_base_url.rstrip("/")
    try:
        port = int(json.loads(_served_file().read_text())["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return settings.public_base_url.rstrip("/")
    return f"http://localhost:{port}"


__all__ = ["public_base_url", "record_served_port"]
