"""SCPE, self-correcting prompt evolution: an image-to-video model used as an image editor.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Method: SCPE") learns a
prompt playbook ACE-style (``scpe/scripts/ace_i2v_official3.py``), generates each item's video
with it, and keeps the frame that best shows the edit (``scpe/scripts/ace_v2f_qa2.py``)::

    playbook = seed
    for epoch in range(E_learn):                 # upstream: 1 (README recipe) or 2 (full_pipeline)
      for idx, item in enumerate(items):
        epoch 0: the baseline method's frames when given, else a video of the bare instruction
        later:   prompt = refiner.generate(image, instruction, playbook); video = i2v(wrap(prompt), seed=s0+idx)
        report = judge.analyze_video(image, video, instruction, prompt or "N/A (Original Video)")
        if not report.success: playbook.merge(refiner.curate(refiner.reflect(report, prompt), playbook))
    playbook.normalize()
    for idx, item in enumerate(items):           # the final pass
      prompt = refiner.generate(...); video = i2v(wrap(prompt), seed=s0+idx)
      k = judge.select_frame(uniform(video, 15), instruction)   # frame 1 when the selector fails
      write the frame, the 15 sampled frames and the trace

The analyzer's success only decides whether a sample teaches the playbook; upstream has no retry
and no score threshold. Here ``retries`` R > 1 adds one, per item of the final pass: while the
analyzer says the video fails and tries are left, the failure is reflected on and curated into
that item's own copy of the playbook, and the item is generated again with the next seed. R = 1
(the default) is upstream's schedule; the final video is still analyzed, for the trace only.

Outputs, for method ``M`` (default ``"scpe"``), in the layout of a HOI-Edit benchmark folder
(``engines.hoi.browse`` reads it; ``<out>`` may be the benchmark folder itself)::

    <out>/M_frames/<split>/<key>                 the selected frame (PNG data under the key's name)
    <out>/M_strips/<split>/<stem>/frame_NN.png   the uniformly sampled frames, NN = 00, 01, ...
    <out>/M_traces/<split>/<stem>.json           the item's trace (below)
    <out>/playbook.json                          the learned, normalized playbook
    <out>/scpe_run.json                          config, roles, counts, seconds, code version

A trace is upstream's ``SampleTrace`` record ``{image_name, status, inputs, stages: {analysis,
reflector, curator, merge}}`` for the final pass (stages that ran; ``generator`` holds the
prompt), plus ``prompt`` (the enhanced prompt, its reasoning, the wrapped text and the seed),
``selection`` (the :class:`~engines.hoi.roles.FrameChoice` fields; ``best_frame_index`` is the
index in the strip actually used, ``frame_index`` the index in the video), ``tries`` (each try's
seed, prompt and stages) and ``epochs`` (one upstream-shaped record per learning epoch).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from engines.hoi.benchmark import Benchmark, BenchmarkItem
from engines.hoi.methods import METHOD_NAME
from engines.hoi.playbook import MergeResult, NormalizeStats, Playbook, PlaybookFormatError, load_playbook
from engines.hoi.roles import (
    EnhancedPrompt,
    FrameChoice,
    I2VGenerator,
    Insight,
    PlaybookOperation,
    PromptRefiner,
    VideoReport,
    VLMJudge,
)
from engines.platform.config_schema import check_fields
from engines.platform.files import echo
from engines.platform.progress import Progress

# Upstream scpe/data/wan22_wrap_en.json: every prompt sent to the I2V model is wrapped so that
# the camera stays still and nobody else enters the frame (the two failures the analyzer reports most).
WRAP_PREFIX = "The camera is fixed and the person is the only one in the frame. "
WRAP_SUFFIX = " With no other person's additional movements."
# What upstream tells the analyzer and the reflector for a video made without an enhanced prompt.
ORIGINAL_VIDEO = "N/A (Original Video)"



def wrap_prompt(prompt: str) -> str:
    """The text sent to the I2V model: upstream's wrap around the stripped prompt."""
    return f"{WRAP_PREFIX}{prompt.strip()}{WRAP_SUFFIX}"


