"""The offline default inspector, ``pixels``: answers colour, shape, position, motion, count, repeat,
order and text questions from what the frames of the given spans show (:mod:`engines.video.offline.pixels`
sees and captions them; :mod:`engines.video.offline.asking` reads the question), citing the frames that
show it, and asks to search more when they do not settle it; see :class:`PixelsInspector`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from engines.video.decode import VideoReader, sample_times
from engines.video.offline.asking import (
    AFTER_S,
    AT_S,
    Ask,
    count_option,
    direction_option,
    object_option,
    read_question,
)
from engines.video.offline.perception import (
    SHAPE_WORDS,
    FrameView,
    Region,
    colour_match,
    motion_of,
    normalise_place,
    ocr_available,
    position_fits,
    shape_matches,
    text_similarity,
    track_motion,
)
from engines.video.offline.pixels import (
    STEP_S,
    Probe,
    Seen,
    look,
    words_at,
)
from engines.video.questions import Question
from engines.video.roles import Inspection, register
from engines.video.spans import Span, format_time
from engines.video.trajectory import FrameRef, Verdict

INSPECTOR_TAU = 0.95
FIRST_SEEN = 4  # "after X disappears": the first frames that show the object asked about
TEXT_FRAMES = 3  # frames read by OCR for a text question
GAP_S = 5.0  # a lapse shorter than this between frames showing an object is not a separate appearance
FLASH_S = 2.0  # an object seen for less than this, with frames without it on both sides, is a misdetection
PROBE_SHARE = 3  # repeat and order questions keep a third of an inspection's frames for probes
MIN_RELEVANT = 2  # frames that must show what is asked before the inspector answers with confidence
COLOUR_FLOOR = 0.3  # a seen colour fits no option below this (colour_match)


@dataclass
class Finding:
    """What the frames say about a question: each option's support (0-1), the frames that show the
    best one, and the evidence in words; or what is missing."""

    support: dict[str, float] = field(default_factory=dict)
    cited: list[float] = field(default_factory=list)
    evidence: str = ""
    missing: str = ""
    missing_type: str = "SPAN_MISMATCH"
    relevant: int = 0


def _fits(region: Region, ask: Ask, *, colour: str | None = None, shape: str | None = None) -> bool:
    """Whether a region is the object a question is about (its colour, shape and place words)."""
    colour = colour if colour is not None else ask.colour
    shape = shape if shape is not None else ask.shape
    if colour is not None and colour_match(region.rgb, colour) < 0.5:
        return False
    if shape is not None and not shape_matches(region, shape):
        return False
    return ask.place is None or position_fits(region, ask.place)


def _times_label(times: Sequence[float]) -> str:
    return ", ".join(format_time(t) for t in times)


def _cite(times: Sequence[float], most: int = 3) -> list[float]:
    return list(times[:: max(1, len(times) // most)][:most])


def _focus(ask: Ask, seen: Seen) -> tuple[list[int], str]:
    """The frames a question is about, by its time: those near a named point, inside a named range,
    or after (before, when) an anchor event seen in these frames; all of them otherwise. Returns
    their positions in ``seen`` and, when an anchor cannot be placed, why."""
    everything = list(range(len(seen.times)))
    hint = ask.hint
    if hint is None:
        return everything, ""
    if hint.anchor is not None:
        return _after_anchor(ask, seen)
    if hint.at is not None and hint.span is not None and hint.span.length <= 2 * AT_S + 1e-6:
        near = [i for i in everything if abs(seen.times[i] - hint.at) <= 1.0] or \
            [i for i in everything if abs(seen.times[i] - hint.at) <= AT_S]
        if not near and everything:
            nearest = min(everything, key=lambda i: abs(seen.times[i] - hint.at))
            near = [nearest] if abs(seen.times[nearest] - hint.at) <= 2 * AT_S else []
        return near, ""
    if hint.span is not None:
        inside = [i for i in everything if hint.span.contains(seen.times[i], 0.5)]
        return inside, ""
    return everything, ""


def _after_anchor(ask: Ask, seen: Seen) -> tuple[list[int], str]:
    anchor = ask.hint.anchor
    present = [any(_fits(r, Ask(None), colour=anchor.colour, shape=anchor.shape) for r in view.objects)
               for view in seen.views]
    name = anchor.words() or "object"
    if not any(present):
        return [], f"the {name} is not seen in these frames"
    order = sorted(range(len(seen.times)), key=lambda i: seen.times[i])
    if anchor.event == "disappears":
        last = max(i for i in order if present[i])
        moment = seen.times[last]
        gone = [i for i in order if seen.times[i] > moment]
        if not gone:
            return [], f"the {name} is still there at the end of these frames"
    else:
        first = min((i for i in order if present[i]), key=lambda i: seen.times[i])
        moment = seen.times[first]
        earlier = [i for i in order if seen.times[i] < moment]
        if not earlier and anchor.relation != "when":
            return [], f"the {name} is already there at the start of these frames"
    if anchor.relation == "before":
        before = [i for i in order if moment - AFTER_S <= seen.times[i] < moment and _targets(ask, seen.views[i])]
        return before[-FIRST_SEEN:], ""
    if anchor.relation == "when":
        return [i for i in order if moment <= seen.times[i] <= moment + AT_S * 2], ""
    after = [i for i in order if moment < seen.times[i] <= moment + AFTER_S and _targets(ask, seen.views[i])]
    return after[:FIRST_SEEN], ""


def _targets(ask: Ask, view: FrameView, exclude_anchor: bool = True) -> list[Region]:
    regions = [r for r in view.objects if _fits(r, ask)]
    anchor = ask.hint.anchor if ask.hint is not None else None
    if exclude_anchor and anchor is not None:
        regions = [r for r in regions if not _fits(r, Ask(None), colour=anchor.colour, shape=anchor.shape)]
    return regions


def _vote(ask: Ask, seen: Seen, frames: Sequence[int], judge) -> Finding:
    """Each relevant frame (showing the object asked about) votes for the options that hold in it:
    ``judge(region, option, frame position) -> float`` (0-1) over its target regions; an option's
    support is the mean of its votes over the relevant frames."""
    letters = [chr(ord("A") + k) for k in range(len(ask.options))]
    relevant, votes = [], {letter: 0.0 for letter in letters}
    agreeing: dict[str, list[float]] = {letter: [] for letter in letters}
    for i in frames:
        regions = _targets(ask, seen.views[i])
        if not regions:
            continue
        scores = {letter: max(judge(region, option, i) for region in regions)
                  for letter, option in zip(letters, ask.options, strict=True)}
        if max(scores.values()) <= 0:
            continue
        relevant.append(i)
        for letter, score in scores.items():
            votes[letter] += score
            if score >= 0.5:
                agreeing[letter].append(seen.times[i])
    if not relevant:
        return Finding(missing=f"no {ask.target} seen in the frames of interest")
    support = {letter: votes[letter] / len(relevant) for letter in letters}
    best = max(support, key=support.get)
    return Finding(support, _cite(agreeing[best] or [seen.times[relevant[0]]]), relevant=len(relevant))


def _best_colour(region: Region, options: Sequence[str]) -> str:
    return max(options, key=lambda option: colour_match(region.rgb, option.split()[-1]))


def answer_colour(ask: Ask, seen: Seen, frames: Sequence[int]) -> Finding:
    def judge(region: Region, option: str, i: int) -> float:
        fit = colour_match(region.rgb, option.split()[-1])
        return 1.0 if fit >= COLOUR_FLOOR and _best_colour(region, ask.options) == option else 0.0
    found = _vote(ask, seen, frames, judge)
    if found.support:
        letter = max(found.support, key=found.support.get)
        found.evidence = f"At {_times_label(found.cited)} the {ask.target} is {ask.options[ord(letter) - 65]}" \
                         f" (seen as {_seen_colours(ask, seen, frames)})."
    return found


def _seen_colours(ask: Ask, seen: Seen, frames: Sequence[int]) -> str:
    names = [r.colour for i in frames for r in _targets(ask, seen.views[i])]
    return max(set(names), key=names.count) if names else "nothing"


def answer_shape(ask: Ask, seen: Seen, frames: Sequence[int]) -> Finding:
    def judge(region: Region, option: str, i: int) -> float:
        words = option.lower().split()
        return 1.0 if words and shape_matches(region, words[-1]) and region.shape != "other" else 0.0
    found = _vote(ask, seen, frames, judge)
    if found.support:
        letter = max(found.support, key=found.support.get)
        found.evidence = f"At {_times_label(found.cited)} the {ask.target} is a {ask.options[ord(letter) - 65]}."
    return found


def answer_position(ask: Ask, seen: Seen, frames: Sequence[int]) -> Finding:
    def judge(region: Region, option: str, i: int) -> float:
        return 1.0 if position_fits(region, option) else 0.0
    found = _vote(ask, seen, frames, judge)
    if found.support:
        letter = max(found.support, key=found.support.get)
        place = normalise_place(ask.options[ord(letter) - 65]) or ask.options[ord(letter) - 65]
        found.evidence = f"At {_times_label(found.cited)} the {ask.target} is at the {place} of the screen " \
                         f"({ask.options[ord(letter) - 65]})."
    return found


def answer_motion(ask: Ask, seen: Seen, frames: Sequence[int]) -> Finding:
    # A half-second pair shows a move at a walking pace; a slow drift (the frame crossed in minutes)
    # looks still there but shows over the frames of the whole stretch asked about.
    drift = track_motion([(seen.times[i], _targets(ask, seen.views[i])) for i in frames])

    def judge(region: Region, option: str, i: int) -> float:
        moved = motion_of(region, seen.later[i].objects) if seen.later else None
        if moved == "still" and drift not in (None, "still"):
            moved = drift
        return 1.0 if moved is not None and moved == direction_option(option) else 0.0
    found = _vote(ask, seen, frames, judge)
    if found.support:
        letter = max(found.support, key=found.support.get)
        option = ask.options[ord(letter) - 65]
        way = direction_option(option)
        words = "does not move" if way == "still" else f"moves {way}"
        found.evidence = f"At {_times_label(found.cited)} the {ask.target} {words} ({option})."
    return found


def answer_count(ask: Ask, seen: Seen, frames: Sequence[int]) -> Finding:
    if ask.hint is None or ask.hint.at is None:
        # Over a stretch of time (not at a point): the frames where the objects asked about are there.
        frames = [i for i in frames if _targets(ask, seen.views[i])]
    if not frames:
        return Finding(missing=f"no {ask.target} seen at the time the question names")
    counts = [len(_targets(ask, seen.views[i])) for i in frames]
    letters = [chr(ord("A") + k) for k in range(len(ask.options))]
    support = {letter: sum(1 for n in counts if count_option(option) == n) / len(counts)
               for letter, option in zip(letters, ask.options, strict=True)}
    best = max(support, key=support.get)
    value = count_option(ask.options[ord(best) - 65])
    cited = _cite([seen.times[i] for i, n in zip(frames, counts, strict=True) if n == value] or
                  [seen.times[frames[0]]])
    noun = ask.target + ("s" if value != 1 else "")
    return Finding(support, cited, f"At {_times_label(cited)} there are {ask.options[ord(best) - 65]} {noun} "
                                   f"on screen (counted {', '.join(map(str, counts[:6]))}).", relevant=len(frames))


def appearances(timeline: dict[float, bool], probe: _TargetProbe | None = None) -> list[tuple[float, float]]:
    """Separate appearances in a timeline of frames (time -> whether the object is seen), as (first,
    last) times seen; ``probe`` adds frames where the timeline leaves it open.

    Perception misses an object now and then (a frame where it touches another region, a keyframe
    whose texture hides its edge) and mistakes something else for it in a stray frame; sampled
    sparsely, either looks like a disappearance and a return. So a lapse between frames showing the
    object is a separate appearance only when it lasts ``GAP_S`` or more, and a sighting counts only
    when it lasts ``FLASH_S`` or more. Where the frames seen leave that open (a lapse or a sighting
    whose bounds lie too far apart to tell), a probe looks half way between the last frame on one
    side and the first on the other, until it is settled or the probes run out; unsettled, a lapse
    of two frames or more without the object over at least ``GAP_S`` splits, and a sighting in a
    single frame counts."""
    timeline = _probed(timeline, probe)
    return _decide(timeline, _runs_of(timeline))


def _probed(timeline: dict[float, bool], probe, window: tuple[float, float] | None = None) -> dict[float, bool]:
    """``timeline`` with the frames ``probe`` looked at where it left appearances open (see
    :func:`appearances`); given the ``window`` (the inspected stretch), it also looks between a
    sighting at either end of the frames and that end of the window, so that an appearance the
    sparse frames caught only after it began (or before it ended) is bounded when the window bounds it."""
    timeline = dict(timeline)
    while probe is not None:
        wanted = _unsettled(timeline, _runs_of(timeline), probe.between, window)
        seen = probe.look(wanted) if wanted else []
        if not seen:
            break
        for t, present in seen:
            timeline[t] = present
    return timeline


def _runs_of(timeline: dict[float, bool]) -> list[list[float]]:
    """Times of the frames, grouped into runs of frames that all show the object or all do not."""
    runs: list[list[float]] = []
    previous = None
    for t in sorted(timeline):
        if runs and timeline[t] == previous:
            runs[-1].append(t)
        else:
            runs.append([t])
        previous = timeline[t]
    return runs


def _bounds(runs: list[list[float]], k: int) -> tuple[float | None, float | None]:
    """The last time before run ``k`` and the first after it (None at the ends)."""
    return (runs[k - 1][-1] if k > 0 else None), (runs[k + 1][0] if k + 1 < len(runs) else None)


def _unsettled(timeline: dict[float, bool], runs: list[list[float]], between,
               window: tuple[float, float] | None = None) -> list[float]:
    """Probe times for the lapses and sightings the frames do not settle (see :func:`appearances`);
    only when they are all settled, toward the window's ends (which change no count, only whether the
    first and last appearances were seen whole)."""
    wanted, edges = [], []
    for k, run in enumerate(runs):
        before, after = _bounds(runs, k)
        if before is None or after is None:
            # Open at an end of the frames seen: a sighting there may have begun (ended) in the window,
            # before its first (after its last) frame; anything else has nothing to narrow down.
            if window is not None and timeline[run[0]]:
                edges += ([(window[0], run[0])] if before is None else []) + ([(run[-1], window[1])] if after is None else [])
            continue
        if timeline[run[0]]:  # a sighting: long enough, or too short to count?
            if run[-1] - run[0] >= FLASH_S or after - before < FLASH_S:
                continue
        elif run[-1] - run[0] >= GAP_S or after - before < GAP_S:  # a lapse: long enough, or too short?
            continue
        for a, b in ((before, run[0]), (run[-1], after)):
            t = between(a, b) if b - a > STEP_S else None
            if t is not None:
                wanted.append(t)
    return wanted or [t for a, b in edges if b - a > STEP_S and (t := between(a, b)) is not None]


def _decide(timeline: dict[float, bool], runs: list[list[float]]) -> list[tuple[float, float]]:
    kept: list[list[float]] = []
    for k, run in enumerate(runs):
        if not timeline[run[0]]:
            continue
        before, after = _bounds(runs, k)
        if before is not None and after is not None and after - before < FLASH_S:
            continue  # seen too briefly, between frames without it on both sides: a stray detection
        kept.append(run)
    merged: list[tuple[float, float]] = []
    for run in kept:
        if merged:
            lapse = [t for t in timeline if merged[-1][1] < t < run[0]]
            long_enough = run[0] - merged[-1][1] >= GAP_S and (len(lapse) >= 2 or run[0] - merged[-1][1] >= 2 * GAP_S)
            if not long_enough:
                merged[-1] = (merged[-1][0], run[-1])
                continue
        merged.append((run[0], run[-1]))
    return merged


def answer_repeat(ask: Ask, seen: Seen, frames: Sequence[int], probe: Probe | None = None) -> Finding:
    """Separate appearances (:func:`appearances`) of the object asked about in the frames."""
    timeline = {seen.times[i]: bool(_targets(ask, seen.views[i])) for i in frames}
    if not any(timeline.values()):
        return Finding(missing=f"no {ask.target} seen in these frames")
    if probe is not None:
        timeline = _probed(timeline, _TargetProbe(probe, ask), probe.window())
    spans = _decide(timeline, _runs_of(timeline))
    runs = len(spans)
    letters = [chr(ord("A") + k) for k in range(len(ask.options))]
    support = {letter: 1.0 if count_option(option) == runs else 0.0
               for letter, option in zip(letters, ask.options, strict=True)}
    if not any(support.values()):
        return Finding(missing=f"the {ask.target} appears {runs} separate times here, which no option says",
                       missing_type="PARTIAL_EVIDENCE")
    # Bounded at both ends by frames without it: every appearance in these spans was seen whole.
    ordered = sorted(timeline)
    closed = bool(spans) and ordered[0] < spans[0][0] and ordered[-1] > spans[-1][1]
    if not closed:
        support = {letter: value * 0.9 for letter, value in support.items()}
    best = max(support, key=support.get)
    starts = [start for start, _ in spans]
    stretches = ", ".join(f"{format_time(a)}-{format_time(b)}" for a, b in spans[:6])
    return Finding(support, starts[:6], f"The {ask.target} appears {ask.options[ord(best) - 65]} separate times: "
                                        f"{stretches}, with frames without it in between.",
                   relevant=sum(timeline.values()))


class _TargetProbe:
    """A :class:`Probe` that answers whether the frames show the object a question asks about."""

    def __init__(self, probe: Probe, ask: Ask, colour: str | None = None, shape: str | None = None,
                 anchorless: bool = False) -> None:
        self.probe, self.ask, self.colour, self.shape, self.anchorless = probe, ask, colour, shape, anchorless

    def shows(self, view: FrameView) -> bool:
        if self.anchorless:
            return any(_fits(r, Ask(None), colour=self.colour, shape=self.shape) for r in view.objects)
        return bool(_targets(self.ask, view))

    def between(self, a: float, b: float) -> float | None:
        return self.probe.between(a, b)

    def look(self, times: Sequence[float]) -> list[tuple[float, bool]]:
        return [(t, self.shows(view)) for t, view in self.probe.look(times)]


def answer_order(ask: Ask, seen: Seen, frames: Sequence[int], probe: Probe | None = None) -> Finding:
    """Which option's object appears first (or last): the times each option's object first appears
    in the frames are compared, stray detections left out as for a repeat question
    (:func:`appearances`); where two options' first appearances fall between the same two frames,
    so that the frames leave their order open, ``probe`` looks between them until it is settled
    (unsettled, the options share the support)."""
    letters = [chr(ord("A") + k) for k in range(len(ask.options))]
    wanted = {letter: object_option(option) for letter, option in zip(letters, ask.options, strict=True)}
    wanted = {letter: words for letter, words in wanted.items() if words != (None, None)}
    # "Which appears first, the cyan square or the orange circle?": only the objects the stem names
    # compete, when it names two or more of the options.
    named = {letter: words for letter, words in wanted.items() if _singular_words(words) in
             {_singular_words(object_words) for object_words in ask.named}}
    if len(named) >= 2:
        wanted = named

    def shows(letter: str, view: FrameView) -> bool:
        colour, shape = wanted[letter]
        return any(_fits(r, Ask(None), colour=colour, shape=shape) for r in view.objects)

    timelines = {letter: {seen.times[i]: shows(letter, seen.views[i]) for i in frames} for letter in wanted}
    timelines = {letter: line for letter, line in timelines.items() if any(line.values())}
    if not timelines:
        return Finding(missing="none of the options' objects is seen in these frames")
    while True:
        when = {letter: _moment(line) for letter, line in timelines.items()}
        pick = _earliest(when, ask.last)
        rivals = [letter for letter in when if letter != pick and _overlap(when[letter], when[pick])]
        if probe is None or not rivals:
            break
        times = [probe.between(*when[letter]) for letter in [pick, *rivals] if when[letter][1] - when[letter][0] > STEP_S]
        looked = probe.look([t for t in times if t is not None])
        if not looked:
            break
        for t, view in looked:  # one frame tells about every option's object
            for letter, line in timelines.items():
                line[t] = shows(letter, view)
    tied = [letter for letter in when if letter != pick and _overlap(when[letter], when[pick])]
    located = len(when) / len(letters)
    support = {letter: (located / (1 + len(tied)) if letter == pick or letter in tied else 0.0) for letter in letters}
    word = "last" if ask.last else "first"
    moment = {letter: bounds[1] for letter, bounds in when.items()}
    listed = "; ".join(f"{ask.options[ord(letter) - 65]} at {format_time(t)}" for letter, t in sorted(
        moment.items(), key=lambda item: item[1]))
    missing = [ask.options[ord(letter) - 65] for letter in letters if letter not in when]
    evidence = f"{ask.options[ord(pick) - 65]} appears {word}; each first seen: {listed}."
    return Finding(support, [moment[pick]], evidence, missing=("not seen: " + ", ".join(missing)) if missing else "",
                   missing_type="PARTIAL_EVIDENCE", relevant=len(when))


def _singular_words(words: tuple[str | None, str | None]) -> tuple[str | None, str | None]:
    colour, shape = words
    return colour, SHAPE_WORDS[shape] if shape in SHAPE_WORDS else shape


def _moment(line: dict[float, bool]) -> tuple[float, float]:
    """When an object first appears in a timeline, as the frames bound it: (the last frame without
    it, the first with it); without a frame before, the first with it twice."""
    spans = appearances(line) or [(t, t) for t in sorted(line) if line[t]][:1]
    moment = spans[0][0]
    return next((t for t in sorted(line, reverse=True) if t < moment), moment), moment


def _earliest(when: dict[str, tuple[float, float]], last: bool) -> str:
    """The option whose object appears first (``last``: last) by the frames, ties to the earlier letter."""
    return (max if last else min)(when, key=lambda letter: when[letter][1])


def _overlap(first: tuple[float, float], second: tuple[float, float]) -> bool:
    """Whether two moments' bounds (a, b] leave their order open."""
    return first[0] < second[1] and second[0] < first[1]


