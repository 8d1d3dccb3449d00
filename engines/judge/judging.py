"""Batch judging with a resumable cache: ``python -m engines.judge judge``.

    python -m engines.judge judge --items items.jsonl --judge NAME [--backend SPEC] \\
        [--cache FILE] --out verdicts.csv

Every verdict is appended to a JSONL cache as soon as its batch is judged, keyed by the judge's
``cache_id`` (its name and the backend or head that answers), the item's key and a hash of what the
judge reads from the item (for prompt judges, the rendered prompt). A rerun after an interruption
judges only the items the cache lacks; an item whose behaviour or generation changed, or a changed
prompt or backend, is judged anew. A torn last line (the process killed mid-write) is skipped.

The verdicts go to ``verdicts.csv`` (``items.write_verdicts``: ``item_key, judge, p_harmful, label,
parse_status, raw``); an unparsable reply has empty ``p_harmful`` and ``label`` and its status.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from engines.judge.backends import API_KEY_VARIABLE
from engines.judge.items import Item, Verdict, read_items, write_verdicts
from engines.judge.judges import JUDGES, Judge, describe_judges, get_judge
from engines.platform.chat import BackendError
from engines.platform.config_schema import argparse_options, check_fields, option_values
from engines.platform.files import echo
from engines.platform.progress import Progress, ProgressBar

DEFAULT_BATCH = 32


@dataclass(frozen=True)
class JudgeRunConfig:
    """Which judge runs, on what model, and how often the cache is written. Each field's metadata is its
    one declaration (``engines.platform.config_schema``): the ``judge`` command's option and the
    ``judge.run`` job's parameter."""

    judge: str = field(default="gcg-strings", metadata={
        "title": "Judge", "help": "the safety judge's registered name", "choices": lambda: list(JUDGES),
        "cli": {"required": True, "metavar": "NAME"}})
    backend: str | None = field(default=None, metadata={
        "title": "Backend of a prompt judge: transformers:PATH or openai:URL#MODEL", "max_length": 500,
        "help": "the model of a prompt judge: transformers:PATH or openai:URL#MODEL "
                f"(endpoint key from ${API_KEY_VARIABLE})"})
    name: str | None = field(default=None, metadata={
        "title": "Name in the verdicts' judge column", "max_length": 128,
        "help": "name in the verdicts' judge column (default: the judge's)"})
    batch_size: int = field(default=DEFAULT_BATCH, metadata={
        "title": "Items between two cache writes", "help": "items between two cache writes", "min": 1, "max": 4096})

    def __post_init__(self) -> None:
        check_fields(self)
        if self.judge not in JUDGES:
            raise ValueError(f"unknown judge {echo(self.judge)}; known: {', '.join(JUDGES)}")


