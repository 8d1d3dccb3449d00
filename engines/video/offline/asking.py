"""What a question asks, read from its words: the kind of question, the object it is about, the time
it names, and what each option means. Shared by the offline planner (where to look) and the offline
inspector (what to check); no model, rules over the words.

Kinds: ``colour``, ``shape``, ``position``, ``motion``, ``count`` (objects in a frame), ``repeat``
("how many separate times does X appear"), ``order`` (which appears first or last), ``text`` (what
is written on screen); ``None`` when none of them fits.

Times (:func:`time_hint`): clock times ("at 04:10", "at 1:02:15", "between 2:10 and 2:40"), marks
in words ("around the two-minute mark", "at minute 3", "90 seconds in"), parts of the video ("in
the first minute", "in the last 2 minutes", "near the end", "at the beginning", "in the middle"),
and an event of an object ("after the blue square disappears", "when the red circle appears").
Relative times need the video's duration; the agent gives it to the question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from engines.video.offline.perception import SHAPE_WORDS, colour_word, normalise_place
from engines.video.questions import Question
from engines.video.spans import Span, TimeFormatError, parse_time

KINDS = ("colour", "shape", "position", "motion", "count", "repeat", "order", "text")
AROUND_S = 15.0  # "around" a time: this far either side
AT_S = 2.5  # "at" a time: this far either side
AFTER_S = 60.0  # "after X disappears": what shows up first in the minute after it
PART_S = 60.0  # "near the end", "at the beginning": a tenth of the video, at least this long
ANY_OBJECT = frozenset({"object", "objects", "shape", "shapes", "thing", "things", "item", "items"})
NUMBER_WORDS = {"zero": 0, "no": 0, "none": 0, "one": 1, "a": 1, "an": 1, "once": 1, "single": 1, "two": 2,
                "twice": 2, "three": 3, "thrice": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
                "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
                "forty": 40, "fifty": 50, "sixty": 60}
_NUMBER = r"(?:\d+(?:\.\d+)?|" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")"
_CLOCK = re.compile(r"(?<![\d:])(\d{1,2}:\d{2}(?::\d{2})?)(?![\d:])")


def number(text: str) -> float | None:
    """A number written in digits or words ("3", "three", "twenty five", "two and a half"), or None."""
    words = re.findall(r"[a-z]+|\d+(?:\.\d+)?", text.lower().replace("-", " "))
    if not words:
        return None
    total, seen = 0.0, False
    for word in words:
        if re.fullmatch(r"\d+(?:\.\d+)?", word):
            total, seen = total + float(word), True
        elif word in NUMBER_WORDS and not (word in {"a", "an"} and seen):
            total, seen = total + NUMBER_WORDS[word], True
        elif word == "half":
            total, seen = total + 0.5, True
        elif word not in {"and", "times", "time", "a", "an"}:
            return None
    return total if seen else None


# ------------------------------------------------------------------ times


@dataclass(frozen=True)
class Anchor:
    """An event of an object that places the question in time: ``event`` is "appears" or
    "disappears"; ``relation`` is "after", "before" or "when"."""

    relation: str
    colour: str | None
    shape: str | None
    event: str

    def words(self) -> str:
        return " ".join(w for w in (self.colour, self.shape) if w)


@dataclass(frozen=True)
class TimeHint:
    """Where in the video a question points: ``span`` (seconds; a point has start = end) with the
    point it is about when it names one (``at``), or an ``anchor`` event; ``phrase`` is the words."""

    phrase: str
    span: Span | None = None
    at: float | None = None
    anchor: Anchor | None = None
    clock: bool = False  # named with a clock time (LVBench's fixed-range questions)


def _part(duration: float) -> float:
    """How much of a video "near the end" (or "at the beginning") is: a tenth, at least a minute,
    at most half."""
    return min(duration / 2, max(PART_S, 0.1 * duration))


def _window(centre: float, half: float, duration: float | None) -> Span:
    end = centre + half if duration is None else min(duration, centre + half)
    return Span(max(0.0, centre - half), max(max(0.0, centre - half), end))


_PART = re.compile(rf"\b(?:in|during|within)\s+the\s+(first|last|final|opening|closing)\s+(?:({_NUMBER})\s+)?"
                   r"(minute|second)s?\b")
# Words that place a question in time and would read as another kind's words ("first", "last").
_TIME_WORDS = re.compile(_PART.pattern + r"|\bat first\b|\b(?:at|in) the (?:very )?(?:first|last) (?:moments?|frames?)\b")


def time_hint(stem: str, duration: float | None = None) -> TimeHint | None:
    """The time a question's stem names, or None (see the module docstring). Relative parts of the
    video ("near the end") need ``duration``; without it they give None."""
    text = stem.lower()
    clocks = [m for m in _CLOCK.finditer(text)]
    try:
        times = [parse_time(m.group(1)) for m in clocks]
    except TimeFormatError:
        times = []
    if len(times) >= 2 and re.search(r"\b(between|from)\b", text):
        start, end = sorted(times[:2])
        return TimeHint(text[clocks[0].start():clocks[1].end()], Span(start, end), clock=True)
    if times:
        half = AROUND_S if re.search(r"\b(around|about|roughly|approximately|near)\s+" + re.escape(clocks[0].group(1)),
                                     text) else AT_S
        return TimeHint(clocks[0].group(0), _window(times[0], half, duration), at=times[0], clock=True)
    mark = re.search(rf"\b(around|about|near|at|by)?\s*(?:the\s+)?({_NUMBER}(?:[\s-]+and[\s-]+a[\s-]+half)?)"
                     r"[\s-]+(minute|second)s?[\s-]+mark\b", text)
    if mark is None:
        mark = re.search(rf"\b(around|about|near|at)?\s*(?:minute)\s+({_NUMBER})()\b", text)
    if mark is None:
        mark = re.search(rf"\b(around|about|at)?\s*({_NUMBER})\s+(minute|second)s?\s+in(?:to the video)?\b", text)
    if mark is not None:
        value = number(mark.group(2))
        if value is not None:
            seconds = value * (1 if mark.group(3) == "second" else 60)
            half = AT_S if (mark.group(1) or "") == "at" else AROUND_S
            return TimeHint(mark.group(0).strip(), _window(seconds, half, duration), at=seconds)
    part = _PART.search(text)
    if part is not None:
        length = (number(part.group(2)) if part.group(2) else 1.0) or 1.0
        length *= 1 if part.group(3) == "second" else 60
        if part.group(1) in {"first", "opening"}:
            return TimeHint(part.group(0), Span(0.0, length if duration is None else min(length, duration)))
        if duration is None:
            return None
        return TimeHint(part.group(0), Span(max(0.0, duration - length), duration))
    anchor = _anchor(text)
    if anchor is not None:
        return TimeHint(anchor[0], anchor=anchor[1])
    if duration is not None:
        if re.search(r"\b(near|at|towards?|by|close to)\s+the\s+(very\s+)?end\b|\bin the closing\b|\bfinal moments\b",
                     text):
            return TimeHint("near the end", Span(max(0.0, duration - _part(duration)), duration))
        if re.search(r"\b(near|at|towards?|in)\s+the\s+(very\s+)?(beginning|start|opening)\b|\bat first\b", text):
            return TimeHint("at the beginning", Span(0.0, min(duration, _part(duration))))
        if re.search(r"\b(in|around|near)\s+the\s+middle\s+of\s+the\s+video\b|\bhalfway\b", text):
            return TimeHint("in the middle", _window(duration / 2, max(AROUND_S, _part(duration) / 2), duration))
    return None


def _anchor(text: str) -> tuple[str, Anchor] | None:
    found = re.search(r"\b(right after|just after|after|before|just before|when|once|as soon as)\s+the\s+"
                      r"([a-z]+(?:\s+[a-z]+)?)\s+(appears?|disappears?|shows? up|vanish(?:es)?|leaves?|enters?|"
                      r"(?:is|are) gone|go(?:es)? away|first appears?)\b", text)
    if found is None:
        return None
    relation = "after" if "after" in found.group(1) or found.group(1) in {"once", "as soon as"} else \
        ("before" if "before" in found.group(1) else "when")
    colour, shape = _object_words(found.group(2).split())
    event = "disappears" if re.match(r"disappear|vanish|leave|is gone|are gone|go", found.group(3)) else "appears"
    return found.group(0), Anchor(relation, colour, shape, event)


# ------------------------------------------------------------------ the object and the kind


def _object_words(words: Sequence[str]) -> tuple[str | None, str | None]:
    """The colour word and shape word among ``words`` (the last of each), or None."""
    colour = shape = None
    for word in words:
        if colour_word(word) is not None:
            colour = colour_word(word)
        elif word in SHAPE_WORDS or word in ANY_OBJECT:
            shape = word
    return colour, shape


@dataclass(frozen=True)
class Ask:
    """What a question asks: its ``kind``, the object it is about (``colour`` and ``shape`` words,
    ``place`` when the stem names where it is), its time, and for an ``order`` question whether the
    first or the last is wanted."""

    kind: str | None
    colour: str | None = None
    shape: str | None = None
    place: str | None = None
    hint: TimeHint | None = None
    last: bool = False
    narrated: str | None = None  # "while the narrator talks about the kiln": the topic
    options: tuple[str, ...] = field(default_factory=tuple)
    named: tuple[tuple[str | None, str | None], ...] = ()  # objects the stem names ("X or Y"), by colour and shape

    @property
    def target(self) -> str:
        """The object in words: "blue square", "circle", "object"."""
        return " ".join(w for w in (self.colour, _singular(self.shape) if self.shape else None) if w) or "object"


def _singular(word: str) -> str:
    if word.endswith("es") and word[:-2] in SHAPE_WORDS:
        return word[:-2]
    return word[:-1] if word.endswith("s") and word[:-1] in {*SHAPE_WORDS, "object", "shape", "thing", "item"} else word


_DIRECTION_WORDS = {"left": "left", "leftward": "left", "leftwards": "left", "right": "right", "rightward": "right",
                    "rightwards": "right", "up": "up", "upward": "up", "upwards": "up", "down": "down",
                    "downward": "down", "downwards": "down"}
_STILL = re.compile(r"\b(still|stationary|not move|does not move|doesn't move|do not move|don't move|no motion|"
                    r"motionless|stays? (?:in place|put)|static|not moving|stands still|standing still)\b")


def direction_option(text: str) -> str | None:
    """A motion option as left, right, up, down or still: "from left to right" -> right, "it moves
    upwards" -> up, "it does not move" -> still; None when it names none."""
    lowered = text.lower()
    if _STILL.search(lowered):
        return "still"
    across = re.search(r"\b(left|right|top|bottom)\s+to\s+(?:the\s+)?(left|right|top|bottom)\b", lowered)
    if across:
        return {"left": "left", "right": "right", "top": "up", "bottom": "down"}[across.group(2)]
    found = [_DIRECTION_WORDS[w] for w in re.findall(r"[a-z]+", lowered) if w in _DIRECTION_WORDS]
    return found[-1] if len(set(found)) == 1 else None


