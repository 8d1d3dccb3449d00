"""``python -m engines.judge audit``: judges against human labels, from three files (``__main__`` dispatches).

    python -m engines.judge audit --items items.jsonl --labels labels.csv --verdicts verdicts.csv \\
        [--human-rule majority|first] [--bootstrap N] [--seed S] [--subsets [--target A] [--min-items N]
        [--max-cell-std S] [--max-correct K]] [--out audit.json] --json

Files: ``items.jsonl`` (``items.read_items``), ``labels.csv`` (``item_key, annotator, score``,
optional ``seq`` = labelling order) and ``verdicts.csv`` (``item_key, judge, p_harmful, label``).
A label or verdict whose ``item_key`` names no item, or a second verdict of the same judge on
the same item, is an error naming the file, the line and the field. The JSON is
``AuditResult.to_dict()`` (``engines.judge.audit``).
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

from engines.judge.audit import AuditConfig, audit
from engines.judge.items import JudgeDataError, read_items, read_labels, read_verdicts
from engines.judge.subsets import ReliableBenchConfig, StressTestConfig
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.files import echo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``audit``."""
    parser.add_argument("--items", type=Path, required=True, help="items.jsonl")
    parser.add_argument("--labels", type=Path, default=None,
                        help="labels.csv (item_key, annotator, score[, seq]); default: the items' own labels")
    parser.add_argument("--verdicts", type=Path, default=None,
                        help="verdicts.csv (item_key, judge, p_harmful, label); default: the items' own verdicts")
    argparse_options(AuditConfig, parser)
    argparse_options(ReliableBenchConfig, parser)
    argparse_options(StressTestConfig, parser)
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON result to this file")


def _line_of(path: Path, key: str, judge: str | None = None) -> int | None:
    """The line of the first row of ``path`` with this ``item_key`` (and ``judge``), as ``csv`` counts lines."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        for row in reader:
            if (row.get("item_key") or "").strip() == key and (judge is None or (row.get("judge") or "").strip() == judge):
                return reader.line_num
    return None


def _check_keys(known: set[str], items_path: Path, labels_path: Path | None, labels, verdicts_path: Path | None,
                verdicts) -> None:
    for key, _ in labels or ():
        if key not in known:
            raise JudgeDataError(labels_path, _line_of(labels_path, key), "item_key",
                                 f"no item in {items_path} has the key {echo(key)}")
    seen: set[tuple[str, str]] = set()
    for key, verdict in verdicts or ():
        if key not in known:
            raise JudgeDataError(verdicts_path, _line_of(verdicts_path, key, verdict.judge), "item_key",
                                 f"no item in {items_path} has the key {echo(key)}")
        if (key, verdict.judge) in seen:
            first = _line_of(verdicts_path, key, verdict.judge)
            with verdicts_path.open(encoding="utf-8", newline="") as handle:
                reader = csv.DictReader(handle)
                lines = [reader.line_num for row in reader
                         if (row.get("item_key") or "").strip() == key and (row.get("judge") or "").strip() == verdict.judge]
            raise JudgeDataError(verdicts_path, lines[1] if len(lines) > 1 else None, "item_key",
                                 f"a second verdict of {echo(verdict.judge)} on {echo(key)} (the first is on line {first})")
        seen.add((key, verdict.judge))


def run(args: argparse.Namespace) -> dict:
    """Audit safety judges against human labels: metrics, breakdowns, intervals, ASR inflation, agreement."""
    config = AuditConfig(**option_values(AuditConfig, args),
                         reliable_bench=ReliableBenchConfig(**option_values(ReliableBenchConfig, args), seed=args.seed),
                         stress_test=StressTestConfig(**option_values(StressTestConfig, args), seed=args.seed))
    items = read_items(args.items)
    labels = read_labels(args.labels) if args.labels is not None else None
    verdicts = read_verdicts(args.verdicts) if args.verdicts is not None else None
    _check_keys({item.key for item in items}, args.items, args.labels, labels, args.verdicts, verdicts)
    result = audit(items, labels, verdicts, config).to_dict()
    if args.out is not None:
        _write_json(result, args.out)
    return result


def _write_json(result: dict, out: Path) -> None:
    """Write the result as JSON without leaving a half-written file."""
    import json

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    tmp.replace(out)
