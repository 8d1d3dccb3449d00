"""The project's synthetic long-video benchmark: scripted events at known spans, with questions in
LVBench's format, so that the video area runs offline.

A video runs for minutes to an hour at low resolution (160 x 120, 4 fps, H.264 with B-frames; an
hour is a few megabytes). Its script is a sequence of **events**: a group of objects of one shape
and colour on screen for 8-24 s, some drifting, some with a burned-in word. A narrator's subtitles
(an ``.srt`` beside the video) run throughout; during a **key event** two lines name its topic (a
place: "the lighthouse"), and a question asks about what is on screen then: the objects' colour,
shape, number, direction, or the word. **Distractor events** show the same shape in other colours
and counts elsewhere, and the narrator also names the topic once outside its event ("we will come
back to the lighthouse later"), during the distractor or in the quiet stretch after it, so a text
search finds a wrong place too and only looking at the frames settles the answer. Some questions name their time instead of a topic (LVBench's
fixed-range questions). The ground-truth evidence span of a question is its event's span.

Written to ``DIR``: ``<video_id>.mp4``, ``<video_id>.srt``, ``<video_id>.script.json`` (the events,
for tests and for training the inspector), ``questions.jsonl`` (the flat LVBench form that
``python -m engines.video run --questions`` reads) and ``manifest.json`` (the settings and seed).
"""

from __future__ import annotations

import json
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import av
import numpy as np

from engines.platform.config_schema import check_fields
from engines.platform.progress import Progress
from engines.video.render import (
    COLOURS,
    DIRECTIONS,
    HEIGHT,
    OBJECT_SIZE,
    SHAPES,
    WIDTH,
    WORDS,
    Objects,
    Scene,
    object_positions,
    render,
)
from engines.video.spans import Span, format_time
from engines.video.subtitles import Subtitle, write_srt

TOPICS = ("lighthouse", "volcano", "orchard", "harbour", "glacier", "market", "library", "desert", "festival",
          "workshop", "canyon", "island", "bakery", "observatory", "vineyard", "monastery", "waterfall", "bazaar",
          "shipyard", "greenhouse", "quarry", "stadium", "aquarium", "cathedral", "ferry", "windmill", "lagoon",
          "railway", "meadow", "fortress", "tannery", "foundry", "pagoda", "marsh", "summit", "arcade", "bridge",
          "theatre", "dairy", "citadel", "vault", "garage", "chapel", "plaza", "reef", "mill", "tunnel", "pier",
          "studio", "kiln", "terrace", "forge", "granary", "ravine", "beacon", "cellar", "dock", "rampart", "spring",
          "courtyard", "kitchen", "museum", "tower", "hangar")
FILLER = ("The light changes slowly here.", "Nothing much happens for a while.", "The camera keeps rolling.",
          "We pause for a moment.", "Let us look around a little.", "The day goes on.",
          "Another quiet stretch follows.", "The wind picks up outside.", "Time passes without a sound.",
          "We keep moving along the route.")
QUESTION_KINDS = ("colour", "shape", "count", "direction", "word")
LVBENCH_TYPES = {"colour": ["entity recognition"], "shape": ["entity recognition"], "count": ["key information retrieval"],
                 "direction": ["event understanding"], "word": ["key information retrieval"]}
SCRIPT_VERSION = 1


@dataclass(frozen=True)
class SyntheticConfig:
    """Settings of one benchmark. The defaults make an hour-long video in about a minute. Each field's
    metadata is its one declaration (``engines.platform.config_schema``): the ``generate`` command's option."""

    minutes: float = field(default=10.0, metadata={"help": "length of each video", "min": 1.0, "max": 180.0})
    videos: int = field(default=1, metadata={"help": "how many videos", "min": 1, "max": 1000})
    seed: int = field(default=0, metadata={"help": "seed of every draw (scenes, events, questions)", "min": 0})
    fps: int = field(default=4, metadata={"help": "frames per second", "min": 1, "max": 30, "cli": False})
    # A keyframe every 4 s: seeking decodes at most 16 frames.
    keyframe_interval_s: float = field(default=4.0, metadata={"gt": 0, "cli": False})
    b_frames: int = field(default=2, metadata={"min": 0, "cli": False})
    crf: int = field(default=30, metadata={"min": 0, "max": 51, "cli": False})
    questions_per_video: int | None = field(default=None, metadata={
        "help": "questions per video (default: one per key event)", "min": 1})
    # Questions that name their time instead of a topic.
    fixed_range_share: float = field(default=0.2, metadata={"min": 0, "max": 1, "cli": False})
    # Also position, order, repeat and anchored questions, with times in words.
    more_kinds: bool = field(default=False, metadata={"cli": False})

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass(frozen=True)
class Event:
    """What is on screen over ``span``; ``topic`` is set for key events (None: a distractor)."""

    span: Span
    shape: str
    colour: str
    count: int
    direction: str | None
    word: str | None
    topic: str | None
    seed: int

    def objects(self) -> Objects:
        return Objects(self.shape, self.colour, self.count, self.direction, self.span.start, self.seed)