def cache_key(judge: Judge, item: Item) -> str:
    """judge name + backend id (``cache_id``) + item key + prompt hash (``fingerprint``)."""
    text = "\x00".join((judge.cache_id, item.key, judge.fingerprint(item)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VerdictCache:
    """An append-only JSONL file of verdicts: ``{"key", "judge", "item_key", "prompt_hash", "verdict"}`` per line."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.entries: dict[str, Verdict] = {}
        if self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    record = json.loads(line)
                    self.entries[record["key"]] = Verdict.model_validate(record["verdict"])
                except (ValueError, KeyError, TypeError, ValidationError):
                    continue  # a torn last line from an interrupted run: that item is judged again

    def get(self, key: str) -> Verdict | None:
        return self.entries.get(key)

    def add(self, records: Sequence[tuple[str, Judge, Item, Verdict]]) -> None:
        """Append (key, judge, item, verdict) records and flush them to disk."""
        if not records:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            for key, judge, item, verdict in records:
                handle.write(json.dumps({"key": key, "judge": judge.cache_id, "item_key": item.key,
                                         "prompt_hash": judge.fingerprint(item),
                                         "verdict": verdict.model_dump(mode="json")}, ensure_ascii=False) + "\n")
                self.entries[key] = verdict
            handle.flush()


@dataclass
class JudgingResult:
    """The verdicts in item order and the counts of the run."""

    judge: str
    rows: list[tuple[str, Verdict]]
    n_judged: int
    n_cached: int
    cache_path: str | None

    @property
    def n_unparsed(self) -> int:
        return sum(1 for _, v in self.rows if v.label is None)

    @property
    def n_positive(self) -> int:
        return sum(1 for _, v in self.rows if v.label == 1)

    def summary(self) -> str:
        n = len(self.rows)
        return (f"{self.judge}: {n} items, {self.n_judged} judged, {self.n_cached} from cache, "
                f"{self.n_unparsed} unparsed, {self.n_positive} judged harmful")

    def to_dict(self) -> dict:
        return {"judge": self.judge, "n_items": len(self.rows), "n_judged": self.n_judged, "n_cached": self.n_cached,
                "n_unparsed": self.n_unparsed, "n_positive": self.n_positive, "cache": self.cache_path,
                "summary": self.summary()}


def judge_items(items: Sequence[Item], judge: Judge, *, cache_path: str | Path | None = None,
                batch_size: int = DEFAULT_BATCH, progress: Progress | None = None,
                name: str | None = None) -> JudgingResult:
    """Judge ``items`` with ``judge``, taking what the cache already has and adding what it lacks.

    Args:
        items: the items, in the order the verdicts come back.
        judge: any ``Judge``.
        cache_path: the JSONL cache; None: no cache.
        batch_size: items judged between two cache writes (an interruption loses at most one batch).
        progress: ``progress(done, total)`` after the cache lookup and after every batch.
        name: the name written in the verdicts' ``judge`` column (default: the judge's).

    Returns:
        ``JudgingResult`` with one verdict per item.
    """
    cache = VerdictCache(cache_path) if cache_path is not None else None
    keys = [cache_key(judge, item) for item in items]
    found: dict[int, Verdict] = {}
    if cache is not None:
        found = {i: v for i, key in enumerate(keys) if (v := cache.get(key)) is not None}
    missing = [i for i in range(len(items)) if i not in found]
    total = len(items)
    if progress is not None:
        progress(len(found), total)
    for start in range(0, len(missing), max(1, batch_size)):
        batch = missing[start:start + batch_size]
        verdicts = judge.judge([items[i] for i in batch])
        if len(verdicts) != len(batch):
            raise RuntimeError(f"judge {judge.name} returned {len(verdicts)} verdicts for {len(batch)} items")
        if cache is not None:
            cache.add([(keys[i], judge, items[i], v) for i, v in zip(batch, verdicts, strict=True)])
        found.update(zip(batch, verdicts, strict=True))
        if progress is not None:
            progress(len(found), total)
    label = name or judge.name
    rows = [(item.key, found[i].model_copy(update={"judge": label})) for i, item in enumerate(items)]
    return JudgingResult(label, rows, n_judged=len(missing), n_cached=total - len(missing),
                         cache_path=str(cache_path) if cache_path is not None else None)


# ----------------------------------------------------------------------------- command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    judges = describe_judges()
    parser.add_argument("--items", required=True, help="items.jsonl to judge")
    argparse_options(JudgeRunConfig, parser, overrides={"judge": {
        "help": "one of: " + "; ".join(f"{name} ({text})" for name, text in judges.items())}})
    parser.add_argument("--head", default=None, help="minilm-logreg only: a head JSON (default: the shipped one)")
    parser.add_argument("--cache", default=None, help="JSONL cache file; a rerun judges only what it lacks")
    parser.add_argument("--out", required=True, help="verdicts.csv to write")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def run(args: argparse.Namespace) -> dict:
    """Run a safety judge over items and write its verdicts (verdicts.csv)."""
    config = JudgeRunConfig(**option_values(JudgeRunConfig, args))
    items = read_items(args.items)
    options = {"head": args.head} if args.head else {}
    try:
        judge = get_judge(config.judge, backend=config.backend, **options)
    except BackendError as exc:
        raise ValueError(str(exc)) from None
    try:
        with ProgressBar(f"judge {judge.name}", "item", enabled=not args.no_progress) as bar:
            result = judge_items(items, judge, cache_path=args.cache, batch_size=config.batch_size, progress=bar,
                                 name=config.name)
    except BackendError as exc:
        kept = f"; the verdicts judged so far are in {args.cache}: run again to resume" if args.cache else ""
        raise ValueError(f"{exc}{kept}") from None
    write_verdicts(result.rows, args.out)
    return {**result.to_dict(), "out": str(args.out), "items": str(args.items)}
