"""The torch device model work runs on: the ``HAI_DEVICE`` setting ("auto": CUDA when present, else the CPU).

torch is imported only when a device is asked for, so the platform itself never needs it.
"""

from __future__ import annotations

from typing import Any


def resolve_device(device: Any = None) -> Any:
    """A ``torch.device``: the argument, else the ``HAI_DEVICE`` setting; "auto" picks CUDA when there is one."""
    import torch

    if device is None:
        try:
            from engines.platform.settings import get_settings

            device = get_settings().device
        except Exception:  # noqa: BLE001 - settings unreadable (a bare checkout): the CPU is always safe
            device = "cpu"
    if str(device) == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)
