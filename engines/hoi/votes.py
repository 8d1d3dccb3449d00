"""Arena votes: what one vote says, and reading a vote log (this project's or GenAI-Arena's shape).

Reference: GenAI-Arena (Jiang et al. 2024), ``arena_elo/elo_rating/clean_battle_data.py``
(``docs/hoi.md``, "Method: Arena pairing" and "Method: Ratings"). A vote says which of two anonymous edits was
better: ``winner`` is "model_a", "model_b", "tie" or "tie (bothbad)". Votes cast after the two
models' names were shown (``anony`` false) are read, left out and counted, as upstream leaves them
out of its leaderboard. The ratings are ``engines.hoi.ratings``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from engines.platform.files import echo

Winner = Literal["model_a", "model_b", "tie", "tie (bothbad)"]
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
TIES = ("tie", "tie (bothbad)")

# Upstream's raw log (``clean_battle_data.py``): the button pressed, as a row "type".
UPSTREAM_TYPES = {"leftvote": "model_a", "rightvote": "model_b", "tievote": "tie", "bothbad_vote": "tie (bothbad)"}
# What upstream's anonymous arena shows as the public names before the vote.
ANONYMOUS_NAMES = ("", "Model A")


class VoteFormatError(ValueError):
    """A vote that cannot be read; ``path`` and ``line`` are set when it came from a file."""

    def __init__(self, message: str, *, field: str | None = None, path: str | None = None, line: int | None = None):
        self.message, self.field, self.path, self.line = message, field, path, line
        where = ", ".join(
            part
            for part in (
                str(path) if path is not None else "",
                f"line {line}" if line is not None else "",
                f"field '{field}'" if field is not None else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)


@dataclass(frozen=True)
class Vote:
    """One arena vote (``docs/hoi.md``, "Method: Arena pairing")."""

    tstamp: float  # seconds since the epoch, when the vote was cast
    item_id: str  # the benchmark item both edits were made for
    model_a: str  # shown on the left
    model_b: str  # shown on the right
    winner: Winner
    anony: bool = True  # the names were hidden until after the vote; only such votes count

    def __post_init__(self):
        if isinstance(self.tstamp, bool) or not isinstance(self.tstamp, int | float):
            raise VoteFormatError(f"expected a number, got {echo(self.tstamp)}", field="tstamp")
        for name in ("item_id", "model_a", "model_b"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise VoteFormatError(f"expected a non-empty string, got {echo(value)}", field=name)
        if self.model_a == self.model_b:
            raise VoteFormatError(f"model {echo(self.model_a)} is compared with itself", field="model_b")
        if self.winner not in WINNERS:
            expected = ", ".join(repr(w) for w in WINNERS)
            raise VoteFormatError(f"unknown winner {echo(self.winner)} (expected one of {expected})", field="winner")
        if not isinstance(self.anony, bool):
            raise VoteFormatError(f"expected true or false, got {echo(self.anony)}", field="anony")

    @property
    def is_tie(self) -> bool:
        return self.winner in TIES

    def swapped(self) -> Vote:
        """The same vote with the sides exchanged (what the random A/B swap could have shown)."""
        winner = {"model_a": "model_b", "model_b": "model_a"}.get(self.winner, self.winner)
        return Vote(self.tstamp, self.item_id, self.model_b, self.model_a, winner, self.anony)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class VoteLog(Sequence):
    """The counted votes of a log, in file order, and what was not counted; iterates over ``votes``."""

    votes: tuple[Vote, ...]
    n_left_out: int = 0  # votes cast with the names shown (anony false)
    n_skipped: int = 0  # upstream-log rows that are not votes ("chat", "share", ...) or lack a model
    path: str | None = None

    def __len__(self) -> int:
        return len(self.votes)

    def __getitem__(self, index):
        return self.votes[index]

    def __iter__(self) -> Iterator[Vote]:
        return iter(self.votes)


# FUNCTIONS: reading


def _get(row: dict, key: str, *, field: str | None = None):
    if key not in row or row[key] is None:
        raise VoteFormatError("missing", field=field or key)
    return row[key]


def _item_id(row: dict, states: list | None = None) -> str:
    for key in ("item_id", "question_id"):  # question_id: upstream's cleaned battles
        if row.get(key) is not None:
            return str(row[key])
    if states and isinstance(states[0], dict) and states[0].get("conv_id") is not None:
        return str(states[0]["conv_id"])  # upstream's raw log: the conversation id
    raise VoteFormatError("missing", field="item_id")


def _vote_from_row(row: dict) -> Vote | None:
    """A vote from one JSON object, ours or upstream's; None for an upstream row that is not a vote."""
    if not isinstance(row, dict):
        raise VoteFormatError(f"expected a JSON object, got {type(row).__name__}")
    if "winner" in row or "type" not in row:
        return Vote(
            tstamp=_get(row, "tstamp"),
            item_id=_item_id(row),
            model_a=_get(row, "model_a"),
            model_b=_get(row, "model_b"),
            winner=_get(row, "winner"),
            anony=_get(row, "anony"),
        )
    # Upstream's raw log: the button in "type", the public names in "models" ("" or "Model A" while
    # hidden), the hidden names in states[i]["model_name"]; other row types (chat, share) are skipped.
    if row["type"] not in UPSTREAM_TYPES:
        return None
    models = _get(row, "models")
    if not isinstance(models, list) or len(models) != 2:
        raise VoteFormatError(f"expected a list of two names, got {echo(models)}", field="models")
    if models[0] is None or models[1] is None:
        return None  # upstream skips these too
    states = row.get("states") or []
    hidden = models[0] in ANONYMOUS_NAMES
    if hidden:
        names = []
        for i in range(2):
            state = states[i] if i < len(states) and isinstance(states[i], dict) else {}
            names.append(_get(state, "model_name", field=f"states[{i}].model_name"))
    else:
        names = list(models)
    anony = row["anony"] if "anony" in row else hidden
    return Vote(
        tstamp=_get(row, "tstamp"),
        item_id=_item_id(row, states),
        model_a=names[0],
        model_b=names[1],
        winner=UPSTREAM_TYPES[row["type"]],
        anony=anony,
    )


