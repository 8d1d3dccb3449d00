"""SCPE's prompt playbook: strategies, templates and pitfalls that the prompt generator reads.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``, ``scpe/scripts/ace_i2v_official3.py``; ``docs/hoi.md``,
"Method: SCPE") learns the playbook ACE-style: after a failed video the reflector writes an abstract
insight, the curator turns it into operations ``{type: "ADD", section, content}``, and the merger appends each
entry its section does not hold yet ("incremental update, against context collapse"). When
learning ends, the playbook is normalized: strategies phrased as something to prevent or avoid
move to the pitfalls, and every entry is numbered again.

A playbook file is upstream's JSON, read and written as is, so upstream's seeds and learned
playbooks load here and this project's load in upstream's scripts::

    {"strategies": ["[strategy-001]: The video prompt must describe ...", ...],
     "templates":  ["[template-001]: A {camera_angle} shot, ..."],
     "pitfalls":   ["[pitfall-001]: Pitfall: Using vague verbs ...", ...]}

Entries are kept here without their ``[section-NNN]:`` ids; the ids are the entries' positions,
written out again by :meth:`Playbook.to_dict` (upstream numbers them by position too when it
normalizes). The project's seed is ``assets/hoi/playbook_seed.json`` (a handful of strategies, one
template and ten pitfalls about I2V edits of human–object interactions); upstream's seed
(``scpe/data/playbook_seed_en.json``: 26 strategies, 1 template, 42 pitfalls) can be passed to
``python -m engines.hoi scpe --playbook FILE`` instead.
"""

from __future__ import annotations

import copy
import json
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict

from engines.hoi.roles import PlaybookOperation
from engines.platform.files import echo
from engines.platform.formats import FormatError, read_json, validated

SECTIONS = ("strategies", "templates", "pitfalls")
OPERATION_TYPES = ("ADD",)  # the only operation upstream's merger applies
SEED_PATH = Path(__file__).resolve().parents[2] / "assets" / "hoi" / "playbook_seed.json"

# An entry's id as upstream writes it: "[strategy-001]: ", "[pitfall-12]:" (any section word).
_ID_PREFIX = re.compile(r"^\s*\[[A-Za-z]+-\d+\]\s*:\s*")
# The label upstream's normalizer puts before a pitfall; not part of what the entry says.
_LABEL_PREFIX = re.compile(r"^\s*(pitfall|strategy|template)\s*:\s*|^\s*(陷阱|策略)\s*[:：]\s*", re.IGNORECASE)
_ID_WORD = {"strategies": "strategy", "templates": "template", "pitfalls": "pitfall"}
# Upstream's PITFALL_MOVE_RE (both languages): a strategy written as what the video must not do
# is a pitfall. A strategy that merely mentions avoiding something on the way ("use strong
# directional language to avoid confusion") stays, as upstream keeps it.
_UPSTREAM_MOVE = re.compile(r"为防止|以防止|防止|以避免|避免模型|"
                            r"to prevent|in order to prevent|prevent the model|avoid the model", re.IGNORECASE)
# Added here: a strategy that opens with "Avoid ..." or "Prevent ..." is a warning by its form.
_OPENS_AS_WARNING = re.compile(r"^\s*(avoid|prevent)\b", re.IGNORECASE)
_PUNCTUATION = str.maketrans({character: " " for character in string.punctuation + "，。：；！？、（）“”‘’"})


class PlaybookFormatError(FormatError):
    """A playbook file or a curator operation that cannot be used; the message says where."""


def strip_id(entry: str) -> str:
    """The entry without upstream's ``[section-NNN]:`` id."""
    return _ID_PREFIX.sub("", entry, count=1).strip()


def entry_key(entry: str) -> str:
    """What two entries are compared by: id and leading "Pitfall:" label dropped, case folded,
    punctuation and runs of whitespace made one space. Upstream compares raw strings, so a curator
    that repeats an entry with other capitals or a final full stop grew the playbook each epoch."""
    body = _LABEL_PREFIX.sub("", strip_id(entry), count=1)
    return " ".join(body.casefold().translate(_PUNCTUATION).split())