def uniform_indices(n_frames: int, count: int = 15) -> list[int]:
    """The frames shown to the selector, as upstream's ``extract_video_frames``: every frame when
    the video has fewer than ``count``, else ``np.linspace(0, n_frames - 1, count, dtype=int)``
    (truncated, so the first and the last frame are always in)."""
    if n_frames < 1:
        raise ValueError(f"a video needs at least one frame to sample from, got {n_frames}")
    if count < 1:
        raise ValueError(f"the number of frames to sample must be at least 1, got {count}")
    if n_frames < count:
        return list(range(n_frames))
    return [int(i) for i in np.linspace(0, n_frames - 1, count, dtype=int)]


@dataclass
class SCPEConfig:
    """How SCPE runs (``docs/hoi.md``, "Method: SCPE"). Each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``scpe`` command's option, the ``hoi.scpe`` job's parameter.

    Args:
        epochs: learning epochs E_learn before the final pass; upstream's README recipe learns once
            (1), its ``full_pipeline`` twice (2); 0 generates with the playbook as given.
        retries: tries per item in the final pass while the analyzer says the video fails; 1 is
            upstream (no retry).
        frames_sampled: frames sampled uniformly from each final video for the selector (upstream 15).
        num_frames: frames the I2V model generates (Wan2.2: 81; small for CPU runs).
        seed: base seed s0; item ``idx`` (its position in the items run) is generated with
            ``s0 + idx``, as upstream's local Wan2.2 script; a retry ``t`` adds ``t * len(items)``.
        method_name: the name the outputs are written under (``<name>_frames`` ...).
        limit: run only the first ``limit`` items.
        baseline_method: a method of the benchmark folder whose sampled frames
            (``<name>_strips/<split>/<stem>/``) epoch 0 learns from, as upstream learns from plain
            Wan2.2 videos; None (or an item without them) generates from the bare instruction.
    """

    epochs: int = field(default=1, metadata={
        "help": "learning epochs before the final pass (upstream README: 1; full_pipeline: 2)", "min": 0, "max": 10})
    retries: int = field(default=1, metadata={
        "help": "tries per item while the analyzer says the video fails (1 = upstream, no retry)", "min": 1, "max": 10})
    frames_sampled: int = field(default=15, metadata={"min": 1, "cli": False, "job": False})
    num_frames: int = field(default=17, metadata={"help": "frames per generated video", "min": 1, "job": False})
    seed: int = field(default=0, metadata={"help": "base seed; item idx uses seed + idx", "min": 0, "job": False})
    method_name: str = field(default="scpe", metadata={
        "help": "the name the outputs are written under", "cli": {"flag": "--method"}, "job": False})
    limit: int | None = field(default=None, metadata={"help": "the first N items only", "min": 1, "max": 100_000})
    baseline_method: str | None = field(default=None, metadata={"job": False, "cli": {
        "flag": "--baseline", "metavar": "METHOD",
        "help": "epoch 0 learns from this method's strips in the benchmark folder (plain I2V videos)"}})

    def __post_init__(self) -> None:
        check_fields(self)
        for name in ("method_name", "baseline_method"):
            value = getattr(self, name)
            if (value is not None or name == "method_name") and not (
                    isinstance(value, str) and re.match(METHOD_NAME, value)):
                raise ValueError(f"SCPEConfig.{name} must be a folder-safe name (letters, digits, '_', '-', '.'), "
                                 f"got {echo(value)}")


@dataclass(frozen=True)
class SCPEItemResult:
    """One item's outcome in the final pass."""

    key: str
    split: str
    status: str  # "ok_pass", "ok_fail", "ok_unchecked", "failed_<stage>", "skipped_no_image"
    tries: int  # tries made in the final pass
    seed: int | None  # the kept try's seed
    prompt: str | None  # the kept try's enhanced prompt
    frame_path: Path | None  # the selected frame written; None when no video was made
    frame_index: int | None  # its index in the video
    trace_path: Path

    @property
    def written(self) -> bool:
        return self.frame_path is not None


