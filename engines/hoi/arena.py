"""The HOI-Edit arena: anonymous pairs of edits for participants to vote on, and their votes as a log.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``) complements HOI-Eval's automatic scores with
pairwise human votes, after GenAI-Arena's image-editing arena (``TIGER-AI-Lab/GenAI-Arena``,
``fastchat/serve/gradio_block_arena_anony_ie.py``; ``docs/hoi.md``, "Method: Arena pairing"):
two anonymous edits of the same source image and instruction, shown as A and B after a random
side swap; the buttons "A is better", "B is better", "Tie" and "Both are bad"; the methods' names
revealed only after the vote. The votes feed ``engines.hoi.ratings`` (Elo, Bradley–Terry).

What this module does, in the order a study uses it:

- ``benchmark_root``: a study's ``BENCHMARK`` as a folder the app owns
  (``engines.hoi.folders.benchmark_folder``: a registered data set, the shipped demo, a job's
  results), never an arbitrary path;
- ``frozen_methods``: the methods a new study compares and the names it reveals, as the constants
  (``BENCHMARK``, ``METHODS``, ``LABELS``) a study is created with: a study's method set is fixed
  when it is created, so an edit folder added to the benchmark later joins only later studies;
- ``read_candidates``: the items of a benchmark folder that at least two methods edited, i.e. that
  have ``<root>/<method>_frames/<split>/<key>`` for two methods (upstream's
  ``data/<model>_frames/{L1L2,L3}/<key>``), with each method's label (the study's frozen one, else
  ``<root>/methods.json``'s);
- ``draw_pairs``: a participant's sequence of pairs, seeded by the participant under the
  installation's secret arena key (``participant_seed``): balanced over method pairs, each pair's
  sides swapped at random, the same item never twice in a row when another one is possible;
- ``draw_plan``: the same, as the JSON a study stores with the participant (under ``PLAN_KEY`` of the
  participant's variables) when they consent, so the pairs they see, the page after a reload and
  the export all read one stored sequence, whatever happens to the folder later;
- ``vote_page`` / ``reveal_page``: what the page shows before the vote (no names) and after it;
- ``vote_row``: a stored vote (the button pressed on pair n) as a vote-log row, the names taken
  through the side swap;
- ``arena_studies``, ``study_comparison``, ``study_votes``, ``export_votes``, ``study_ratings``: the
  arena's studies, what one compares (its frozen folder, methods and names), and every stored vote
  of one, as ``votes.Vote`` rows, as JSONL for ``python -m engines.hoi ratings --votes FILE``, and
  as the current leaderboard.

A vote is a step answer ``{"pair": n, "choice": <button>}`` stored by the platform's runtime, so
resuming after a refresh, a double click counted once and surviving a restart come from there.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any, Literal

from engines.hoi.benchmark import SPLITS, load_benchmark
from engines.hoi.folders import FileRefused, benchmark_folder, shown
from engines.hoi.methods import FRAMES_SUFFIX, MethodsFileError, read_methods
from engines.hoi.ratings import Ratings, rate
from engines.hoi.votes import Vote, VoteLog, Winner
from engines.platform.credentials import server_key
from engines.platform.settings import get_settings

# Studies created before benchmarks were named as the page shows them stored the shipped demo as a
# path in the repository ("assets/hoi/demo"); it names the shipped folder "shipped/hoi/demo".
REPOSITORY_ASSETS = "assets/"
# Where a study keeps a participant's drawn pairs: Participant.vars[PLAN_KEY].
PLAN_KEY = "hoi_arena"
# The buttons, in upstream's order, and the vote-log winner each one means (upstream's
# leftvote, rightvote, tievote, bothbad_vote).
CHOICES: dict[str, Winner] = {
    "A is better": "model_a",
    "B is better": "model_b",
    "Tie": "tie",
    "Both are bad": "tie (bothbad)",
}
Choice = Literal["A is better", "B is better", "Tie", "Both are bad"]


class ArenaError(ValueError):
    """A benchmark folder, a plan or a vote the arena cannot use; the message says what and where."""


# ---------------------------------------------------------------- candidates


@dataclass(frozen=True)
class ArenaItem:
    """One benchmark item with the edits of two or more methods."""

    split: str  # "L1L2" or "L3"
    key: str  # the upstream key: the source image's file name
    instruction: str
    source: Path  # images/<split>/<key>
    outputs: dict[str, Path]  # method -> <method>_frames/<split>/<key>

    @property
    def item_id(self) -> str:
        # The same image can be an item of both splits (different tags), so the split is part of the id.
        return f"{self.split}/{self.key}"


@dataclass(frozen=True)
class ArenaCandidates:
    """What a benchmark folder offers the arena."""

    root: Path
    items: tuple[ArenaItem, ...]  # items with at least two of ``methods``' edits, in benchmark order
    methods: tuple[str, ...]  # the methods taking part, sorted
    labels: dict[str, str]  # method -> the name revealed after the vote (methods.json "label", else the name)
    left_out: dict[str, int] = field(default_factory=dict)  # why items were left out -> how many

    def method_pairs(self) -> list[tuple[str, str]]:
        """The (sorted) pairs of methods that edited at least one item in common, in name order."""
        pairs = {pair for item in self.items for pair in combinations(sorted(item.outputs), 2)}
        return sorted(pairs)

    def items_of(self, first: str, second: str) -> list[ArenaItem]:
        """The items both methods edited."""
        return [item for item in self.items if first in item.outputs and second in item.outputs]


def benchmark_root(root: str | Path) -> Path:
    """The arena's benchmark folder: ``root`` when it is a folder the app owns for benchmarks
    (``engines.hoi.folders.benchmark_folder``: ``shipped/hoi/demo``, ``datasets/hoi/<name>``,
    ``jobs/<id>``, or such a folder's absolute path). The form older studies stored,
    ``assets/hoi/demo`` (a path in the repository), is read as the shipped folder it names.

    Raises:
        ArenaError: anything else, saying what was given and where a benchmark may be.
    """
    text = str(root).strip()
    if text.startswith(REPOSITORY_ASSETS):
        text = "shipped/" + text[len(REPOSITORY_ASSETS):]
    try:
        return benchmark_folder(text, what="the arena's benchmark folder")
    except FileRefused as exc:
        raise ArenaError(f"{exc} (a benchmark is shipped/hoi/demo, datasets/hoi/<name> or jobs/<id>)") from None


def read_method_labels(root: str | Path) -> dict[str, str]:
    """method -> label from ``<root>/methods.json``; {} without the file."""
    try:
        return {method: entry["label"] for method, entry in read_methods(benchmark_root(root)).items()}
    except MethodsFileError as exc:
        raise ArenaError(str(exc)) from None


def output_methods(root: str | Path) -> list[str]:
    """The methods with an output folder ``<method>_frames/`` in ``root``, sorted."""
    root = benchmark_root(root)
    return sorted(path.name[: -len(FRAMES_SUFFIX)] for path in root.glob(f"*{FRAMES_SUFFIX}")
                  if path.is_dir() and len(path.name) > len(FRAMES_SUFFIX))


def read_candidates(root: str | Path, methods: Sequence[str] | None = None,
                    labels: Mapping[str, str] | None = None) -> ArenaCandidates:
    """The items of a benchmark folder that two or more methods edited.

    Args:
        root: a HOI-Edit benchmark folder (the annotation JSONs, ``images/<split>/``, and one
            ``<method>_frames/<split>/`` folder per method) the app owns (``benchmark_root``).
        methods: the methods to include (None or empty: every method with an output folder).
        labels: method -> the name revealed after the vote (a study's frozen ``LABELS``); a method
            without one gets its ``methods.json`` label, else its name.

    Returns:
        ``ArenaCandidates``; items without a source image, or edited by fewer than two of the
        methods, are left out and counted in ``left_out``.

    Raises:
        ArenaError: the folder is not one the app owns, has fewer than two methods, a named method
            has no output folder, or no item has two methods' edits.
        BenchmarkFormatError: the annotation files cannot be read (``engines.hoi.benchmark``).
    """
    root = benchmark_root(root)
    benchmark = load_benchmark(root)
    found = output_methods(root)
    chosen = sorted(dict.fromkeys(methods)) if methods else found
    unknown = [method for method in chosen if method not in found]
    if unknown:
        raise ArenaError(f"{root}: no output folder for {', '.join(unknown)} (expected <method>{FRAMES_SUFFIX}/; "
                         f"found: {', '.join(found) or 'none'})")
    if len(chosen) < 2:
        raise ArenaError(f"{root}: the arena compares two or more methods, found {len(chosen)} "
                         f"({', '.join(chosen) or 'no <method>' + FRAMES_SUFFIX + '/ folder'})")
    labels = {**read_method_labels(root), **(labels or {})}
    items, left_out = [], Counter()
    for item in benchmark.items():
        if item.image_path is None:
            left_out["no source image"] += 1
            continue
        outputs = {method: path for method in chosen
                   if (path := root / f"{method}{FRAMES_SUFFIX}" / item.split / item.key).is_file()}
        if len(outputs) < 2:
            left_out["fewer than two methods' edits"] += 1
            continue
        items.append(ArenaItem(item.split, item.key, item.instruction, item.image_path, outputs))
    if not items:
        raise ArenaError(f"{root}: no item has edits of two of {', '.join(chosen)} "
                         f"(looked for <method>{FRAMES_SUFFIX}/<split>/<key> with split one of {', '.join(SPLITS)})")
    return ArenaCandidates(root=root, items=tuple(items), methods=tuple(chosen),
                           labels={method: labels.get(method, method) for method in chosen}, left_out=dict(left_out))


def frozen_methods(root: str | Path, methods: Sequence[str] | None = None) -> dict[str, Any]:
    """What a new arena study on ``root`` compares, as the constants it is created with:
    ``{"BENCHMARK": <the folder as the page shows it>, "METHODS": [...], "LABELS": {method: name}}``.

    The methods (``methods``, or every method with edits in the folder now) and their names (from
    ``methods.json`` now) are written into the study's constants, so neither a method folder nor
    a label added later changes what a running study shows. Raises ``ArenaError`` as
    ``read_candidates``.
    """
    candidates = read_candidates(root, methods)
    return {"BENCHMARK": shown(candidates.root), "METHODS": list(candidates.methods),
            "LABELS": {method: candidates.labels[method] for method in candidates.methods}}


# ---------------------------------------------------------------- drawing pairs


@dataclass(frozen=True)
class ArenaPair:
    """One round: an item and two methods, ``first`` < ``second`` by name; ``swapped`` puts ``second`` on the left (A)."""

    number: int  # 1-based round
    split: str
    key: str
    instruction: str
    first: str
    second: str
    swapped: bool

    @property
    def item_id(self) -> str:
        return f"{self.split}/{self.key}"

    @property
    def model_a(self) -> str:
        """The method shown on the left, as A."""
        return self.second if self.swapped else self.first

    @property
    def model_b(self) -> str:
        """The method shown on the right, as B."""
        return self.first if self.swapped else self.second

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ArenaPair:
        try:
            pair = cls(**{name: data[name] for name in cls.__dataclass_fields__})
        except (KeyError, TypeError) as exc:
            raise ArenaError(f"a stored pair lacks {exc}: {dict(data)!r}") from None
        if pair.first == pair.second:
            raise ArenaError(f"a stored pair compares {pair.first!r} with itself")
        return pair


def arena_key() -> bytes:
    """The installation's secret arena key: ``HAI_ARENA_KEY``, else ``<data_dir>/arena.key`` (made once)."""
    return server_key("arena.key", get_settings().arena_key, "HAI_ARENA_KEY")


def participant_seed(study_slug: str, external_id: str, key: bytes | None = None) -> int:
    """The seed of a participant's pairs: 63 bits of HMAC-SHA256(key, "<study>:<participant>").

    The same participant of a study gets the same seed on every run of one installation (a resumed
    participant, a redraw for a check); without the key nobody can work out which pairs an id will
    see, or choose ids that see the pairs they want. ``key``: default ``arena_key()``.
    """
    message = f"{study_slug}:{external_id}".encode()
    digest = hmac.new(arena_key() if key is None else key, message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def _pair_order(pairs: list[tuple[str, str]], rounds: int, rng: random.Random) -> list[tuple[str, str]]:
    """Whole shuffled passes over ``pairs`` (each pair once per pass), enough for ``rounds``: any
    prefix of whole passes and part of the next gives counts that differ by at most one."""
    order: list[tuple[str, str]] = []
    while len(order) < rounds:
        block = list(pairs)
        rng.shuffle(block)
        order.extend(block)
    return order


def draw_pairs(candidates: ArenaCandidates, rounds: int, seed: int) -> list[ArenaPair]:
    """A participant's sequence of ``rounds`` pairs.

    Method pairs come in whole shuffled passes over every pair of methods that share an item, so
    any two method pairs are shown equally often, give or take one. Each round's item is one both
    methods edited: never the previous round's when the pair has another, preferably not the only
    item the next round's pair could show, then the one this participant has seen least (ties at
    random); when only the previous item would do, a later method pair of the same pass is brought
    forward (so the counts stay balanced). With every two methods
    sharing two items or more, no item is ever shown twice in a row. The sides are swapped by a
    fair coin per round (upstream's random A/B order), so neither method owns the left.

    Args:
        candidates: from ``read_candidates``.
        rounds: how many pairs (at least 1).
        seed: e.g. ``participant_seed(study, participant)``; the same seed gives the same pairs.

    Returns:
        ``rounds`` ``ArenaPair``s numbered from 1.

    Examples::

        >>> pairs = draw_pairs(read_candidates("shipped/hoi/demo"), 6, seed=1)  # doctest: +SKIP
        >>> [(p.model_a, p.model_b) for p in pairs[:2]]                      # doctest: +SKIP
        [('wan22', 'nano_banana'), ('flux_kontext', 'wan22_scpe')]
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ArenaError(f"rounds must be a whole number of at least 1, got {rounds!r}")
    rng = random.Random(seed)
    method_pairs = candidates.method_pairs()
    order = _pair_order(method_pairs, rounds, rng)
    seen: Counter[str] = Counter()
    previous: str | None = None
    pairs: list[ArenaPair] = []
    for number in range(1, rounds + 1):
        index = number - 1
        # When this method pair could only repeat the previous item, bring forward a later pair of
        # the same pass (a pass keeps its pairs, so the counts stay balanced).
        pass_end = (index // len(method_pairs) + 1) * len(method_pairs)
        for later in range(index, pass_end):
            if any(item.item_id != previous for item in candidates.items_of(*order[later])):
                order[index], order[later] = order[later], order[index]
                break
        first, second = order[index]
        eligible = candidates.items_of(first, second)
        fresh = [item for item in eligible if item.item_id != previous] or eligible
        # Not the only item the next round's method pair could show (that round would have to
        # repeat it), then the least seen; ties at random.
        following = {other.item_id for other in candidates.items_of(*order[index + 1])} if number < rounds else set()
        ranks = [(following == {item.item_id}, seen[item.item_id]) for item in fresh]
        item = rng.choice([item for item, rank in zip(fresh, ranks, strict=True) if rank == min(ranks)])
        seen[item.item_id] += 1
        previous = item.item_id
        pairs.append(ArenaPair(number, item.split, item.key, item.instruction, first, second,
                               swapped=rng.random() < 0.5))
    return pairs


def draw_plan(root: str | Path, methods: Sequence[str] | None, rounds: int, seed: int,
              labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A participant's pairs as the JSON a study stores with them (``Participant.vars[PLAN_KEY]``).

    Holds the folder, the methods' labels (``labels``, a study's frozen names, else the folder's)
    and the pairs, so what the pages show and what the export writes never depend on re-reading
    (or re-drawing from) the folder.
    """
    candidates = read_candidates(root, methods, labels)
    pairs = draw_pairs(candidates, rounds, seed)
    return {"root": str(candidates.root), "labels": dict(candidates.labels),
            "pairs": [pair.to_dict() for pair in pairs]}


def plan_pair(plan: Mapping[str, Any], number: int) -> ArenaPair:
    """Pair ``number`` (from 1) of a stored plan."""
    pairs = plan.get("pairs") or []
    if isinstance(number, bool) or not isinstance(number, int) or not 1 <= number <= len(pairs):
        raise ArenaError(f"no pair {number!r} in a plan of {len(pairs)} pairs")
    return ArenaPair.from_dict(pairs[number - 1])


# ---------------------------------------------------------------- what the page shows


def _paths(plan: Mapping[str, Any], pair: ArenaPair) -> dict[str, str]:
    root = Path(plan["root"])
    return {
        "source": str(root / "images" / pair.split / pair.key),
        "edit_a": str(root / f"{pair.model_a}{FRAMES_SUFFIX}" / pair.split / pair.key),
        "edit_b": str(root / f"{pair.model_b}{FRAMES_SUFFIX}" / pair.split / pair.key),
    }


def vote_page(plan: Mapping[str, Any], number: int) -> dict[str, Any]:
    """What the vote on pair ``number`` shows: the instruction, the source image and edits A and B.

    The methods' names are not among the values (upstream hides them until the vote); the image
    paths name them only on the server, and the page sends the browser the images, not the paths.
    """
    pair = plan_pair(plan, number)
    return {"phase": "vote", "pair": number, "pairs": len(plan["pairs"]), "instruction": pair.instruction,
            **_paths(plan, pair)}


def reveal_page(plan: Mapping[str, Any], number: int, choice: str) -> dict[str, Any]:
    """What the page shows after the vote on pair ``number``: ``vote_page``'s values, the two methods'
    labels (``name_a``, ``name_b``) and the button the participant pressed."""
    if choice not in CHOICES:
        raise ArenaError(f"unknown vote {choice!r} (one of {', '.join(CHOICES)})")
    pair = plan_pair(plan, number)
    labels = plan.get("labels") or {}
    return {**vote_page(plan, number), "phase": "reveal", "choice": choice,
            "name_a": labels.get(pair.model_a, pair.model_a), "name_b": labels.get(pair.model_b, pair.model_b)}


# ---------------------------------------------------------------- votes


def vote_row(pair: ArenaPair, choice: str, tstamp: float, *, anony: bool = True) -> Vote:
    """A stored vote as a vote-log row (``engines.hoi.votes.Vote``).

    ``model_a`` is the method shown on the left, A, which is ``pair.second`` when the sides were
    swapped; "A is better" then means ``winner="model_a"``, i.e. ``pair.second`` won.

    ``anony`` stays true for a vote of the study: its page never shows the names, and the reveal
    comes as the next step, which a vote can no longer reach (the runtime keeps the first answer
    of a step and refuses to store another).
    """
    if choice not in CHOICES:
        raise ArenaError(f"pair {pair.number}: unknown vote {choice!r} (one of {', '.join(CHOICES)})")
    return Vote(tstamp=float(tstamp), item_id=pair.item_id, model_a=pair.model_a, model_b=pair.model_b,
                winner=CHOICES[choice], anony=anony)


def is_vote(data: Mapping[str, Any]) -> bool:
    """Whether a stored step answer is an arena vote (``{"pair": n, "choice": <button>}``)."""
    return data.get("choice") in CHOICES and isinstance(data.get("pair"), int)


def study_votes(study_slug: str, *, engine=None) -> list[Vote]:
    """Every vote stored for the study ``study_slug``, in the order they were cast.

    Reads each participant's stored plan and their vote answers (participants who stopped half
    way count with the votes they cast). Raises ``ArenaError`` when there is no such study.
    """
    from sqlmodel import select

    from engines.platform.db import read_session
    from engines.platform.models import Participant, StepResponse, Study

    with read_session(engine) as session:
        study = session.exec(select(Study).where(Study.slug == study_slug)).first()
        if study is None:
            raise ArenaError(f"there is no study {study_slug!r}")
        rows = session.exec(
            select(StepResponse.data, StepResponse.submitted_at, StepResponse.id, Participant.vars, Participant.id)
            .join(Participant, Participant.id == StepResponse.participant_id)
            .where(Participant.study_id == study.id)
            .order_by(StepResponse.submitted_at, StepResponse.id)
        ).all()
    votes = []
    for data, submitted_at, _, variables, participant_id in rows:
        if not is_vote(data or {}):
            continue
        plan = (variables or {}).get(PLAN_KEY)
        if not plan:
            raise ArenaError(f"study {study_slug!r}: participant {participant_id} has a vote but no stored pairs")
        votes.append(vote_row(plan_pair(plan, data["pair"]), data["choice"], submitted_at.timestamp()))
    return votes


def arena_studies(protocol: str = "hoi_arena", *, engine=None) -> list[str]:
    """The slugs of the studies run with the arena's protocol, newest first (for a researcher's choice)."""
    from sqlmodel import select

    from engines.platform.db import read_session
    from engines.platform.models import Study

    with read_session(engine) as session:
        return list(session.exec(select(Study.slug).where(Study.protocol == protocol)
                                 .order_by(Study.created_at.desc(), Study.id.desc())).all())


@dataclass(frozen=True)
class StudyComparison:
    """What an arena study compares, as its constants fixed it when it was created."""

    slug: str
    is_open: bool
    benchmark: str  # the folder, as the page shows it
    labels: dict[str, str]  # method -> the name revealed after the vote, in the study's order
    rounds: int


def study_comparison(study_slug: str, *, engine=None) -> StudyComparison:
    """The methods (with their names), folder and rounds of the arena study ``study_slug``."""
    from engines.platform.registry import get_protocol
    from engines.platform.study_admin import get_study

    study = get_study(study_slug, engine=engine)
    constants = get_protocol(study.protocol).constants_for(study.config)
    labels = {method: constants.LABELS.get(method, method) for method in constants.METHODS}
    try:
        benchmark = shown(benchmark_root(constants.BENCHMARK))  # never a server path
    except ArenaError:
        benchmark = "a folder the app does not read"
    return StudyComparison(study.slug, study.is_open, benchmark, labels, int(constants.ROUNDS))


def votes_jsonl(votes: Sequence[Vote]) -> bytes:
    """Votes as JSONL, one ``Vote`` per line, the shape ``engines.hoi.votes.read_votes`` reads."""
    return "".join(json.dumps(vote.to_dict()) + "\n" for vote in votes).encode()


def export_votes(study_slug: str, out: str | Path | None = None, *, engine=None) -> bytes:
    """Every stored vote of a study as JSONL (for ``python -m engines.hoi ratings --votes FILE``);
    written to ``out`` too when given."""
    content = votes_jsonl(study_votes(study_slug, engine=engine))
    if out is not None:
        Path(out).write_bytes(content)
    return content


def study_ratings(study_slug: str, method: Literal["elo", "bt"] = "bt", *, rounds: int = 200, seed: int = 0,
                  engine=None) -> Ratings:
    """The current leaderboard of a study's stored votes (``engines.hoi.ratings.rate``).

    Args:
        study_slug: the study.
        method: "bt" (Bradley–Terry, upstream's default) or "elo".
        rounds, seed: bootstrap resamples for the 95% intervals (fewer than the CLI's 1000 so a
            page that asks on every visit answers quickly) and their seed.
    """
    votes = study_votes(study_slug, engine=engine)
    return rate(VoteLog(tuple(votes)), method, rounds=rounds, seed=seed)


__all__ = [
    "CHOICES", "PLAN_KEY", "ArenaCandidates", "ArenaError", "ArenaItem", "ArenaPair", "arena_key", "arena_studies",
    "benchmark_root", "draw_pairs", "draw_plan", "export_votes", "frozen_methods", "is_vote", "output_methods",
    "participant_seed", "plan_pair", "read_candidates", "read_method_labels", "reveal_page", "StudyComparison",
    "study_comparison", "study_ratings", "study_votes",
    "vote_page", "vote_row", "votes_jsonl",
]
