"""The answer gate: only a verified, confident, time-cited inspector verdict may answer.

VideoSEAL's rule (docs/video.md, "Method: the frame-level verification gate"): a verdict ``v`` of
an inspection of spans S passes iff

    v.status == "ANSWER"  and  v.answer in the option letters
    and  (v.confidence >= tau (0.95)  or  the question names a fixed time range)
    and  every time cited in v.evidence lies in the union of S, +- 1 s.

This is the rule the upstream inspector prompt states (``build_visual_inspect_prompt``: letters
"only if confidence >= 0.95 and every element of the question is verified", fixed-range questions
always answered, evidence cited as HH:MM:SS from the shown spans). Upstream does not parse the
verdict at inference time to enforce it (its training reward does); here the agent does.

Choice (upstream is silent): an ANSWER that cites no time at all fails, with the reason "the verdict
cites no time in the inspected spans" -- the prompt demands HH:MM:SS citations in Evidence, and an
uncited answer gives the groundedness metrics nothing to check.

:func:`parse_verdict` reads the inspector's reply format (``Answer:`` / ``Evidence:`` /
``Confidence:`` / ``SearchMoreType:`` / ``Missing:`` / ``Next search:`` / ``Reminder:`` lines,
upstream ``visual_inspect.txt`` and ``visual_inspect_search_more_typed.txt``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from engines.video.spans import Span, TimeFormatError, format_time, parse_time
from engines.video.trajectory import SEARCH_MORE_TYPES, Verdict

TAU = 0.95  # upstream: letters only with confidence >= 0.95
CITE_TOLERANCE_S = 1.0  # a cited time may lie this far outside an inspected span (whole-second citations)
UNPARSABLE = "unparsable inspector reply"


@dataclass(frozen=True)
class GateResult:
    """Whether the verdict may answer, and why (the first failed condition in plain words, or "passed").

    Truthy exactly when it passed, so ``if gate(v, letters, spans):`` reads as the loop in docs/video.md.
    """

    passed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.passed


def _describe_letters(letters: tuple[str, ...]) -> str:
    """``"A-D"`` for a run of consecutive letters, else ``"A, B, D"``."""
    if not letters:
        return "(none)"
    codes = [ord(letter) for letter in letters]
    if len(letters) > 2 and all(len(x) == 1 for x in letters) and codes == list(range(codes[0], codes[0] + len(codes))):
        return f"{letters[0]}-{letters[-1]}"
    return ", ".join(letters)


def _describe_confidence(confidence: float, tau: float) -> str:
    """Two decimals, or more where two would print the confidence equal to tau (0.949 vs 0.95)."""
    digits = 2
    while digits < 6 and f"{confidence:.{digits}f}" == f"{tau:.{digits}f}":
        digits += 1
    return f"{confidence:.{digits}f}"


def gate(
    verdict: Verdict,
    options_letters: Iterable[str],
    inspected_spans: Iterable[Span],
    *,
    tau: float = TAU,
    fixed_range: bool = False,
    tolerance_s: float = CITE_TOLERANCE_S,
) -> GateResult:
    """Decide whether ``verdict`` may answer the question.

    Args:
        verdict: the inspector's parsed verdict.
        options_letters: the letters of the options, e.g. ``("A", "B", "C", "D")`` or ``"ABCD"``.
        inspected_spans: the spans the inspector looked at (their union is the evidence window).
        tau: the confidence threshold.
        fixed_range: the question names the time range to look at; the inspector must answer it
            whatever its confidence, so the confidence condition is dropped.
        tolerance_s: how far (s) outside an inspected span a cited time may lie.

    Returns:
        GateResult(passed, reason): the reason names the first failed condition, checked in the order
        status, answer, confidence, citations; ``"passed"`` when all hold. A multi-letter answer
        (``"A,C"``) is not one option and fails.
    """
    if not 0.0 <= tau <= 1.0:
        raise ValueError(f"tau must be from 0 to 1, got {tau}")
    if tolerance_s < 0:
        raise ValueError(f"tolerance_s must be 0 or more, got {tolerance_s}")
    letters = tuple(options_letters)
    spans = tuple(inspected_spans)
    if verdict.status != "ANSWER":
        return GateResult(False, "the inspector asked to search more")
    if verdict.answer not in letters:
        return GateResult(False, f"answer {verdict.answer!r} is not among the options {_describe_letters(letters)}")
    if not fixed_range and verdict.confidence < tau:
        return GateResult(False, f"confidence {_describe_confidence(verdict.confidence, tau)} is below {tau:.2f}")
    if not verdict.cited_times:
        return GateResult(False, "the verdict cites no time in the inspected spans")
    for t in verdict.cited_times:
        if not any(span.contains(t, tolerance_s) for span in spans):
            return GateResult(False, f"cited time {format_time(t)} lies outside the inspected spans")
    return GateResult(True, "passed")


# ---------------------------------------------------------------------------------------------------
# Reading the inspector's reply.

_HEADER = re.compile(
    r"(answer|evidence|confidence|missing|next[ _-]?search(?:es)?|reminder|search[ _-]?more[ _-]?type)\s*[:：]\s*(.*)",
    re.IGNORECASE,
)
_FIELD = {name: name for name in ("answer", "evidence", "confidence", "missing", "reminder")}
_BULLET = re.compile(r"^(?:[-*•>]+|#+|\d+[.)])\s+")
# HH:MM:SS or MM:SS, optionally with fractional seconds, not part of a longer run of digits and colons.
_TIME = re.compile(r"(?<![\d:])\d{1,2}(?::\d{2}){1,2}(?:\.\d+)?(?![\d:])")
_NUMBER = re.compile(r"(\d+(?:\.\d+)?|\.\d+)\s*(%?)")
_NOTHING = {"", "none", "n/a", "na", "-", "nothing", "null"}


def _clean_line(line: str) -> str:
    line = line.replace("**", "").strip()
    return _BULLET.sub("", line).strip()


def _field_name(header: str) -> str:
    key = re.sub(r"[ _-]", "", header.lower())
    if key.startswith("nextsearch"):
        return "next_search"
    if key == "searchmoretype":
        return "search_more_type"
    return _FIELD[key]


def _sections(text: str) -> dict[str, str]:
    """The text of each ``Name: value`` field; a field runs on over the following lines until the
    next field. The first occurrence of a field counts (a repeated one is ignored)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for raw in text.splitlines():
        line = _clean_line(raw)
        match = _HEADER.match(line)
        if match:
            name = _field_name(match.group(1))
            current = None if name in found else found.setdefault(name, [])
            if current is not None and match.group(2).strip():
                current.append(match.group(2).strip())
        elif current is not None and line:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in found.items()}


