"""Reading HOI-Eval's VLM judge replies, and turning them into upstream's record fields.

Upstream (``evaluation/gemini3_final_hoicheck_new_noquestion_track_google_newsim.py``; ``docs/hoi.md``, "Method:
HOI-Eval scores")
asks the judge for JSON: the interaction check returns ``{answer, confidence, reasoning}``
(confidence 0 for "no"), the identity match ``{best_match_id, identity_score, quality_score,
similarity, reasoning}`` with similarity = identity × quality. Models wrap JSON in Markdown fences,
add prose around it, write numbers as text; all that is accepted. A reply that still does not say
what is needed raises :class:`JudgeReplyError`, and the evaluator records it as the field's
``*_error`` (so the scorer skips the item, as upstream), never as a zero.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from engines.platform.files import echo


class JudgeReplyError(ValueError):
    """A judge reply that does not parse; the message says what is missing and quotes the reply."""


@dataclass(frozen=True)
class YesNo:
    answer: str  # "yes" | "no"
    confidence: float  # in [0, 1]; 0 for "no", as upstream asks
    reasoning: str


@dataclass(frozen=True)
class Match:
    best_match_id: int | None  # None: no candidate is the entity
    identity_score: float
    quality_score: float
    similarity: float  # identity x quality
    reasoning: str


def json_object(text: str) -> dict:
    """The first JSON object in ``text`` (inside a Markdown fence or not)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, flags=re.S)
    candidates = [fenced.group(1)] if fenced else []
    start = text.find("{")
    if start >= 0:
        depth = 0
        for end in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                candidates.append(text[start:end + 1])
                break
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    raise JudgeReplyError(f"no JSON object in the reply: {text[:200]!r}")


def _unit(value, field: str, text: str) -> float:
    """A number in [0, 1] (a percentage above 1 and up to 100 is read as such)."""
    try:
        number = float(str(value).strip().rstrip("%"))
    except (TypeError, ValueError):
        raise JudgeReplyError(f"{field} is not a number ({value!r}) in the reply: {text[:200]!r}") from None
    if 1.0 < number <= 100.0:
        number /= 100.0
    if not 0.0 <= number <= 1.0:
        raise JudgeReplyError(f"{field} {value!r} is outside 0-1 in the reply: {text[:200]!r}")
    return number


def parse_answer(text: str) -> tuple[str, float]:
    """A QA reply's ``answer`` (any text, as upstream's QA allows) and ``confidence`` in [0, 1],
    read as the other replies are (fenced or not, numbers as text, percentages)."""
    obj = json_object(text)
    answer = obj.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        raise JudgeReplyError(f"no answer in the reply: {text[:200]!r}")
    return answer.strip(), _unit(obj.get("confidence"), "confidence", text)


def parse_yes_no(text: str) -> YesNo:
    """The interaction check's reply: "yes" or "no" with a confidence ("no" always counts 0)."""
    obj = json_object(text)
    answer = str(obj.get("answer", "")).strip().lower()
    if answer.startswith("yes"):
        answer = "yes"
    elif answer.startswith("no"):
        answer = "no"
    else:
        raise JudgeReplyError(f"answer is neither yes nor no ({obj.get('answer')!r}) in the reply: {text[:200]!r}")
    if "confidence" not in obj:
        raise JudgeReplyError(f"no confidence in the reply: {text[:200]!r}")
    confidence = _unit(obj["confidence"], "confidence", text)
    return YesNo(answer, confidence if answer == "yes" else 0.0, str(obj.get("reasoning", "")))


def parse_match(text: str) -> Match:
    """The identity match's reply; similarity is recomputed as identity × quality when missing."""
    obj = json_object(text)
    for field in ("identity_score", "quality_score"):
        if field not in obj:
            raise JudgeReplyError(f"no {field} in the reply: {text[:200]!r}")
    identity = _unit(obj["identity_score"], "identity_score", text)
    quality = _unit(obj["quality_score"], "quality_score", text)
    similarity = _unit(obj["similarity"], "similarity", text) if "similarity" in obj else identity * quality
    best = obj.get("best_match_id")
    if best in (None, "", "none", "None", -1):
        best_id = None
    else:
        # Upstream reads the number out of ids such as "S0" or "O2" (re.search(r"\d+")).
        digits = re.search(r"\d+", best) if isinstance(best, str) else None
        try:
            best_id = int(digits.group()) if digits else int(best)
        except (TypeError, ValueError):
            raise JudgeReplyError(f"best_match_id is not a candidate number ({echo(best)}) in the reply: "
                                  f"{text[:200]!r}") from None
    return Match(best_id, identity, quality, similarity, str(obj.get("reasoning", "")))


def interaction_fields(replies: Iterable[str], mode: str) -> dict:
    """Upstream's interaction fields from the judge's replies over the (person, object) pairs:
    ``max_yes_confidence`` = the largest yes-confidence (0 when every pair says no), or
    ``max_yes_confidence_error`` when any reply does not parse, or there was no pair to judge."""
    replies = list(replies)
    if not replies:
        return {"mode": mode, "max_yes_confidence_error": "no person-object pair to judge"}
    try:
        verdicts = [parse_yes_no(reply) for reply in replies]
    except JudgeReplyError as error:
        return {"mode": mode, "max_yes_confidence_error": str(error)}
    return {"mode": mode, "max_yes_confidence": max(v.confidence for v in verdicts)}


def match_fields(entity: str, reply: str) -> dict:
    """Upstream's ``<entity>_identity_score``, ``_quality_score``, ``_similarity`` (entity:
    "subject" or "object") from the match reply, or ``<entity>_similarity_error``."""
    if entity not in ("subject", "object"):
        raise ValueError(f"entity must be 'subject' or 'object', got {echo(entity)}")
    try:
        match = parse_match(reply)
    except JudgeReplyError as error:
        return {f"{entity}_similarity_error": str(error)}
    return {f"{entity}_identity_score": match.identity_score, f"{entity}_quality_score": match.quality_score,
            f"{entity}_similarity": match.similarity}