@dataclass
class Script:
    """Everything in one video, in time order."""

    video_id: str
    duration_s: float
    fps: int
    scenes: list[tuple[Span, Scene]]
    events: list[Event]
    subtitles: list[Subtitle]
    questions: list[dict] = field(default_factory=list)

    def event_at(self, t: float) -> Event | None:
        return next((e for e in self.events if e.span.start <= t < e.span.end), None)

    def scene_at(self, t: float) -> Scene:
        return next((scene for span, scene in self.scenes if span.start <= t < span.end), self.scenes[-1][1])


# ------------------------------------------------------------------ the script


def _scenes(duration: float, rng: random.Random) -> list[tuple[Span, Scene]]:
    scenes, t = [], 0.0
    while t < duration:
        length = rng.uniform(40, 90)
        top = tuple(rng.randint(30, 110) for _ in range(3))
        bottom = tuple(rng.randint(30, 110) for _ in range(3))
        scenes.append((Span(t, min(duration, t + length)), Scene(top, bottom, rng.randrange(1 << 30))))
        t += length
    return scenes


def _events(duration: float, rng: random.Random) -> list[Event]:
    """Key events and distractors in turn, 20-60 s apart; each key event gets its own topic."""
    topics = list(TOPICS)
    rng.shuffle(topics)
    events, t, key = [], rng.uniform(8, 20), True
    while True:
        length = rng.uniform(8, 24)
        if t + length > duration - 2 or (key and not topics):
            break
        events.append(Event(Span(round(t, 2), round(t + length, 2)), rng.choice(SHAPES), rng.choice(list(COLOURS)),
                            rng.randint(1, 4), rng.choice([*DIRECTIONS, None]),
                            rng.choice(WORDS) if rng.random() < 0.6 else None,
                            topics.pop() if key else None, rng.randrange(1 << 30)))
        t += length + rng.uniform(20, 60)
        key = not key
    # A distractor repeats the shape of the key event before it with another colour and number:
    # what a wrong span shows is a plausible wrong answer.
    for i in range(1, len(events), 2):
        before = events[i - 1]
        colour = rng.choice([c for c in COLOURS if c != before.colour])
        count = rng.choice([n for n in range(1, 5) if n != before.count])
        direction = rng.choice([d for d in [*DIRECTIONS, None] if d != before.direction])
        word = rng.choice([w for w in WORDS if w != before.word])
        events[i] = Event(events[i].span, before.shape, colour, count, direction, word, None, events[i].seed)
    return events


def _subtitles(duration: float, events: list[Event], rng: random.Random) -> list[Subtitle]:
    """Filler narration every 5-9 s; two topic lines in each key event; one misleading topic line
    in the distractor after it or in the quiet stretch after that (half the time each)."""
    lines: list[Subtitle] = []
    mentions: list[tuple[float, str]] = []
    for i, event in enumerate(events):
        if event.topic is None:
            continue
        mentions.append((event.span.start + 0.5, f"Here we reach the {event.topic}."))
        mentions.append((event.span.start + event.span.length / 2, f"The {event.topic} is worth a close look."))
        trap = events[i + 1] if i + 1 < len(events) else None
        if trap is not None and rng.random() < 0.5:
            at = trap.span.start + 1.0  # during the distractor: its objects answer the question wrongly
        elif trap is not None and trap.span.end + 8.0 < duration - 5.0:
            at = trap.span.end + 8.0  # in the quiet stretch after it: nothing to see there
        else:
            at = max(0.0, event.span.start - 15.0)
        mentions.append((at, f"We will come back to the {event.topic} later."))
    mentions.sort()
    t, cursor = 1.0, 0
    while t < duration - 3:
        if cursor < len(mentions) and mentions[cursor][0] <= t + 5:
            start, text = mentions[cursor]
            cursor += 1
            start = max(start, lines[-1].span.end + 0.1 if lines else 0.0)
        else:
            start, text = t, rng.choice(FILLER)
        end = min(duration, start + 3.0)
        if end <= start:
            break
        lines.append(Subtitle(Span(round(start, 2), round(end, 2)), text))
        t = end + rng.uniform(2, 6)
    return lines