@dataclass(frozen=True)
class EpochSummary:
    """What one learning epoch did."""

    epoch: int
    items: int
    passed: int  # the analyzer said success: nothing to learn
    learned: int  # failed and added at least one entry
    no_new_rule: int  # failed, but every operation was already in the playbook
    failed: int  # a role raised or gave nothing usable
    skipped: int  # no image
    added: int  # playbook entries added
    seconds: float


@dataclass
class SCPEResult:
    """The learned playbook, each item's outcome and where everything was written."""

    playbook: Playbook
    items: list[SCPEItemResult]
    epochs: list[EpochSummary]
    normalize: NormalizeStats
    out_dir: Path
    config: SCPEConfig
    seconds: float
    run_path: Path = field(default=Path())

    def counts(self) -> dict[str, int]:
        """Items per final status, and how many frames were written."""
        counts: dict[str, int] = {"items": len(self.items), "written": sum(item.written for item in self.items)}
        for item in self.items:
            counts[item.status] = counts.get(item.status, 0) + 1
        return counts


# ---------------------------------------------------------------- traces


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class _Trace:
    """Upstream's ``SampleTrace`` record: inputs, then each stage's output (or error) with its time."""

    def __init__(self, item: BenchmarkItem, index: int, total: int, **extra: Any) -> None:
        self.record: dict[str, Any] = {"ts": _now(), "index": index, "total": total, "image_name": item.key,
                                       "split": item.split, "instruction": item.instruction, **extra,
                                       "status": "pending", "inputs": {}, "stages": {}}

    @property
    def stages(self) -> dict[str, Any]:
        return self.record["stages"]

    def set_inputs(self, **inputs: Any) -> None:
        self.record["inputs"].update(inputs)

    def finish(self, status: str) -> str:
        self.record["status"] = status
        return status


