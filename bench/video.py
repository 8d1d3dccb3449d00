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

- **accuracy** (the offline agent as a baseline): the gated agent (pixels inspector and captioner,
  heuristic planner) and the coupled baseline on the tuning set (``engines.video.synthetic`` with
  every kind of question, the set the offline roles were tuned on) and on the held-out set
  (``engines.video.heldout``, made independently and never tuned on), each question kind
  apart, with 95 % intervals (Wilson), temporal and semantic groundedness, guesses, and the gated
  agent's accuracy by step budget (2, 4, 8).

Median of ``--repeats`` timings after a warm-up. Prints one JSON line, writes the same object to
``bench/results/video.json`` (or ``--out``), progress on stderr.

    python bench/video.py            # the hour-long video, 5 repeats, 20 questions per agent
    python bench/video.py --quick    # a 5-minute video, 1 repeat, 3 questions, one question of each kind (checks the script)
    python bench/video.py --only accuracy   # the accuracy part alone
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
from dataclasses import asdict
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
FULL = {"minutes": 60.0, "repeats": 5, "questions": 20, "tuning_minutes": 20.0, "tuning_videos": 3,
        "budgets": (2, 4, 8)}
QUICK = {"minutes": 5.0, "repeats": 1, "questions": 3, "tuning_minutes": 4.0, "tuning_videos": 1, "budgets": (2, 8)}
GOAL_HELDOUT = 0.8  # held-out accuracy of every question kind, at least
TUNING_SEED = 41


