"""Export a study's data: tidy CSV and JSONL, a data dictionary, and the study's config.

Files (all UTF-8):
- ``participants.csv``: one row per participant (condition, status, screening result, times, completion
  code): ``screened_out`` is true for a participant screened out, and ``screening_reason`` says why;
- ``responses.csv``: one row per answered field (long format: participant, step, round, field, value);
- ``responses.jsonl``: one JSON object per participant with all their step responses and study variables;
- ``attempts.csv``: failed comprehension/attention attempts;
- ``data_dictionary.csv``: every response field with its label, type and constraints;
- ``study_config.json``: the protocol, its constants with overrides, conditions and code version;
- whatever the study module's ``export_files(slug, engine)`` adds (e.g. the collaboration study's
  interactions and controller-stream histories);
- ``README.txt``: what the files hold, and the two rules below, for whoever receives the export.

Every CSV goes through ``engines.platform.csv_safety``: a text cell that begins with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return gets a leading ``'`` so a spreadsheet cannot run it as a
formula; numbers stay numbers and the JSON files stay raw.

``export_study(slug, pseudonymise=True)`` is the export for sharing outside the lab: every
participant's panel id (``external_id``) and the panel's ids in the link (``panel_params``) become
keyed hashes (``engines.platform.pseudonyms``), in every file; see ``pseudonymise_files``.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import select

from engines.platform.csv_safety import csv_bytes, map_csv_cells, neutralise, neutralise_csv
from engines.platform.db import read_session
from engines.platform.models import Participant, ParticipantStatus, StepAttempt, StepResponse
from engines.platform.provenance import run_record
from engines.platform.pseudonyms import KEPT_PANEL_PARAMS, MIN_SCRUB_LENGTH, Pseudonymiser, pseudonymiser
from engines.platform.registry import get_protocol
from engines.platform.runtime import completion_codes
from engines.platform.study import SCREENED_OUT_BECAUSE, StudyProtocol, jsonable_constants
from engines.platform.study_admin import get_study

PARTICIPANT_COLUMNS = ["participant_id", "external_id", "panel", "condition", "status", "screened_out",
                       "screening_reason", "step_index", "attention_failures", "started_at", "last_seen_at",
                       "finished_at", "completion_code", "panel_params"]
RESPONSE_COLUMNS = ["participant_id", "external_id", "condition", "step_index", "step_name", "round_number",
                    "field", "value", "attempts", "shown_at", "submitted_at", "duration_s"]
ATTEMPT_COLUMNS = ["participant_id", "external_id", "step_index", "attempt", "wrong_fields", "data", "created_at"]
DICTIONARY_COLUMNS = ["step", "field", "type", "label", "description", "required", "constraints", "repeat", "checked"]


def zip_name(slug: str, *, pseudonymised: bool = False) -> str:
    """``<slug>-export.zip``, or ``<slug>-export-pseudonymised.zip``: the name says which one may be shared."""
    return f"{slug}-export{'-pseudonymised' if pseudonymised else ''}.zip"


@dataclass(frozen=True)
class StudyExport:
    """An in-memory export: file name -> bytes."""

    slug: str
    files: dict[str, bytes]
    pseudonymised: bool = False

    @property
    def zip_name(self) -> str:
        """The name to download ``zip_bytes()`` as (``zip_name``)."""
        return zip_name(self.slug, pseudonymised=self.pseudonymised)

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


README_NAME = "README.txt"


def readme_text(slug: str, names: list[str], *, pseudonymised: bool, key_id: str = "") -> str:
    """The export's ``README.txt``: its files and how to read them."""
    described = {
        "participants.csv": "one row per participant: condition, status, screened_out (True/False) and "
                            "screening_reason (why), times, completion code, panel parameters",
        "responses.csv": "one row per answered field (participant, step, round, field, value, timings)",
        "responses.jsonl": "one JSON object per participant with all their answers and study variables",
        "attempts.csv": "failed comprehension and attention-check attempts",
        "data_dictionary.csv": "every response field: label, type and constraints",
        "study_config.json": "the protocol, constants, conditions, completion codes and code version",
    }
    lines = [f"Export of the study '{slug}' (HAI Studio).", "", "Files:"]
    lines += [f"- {name}: {described.get(name, 'added by the study protocol')}" for name in names]
    lines += ["", "Spreadsheet safety (CSV files):",
              "A text cell that begins with =, +, -, @, a tab or a carriage return starts with an added single quote ('),",
              "so that a spreadsheet shows it as text instead of running it as a formula (OWASP: CSV injection).",
              "Numbers are written as numbers. The JSON files (responses.jsonl, study_config.json) are raw: they",
              "hold every value exactly as it was stored, without the quote."]
    if pseudonymised:
        lines += ["", "Pseudonymised export:",
                  "Participants' panel ids (external_id, e.g. the PROLIFIC_PID or MTurk workerId) and the panel's",
                  "other link parameters (panel_params: STUDY_ID, SESSION_ID, assignmentId, hitId...) are replaced",
                  "by keyed hashes 'anon-' + 16 hex digits (HMAC-SHA256), the same in every file, so rows still join.",
                  f"An id of {MIN_SCRUB_LENGTH} or more characters is also replaced wherever else it appears (an answer",
                  "where a participant typed it, a study's own files). participant_id is the database's row number",
                  f"(it means nothing outside the lab). Exports made with the same key (key id {key_id}) share pseudonyms."]
    else:
        lines += ["", "Participant ids: raw panel ids (external_id, panel_params). Do not share this export outside",
                  "the lab; make a pseudonymised export for that."]
    return "\n".join(lines) + "\n"