def read_votes(path: str | Path) -> VoteLog:
    """Read a JSONL vote log: one vote per line, in our shape or GenAI-Arena's.

    Our shape is ``Vote``'s fields (``question_id`` is read as ``item_id``, as in upstream's cleaned
    battles). Upstream's raw log has ``type`` ("leftvote", "rightvote", "tievote", "bothbad_vote")
    and ``models`` [a, b]; public names that are empty or "Model A" mean the vote was anonymous and
    the names are taken from ``states[i].model_name``, other public names mean the names were shown
    (unless the row says ``anony``). Blank lines and upstream rows of other types are skipped.

    Args:
        path: the ``.jsonl`` file.

    Returns:
        ``VoteLog``: the anonymous votes in file order; ``n_left_out`` counts the votes cast with the
        names shown, which are left out as upstream leaves them out.

    Raises:
        VoteFormatError: naming the file, the line and the field (bad JSON, a missing field, an
        unknown winner, a model compared with itself).

    Examples::

        >>> log = read_votes("data/hoi/votes.jsonl")  # doctest: +SKIP
        >>> bradley_terry(log)  # doctest: +SKIP
        {'model-x': 1062.4, 'model-y': 937.6}
    """
    path = Path(path)
    votes: list[Vote] = []
    n_left_out = n_skipped = 0
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise VoteFormatError(f"not JSON ({e.msg})", path=str(path), line=line_no) from None
            try:
                vote = _vote_from_row(row)
            except VoteFormatError as e:
                raise VoteFormatError(e.message, field=e.field, path=str(path), line=line_no) from None
            if vote is None:
                n_skipped += 1
            elif not vote.anony:
                n_left_out += 1
            else:
                votes.append(vote)
    return VoteLog(tuple(votes), n_left_out=n_left_out, n_skipped=n_skipped, path=str(path))
