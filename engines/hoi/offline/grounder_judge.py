"""The offline defaults of HOI-Eval's and SCPE's model roles, for the drawn demo scenes.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Method") runs
GroundingDINO + SAM2.1 (grounder), Gemini 2.5 Pro (VLM judge, SCPE's generator, reflector and
curator), image editors and Wan2.2 (I2V). The classes here and in ``engines.hoi.offline.generation`` take those roles with no network and no
GPU, on the synthetic scenes of :mod:`engines.hoi.offline.scenes`, so that HOI-Eval, SCPE and the pages run
end to end on the shipped demo data. They are offline defaults, labelled as such: they read the
drawn scenes' pixels (they know the palette, the way a trained detector knows its classes) and are
no models of the real benchmark's photographs.

- ``grounder "offline"`` (:class:`OfflineGrounder`): ``detect`` finds the person or an object by
  colour segmentation (after a 3 x 3 median, so noise does not break it), a box per connected
  region, scored by how well the colours match; ``track`` follows a box from the original into the
  edit among the regions of the same colour, leaving out the other instances that did not move;
  None when the object is gone.
- ``judge "offline"`` (:class:`OfflineJudge`): answers HOI-Eval's questions from pixels (hand-object
  contact, where the object rests, whether it is above the head, deformed, filled or open), matches
  an entity among candidates by colour histogram (identity) and scores their quality by how much of
  the region is clean palette colour, and for SCPE critiques a generated video (interaction reached,
  camera still, clothing unchanged) and picks the earliest frame that shows the interaction.
  Replies are JSON text, as a VLM's; boxes drawn on the images in pure red, blue, yellow or green
  (upstream draws red and blue, width 2-3) are found, read and painted out before anything else.

Pixels are read by ``engines.hoi.offline.reading``; the offline editors, I2V generator and SCPE
refiner are ``engines.hoi.offline.generation``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from engines.hoi.offline import scene_edits, scenes
from engines.hoi.offline.reading import (
    ANNOTATION_COLOURS,
    OBJECT_CLASSES,
    PALETTE_INDEX,
    PERSON_CLASSES,
    PERSON_WORDS,
    Reading,
    Region,
    below_band,
    check,
    drawn_boxes,
    entity_class,
    iou,
    place_of,
    region_box,
    title_band,
)
from engines.hoi.roles import (
    Box,
    Detection,
    FrameChoice,
    VideoReport,
    register,
)

# ---------------------------------------------------------------- grounder


@register("grounder", "offline")
class OfflineGrounder:
    """GroundingDINO + SAM2.1's offline stand-in on the drawn scenes (offline default; see the module
    docstring)."""

    name = "offline"

    def detect(self, image: Image.Image, prompt: str, *, box_threshold: float = 0.3,
               text_threshold: float = 0.25) -> list[Detection]:
        """Boxes of what ``prompt`` names ("human", "cup", or several phrases split by "." or ","),
        best first; a phrase it does not know finds nothing."""
        reading = Reading(image)
        found = []
        for phrase in re.split(r"[.,]", prompt):
            entity = entity_class(phrase)
            if entity is None:
                continue
            for region in reading.regions_of(entity):
                # Colour match, and a small region is a weaker find (a detector's score drops on fragments).
                score = (0.35 + 0.6 * reading.fit_of(region)) * min(1.0, region.area / 40)
                if score >= box_threshold:
                    found.append(Detection(region_box(region), round(score, 4), phrase.strip()))
        return sorted(found, key=lambda d: -d.score)

    def track(self, original: Image.Image, edited: Image.Image, box: Box) -> Box | None:
        """Where the thing in ``box`` of the original is in the edit, or None when it is gone."""
        before, after = Reading(original), Reading(edited)
        return _track(before, after, box)


def _dominant(reading: Reading, box: Sequence[float], names: Sequence[str]) -> str | None:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    part = reading.classes[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)]
    counts = {name: int((part == PALETTE_INDEX[name]).sum()) for name in names}
    best = max(counts, key=counts.get) if counts else None
    return best if best is not None and counts[best] > 0 else None


def _kind_in(reading: Reading, box: Sequence[float]) -> str | None:
    tools = [f"tool:{name}" for name in scenes.TOOLS]
    best = _dominant(reading, box, [*OBJECT_CLASSES, *tools])
    return best.split(":", 1)[1] if best else None


def _track(before: Reading, after: Reading, box: Sequence[float]) -> Box | None:
    kind = _kind_in(before, box)
    if kind is None:
        if _dominant(before, box, PERSON_CLASSES) and after.person is not None:
            return region_box(after.person)
        return None
    instances = before.things(kind)
    if not instances:
        return None
    tracked = max(instances, key=lambda r: iou(r.box, box))
    others = [r for r in instances if r is not tracked]
    # The other instances that did not move are not the tracked one (SAM2 keeps them apart too).
    candidates = [r for r in after.things(kind) if not any(iou(r.box, o.box) >= 0.7 for o in others)]
    if not candidates:
        return None
    best = max(candidates, key=lambda r: iou(r.box, tracked.box)
               + 0.3 * min(r.area, tracked.area) / max(r.area, tracked.area))
    return region_box(best)


# ---------------------------------------------------------------- judge


def _reply(answer: bool, confidence: float, reasoning: str) -> str:
    return json.dumps({"answer": "yes" if answer else "no", "confidence": round(confidence, 3) if answer else 0.0,
                       "reasoning": reasoning})


def _confidence(reading: Reading, boxes: Sequence[Sequence[float]]) -> float:
    """A yes-answer's confidence: high on clean pixels, lower as noise or blur hide the details."""
    quality = min((reading.quality(box) for box in boxes), default=reading.quality())
    return 0.6 + 0.35 * quality


