"""Benchmark of the video area (issue 11): frame access on an hour-long video, and the agent's latency.

In one process, on a synthetic video the script generates (60 minutes, 160 x 120, 4 fps, H.264 with
B-frames, a keyframe every 4 s):

- **seek and decode**: 48 frames at scattered times with ``VideoReader.frames_at`` (keyframe index,
  one seek per group of pictures, threads) against decoding the file from the start up to the last
  of them (goal: at least 10x faster), and against OpenCV seeking with ``CAP_PROP_POS_FRAMES`` then
  reading one frame per time (goal: no slower). Every frame carries its number in a code strip, so
  each method's frames are checked against floor(t * fps): how many were exact.
- **agent latency**: seconds per question of the offline gated agent and of the coupled baseline
  (the index built beforehand, timed apart), p50 and p95.
- **generation**: seconds to render and encode the hour, and its size.

Median of ``--repeats`` timings after a warm-up. Prints one JSON line, writes the same object to
``bench/results/video.json`` (or ``--out``), progress on stderr.

    python bench/video.py            # the hour-long video, 5 repeats, 20 questions per agent
    python bench/video.py --quick    # a 10-minute video, 1 repeat, 3 questions (checks the script)
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._results import emit, machine_info  # noqa: E402

NAME = "video"
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
GOAL_VS_SEQUENTIAL = 10.0  # seek-and-decode at least this many times faster than decoding from the start
GOAL_VS_OPENCV = 1.0  # seek-and-decode time / OpenCV seeking time, at most
FRAMES = 48
FULL = {"minutes": 60.0, "repeats": 5, "questions": 20}
QUICK = {"minutes": 10.0, "repeats": 1, "questions": 3}


def _median_seconds(work, repeats: int) -> tuple[float, object]:
    result = work()  # warm-up: first calls open files and allocate
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def _exact(frames, times, fps: float) -> int:
    from engines.video.render import read_frame_code

    return sum(read_frame_code(frame) == math.floor(t * fps + 1e-6) for frame, t in zip(frames, times, strict=True))


def seeking(video: Path, repeats: int, seed: int = 0) -> dict:
    """48 scattered frames: PyAV seek-and-decode vs decoding from the start vs OpenCV seeking."""
    import av
    import cv2

    from engines.video.decode import open_video

    with open_video(video) as reader:
        info, keyframes = reader.info, len(reader.keyframe_times())
    rng = random.Random(seed)
    times = sorted(rng.uniform(0, info.duration_s - 1) for _ in range(FRAMES))
    wanted = [math.floor(t * info.fps + 1e-6) for t in times]

    def ours():
        with open_video(video) as reader:
            return reader.frames_at(times)

    def sequential():
        targets, found = set(wanted), {}
        with av.open(str(video)) as container:
            for index, frame in enumerate(container.decode(container.streams.video[0])):
                if index in targets:
                    found[index] = frame.to_ndarray(format="rgb24")
                if index >= wanted[-1]:
                    break
        return [found[i] for i in wanted]

    def opencv():
        capture = cv2.VideoCapture(str(video))
        frames = []
        for index in wanted:
            capture.set(cv2.CAP_PROP_POS_FRAMES, index)
            ok, image = capture.read()
            frames.append(cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if ok else None)
        capture.release()
        return frames

    ours_s, our_frames = _median_seconds(ours, repeats)
    print("seek and decode timed; decoding from the start…", file=sys.stderr, flush=True)
    sequential_s, sequential_frames = _median_seconds(sequential, max(1, repeats // 2))
    print("OpenCV seeking…", file=sys.stderr, flush=True)
    opencv_s, opencv_frames = _median_seconds(opencv, repeats)
    opencv_read = [f for f in opencv_frames if f is not None]
    return {
        "video_minutes": round(info.duration_s / 60, 2), "frames": FRAMES, "fps": info.fps,
        "keyframes": keyframes, "seek_and_decode_s": round(ours_s, 4), "sequential_decode_s": round(sequential_s, 4),
        "opencv_seek_s": round(opencv_s, 4), "speedup_vs_sequential": round(sequential_s / ours_s, 1),
        "goal_speedup_at_least": GOAL_VS_SEQUENTIAL, "meets_sequential_goal": sequential_s / ours_s >= GOAL_VS_SEQUENTIAL,
        "time_vs_opencv": round(ours_s / opencv_s, 3), "goal_time_vs_opencv_at_most": GOAL_VS_OPENCV,
        "meets_opencv_goal": ours_s / opencv_s <= GOAL_VS_OPENCV,
        "exact_frames": {"seek_and_decode": _exact(our_frames, times, info.fps),
                         "sequential": _exact(sequential_frames, times, info.fps),
                         "opencv": _exact(opencv_read, [t for t, f in zip(times, opencv_frames, strict=True) if f is not None],
                                          info.fps),
                         "opencv_unreadable": len(opencv_frames) - len(opencv_read), "of": FRAMES},
    }


def agent_latency(folder: Path, questions: int) -> dict:
    """Seconds per question of the gated agent and the coupled baseline, the index built first."""
    from engines.video.agent import AgentConfig, answer
    from engines.video.backends import roles_for
    from engines.video.loaders import read_questions
    from engines.video.metrics import summarise

    chosen = read_questions(folder / "questions.jsonl")[:questions]
    result = {}
    for agent, planner in (("gated", "heuristic"), ("coupled", "coupled-heuristic")):
        roles = roles_for(planner, "frame-model", "frame-model", "bm25")
        started = time.perf_counter()
        for path in {str(folder / f"{q.video_id}.mp4") for q in chosen}:
            roles.retriever_for(path)
        index_s = time.perf_counter() - started
        seconds, trajectories = [], []
        for q in chosen:
            started = time.perf_counter()
            trajectories.append(answer(q, str(folder / f"{q.video_id}.mp4"), roles, AgentConfig(agent=agent)))
            seconds.append(time.perf_counter() - started)
        summary = summarise(trajectories)
        ordered = sorted(seconds)
        result[agent] = {"questions": len(chosen), "index_s": round(index_s, 2),
                         "p50_s": round(statistics.median(ordered), 3),
                         "p95_s": round(ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)], 3),
                         "accuracy": summary["accuracy"], "grounded_accuracy": summary["grounded_accuracy"],
                         "mean_steps": summary["mean_steps"], "mean_frames": summary["mean_frames"]}
        print(f"{agent} agent: {len(chosen)} questions", file=sys.stderr, flush=True)
    return result


def run(args: argparse.Namespace) -> dict:
    from engines.video.synthetic import SyntheticConfig, generate

    settings = QUICK if args.quick else FULL
    repeats = args.repeats or settings["repeats"]
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory(prefix="hai-bench-video-") as workdir:
        folder = Path(workdir)
        print(f"generating {settings['minutes']:g} minutes of video…", file=sys.stderr, flush=True)
        started = time.perf_counter()
        [script] = generate(folder, SyntheticConfig(minutes=settings["minutes"], seed=101))
        generate_s = time.perf_counter() - started
        video = folder / f"{script.video_id}.mp4"
        size_mb = video.stat().st_size / 1e6
        frames = seeking(video, repeats)
        latency = agent_latency(folder, settings["questions"])
    return {
        "benchmark": NAME, "quick": bool(args.quick), "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "repeats": repeats,
        "headline": (f"48 frames from a {frames['video_minutes']:g}-minute video: {frames['seek_and_decode_s'] * 1000:.0f} ms, "
                     f"{frames['speedup_vs_sequential']:g}x faster than decoding from the start (goal >= "
                     f"{GOAL_VS_SEQUENTIAL:g}x), {frames['time_vs_opencv']:.2f}x OpenCV seeking's time (goal <= 1); "
                     f"exact {frames['exact_frames']['seek_and_decode']}/48 vs OpenCV "
                     f"{frames['exact_frames']['opencv']}/48; gated agent p50 {latency['gated']['p50_s']:.2f} s per question"),
        "generation": {"minutes": settings["minutes"], "seconds": round(generate_s, 1), "megabytes": round(size_mb, 2)},
        "seeking": frames, "agent": latency, "machine": machine_info(load_before),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 10-minute video, 1 repeat, 3 questions")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
