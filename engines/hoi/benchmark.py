"""HOI-Edit benchmark items, read verbatim from the two upstream annotation files.

HOI-Edit (ICML 2026; code ``oceanflowlab/HOI-Edit``, commit ``4022133``) ships its items as
``data/collected_annotations_bboxes_v7_{L1L2,L3}_questions_scoring_final.json`` (499 L1/L2 items,
136 L3 items), each a JSON object keyed by the image's file name (``docs/hoi.md``, "Method: Task and
benchmark format")::

    "<image file name>": {
        "instruction": "Make the person pick up the can",
        "object": "can",
        "subject_bounding_box": [x1, y1, x2, y2],   # the person (blue box), original pixels
        "object_bounding_box": [x1, y1, x2, y2],    # the object (red box)
        "generated_question": "Has the person in the blue bounding box picked up the can in the red bounding box?",
        "tools": "tong" | "",                       # a tool (yellow box), often absent in L3
        "tool_bboxes": [x1, y1, x2, y2] | [],
        "tags_v6": "L1-interaction-relation_occur, L2-location_understanding-specific_pos_end",
        "question_v6": ["Has the can been put into the bowl?"] | "" | "one question",
        "tag": [...], "question": [...] | ""        # legacy (v4-era) tags and questions, not scored
    }

Tags are ``L1-interaction-relation_{occur,not_occur,change_only}``,
``L2-location_understanding-specific_pos_{initial,end}``, ``L3-non_rigid_change`` and
``L3-reasoning_process``; an item's levels are the ``L1``/``L2``/``L3`` prefixes of its tags.

**Which question belongs to which tag** (upstream ``evaluation/compute_scoring_final_scores.py``):
L1 tags and ``...specific_pos_initial`` are judged by the interaction question alone; every other
tag, in ``tags_v6`` order, takes the next ``question_v6`` question::

    other_tags = [t for t in tags if not t.startswith("L1-") and t != POS_INITIAL]
    aux_questions[other_tags[i]] = question_v6[i]

A tag with no question left has none (its I+Q&A is skipped when scored); questions beyond the
tags are kept in :attr:`BenchmarkItem.questions` (upstream asks them too) but belong to no tag.

**Release bug.** Upstream's HOI-check script
(``evaluation/gemini3_final_hoicheck_new_noquestion_track_google_newsim.py``) reads ``tags_v4``,
skips an item whose ``tags_v4`` is empty and picks the ``similarity_first`` mode from it; the
shipped JSONs only have ``tags_v6``, so as released every item is skipped. Everything here reads
``tags_v6``.

:func:`load_benchmark` reads a benchmark directory holding either file or both (at its top or
under ``data/``) and the images under ``images/L1L2/<key>`` and ``images/L3/<key>``. Every item is
checked; a bad one raises :class:`BenchmarkFormatError` naming the file, the item's key and the
upstream field, and nothing of the file is returned. What is odd but readable (tags only in the
legacy ``tag`` field, an empty ``tags_v6``, more questions than tags...) is said in
:attr:`BenchmarkItem.note`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines.platform.files import echo

SPLITS = ("L1L2", "L3")
LEVELS = ("L1", "L2", "L3")
ANNOTATION_FILES = {
    "L1L2": "collected_annotations_bboxes_v7_L1L2_questions_scoring_final.json",
    "L3": "collected_annotations_bboxes_v7_L3_questions_scoring_final.json",
}
# Judged by the interaction question alone, like the L1 tags: where the object starts is what the
# instruction names, so there is nothing further to ask (upstream's POS_INITIAL).
POS_INITIAL = "L2-location_understanding-specific_pos_initial"
# The v6 tags, in the order upstream's scorer reports them (TAGS_L1L2 then TAGS_L3).
TAGS = (
    "L1-interaction-relation_change_only",
    "L1-interaction-relation_not_occur",
    "L1-interaction-relation_occur",
    "L2-location_understanding-specific_pos_end",
    "L2-location_understanding-specific_pos_initial",
    "L3-non_rigid_change",
    "L3-reasoning_process",
)
# Upstream splits tags_v6 on ASCII and full-width commas (parse_tags).
_TAG_SEPARATOR = re.compile(r"[,\uff0c]")


class BenchmarkFormatError(ValueError):
    """An annotation file (or benchmark directory) that cannot be read; the message names the file,
    the item's key and the upstream field, when known."""

    def __init__(self, problem: str, *, path: str | Path | None = None, key: str | None = None,
                 field: str | None = None) -> None:
        self.problem, self.path, self.key, self.field = problem, path, key, field
        where = [str(path)] if path is not None else []
        where += [f"key {echo(key)}"] if key is not None else []
        where += [f"field {echo(field)}"] if field else []
        super().__init__(f"{', '.join(where)}: {problem}" if where else problem)


