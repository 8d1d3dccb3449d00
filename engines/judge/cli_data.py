"""Options and runs of ``python -m engines.judge import`` and ``export`` (``__main__`` dispatches).

    python -m engines.judge import harmbench --behaviors behaviors.csv \\
        --run MODEL ATTACK completions.json [--run ...] --out items.jsonl
    python -m engines.judge import jbb --artifact FILE [--behaviors behaviors.csv] --out items.jsonl
    python -m engines.judge import generic --input FILE --map field=column ... [--format jsonl|csv] --out items.jsonl
    python -m engines.judge export --items items.jsonl [--labels labels.csv] --format harmbench|jbb --out DIR

The readers are ``engines.judge.importers`` and the writers ``engines.judge.exporters``; a bad file
ends the command with exit status 2 and a message naming file, line and field, and nothing is written.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

from engines.judge import exporters, importers
from engines.judge.items import LABEL_COLUMNS, Item, JudgeDataError, read_items, read_labels, write_items
from engines.platform.files import echo

UNLABELLED_SHOWN = 5  # keys of unlabelled items named in an export's result (the count is always there)


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """``import harmbench | jbb | generic``: each writes ``--out`` items.jsonl."""
    sources = parser.add_subparsers(dest="source", required=True, metavar="{harmbench,jbb,generic}")
    harmbench = sources.add_parser("harmbench",
                                   help="HarmBench behaviours CSV and completions JSON per model and attack")
    harmbench.add_argument("--behaviors", type=Path, required=True, help="HarmBench behaviours CSV")
    # dest "runs": ``__main__`` keeps the command's function in ``args.run``.
    harmbench.add_argument("--run", dest="runs", nargs=3, action="append", required=True,
                           metavar=("MODEL", "ATTACK", "COMPLETIONS"),
                           help="a victim model, an attack and its completions JSON (repeat for more runs)")
    jbb = sources.add_parser("jbb", help="a JailbreakBench artifact (parameters and jailbreaks[])")
    jbb.add_argument("--artifact", type=Path, required=True, help="artifact JSON")
    jbb.add_argument("--behaviors", type=Path, default=None, help="JBB-Behaviors CSV (adds categories)")
    generic = sources.add_parser("generic", help="any JSONL or CSV file, with a column per item field")
    generic.add_argument("--input", type=Path, required=True, help="JSONL or CSV file")
    optional = [name for name in importers.GENERIC_FIELDS if name not in importers.GENERIC_REQUIRED]
    generic.add_argument("--map", action="append", required=True, metavar="FIELD=COLUMN",
                         help=f"which column holds an item field (required: {', '.join(importers.GENERIC_REQUIRED)}; "
                              f"also: {', '.join(optional)})")
    generic.add_argument("--format", dest="source_format", choices=("jsonl", "csv"), default=None,
                         help="the file's format (default: from its suffix)")
    for command in (harmbench, jbb, generic):
        command.add_argument("--out", type=Path, required=True, help="items JSONL to write")
        command.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                             help="print one JSON object instead of a summary")


def run_import(args: argparse.Namespace) -> dict[str, Any]:
    """Read HarmBench, JailbreakBench or generic files into items.jsonl (nothing is written if a file is bad)."""
    if args.out.is_dir():
        raise JudgeDataError(args.out, None, None, "is a folder: --out names the items JSONL file to write")
    if args.source == "harmbench":
        result = importers.read_harmbench(args.behaviors, [tuple(run) for run in args.runs])
    elif args.source == "jbb":
        result = importers.read_jbb(args.artifact, args.behaviors)
    else:
        result = importers.read_generic(args.input, importers.parse_mapping(args.map), args.source_format)
    write_items(result.items, args.out)
    return {"summary": f"{result.summary()} -> {args.out}", "items": len(result.items), "per_run": result.per_run,
            "skipped": len(result.skipped), "out": str(args.out)}


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """``export``: items (and labels) to HarmBench results JSON or JailbreakBench artifacts, one file per run."""
    parser.add_argument("--items", type=Path, required=True, help="items JSONL")
    parser.add_argument("--labels", type=Path, default=None,
                        help="labels.csv (item_key, annotator, score[, seq]), added to the items' own labels")
    parser.add_argument("--format", dest="export_format", choices=("harmbench", "jbb"), required=True,
                        help="harmbench: results JSON per model and attack; jbb: an artifact per model and method")
    parser.add_argument("--out", type=Path, required=True, help="folder for the files (<model>__<attack>.json)")


def attach_labels(items: list[Item], labels_path: str | Path) -> list[Item]:
    """The items with the labels of ``labels.csv`` appended, in labelling order; an unknown key is an error."""
    by_key = {item.key: item.model_copy(deep=True) for item in items}
    for key, label in read_labels(labels_path):
        if key not in by_key:
            _, rows = importers.read_csv_rows(labels_path, LABEL_COLUMNS)
            line = next((number for number, row in rows if row["item_key"].strip() == key), None)
            raise JudgeDataError(labels_path, line, "item_key", f"{echo(key)} is not an item of the items file")
        by_key[key].labels.append(label)
    return [by_key[item.key] for item in items]


def file_stem(model: str, attack: str) -> str:
    """``<model>__<attack>`` with anything but letters, digits, ``.``, ``_`` and ``-`` made ``_``."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"{model}__{attack}")


def _jbb_artifacts(items: list[Item]) -> dict[tuple[str, str], dict[str, Any]]:
    runs: dict[tuple[str, str], list[Item]] = {}
    for item in items:
        runs.setdefault((item.victim_model, item.attack), []).append(item)
    # An artifact's parameters travel with its items; items from elsewhere get the two JBB needs to name a run.
    return {run: exporters.export_jbb(group, group[0].extra.get("jbb_parameters") or {"method": run[1], "model": run[0]})
            for run, group in runs.items()}


def run_export(args: argparse.Namespace) -> dict[str, Any]:
    """Write items with their human labels back to HarmBench results JSON or JailbreakBench artifacts."""
    if args.out.exists() and not args.out.is_dir():
        raise JudgeDataError(args.out, None, None, "is a file: --out names the folder to write into")
    items = read_items(args.items)
    if args.labels is not None:
        items = attach_labels(items, args.labels)
    runs = exporters.export_harmbench(items) if args.export_format == "harmbench" else _jbb_artifacts(items)
    texts = {}
    for (model, attack), data in runs.items():
        name = file_stem(model, attack) + ".json"
        if name in texts:
            raise ValueError(f"two runs would both be written to {name}: rename a model or an attack")
        texts[name] = json.dumps(data, indent=4, ensure_ascii=False) + "\n"
    # Everything is built before the first file is written: a bad input leaves the folder as it was.
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        tmp = args.out / (name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(args.out / name)
    unlabelled = exporters.unlabelled_keys(items)
    labelled = len(items) - len(unlabelled)
    summary = f"{len(items)} items, {labelled} with a human label, to {len(texts)} files in {args.out}"
    if unlabelled:
        summary += f"; {len(unlabelled)} unlabelled (no label written), e.g. {unlabelled[0]}"
    return {"summary": summary, "items": len(items), "labelled": labelled,
            "unlabelled": len(unlabelled), "unlabelled_keys": unlabelled[:UNLABELLED_SHOWN],
            "files": [str(args.out / name) for name in texts]}