def _target(reading: Reading, kind: str, box: Sequence[float] | None) -> list[Region]:
    regions = reading.things(kind)
    if box is None:
        return regions
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    inside = []
    for region in regions:
        share = region.mask[max(y1 - 3, 0):y2 + 3, max(x1 - 3, 0):x2 + 3].sum() / region.area
        if share >= 0.3:
            inside.append(region)
    return inside


@dataclass(frozen=True)
class _Targets:
    """Each clause's object in the first frame of a video, and the clause."""

    clauses: list[scene_edits.Clause]
    boxes: list[Box | None]


def _first_targets(reading: Reading, clauses: list[scene_edits.Clause]) -> _Targets:
    boxes: list[Box | None] = []
    for clause in clauses:
        regions = reading.things(clause.object_name)
        if clause.qualifier == "touch":
            regions = [r for r in regions if reading.touches(r)]
        elif clause.qualifier == "hand":
            regions = [r for r in regions if reading.touches(r) and place_of(reading, r) in ("air", "raised")]
        elif clause.qualifier is not None:
            regions = [r for r in regions if place_of(reading, r) == clause.qualifier]
        boxes.append(region_box(regions[0]) if regions else None)
    return _Targets(clauses, boxes)


def _judge_frame(first: Reading, frame: Reading, targets: _Targets, *, strict: bool = False) -> tuple[bool, list[str]]:
    """Whether a frame shows every clause's end state (clearly, when ``strict``), and what was seen."""
    ok, seen = True, []
    for clause, box in zip(targets.clauses, targets.boxes, strict=True):
        where = None if box is None else _track(first, frame, box)
        region = None
        if where is not None:
            region = next((r for r in frame.things(clause.object_name) if r.box == tuple(int(v) for v in where)), None)
        if region is None:
            ok = False
            seen.append(f"the {clause.object_name} is nowhere to be seen")
            continue
        done, facts = check(frame, region, clause.object_name, scene_edits.expectation(clause.action), clause.tool_name,
                            strict=strict)
        ok &= done
        seen.extend(facts)
    return ok, seen


def _outfit(reading: Reading) -> str | None:
    if reading.person is None:
        return None
    counts = {name: int((reading.classes[reading.person.mask] == PALETTE_INDEX[f"outfit:{name}"]).sum())
              for name in scenes.OUTFITS}
    best = max(counts, key=counts.get)
    return best if counts[best] > 0 else None


def camera_moved(first: Image.Image, last: Image.Image) -> bool:
    """Whether the background's top-left corner (never covered in the drawn scenes) differs: the
    camera panned or zoomed."""
    a = np.asarray(first.convert("RGB"), np.int16)[0:8, 0:32]
    b = np.asarray(last.convert("RGB"), np.int16)[0:8, 0:32]
    return a.shape != b.shape or float(np.abs(a - b).mean()) > 6.0