Box = tuple[float, float, float, float]  # (x1, y1, x2, y2) in the original image's pixels


@dataclass(frozen=True)
class BenchmarkItem:
    """One HOI-Edit item: an image, an edit instruction and what the edit is judged on."""

    key: str  # the image's file name, the JSON key
    split: str  # "L1L2" or "L3": the file it came from
    image_path: Path | None  # images/<split>/<key>; None when the file is not there
    instruction: str  # upstream "instruction"
    object_name: str  # upstream "object"
    subject_box: Box  # upstream "subject_bounding_box": the person, drawn blue
    object_box: Box  # upstream "object_bounding_box": the object, drawn red
    tool_name: str | None  # upstream "tools"; None when empty or absent
    tool_box: Box | None  # upstream "tool_bboxes", drawn yellow; None when empty or absent
    tags: tuple[str, ...]  # upstream "tags_v6", split on commas, each once, in file order
    levels: tuple[str, ...]  # sorted "L1"/"L2"/"L3" prefixes of the tags
    interaction_question: str | None  # upstream "generated_question": I is its max yes-confidence
    aux_questions: dict[str, str] = field(default_factory=dict)  # tag -> its question_v6 question
    questions: tuple[str, ...] = ()  # every question_v6 question, stripped, blanks left out
    tags_field: str = "tags_v6"  # where the tags came from: "tags_v6", or the legacy "tag"
    note: str | None = None  # what was odd but readable

    def question_for(self, tag: str) -> str | None:
        """The question judging ``tag`` beyond the interaction (None for L1 tags and ``pos_initial``,
        and for a tag the file gives no question)."""
        return self.aux_questions.get(tag)


# ---------------------------------------------------------------- tags and questions, as upstream's scorer reads them


def parse_tags(text: str | None) -> list[str]:
    """The tags of a ``tags_v6`` string: split on commas (ASCII or full-width), stripped, blanks
    left out (upstream ``parse_tags``)."""
    return [tag.strip() for tag in _TAG_SEPARATOR.split(text or "") if tag.strip()]


def level_of(tag: str) -> str:
    """``"L1"``, ``"L2"`` or ``"L3"`` from a tag's prefix; ``ValueError`` for any other prefix."""
    level = tag.split("-", 1)[0]
    if level not in LEVELS or not tag.startswith(f"{level}-"):
        raise ValueError(f"tag {echo(tag)} does not start with L1-, L2- or L3-")
    return level


def judged_by_interaction(tag: str) -> bool:
    """True for the tags whose I+Q&A is I itself: the L1 tags and ``...specific_pos_initial``."""
    return tag.startswith("L1-") or tag == POS_INITIAL


def other_tags(tags: list[str] | tuple[str, ...]) -> list[str]:
    """The tags that take a ``question_v6`` question, in order (upstream ``other_tags``)."""
    return [tag for tag in tags if not judged_by_interaction(tag)]


# ---------------------------------------------------------------- reading one item


@dataclass(frozen=True)
class _Where:
    path: Path
    key: str

    def error(self, field: str | None, problem: str) -> BenchmarkFormatError:
        return BenchmarkFormatError(problem, path=self.path, key=self.key, field=field)


def _required(record: dict, where: _Where, name: str) -> Any:
    if record.get(name) is None:
        raise where.error(name, "missing")
    return record[name]


