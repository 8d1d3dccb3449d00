"""What the HOI-Edit page shows: a benchmark folder's methods, their scores, and one item at a time.

A benchmark folder is upstream's layout (``docs/hoi.md``, "Method: Task and benchmark format"): the two annotation
JSONs and ``images/<split>/<key>``, each method's edits in ``<method>_frames/<split>/<key>`` (at
the top or under ``data/``, as upstream keeps them). This project adds, when present:
``records/<method>.json`` (HOI-Eval records, ``python -m engines.hoi evaluate``), an I2V method's
15 sampled frames in ``<method>_strips/<split>/<stem>/frame_NN.png`` and its SCPE traces in
``<method>_traces/<split>/<stem>.json``, ``methods.json`` (kind and label of each method) and
``votes.jsonl`` (arena votes). Everything here is plain data for the page and the benchmark
(``bench/hoi.py``); images are opened lazily and their thumbnails cached.
"""

from __future__ import annotations

import io
import json
import math
import statistics
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from engines.hoi.benchmark import LEVELS, Benchmark, BenchmarkItem, load_benchmark
from engines.hoi.drawing import annotate, scale_box
from engines.hoi.methods import method_sources
from engines.hoi.scoring import (
    PAPER_COLUMNS,
    EvalRecord,
    MethodRecords,
    Scores,
    compute_scores,
    iqa_scores,
    read_records,
)

JPEG_QUALITY = 85  # thumbnails as the page sends them: an eighth of a PNG's bytes, no visible loss at that size
SORTS = ("file order", "score (high first)", "score (low first)", "disagreement between methods")
VOTES_FILE = "votes.jsonl"


@dataclass(frozen=True)
class Method:
    """One editing method found in a benchmark folder."""

    name: str
    frames_dir: Path  # <method>_frames: <split>/<key> edited images (for I2V: the chosen frame)
    kind: str = "image_edit"  # "image_edit" | "i2v"
    label: str = ""
    description: str = ""
    offline: bool = False  # made by the project's offline defaults (the shipped demo)
    records_path: Path | None = None

    @property
    def strips_dir(self) -> Path:
        return self.frames_dir.with_name(f"{self.name}_strips")

    @property
    def traces_dir(self) -> Path:
        return self.frames_dir.with_name(f"{self.name}_traces")


@dataclass
class Workspace:
    """A benchmark folder read for browsing: its items, methods, records and scores."""

    benchmark: Benchmark
    methods: dict[str, Method]
    records: dict[str, MethodRecords] = field(default_factory=dict)  # method -> its records, when evaluated
    scores: dict[str, Scores] = field(default_factory=dict)
    extras: dict[str, dict[str, dict[str, dict]]] = field(default_factory=dict)  # method -> split -> key -> raw record
    problems: list[str] = field(default_factory=list)  # records files that could not be read, with why

    @property
    def root(self) -> Path:
        return self.benchmark.root

    @property
    def votes_path(self) -> Path:
        return self.root / VOTES_FILE


def open_workspace(root: str | Path, layers: Sequence[str | Path] = ()) -> Workspace:
    """Read a benchmark folder: items (:func:`~engines.hoi.benchmark.load_benchmark`), the methods
    with edits in it, and their records and scores where ``records/<method>.json`` exists.

    ``layers`` are folders in the same layout read over it, oldest first (the result folders of the
    jobs run on this benchmark, :func:`engines.hoi.methods.method_sources`): their methods are
    added, and their records replace older ones.

    A records file that does not read is reported in ``problems`` (file, key and field) and that
    method is shown unscored; the benchmark itself must read (its errors raise)."""
    benchmark = load_benchmark(root)
    root = benchmark.root
    methods: dict[str, Method] = {}
    for name, source in method_sources([root, *layers]).items():
        info = source.entry
        methods[name] = Method(name=name, frames_dir=source.frames_dir, kind=info.get("kind", "image_edit"),
                               label=info.get("label", name), description=info.get("description", ""),
                               offline=bool(info.get("offline", False)), records_path=source.records_path)
    workspace = Workspace(benchmark=benchmark, methods=methods)
    for name, method in methods.items():
        if method.records_path is None:
            continue
        try:
            records = read_records(method.records_path)
        except ValueError as error:
            workspace.problems.append(str(error))
            continue
        workspace.records[name] = records
        workspace.scores[name] = compute_scores(benchmark, records)
        raw = json.loads(method.records_path.read_text(encoding="utf-8-sig"))
        workspace.extras[name] = {split: raw.get(split) or {} for split in ("L1L2", "L3")}
    return workspace


