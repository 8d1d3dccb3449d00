"""An LLM-simulated collaborator: a language model plays the human over the rounds of one decision.

The precursor paper's LLM-clinician setting (arXiv:2510.23476) made multi-round (``docs/collab.md``,
Method, "Tasks, AI and simulated collaborators"): an LLM "clinician" sees the case, answers, sees
the AI's prediction set, and revises over K rounds. Here the same player handles the shape-counting
task (from ``ShapeTask.describe()``) and the synthetic or real DDXPlus task (from
``medical.describe``).

Pieces:

- the model behind it: any ``engines.collab.backends.ChatBackend`` (an OpenAI-compatible
  endpoint, or a local transformers model).
- ``LLMCollaborator`` — one interaction, a ``engines.collab.loop_reference.Collaborator`` like
  the simulated people of ``engines.collab.humans``: ``answer()``, ``belief_set()``,
  ``confidence()``, ``see(ai_set, ai_top) -> stop``.
  Each round it asks for strict JSON ``{"answer": <label>, "confidence": 1-5, "final": bool}``.
  The belief set is {answer}; the confidence is mapped to [0, 1] as (c - 1) / 4. A reply that
  cannot be used (no JSON object, a label outside the label space, a bad confidence) is retried
  once with the reason; if the retry fails too the collaborator keeps its previous answer (round 1:
  the first label, confidence 0) and the record says so. Parse failures never raise; backend
  failures (HTTP errors, unreachable server) do, as ``BackendError``.
- ``play`` — runs one interaction against an AI policy (prefix -> set) and returns the records
  (the rounds of ``loop_reference.play_rounds``, which the simulator's loop plays too).

Example::

    backend = OpenAICompatibleBackend("http://127.0.0.1:8000/v1", model="qwen2.5-7b-instruct")
    person = LLMCollaborator(backend, shape_view(generate_task(3, "hard")), rounds=3)
    result = play(person, ai=lambda prefix: my_controller_set(prefix), rounds=3)
    result.answers, result.prefix().belief_sets
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from engines.collab.backends import ChatBackend
from engines.collab.loop_reference import play_rounds
from engines.collab.rules import Prefix
from engines.platform.files import echo

# ---------------------------------------------------------------- what the collaborator sees


@dataclass(frozen=True)
class TaskView:
    """One round's view of the task: the text, the question and the label names (index = label)."""

    description: str
    question: str
    labels: tuple[str, ...]
    role: str = "a careful participant in a study"


def shape_view(task, detail: str = "exact") -> TaskView:
    """The shape-counting task (``engines.collab.shapes.ShapeTask``) as text; labels "0".."9".

    ``detail`` is passed to ``ShapeTask.describe``: "exact" names every shape's kind, "perceived"
    leaves the kinds of hard-to-see shapes ambiguous (so hard images stay hard for the reader).
    """
    from engines.collab.shapes import LABELS

    return TaskView(task.describe(detail), task.question, tuple(str(c) for c in LABELS),
                    role="a participant in a visual counting study who only sees a description of the image")


def medical_views(case, rounds: int) -> list[TaskView]:
    """One view per round of a medical case, revealing evidence as ``medical.reveal`` does.

    The text is ``medical.describe``: for a DDXPlus patient, one interview item per question (the
    values of a multi-choice question together), symptoms and antecedents apart, default values left out.
    """
    from engines.collab.medical import describe, reveal

    question = "What is the most likely diagnosis?"
    return [TaskView(describe(case, reveal(case, k, rounds)), question, tuple(case.labels),
                     role="a clinician making a differential diagnosis")
            for k in range(1, rounds + 1)]


# ---------------------------------------------------------------- parsing


class ReplyError(ValueError):
    """An LLM reply that cannot be used; the message says why (it is fed back on the retry)."""


@dataclass(frozen=True)
class Reply:
    answer: int  # index into the label space
    confidence: int  # 1..5
    final: bool


