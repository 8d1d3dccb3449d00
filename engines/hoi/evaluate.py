"""HOI-Eval: one editing method's outputs judged item by item into the records the scorer reads.

HOI-Edit (ICML 2026; code ``oceanflowlab/HOI-Edit``, commit ``4022133``; ``docs/hoi.md``, "Method: HOI-Eval
scores", steps 1-6). For each benchmark item, the method's edited image ``<outputs>/<split>/<key>``
(upstream ``data/<model>_frames/{L1L2,L3}/<key>``) is judged against the source image:

1. **Resize** the edit to the original's size, bilinear (``evaluation/resize_edited_images_to_original.py``),
   so the annotated boxes and the grounded ones share coordinates.
2. **Detect** (``evaluation/inference_on_multi_image_eval_optimized.py``; box threshold 0.3, text
   0.25): the person is the grounder's top ``"human"`` box.
3. **Track** (``sam2/run_sam2_tracking_for_eval.py``): the object is the annotated object box
   followed from the original into the edit; when tracking gives nothing, the top 5 detections of
   the object's name are the candidates. Where the grounder finds no person, or no object either
   way, the annotated box stands in (upstream then asks the judge to locate the entity, which the
   judge role here does not do); ``person_box_source`` / ``object_box_source`` say which.
4. **Interaction I** (``evaluation/gemini3_final_hoicheck_new_noquestion_track_google_newsim.py``):
   per (person, object) pair the judge sees "BEFORE EDITING" (the original, annotated person blue,
   object red), "AFTER EDITING" (the edit, the pair's boxes blue and red) and ``generated_question``;
   ``I = max_yes_confidence`` over the pairs (a "no" counts 0).
5. **H and O**: the judge sees BEFORE (the entity in a red box), AFTER (the candidates numbered, in
   red) and the instruction, and matches the entity (``match_score``): H = ``subject_similarity``,
   O = ``object_similarity``, each identity × quality.
6. **QA**: each ``question_v6`` question is asked on the edited image (``evaluation/run_question_
   answering.py``: the annotated boxes and the instruction given as text; the tool drawn yellow
   when the question speaks of a yellow box), recorded as ``qa = [{question, answer, confidence}]``.

**Modes.** The default is upstream's ``confidence_first``: I over every pair, then H and O. Items
tagged ``L1-interaction-relation_not_occur`` use ``similarity_first``, as the method does: the
entities are matched first (H, O), and the interaction is asked about the matched pair only
(a candidate the judge matches to nothing leaves the top-ranked one). Upstream's release runs the
similarity-first pass for every item and then overwrites it with the confidence-first one (and
picks the mode from ``tags_v4``, which its JSONs lack), so every released record says
``confidence_first``; the mode here follows ``tags_v6``.

**Errors are never zeros.** A judge reply that does not parse, or a role that raises, becomes the
field's ``*_error`` (``max_yes_confidence_error``, ``subject_similarity_error``,
``object_similarity_error``, ``grounding_error``; a QA answer's ``error``), so the scorer skips the
item (upstream's ``hoi_fail``). A missing output image is recorded as ``{"output_missing": true}``
(a missing source image as ``{"source_missing": true}``): no score, so nothing is averaged.

**Records file** (:func:`engines.hoi.scoring.read_records`)::

    {"method": NAME, "L1L2": {key: record}, "L3": {...}}

with upstream's field names plus ``reasoning`` (the judge's interaction reasoning for the pair
kept), ``person_box`` / ``object_box`` (that pair's boxes in the edit) and ``generated_question``.
It is rewritten atomically after each item; a rerun skips the items already judged, and judges
again those recorded with an error or without an output (upstream reruns errored items too).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image

from engines.hoi.benchmark import SPLITS, Benchmark, BenchmarkItem, load_benchmark
from engines.hoi.drawing import AFTER_TITLE, BEFORE_TITLE, RED, add_title, annotate, draw_boxes, draw_candidates
from engines.hoi.judge_replies import (
    JudgeReplyError,
    interaction_fields,
    match_fields,
    parse_answer,
    parse_match,
    parse_yes_no,
)
from engines.hoi.methods import METHOD_NAME
from engines.hoi.roles import Box, Grounder, VLMJudge
from engines.hoi.scoring import compute_scores, normalize_question, parse_records
from engines.platform.config_schema import argparse_options, check_fields, option_values
from engines.platform.files import echo
from engines.platform.progress import Progress, ProgressBar

# Upstream's GroundingDINO settings (inference_on_multi_image_eval_optimized.py).
PERSON_PROMPT = "human"
BOX_THRESHOLD = 0.3
TEXT_THRESHOLD = 0.25
# Upstream keeps the first 5 object detections when tracking gives no box.
MAX_OBJECT_CANDIDATES = 5
# The entity named to the judge for the person (selects the person rubric in the match prompt).
PERSON_ENTITY = "person"

DEFAULT_MODE = "confidence_first"
MATCH_FIRST_MODE = "similarity_first"
MATCH_FIRST_TAG = "L1-interaction-relation_not_occur"

# Upstream's file names for an edit besides <key>: the same stem as .png/.jpg, or *_edited.
_OUTPUT_PATTERNS = ("{key}", "{stem}.png", "{stem}.jpg", "{stem}_edited.png", "{stem}_edited.jpg")
# Record fields that say the item was not judged at all: judged again on a rerun.
_NOT_JUDGED = ("output_missing", "source_missing")


# ---------------------------------------------------------------- finding and loading images


def find_output(outputs_dir: str | Path, split: str, key: str) -> Path | None:
    """The method's edit of item ``key``: ``<outputs_dir>/<split>/<key>``, else the same stem as
    .png/.jpg or ``<stem>_edited.png/.jpg`` (upstream's names); None when there is none."""
    folder = Path(outputs_dir) / split
    stem = Path(key).stem
    for pattern in _OUTPUT_PATTERNS:
        candidate = folder / pattern.format(key=key, stem=stem)
        if candidate.is_file():
            return candidate
    return None


def load_resized(path: str | Path, size: tuple[int, int]) -> Image.Image:
    """The image at ``path`` as RGB, resized bilinear to ``size`` (width, height) when it differs
    (upstream ``cv2.resize(..., INTER_LINEAR)``)."""
    with Image.open(path) as image:
        image = image.convert("RGB")
    return image if image.size == size else image.resize(size, Image.Resampling.BILINEAR)


# ---------------------------------------------------------------- grounding


@dataclass(frozen=True)
class Grounding:
    """The candidate boxes in the edit (the edit resized to the original's size)."""

    people: tuple[Box, ...]  # the top "human" detection, or the annotated person box
    objects: tuple[Box, ...]  # the tracked box, else up to 5 detections, else the annotated object box
    person_source: str  # "detection" | "annotation"
    object_source: str  # "track" | "detection" | "annotation"


def ground(item: BenchmarkItem, original: Image.Image, edited: Image.Image, grounder: Grounder) -> Grounding:
    """Steps 2-3: the person and object candidates in ``edited``. The grounder's errors propagate."""
    people = grounder.detect(edited, PERSON_PROMPT, box_threshold=BOX_THRESHOLD, text_threshold=TEXT_THRESHOLD)
    if people:
        top = max(people, key=lambda detection: detection.score)
        person_boxes, person_source = (tuple(top.box),), "detection"
    else:
        person_boxes, person_source = (item.subject_box,), "annotation"
    tracked = grounder.track(original, edited, item.object_box)
    if tracked is not None:
        object_boxes, object_source = (tuple(tracked),), "track"
    else:
        found = grounder.detect(edited, item.object_name, box_threshold=BOX_THRESHOLD, text_threshold=TEXT_THRESHOLD)
        ranked = sorted(found, key=lambda detection: detection.score, reverse=True)[:MAX_OBJECT_CANDIDATES]
        if ranked:
            object_boxes, object_source = tuple(tuple(d.box) for d in ranked), "detection"
        else:
            object_boxes, object_source = (item.object_box,), "annotation"
    return Grounding(person_boxes, object_boxes, person_source, object_source)


# ---------------------------------------------------------------- the judge's steps


def _failure(what: str, error: Exception) -> str:
    return f"{what} failed: {type(error).__name__}: {error}"


def interaction_question(item: BenchmarkItem) -> str:
    """``generated_question``; for an item without one, a question in its format from the
    instruction (upstream has the judge write one; a fixed wording keeps the run deterministic)."""
    if item.interaction_question:
        return item.interaction_question
    return (f'Has the person in the blue bounding box done what the instruction "{item.instruction}" asks, '
            f"with the {item.object_name} in the red bounding box?")


def before_pair_image(original: Image.Image, item: BenchmarkItem) -> Image.Image:
    """What the interaction check shows first: the original, person blue, object red, titled."""
    return add_title(annotate(original, subject_box=item.subject_box, object_box=item.object_box), BEFORE_TITLE)


def after_pair_image(edited: Image.Image, person: Box, obj: Box) -> Image.Image:
    """What the interaction check shows second: the edit with one candidate pair, titled."""
    return add_title(annotate(edited, subject_box=person, object_box=obj), AFTER_TITLE)


def judge_interaction(judge: VLMJudge, before: Image.Image, edited: Image.Image, pairs: Sequence[tuple[Box, Box]],
                      question: str, mode: str) -> tuple[dict, str, tuple[Box, Box]]:
    """Step 4 over ``pairs``: the record's interaction fields, the reasoning for the pair kept, and
    that pair (the one with the highest yes-confidence, the first on ties; the first pair when
    every answer is "no" or the step failed)."""
    replies = []
    for number, (person, obj) in enumerate(pairs):
        try:
            replies.append(judge.yes_no([before, after_pair_image(edited, person, obj)], question))
        except Exception as error:  # any failure of the role is recorded, never a zero
            return {"mode": mode, "max_yes_confidence_error": _failure(f"the judge on pair {number}", error)}, "", pairs[0]
    fields = interaction_fields(replies, mode)
    if "max_yes_confidence_error" in fields:
        return fields, "", pairs[0]
    verdicts = [parse_yes_no(reply) for reply in replies]
    best = max(range(len(verdicts)), key=lambda i: verdicts[i].confidence)
    return fields, verdicts[best].reasoning, pairs[best]


def match_images(original: Image.Image, edited: Image.Image, entity_box: Box,
                 candidates: Sequence[Box]) -> tuple[Image.Image, Image.Image]:
    """What the identity match shows: BEFORE with the entity in a red box, AFTER with the
    candidates numbered from 0 in red."""
    before = add_title(draw_boxes(original, [(entity_box, RED)]), BEFORE_TITLE)
    after = add_title(draw_candidates(edited, candidates, color=RED), AFTER_TITLE)
    return before, after


def judge_match(judge: VLMJudge, original: Image.Image, edited: Image.Image, entity_box: Box,
                candidates: Sequence[Box], entity: str, instruction: str, field: str) -> tuple[dict, int | None]:
    """Step 5 for one entity (``field`` "subject" or "object"): the record's fields and the number
    of the candidate matched (None when none is, the number is not a candidate, or the step failed)."""
    before, after = match_images(original, edited, entity_box, candidates)
    try:
        reply = judge.match_score(before, after, entity, instruction)
    except Exception as error:  # any failure of the role is recorded, never a zero
        return {f"{field}_similarity_error": _failure(f"the judge's {field} match", error)}, None
    fields = match_fields(field, reply)
    if f"{field}_similarity_error" in fields:
        return fields, None
    best = parse_match(reply).best_match_id
    return fields, best if best is not None and 0 <= best < len(candidates) else None


def qa_context(item: BenchmarkItem) -> str:
    """The text upstream's QA prompt gives beside the edited image: the annotated boxes and the
    instruction (``answer_question``'s ``bbox_info`` and ``instruction_info``)."""
    lines = [f"- Subject (person) bounding box: {list(item.subject_box)} (shown in BLUE box)",
             f"- Object bounding box: {list(item.object_box)} (shown in RED box)"]
    if item.tool_box is not None:
        lines.append(f"- Tool bounding box: {list(item.tool_box)} (shown in YELLOW box)")
    lines.append(f'Note: The editing instruction was: "{item.instruction}"')
    return "\n".join(lines)


def ask_questions(judge: VLMJudge, item: BenchmarkItem, edited: Image.Image) -> list[dict]:
    """Step 6: each ``question_v6`` question once (upstream ``extract_questions`` drops repeats),
    asked on the edit; an answer that does not parse, or a failing call, keeps its ``error``."""
    context = qa_context(item)
    answers: list[dict] = []
    seen: set[str] = set()
    for question in item.questions:
        if normalize_question(question) in seen:
            continue
        seen.add(normalize_question(question))
        # Upstream draws the tool only for the questions that point at it.
        image = annotate(edited, tool_box=item.tool_box) if item.tool_box and "yellow" in question.lower() else edited
        entry: dict[str, Any] = {"question": question, "answer": None, "confidence": None}
        try:
            entry["answer"], entry["confidence"] = parse_answer(judge.yes_no([image], question, context))
        except JudgeReplyError as error:
            entry["error"] = str(error)
        except Exception as error:  # any failure of the role is recorded, never a zero
            entry["error"] = _failure("the judge", error)
        answers.append(entry)
    return answers


# ---------------------------------------------------------------- one item


def _box_list(box: Box) -> list[float]:
    return [round(float(v), 2) for v in box]


def evaluate_item(item: BenchmarkItem, original: Image.Image, edited: Image.Image, grounder: Grounder,
                  judge: VLMJudge) -> dict:
    """HOI-Eval's record of one item (steps 2-6; ``edited`` already at the original's size)."""
    mode = MATCH_FIRST_MODE if MATCH_FIRST_TAG in item.tags else DEFAULT_MODE
    question = interaction_question(item)
    record: dict[str, Any] = {"mode": mode, "generated_question": question}
    try:
        grounding = ground(item, original, edited, grounder)
    except Exception as error:  # any failure of the role is recorded, never a zero
        record["grounding_error"] = _failure("the grounder", error)
        record["qa"] = ask_questions(judge, item, edited)
        return record
    before = before_pair_image(original, item)
    if mode == MATCH_FIRST_MODE:
        subject, person_id = judge_match(judge, original, edited, item.subject_box, grounding.people,
                                         PERSON_ENTITY, item.instruction, "subject")
        obj, object_id = judge_match(judge, original, edited, item.object_box, grounding.objects,
                                     item.object_name, item.instruction, "object")
        pair = (grounding.people[person_id or 0], grounding.objects[object_id or 0])
        interaction, reasoning, pair = judge_interaction(judge, before, edited, [pair], question, mode)
    else:
        pairs = [(person, obj) for person in grounding.people for obj in grounding.objects]
        interaction, reasoning, pair = judge_interaction(judge, before, edited, pairs, question, mode)
        subject, _ = judge_match(judge, original, edited, item.subject_box, grounding.people, PERSON_ENTITY,
                                 item.instruction, "subject")
        obj, _ = judge_match(judge, original, edited, item.object_box, grounding.objects, item.object_name,
                             item.instruction, "object")
    record.update(interaction)
    record.update(subject)
    record.update(obj)
    record["qa"] = ask_questions(judge, item, edited)
    record.update(reasoning=reasoning, person_box=_box_list(pair[0]), object_box=_box_list(pair[1]),
                  person_box_source=grounding.person_source, object_box_source=grounding.object_source)
    return record


# ---------------------------------------------------------------- a method's outputs


def _judged(record: dict) -> bool:
    """True for a record a rerun keeps: judged, and without any error."""
    if any(record.get(name) for name in _NOT_JUDGED):
        return False
    return not any(value for name, value in record.items() if name.endswith("_error") or name == "has_error")


def _read_existing(out: Path, method: str) -> dict[str, dict[str, dict]]:
    try:
        data = json.loads(out.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{out}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
                         "judge every item again with resume=False (--fresh), or move the file away") from None
    parse_records(data, path=out)  # the file must read as records before any of it is kept
    if data["method"].strip() != method:
        raise ValueError(f"{out}: holds the records of method {echo(data['method'])}, not {method!r}")
    return {split: dict(data.get(split) or {}) for split in SPLITS}


def write_records(out: str | Path, method: str, records: dict[str, dict[str, dict]]) -> None:
    """Write ``{"method", "L1L2", "L3"}`` to ``out`` atomically: a temporary file beside it,
    renamed over it, so a reader never sees half a file."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    data = {"method": method, **{split: records[split] for split in SPLITS if split in records}}
    handle, temporary = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, ensure_ascii=False)
            file.write("\n")
        os.replace(temporary, out)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _ordered(benchmark: Benchmark, records: dict[str, dict[str, dict]]) -> dict[str, dict[str, dict]]:
    """Records in the benchmark's file order, then any keys the benchmark does not have."""
    ordered = {}
    for split in SPLITS:
        section = records.get(split, {})
        known = [item.key for item in benchmark.items(split) if item.key in section]
        listed = set(known)
        others = [key for key in section if key not in listed]
        ordered[split] = {key: section[key] for key in known + others}
    return ordered


def evaluate_method(benchmark: Benchmark | str | Path, method: str, outputs_dir: str | Path, grounder: Grounder,
                    judge: VLMJudge, *, progress: Progress | None = None,
                    out: str | Path | None = None, resume: bool = True, limit: int | None = None) -> dict:
    """HOI-Eval's records of one method's outputs, written to ``out`` as the scorer reads them.

    Args:
        benchmark: the items (:func:`engines.hoi.benchmark.load_benchmark`), or its folder.
        method: the method's name, written in the records file.
        outputs_dir: the method's edits, ``<outputs_dir>/<split>/<key>`` (upstream's
            ``data/<model>_frames``).
        grounder: finds the person and the object (:class:`engines.hoi.roles.Grounder`).
        judge: the VLM judge (:class:`engines.hoi.roles.VLMJudge`).
        progress: called as ``progress(done, total)`` after each item judged in this run.
        out: the records file; rewritten atomically after each item. None keeps the records in memory.
        resume: keep the records already in ``out`` that were judged without error, and judge the
            rest; False starts over.
        limit: only the first ``limit`` items (L1L2 items first, in file order).

    Returns:
        ``{"method", "out", "records": {split: {key: record}}, "judged", "kept", "missing",
        "failed", "paper_table", "summary"}``: ``judged`` items judged in this run, ``kept`` kept
        from ``out``, ``missing`` and ``failed`` per split (keys without an output or a source
        image; keys whose record has an error), ``paper_table`` as :meth:`engines.hoi.scoring.Scores.paper_table`.

    Raises:
        ValueError: ``out`` holds another method's records, or does not read as records.

    Examples::

        >>> result = evaluate_method("assets/hoi/demo", "wan22_scpe", "assets/hoi/demo/wan22_scpe_frames",
        ...                          make("grounder", "offline"), make("judge", "offline"),
        ...                          out="assets/hoi/demo/records/wan22_scpe.json")       # doctest: +SKIP
        >>> result["summary"]                                                             # doctest: +SKIP
    """
    if not isinstance(benchmark, Benchmark):
        benchmark = load_benchmark(benchmark)
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be 0 or more, got {limit}")
    out = Path(out) if out is not None else None
    records: dict[str, dict[str, dict]] = {split: {} for split in SPLITS}
    if out is not None and resume and out.is_file():
        records = _read_existing(out, method)
    items = benchmark.items()[:limit]
    todo = [item for item in items
            if item.key not in records[item.split] or not _judged(records[item.split][item.key])]
    kept = len(items) - len(todo)
    for done, item in enumerate(todo, start=1):
        records[item.split][item.key] = _evaluate_one(item, outputs_dir, grounder, judge)
        if out is not None:
            write_records(out, method, _ordered(benchmark, records))
        if progress is not None:
            progress(done, len(todo))
    records = _ordered(benchmark, records)
    if out is not None and not todo:
        write_records(out, method, records)
    return _result(benchmark, method, out, records, judged=len(todo), kept=kept)


def _evaluate_one(item: BenchmarkItem, outputs_dir: str | Path, grounder: Grounder, judge: VLMJudge) -> dict:
    if item.image_path is None:
        return {"source_missing": True}
    output = find_output(outputs_dir, item.split, item.key)
    if output is None:
        return {"output_missing": True}
    with Image.open(item.image_path) as image:
        original = image.convert("RGB")
    return evaluate_item(item, original, load_resized(output, original.size), grounder, judge)


def _result(benchmark: Benchmark, method: str, out: Path | None, records: dict[str, dict[str, dict]], *,
            judged: int, kept: int) -> dict:
    missing = {split: [key for key, r in section.items() if any(r.get(n) for n in _NOT_JUDGED)]
               for split, section in records.items()}
    failed = {split: [key for key, r in section.items() if not any(r.get(n) for n in _NOT_JUDGED) and not _judged(r)]
              for split, section in records.items()}
    scores = compute_scores(benchmark, parse_records({"method": method, **records}, path=out))
    table = scores.paper_table()
    cells = []
    for row in table:
        value = row.get("I+Q&A", row.get("I"))
        cells.append(f"{row['level']} {'n/a' if value is None else f'{value:.4f}'}")
    n_missing, n_failed = sum(map(len, missing.values())), sum(map(len, failed.values()))
    where = f"; records in {out}" if out is not None else ""
    summary = (f"{method}: {judged} item(s) judged, {kept} kept from before, {n_missing} without an output, "
               f"{n_failed} with an error (not scored); " + ", ".join(cells) + " (L1: I; L2, L3: I+Q&A)" + where)
    return {"method": method, "out": str(out) if out is not None else None, "records": records, "judged": judged,
            "kept": kept, "missing": missing, "failed": failed, "paper_table": table, "summary": summary}


# ---------------------------------------------------------------- command line


def _role_names(kind: str) -> list[str]:
    _register_roles()
    from engines.hoi.roles import names

    return names(kind)


@dataclass(frozen=True)
class EvaluateConfig:
    """Which method's edits HOI-Eval judges, with which models. Each field's metadata is its one
    declaration (``engines.platform.config_schema``): the ``evaluate`` command's option, the
    ``hoi.evaluate`` job's parameter. Where the edits and the records are is the command's own
    (``--benchmark``, ``--outputs``, ``--out``); a job names its benchmark folder and writes into its
    result folder."""

    method: str = field(default="", metadata={
        "help": "the method whose <method>_frames are judged (its name is written in the records)",
        "required": True})
    grounder: str = field(default="offline", metadata={
        "help": "the grounder's registered name", "choices": lambda: _role_names("grounder")})
    judge: str = field(default="offline", metadata={
        "help": "the VLM judge's registered name", "choices": lambda: _role_names("judge")})
    limit: int | None = field(default=None, metadata={"help": "only the first N items", "min": 1, "max": 100_000})

    def __post_init__(self) -> None:
        check_fields(self)
        if not re.fullmatch(METHOD_NAME, str(self.method)):
            raise ValueError(f"method must be 1 to 64 letters, digits or _.+- starting with a letter or digit, "
                             f"got {echo(self.method)}")
        _register_roles()
        from engines.hoi.roles import factory

        for kind in ("grounder", "judge"):
            factory(kind, getattr(self, kind))  # ValueError naming the registered ones


def add_evaluate_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``evaluate`` options: ``EvaluateConfig``'s, and where the edits and the records are."""
    parser.add_argument("--benchmark", type=Path, required=True,
                        help="the folder with the two upstream annotation JSONs and images/L1L2, images/L3: "
                             "datasets/hoi/<name> of the data folder, or shipped/hoi/demo")
    argparse_options(EvaluateConfig, parser)
    parser.add_argument("--outputs", type=Path, default=None,
                        help="the method's edits, <split>/<key> (default: <benchmark>/<method>_frames)")
    parser.add_argument("--out", type=Path, default=None,
                        help="the records file (default: <benchmark>/records/<method>.json); under datasets/ or "
                             "jobs/ of the data folder, never in the shipped assets")
    parser.add_argument("--option", action="append", default=[], metavar="ROLE.KEY=VALUE",
                        help="an option of a role, e.g. judge.base_url=http://127.0.0.1:8000/v1, judge.model=NAME, "
                             "grounder.path=DIR; repeat for several")
    parser.add_argument("--fresh", action="store_true", help="judge every item again, ignoring the records in --out")
    parser.add_argument("--no-progress", action="store_true")


def role_options(pairs: Sequence[str]) -> dict[str, dict[str, str]]:
    """``["judge.model=x", "grounder.path=/m"]`` as ``{"grounder": {"path": "/m"}, "judge": {"model": "x"}}``."""
    options: dict[str, dict[str, str]] = {"grounder": {}, "judge": {}}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        role, dot, key = name.strip().partition(".")
        if not sep or not dot or not key or role not in options:
            raise ValueError(f"a role option is grounder.KEY=VALUE or judge.KEY=VALUE, got {echo(pair)}")
        options[role][key] = value
    return options


def _register_roles() -> None:
    """Import the modules that register the roles (``engines.hoi.backends``)."""
    import engines.hoi.backends  # noqa: F401


def run_evaluate(args: argparse.Namespace) -> dict:
    """Judge a method's edited images with HOI-Eval and write its records (resumable)."""
    from engines.hoi.folders import benchmark_folder, input_folder, output_path
    from engines.hoi.roles import make

    config = EvaluateConfig(**option_values(EvaluateConfig, args))
    root = benchmark_folder(args.benchmark, what="--benchmark")
    outputs = input_folder(args.outputs if args.outputs is not None else root / f"{config.method}_frames",
                           what="--outputs (the method's edits, <split>/<key>)")
    out = output_path(args.out if args.out is not None else root / "records" / f"{config.method}.json", what="--out")
    options = role_options(args.option)
    grounder = make("grounder", config.grounder, **options["grounder"])
    judge = make("judge", config.judge, **options["judge"])
    with ProgressBar(f"HOI-Eval {config.method}", "item", enabled=not args.no_progress) as bar:
        result = evaluate_method(root, config.method, outputs, grounder, judge, progress=bar, out=out,
                                 resume=not args.fresh, limit=config.limit)
    result.pop("records")  # in the file; the command prints what it did
    result.update(grounder=config.grounder, judge=config.judge, outputs=str(outputs))
    return result
