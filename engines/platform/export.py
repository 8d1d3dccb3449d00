"""Export a study's data: tidy CSV and JSONL, a data dictionary, and the study's config.

Files (all UTF-8):
- ``participants.csv``: one row per participant (condition, status, times, completion code);
- ``responses.csv``: one row per answered field (long format: participant, step, round, field, value);
- ``responses.jsonl``: one JSON object per participant with all their step responses and study variables;
- ``attempts.csv``: failed comprehension/attention attempts;
- ``data_dictionary.csv``: every response field with its label, type and constraints;
- ``study_config.json``: the protocol, its constants with overrides, conditions and code version;
- whatever the study module's ``export_files(slug, engine)`` adds (e.g. the collaboration study's
  interactions and controller-stream histories).
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.platform.db import read_session
from engines.platform.models import Participant, StepAttempt, StepResponse
from engines.platform.provenance import run_record
from engines.platform.registry import get_protocol
from engines.platform.runtime import completion_codes
from engines.platform.study import jsonable_constants
from engines.platform.study_admin import get_study

PARTICIPANT_COLUMNS = ["participant_id", "external_id", "panel", "condition", "status", "step_index",
                       "attention_failures", "started_at", "last_seen_at", "finished_at", "completion_code",
                       "panel_params"]
RESPONSE_COLUMNS = ["participant_id", "external_id", "condition", "step_index", "step_name", "round_number",
                    "field", "value", "attempts", "shown_at", "submitted_at", "duration_s"]
ATTEMPT_COLUMNS = ["participant_id", "external_id", "step_index", "attempt", "wrong_fields", "data", "created_at"]
DICTIONARY_COLUMNS = ["step", "field", "type", "label", "description", "required", "constraints", "repeat", "checked"]


@dataclass(frozen=True)
class StudyExport:
    """An in-memory export: file name -> bytes."""

    slug: str
    files: dict[str, bytes]

    def write(self, out_dir: str | Path) -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = []
        for name, content in self.files.items():
            path = out / name
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_bytes(content)
            tmp.replace(path)  # never leave a half-written file behind
            paths.append(path)
        return paths

    def zip_bytes(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, content in self.files.items():
                archive.writestr(f"{self.slug}/{name}", content)
        return buffer.getvalue()


def _iso(value: Any) -> str:
    return value.isoformat() if value is not None and hasattr(value, "isoformat") else ("" if value is None else str(value))


def csv_bytes(columns: list[str], rows: list[dict[str, Any]], *, extra: str = "raise") -> bytes:
    """UTF-8 CSV of ``rows`` (lists and dicts as JSON); ``extra="ignore"`` drops keys not in ``columns``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction=extra, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (json.dumps(v) if isinstance(v, (dict, list)) else v) for k, v in row.items()})
    return buffer.getvalue().encode()


def export_study(slug: str, *, engine: Engine | None = None) -> StudyExport:
    """Collect a study's data into the files described in the module docstring."""
    study = get_study(slug, engine=engine)
    protocol = get_protocol(study.protocol)
    with read_session(engine) as session:
        participants = session.exec(
            select(Participant).where(Participant.study_id == study.id).order_by(Participant.id)
        ).all()
        ids = [p.id for p in participants]
        responses = session.exec(
            select(StepResponse).where(StepResponse.participant_id.in_(ids))
            .order_by(StepResponse.participant_id, StepResponse.step_index)
        ).all() if ids else []
        attempts = session.exec(
            select(StepAttempt).where(StepAttempt.participant_id.in_(ids))
            .order_by(StepAttempt.participant_id, StepAttempt.step_index, StepAttempt.attempt)
        ).all() if ids else []
    by_id = {p.id: p for p in participants}

    participant_rows = [{
        "participant_id": p.id, "external_id": p.external_id, "panel": p.panel, "condition": p.condition,
        "status": p.status, "step_index": p.step_index, "attention_failures": p.attention_failures,
        "started_at": _iso(p.started_at), "last_seen_at": _iso(p.last_seen_at), "finished_at": _iso(p.finished_at),
        "completion_code": p.completion_code or "", "panel_params": p.panel_params or {},
    } for p in participants]

    response_rows = []
    per_participant: dict[int, list[dict[str, Any]]] = {pid: [] for pid in ids}
    for r in responses:
        p = by_id[r.participant_id]
        for field_name, value in (r.data or {}).items():
            response_rows.append({
                "participant_id": p.id, "external_id": p.external_id, "condition": p.condition,
                "step_index": r.step_index, "step_name": r.step_name, "round_number": r.round_number,
                "field": field_name, "value": value, "attempts": r.attempts, "shown_at": _iso(r.shown_at),
                "submitted_at": _iso(r.submitted_at), "duration_s": "" if r.duration_s is None else round(r.duration_s, 3),
            })
        per_participant[r.participant_id].append({
            "step_index": r.step_index, "step_name": r.step_name, "round_number": r.round_number,
            "data": r.data, "attempts": r.attempts, "shown_at": _iso(r.shown_at),
            "submitted_at": _iso(r.submitted_at), "duration_s": r.duration_s,
        })

    # The JSONL also carries each participant's study variables (derived data a study keeps,
    # such as the AI sets shown and the thresholds used), which do not fit the flat CSVs.
    jsonl = "".join(
        json.dumps({**row, "vars": by_id[row["participant_id"]].vars or {},
                    "responses": per_participant[row["participant_id"]]}, sort_keys=True, default=str) + "\n"
        for row in participant_rows
    )
    attempt_rows = [{
        "participant_id": a.participant_id, "external_id": by_id[a.participant_id].external_id,
        "step_index": a.step_index, "attempt": a.attempt, "wrong_fields": a.wrong_fields, "data": a.data,
        "created_at": _iso(a.created_at),
    } for a in attempts]
    constants = protocol.constants_for(study.config)
    config = {
        "study": {"slug": study.slug, "title": study.title, "protocol": protocol.name, "is_open": study.is_open,
                  "created_at": _iso(study.created_at), "config": study.config},
        "protocol": {"name": protocol.name, "title": protocol.title, "description": protocol.description,
                     "conditions": protocol.condition_names(constants),
                     "steps": [{"index": s.index, "name": s.name, "kind": s.step.kind, "round": s.round_number}
                               for s in protocol.steps]},
        # What participants received: the instance's codes, not the protocol's defaults.
        "constants": {**jsonable_constants(constants),
                      **dict(zip(("COMPLETION_CODE", "SCREENED_OUT_CODE"),
                                 completion_codes(constants, study.config).values(), strict=True))},
        "completion_codes": completion_codes(constants, study.config),
        "provenance": run_record(export="study", slug=slug),
        "counts": {"participants": len(participants), "responses": len(responses), "failed_attempts": len(attempts)},
    }
    files = {
        "participants.csv": csv_bytes(PARTICIPANT_COLUMNS, participant_rows),
        "responses.csv": csv_bytes(RESPONSE_COLUMNS, response_rows),
        "responses.jsonl": jsonl.encode(),
        "attempts.csv": csv_bytes(ATTEMPT_COLUMNS, attempt_rows),
        "data_dictionary.csv": csv_bytes(DICTIONARY_COLUMNS, protocol.describe_fields(constants)),
        "study_config.json": json.dumps(config, indent=2, sort_keys=True, default=str).encode(),
    }
    if protocol.export_files is not None:
        for name, content in protocol.export_files(slug, engine=engine).items():
            if name in files or "/" in name or name.startswith("."):
                raise ValueError(f"study {protocol.name!r}: export_files returned the reserved or unsafe name {name!r}")
            files[name] = bytes(content)
    return StudyExport(slug, files)