# ---------------------------------------------------------------- leaderboard


def leaderboard_rows(workspace: Workspace, methods: list[str] | None = None) -> list[dict[str, Any]]:
    """The paper's table, one row per evaluated method: ``{"method", "L1 I", "L1 H", ..., "L3 O"}``
    (columns as the paper: L1 I, H, O; L2 and L3 I, I+Q&A, H, O), best L1 I first."""
    rows = []
    for name in methods if methods is not None else list(workspace.scores):
        scores = workspace.scores.get(name)
        if scores is None:
            continue
        row: dict[str, Any] = {"method": name}
        for entry in scores.paper_table():
            for column in PAPER_COLUMNS[entry["level"]]:
                row[f"{entry['level']} {column}"] = entry[column]
        rows.append(row)
    return sorted(rows, key=lambda r: -(r.get("L1 I") if r.get("L1 I") is not None else -1.0))


def tag_rows(workspace: Workspace, methods: list[str] | None = None) -> list[dict[str, Any]]:
    """Per tag and method: n, I, H, O and I+Q&A (HOI-Eval's per-tag table)."""
    rows = []
    for name in methods if methods is not None else list(workspace.scores):
        scores = workspace.scores.get(name)
        if scores is None:
            continue
        for split, tags in scores.tags.items():
            for tag, row in tags.items():
                rows.append({"method": name, "split": split, "tag": tag, "n": row.n, "I": row.I, "H": row.H,
                             "O": row.O, "I+Q&A": row.IQA})
    return rows


# ---------------------------------------------------------------- items


def item_matches(item: BenchmarkItem, level_or_tag: str | None) -> bool:
    """Whether an item is shown under a filter: a level ("L1", "L2", "L3"), a tag, or None (all)."""
    if not level_or_tag:
        return True
    if level_or_tag in LEVELS:
        return level_or_tag in item.levels
    return level_or_tag in item.tags


def item_score(workspace: Workspace, method: str, item: BenchmarkItem) -> float | None:
    """One number per (method, item) for sorting and badges: the mean I+Q&A over the item's tags
    (I itself for L1 items), None when the method has no usable record."""
    records = workspace.records.get(method)
    record = records.get(item.split, item.key) if records is not None else None
    values = [v for v in iqa_scores(item, record).values() if v is not None]
    return statistics.fmean(values) if values else None


def disagreement(workspace: Workspace, methods: list[str], item: BenchmarkItem) -> float | None:
    """How much the methods' item scores differ: their range (max - min); None with fewer than two."""
    values = [v for m in methods if (v := item_score(workspace, m, item)) is not None]
    return max(values) - min(values) if len(values) >= 2 else None


def list_items(workspace: Workspace, split: str, *, level_or_tag: str | None = None,
               methods: list[str] | None = None, sort: str = SORTS[0]) -> list[BenchmarkItem]:
    """The items of a split under a filter, in the chosen order (:data:`SORTS`); items a sort has
    no value for come last, in file order."""
    if sort not in SORTS:
        raise ValueError(f"unknown sort {sort!r}; choose one of {', '.join(SORTS)}")
    methods = list(workspace.methods) if methods is None else methods
    items = [item for item in workspace.benchmark.items(split) if item_matches(item, level_or_tag)]
    if sort == SORTS[0]:
        return items

    def value(item: BenchmarkItem) -> float | None:
        if sort == SORTS[3]:
            return disagreement(workspace, methods, item)
        scores = [v for m in methods if (v := item_score(workspace, m, item)) is not None]
        return statistics.fmean(scores) if scores else None

    keyed = [(value(item), index, item) for index, item in enumerate(items)]
    known = [k for k in keyed if k[0] is not None]
    unknown = [k for k in keyed if k[0] is None]
    reverse = sort != SORTS[2]
    known.sort(key=lambda k: (-k[0] if reverse else k[0], k[1]))
    return [k[2] for k in known + unknown]


