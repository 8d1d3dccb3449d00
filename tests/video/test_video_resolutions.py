"""Videos of any resolution and aspect ratio through the offline models: the frame model reads
160 x 120 frames, so the pipeline scales other videos while decoding. A generated clip re-encoded at
640 x 360 and 320 x 240 is uploaded, indexed and asked about end to end (the ask job), and answered
as its 160 x 120 original is; a portrait clip indexes too."""

from __future__ import annotations

from pathlib import Path

import av
import numpy as np
import pytest

from engines.platform import jobqueue
from engines.video import backends, library
from engines.video.decode import open_video
from engines.video.index import load_or_build
from engines.video.jobs import ASK
from engines.video.loaders import read_questions
from engines.video.offline import frame_model
from engines.video.synthetic import SyntheticConfig, generate, read_script
from engines.video.trajectory import read_jsonl


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """A one-minute synthetic clip (160 x 120) with its subtitles, script and one question."""
    out = tmp_path_factory.mktemp("clip")
    [script] = generate(out, SyntheticConfig(minutes=1, seed=5))
    return out / f"{script.video_id}.mp4"


def _resized(original: Path, width: int, height: int, folder: Path) -> Path:
    """``original`` re-encoded at ``width`` x ``height`` (same frames, times and subtitles)."""
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / original.name
    with av.open(str(original)) as source, av.open(str(target), "w") as out:
        stream = out.add_stream("libx264", rate=4)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for number, frame in enumerate(source.decode(video=0)):
            picture = av.VideoFrame.from_ndarray(frame.to_ndarray(format="rgb24", width=width, height=height),
                                                 format="rgb24")
            picture.pts = number
            out.mux(stream.encode(picture))
        out.mux(stream.encode(None))
    return target


@pytest.mark.parametrize(("width", "height"), [(640, 360), (320, 240)])
def test_an_uploaded_clip_of_another_size_is_indexed_and_answered_end_to_end(sqlite_db, original, tmp_path,
                                                                            width, height):
    clip = _resized(original, width, height, tmp_path / f"{width}x{height}")
    with open_video(clip) as reader:
        assert (reader.info.width, reader.info.height) == (width, height)
    stored = library.save_upload(clip.read_bytes(), f"lecture-{width}.mp4")
    stored.with_suffix(".srt").write_bytes(original.with_suffix(".srt").read_bytes())  # its subtitles, beside it
    [question] = read_questions(original.parent / "questions.jsonl")
    event = next(e for e in read_script(original.with_suffix(".script.json")).events if e.topic)
    job_id = jobqueue.submit_job(ASK, {"video": str(stored), "question": question.question,
                                       "options": list(question.options)})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    [trajectory] = read_jsonl(jobqueue.get_job(job_id).result["result_path"])
    assert trajectory.final.answer == question.answer and trajectory.final.mode == "gated"
    assert question.option_text(question.answer) == event.colour  # the script's truth, not the model's
    index = load_or_build(stored, backends.captioner("frame-model"))  # built by the job, read back
    assert any(f"{event.colour} {event.shape}" in clip.visual for clip in index.clips)


def test_a_portrait_clip_is_indexed(original, tmp_path):
    portrait = _resized(original, 120, 200, tmp_path / "portrait")
    event = next(e for e in read_script(original.with_suffix(".script.json")).events if e.topic)
    index = load_or_build(portrait, backends.captioner("frame-model"))
    assert [c.span.end for c in index.clips] == [16.0, 32.0, 48.0, 60.0]
    assert any(f"{event.colour} {event.shape}" in clip.visual for clip in index.clips), index.clips


def test_the_frame_model_says_which_size_it_reads_when_given_another():
    frames = np.zeros((2, 360, 640, 3), np.uint8)
    with pytest.raises(ValueError, match="reads frames of 160 x 120 RGB pixels, got an array of shape"):
        frame_model.to_inputs(frames, frames)