def _pitfall_style(body: str) -> str:
    """``Pitfall: body`` (``陷阱：body`` for Chinese), as upstream's ``_ensure_pitfall_style``."""
    if body.lower().startswith("pitfall:") or body.startswith(("陷阱：", "陷阱:")):
        return body
    return f"陷阱：{body}" if re.search(r"[\u4e00-\u9fff]", body) else f"Pitfall: {body}"


def moves_to_pitfalls(strategy: str) -> bool:
    """True when a strategy is phrased as something to prevent or avoid (see :meth:`Playbook.normalize`)."""
    body = strip_id(strategy)
    return bool(_UPSTREAM_MOVE.search(body) or _OPENS_AS_WARNING.match(body))


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`Playbook.merge` did: the operations appended and those already present."""

    added: tuple[PlaybookOperation, ...] = ()
    already_present: tuple[PlaybookOperation, ...] = ()

    @property
    def updated(self) -> bool:
        """True when the playbook changed (upstream's ``merge_playbook`` return value)."""
        return bool(self.added)

    def to_dict(self) -> dict[str, Any]:
        return {"updated": self.updated,
                "added": [_operation_dict(op) for op in self.added],
                "already_present": [_operation_dict(op) for op in self.already_present]}


@dataclass(frozen=True)
class NormalizeStats:
    """Counts before and after :meth:`Playbook.normalize` (upstream ``normalize_playbook_content``'s stats)."""

    strategies_in: int
    strategies_out: int
    moved_to_pitfalls: int
    pitfalls_in: int
    pitfalls_out: int


def _operation_dict(op: PlaybookOperation) -> dict[str, str]:
    return {"type": op.type, "section": op.section, "content": op.content}


def _operation_type(kind: str) -> str:
    if kind.strip().upper() not in OPERATION_TYPES:
        raise ValueError(f"unknown operation type {echo(kind)} (upstream's merger applies only "
                         f"{', '.join(OPERATION_TYPES)})")
    return kind.strip().upper()


def _entry_text(content: str) -> str:
    if not strip_id(content):
        raise ValueError("must not be empty")
    return strip_id(content)


class UpstreamOperation(BaseModel):
    """A curator's operation as upstream writes it: ``{type, section, content}`` (type ADD when absent)."""

    model_config = ConfigDict(extra="ignore")

    type: Annotated[str, AfterValidator(_operation_type)] = "ADD"
    section: Literal["strategies", "templates", "pitfalls"]
    content: Annotated[str, AfterValidator(_entry_text)]


PLAYBOOK_FORMAT = f"a playbook ({', '.join(SECTIONS)})"


class PlaybookFile(BaseModel):
    """A playbook file: three lists of texts, each section optional (empty); entries with or without ids."""

    model_config = ConfigDict(extra="forbid")

    strategies: list[str] = []
    templates: list[str] = []
    pitfalls: list[str] = []


def as_operation(value: PlaybookOperation | Mapping[str, Any], where: str = "operation") -> PlaybookOperation:
    """A checked :class:`PlaybookOperation` from one, or from upstream's ``{type, section, content}``.

    Raises:
        PlaybookFormatError: an unknown type or section, or no content; the message names ``where``.
    """
    if isinstance(value, PlaybookOperation):
        value = {"type": value.type, "section": value.section, "content": value.content}
    checked = validated(UpstreamOperation, value, format_name="a playbook operation", source=where,
                        error=PlaybookFormatError)
    return PlaybookOperation(section=checked.section, content=checked.content, type=checked.type)


@dataclass
class Playbook:
    """The three sections of an SCPE playbook, entries without ids, in order."""

    strategies: list[str] = field(default_factory=list)
    templates: list[str] = field(default_factory=list)
    pitfalls: list[str] = field(default_factory=list)

    def section(self, name: str) -> list[str]:
        """The entries of section ``name`` (the list itself: appending to it changes the playbook)."""
        if name not in SECTIONS:
            raise PlaybookFormatError("section", f"unknown section {echo(name)} (one of {', '.join(SECTIONS)})")
        return getattr(self, name)

    def __len__(self) -> int:
        return sum(len(self.section(name)) for name in SECTIONS)

    def counts(self) -> dict[str, int]:
        return {name: len(self.section(name)) for name in SECTIONS}

    def copy(self) -> Playbook:
        return copy.deepcopy(self)

    def contains(self, section: str, content: str) -> bool:
        """True when ``section`` holds an entry saying ``content`` (compared by :func:`entry_key`)."""
        key = entry_key(content)
        return any(entry_key(entry) == key for entry in self.section(section))

    def merge(self, operations: Iterable[PlaybookOperation | Mapping[str, Any]]) -> MergeResult:
        """Apply curator operations: each ADD appends its content unless its section already holds it.

        Every operation is checked before any is applied, so a bad one leaves the playbook as it
        was (upstream skips an unknown section with a message; here it is an error the caller
        records).

        Args:
            operations: :class:`~engines.hoi.roles.PlaybookOperation` or upstream's
                ``{"type": "ADD", "section": ..., "content": ...}`` dictionaries.

        Returns:
            :class:`MergeResult` with the operations appended and those already present.

        Raises:
            PlaybookFormatError: an operation of another type than ADD, of an unknown section, or
                without content, naming its position.
        """
        checked = [as_operation(op, f"operation {i}") for i, op in enumerate(operations)]
        added, present = [], []
        for op in checked:
            if self.contains(op.section, op.content):
                present.append(op)
            else:
                self.section(op.section).append(op.content)
                added.append(op)
        return MergeResult(tuple(added), tuple(present))

    def normalize(self) -> NormalizeStats:
        """Tidy the playbook after learning, as upstream's ``normalize_playbook_content``.

        Strategies phrased as something to prevent or avoid (upstream's phrases "to prevent",
        "prevent the model", "avoid the model" and their Chinese forms, or a strategy opening with
        "Avoid"/"Prevent") move to the end of the pitfalls; every pitfall reads "Pitfall: ...".
        Templates stay as they are. Ids follow from the new positions.
        """
        strategies_in, pitfalls_in = len(self.strategies), len(self.pitfalls)
        stay = [entry for entry in self.strategies if not moves_to_pitfalls(entry)]
        moved = [_pitfall_style(entry) for entry in self.strategies if moves_to_pitfalls(entry)]
        self.strategies = stay
        self.pitfalls = [_pitfall_style(entry) for entry in self.pitfalls] + moved
        return NormalizeStats(strategies_in, len(self.strategies), len(moved), pitfalls_in, len(self.pitfalls))

    def to_dict(self) -> dict[str, list[str]]:
        """Upstream's shape: each section a list of ``"[section-NNN]: entry"`` texts."""
        return {name: [f"[{_ID_WORD[name]}-{i:03d}]: {entry}" for i, entry in enumerate(self.section(name), start=1)]
                for name in SECTIONS}

    def to_json(self) -> str:
        """The playbook file's text (upstream's shape, two-space indent, UTF-8 kept as is)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def as_text(self) -> str:
        """The playbook as the generator and the curator read it: upstream passes
        ``json.dumps(playbook, indent=2, ensure_ascii=False)`` into their prompts."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "playbook") -> Playbook:
        """A playbook from upstream's shape (entries with or without ids); a missing section is empty.

        Raises:
            PlaybookFormatError: not an object, an unknown section, or an entry that is not text,
                naming ``source``, the section and the entry's position.
        """
        return cls._of(validated(PlaybookFile, data, format_name=PLAYBOOK_FORMAT, source=source,
                                 error=PlaybookFormatError))

    @classmethod
    def _of(cls, checked: PlaybookFile) -> Playbook:
        return cls(**{name: [strip_id(entry) for entry in getattr(checked, name) if strip_id(entry)]
                      for name in SECTIONS})


def load_playbook(path: str | Path | None = None) -> Playbook:
    """Read a playbook file: upstream's seed or learned playbook, or this project's (same shape).

    Args:
        path: the JSON file; None reads the project's seed, ``assets/hoi/playbook_seed.json``.
            Upstream's seed (``scpe/data/playbook_seed_en.json``, 26 strategies, 1 template,
            42 pitfalls) is read the same way.

    Raises:
        PlaybookFormatError: the file is missing, not JSON, or not a playbook; the message names it.

    Examples::

        >>> playbook = load_playbook()
        >>> playbook.counts()                                              # doctest: +SKIP
        {'strategies': 6, 'templates': 1, 'pitfalls': 10}
    """
    path = Path(path) if path is not None else SEED_PATH
    return Playbook._of(read_json(path, PlaybookFile, format_name=PLAYBOOK_FORMAT, error=PlaybookFormatError,
                                  encoding="utf-8-sig"))