def first_json_object(text: str) -> dict:
    """The first JSON object in ``text`` (prose and code fences around it are ignored)."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = text.find("{", start + 1)
    raise ReplyError("no JSON object found in the reply")


def parse_reply(text: str, labels: Sequence[str]) -> Reply:
    """Validate a reply against the label space; raises ``ReplyError`` with the reason."""
    obj = first_json_object(text)
    if "answer" not in obj:
        raise ReplyError('the JSON object has no "answer"')
    raw = obj["answer"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise ReplyError(f"answer must be one of the labels, got {echo(raw)}")
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    wanted = str(raw).strip().casefold()
    matches = [i for i, name in enumerate(labels) if name.casefold() == wanted]
    if not matches:
        raise ReplyError(f"answer {echo(raw)} is not one of the allowed labels")
    conf = obj.get("confidence")
    if isinstance(conf, str):
        try:
            conf = float(conf)
        except ValueError:
            pass
    if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not math.isfinite(conf) \
            or not 1 <= conf <= 5:
        raise ReplyError(f"confidence must be a number from 1 to 5, got {echo(obj.get('confidence'))}")
    final = obj.get("final", False)
    if isinstance(final, str):
        final = final.strip().lower() == "true"
    return Reply(matches[0], int(round(conf)), bool(final))


# ---------------------------------------------------------------- the collaborator

FORMAT = ('Reply with only a JSON object, no other text: {"answer": <one of the allowed answers, exactly as '
          'written>, "confidence": <integer 1-5, 5 = certain>, "final": <true if you will not change your '
          'answer any more, else false>}')


@dataclass
class RoundRecord:
    """One round of the LLM collaborator, in the shape ``humans.py`` people produce.

    ``belief_set`` is (K,) bool = {answer}; ``confidence`` is (raw - 1) / 4 in [0, 1]. ``ai_set``
    is the AI set shown *before* this round (None in round 1). ``parse_error`` holds the reason of
    the last unusable reply (None if the round's reply, or its retry, parsed); ``fallback`` is True
    when both failed and the previous answer was kept.
    """

    round: int
    answer: int
    belief_set: np.ndarray
    confidence: float
    confidence_raw: int
    final: bool
    replies: list[str]
    ai_set: np.ndarray | None = None
    parse_error: str | None = None
    retried: bool = False
    fallback: bool = False


class LLMCollaborator:
    """An LLM playing the human in one interaction (a ``loop_reference.Collaborator``, like ``ParametricHuman``).

    Args:
        backend: a ``ChatBackend``.
        views: one ``TaskView`` for every round, or a list per round (the last repeats).
        rounds: the most AI sets it sees; it answers at most rounds + 1 times (the last answer is final).
        persona: extra system text (e.g. "You trust the AI a lot." for an over-trusting person).
        temperature, max_tokens, seed: passed to the backend; round k uses seed + k.
    """

    def __init__(self, backend: ChatBackend, views: TaskView | Sequence[TaskView], *, rounds: int = 3,
                 persona: str = "", temperature: float = 0.0, max_tokens: int = 96, seed: int = 0):
        self.views = [views] if isinstance(views, TaskView) else list(views)
        if not self.views:
            raise ValueError("views must not be empty")
        if len({v.labels for v in self.views}) != 1:
            raise ValueError("every round's view must share one label space")
        if rounds < 1:
            raise ValueError(f"rounds must be >= 1, got {rounds}")
        self.backend, self.rounds, self.persona = backend, rounds, persona
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed
        self.labels = self.views[0].labels
        self.records: list[RoundRecord] = []
        self.round = 0  # AI sets seen so far
        self.stopped = False

    # The Collaborator protocol. The first call asks the model for round 1.
    def answer(self) -> int:
        return self._current().answer

    def belief_set(self) -> np.ndarray:
        return self._current().belief_set

    def confidence(self) -> float:
        return self._current().confidence

    def see(self, ai_set: np.ndarray, ai_top: int = -1) -> bool:
        """Show the AI set; the model answers the next round; True once it says its answer is final."""
        self._current()
        self.round += 1
        record = self._ask(np.asarray(ai_set, dtype=bool))
        self.records.append(record)
        # ``rounds`` AI sets at most, hence rounds + 1 answers, the last being final (as in loop_reference).
        self.stopped = record.final or len(self.records) > self.rounds
        return self.stopped

    # Internals.
    def _current(self) -> RoundRecord:
        if not self.records:
            self.records.append(self._ask(None))
        return self.records[-1]

    def messages(self, view: TaskView, ai_set: np.ndarray | None) -> list[dict]:
        k = len(self.records) + 1
        system = f"You are {view.role}. {self.persona}".strip() + " " + FORMAT
        parts = [view.description, "", f"Question: {view.question}",
                 "Allowed answers: " + ", ".join(view.labels) + ".", f"This is round {k} of at most {self.rounds + 1}."]
        if self.records:
            parts.append("Your previous answers: " + "; ".join(
                f"round {r.round}: {self.labels[r.answer]} (confidence {r.confidence_raw})" for r in self.records) + ".")
        if ai_set is not None:
            shown = [self.labels[i] for i in np.flatnonzero(ai_set)]
            parts.append("The AI assistant says the answer is one of: " + (", ".join(shown) if shown else
                                                                           "(it shows no candidates)") + ".")
        parts.append(FORMAT)
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]

    def _ask(self, ai_set: np.ndarray | None) -> RoundRecord:
        k = len(self.records) + 1
        view = self.views[min(k - 1, len(self.views) - 1)]
        messages = self.messages(view, ai_set)
        replies, error, retried = [], None, False
        for attempt in range(2):
            text = self.backend.complete(messages, temperature=self.temperature, max_tokens=self.max_tokens,
                                         seed=self.seed + k + 1000 * attempt)
            replies.append(text)
            try:
                reply = parse_reply(text, view.labels)
            except ReplyError as exc:
                error, retried = str(exc), True
                messages = messages + [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": f"Your reply could not be used: {exc}. {FORMAT}"}]
                continue
            return self._record(k, reply, replies, ai_set, error=None, retried=attempt > 0)
        previous = self.records[-1] if self.records else None
        fallback = Reply(previous.answer, previous.confidence_raw, False) if previous else Reply(0, 1, False)
        return self._record(k, fallback, replies, ai_set, error=error, retried=retried, fallback=True)

    def _record(self, k, reply: Reply, replies, ai_set, *, error, retried, fallback=False) -> RoundRecord:
        belief = np.zeros(len(self.labels), dtype=bool)
        belief[reply.answer] = True
        return RoundRecord(round=k, answer=reply.answer, belief_set=belief, confidence=(reply.confidence - 1) / 4,
                           confidence_raw=reply.confidence, final=reply.final, replies=replies, ai_set=ai_set,
                           parse_error=error, retried=retried, fallback=fallback)


# ---------------------------------------------------------------- one interaction

AIPolicy = Callable[[Prefix], np.ndarray]  # the round-k prefix -> (K,) bool AI set


@dataclass
class LLMInteraction:
    """The rounds of one interaction: per round the human state and the AI set built from it."""

    records: list[RoundRecord]
    ai_sets: list[np.ndarray] = field(default_factory=list)  # C_1..C_n, C_k built after round k's answer

    @property
    def answers(self) -> list[int]:
        return [r.answer for r in self.records]

    @property
    def parse_failures(self) -> int:
        return sum(r.fallback for r in self.records)

    def prefix(self, k: int | None = None) -> Prefix:
        """The ``rules.Prefix`` of round k (default: the last round)."""
        k = len(self.records) if k is None else k
        rs = self.records[:k]
        n = len(rs[0].belief_set)
        return Prefix(np.array([r.belief_set for r in rs]), np.array([r.answer for r in rs]),
                      np.array([r.confidence for r in rs], dtype=float),
                      np.array(self.ai_sets[:k - 1], dtype=bool).reshape(k - 1, n))


def play(person: LLMCollaborator, ai: AIPolicy, rounds: int | None = None) -> LLMInteraction:
    """Run one interaction as the simulator's loop does (``loop_reference.play_rounds``): answer, AI set
    from the prefix, see, repeat.

    Stops after ``rounds`` AI sets (default and at most ``person.rounds``) or once the person says "final".
    ``records`` then holds the answers a_1..a_{n+1}, the last being the final answer.
    """
    rounds = person.rounds if rounds is None else rounds
    result = LLMInteraction(person.records)

    def show(prefix: Prefix) -> tuple[np.ndarray, int]:
        shown = np.asarray(ai(prefix), dtype=bool)
        result.ai_sets.append(shown)
        return shown, -1  # the language model reads the set, not the AI's ranking within it

    play_rounds(person, show, rounds)
    return result


__all__ = [
    "AIPolicy", "LLMCollaborator", "LLMInteraction", "Reply", "ReplyError", "RoundRecord", "TaskView",
    "first_json_object", "medical_views", "parse_reply", "play", "shape_view",
]