@register("judge", "offline")
class OfflineJudge:
    """Gemini 2.5 Pro's offline stand-in as HOI-Eval's judge and SCPE's analyzer and frame selector,
    on the drawn scenes (offline default; see the module docstring)."""

    name = "offline"

    def yes_no(self, images: Sequence[Image.Image], question: str, context: str = "") -> str:
        """``{answer, confidence, reasoning}`` for a question on the last image (the edit): the
        interaction question about the boxed person and object, or a ``question_v6`` question."""
        if not images:
            raise ValueError("yes_no needs at least one image (the edited one last)")
        read = scene_edits.read_question(question)
        if read is None:
            return _reply(False, 0.0, f"The question {question!r} is about nothing this judge can check.")
        if read.object_name not in scenes.OBJECTS:
            return _reply(False, 0.0, f"There is no {read.object_name} in the image.")
        after = images[-1]
        reading = Reading(after)
        red = _largest(drawn_boxes(after, "red")) if read.interaction else None
        regions = _target(reading, read.object_name, red)
        if not regions:
            where = " in the red box" if red is not None else ""
            return _reply(False, 0.0, f"There is no {read.object_name}{where}.")
        for region in regions:
            ok, seen = check(reading, region, read.object_name, read.expect, read.tool_name)
            if ok:
                person = reading.person.box if reading.person is not None else region.box
                confidence = _confidence(reading, [region.box, person])
                return _reply(True, confidence, _sentence(seen) + " So yes.")
        return _reply(False, 0.0, _sentence(seen) + " So no.")

    def match_score(self, before: Image.Image, after_candidates: Image.Image, entity: str, instruction: str, *,
                    entity_box: Sequence[float] | None = None,
                    candidates: Sequence[Sequence[float]] | None = None) -> str:
        """``{best_match_id, identity_score, quality_score, similarity, reasoning}``: which candidate
        in the edit is the entity boxed in the original, how alike (colour histograms of the
        person's or the objects' classes, squared, so that a changed outfit, about half of the
        person, scores under 0.3) and how clean its pixels are.

        ``entity`` is "subject" (or "person", "human") or the object's name / "object". The entity's
        box in ``before`` is ``entity_box``, else the red box drawn on it. The candidates are
        ``candidates`` (their indexes are the ids), else the boxes drawn on ``after_candidates``,
        numbered left to right (this judge reads no label text). Boxes given as keywords are in the
        scene's pixels (a title band above it is allowed for). With no candidate, it finds the entity
        itself and answers ``best_match_id`` null (upstream's "manual" mode)."""
        is_person = entity.strip().lower() in PERSON_WORDS
        names = PERSON_CLASSES if is_person else OBJECT_CLASSES
        first, second = Reading(before), Reading(after_candidates)
        # Boxes given as keywords are in the scene's pixels, below any title band.
        if entity_box is not None:
            entity_box = below_band(entity_box, title_band(before))
        if candidates is not None:
            candidates = [below_band(box, title_band(after_candidates)) for box in candidates]
        if entity_box is None:
            entity_box = _largest(drawn_boxes(before, "red")) or _own_box(first, entity, is_person)
        reference = _histogram(first, entity_box, names)
        if candidates is None:
            candidates = [b for colour in ANNOTATION_COLOURS for b in drawn_boxes(after_candidates, colour)]
            candidates = sorted(candidates)
        manual = not candidates
        if manual:  # no boxes: the judge finds the entity in the edit itself
            kind = None if is_person else _kind_in(first, entity_box)
            own = second.person if is_person else (next(iter(second.things(kind)), None) if kind else None)
            candidates = [own.box] if own is not None else []
        if reference.sum() == 0 or not candidates:
            what = "nothing of the entity in its box before editing" if reference.sum() == 0 else "no candidate"
            return json.dumps({"best_match_id": None, "identity_score": 0.0, "quality_score": 0.0,
                               "similarity": 0.0, "reasoning": f"There is {what}."})
        scores = [_identity(reference, _histogram(second, box, names)) for box in candidates]
        best = int(np.argmax(scores))
        identity = scores[best]
        quality = second.quality(candidates[best])
        notes = [f"candidate {best} has {'the same' if identity >= 0.8 else 'different'} colours"
                 f" (identity {identity:.2f})",
                 "its pixels are clean" if quality >= 0.9 else f"noise or blur spoil its pixels (quality {quality:.2f})"]
        if not is_person:
            kind = _kind_in(second, candidates[best])
            asked = {clause.action.form for clause in scene_edits.find_instruction(instruction)}
            regions = _target(second, kind, candidates[best]) if kind in scenes.OBJECTS else []
            if regions and not asked & {"squashed", "crushed"} and second.deformed(regions[0], kind):
                quality = min(quality, 0.2)  # upstream's rubric: collapsed geometry is below 0.4
                notes.append(f"the {kind} lost its shape though the instruction does not ask for it")
        return json.dumps({"best_match_id": None if manual else best, "identity_score": round(identity, 3),
                           "quality_score": round(quality, 3), "similarity": round(identity * quality, 3),
                           "reasoning": _sentence(notes)})

    def analyze_video(self, image: Image.Image, frames: Sequence[Image.Image], instruction: str,
                      prompt: str) -> VideoReport:
        """SCPE's analyzer: success when the last frame shows the instruction's end state, the camera
        did not move and the clothing did not change; the critique says what went wrong."""
        if not frames:
            raise ValueError("analyze_video needs the video's frames")
        clauses = scene_edits.find_instruction(instruction)
        if not clauses:
            critique = f"The instruction {instruction!r} is none this analyzer can check."
            return VideoReport(False, critique, json.dumps({"success": False, "critique": critique}))
        # The source image says which object is meant and how the person looks; the frames say the rest.
        first, last = Reading(image), Reading(frames[-1])
        done, seen = _judge_frame(first, last, _first_targets(first, clauses))
        problems = []
        if not done:
            problems.append(f"The action is not carried through: at the end {'; '.join(seen)}.")
        if camera_moved(frames[0], frames[-1]):
            problems.append("The camera moves during the clip (the background shifts), so the shot is not static.")
        if _outfit(first) != _outfit(last):
            problems.append("The person's clothing changes during the clip.")
        success = not problems
        critique = " ".join(problems) if problems else (
            f"The action is completed ({'; '.join(seen)}); the camera stays fixed and the person looks the same "
            "throughout.")
        return VideoReport(success, critique, json.dumps({"success": success, "critique": critique}))

    def select_frame(self, frames: Sequence[Image.Image], instruction: str) -> FrameChoice:
        """The earliest frame that clearly shows the instruction's end state with acceptable quality
        (``strict_pass``, mode "earliest_pass"); else the earliest that shows it at all (mode
        "best_effort"); else frame 1 (mode "fallback", upstream's frame when the selector fails)."""
        if not frames:
            raise ValueError("select_frame needs frames")
        clauses = scene_edits.find_instruction(instruction)
        boxes = re.compile(r" in the (?:blue|red|yellow) bounding box")
        question = (" and ".join(boxes.sub("", c.question) for c in clauses) if clauses
                    else f"Is this done: {instruction}?")
        first = Reading(frames[0])
        targets = _first_targets(first, clauses)
        best_effort = None
        for index, frame in enumerate(frames):
            if not clauses:
                break
            reading = first if index == 0 else Reading(frame)
            if reading.quality() < 0.5:
                continue
            score = round(0.6 + 0.35 * reading.quality(), 3)
            if _judge_frame(first, reading, targets, strict=True)[0]:
                return _choice(index, True, "earliest_pass", score, question)
            if best_effort is None and _judge_frame(first, reading, targets)[0]:
                best_effort = (index, score)
        if best_effort is not None:
            return _choice(best_effort[0], False, "best_effort", best_effort[1], question)
        return _choice(min(1, len(frames) - 1), False, "fallback", 0.0, question)


