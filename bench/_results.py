"""Shared by the benchmark scripts: write a result file atomically."""

from __future__ import annotations

import json
from pathlib import Path


def write_result(result: dict, out: Path) -> None:
    """Write ``result`` as indented JSON to ``out`` without ever leaving a half-written file."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(out)