@dataclass
class MethodOutput:
    """One method's edit of one item, with what HOI-Eval said about it."""

    method: str
    kind: str
    image_path: Path | None  # None: the method has no output for this item
    record: EvalRecord | None
    iqa: dict[str, float | None]
    score: float | None
    reasoning: str = ""
    person_box: list[float] | None = None
    object_box: list[float] | None = None
    strip: list[Path] = field(default_factory=list)  # an I2V method's sampled frames, in order
    selected_frame: int | None = None  # index into ``strip`` of the chosen frame
    trace: dict | None = None  # the SCPE trace, when the method has one


@dataclass
class ItemView:
    item: BenchmarkItem
    outputs: list[MethodOutput]


def _output_path(method: Method, item: BenchmarkItem) -> Path | None:
    path = method.frames_dir / item.split / item.key
    return path if path.is_file() else None


def _strip(method: Method, item: BenchmarkItem) -> list[Path]:
    folder = method.strips_dir / item.split / Path(item.key).stem
    return sorted(folder.glob("frame_*.png")) if folder.is_dir() else []


def _trace(method: Method, item: BenchmarkItem) -> dict | None:
    path = method.traces_dir / item.split / f"{Path(item.key).stem}.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        return {"status": "unreadable", "error": f"{path}: {error}"}


def item_images(workspace: Workspace, split: str, key: str, methods: list[str] | None = None
                ) -> tuple[Path | None, list[Path]]:
    """An item's source image and the chosen methods' edits of it (those that exist): what the
    item browser draws, without reading records, strips or traces."""
    item = workspace.benchmark.get(split, key)
    edits = [path for name in (methods if methods is not None else list(workspace.methods))
             if (path := _output_path(workspace.methods[name], item)) is not None]
    return item.image_path, edits


def item_view(workspace: Workspace, split: str, key: str, methods: list[str] | None = None) -> ItemView:
    """Everything the item browser shows for one item: each method's output, scores, the judge's
    reasoning and grounded boxes, an I2V method's frame strip with the chosen frame, its trace."""
    item = workspace.benchmark.get(split, key)
    outputs = []
    for name in methods if methods is not None else list(workspace.methods):
        method = workspace.methods[name]
        records = workspace.records.get(name)
        record = records.get(split, key) if records is not None else None
        raw = workspace.extras.get(name, {}).get(split, {}).get(key) or {}
        trace = _trace(method, item)
        selection = (trace or {}).get("selection") or {}
        strip = _strip(method, item)
        selected = selection.get("best_frame_index")
        outputs.append(MethodOutput(
            method=name, kind=method.kind, image_path=_output_path(method, item), record=record,
            iqa=iqa_scores(item, record), score=item_score(workspace, name, item),
            reasoning=str(raw.get("reasoning", "")), person_box=raw.get("person_box"),
            object_box=raw.get("object_box"), strip=strip,
            selected_frame=selected if isinstance(selected, int) and 0 <= selected < len(strip) else None,
            trace=trace))
    return ItemView(item=item, outputs=outputs)


# ---------------------------------------------------------------- thumbnails


