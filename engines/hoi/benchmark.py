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

import functools
import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PlainValidator, model_validator

from engines.platform.files import echo
from engines.platform.formats import FieldProblem, FilledText, FormatError, validated

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


class BenchmarkFormatError(FormatError):
    """An annotation file (or benchmark directory) that cannot be read; the message names the file,
    the item's key and the upstream field, when known (``path``, ``key``, ``field``)."""

    def __init__(self, field: str, problem: str, source: str = "", *, line: int | None = None,
                 path: str | Path | None = None, key: str | None = None) -> None:
        self.path, self.key = path, key
        if not source and path is not None:
            source = str(path) + (f", key {echo(key)}" if key is not None else "")
        super().__init__(field, problem, source, line=line)


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


# ---------------------------------------------------------------- one item, as upstream writes it


def _box_value(value: Any) -> Box:
    """Four finite numbers x1, y1, x2, y2 with x1 <= x2 and y1 <= y2 (no text, no true/false)."""
    if not isinstance(value, list | tuple) or len(value) != 4 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value
    ):
        raise ValueError(f"must be a box [x1, y1, x2, y2] of four numbers (got {echo(value)})")
    x1, y1, x2, y2 = value
    if x2 < x1 or y2 < y1:
        raise ValueError(f"box {echo(list(value))} ends before it starts (needs x1 <= x2 and y1 <= y2)")
    return (x1, y1, x2, y2)


def _tool_box_value(value: Any) -> Box | None:
    """``tool_bboxes``: absent as null, ``""`` or ``[]``; a box, one box in a list, or a box written as
    text (upstream's QA script parses ``"[2, 1146, 203, 1482]"`` too)."""
    if value is None or value == [] or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise ValueError(f"must be a box [x1, y1, x2, y2] (got the text {echo(value)})") from None
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    return _box_value(value)


def _tag_list(value: Any) -> list[str]:
    """Tags as the file lists them: a comma-separated text (upstream) or a list of texts; each must
    start with L1-, L2- or L3-."""
    if isinstance(value, str):
        tags = parse_tags(value)
    elif isinstance(value, list) and all(isinstance(tag, str) for tag in value):
        tags = [tag.strip() for tag in value if tag.strip()]
    else:
        raise ValueError(f"must be comma-separated tags (got {echo(value)})")
    for tag in tags:
        level_of(tag)  # its ValueError names the tag
    return tags


def _question_list(value: Any) -> Any:
    """``question_v6``: a list of texts, ``""`` (none) or one text (upstream ``normalize_questions``)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return value  # each checked as text, by its position
    raise ValueError(f"must be a list of questions, a question or \"\" (got {_kind(value)})")


def _kind(value: Any) -> str:
    return "an object" if isinstance(value, dict) else echo(value)


BoxField = Annotated[Box, PlainValidator(_box_value)]
Tags = Annotated[list[str] | None, BeforeValidator(lambda v: None if v is None else _tag_list(v))]


class UpstreamItem(BaseModel):
    """One item of an upstream annotation file, its fields as upstream names them; other (legacy)
    fields are ignored."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)

    instruction: FilledText
    object_name: FilledText = Field(alias="object")
    subject_bounding_box: BoxField
    object_bounding_box: BoxField
    generated_question: str | None = None
    tools: str | None = None
    tool_bboxes: Annotated[Box | None, PlainValidator(_tool_box_value)] = None
    tags_v6: Tags = None
    tag: Tags = None  # legacy (v4-era) tags: read only when there is no tags_v6
    question_v6: Annotated[list[str], BeforeValidator(_question_list)] = []

    @model_validator(mode="after")
    def _has_tags(self) -> UpstreamItem:
        if self.tags_v6 is None and self.tag is None:
            raise FieldProblem("tags_v6", "is missing (and no legacy 'tag' either)")
        return self