def _answer(value: str) -> str | None:
    """``"SEARCH_MORE"`` -> None; option letters -> ``"B"`` / ``"A,C"``; anything else -> the text itself."""
    value = value.strip().strip("`'\"").strip()
    if re.match(r"search[ _-]?more\b", value, re.IGNORECASE):
        return None
    tokens = [token.strip("()[]. ") for token in re.split(r"\s*[,/&]\s*|\s+and\s+", value)]
    if tokens and all(re.fullmatch(r"[A-Za-z]", token) for token in tokens):
        return ",".join(dict.fromkeys(token.upper() for token in tokens))
    # "(B) a red car", "B. a red car", "B) a red car": the letter, not the option text.
    match = re.match(r"^\(([A-Za-z])\)|^([A-Z])[.):](?:\s|$)", value)
    if match:
        return (match.group(1) or match.group(2)).upper()
    return value


def _confidence(value: str | None) -> float:
    """The first number; a percentage (``95%``, or a bare number above 1 up to 100) is divided by
    100; a missing or unreadable confidence is 0.0."""
    match = _NUMBER.search(value or "")
    if not match:
        return 0.0
    number = float(match.group(1))
    if match.group(2) or 1.0 < number <= 100.0:
        number /= 100.0
    return number if 0.0 <= number <= 1.0 else 0.0