def pseudonymise_files(files: Mapping[str, bytes], raw_ids: set[str], pseudonym: Pseudonymiser) -> dict[str, bytes]:
    """Files a study adds to its export (``export_files``), with participants' ids replaced by pseudonyms.

    So that a study's own files need no code of their own: in each CSV, every cell of an
    ``external_id`` column becomes its pseudonym, whatever its length. ``export_study`` then
    scrubs every file (``Pseudonymiser.scrub``) for the ids that remain elsewhere.
    """
    by_cell = {neutralise(raw): pseudonym(raw) for raw in raw_ids} | {raw: pseudonym(raw) for raw in raw_ids}

    def conceal(column: str, value: str) -> str:
        return (by_cell.get(value) or pseudonym(value)) if column == "external_id" and value else value

    return {name: map_csv_cells(content, conceal) if name.endswith(".csv") else content
            for name, content in files.items()}


def screening_reason(participant: Participant, protocol: StudyProtocol, constants: Any,
                     last_failed: StepAttempt | None) -> str:
    """Why a participant was screened out ("" for one who was not), from what the runtime stored.

    In this order: the reason a study's hook gave (``SCREENED_OUT_BECAUSE``); a comprehension or
    attention check that screens out on failure, failed on the step where they stopped
    (``last_failed``: their last failed attempt there); more failed attention checks than the
    study's ``MAX_ATTENTION_FAILURES``.
    """
    if participant.status != ParticipantStatus.SCREENED_OUT:
        return ""
    given = (participant.vars or {}).get(SCREENED_OUT_BECAUSE)
    if given:
        return str(given)
    steps = protocol.steps
    step = steps[participant.step_index] if 0 <= participant.step_index < len(steps) else None
    check = step.step.check if step is not None else None
    if check is not None and check.on_fail == "screen_out" and last_failed is not None:
        wrong = ", ".join(last_failed.wrong_fields or []) or "an answer"
        return (f"failed the {check.kind} check of step {step.name} {last_failed.attempt} time"
                f"{'s' * (last_failed.attempt != 1)} (wrong: {wrong})")
    limit = getattr(constants, "MAX_ATTENTION_FAILURES", None)
    if limit is not None and participant.attention_failures > limit:
        failures = participant.attention_failures
        return f"{failures} failed attention check{'s' * (failures != 1)}, more than the {limit} allowed"
    return "screened out (no reason recorded)"