def _item(record: Any, path: Path, key: str, split: str, image_path: Path | None, *,
          looked_for_image: bool) -> BenchmarkItem:
    raw = validated(UpstreamItem, record, format_name="a HOI-Edit item",
                    error=functools.partial(BenchmarkFormatError, path=path, key=key))
    notes: list[str] = []
    question = raw.generated_question if raw.generated_question and raw.generated_question.strip() else None
    if question is None:
        notes.append("no generated_question (upstream then writes one from the instruction)")
    tool_name = (raw.tools.strip() or None) if raw.tools is not None else None
    if isinstance(record.get("tool_bboxes"), str) and raw.tool_bboxes is not None:
        notes.append("tool_bboxes written as text")
    if raw.tool_bboxes is not None and tool_name is None:
        notes.append("a tool box without a tool name")
    if raw.tags_v6 is not None:
        listed, tags_field = raw.tags_v6, "tags_v6"
    else:
        listed, tags_field = raw.tag, "tag"
        notes.append("no tags_v6; tags from the legacy 'tag' field (upstream's scorer counts this item in no tag)")
    tags = tuple(dict.fromkeys(listed))
    if len(tags) < len(listed):
        repeated = sorted(tag for tag, n in Counter(listed).items() if n > 1)
        notes.append(f"{tags_field} repeats {', '.join(repeated)}; each kept once")
    if not tags:
        notes.append(f"{tags_field} is empty: the item counts in no tag and no level")
    questions = tuple(text.strip() for text in raw.question_v6 if text.strip())
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
        key=key, split=split, image_path=image_path, instruction=raw.instruction, object_name=raw.object_name,
        subject_box=raw.subject_bounding_box, object_box=raw.object_bounding_box, tool_name=tool_name,
        tool_box=raw.tool_bboxes, tags=tags, levels=tuple(sorted({level_of(tag) for tag in tags})),
        interaction_question=question, aux_questions=aux, questions=questions, tags_field=tags_field,
        note="; ".join(notes) or None,
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
        raise BenchmarkFormatError("", f"must be a JSON object keyed by image file name (got {_json_kind(data)})",
                                   path=path)
    images = Path(image_root) / split if image_root is not None else None
    items = []
    for key, record in data.items():
        if not key.strip() or "/" in key or "\\" in key or key in (".", ".."):
            raise BenchmarkFormatError("", "a key must be an image file name", path=path, key=key)
        image = images / key if images is not None and (images / key).is_file() else None
        items.append(_item(record, path, key, split, image, looked_for_image=images is not None))
    return items


def _json_kind(value: Any) -> str:
    return {list: "a list", str: "text", dict: "an object"}.get(type(value), type(value).__name__)


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BenchmarkFormatError("", f"not UTF-8 text ({exc.reason} at byte {exc.start})", path=path) from None
    except OSError as exc:
        raise BenchmarkFormatError("", f"cannot read ({exc.strerror or exc})", path=path) from None
    try:
        return json.loads(text, object_pairs_hook=_no_repeated_names)
    except _RepeatedName as exc:
        # json.loads would keep the last of two items of one key silently.
        raise BenchmarkFormatError("", f"the name {echo(exc.name)} appears twice in one JSON object (an item key "
                                   "or a field given twice)", path=path) from None
    except json.JSONDecodeError as exc:
        raise BenchmarkFormatError("", f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})",
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
        raise BenchmarkFormatError("", "not a directory", path=root)
    files = {split: path for split in SPLITS if (path := find_annotation_file(root, split)) is not None}
    if not files:
        looked = " or ".join(ANNOTATION_FILES.values())
        raise BenchmarkFormatError("", f"no HOI-Edit annotation file ({looked}, at the top or under data/)", path=root)
    by_split = {
        split: {item.key: item for item in read_annotations(path, split, image_root=root / "images")}
        for split, path in files.items()
    }
    return Benchmark(root=root, files=files, by_split=by_split)