def _stage(stages: dict[str, Any], name: str, describe: Callable[[Any], Any], call: Callable[..., Any],
           *args: Any, **kwargs: Any) -> Any:
    """Run one role call ``call(*args, **kwargs)``; record its output (``describe``d) or its error
    under ``stages[name]``. Returns the value, or None when the call raised (upstream records a
    failed stage and goes on to the next sample rather than ending a run of hundreds of videos)."""
    try:
        value = call(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - any role failure is recorded, as upstream's failed_* statuses
        stages[name] = {"ts": _now(), "output": None, "error": _error(exc)}
        return None
    try:
        output = describe(value)
    except (TypeError, AttributeError, ValueError):
        output = repr(value)  # a reply of an unexpected type: kept as seen; the caller rejects it
    stages[name] = {"ts": _now(), "output": output}
    return value


def _frames_note(frames: Sequence[Image.Image]) -> dict[str, Any]:
    first = frames[0] if frames else None
    return {"frames": len(frames), "size": list(first.size) if first is not None else None}


def _operations(value: Any) -> dict[str, Any]:
    """Curator operations in upstream's ``{"operations": [{type, section, content}]}`` shape."""
    return {"operations": [asdict(op) if isinstance(op, PlaybookOperation) else op for op in value]}


# ---------------------------------------------------------------- inputs


def _open_image(item: BenchmarkItem) -> Image.Image | None:
    if item.image_path is None or not Path(item.image_path).is_file():
        return None
    with Image.open(item.image_path) as image:
        return image.convert("RGB")


def baseline_frames(root: Path, method: str, item: BenchmarkItem) -> list[Image.Image] | None:
    """A method's sampled frames of ``item`` in a benchmark folder (at its top or under ``data/``),
    in order; None when it has none."""
    stem = Path(item.key).stem
    for base in (root, root / "data"):
        folder = base / f"{method}_strips" / item.split / stem
        paths = sorted(folder.glob("frame_*.png")) if folder.is_dir() else []
        if paths:
            frames = []
            for path in paths:
                with Image.open(path) as frame:
                    frames.append(frame.convert("RGB"))
            return frames
    return None


def _generate_video(i2v: I2VGenerator, stages: dict, image: Image.Image, prompt: str, *, num_frames: int,
                    seed: int) -> list[Image.Image] | None:
    frames = _stage(stages, "i2v", lambda value: {**_frames_note(value), "seed": seed, "prompt": wrap_prompt(prompt)},
                    i2v.generate, image, wrap_prompt(prompt), num_frames=num_frames, seed=seed)
    frames = list(frames) if frames is not None else None
    if frames is not None and not frames:
        stages["i2v"]["error"] = "the I2V model returned no frames"
        return None
    return frames


# ---------------------------------------------------------------- learning


def _learn_from(report: VideoReport, prompt: str, item: BenchmarkItem, playbook: Playbook, refiner: PromptRefiner,
                stages: dict) -> tuple[str, MergeResult | None]:
    """Reflector, curator, merger on a failed video; the status upstream gives the sample."""
    insight = _stage(stages, "reflector", asdict, refiner.reflect, report, prompt, item.instruction)
    if not isinstance(insight, Insight):
        return "failed_reflector", None
    operations = _stage(stages, "curator", _operations, refiner.curate, insight, playbook.as_text())
    if not isinstance(operations, list | tuple):
        return "failed_curator", None
    try:
        merged = playbook.merge(operations)
    except PlaybookFormatError as exc:
        stages["merge"] = {"ts": _now(), "output": {"updated": False}, "error": str(exc)}
        return "failed_merge", None
    stages["merge"] = {"ts": _now(), "output": {**merged.to_dict(), **_operations(operations)}}
    return ("ok_learned" if merged.updated else "ok_fail_no_new_rule"), merged


def _learning_step(epoch: int, idx: int, item: BenchmarkItem, total: int, playbook: Playbook, i2v: I2VGenerator,
                   judge: VLMJudge, refiner: PromptRefiner, config: SCPEConfig, root: Path) -> tuple[dict, int]:
    """One item of one learning epoch; its upstream-shaped trace and the entries it added."""
    trace = _Trace(item, idx, total, epoch=epoch)
    image = _open_image(item)
    if image is None:
        trace.finish("skipped_no_image")
        return trace.record, 0
    seed = config.seed + idx
    frames = None
    if epoch == 0 and config.baseline_method:
        frames = baseline_frames(root, config.baseline_method, item)
        if frames:
            trace.set_inputs(video=f"{config.baseline_method}_strips ({len(frames)} frames)", enhanced_prompt=ORIGINAL_VIDEO)
    if epoch == 0 and not frames:
        # Upstream's epoch 0 learns from plain Wan2.2 videos: the bare instruction, no playbook.
        frames = _generate_video(i2v, trace.stages, image, item.instruction, num_frames=config.num_frames, seed=seed)
        trace.set_inputs(video="generated from the bare instruction", seed=seed, enhanced_prompt=ORIGINAL_VIDEO)
    prompt = ORIGINAL_VIDEO
    if epoch > 0:
        generated = _stage(trace.stages, "generator", asdict, refiner.generate, image, item.instruction,
                           playbook.as_text())
        if not isinstance(generated, EnhancedPrompt) or not generated.enhanced_prompt.strip():
            trace.finish("failed_generator")
            return trace.record, 0
        prompt = generated.enhanced_prompt
        frames = _generate_video(i2v, trace.stages, image, prompt, num_frames=config.num_frames, seed=seed)
        trace.set_inputs(video="generated with the playbook", seed=seed, enhanced_prompt=prompt)
    trace.set_inputs(instruction=item.instruction, image=_image_name(item))
    if not frames:
        trace.finish("failed_i2v")
        return trace.record, 0
    report = _stage(trace.stages, "analysis", asdict, judge.analyze_video, image, frames, item.instruction, prompt)
    if not isinstance(report, VideoReport):
        trace.finish("failed_analysis")
        return trace.record, 0
    if report.success:
        trace.finish("ok_pass")
        return trace.record, 0
    status, merged = _learn_from(report, prompt, item, playbook, refiner, trace.stages)
    trace.finish(status)
    return trace.record, len(merged.added) if merged is not None else 0


def _summarize(epoch: int, records: list[dict], added: int, seconds: float) -> EpochSummary:
    statuses = [record["status"] for record in records]
    return EpochSummary(
        epoch=epoch, items=len(records), passed=statuses.count("ok_pass"), learned=statuses.count("ok_learned"),
        no_new_rule=statuses.count("ok_fail_no_new_rule"),
        failed=sum(status.startswith("failed_") for status in statuses),
        skipped=sum(status.startswith("skipped_") for status in statuses), added=added, seconds=round(seconds, 3))


# ---------------------------------------------------------------- the final pass


def _select(judge: VLMJudge, sampled: list[Image.Image], indices: list[int], instruction: str) -> dict[str, Any]:
    """The selector's choice among the sampled frames; the first frame when it fails (upstream:
    "if call 2 fails, frame 1 is used", frame 1 counting from one)."""
    try:
        choice = judge.select_frame(sampled, instruction)
    except Exception as exc:  # noqa: BLE001 - upstream falls back to frame 1 on any failure of call 2
        return {"best_frame_index": 0, "strict_pass": False, "selection_mode": "fallback", "match_score": 0.0,
                "frame_index": indices[0], "sampled_indices": indices, "fallback": True, "error": _error(exc)}
    selection = asdict(choice) if isinstance(choice, FrameChoice) else {"reply": repr(choice)}
    reported = selection.get("best_frame_index")
    valid = isinstance(reported, int) and not isinstance(reported, bool) and 0 <= reported < len(sampled)
    if not valid:
        selection.update(best_frame_index=0, selection_mode="invalid_index_fallback", reported_index=reported,
                         error=f"frame index {echo(reported)} is outside 0..{len(sampled) - 1}")
    selection.update(frame_index=indices[selection["best_frame_index"]], sampled_indices=indices, fallback=not valid)
    return selection


def _clear_outputs(paths: dict[str, Path]) -> None:
    """Remove what an earlier run wrote for the item, so a failed item leaves no stale frame."""
    paths["frame"].unlink(missing_ok=True)
    if paths["strip"].is_dir():
        for old in paths["strip"].glob("frame_*.png"):
            old.unlink()


def _output_paths(out_dir: Path, method: str, item: BenchmarkItem) -> dict[str, Path]:
    stem = Path(item.key).stem
    return {"frame": out_dir / f"{method}_frames" / item.split / item.key,
            "strip": out_dir / f"{method}_strips" / item.split / stem,
            "trace": out_dir / f"{method}_traces" / item.split / f"{stem}.json"}


def _final_item(idx: int, item: BenchmarkItem, n_items: int, playbook: Playbook, i2v: I2VGenerator, judge: VLMJudge,
                refiner: PromptRefiner, config: SCPEConfig, out_dir: Path, epochs: list[dict]) -> SCPEItemResult:
    paths = _output_paths(out_dir, config.method_name, item)
    _clear_outputs(paths)
    trace = _Trace(item, idx, n_items, method=config.method_name)
    trace.record["epochs"] = epochs
    trace.record["tries"] = []
    image = _open_image(item)
    kept: dict[str, Any] | None = None
    status = "skipped_no_image"
    if image is not None:
        trace.set_inputs(image=_image_name(item), instruction=item.instruction, playbook_entries=len(playbook))
        own_playbook = playbook  # copied on the first lesson, so one item's retries never change another's
        for t in range(config.retries):
            seed = config.seed + idx + t * n_items
            attempt: dict[str, Any] = {"try": t, "seed": seed, "stages": {}}
            trace.record["tries"].append(attempt)
            stages = attempt["stages"]
            generated = _stage(stages, "generator", asdict, refiner.generate, image, item.instruction,
                               own_playbook.as_text())
            if not isinstance(generated, EnhancedPrompt) or not generated.enhanced_prompt.strip():
                status = "failed_generator" if kept is None else status
                continue
            prompt = generated.enhanced_prompt
            attempt["prompt"] = {"enhanced_prompt": prompt, "reasoning": generated.reasoning,
                                 "wrapped": wrap_prompt(prompt), "seed": seed}
            frames = _generate_video(i2v, stages, image, prompt, num_frames=config.num_frames, seed=seed)
            if not frames:
                status = "failed_i2v" if kept is None else status
                continue
            kept, attempt["frames"] = attempt, frames
            report = _stage(stages, "analysis", asdict, judge.analyze_video, image, frames, item.instruction, prompt)
            if not isinstance(report, VideoReport):
                status = "ok_unchecked"
                break  # an analyzer that fails cannot say whether another try would do better
            if report.success:
                status = "ok_pass"
                break
            status = "ok_fail"
            if t + 1 < config.retries:
                own_playbook = own_playbook.copy() if own_playbook is playbook else own_playbook
                _learn_from(report, prompt, item, own_playbook, refiner, stages)
    frame_path = frame_index = None
    if kept is not None:
        frames = kept.pop("frames")
        for attempt in trace.record["tries"]:
            attempt.pop("frames", None)
        indices = uniform_indices(len(frames), config.frames_sampled)
        sampled = [frames[i] for i in indices]
        selection = _select(judge, sampled, indices, item.instruction)
        paths["strip"].mkdir(parents=True, exist_ok=True)
        for n, frame in enumerate(sampled):
            frame.save(paths["strip"] / f"frame_{n:02d}.png", format="PNG")
        paths["frame"].parent.mkdir(parents=True, exist_ok=True)
        # PNG data under the key's own name, so the evaluator finds it as upstream's
        # data/<model>_frames/<split>/<key>; PNG keeps the frame as generated.
        sampled[selection["best_frame_index"]].save(paths["frame"], format="PNG")
        frame_path, frame_index = paths["frame"], selection["frame_index"]
        trace.record.update(prompt=kept["prompt"], selection=selection, stages=kept["stages"])
        trace.set_inputs(seed=kept["seed"], enhanced_prompt=kept["prompt"]["enhanced_prompt"])
    else:
        trace.record.update(prompt=None, selection=None,
                            stages=trace.record["tries"][-1]["stages"] if trace.record["tries"] else {})
    trace.finish(status)
    paths["trace"].parent.mkdir(parents=True, exist_ok=True)
    paths["trace"].write_text(json.dumps(trace.record, ensure_ascii=False, indent=2, default=str) + "\n",
                              encoding="utf-8")
    return SCPEItemResult(
        key=item.key, split=item.split, status=status, tries=len(trace.record["tries"]),
        seed=kept["seed"] if kept is not None else None,
        prompt=kept["prompt"]["enhanced_prompt"] if kept is not None else None,
        frame_path=frame_path, frame_index=frame_index, trace_path=paths["trace"])


# ---------------------------------------------------------------- the run


def _check_items(items: Sequence[BenchmarkItem]) -> None:
    stems: dict[tuple[str, str], str] = {}
    for item in items:
        stem = (item.split, Path(item.key).stem)
        if stem in stems and stems[stem] != item.key:
            raise ValueError(f"items {echo(stems[stem])} and {echo(item.key)} of split {item.split} share the name "
                             f"{echo(stem[1])}: their strips and traces would overwrite each other")
        stems[stem] = item.key


def _role_name(role: Any) -> str:
    return str(getattr(role, "name", type(role).__name__))


def _image_name(item: BenchmarkItem) -> str:
    """The source image as the benchmark names it (``images/<split>/<key>``), the same on any machine."""
    return f"images/{item.split}/{item.key}"


def _portable(path: Path) -> str:
    """A folder as its owned folder's relative name (``shipped/hoi/demo``, ``datasets/hoi/<name>``):
    a run file carries no path of the machine that wrote it, and reads the same in any checkout."""
    from engines.hoi.folders import shown

    return shown(path)


def run_scpe(benchmark: Benchmark, items: Sequence[BenchmarkItem], i2v: I2VGenerator, judge: VLMJudge,
             refiner: PromptRefiner, config: SCPEConfig, out_dir: str | Path, *, playbook: Playbook | None = None,
             progress: Progress | None = None) -> SCPEResult:
    """Learn a playbook on ``items``, then edit each item with it: generate, sample, select, write.

    Args:
        benchmark: the benchmark the items come from (its folder holds a baseline method's strips).
        items: the items to learn on and edit, in order; an item's position is its seed offset.
        i2v: the image-to-video generator.
        judge: the VLM judge: ``analyze_video`` for the analyzer, ``select_frame`` for the selector.
        refiner: the prompt generator, reflector and curator.
        config: :class:`SCPEConfig`.
        out_dir: where the frames, strips, traces, ``playbook.json`` and ``scpe_run.json`` go.
        playbook: the playbook to start from (left unchanged); None starts from the project's seed.
        progress: called as ``progress(done, total, message)`` after each item of each pass.

    Returns:
        :class:`SCPEResult`: the learned playbook, each item's outcome, the epochs' summaries.

    Examples::

        >>> result = run_scpe(bench, bench.items("L1L2"), make("i2v", "offline"), make("judge", "offline"),
        ...                   make("refiner", "offline"), SCPEConfig(epochs=1), "out")   # doctest: +SKIP
        >>> result.counts()                                                               # doctest: +SKIP
        {'items': 6, 'written': 6, 'ok_pass': 4, 'ok_fail': 2}
    """
    started = time.perf_counter()
    out_dir = Path(out_dir)
    items = list(items)[:config.limit] if config.limit is not None else list(items)
    _check_items(items)
    learned = (playbook if playbook is not None else load_playbook()).copy()
    n, total = len(items), len(items) * (config.epochs + 1)
    done = 0

    def report(message: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total, message)

    epoch_traces: dict[tuple[str, str], list[dict]] = {(item.split, item.key): [] for item in items}
    summaries = []
    for epoch in range(config.epochs):
        epoch_started, records, added = time.perf_counter(), [], 0
        for idx, item in enumerate(items):
            record, new = _learning_step(epoch, idx, item, n, learned, i2v, judge, refiner, config, benchmark.root)
            records.append(record)
            epoch_traces[(item.split, item.key)].append(record)
            added += new
            report(f"learning epoch {epoch + 1}/{config.epochs}: {item.split}/{item.key} {record['status']}")
        summaries.append(_summarize(epoch, records, added, time.perf_counter() - epoch_started))
    stats = learned.normalize()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "playbook.json").write_text(learned.to_json(), encoding="utf-8")
    learning_seconds = time.perf_counter() - started

    results = []
    for idx, item in enumerate(items):
        outcome = _final_item(idx, item, n, learned, i2v, judge, refiner, config, out_dir,
                              epoch_traces[(item.split, item.key)])
        results.append(outcome)
        report(f"final: {item.split}/{item.key} {outcome.status}")
    seconds = time.perf_counter() - started
    result = SCPEResult(playbook=learned, items=results, epochs=summaries, normalize=stats, out_dir=out_dir,
                        config=config, seconds=round(seconds, 3), run_path=out_dir / "scpe_run.json")
    _write_run(result, {"i2v": _role_name(i2v), "judge": _role_name(judge), "refiner": _role_name(refiner)},
               benchmark, learning_seconds)
    return result


def _write_run(result: SCPEResult, roles: dict[str, str], benchmark: Benchmark, learning_seconds: float) -> None:
    from engines.platform.provenance import code_version

    record = {
        "method": result.config.method_name, "config": asdict(result.config), "roles": roles,
        "benchmark": _portable(benchmark.root), "code_version": code_version(), "finished": _now(),
        "counts": result.counts(), "epochs": [asdict(summary) for summary in result.epochs],
        "normalize": asdict(result.normalize), "playbook": result.playbook.counts(),
        "seconds": {"learning": round(learning_seconds, 3), "final": round(result.seconds - learning_seconds, 3),
                    "total": result.seconds},
    }
    result.run_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