def count_option(text: str) -> float | None:
    """A count option as a number: "3", "three", "3 times", "twice", "none"."""
    return number(re.sub(r"\b(times?|objects?|shapes?|of them|separate|different)\b", " ", text.lower()))


def object_option(text: str) -> tuple[str | None, str | None]:
    """An option naming an object ("the red circle") as its colour and shape words."""
    return _object_words(re.findall(r"[a-z]+", text.lower()))


def _options_kind(options: Sequence[str]) -> str | None:
    """The kind the options alone point to, when all of them are of one sort."""
    if all(colour_word(o.strip().split()[-1] if o.strip() else "") for o in options) and \
            all(len(o.split()) <= 2 for o in options):
        return "colour"
    if all(count_option(o) is not None for o in options):
        return "count"
    if all(direction_option(o) is not None for o in options):
        return "motion"
    if all(normalise_place(o) is not None for o in options):
        return "position"
    if all(re.sub(r"^(an?|the)\s+", "", o.strip().lower()).rstrip("s") in {w.rstrip("s") for w in SHAPE_WORDS}
           for o in options):
        return "shape"
    return None


def kind_of(stem: str, options: Sequence[str] = ()) -> str | None:
    """The kind of a question (see the module docstring) from its stem, then its options. Words
    that only place the question in time ("in the first minute", "at first") are left out first:
    "which way does it move in the first minute" asks about motion, not order."""
    text = _TIME_WORDS.sub(" ", stem.lower())
    if re.search(r"\bhow many\b.*\b(times|occasions|occurrences)\b|\bhow often\b", text):
        return "repeat"
    if re.search(r"\b(word|text|written|writing|caption|title|label|sign|letters|spelled|reads?)\b", text) and \
            not re.search(r"\bcolou?r\b", text):
        return "text"
    if re.search(r"\bhow many\b|\bnumber of\b|\bcount\b", text):
        return "count"
    if re.search(r"\b(appears?|shows? up|comes?|seen|visible|happens?)\s+(first|last|earliest|latest)\b|"
                 r"\b(first|last|earliest|latest)\s+to\s+appear\b|\bin what order\b|\bwhich .* (first|last)\b", text):
        return "order"
    if re.search(r"\b(what|which)\s+colou?r\b|\bcolou?r\s+(is|are|was|were)\b|\bcolou?r of\b", text):
        return "colour"
    if re.search(r"\b(which way|what direction|which direction|direction)\b|\bmov(e|es|ing)\b|\bdrift", text):
        return "motion"
    if re.search(r"\bwhere\b|\bwhich (part|corner|side|region|area|quadrant)\b|\bwhat (position|part)\b|"
                 r"\bposition\b|\blocated\b", text):
        return "position"
    if re.search(r"\b(what|which)\s+shape\b|\bshape of\b", text):
        return "shape"
    return _options_kind(options)


