"""The collaboration study's interaction record: what one participant did on one image, typed.

A participant's vars hold ``{"collab": {"interactions": [...]}}``: one JSON object per started
interaction, in order (position i is interaction i). ``InteractionRecord`` is one of them,
``RoundRecord`` one round inside it, ``InteractionLog`` the list; ``StudyInteraction`` is a record
with the participant it belongs to (``stored.interaction_rows``).

The JSON layout is the one the study has always stored, so the records of participants who took
part before these classes existed load unchanged: the fields that belong to a later stage (the
frozen update count once a stream is opened, the outcome once an answer is final, the stream
update once errors are recorded) are left out of the JSON while they are unset, exactly as they
were absent before. ``model_dump(mode="json")`` and ``model_validate`` convert both ways.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, RootModel, SerializerFunctionWrapHandler, model_serializer

VARS_KEY = "collab"  # the participant vars' key; the records are its "interactions" list
Mode = Literal["online", "fixed", "none"]

_RECORD_CONFIG = ConfigDict(
    extra="forbid",  # every layout the study has stored is a subset of these fields: a stray key is a bug
    validate_assignment=True,
    use_attribute_docstrings=True,
)


class RoundRecord(BaseModel):
    """Round k of an interaction: the participant's answer and, when a set followed it, that set and its rule masks."""

    model_config = _RECORD_CONFIG

    answer: int
    """The count entered in this round (0..9)."""
    confidence: int
    """The confidence rating, 1 (guessing) .. ``C.CONFIDENCE_MAX`` (certain)."""
    protect: list[int] | None = None
    """Counts the protect rule marked on the prefix z_{t,k}; None when no set followed this round."""
    supply: list[int] | None = None
    """Counts the supply rule marked on the prefix z_{t,k}; None when no set followed this round."""
    ai_set: list[int] | None = None
    """The AI's set computed after this round and shown in round k+1 (sorted counts, may be empty); None when none followed."""

    @property
    def shown(self) -> bool:
        """A set followed this round (not after a final answer, never without an AI)."""
        return self.ai_set is not None


# Stage fields: absent from the JSON until their stage is reached (module docstring).
_OPTIONAL = frozenset({
    "frozen_seq", "calibrating", "final_round", "final_answer", "true_count", "correct", "err_harm", "err_comp",
    "fired_harm", "fired_comp", "stream_seq", "stream_phase", "q_harm_after", "q_comp_after",
})