def _options(correct: str, pool: list[str], also: str | None, rng: random.Random) -> tuple[list[str], str]:
    """Four options: the answer, the distractor's value when it differs, the rest from ``pool``."""
    others = [v for v in pool if v != correct]
    rng.shuffle(others)
    if also is not None and also != correct:
        others.remove(also)
        others.insert(0, also)
    options = [correct, *others[:3]]
    rng.shuffle(options)
    return options, "ABCD"[options.index(correct)]


def _question(event: Event, distractor: Event | None, kind: str, fixed_range: bool, rng: random.Random) -> dict:
    when = (f"at {format_time(event.span.start + event.span.length / 2)}" if fixed_range
            else f"while the narrator talks about the {event.topic}")
    other = distractor or event
    if kind == "colour":
        stem = f"What colour are the {event.shape}s on screen {when}?"
        options, answer = _options(event.colour, list(COLOURS), other.colour, rng)
    elif kind == "shape":
        stem = f"What shape are the {event.colour} objects on screen {when}?"
        options, answer = _options(event.shape, list(SHAPES), None, rng)
    elif kind == "count":
        stem = f"How many {event.shape}s are on screen {when}?"
        options, answer = _options(str(event.count), ["1", "2", "3", "4"], str(other.count), rng)
    elif kind == "direction":
        stem = f"Which way do the {event.colour} {event.shape}s move {when}?"
        moves = [*DIRECTIONS, "they do not move"]
        options, answer = _options(event.direction or "they do not move", moves,
                                   other.direction or "they do not move", rng)
    else:
        stem = f"Which word is written on the screen {when}?"
        options, answer = _options(event.word, list(WORDS), other.word, rng)
    return {"stem": stem, "options": options, "answer": answer, "kind": kind, "fixed_range": fixed_range}


def _lvbench_time(span: Span) -> str:
    def mmss(seconds: float) -> str:
        whole = int(seconds)
        return f"{whole // 60:02d}:{whole % 60:02d}"
    return f"{mmss(span.start)}-{mmss(math.ceil(span.end))}"


def make_script(video_id: str, config: SyntheticConfig, seed: int) -> Script:
    """The script of one video (no pixels yet): scenes, events, subtitles and questions."""
    rng = random.Random(seed)
    duration = config.minutes * 60.0
    events = _events(duration, rng)
    script = Script(video_id, duration, config.fps, _scenes(duration, rng), events, _subtitles(duration, events, rng))
    keys = [(i, e) for i, e in enumerate(events) if e.topic is not None]
    if config.questions_per_video is not None:
        keys = sorted(rng.sample(keys, min(config.questions_per_video, len(keys))))
    for number, (i, event) in enumerate(keys):
        kind = QUESTION_KINDS[number % len(QUESTION_KINDS)]
        if kind == "word" and event.word is None:
            kind = "colour"
        distractor = events[i + 1] if i + 1 < len(events) else None
        fixed = rng.random() < config.fixed_range_share
        q = _question(event, distractor, kind, fixed, rng)
        text = q["stem"] + "".join(f"\n({letter}) {option}" for letter, option in zip("ABCD", q["options"], strict=True))
        script.questions.append({
            "uid": f"{video_id}-q{number:03d}", "video_key": video_id, "benchmark": "synthetic", "question": text,
            "answer": q["answer"],
            "question_type": LVBENCH_TYPES[kind], "time_reference": _lvbench_time(event.span),
            "duration": duration, "kind": kind, "fixed_range": fixed})
    if config.more_kinds:
        script.questions += more_questions(script, random.Random(seed + 1), len(script.questions))
    return script


# ------------------------------------------------------------------ more kinds of question (the tuning set)


