"""The offline defaults of the video agent's roles: a heuristic planner (and the coupled baseline's
planner), and an inspector and a captioner built on the project's frame model.

They run with no network, on the CPU, on the synthetic benchmark (``engines.video.synthetic``):
the inspector answers questions whose options are the things the frame model reads (a colour, a
shape, a number of objects, a direction, a burned-in word), and asks to search more on anything
else. Labelled as such in the UI: they stand in for an LLM planner and a VLM inspector
(``engines.video.adapters``) so that the agent, its gate and its metrics can be studied offline.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from engines.video.decode import VideoReader, sample_times
from engines.video.index import sidecar
from engines.video.offline import frame_model
from engines.video.offline.asking import AFTER_S, ANY_OBJECT, AT_S, object_option, read_question
from engines.video.questions import Question
from engines.video.render import ARENA_BOTTOM, ARENA_TOP, COLOURS, SHAPES
from engines.video.roles import FRAME_MODEL, Finalize, Inspect, Inspection, Retrieve, register
from engines.video.spans import Span, format_time, merge, parse_time
from engines.video.subtitles import read_srt
from engines.video.trajectory import FrameRef, Step, Verdict

INSPECTOR_TAU = 0.95  # the upstream inspector prompt: letters only at confidence >= 0.95
PRESENT = 0.5  # P(objects on screen) above which a frame counts as showing objects
STILL = "they do not move"


@lru_cache(maxsize=4)
def _model(path: str):
    return frame_model.load(path)


def model_size(reader: VideoReader) -> tuple[int, int] | None:
    """The (width, height) to decode frames at for the frame model, None when the video already has
    its size: the model reads 160 x 120 frames (the synthetic videos' size), so a video of any other
    resolution or aspect ratio is scaled to it while decoding."""
    wanted = (frame_model.FRAME_WIDTH, frame_model.FRAME_HEIGHT)
    return None if (reader.info.width, reader.info.height) == wanted else wanted


def _pairs(reader: VideoReader, times: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """Frames at ``times`` and half a second later (the frame model's pairs), at the model's size."""
    end = reader.info.duration_s - 1e-3
    later = [min(t + frame_model.PAIR_GAP_S, end) for t in times]
    frames = reader.frames_at([*times, *later], size=model_size(reader))
    return np.stack(frames[:len(times)]), np.stack(frames[len(times):])


@dataclass(frozen=True)
class FrameReading:
    """What the frame model sees at one time: the most likely value of each head and P(objects)."""

    t: float
    present: float
    count: str
    shape: str
    colour: str
    direction: str
    word: str


MAX_SHIFT = 8  # pixels searched each way: objects drift 4 px in the half second between a pair's frames
MOVING = 2  # a shift of at least this many pixels is a drift; less is standing still


def direction_of(first: np.ndarray, second: np.ndarray, colour: str) -> str:
    """Which way the objects of ``colour`` moved from ``first`` to ``second`` (frames (H, W, 3)):
    the shift along one axis that best lays the first frame's pixels of that colour onto the
    second's (objects that wrap around an edge are a minority of the pixels). "still" below 2 px."""
    palette = np.asarray(COLOURS[colour], np.float32)

    def mask(frame: np.ndarray) -> np.ndarray:
        arena = frame[ARENA_TOP:ARENA_BOTTOM].astype(np.float32)
        return np.linalg.norm(arena - palette, axis=-1) < 60

    a, b = mask(first), mask(second)
    if a.sum() < 20:
        return "still"
    best, overlap = (0, 0), -1
    for dx, dy in [(d, 0) for d in range(-MAX_SHIFT, MAX_SHIFT + 1)] + [(0, d) for d in range(-MAX_SHIFT, MAX_SHIFT + 1)]:
        moved = np.roll(a, (dy, dx), axis=(0, 1))
        score = int((moved & b).sum())
        if score > overlap:
            best, overlap = (dx, dy), score
    dx, dy = best
    if max(abs(dx), abs(dy)) < MOVING:
        return "still"
    if abs(dx) >= abs(dy):
        return "right" if dx > 0 else "left"
    return "down" if dy > 0 else "up"


def read_frames(model, reader: VideoReader, times: Sequence[float]) -> tuple[list[FrameReading], dict[str, np.ndarray]]:
    """The frame model's readings at ``times`` and its probabilities per head (N, classes); the
    direction is measured from each pair (:func:`direction_of`) and given as a one-hot "head"."""
    first, second = _pairs(reader, times)
    probabilities = frame_model.predict(model, first, second)
    readings = []
    directions = np.zeros((len(times), len(frame_model.MOVES)), np.float32)
    for i, t in enumerate(times):
        best = {name: frame_model.HEADS[name][int(probabilities[name][i].argmax())] for name in frame_model.HEADS}
        present = float(1.0 - probabilities["count"][i][0])
        direction = direction_of(first[i], second[i], best["colour"]) if present >= PRESENT else "still"
        directions[i, frame_model.MOVES.index(direction)] = 1.0
        readings.append(FrameReading(t, present, best["count"], best["shape"], best["colour"], direction, best["word"]))
    return readings, {**probabilities, "direction": directions}


def describe(reading: FrameReading) -> str:
    """A frame in words, as a caption: "3 green diamonds drifting left; the word ROCKET"."""
    parts = []
    if reading.present >= PRESENT and reading.count != "0":
        n = int(reading.count)
        noun = reading.shape + ("s" if n > 1 else "")
        motion = "standing still" if reading.direction == "still" else f"drifting {reading.direction}"
        parts.append(f"{n} {reading.colour} {noun} {motion}")
    if reading.word != "none":
        parts.append(f"the word {reading.word} on screen")
    return "; ".join(parts) or "an empty scene"


# ------------------------------------------------------------------ captioner


@register("captioner", "frame-model")
class FrameModelCaptioner:
    """Captions a clip with what most of its frames (1 fps) show, and anything else seen in at least
    a quarter of them."""

    def __init__(self, weights: str | Path = FRAME_MODEL) -> None:
        self.model = _model(str(weights))
        # The index cache is keyed by the captioner's name: other weights, other captions.
        self.name = f"frame-model:{hashlib.sha256(Path(weights).read_bytes()).hexdigest()[:12]}"

    def caption_clips(self, reader: VideoReader, clips: Sequence[Span]) -> list[str]:
        times_per_clip = [sample_times([clip], fps=1.0, max_frames=64, duration=reader.info.duration_s)
                          for clip in clips]
        everything = [t for times in times_per_clip for t in times]
        readings, _ = read_frames(self.model, reader, everything) if everything else ([], {})
        captions, cursor = [], 0
        for times in times_per_clip:
            texts = [describe(r) for r in readings[cursor:cursor + len(times)]]
            cursor += len(times)
            counts: dict[str, int] = {}
            for text in texts:
                counts[text] = counts.get(text, 0) + 1
            ranked = sorted(counts, key=lambda text: -counts[text])
            kept = [ranked[0]] + [text for text in ranked[1:] if counts[text] * 4 >= len(texts)]
            captions.append(". Then ".join(kept) + ".")
        return captions


# ------------------------------------------------------------------ inspector


def _asked_head(options: Sequence[str]) -> str | None:
    """Which thing the frame model reads the options name (all of them), or None."""
    lowered = [o.strip().lower() for o in options]
    vocabularies = {"colour": set(COLOURS), "shape": set(SHAPES), "count": {"1", "2", "3", "4"},
                    "direction": {"left", "right", "up", "down", STILL},
                    "word": {w.lower() for w in frame_model.WORDS}}
    for head, words in vocabularies.items():
        if all(o in words for o in lowered):
            return head
    return None


def _conditions(stem: str) -> dict[str, str]:
    """The colour and shape a question's stem names ("the blue diamonds"): frames must show them."""
    words = re.findall(r"[a-z]+", stem.lower())
    found = {}
    for word in words:
        if word in COLOURS:
            found["colour"] = word
        singular = word[:-1] if word.endswith("s") else word
        if singular in SHAPES:
            found["shape"] = singular
    return found


def _option_value(head: str, option: str) -> str:
    value = option.strip().lower()
    if head == "direction" and value == STILL:
        return "still"
    return value.upper() if head == "word" else value


def _evidence(head: str, value: str, readings: Sequence[FrameReading]) -> str:
    times = ", ".join(format_time(r.t) for r in readings)
    if head == "word":
        return f"The word {value} is written on the screen at {times}."
    sample = readings[0]
    noun = sample.shape + "s"
    if head == "colour":
        return f"At {times} the {noun} on screen are {value}."
    if head == "shape":
        return f"At {times} the {sample.colour} objects on screen are {value}s ({value} shapes)."
    if head == "count":
        return f"At {times} there are {value} {sample.colour} {noun} on screen."
    if value == "still":
        return f"At {times} the {sample.colour} {noun} do not move: {STILL} (they stay in place)."
    return f"At {times} the {sample.colour} {noun} move {value}."


MIN_RELEVANCE = 0.2  # a frame whose relevance weight is below this does not count at all
# Words that put a narrator's mention of a place in the future or the past, not here and now.
NOT_HERE = ("later", "will", "earlier", "come back", "before", "already")


def _narrated_topic(stem: str) -> str | None:
    """The place a question's stem says the narrator talks about ("... talks about the kiln?")."""
    match = re.search(r"narrator talks about the ([a-z]+)", stem.lower())
    return match.group(1) if match else None


def _narration(video_path: str, spans: Sequence[Span]) -> list[str] | None:
    """The subtitle lines heard during ``spans`` (from ``<video>.srt``), or None without subtitles."""
    srt = sidecar(video_path, ".srt")
    if srt is None:
        return None
    return [cue.text for cue in _subtitles(str(srt)) if any(cue.span.start < s.end and cue.span.end > s.start
                                                            for s in spans)]


@lru_cache(maxsize=32)
def _subtitles(path: str):
    return read_srt(path)


def _talks_about(lines: Sequence[str], topic: str) -> bool:
    """Whether a line names ``topic`` as what is here now, not as a place to come back to or seen
    before: a keyword rule standing in for a VLM that reads the subtitles with the frames."""
    return any(topic in line.lower() and not any(marker in line.lower() for marker in NOT_HERE) for line in lines)


def _relevance(head: str, wanted: dict[str, str], probabilities: dict[str, np.ndarray]) -> np.ndarray:
    """How much each frame is about what the question asks (N,): for a word question, P(a word is
    shown); else P(objects on screen) times P(their colour and shape are the ones the stem names).
    Soft weights rather than the model's single best reading: a frame it is unsure of counts less."""
    if head == "word":
        return 1.0 - probabilities["word"][:, frame_model.WORD_CLASSES.index("none")]
    weights = 1.0 - probabilities["count"][:, 0]
    for name, value in wanted.items():
        weights = weights * probabilities[name][:, frame_model.HEADS[name].index(value)]
    return weights


@register("inspector", "frame-model")
class FrameModelInspector:
    """Answers from the frame model's readings of the inspected frames.

    A question about what is on screen "while the narrator talks about the X" is verified in both
    its parts, as upstream's inspector prompt asks (every element of the question): the subtitles
    heard in the inspected spans must name X as the place here and now (a keyword rule:
    ``NOT_HERE`` marks a promise to come back, or a look back); otherwise SPAN_MISMATCH.
    Each frame is weighted by how surely it shows objects of the colour and shape the stem names (or,
    for a word question, a word); each option's support is the weighted mean probability the model
    gives its value; the best option's support is the confidence. Below 0.95 (and not
    ``answer_only``), or with no relevant frame, the verdict is SEARCH_MORE: SPAN_MISMATCH when
    nothing relevant was seen, PARTIAL_EVIDENCE when it was seen too little or unclearly, and
    VISUAL_UNCLEAR for a question it cannot read at all. Evidence cites the frames that agree.
    """

    name = "frame-model"

    def __init__(self, weights: str | Path = FRAME_MODEL, tau: float = INSPECTOR_TAU) -> None:
        self.model = _model(str(weights))
        self.tau = tau

    def inspect(self, reader: VideoReader, spans: Sequence[Span], question: Question, *, context: str = "",
                fps: float = 2.0, max_frames: int = 48, answer_only: bool = False) -> Inspection:
        times = sample_times(list(spans), fps=fps, max_frames=max_frames, duration=reader.info.duration_s)
        readings, probabilities = read_frames(self.model, reader, times)
        frames = [FrameRef(t, None) for t in times]
        head = _asked_head(question.options)
        where = ", ".join(span.label() for span in merge(spans))
        if head is None:
            return self._search_more(frames, "VISUAL_UNCLEAR", "the question asks about something these frames "
                                     "cannot show", question, answer_only)
        topic = _narrated_topic(question.question)
        if topic is not None and not answer_only:
            heard = _narration(reader.path, spans)
            if heard is not None and not _talks_about(heard, topic):
                said = "; ".join(line for line in heard if topic in line.lower()) or "nothing about it"
                return self._search_more(frames, "SPAN_MISMATCH", f"the narrator does not talk about the {topic} "
                                         f"in {where} (heard: {said})", question, answer_only)
        wanted = _conditions(question.question)
        weights = _relevance(head, wanted, probabilities)
        relevant = [i for i in np.argsort(-weights, kind="stable") if weights[i] >= MIN_RELEVANCE]
        if weights.sum() < 1.0 or not relevant:
            missing = ("no written word" if head == "word" else
                       "no " + " ".join([wanted.get("colour", ""), wanted.get("shape", "object")]).strip() + "s")
            return self._search_more(frames, "SPAN_MISMATCH", f"{missing} seen in {where}", question, answer_only)
        relevant = sorted(relevant)
        classes = frame_model.MOVES if head == "direction" else frame_model.HEADS[head]
        w = weights[relevant]
        support = {}
        for letter, option in zip(question.letters, question.options, strict=True):
            value = _option_value(head, option)
            column = classes.index(value) if value in classes else None
            support[letter] = float((w * probabilities[head][relevant, column]).sum() / w.sum()) \
                if column is not None else 0.0
        letter = max(support, key=support.get)
        confidence = round(support[letter], 4)
        value = _option_value(head, question.option_text(letter))
        agreeing = [readings[i] for i in relevant if getattr(readings[i], head) == value] or [readings[relevant[0]]]
        cited = agreeing[:: max(1, len(agreeing) // 3)][:3]
        shown = question.option_text(letter).strip()
        # Upstream's inspector answers a question that names its time range whatever its confidence.
        if confidence < self.tau and not answer_only and not question.fixed_range:
            return Inspection(Verdict("SEARCH_MORE", None, confidence, _evidence(head, shown, cited),
                                      tuple(r.t for r in cited), missing=f"the frames do not settle it "
                                      f"(best option {letter}: {confidence:.2f})", next_queries=(),
                                      search_more_type="PARTIAL_EVIDENCE"), frames)
        return Inspection(Verdict("ANSWER", letter, confidence, _evidence(head, shown, cited),
                                  tuple(r.t for r in cited)), frames)

    @staticmethod
    def _search_more(frames, kind: str, missing: str, question: Question, answer_only: bool) -> Inspection:
        if answer_only:  # a forced answer with nothing seen: the first option, with no confidence
            return Inspection(Verdict("ANSWER", question.letters[0], 0.0, f"Nothing relevant seen: {missing}.",
                                      ()), frames)
        return Inspection(Verdict("SEARCH_MORE", None, 0.0, "", (), missing=missing,
                                  next_queries=(question.question,), search_more_type=kind), frames)


# ------------------------------------------------------------------ planners


def _named_time(stem: str) -> float | None:
    match = re.search(r"\b(\d{1,2}:\d\d(?::\d\d)?)\b", stem)
    return parse_time(match.group(1)) if match else None


def _inspected(history: Sequence[Step]) -> list[Span]:
    return [span for step in history if step.action == "inspect" for span in step.spans]


def _candidates(history: Sequence[Step]) -> list[Span]:
    """Hit spans of every search so far, best first within each search, newest search first,
    without those already inspected."""
    seen = _inspected(history)
    spans = []
    for step in reversed(history):
        if step.action == "retrieve":
            for hit in step.hits:
                if not any(hit.span.start < s.end and hit.span.end > s.start for s in seen + spans):
                    spans.append(hit.span)
    return spans


def _mentions(text: str, colour: str | None, shape: str | None) -> bool:
    """Whether an index text names an object of ``colour`` and ``shape`` (words, singular or plural)."""
    lowered = text.lower()
    words = [w for w in (colour, shape) if w and w not in ANY_OBJECT]
    return bool(words) and all(re.search(rf"\b{re.escape(w.rstrip('s'))}s?\b", lowered) for w in words)


def _hits(history: Sequence[Step]) -> list:
    """Every hit of every search so far (newest search first), one per span."""
    found, spans = [], set()
    for step in reversed(history):
        if step.action == "retrieve":
            for hit in step.hits:
                if hit.span not in spans:
                    spans.add(hit.span)
                    found.append(hit)
    return found


def _runs(spans: Sequence[Span], gap: float = 16.5) -> list[Span]:
    """Spans joined where less than ``gap`` seconds apart (clips in a row: one stretch of time)."""
    runs: list[Span] = []
    for span in sorted(spans):
        if runs and span.start - runs[-1].end <= gap:
            runs[-1] = Span(runs[-1].start, max(runs[-1].end, span.end))
        else:
            runs.append(span)
    return runs


def _searched(history: Sequence[Step], query: str) -> bool:
    return any(step.action == "retrieve" and step.args.get("query") == query for step in history)


def _object_query(colour: str | None, shape: str | None) -> str:
    return " ".join(w for w in (colour, shape) if w and w not in ANY_OBJECT)


@register("planner", "heuristic")
class HeuristicPlanner:
    """Search with the question, then inspect the hits one at a time, best first (those naming the
    object the question is about first); search again with what an inspection says is missing;
    finish when nothing is left to look at.

    It reads the question's time and kind (:mod:`engines.video.offline.asking`): a named time or part of the
    video ("at 04:10", "around the two-minute mark", "near the end") is inspected there first; "after
    the blue square disappears" searches for the blue square and inspects the end of its stretch and
    what follows; "how many separate times" inspects every stretch whose captions name the object
    and the gaps between them; "which appears first (last)" the start of the first two stretches
    where each option's object is named."""

    name = "heuristic"

    def act(self, question: Question, history: Sequence[Step], steps_left: int) -> Retrieve | Inspect | Finalize:
        ask = read_question(question)
        hint = ask.hint
        if hint is not None and hint.span is not None and not _inspected(history):
            span = Span(max(0.0, hint.at - 2.0), hint.at + 2.0) if hint.at is not None and \
                hint.span.length <= 2 * AT_S + 1e-6 else hint.span
            return Inspect((span,), question.question, f"The question names {hint.phrase!r}: look there.")
        special = self._special(question, ask, history)
        if special is not None:
            return special
        searches = [step for step in history if step.action == "retrieve"]
        if not searches:
            return Retrieve(question.question, "Search the captions and dialogue for the question.")
        candidates = _candidates(history)
        naming = [span for span in candidates if any(hit.span == span and _mentions(hit.text, ask.colour, ask.shape)
                                                     for hit in _hits(history))]
        if ask.narrated is None:  # a narrated place is found by its name in the dialogue, not by the object
            candidates = naming + [span for span in candidates if span not in naming]
        last = history[-1]
        if last.action == "inspect" and last.verdict is not None and last.verdict.next_queries:
            asked = {step.args.get("query") for step in searches}
            fresh = [q for q in last.verdict.next_queries if q not in asked]
            if fresh and not candidates:
                return Retrieve(fresh[0], "The inspector names what to search for next.")
        if candidates:
            return Inspect((candidates[0],), question.question,
                           f"Look at the best hit not yet inspected, {candidates[0].label()}.")
        options_query = question.question + " " + " ".join(question.options)
        if options_query not in {step.args.get("query") for step in searches}:
            return Retrieve(options_query, "Nothing left from the searches: search with the options too.")
        return Finalize("Nothing left to search or inspect.")

    def _special(self, question: Question, ask, history: Sequence[Step]) -> Retrieve | Inspect | None:
        """The plan of a question about an anchor event, separate appearances, or order; None when
        the question is none of these or its plan has run its course (the general plan goes on)."""
        duration = question.duration_s
        if ask.hint is not None and ask.hint.anchor is not None:
            anchor = ask.hint.anchor
            return self._stretches(history, _object_query(anchor.colour, anchor.shape), anchor.colour, anchor.shape,
                                   lambda runs: [self._around_event(run, anchor.event, anchor.relation, duration)
                                                 for run in runs[:1]],
                                   f"Find when the {anchor.words()} {anchor.event}, and look just "
                                   f"{anchor.relation} it.")
        if ask.kind == "repeat":
            return self._stretches(history, _object_query(ask.colour, ask.shape), ask.colour, ask.shape,
                                   lambda runs: _with_gaps(runs, duration),
                                   f"Look at every stretch where the {ask.target} is named, and the gaps between.")
        if ask.kind == "order":
            return self._order(question, ask, history)
        return None

    @staticmethod
    def _around_event(run: Span, event: str, relation: str, duration: float | None) -> Span:
        if event == "disappears" and relation != "before":
            start, end = max(run.start, run.end - 16.0) - 4.0, run.end + AFTER_S
        elif event == "disappears":
            start, end = max(run.start, run.end - 30.0), run.end + 8.0
        elif relation == "before":
            start, end = run.start - AFTER_S, min(run.end, run.start + 16.0) + 4.0
        else:
            start, end = run.start - 8.0, min(run.end, run.start + 30.0)
        end = end if duration is None else min(duration, end)
        return Span(max(0.0, start), max(max(0.0, start), end))

    @staticmethod
    def _stretches(history: Sequence[Step], query: str, colour: str | None, shape: str | None, plan,
                   thought: str) -> Retrieve | Inspect | None:
        if not query:
            return None
        if not _searched(history, query):
            return Retrieve(query, f"Search the captions for the {query}.")
        if _inspected(history):
            return None
        hits = [hit.span for hit in _hits(history) if _mentions(hit.text, colour, shape)]
        if not hits:
            return None
        spans = [span for span in plan(_runs(hits)) if span.length > 0]
        return Inspect(tuple(spans), "", thought) if spans else None

    @staticmethod
    def _order(question: Question, ask, history: Sequence[Step]) -> Retrieve | Inspect | None:
        objects = [object_option(option) for option in question.options]
        if any(_object_query(*o) == "" for o in objects):
            return None
        query = " ".join(_object_query(*o) for o in objects)
        if not _searched(history, query):
            return Retrieve(query, "Search the captions for every option's object.")
        if _inspected(history):
            return None
        spans = []
        for colour, shape in objects:
            named = [hit.span for hit in _hits(history) if _mentions(hit.text, colour, shape)]
            # Which appears first or last is a matter of when each first appears: look where each
            # option's object is first named, from a little before, and where it is named next
            # (a caption that names it wrongly early on does not hide where it really is).
            for run in _runs(named)[:2]:
                spans.append(Span(max(0.0, run.start - 4.0), run.start + 16.0))
        if not spans:
            return None
        return Inspect(tuple(sorted(spans)), "", "Look where each option's object is first named.")


def _with_gaps(runs: Sequence[Span], duration: float | None) -> list[Span]:
    """Each stretch widened by 6 s, and the gaps between stretches, each kept a second apart from
    its neighbours (so that the agent does not merge them and the inspector shares its frames out)."""
    spans = []
    widened = [Span(max(0.0, r.start - 6.0), r.end + 6.0 if duration is None else min(duration, r.end + 6.0))
               for r in runs]
    for k, run in enumerate(widened):
        spans.append(run)
        if k + 1 < len(widened) and widened[k + 1].start - run.end > 20.0:
            spans.append(Span(run.end + 1.0, widened[k + 1].start - 1.0))
    return spans


@register("planner", "coupled-heuristic")
class CoupledHeuristicPlanner(HeuristicPlanner):
    """The coupled baseline's planner: after a search it answers by itself when the best hit's text
    names exactly one option; otherwise it inspects and answers with the inspector's best letter,
    without a gate."""

    name = "coupled-heuristic"

    def act(self, question: Question, history: Sequence[Step], steps_left: int) -> Retrieve | Inspect | Finalize:
        last = history[-1] if history else None
        if last is not None and last.action == "retrieve" and last.hits:
            text = last.hits[0].text.lower()
            named = [letter for letter, option in zip(question.letters, question.options, strict=True)
                     if re.search(rf"\b{re.escape(option.strip().lower())}s?\b", text)]
            if len(named) == 1:
                return Finalize(f"The best hit says {question.option_text(named[0])!r}.", answer=named[0])
        if last is not None and last.action == "inspect" and last.verdict is not None and last.verdict.answer:
            return Finalize("The inspector's best reading.", answer=last.verdict.answer)
        return super().act(question, history, steps_left)