class InteractionRecord(BaseModel):
    """One interaction t: the image, the thresholds it froze, its rounds, and once final its outcome.

    Fields in the order the study fills them: the start (round 1), the rounds, the outcome (final
    answer), the errors and the controller-stream update (final answer with an AI).
    """

    model_config = _RECORD_CONFIG

    # Started in round 1.
    index: int
    """Interaction index from 0 (its position in the participant's log)."""
    seed: int
    """The image seed (``images.interaction_seed``)."""
    difficulty: float
    """The image difficulty in [0, 1] (``images.interaction_difficulty``)."""
    mode: Mode
    """The condition's mode: "online" (thresholds move), "fixed" (η = 0) or "none" (no AI)."""
    stream: str | None = None
    """The controller stream "<study slug>:<condition>"; None without an AI."""
    q_harm: float | None = None
    """q^H frozen when round 1 was submitted; every set of the interaction uses it. None without an AI."""
    q_comp: float | None = None
    """q^C frozen when round 1 was submitted; None without an AI."""
    rounds: list[RoundRecord] = []
    """The rounds submitted so far, in order."""
    frozen_seq: int | None = None
    """The stream's update count when the thresholds were frozen (its delay is measured from it)."""
    calibrating: bool | None = None
    """The stream was still in its calibration batch when the thresholds were frozen."""

    # The outcome, once an answer is final.
    final_round: int | None = None
    """The round (from 1) whose answer was final; None while the interaction is in progress."""
    final_answer: int | None = None
    """The final count."""
    true_count: int | None = None
    """The number of triangles in the image."""
    correct: bool | None = None
    """final_answer == true_count."""

    # Errors and the stream update, once final with at least one set shown.
    err_harm: bool | None = None
    """Counterfactual harm: a protected count was the truth and a shown set left it out."""
    err_comp: bool | None = None
    """Missed complementarity: a supplied count was the truth and a shown set left it out."""
    fired_harm: bool | None = None
    """The protect rule marked the truth in some shown round."""
    fired_comp: bool | None = None
    """The supply rule marked the truth in some shown round."""
    stream_seq: int | None = None
    """The sequence number of the stream update this interaction made (``store.record_interaction``)."""
    stream_phase: str | None = None
    """That update's phase: "calibration", "excluded" or "online" (``store.PHASES``)."""
    q_harm_after: float | None = None
    """The stream's q^H after that update."""
    q_comp_after: float | None = None
    """The stream's q^C after that update."""

    @model_serializer(mode="wrap")
    def _stored_layout(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return {k: v for k, v in data.items() if v is not None or k not in _OPTIONAL}

    @property
    def is_final(self) -> bool:
        """The participant has marked an answer final (no more rounds)."""
        return self.final_round is not None

    @property
    def has_ai(self) -> bool:
        """The interaction runs with an AI (a controller stream and frozen thresholds)."""
        return self.stream is not None

    @property
    def shown_rounds(self) -> list[RoundRecord]:
        """The rounds a set followed, in order: the rounds the errors are computed over."""
        return [r for r in self.rounds if r.shown]

    @property
    def ai_sets(self) -> list[list[int]]:
        """The sets shown, in order."""
        return [r.ai_set for r in self.rounds if r.ai_set is not None]

    @property
    def first_answer(self) -> int | None:
        """The round-1 answer: the participant alone, before any set."""
        return self.rounds[0].answer if self.rounds else None

    @property
    def last_set(self) -> list[int] | None:
        """The set the next round shows (None when the last round had none)."""
        return self.rounds[-1].ai_set if self.rounds else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object stored in the participant's vars."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> InteractionRecord:
        return cls.model_validate(data)


class InteractionLog(RootModel[list[InteractionRecord]]):
    """A participant's interactions in order (interaction i at position i), as stored under ``collab.interactions``."""

    root: list[InteractionRecord] = []

    def __iter__(self) -> Iterator[InteractionRecord]:  # type: ignore[override] - the records, not the fields
        return iter(self.root)

    def __getitem__(self, index: int) -> InteractionRecord:
        return self.root[index]

    def __len__(self) -> int:
        return len(self.root)

    def get(self, index: int) -> InteractionRecord | None:
        """Interaction ``index`` if it has been started."""
        return self.root[index] if 0 <= index < len(self.root) else None

    @property
    def last(self) -> InteractionRecord | None:
        return self.root[-1] if self.root else None

    def start(self, record: InteractionRecord) -> None:
        """Put a newly started interaction at its index, dropping anything stored from there on."""
        del self.root[record.index:]
        self.root.append(record)

    @classmethod
    def from_vars(cls, participant_vars: Mapping[str, Any] | None) -> InteractionLog:
        """The log in a participant's vars (empty when the participant has not started an interaction)."""
        return cls.model_validate(list(((participant_vars or {}).get(VARS_KEY) or {}).get("interactions") or []))

    def write_to(self, participant_vars: MutableMapping[str, Any]) -> None:
        """Store the log in a participant's vars (other keys under ``collab`` are kept)."""
        participant_vars[VARS_KEY] = {**(participant_vars.get(VARS_KEY) or {}),
                                      "interactions": self.model_dump(mode="json")}


@dataclass(frozen=True)
class StudyInteraction:
    """One interaction of a study with the participant it belongs to (``stored.interaction_rows``)."""

    participant_id: int
    external_id: str
    condition: str | None
    record: InteractionRecord

    def to_row(self) -> dict[str, Any]:
        """A flat row: the participant's columns, then the record's fields (rounds stay a list of dicts)."""
        return {"participant_id": self.participant_id, "external_id": self.external_id,
                "condition": self.condition, **self.record.to_dict()}


__all__ = ["InteractionLog", "InteractionRecord", "RoundRecord", "StudyInteraction", "VARS_KEY"]