def _choice(index: int, strict_pass: bool, mode: str, score: float, question: str) -> FrameChoice:
    raw = json.dumps({"best_frame_index": index, "strict_pass": strict_pass, "selection_mode": mode,
                      "match_score": score})
    return FrameChoice(index, strict_pass, mode, score, "dynamic", question, raw)


def _largest(boxes: Sequence[Box]) -> Box | None:
    return max(boxes, key=lambda b: (b[2] - b[0]) * (b[3] - b[1])) if boxes else None


def _own_box(reading: Reading, entity: str, is_person: bool) -> Sequence[float]:
    """The entity's box found without a drawn box: the person, or the named (else the largest) object."""
    if is_person:
        region = reading.person
    else:
        kind = entity_class(entity)
        regions = reading.things(kind) if kind in scenes.OBJECTS else [
            r for name in scenes.OBJECTS for r in reading.things(name)]
        region = max(regions, key=lambda r: r.area, default=None)
    h, w = reading.classes.shape
    return region.box if region is not None else (0, 0, w, h)


def _histogram(reading: Reading, box: Sequence[float], names: Sequence[str]) -> np.ndarray:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    part = reading.classes[max(y1, 0):max(y2, 0), max(x1, 0):max(x2, 0)]
    return np.asarray([(part == PALETTE_INDEX[name]).sum() for name in names], np.float64)


def _identity(a: np.ndarray, b: np.ndarray) -> float:
    if a.sum() == 0 or b.sum() == 0:
        return 0.0
    return float(np.minimum(a / a.sum(), b / b.sum()).sum()) ** 2


def _sentence(parts: Sequence[str]) -> str:
    text = "; ".join(parts) if parts else "nothing to report"
    return text[0].upper() + text[1:] + "."