def read_question(question: Question) -> Ask:
    """The :class:`Ask` of a question (its stem, options and duration)."""
    stem = question.question
    hint = time_hint(stem, question.duration_s)
    text = stem.lower()
    if hint is not None and hint.anchor is not None:
        text = text.replace(hint.phrase, " ")  # the anchor's object is not the question's
    narrated = re.search(r"narrator talks about the ([a-z]+)", text)
    if narrated:
        text = text.replace(narrated.group(0), " ")
    kind = kind_of(stem, question.options)
    words = re.findall(r"[a-z]+", text)
    colour, shape = _object_words(words)
    if kind == "colour":
        colour = None  # "what colour is the square": the colour is asked, not given
    if kind == "shape":
        shape = None if shape not in ANY_OBJECT else shape
    place = None
    where = re.search(r"\b(?:in|at|on)\s+the\s+((?:upper|lower|top|bottom|middle|centre|center|left|right)"
                      r"(?:[\s-]+(?:left|right|centre|center|middle))?)(?:\s+(?:corner|half|side|of the screen))?",
                      text)
    if where is not None and kind != "position":
        place = normalise_place(where.group(0))
    last = bool(re.search(r"\b(last|latest|final)\b", _TIME_WORDS.sub(" ", text))) and kind == "order"
    return Ask(kind, colour, shape, place, hint, last, narrated.group(1) if narrated else None,
               tuple(question.options), _objects_named(text))


def _objects_named(text: str) -> tuple[tuple[str | None, str | None], ...]:
    """The objects a stem names by colour and shape ("the cyan square or the orange circle")."""
    words = re.findall(r"[a-z]+", text)
    return tuple((colour_word(first), second) for first, second in zip(words, words[1:], strict=False)
                 if colour_word(first) is not None and second in SHAPE_WORDS)