def answer_text(ask: Ask, reader: VideoReader, seen: Seen, frames: Sequence[int]) -> Finding:
    if not ocr_available():
        return Finding(missing="no OCR engine: Debian's tesseract-ocr is not installed, so text cannot be read",
                       missing_type="VISUAL_UNCLEAR")
    chosen = [i for i in frames if seen.views[i].text_boxes]
    if not chosen:
        return Finding(missing="no text seen in the frames of interest")
    if ask.hint is not None and ask.hint.at is not None:
        chosen.sort(key=lambda i: abs(seen.times[i] - ask.hint.at))
    else:
        chosen = chosen[:: max(1, len(chosen) // TEXT_FRAMES)]
    chosen = chosen[:TEXT_FRAMES]
    letters = [chr(ord("A") + k) for k in range(len(ask.options))]
    votes = {letter: 0.0 for letter in letters}
    read: list[str] = []
    agreeing: dict[str, list[float]] = {letter: [] for letter in letters}
    for i in chosen:
        words = words_at(reader, seen.times[i])
        read += [w for w in words if w not in read]
        for letter, option in zip(letters, ask.options, strict=True):
            tokens = option.split()
            fit = min(max((text_similarity(token, w) for w in words), default=0.0) for token in tokens)
            if fit >= 0.8:
                votes[letter] += 1.0
                agreeing[letter].append(seen.times[i])
    support = {letter: votes[letter] / len(chosen) for letter in letters}
    best = max(support, key=support.get)
    if support[best] == 0:
        return Finding(support, missing=f"the text on screen reads {' '.join(read[:8]) or 'nothing legible'}, "
                                        "which no option says", missing_type="PARTIAL_EVIDENCE", relevant=len(chosen))
    cited = agreeing[best][:3]
    return Finding(support, cited, f"At {_times_label(cited)} the screen reads {ask.options[ord(best) - 65]} "
                                   f"(read: {' '.join(read[:8])}).", relevant=len(chosen))


ANSWERS = {"colour": answer_colour, "shape": answer_shape, "position": answer_position, "motion": answer_motion,
           "count": answer_count, "repeat": answer_repeat, "order": answer_order}


def inspection_times(ask: Ask, spans: Sequence[Span], fps: float, max_frames: int, duration: float) -> list[float]:
    """The times to look at: ``fps`` inside the spans, at most ``max_frames``; for repeat and order
    questions every span gets its share (at least three frames), so that short spans between long
    ones are looked at too; a named point is always among them."""
    if ask.kind in {"repeat", "order"} and len(spans) > 1:
        each = max(3, max_frames // len(spans))
        times = sorted(t for span in spans for t in sample_times([span], fps=fps, max_frames=each, duration=duration))
    else:
        times = sample_times(list(spans), fps=fps, max_frames=max_frames, duration=duration)
    if ask.hint is not None and ask.hint.at is not None and any(s.contains(ask.hint.at) for s in spans):
        point = min(ask.hint.at, max(0.0, duration - 1e-3))
        if all(abs(t - point) > 0.25 for t in times):
            times = sorted([*times, point])
    return times


@register("inspector", "pixels")
class PixelsInspector:
    """Answers from what the frames show (:mod:`engines.video.offline.perception`), for the kinds of question
    :mod:`engines.video.offline.asking` reads.

    It finds the frames the question is about (near a named time, in a named range, after an anchor
    event, or all of them), keeps those that show the object the stem names, and lets each vote for
    the options that hold in it. The best option's share of the votes is the confidence; an
    answer cites the frames that agree. Below 0.95 (and not ``answer_only``) it asks to search more:
    SPAN_MISMATCH when the object was not seen, PARTIAL_EVIDENCE when it was seen too little or the
    frames disagree, VISUAL_UNCLEAR for a question it cannot read (or text without an OCR engine).
    A question "while the narrator talks about X" also needs the subtitles of the inspected spans to
    name X as here and now. In ``answer_only`` mode with nothing seen, the answer is a guess: the
    first option, confidence 0, no cited time, and the evidence says so.
    """

    name = "pixels"

    def __init__(self, tau: float = INSPECTOR_TAU) -> None:
        self.tau = tau

    def inspect(self, reader: VideoReader, spans: Sequence[Span], question: Question, *, context: str = "",
                fps: float = 2.0, max_frames: int = 48, answer_only: bool = False) -> Inspection:
        duration = reader.info.duration_s
        if question.duration_s is None:
            question = dataclasses.replace(question, duration_s=duration)
        ask = read_question(question)
        probes = max_frames // PROBE_SHARE if ask.kind in {"repeat", "order"} and max_frames >= 6 else 0
        times = inspection_times(ask, spans, fps, max_frames - probes, duration)
        frames = [FrameRef(t, None) for t in times]
        if ask.kind is None:
            return self._unsure(frames, question, answer_only, "VISUAL_UNCLEAR",
                                "a question of a kind the offline inspector does not read (it reads colours, shapes, "
                                "places, motion, counts, repeats, order and on-screen text)")
        if ask.narrated is not None and not answer_only:  # forced to answer, it reads the frames alone
            from engines.video.offline.heuristics import _narration, _talks_about

            lines = _narration(reader.path, spans)
            if lines is not None and not _talks_about(lines, ask.narrated):
                said = "; ".join(line for line in lines if ask.narrated in line.lower()) or "nothing about it"
                return self._unsure(frames, question, answer_only, "SPAN_MISMATCH",
                                    f"the narrator does not talk about the {ask.narrated} here (heard: {said})")
        seen = look(reader, times, pairs=ask.kind == "motion")
        focus, why = _focus(ask, seen)
        if why:
            return self._unsure(frames, question, answer_only, "SPAN_MISMATCH", why)
        if ask.kind == "text":
            found = answer_text(ask, reader, seen, focus)
        elif probes:
            probe = Probe(reader, spans, max(0, max_frames - len(times)))
            found = ANSWERS[ask.kind](ask, seen, focus, probe)
            frames = [FrameRef(t, None) for t in sorted([*times, *probe.times])]
        else:
            found = ANSWERS[ask.kind](ask, seen, focus)
        return self._verdict(found, frames, question, answer_only)

    def _verdict(self, found: Finding, frames: list[FrameRef], question: Question, answer_only: bool) -> Inspection:
        if not found.support or max(found.support.values()) <= 0:
            return self._unsure(frames, question, answer_only, found.missing_type,
                                found.missing or "nothing in these frames bears on the question")
        ranked = sorted(found.support.values(), reverse=True)
        best = max(found.support, key=found.support.get)
        confidence = ranked[0] if len(ranked) < 2 or ranked[1] < 0.5 else ranked[0] * 0.5
        if found.relevant < MIN_RELEVANT and question.options and not question.fixed_range:
            confidence = min(confidence, 0.9)  # one frame is too little to be sure
        confidence = round(float(confidence), 4)
        if confidence < self.tau and not answer_only and not question.fixed_range:
            return Inspection(Verdict("SEARCH_MORE", None, confidence, found.evidence, tuple(found.cited),
                                      missing=found.missing or f"the frames do not settle it (best option {best}: "
                                      f"{confidence:.2f})", next_queries=(),
                                      search_more_type="PARTIAL_EVIDENCE"), frames)
        return Inspection(Verdict("ANSWER", best, confidence, found.evidence, tuple(found.cited)), frames)

    @staticmethod
    def _unsure(frames, question: Question, answer_only: bool, kind: str, missing: str) -> Inspection:
        if answer_only:
            return Inspection(Verdict("ANSWER", question.letters[0], 0.0,
                                      f"Nothing in the frames settles it ({missing}): option "
                                      f"{question.letters[0]} is a guess.", ()), frames)
        return Inspection(Verdict("SEARCH_MORE", None, 0.0, "", (), missing=missing, next_queries=(),
                                  search_more_type=kind), frames)