def wilson(correct: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of a rate (better than the normal one for small n and rates
    near 0 or 1); None for n = 0."""
    if n == 0:
        return None
    p = correct / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(max(0.0, centre - half), 3), round(min(1.0, centre + half), 3)


def _by_kind(trajectories, kinds: dict[str, str]) -> dict:
    from engines.video.metrics import question_metrics

    rows: dict[str, list] = {}
    for t in trajectories:
        rows.setdefault(kinds.get(t.uid, "other"), []).append(question_metrics(t))
    table = {}
    for kind in sorted(rows):
        metrics = rows[kind]
        right = sum(bool(m.correct) for m in metrics)
        table[kind] = {"n": len(metrics), "correct": right, "accuracy": round(right / len(metrics), 3),
                       "ci95": wilson(right, len(metrics)),
                       "grounded": round(sum(bool(m.grounded) for m in metrics) / len(metrics), 3)}
    return table


def _score(trajectories, kinds: dict[str, str]) -> dict:
    from engines.video.metrics import summarise

    summary = summarise(trajectories)
    right = round((summary["accuracy"] or 0) * summary["n_scored"])
    return {"n": summary["n"], "accuracy": round(summary["accuracy"] or 0, 3), "ci95": wilson(right, summary["n_scored"]),
            "TG_rate": summary["TG_rate"] and round(summary["TG_rate"], 3),
            "SG_rate": summary["SG_rate"] and round(summary["SG_rate"], 3),
            "grounded_accuracy": summary["grounded_accuracy"] and round(summary["grounded_accuracy"], 3),
            "misaligned_correct_rate": summary["misaligned_correct_rate"] and round(summary["misaligned_correct_rate"], 3),
            "guesses": summary["guesses"], "final_modes": summary["final_modes"],
            "mean_steps": summary["mean_steps"] and round(summary["mean_steps"], 2),
            "by_kind": _by_kind(trajectories, kinds)}


def _answer_set(folder: Path, budgets: tuple[int, ...], label: str, per_kind: int | None = None) -> dict:
    """Both agents on one question set; the gated agent at each budget (its budget curve).
    ``per_kind``: only the first so many questions of each kind (the quick run's check of the script)."""
    import json

    from engines.video.agent import AgentConfig, answer
    from engines.video.backends import roles_for
    from engines.video.loaders import read_questions

    kinds = {}
    for line in (folder / "questions.jsonl").read_text().splitlines():
        if line.strip():
            record = json.loads(line)
            kinds[record["uid"]] = record.get("kind", "other")
    questions = read_questions(folder / "questions.jsonl")
    if per_kind is not None:
        taken: dict[str, int] = {}
        kept = []
        for question in questions:
            kind = kinds.get(question.uid, "other")
            if taken.get(kind, 0) < per_kind:
                taken[kind] = taken.get(kind, 0) + 1
                kept.append(question)
        questions = kept
    result: dict = {"questions": len(questions), "budgets": {}}
    started = time.perf_counter()
    roles = {agent: roles_for(planner, "pixels", "pixels", "bm25")
             for agent, planner in (("gated", "heuristic"), ("coupled", "coupled-heuristic"))}
    for path in sorted({str(folder / f"{q.video_id}.mp4") for q in questions}):
        roles["gated"].retriever_for(path)
    result["index_s"] = round(time.perf_counter() - started, 1)
    top = max(budgets)
    for budget in budgets:  # a pass's seconds count the frames it analyses anew (the cache keeps what others saw)
        started = time.perf_counter()
        runs = [answer(q, str(folder / f"{q.video_id}.mp4"), roles["gated"], AgentConfig(max_steps=budget))
                for q in questions]
        result["budgets"][str(budget)] = _score(runs, kinds) | {"seconds": round(time.perf_counter() - started, 1)}
        print(f"{label}: gated agent, {budget} steps: {result['budgets'][str(budget)]['accuracy']:.0%}",
              file=sys.stderr, flush=True)
    result["gated"] = result["budgets"][str(top)]
    coupled = [answer(q, str(folder / f"{q.video_id}.mp4"), roles["coupled"], AgentConfig(agent="coupled",
                                                                                          max_steps=top))
               for q in questions]
    result["coupled"] = _score(coupled, kinds)
    return result


def accuracy(workdir: Path, settings: dict, quick: bool) -> dict:
    """The offline agent on the tuning set and on the held-out set (see the module docstring)."""
    from engines.video import heldout
    from engines.video.synthetic import SyntheticConfig, generate

    tuning = workdir / "tuning"
    print("generating the tuning set…", file=sys.stderr, flush=True)
    generate(tuning, SyntheticConfig(minutes=settings["tuning_minutes"], videos=settings["tuning_videos"],
                                     seed=TUNING_SEED, more_kinds=True))
    held = workdir / "heldout"
    specs = heldout.QUICK_SET if quick else heldout.HELDOUT_SET
    print(f"generating the held-out set ({len(specs)} videos)…", file=sys.stderr, flush=True)
    started = time.perf_counter()
    heldout.generate(held, specs)
    generate_s = time.perf_counter() - started
    per_kind = 1 if quick else None
    tuned = _answer_set(tuning, settings["budgets"], "tuning", per_kind)
    report = _answer_set(held, settings["budgets"], "held-out", per_kind)
    kinds = report["gated"]["by_kind"]
    return {"tuning": tuned, "heldout": report | {"generate_s": round(generate_s, 1),
                                                  "videos": [asdict(s) for s in specs]},
            "goal_heldout_per_kind": GOAL_HELDOUT,
            "meets_heldout_goal": bool(kinds) and all(k["accuracy"] >= GOAL_HELDOUT for k in kinds.values()),
            "chance": "1 / number of options (0.25 with four)"}


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


def agent_latency(folder: Path, questions: int) -> dict:  # the synthetic hour, the frame-model roles
    """Seconds per question of the gated agent and the coupled baseline, the index built first."""
    from engines.video.agent import AgentConfig, answer
    from engines.video.backends import roles_for
    from engines.video.loaders import read_questions
    from engines.video.metrics import summarise
    from engines.video.offline.perception import forget_views

    chosen = read_questions(folder / "questions.jsonl")[:questions]
    result = {}
    for agent, planner in (("gated", "heuristic"), ("coupled", "coupled-heuristic")):
        roles = roles_for(planner, "pixels", "pixels", "bm25")
        started = time.perf_counter()
        for path in {str(folder / f"{q.video_id}.mp4") for q in chosen}:
            roles.retriever_for(path)
        index_s = time.perf_counter() - started
        seconds, trajectories = [], []
        for q in chosen:
            forget_views()  # each question timed with its frames analysed afresh, as a new question's are
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


def _accuracy_line(scores: dict) -> str:
    kinds = scores["heldout"]["gated"]["by_kind"]
    return ("held-out accuracy by kind: " + ", ".join(f"{k} {v['accuracy']:.0%} ({v['ci95'][0]:.0%}-{v['ci95'][1]:.0%},"
                                                      f" n={v['n']})" for k, v in kinds.items()) +
            f"; all at least {GOAL_HELDOUT:.0%}: {scores['meets_heldout_goal']}")


def run(args: argparse.Namespace) -> dict:
    from engines.video.synthetic import SyntheticConfig, generate

    settings = QUICK if args.quick else FULL
    repeats = args.repeats or settings["repeats"]
    load_before = round(os.getloadavg()[0], 2)
    result: dict = {"benchmark": NAME, "quick": bool(args.quick),
                    "when": datetime.now(UTC).isoformat(timespec="seconds"), "repeats": repeats}
    with tempfile.TemporaryDirectory(prefix="hai-bench-video-") as workdir:
        folder = Path(workdir)
        headline = []
        if args.only in (None, "seeking"):
            print(f"generating {settings['minutes']:g} minutes of video…", file=sys.stderr, flush=True)
            started = time.perf_counter()
            [script] = generate(folder / "hour", SyntheticConfig(minutes=settings["minutes"], seed=101))
            generate_s = time.perf_counter() - started
            video = folder / "hour" / f"{script.video_id}.mp4"
            size_mb = video.stat().st_size / 1e6
            frames = seeking(video, repeats)
            latency = agent_latency(folder / "hour", settings["questions"])
            headline.append(
                f"48 frames from a {frames['video_minutes']:g}-minute video: {frames['seek_and_decode_s'] * 1000:.0f} ms, "
                f"{frames['speedup_vs_sequential']:g}x faster than decoding from the start (goal >= "
                f"{GOAL_VS_SEQUENTIAL:g}x), {frames['time_vs_opencv']:.2f}x OpenCV seeking's time (goal <= 1); "
                f"exact {frames['exact_frames']['seek_and_decode']}/48 vs OpenCV "
                f"{frames['exact_frames']['opencv']}/48; gated agent p50 {latency['gated']['p50_s']:.2f} s per question")
            result |= {"generation": {"minutes": settings["minutes"], "seconds": round(generate_s, 1),
                                      "megabytes": round(size_mb, 2)}, "seeking": frames, "agent": latency}
        if args.only in (None, "accuracy"):
            scores = accuracy(folder, settings, args.quick)
            headline.append(_accuracy_line(scores))
            result["accuracy"] = scores
    result["headline"] = "; ".join(headline)
    result["machine"] = machine_info(load_before)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 5-minute video, 1 repeat, 3 questions")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--only", choices=("seeking", "accuracy"), default=None, help="one part of the benchmark")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