def export_zip(slug: str, *, pseudonymise: bool = False) -> bytes:
    """``export_study(slug, pseudonymise=...).zip_bytes()``: what a page's download button calls on click."""
    return export_study(slug, pseudonymise=pseudonymise).zip_bytes()


def export_study(slug: str, *, engine: Engine | None = None, pseudonymise: bool = False) -> StudyExport:
    """Collect a study's data into the files described in the module docstring.

    Args:
        slug: the study.
        engine: the database (default: the configured one).
        pseudonymise: replace participants' panel ids by keyed hashes (``engines.platform.pseudonyms``)
            in every file, for sharing the data outside the lab.
    """
    study = get_study(slug, engine=engine)
    pseudonym = pseudonymiser() if pseudonymise else None
    conceal = pseudonym if pseudonym is not None else (lambda raw: raw)
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

    # The ids that name a person on a panel: the participant's id and the link's other parameters.
    raw_ids = {p.external_id for p in participants} | {
        str(v) for p in participants for k, v in (p.panel_params or {}).items()
        if k not in KEPT_PANEL_PARAMS and v not in (None, "")}
    constants = protocol.constants_for(study.config)
    failed_at = {(a.participant_id, a.step_index): a for a in attempts}  # the last failed attempt of each step
    participant_rows = [{
        "participant_id": p.id, "external_id": conceal(p.external_id), "panel": p.panel, "condition": p.condition,
        "status": p.status, "screened_out": p.status == ParticipantStatus.SCREENED_OUT,
        "screening_reason": screening_reason(p, protocol, constants, failed_at.get((p.id, p.step_index))),
        "step_index": p.step_index, "attention_failures": p.attention_failures,
        "started_at": _iso(p.started_at), "last_seen_at": _iso(p.last_seen_at), "finished_at": _iso(p.finished_at),
        "completion_code": p.completion_code or "",
        "panel_params": (pseudonym.panel_params(p.panel_params or {}) if pseudonym else p.panel_params or {}),
    } for p in participants]

    response_rows = []
    per_participant: dict[int, list[dict[str, Any]]] = {pid: [] for pid in ids}
    for r in responses:
        p = by_id[r.participant_id]
        for field_name, value in (r.data or {}).items():
            response_rows.append({
                "participant_id": p.id, "external_id": conceal(p.external_id), "condition": p.condition,
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
        "participant_id": a.participant_id, "external_id": conceal(by_id[a.participant_id].external_id),
        "step_index": a.step_index, "attempt": a.attempt, "wrong_fields": a.wrong_fields, "data": a.data,
        "created_at": _iso(a.created_at),
    } for a in attempts]
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
        "provenance": run_record(export="study", slug=slug, pseudonymised=pseudonym is not None,
                                 **({"pseudonym_key_id": pseudonym.key_id} if pseudonym else {})),
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
    added: dict[str, bytes] = {}
    if protocol.export_files is not None:
        for name, content in protocol.export_files(slug, engine=engine).items():
            if name in files or name == README_NAME or "/" in name or name.startswith("."):
                raise ValueError(f"study {protocol.name!r}: export_files returned the reserved or unsafe name {name!r}")
            # A study's own CSV is made spreadsheet-safe here too, whatever wrote it.
            added[name] = neutralise_csv(bytes(content)) if name.endswith(".csv") else bytes(content)
    if pseudonym is None:
        files.update(added)
    else:
        files.update(pseudonymise_files(added, raw_ids, pseudonym))
        # The id columns hold pseudonyms now; this also catches ids that participants typed into
        # answers, ids in study variables and whatever else the study's own files carry.
        files = {name: pseudonym.scrub(content, raw_ids) for name, content in files.items()}
    files[README_NAME] = readme_text(slug, list(files), pseudonymised=pseudonym is not None,
                                     key_id=pseudonym.key_id if pseudonym else "").encode()
    return StudyExport(slug, files, pseudonymised=pseudonym is not None)


__all__ = ["StudyExport", "csv_bytes", "export_study", "export_zip", "pseudonymise_files",
           "readme_text", "screening_reason", "zip_name"]