def _text(record: dict, where: _Where, name: str, *, required: bool = True) -> str | None:
    if name not in record or record[name] is None:
        if required:
            raise where.error(name, "missing")
        return None
    value = record[name]
    if not isinstance(value, str):
        raise where.error(name, f"expected text, got {echo(value)}")
    return value


def _box(value: Any, where: _Where, name: str) -> Box:
    """Four finite numbers x1, y1, x2, y2 with x1 <= x2 and y1 <= y2."""
    if not isinstance(value, list | tuple) or len(value) != 4 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise where.error(name, f"expected a box [x1, y1, x2, y2] of four numbers, got {echo(value)}")
    x1, y1, x2, y2 = value
    if x2 < x1 or y2 < y1:
        raise where.error(name, f"box {echo(list(value))} ends before it starts (needs x1 <= x2 and y1 <= y2)")
    return (x1, y1, x2, y2)


def _tool(record: dict, where: _Where, notes: list[str]) -> tuple[str | None, Box | None]:
    name = _text(record, where, "tools", required=False)
    name = (name.strip() or None) if name is not None else None
    raw = record.get("tool_bboxes")
    if raw is None or raw == [] or raw == "":
        return name, None
    if isinstance(raw, str):
        # Upstream's QA script also parses a box written as text ("[2, 1146, 203, 1482]").
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise where.error("tool_bboxes", f"expected a box [x1, y1, x2, y2], got the text {echo(raw)}") from None
        notes.append("tool_bboxes written as text")
    if isinstance(raw, list) and len(raw) == 1 and isinstance(raw[0], list):
        raw = raw[0]  # one box in a list of boxes
    box = _box(raw, where, "tool_bboxes")
    if name is None:
        notes.append("a tool box without a tool name")
    return name, box


def _tags(record: dict, where: _Where, notes: list[str]) -> tuple[list[str], str]:
    """The tags as the file lists them (a repeat noted; the caller keeps each once) and the field they came from."""
    if "tags_v6" in record and record["tags_v6"] is not None:
        name, raw = "tags_v6", record["tags_v6"]
    elif record.get("tag") is not None:
        name, raw = "tag", record["tag"]
        notes.append("no tags_v6; tags from the legacy 'tag' field (upstream's scorer counts this item in no tag)")
    else:
        raise where.error("tags_v6", "missing (and no legacy 'tag' either)")
    if isinstance(raw, str):
        tags = parse_tags(raw)
    elif isinstance(raw, list) and all(isinstance(tag, str) for tag in raw):
        tags = [tag.strip() for tag in raw if tag.strip()]
    else:
        raise where.error(name, f"expected comma-separated tags, got {echo(raw)}")
    for tag in tags:
        try:
            level_of(tag)
        except ValueError as exc:
            raise where.error(name, str(exc)) from None
    unique = list(dict.fromkeys(tags))
    if len(unique) < len(tags):
        repeated = sorted(tag for tag, n in Counter(tags).items() if n > 1)
        notes.append(f"{name} repeats {', '.join(repeated)}; each kept once")
    if not unique:
        notes.append(f"{name} is empty: the item counts in no tag and no level")
    return tags, name


def _questions(record: dict, where: _Where) -> tuple[str, ...]:
    """``question_v6``: a list of texts, ``""`` (none) or one text; stripped, blanks left out
    (upstream ``normalize_questions``, which the tag alignment depends on)."""
    raw = record.get("question_v6")
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw.strip(),) if raw.strip() else ()
    if isinstance(raw, list):
        for i, question in enumerate(raw):
            if not isinstance(question, str):
                raise where.error(f"question_v6[{i}]", f"expected text, got {echo(question)}")
        return tuple(question.strip() for question in raw if question.strip())
    raise where.error("question_v6", f"expected a list of questions, a question or \"\", got {echo(raw)}")


