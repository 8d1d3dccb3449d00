"""The synthetic benchmark: what a question says is on screen in its evidence span really is, in
the decoded pixels; the narrator names each topic where the questions say; same seed, same files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from engines.video.decode import open_video
from engines.video.render import COLOURS
from engines.video.spans import parse_time_reference
from engines.video.synthetic import SyntheticConfig, generate, read_script


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    scripts = generate(out, SyntheticConfig(minutes=8, videos=2, seed=11))
    return out, scripts


def _questions(out):
    return [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]


def _options(question_text: str) -> dict[str, str]:
    return dict(re.findall(r"^\(([A-D])\) (.+)$", question_text, flags=re.M))


def test_the_files_of_each_video_and_the_manifest(bench):
    out, scripts = bench
    names = sorted(p.name for p in out.iterdir())
    ids = [s.video_id for s in scripts]
    assert ids == ["synthetic-0011-000", "synthetic-0011-001"]
    assert names == sorted(["manifest.json", "questions.jsonl"]
                           + [f"{i}{ext}" for i in ids for ext in (".mp4", ".srt", ".script.json")])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["synthetic"] is True and manifest["videos"] == ids and manifest["config"]["minutes"] == 8


def test_questions_are_in_lvbench_shape_with_four_options(bench):
    out, _ = bench
    questions = _questions(out)
    assert len(questions) >= 8
    for q in questions:
        assert set(q) >= {"uid", "video_key", "question", "answer", "question_type", "time_reference"}
        assert sorted(_options(q["question"])) == ["A", "B", "C", "D"] and q["answer"] in "ABCD"
        spans, note = parse_time_reference(q["time_reference"])
        assert len(spans) == 1 and note is None and spans[0].length >= 7
    assert len({q["uid"] for q in questions}) == len(questions)


def _colour_pixels(frame: np.ndarray, colour: str) -> int:
    """Pixels nearer to ``colour`` than to any other object colour, and close to it (compression blurs)."""
    names = list(COLOURS)
    palette = np.asarray([COLOURS[n] for n in names], np.float32)
    distance = np.linalg.norm(frame[:112, :, None, :].astype(np.float32) - palette, axis=-1)
    nearest = distance.argmin(axis=-1)
    return int(((nearest == names.index(colour)) & (distance.min(axis=-1) < 45)).sum())


def test_the_answer_colour_is_on_screen_in_the_evidence_span_and_the_other_options_are_not(bench):
    out, _ = bench
    checked = 0
    for q in _questions(out):
        if q["kind"] != "colour":
            continue
        [span], _ = parse_time_reference(q["time_reference"])
        with open_video(out / f"{q['video_key']}.mp4") as reader:
            frame = reader.frame_at((span.start + span.end) / 2)
        options = _options(q["question"])
        counts = {letter: _colour_pixels(frame, colour) for letter, colour in options.items()}
        assert counts[q["answer"]] > 100, (q["uid"], counts)  # an object is 24 x 24 pixels, at least ~280 covered
        assert all(n < 30 for letter, n in counts.items() if letter != q["answer"]), (q["uid"], counts)
        checked += 1
    assert checked >= 2


def test_the_narrator_names_each_topic_twice_in_its_span_and_once_elsewhere(bench):
    out, scripts = bench
    for q in _questions(out):
        if q["fixed_range"]:
            continue
        topic = re.search(r"talks about the (\w+)", q["question"]).group(1)
        [span], _ = parse_time_reference(q["time_reference"])
        srt = (out / f"{q['video_key']}.srt").read_text()
        mentions = [_srt_seconds(m.group(1)) for m in re.finditer(
            rf"(\d\d:\d\d:\d\d,\d\d\d) --> [^\n]+\n[^\n]*\b{topic}\b", srt)]
        inside = [t for t in mentions if span.start - 1 <= t <= span.end + 1]
        assert len(inside) == 2 and len(mentions) == 3, (q["uid"], mentions, span)


def _srt_seconds(stamp: str) -> float:
    hours, minutes, rest = stamp.split(":")
    seconds, millis = rest.split(",")
    return int(hours) * 3600 + int(minutes) * 60 + int(seconds) + int(millis) / 1000


def test_fixed_range_questions_name_a_time_inside_their_span(bench):
    out, _ = bench
    fixed = [q for q in _questions(out) if q["fixed_range"]]
    for q in fixed:
        hh, mm, ss = map(int, re.search(r"at (\d\d):(\d\d):(\d\d)", q["question"]).groups())
        [span], _ = parse_time_reference(q["time_reference"])
        assert span.start <= hh * 3600 + mm * 60 + ss <= span.end + 1


def test_the_script_file_reads_back(bench):
    out, scripts = bench
    again = read_script(out / f"{scripts[0].video_id}.script.json")
    assert again.events == scripts[0].events and again.subtitles == scripts[0].subtitles
    assert again.scenes == scripts[0].scenes and again.duration_s == 480.0


def test_the_same_seed_writes_the_same_benchmark_and_another_seed_another(tmp_path):
    first = generate(tmp_path / "a", SyntheticConfig(minutes=2, seed=4))
    second = generate(tmp_path / "b", SyntheticConfig(minutes=2, seed=4))
    other = generate(tmp_path / "c", SyntheticConfig(minutes=2, seed=5))
    assert (tmp_path / "a" / "questions.jsonl").read_text() == (tmp_path / "b" / "questions.jsonl").read_text()
    assert first[0].events == second[0].events and first[0].events != other[0].events
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.parametrize(("settings", "message"), [
    ({"minutes": 0.5}, "minutes must be from 1 to 180, got 0.5"),
    ({"videos": 0}, "videos must be from 1 to 1000, got 0"),
    ({"fps": 60}, "fps must be from 1 to 30, got 60"),
])
def test_settings_out_of_range_are_refused(settings, message):
    with pytest.raises(ValueError) as raised:
        SyntheticConfig(**settings)
    assert str(raised.value) == message


def test_objects_of_a_group_never_overlap_so_they_can_be_counted():
    from engines.video.render import OBJECT_SIZE, WIDTH, Objects, object_positions

    for seed in range(300):
        for t in (0.0, 7.3, 19.9):
            xs = sorted(x for x, _ in object_positions(Objects("square", "red", 4, "left", 0.0, seed), t))
            # Neighbours at least an object apart, also across the wrap from the right edge to the left.
            gaps = [b - a for a, b in zip(xs, xs[1:], strict=False)] + [xs[0] + (WIDTH - OBJECT_SIZE) - xs[-1]]
            assert min(gaps) >= OBJECT_SIZE - 1, (seed, t, xs)
