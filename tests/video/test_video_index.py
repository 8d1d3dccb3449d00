"""The index: clips of 16 s, their captions joined with the subtitles heard, searched by BM25 and
embeddings, hits kept time-diverse; subtitles read from real SRT files."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.video.decode import open_video
from engines.video.index import (
    ClipText,
    Retriever,
    VideoIndex,
    build_index,
    clip_spans,
    dialogue_in,
    index_path,
    load_or_build,
)
from engines.video.spans import Span
from engines.video.subtitles import Subtitle, SubtitleFormatError, read_srt
from engines.video.synthetic import SyntheticConfig, generate


class CountingCaptioner:
    """Captions each clip with its start time; counts the calls (to see the cache at work)."""

    name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    def caption_clips(self, reader, clips):
        self.calls += 1
        return [f"clip starting at {clip.start:g} seconds" for clip in clips]


def test_clips_cover_the_video_in_sixteen_second_steps():
    assert clip_spans(40.0) == [Span(0, 16), Span(16, 32), Span(32, 40)]
    assert clip_spans(32.0) == [Span(0, 16), Span(16, 32)]
    assert clip_spans(5.0) == [Span(0, 5)]


def test_dialogue_of_a_clip_is_every_line_that_overlaps_it():
    subtitles = [Subtitle(Span(10, 13), "one."), Subtitle(Span(15, 18), "two."), Subtitle(Span(32, 35), "three.")]
    assert dialogue_in(subtitles, Span(0, 16)) == "one. two."
    assert dialogue_in(subtitles, Span(16, 32)) == "two."  # 15-18 overlaps both clips
    assert dialogue_in(subtitles, Span(48, 64)) == ""
    assert ClipText(Span(48, 64), "an empty scene.", "").text == "Visual: an empty scene.\nDialogue: (none)"


def test_srt_files_with_markup_bom_and_dots(tmp_path):
    path = tmp_path / "a.srt"
    path.write_text("\ufeff1\n00:00:01,000 --> 00:00:04,500\n<i>Hello</i> there\nsecond line\n\n"
                    "00:01:02.25 --> 00:01:03.5\nNo number before me\n", encoding="utf-8")
    assert read_srt(path) == [Subtitle(Span(1.0, 4.5), "Hello there second line"),
                              Subtitle(Span(62.25, 63.5), "No number before me")]
    bad = tmp_path / "bad.srt"
    bad.write_text("1\n00:00:01,000 --> soon\nHello\n")
    with pytest.raises(SubtitleFormatError, match=r"bad.srt, line 2: unreadable timing '00:00:01,000 --> soon'"):
        read_srt(bad)


@pytest.fixture(scope="module")
def synthetic_video(tmp_path_factory):
    out = tmp_path_factory.mktemp("indexed")
    [script] = generate(out, SyntheticConfig(minutes=4, seed=21))
    return out / f"{script.video_id}.mp4", script


def test_the_index_is_built_once_and_cached_beside_the_video(synthetic_video):
    video, script = synthetic_video
    captioner = CountingCaptioner()
    index = load_or_build(video, captioner)
    assert captioner.calls == 1 and len(index.clips) == 15  # 240 s / 16
    assert index.clips[1].visual == "clip starting at 16 seconds"
    data = json.loads(index_path(video).read_text())
    assert list(data["captions"])[:2] == ["0_16", "16_32"]  # upstream's "<start>_<end>" keys
    again = load_or_build(video, captioner)
    assert captioner.calls == 1 and again.clips == index.clips
    # Another captioner does not reuse these captions.
    other = CountingCaptioner()
    other.name = "another"
    load_or_build(video, other)
    assert other.calls == 1


def test_bm25_finds_the_clips_where_the_narrator_names_the_topic(synthetic_video):
    video, script = synthetic_video
    with open_video(video) as reader:
        index = build_index(reader, CountingCaptioner(), subtitles=script.subtitles)
    event = next(e for e in script.events if e.topic)
    hits = Retriever(index, mode="bm25").search(f"the {event.topic}", top_k=5)
    mentions = [s.span for s in script.subtitles if event.topic in s.text]
    assert hits and all(any(h.span.start < m.end and h.span.end > m.start for m in mentions) for h in hits)
    assert {h.source for h in hits} == {"caption"}
    assert Retriever(index, mode="bm25").search("zeppelin quasar", top_k=5) == []  # no word in common: no hits


def _index(texts: list[str]) -> VideoIndex:
    return VideoIndex("v", 16.0 * len(texts), [ClipText(Span(16 * i, 16 * (i + 1)), t, "") for i, t in enumerate(texts)],
                      "test")


def test_hits_are_best_first_and_at_least_the_gap_apart():
    index = _index(["red kite", "red kite red kite", "blue boat", "red"])
    retriever = Retriever(index, mode="bm25")
    hits = retriever.search("red kite", top_k=3)
    assert [h.span.start for h in hits][:2] == [16.0, 0.0]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    spaced = retriever.search("red kite", top_k=3, min_gap_s=20.0)
    assert [h.span.start for h in spaced] == [16.0, 48.0]  # 0 s lies 16 s from 16 s: dropped


def test_embedding_and_hybrid_search_with_a_given_embedder():
    # A hand-made embedder: a text is [has "cat", has "dog"], normalised; the query "feline cat" -> [1, 0].
    def embed(texts):
        vectors = np.array([[float("cat" in t), float("dog" in t)] for t in texts]) + 1e-9
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    index = _index(["a dog barks", "a cat sleeps", "cat and dog"])
    semantic = Retriever(index, mode="embedding", embed=embed).scores("feline cat")
    assert semantic.argmax() == 1 and semantic[0] == pytest.approx(0.0, abs=1e-6)
    assert semantic[2] == pytest.approx(2 ** -0.5)
    hybrid = Retriever(index, mode="hybrid", weight=0.5, embed=embed).scores("feline cat")
    assert hybrid.argmax() == 1 and hybrid.max() == pytest.approx(1.0)  # best in both: 0.5 * 1 + 0.5 * 1


def test_the_shipped_embedding_model_ranks_a_paraphrase_first():
    index = _index(["Visual: a lighthouse on a cliff by the sea", "Visual: a plate of pasta", "Visual: a busy market"])
    hits = Retriever(index, mode="embedding").search("tower with a beacon on the coast", top_k=3)
    assert hits[0].span.start == 0.0


def test_unknown_modes_and_weights_are_refused():
    with pytest.raises(ValueError, match="unknown search mode 'fuzzy'; choose one of bm25, embedding, hybrid"):
        Retriever(_index(["a"]), mode="fuzzy")
    with pytest.raises(ValueError, match="weight must be from 0 to 1, got 2"):
        Retriever(_index(["a"]), mode="bm25", weight=2)