class ThumbnailCache:
    """Thumbnails of images by (path, modification time, size), least recently used dropped first.

    The item browser shows a source and up to a dozen edits per item; decoding full images on
    every rerun is what makes paging slow, so each is decoded and shrunk once. ``jpeg`` keeps the
    thumbnail encoded as the page sends it: a Pillow image given to ``st.image`` is encoded again
    (as PNG, several times the bytes) on every rerun, encoded bytes are sent as they are. Shared
    by every session of the server, so it takes a lock."""

    def __init__(self, max_entries: int = 2048):
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple, Image.Image | bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._warmer: ThreadPoolExecutor | None = None

    def _cached(self, key: tuple, make):
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
                return value
        value = make()  # outside the lock: another session's thumbnail need not wait for this one
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return value

    def get(self, path: str | Path, size: int = 256) -> Image.Image:
        """The image at ``path`` shrunk to fit ``size`` x ``size`` (RGB)."""
        path = Path(path)
        return self._cached(("image", str(path), path.stat().st_mtime_ns, size), lambda: self._shrink(path, size))

    def jpeg(self, path: str | Path, size: int = 256, *, item: BenchmarkItem | None = None) -> bytes:
        """``get``'s thumbnail as JPEG bytes; with ``item``, its annotated boxes drawn on it (the
        item's source image: person blue, object red, tool yellow)."""
        path = Path(path)
        drawn = None if item is None else (item.subject_box, item.object_box, item.tool_box)
        key = ("jpeg", str(path), path.stat().st_mtime_ns, size, repr(drawn))
        # Shrunk afresh rather than through ``get``: only the bytes are kept (some 15 kB, where the
        # decoded thumbnail takes 230 kB), so the cache holds a whole benchmark's thumbnails.
        return self._cached(key, lambda: self._encode(self._shrink(path, size), item))

    def warm(self, wanted: Iterable[tuple[Path, int, BenchmarkItem | None]]) -> Future:
        """Make ``jpeg(path, size, item=item)`` of each of ``wanted`` in a background thread (one,
        shared), so that the item a person pages to next is drawn from the cache. Returns a future
        done once everything asked for so far is made; a file that does not open is left to the page
        to report."""
        with self._lock:
            if self._warmer is None:
                self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hoi-thumbnails")
        for path, size, item in wanted:
            self._warmer.submit(self._warm_one, path, size, item)
        return self._warmer.submit(lambda: None)  # one thread, in order: done after the others

    def _warm_one(self, path: Path, size: int, item: BenchmarkItem | None) -> None:
        try:
            self.jpeg(path, size, item=item)
        except (OSError, ValueError):
            pass  # shown as missing or unreadable when the page asks for it

    @staticmethod
    def _shrink(path: Path, size: int) -> Image.Image:
        with Image.open(path) as opened:
            opened.draft("RGB", (size, size))  # JPEG: decode at a reduced scale, far cheaper
            image = opened.convert("RGB")
        image.thumbnail((size, size))
        return image

    @staticmethod
    def _encode(image: Image.Image, item: BenchmarkItem | None) -> bytes:
        if item is not None:
            image = annotate(image, **boxes_at(item, image.size))
        buffer = io.BytesIO()
        image.save(buffer, format="JPEG", quality=JPEG_QUALITY)
        return buffer.getvalue()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


THUMBNAILS = ThumbnailCache()


def boxes_at(item: BenchmarkItem, size: tuple[int, int]) -> dict[str, list[float] | None]:
    """The item's annotated boxes (original pixels) scaled to an image of ``size`` (a thumbnail),
    as keyword arguments of :func:`engines.hoi.drawing.annotate`."""
    with Image.open(item.image_path) as original:
        original_size = original.size

    def scaled(box):
        return None if box is None else scale_box(box, original_size, size)

    return {"subject_box": scaled(item.subject_box), "object_box": scaled(item.object_box),
            "tool_box": scaled(item.tool_box)}


def format_score(value: float | None) -> str:
    """A score as the page shows it: four decimals as upstream prints them, "n/a" when missing."""
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"


def level_filters(workspace: Workspace, split: str) -> list[str]:
    """The filters offered for a split: its levels, then its tags."""
    return list(workspace.benchmark.level_counts(split)) + list(workspace.benchmark.tag_counts(split))