def cited_times(text: str) -> tuple[float, ...]:
    """Every ``HH:MM:SS`` / ``MM:SS`` time in ``text``, in seconds, first occurrence order, no repeats.

    >>> cited_times("from 00:12:05–00:12:20, then at 12:30")
    (725.0, 740.0, 750.0)
    """
    times: dict[float, None] = {}
    for match in _TIME.finditer(text):
        try:
            times.setdefault(parse_time(match.group(0)), None)
        except TimeFormatError:  # "12:75" is no time
            continue
    return tuple(times)


def _queries(value: str) -> tuple[str, ...]:
    """Query phrases split on new lines, ``;``, ``,`` and ``|``, bullets and quotes removed."""
    if value.strip().lower() in _NOTHING:
        return ()
    phrases = (_clean_line(part).strip("\"'` ").rstrip(".") for part in re.split(r"[\n;,|]", value))
    return tuple(phrase for phrase in phrases if phrase and phrase.lower() not in _NOTHING)


def _search_more_type(value: str | None) -> str | None:
    key = re.sub(r"[\s-]+", "_", (value or "").strip().strip("`'\".").upper())
    return key if key in SEARCH_MORE_TYPES else None


def parse_verdict(text: str) -> Verdict:
    """The :class:`Verdict` of an inspector reply in the upstream format::

        Answer: <letters | SEARCH_MORE>
        Evidence: <sentences citing HH:MM:SS>
        Confidence: <0.00-1.00>
        SearchMoreType: <SPAN_MISMATCH | ...>   (typed prompt, SEARCH_MORE only)
        Missing: <what is not visible>           (SEARCH_MORE only)
        Next search: <1-3 query phrases>         (SEARCH_MORE only)
        Reminder: <...>                          (ignored)

    Field names are read case-insensitively, with markdown bold and bullets removed and extra space
    ignored; a field's text may run on over the following lines. A missing Confidence is 0.0;
    ``cited_times`` are all HH:MM:SS / MM:SS times in Evidence. An answer such as ``"(B) a red car"``
    gives ``"B"``, ``"a, c"`` gives ``"A,C"``; any other answer text is kept as it is (the gate then
    rejects it). A reply with no (or an empty) Answer line is a SEARCH_MORE verdict with the raw text
    as evidence, confidence 0.0 and ``missing = "unparsable inspector reply"``.
    """
    fields = _sections(text or "")
    if not fields.get("answer"):
        return Verdict("SEARCH_MORE", None, 0.0, text or "", (), UNPARSABLE, (), None)
    answer = _answer(fields["answer"])
    if answer == "":  # an Answer line holding only quotes or backticks
        return Verdict("SEARCH_MORE", None, 0.0, text, (), UNPARSABLE, (), None)
    evidence = fields.get("evidence", "")
    missing = fields.get("missing", "")
    return Verdict(
        status="ANSWER" if answer is not None else "SEARCH_MORE",
        answer=answer,
        confidence=_confidence(fields.get("confidence")),
        evidence=evidence,
        cited_times=cited_times(evidence),
        missing="" if missing.lower().rstrip(".") in _NOTHING else missing,
        next_queries=_queries(fields.get("next_search", "")),
        search_more_type=_search_more_type(fields.get("search_more_type")) if answer is None else None,
    )


def parse_answer_only(text: str, options_letters: Iterable[str]) -> str | None:
    """The option letter of a reply to the answer-only prompt (upstream
    ``visual_inspect_last_step_mcq_prompt.txt``: "Respond with only the letter"), used by the forced
    last-step and full-video inspections; ``None`` when the reply names no single option.

    >>> parse_answer_only("The best answer is: (C)", "ABCD")
    'C'
    """
    letters = set(options_letters)
    fields = _sections(text or "")
    candidates = [fields["answer"]] if fields.get("answer") else []
    candidates.append((text or "").strip())
    for candidate in candidates:
        answer = _answer(candidate)
        if answer in letters:
            return answer
    match = re.findall(r"(?:^|[\s(\[:])([A-Z])(?=$|[\s).\]:,])", text or "")
    found = [letter for letter in match if letter in letters]
    return found[-1] if len(set(found)) == 1 else None