def _cell(event: Event, t: float) -> str:
    """The 3 x 3 grid cell of a lone object's centre at ``t``."""
    [(x, y)] = object_positions(event.objects(), t)
    half = OBJECT_SIZE / 2
    row, col = min(2, int((y + half) / HEIGHT * 3)), min(2, int((x + half) / WIDTH * 3))
    return (("top-left", "top", "top-right"), ("left", "centre", "right"), ("bottom-left", "bottom", "bottom-right"))[row][col]


def _spoken_minute(minute: int) -> str:
    words = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[minute] if minute < len(words) else str(minute)


def more_questions(script: Script, rng: random.Random, first_number: int) -> list[dict]:
    """Position, order, repeat and anchored colour questions, and colour and count questions with
    times in words ("around the two-minute mark", "near the end"), on this generator's videos: the
    set the offline agent is tuned on."""
    made: list[dict] = []
    events, duration = script.events, script.duration_s

    def add(kind: str, stem: str, options: list[str], answer: str, spans: list[Span]) -> None:
        text = stem + "".join(f"\n({'ABCDE'[k]}) {o}" for k, o in enumerate(options))
        made.append({"uid": f"{script.video_id}-q{first_number + len(made):03d}", "video_key": script.video_id,
                     "benchmark": "synthetic", "question": text, "answer": answer, "question_type": [kind],
                     "time_reference": ",".join(_lvbench_time(s) for s in spans), "duration": duration, "kind": kind,
                     "fixed_range": False})

    def combo(e: Event) -> tuple[str, str]:
        return e.colour, e.shape
    for event in events:
        if event.count == 1 and rng.random() < 0.7:
            t = round(event.span.start + event.span.length / 2)
            cells = ["top-left", "top", "top-right", "left", "centre", "right", "bottom-left", "bottom", "bottom-right"]
            options, answer = _options(_cell(event, t), cells, None, rng)
            add("position", f"Where is the {event.colour} {event.shape} at {format_time(t)[3:]}?", options, answer,
                [Span(t, t)])
        minute = round(event.span.start / 60 + event.span.length / 120)
        if minute >= 1 and event.span.start + 3 <= minute * 60 <= event.span.end - 3 and rng.random() < 0.5:
            options, answer = _options(event.colour, list(COLOURS), None, rng)
            add("colour", f"What colour are the {event.shape}s on screen around the {_spoken_minute(minute)}-minute "
                          "mark?", options, answer, [Span(minute * 60.0, minute * 60.0)])
    last = events[-1] if events else None
    end_part = max(60.0, 0.1 * duration)
    if last is not None and last.span.end > duration - end_part and not any(
            e is not last and e.shape == last.shape and e.span.end > duration - end_part for e in events):
        options, answer = _options(str(last.count), ["1", "2", "3", "4"], None, rng)
        add("count", f"How many {last.shape}s are on screen near the end of the video?", options, answer, [last.span])
    combos: dict[tuple[str, str], list[Event]] = {}
    for event in events:
        combos.setdefault(combo(event), []).append(event)
    for (colour, shape), seen in list(combos.items())[:3]:
        options, answer = _options(str(len(seen)), ["1", "2", "3", "4"], None, rng)
        add("repeat", f"How many separate times do {colour} {shape}s appear in the video?", options, answer,
            [e.span for e in seen])
    unique = [e for e in events if len(combos[combo(e)]) == 1]
    for _ in range(2):
        if len(unique) < 4:
            break
        picked = sorted(rng.sample(unique, 4), key=lambda e: e.span.start)
        latest = rng.random() < 0.3
        options = [f"the {e.colour} {e.shape}s" for e in picked]
        correct = options[-1] if latest else options[0]
        rng.shuffle(options)
        add("order", f"Which of these appears {'last' if latest else 'first'} in the video?", options,
            "ABCD"[options.index(correct)], [e.span for e in picked])
    for k in range(len(events) - 1):
        gone, following = events[k], events[k + 1]
        if len(combos[combo(gone)]) == 1 and following.span.start - gone.span.end < 55 and rng.random() < 0.3:
            options, answer = _options(following.colour, list(COLOURS), None, rng)
            add("colour", f"What colour are the {following.shape}s that appear after the {gone.colour} {gone.shape}s "
                          "disappear?", options, answer, [following.span])
    return made


# ------------------------------------------------------------------ writing