def _item(record: Any, where: _Where, split: str, image_path: Path | None, *, looked_for_image: bool) -> BenchmarkItem:
    if not isinstance(record, dict):
        raise where.error(None, f"expected a JSON object, got {type(record).__name__}")
    notes: list[str] = []
    instruction = _text(record, where, "instruction")
    if not instruction.strip():
        raise where.error("instruction", "empty")
    object_name = _text(record, where, "object")
    if not object_name.strip():
        raise where.error("object", "empty")
    subject_box = _box(_required(record, where, "subject_bounding_box"), where, "subject_bounding_box")
    object_box = _box(_required(record, where, "object_bounding_box"), where, "object_bounding_box")
    question = _text(record, where, "generated_question", required=False)
    if question is None or not question.strip():
        question = None
        notes.append("no generated_question (upstream then writes one from the instruction)")
    tool_name, tool_box = _tool(record, where, notes)
    listed, tags_field = _tags(record, where, notes)
    tags = tuple(dict.fromkeys(listed))
    questions = _questions(record, where)
    # Question i belongs to the i-th tag that takes one, counted over the tags as the file lists
    # them (upstream indexes other_tags of the raw list); a repeated tag keeps its first question.
    takers = other_tags(listed)
    aux: dict[str, str] = {}
    for tag, text in zip(takers, questions, strict=False):
        aux.setdefault(tag, text)
    if len(questions) < len(takers):
        notes.append(f"{len(takers)} tags take a question_v6 question but there are {len(questions)}: "
                     f"{', '.join(takers[len(questions):])} without one")
    elif len(questions) > len(takers):
        notes.append(f"{len(questions) - len(takers)} question_v6 question(s) beyond the tags that take one")
    if image_path is None and looked_for_image:
        notes.append(f"image not found under images/{split}/")
    return BenchmarkItem(
        key=where.key, split=split, image_path=image_path, instruction=instruction, object_name=object_name,
        subject_box=subject_box, object_box=object_box, tool_name=tool_name, tool_box=tool_box, tags=tags,
        levels=tuple(sorted({level_of(tag) for tag in tags})), interaction_question=question,
        aux_questions=aux, questions=questions, tags_field=tags_field, note="; ".join(notes) or None,
    )


# ---------------------------------------------------------------- reading files


def read_annotations(path: str | Path, split: str, *, image_root: str | Path | None = None) -> list[BenchmarkItem]:
    """The items of one annotation file, in file order.

    Args:
        path: an upstream ``collected_annotations_bboxes_v7_*_questions_scoring_final.json``.
        split: ``"L1L2"`` or ``"L3"``, the file's split.
        image_root: the folder holding ``<split>/<key>`` images (a benchmark's ``images/``);
            None leaves every ``image_path`` None.

    Raises:
        BenchmarkFormatError: naming the file, the item's key and the field.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown split {echo(split)} (one of {', '.join(SPLITS)})")
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict):
        raise BenchmarkFormatError(f"expected a JSON object keyed by image file name, got {type(data).__name__}",
                                   path=path)
    images = Path(image_root) / split if image_root is not None else None
    items = []
    for key, record in data.items():
        where = _Where(path, key)
        if not key.strip() or "/" in key or "\\" in key or key in (".", ".."):
            raise where.error(None, "a key must be an image file name")
        image = images / key if images is not None and (images / key).is_file() else None
        items.append(_item(record, where, split, image, looked_for_image=images is not None))
    return items


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise BenchmarkFormatError(f"cannot read ({exc.strerror or exc})", path=path) from None
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_names)
    except _RepeatedName as exc:
        # json.loads would keep the last of two items of one key silently.
        raise BenchmarkFormatError(f"the name {echo(exc.name)} appears twice in one JSON object (an item key "
                                   "or a field given twice)", path=path) from None
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError(f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
                                   path=path) from None


class _RepeatedName(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _no_repeated_names(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) < len(names):
        raise _RepeatedName(next(name for name, n in Counter(names).items() if n > 1))
    return dict(pairs)


def find_annotation_file(root: str | Path, split: str) -> Path | None:
    """The split's annotation file in a benchmark directory: at its top, else under ``data/`` (the
    upstream repository's place); None when neither exists."""
    root = Path(root)
    for candidate in (root / ANNOTATION_FILES[split], root / "data" / ANNOTATION_FILES[split]):
        if candidate.is_file():
            return candidate
    return None


