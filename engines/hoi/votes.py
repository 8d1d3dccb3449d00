"""Arena votes: what one vote says, and reading a vote log (this project's or GenAI-Arena's shape).

Reference: GenAI-Arena (Jiang et al. 2024), ``arena_elo/elo_rating/clean_battle_data.py``
(``docs/hoi.md``, "Method: Arena pairing" and "Method: Ratings"). A vote says which of two anonymous edits was
better: ``winner`` is "model_a", "model_b", "tie" or "tie (bothbad)". Votes cast after the two
models' names were shown (``anony`` false) are read, left out and counted, as upstream leaves them
out of its leaderboard. The ratings are ``engines.hoi.ratings``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, Strict, ValidationError
from pydantic.dataclasses import dataclass as format_dataclass

from engines.platform.files import echo
from engines.platform.formats import FieldProblem, FormatError, format_error, json_lines

Winner = Literal["model_a", "model_b", "tie", "tie (bothbad)"]
WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
TIES = ("tie", "tie (bothbad)")

# Upstream's raw log (``clean_battle_data.py``): the button pressed, as a row "type".
UPSTREAM_TYPES = {"leftvote": "model_a", "rightvote": "model_b", "tievote": "tie", "bothbad_vote": "tie (bothbad)"}
# What upstream's anonymous arena shows as the public names before the vote.
ANONYMOUS_NAMES = ("", "Model A")


class VoteFormatError(FormatError):
    """A vote that cannot be read, in the platform's wording (``engines.platform.formats``): the file
    and line when it came from one (``path``, ``line``), the field and the problem."""

    def __init__(self, field: str | None, problem: str, source: str = "", *, line: int | None = None,
                 path: str | None = None):
        if path is not None:
            source = ", ".join(part for part in (path, f"line {line}" if line is not None else None) if part)
        super().__init__(field or "", problem, source, line=line)
        self.path, self.field = path, field


Name = Annotated[str, Strict(), Field(min_length=1)]


@format_dataclass(frozen=True, config=ConfigDict(extra="forbid"))
class Vote:
    """One arena vote (``docs/hoi.md``, "Method: Arena pairing")."""

    tstamp: Annotated[float, Strict(), Field(allow_inf_nan=False)]  # seconds since the epoch, when cast
    item_id: Name  # the benchmark item both edits were made for
    model_a: Name  # shown on the left
    model_b: Name  # shown on the right
    winner: Winner
    anony: Annotated[bool, Strict()] = True  # the names were hidden until after the vote; only such votes count

    def __post_init__(self):
        if self.model_a == self.model_b:
            raise FieldProblem("model_b", f"model {echo(self.model_a)} is compared with itself")

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
        raise VoteFormatError(field or key, "is missing")
    return row[key]


def _item_id(row: dict, states: list | None = None) -> str:
    for key in ("item_id", "question_id"):  # question_id: upstream's cleaned battles
        if row.get(key) is not None:
            return str(row[key])
    if states and isinstance(states[0], dict) and states[0].get("conv_id") is not None:
        return str(states[0]["conv_id"])  # upstream's raw log: the conversation id
    raise VoteFormatError("item_id", "is missing")


def _vote_from_row(row: dict) -> Vote | None:
    """A vote from one JSON object, ours or upstream's; None for an upstream row that is not a vote."""
    if not isinstance(row, dict):
        raise VoteFormatError(None, f"must be an object (got {type(row).__name__})")
    if "winner" in row or "type" not in row:
        return _vote(tstamp=_get(row, "tstamp"), item_id=_item_id(row), model_a=_get(row, "model_a"),
                     model_b=_get(row, "model_b"), winner=_get(row, "winner"), anony=_get(row, "anony"))
    # Upstream's raw log: the button in "type", the public names in "models" ("" or "Model A" while
    # hidden), the hidden names in states[i]["model_name"]; other row types (chat, share) are skipped.
    if row["type"] not in UPSTREAM_TYPES:
        return None
    models = _get(row, "models")
    if not isinstance(models, list) or len(models) != 2:
        raise VoteFormatError("models", f"must be a list of two names (got {echo(models)})")
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
    return _vote(tstamp=_get(row, "tstamp"), item_id=_item_id(row, states), model_a=names[0], model_b=names[1],
                 winner=UPSTREAM_TYPES[row["type"]], anony=anony)


def _vote(**fields) -> Vote:
    try:
        return Vote(**fields)
    except ValidationError as exc:
        raise format_error(exc, format_name="a vote", error=VoteFormatError) from None


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
    for line, row in json_lines(path, error=VoteFormatError):  # a line that is not JSON, or too deep, is refused
        try:
            vote = _vote_from_row(row)
        except VoteFormatError as e:
            raise VoteFormatError(e.field, e.problem, path=str(path), line=line) from None
        if vote is None:
            n_skipped += 1
        elif not vote.anony:
            n_left_out += 1
        else:
            votes.append(vote)
    return VoteLog(tuple(votes), n_left_out=n_left_out, n_skipped=n_skipped, path=str(path))