def encode_frames(frames: Iterable[np.ndarray], path: Path, config: SyntheticConfig,
                  progress: Callable[[int], None] | None = None) -> None:
    """Encode RGB frames (H, W, 3) uint8 as H.264 (yuv420p) with the configured rate, GOP and
    B-frames, at the first frame's size (even sides, as yuv420p needs). Writes to a temporary name
    first, so a crash leaves no half video behind."""
    keyint = max(1, int(round(config.keyframe_interval_s * config.fps)))
    partial = path.with_name(path.name + ".partial")
    with av.open(str(partial), "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=config.fps)
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "veryfast", "crf": str(config.crf),
                          "x264-params": f"keyint={keyint}:min-keyint={keyint}:scenecut=0:bframes={config.b_frames}"}
        for index, image in enumerate(frames):
            if index == 0:
                stream.height, stream.width = (image.shape[0] // 2) * 2, (image.shape[1] // 2) * 2
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = index
            container.mux(stream.encode(frame))
            if progress is not None and index % 500 == 0:
                progress(index)
        container.mux(stream.encode(None))
    os.replace(partial, path)


def encode(script: Script, path: Path, config: SyntheticConfig,
           progress: Callable[[int, int], None] | None = None) -> None:
    """Render every frame of ``script`` and encode it (:func:`encode_frames`)."""
    n_frames = int(script.duration_s * config.fps)

    def frames() -> Iterator[np.ndarray]:
        for index in range(n_frames):
            t = index / config.fps
            event = script.event_at(t)
            yield render(script.scene_at(t), event.objects() if event else None, event.word if event else None,
                         t, index)

    encode_frames(frames(), path, config, (lambda done: progress(done, n_frames)) if progress else None)


def _script_json(script: Script) -> dict:
    def span(s: Span) -> list[float]:
        return [s.start, s.end]
    return {"version": SCRIPT_VERSION, "video_id": script.video_id, "duration_s": script.duration_s, "fps": script.fps,
            "scenes": [{"span": span(s), **asdict(scene)} for s, scene in script.scenes],
            "events": [{**asdict(e), "span": span(e.span)} for e in script.events],
            "subtitles": [{"span": span(s.span), "text": s.text} for s in script.subtitles]}


def read_script(path: str | Path) -> Script:
    """A ``<video_id>.script.json`` back as a :class:`Script` (without its questions)."""
    data = json.loads(Path(path).read_text())
    scenes = [(Span(*s["span"]), Scene(tuple(s["top"]), tuple(s["bottom"]), s["seed"])) for s in data["scenes"]]
    events = [Event(Span(*e["span"]), e["shape"], e["colour"], e["count"], e["direction"], e["word"], e["topic"], e["seed"])
              for e in data["events"]]
    subtitles = [Subtitle(Span(*s["span"]), s["text"]) for s in data["subtitles"]]
    return Script(data["video_id"], data["duration_s"], data["fps"], scenes, events, subtitles)


def _write_text(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def generate(out: str | Path, config: SyntheticConfig = SyntheticConfig(),
             progress: Progress | None = None) -> list[Script]:
    """Write ``config.videos`` videos with their subtitles, scripts and questions into ``out``;
    ``progress(frames rendered, frames in all, video id)`` (``engines.platform.progress``) as it goes."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    scripts = []
    per_video = int(config.minutes * 60 * config.fps)
    for number in range(config.videos):
        video_id = f"synthetic-{config.seed:04d}-{number:03d}"
        script = make_script(video_id, config, seed=config.seed * 1_000_003 + number)

        def rendered(done: int, total: int, before: int = number * per_video, video: str = video_id) -> None:
            progress(before + done, config.videos * per_video, video)

        encode(script, out / f"{video_id}.mp4", config, progress=rendered if progress else None)
        if progress is not None:
            rendered(per_video, per_video)
        write_srt(script.subtitles, out / f"{video_id}.srt")
        _write_text(out / f"{video_id}.script.json", json.dumps(_script_json(script)))
        scripts.append(script)
    lines = [json.dumps(q) for script in scripts for q in script.questions]
    _write_text(out / "questions.jsonl", "\n".join(lines) + "\n")
    _write_text(out / "manifest.json", json.dumps({"generator": "engines.video.synthetic", "version": SCRIPT_VERSION,
                                                   "config": asdict(config), "synthetic": True,
                                                   "videos": [s.video_id for s in scripts]}, indent=2))
    return scripts