@dataclass(frozen=True)
class Benchmark:
    """The HOI-Edit items of a benchmark directory, kept per split.

    The same image can appear in both files, as different items (different tags and questions);
    it is then two items, one per split, never merged.
    """

    root: Path
    files: dict[str, Path]  # split -> the annotation file read
    by_split: dict[str, dict[str, BenchmarkItem]]  # split -> key -> item, in file order

    def __len__(self) -> int:
        return sum(len(items) for items in self.by_split.values())

    def __iter__(self) -> Iterator[BenchmarkItem]:
        return iter(self.items())

    @property
    def splits(self) -> tuple[str, ...]:
        """The splits whose file was found, in :data:`SPLITS` order."""
        return tuple(split for split in SPLITS if split in self.by_split)

    def items(self, split: str | None = None) -> list[BenchmarkItem]:
        """The items of ``split`` (``"L1L2"`` or ``"L3"``), or of every split read, in file order."""
        if split is None:
            return [item for name in self.splits for item in self.by_split[name].values()]
        _check_split(split)
        return list(self.by_split.get(split, {}).values())

    def get(self, split: str, key: str) -> BenchmarkItem:
        """The item ``key`` of ``split``; ``KeyError`` naming both when there is none."""
        _check_split(split)
        try:
            return self.by_split.get(split, {})[key]
        except KeyError:
            raise KeyError(f"no item {echo(key)} in split {split}") from None

    def split_counts(self) -> dict[str, int]:
        """Items per split read."""
        return {split: len(self.by_split[split]) for split in self.splits}

    def level_counts(self, split: str | None = None) -> dict[str, int]:
        """Items having any tag of each level (an item with L1 and L2 tags counts in both)."""
        counts = Counter(level for item in self.items(split) for level in item.levels)
        return {level: counts[level] for level in LEVELS if counts[level]}

    def tag_counts(self, split: str | None = None) -> dict[str, int]:
        """Items per tag: the known tags in upstream's order, then any others alphabetically."""
        counts = Counter(tag for item in self.items(split) for tag in item.tags)
        order = [tag for tag in TAGS if tag in counts] + sorted(set(counts) - set(TAGS))
        return {tag: counts[tag] for tag in order}


def _check_split(split: str) -> None:
    if split not in SPLITS:
        raise ValueError(f"unknown split {echo(split)} (one of {', '.join(SPLITS)})")


def load_benchmark(root: str | Path) -> Benchmark:
    """Read a HOI-Edit benchmark directory.

    Looks for each split's annotation file (:data:`ANNOTATION_FILES`) at the top of ``root`` or
    under ``root/data/``; either may be absent, not both. Images are looked up as
    ``root/images/<split>/<key>``; an item whose image is missing has ``image_path=None``.

    Args:
        root: the benchmark directory.

    Returns:
        A :class:`Benchmark` holding the items of every file found.

    Raises:
        BenchmarkFormatError: no annotation file, or any item's error (naming file, key and field).

    Examples::

        >>> bench = load_benchmark("data/hoi_edit")                       # doctest: +SKIP
        >>> bench.split_counts()                                           # doctest: +SKIP
        {'L1L2': 499, 'L3': 136}
        >>> bench.get("L3", "some image.jpg").aux_questions               # doctest: +SKIP
        {'L3-reasoning_process': "Is the knife out of the person's hand?"}
    """
    root = Path(root)
    if not root.is_dir():
        raise BenchmarkFormatError("not a directory", path=root)
    files = {split: path for split in SPLITS if (path := find_annotation_file(root, split)) is not None}
    if not files:
        looked = " or ".join(ANNOTATION_FILES.values())
        raise BenchmarkFormatError(f"no HOI-Edit annotation file ({looked}, at the top or under data/)", path=root)
    by_split = {
        split: {item.key: item for item in read_annotations(path, split, image_root=root / "images")}
        for split, path in files.items()
    }
    return Benchmark(root=root, files=files, by_split=by_split)
