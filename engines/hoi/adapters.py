"""Real model adapters of HOI-Eval's roles: a multimodal chat model as the VLM judge, and a
transformers zero-shot detector as the grounder.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``, commit ``4022133``; ``docs/hoi.md``, "Method: HOI-Eval
scores" and "Method: SCPE"). Upstream judges with Gemini 2.5 Pro at temperature 0.1, asking for JSON,
and grounds with GroundingDINO (box threshold 0.3, text threshold 0.25) plus SAM2.1 tracking.

- **judge** ``openai``: any OpenAI-compatible chat-completions endpoint that takes images (vLLM,
  Ollama, llama.cpp server, a hosted API), through ``engines.platform.chat``; its ``base_url`` must
  be an endpoint the server allows and its key comes only from a declared variable
  (``api_key_env``, default ``HAI_API_KEY_OPENAI``), checked before any request. Images travel as
  base64 PNG data URLs in the message content, after the prompt, as upstream sends its parts.
  The prompts follow upstream's: the interaction check (``perform_vqa_on_pair``), the QA question
  (``run_question_answering.answer_question``), the identity match with its rubric
  (``evaluate_similarity_with_gemini``: person quality below 0.4 for uncanny faces, bad hands or a
  pasted look; object quality below 0.4 for collapsed geometry; state, location and occlusion
  changes allowed), and SCPE's video analysis (``scpe/data/ace_prompts_en.json`` "analyzer") and
  two-call frame selection (``scpe/data/qa2_prompts_en.json``). Each asks for JSON only.
  ``yes_no`` and ``match_score`` return the reply text for ``engines.hoi.judge_replies``;
  ``analyze_video`` raises :class:`~engines.hoi.judge_replies.JudgeReplyError` on a reply that
  does not parse (upstream skips such a sample, ``failed_analysis_api``); ``select_frame`` falls
  back to the first frame (upstream's frame 1) with ``selection_mode="fallback"``.
- **grounder** ``transformers``: a zero-shot object detector from a local folder
  (``AutoModelForZeroShotObjectDetection`` + ``AutoProcessor``): Grounding DINO as upstream (the
  prompt lower-cased and ended with ".", box and text thresholds), or OWLv2 / OWL-ViT (one score
  per box and prompt, so only the box threshold applies). ``track`` follows the annotated object
  box by template matching (:func:`locate_template`), since SAM2 is not a dependency: the box's
  crop of the original is searched in the edit at three scales by normalised cross-correlation,
  and a best correlation under ``track_threshold`` (0.5) means the object was not followed; the
  evaluator then takes the detections, as upstream does when tracking gives nothing.

Nothing downloads: a ``path`` is a local folder (``local_files_only``) unless told otherwise.
Tests build a tiny randomly initialised OWLv2 and Grounding DINO from config, and answer the
judge from a local fake endpoint (``tests/hoi/test_hoi_adapters.py``).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image

from engines.hoi.judge_replies import JudgeReplyError, json_object
from engines.hoi.playbook import PlaybookFormatError, as_operation
from engines.hoi.roles import (
    Box,
    Detection,
    EnhancedPrompt,
    FrameChoice,
    Insight,
    PlaybookOperation,
    VideoReport,
    register,
)
from engines.platform.chat import BackendError, ChatBackend, OpenAICompatibleBackend
from engines.platform.credentials import API_KEY_PREFIX, check_key_variable
from engines.platform.endpoints import check_endpoint_url
from engines.platform.files import echo

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_KEY_VARIABLE = f"{API_KEY_PREFIX}OPENAI"  # a declared API-key variable (engines.platform.credentials)
JUDGE_TEMPERATURE = 0.1  # upstream's HOI-check, QA, analyzer and frame choice
QUESTION_TEMPERATURE = 0.3  # upstream's frame-selection call 1, which writes a question
JSON_ONLY = "Reply with one JSON object only: no Markdown, no text before or after it."

INTERACTION_PROMPT = """You will see TWO images:
1. BEFORE EDITING: the original image; the person (subject) in a BLUE box and the object in a RED box,
   at their ORIGINAL positions.
2. AFTER EDITING: the edited image; BLUE and RED boxes show the person and the object DETECTED after editing.

Answer the question below about the AFTER EDITING image: does the interaction it describes occur there?
Consider the person and the object inside the boxes of the edited image, whether their positions and poses
show the interaction, and whether it is visually evident.

Question: "{question}"
{context}
{json_only}
{{"answer": "yes" or "no", "confidence": 0.0 to 1.0, "reasoning": "a brief explanation"}}
"confidence" is your certainty in "yes"; if the answer is "no", confidence must be 0.0."""

QA_PROMPT = """You are analyzing an image to answer a question about human-object interaction.
{context}
Answer the question based on what you see in the image.

Question: {question}

{json_only}
{{"answer": "yes", "no" or a short explanation, "confidence": 0.0 to 1.0 (your confidence in the answer),
 "reasoning": "a brief explanation"}}"""

PERSON_RUBRIC = """a) identity_score (0.0-1.0): is it the same person?
   1.0 = the same person, or compatible infilling: parts unseen before (e.g. the head) may be generated if
   skin tone, build and clothing style match; parts may disappear by valid occlusion (e.g. turning around).
   0.0-0.3 = a direct contradiction (different gender, different outfit, a different person).
b) quality_score (0.0-1.0): anatomical and visual realism.
   1.0 = photorealistic. Below 0.4 at once for an uncanny face (waxy skin, dead eyes, asymmetry), distorted
   hands (extra joints, fused fingers), or a pasted look (lighting that does not match the scene). A correct
   identity does not excuse a bad render.
c) similarity = identity_score x quality_score."""

OBJECT_RUBRIC = """a) identity_score (0.0-1.0): is it the same {entity} instance?
   1.0 = the same instance. Changes the interaction implies are allowed: its state (open/closed), its
   location (in hand, on the table, falling), its occlusion (grasped, released).
   0.0-0.5 = core identity lost (another material, another kind of thing).
b) quality_score (0.0-1.0): geometric integrity.
   1.0 = its rigid 3D structure is preserved. Below 0.4 when the structure collapses even if the colour is
   right (a tall cylinder turned into a flat box: 0.2; a metal pot gone soft or melted: 0.2).
c) similarity = identity_score x quality_score."""

MATCH_PROMPT = """Image 1: BEFORE EDITING, the {entity} in a RED box.
Image 2: AFTER EDITING, candidates in RED boxes numbered {numbers}.

The editing instruction was: "{instruction}". Use it to tell errors from intended changes (e.g. "turn around"
makes a face disappear, "drop" moves an object).

Task 1, MATCH: which numbered candidate in Image 2 is the {entity} of Image 1? If the instruction moves it
(released, dropped, picked up), look for it where the action puts it; ignore distance when the action
requires movement. Use null when no candidate is it.
Task 2, EVALUATE the best match:
{rubric}

{json_only}
{{"best_match_id": one of {numbers} or null, "identity_score": 0.0, "quality_score": 0.0, "similarity": 0.0,
 "reasoning": "did it handle the interaction correctly; is the quality or geometry preserved?"}}"""

ANALYZER_PROMPT = """You are a strict video analyst. Judge whether the generated video completes the specified
human-object interaction task.

Context:
1. Source image: the first image below, the conditioning frame of the video.
2. Original instruction: "{instruction}"
3. Enhanced prompt: "{prompt}"
4. Generated video: the frames after the source image, in time order.

Judge whether the video carries out the core dynamic intent of the instruction and the enhanced prompt while
staying visually consistent with the source image; whether the motion is reasonable and coherent throughout;
and whether the camera viewpoint and the background stay completely static.
Examples: instruction "pick up the cup" but a static shot of holding the cup: failure. Instruction "pick up the
red cup" but the cup in the video is blue: failure.

{json_only}
{{"success": true or false, "critique": "a brief critique"}}"""

FRAME_RULES = """- Ask for the EARLIEST frame in which the action is COMPLETED, not a mid-action or the final frame.
- Use a closed yes/no question derived from the instruction.
- Quality depends on the action type: for a static action (e.g. put down) the frame must be clear with no
  motion blur; for a dynamic action (e.g. wave) slight motion blur is acceptable.
- Never ask only "which frame is best": stress earliest and completed."""

FRAME_QUESTION_PROMPT = """You write the question for choosing a video frame that shows a human-object interaction.
Rules:
{rules}

Original instruction: "{instruction}"

1. Decide action_type: "static" or "dynamic".
2. Turn the instruction into a closed yes/no question about whether the action is COMPLETED, answerable on
   each frame of a video.

{json_only}
{{"action_type": "static" or "dynamic", "question": "...", "reasoning": "brief"}}"""

FRAME_SELECT_PROMPT = """You choose a video frame for a human-object interaction. You will see {n} time-ordered
frames, numbered 1 to {n}.

Original instruction: "{instruction}"
Question: "{question}"
Action type: "{action_type}"
Quality standard: {quality}

Priority: the FIRST (smallest number) frame that clearly answers yes to the question AND meets the quality
standard (selection_mode "strict_earliest_yes"). If no frame does (selection_mode "best_effort"): the frame most
aligned with the instruction and closest to completion, with the person and the object visible, in the best
quality available. Do not favour the last frame; do not pick a mid-action state.

{json_only}
{{"best_frame_index": 1 to {n}, "strict_pass": true or false, "selection_mode": "strict_earliest_yes" or
 "best_effort", "match_score": 0.0 to 1.0, "reasoning": "brief"}}"""

QUALITY = {"static": "Must be visually clear with no motion blur.",
           "dynamic": "Slight motion blur is acceptable to convey the action."}


# ---------------------------------------------------------------- reading replies


def _flag(value: Any, field: str, text: str) -> bool:
    """A JSON boolean, or "true"/"false"/"yes"/"no" as text."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in ("true", "yes", "1"):
        return True
    if word in ("false", "no", "0"):
        return False
    raise JudgeReplyError(f"{field} is not true or false ({value!r}) in the reply: {text[:200]!r}")


def parse_video_report(text: str) -> VideoReport:
    """The analyzer's ``{success, critique}``; :class:`JudgeReplyError` when it does not say."""
    obj = json_object(text)
    if "success" not in obj:
        raise JudgeReplyError(f"no success in the reply: {text[:200]!r}")
    return VideoReport(success=_flag(obj["success"], "success", text), critique=str(obj.get("critique", "")), raw=text)


def _selection_mode(value: Any) -> str:
    mode = str(value or "").strip().lower()
    return "earliest_pass" if mode.startswith("strict") else (mode or "best_effort")


def parse_frame_choice(text: str, n_frames: int, *, action_type: str = "dynamic", question: str = "") -> FrameChoice:
    """Call 2's reply as a :class:`FrameChoice`; ``best_frame_index`` counts from 0 here while the
    judge numbers frames from 1, as upstream asks. :class:`JudgeReplyError` when the reply does not
    parse or names no frame among the ``n_frames``."""
    obj = json_object(text)
    try:
        number = int(str(obj.get("best_frame_index")).strip())
    except ValueError:
        raise JudgeReplyError(f"best_frame_index is not a frame number ({echo(obj.get('best_frame_index'))}) "
                              f"in the reply: {text[:200]!r}") from None
    if not 1 <= number <= n_frames:
        raise JudgeReplyError(f"best_frame_index {number} is not between 1 and {n_frames}: {text[:200]!r}")
    try:
        score = float(str(obj.get("match_score", 0.0)).strip().rstrip("%"))
    except ValueError:
        raise JudgeReplyError(f"match_score is not a number in the reply: {text[:200]!r}") from None
    score = score / 100.0 if 1.0 < score <= 100.0 else score
    return FrameChoice(best_frame_index=number - 1, strict_pass=_flag(obj.get("strict_pass", False), "strict_pass", text),
                       selection_mode=_selection_mode(obj.get("selection_mode")), match_score=min(max(score, 0.0), 1.0),
                       action_type=action_type, question=question, raw=text)


# ---------------------------------------------------------------- the judge


def image_part(image: Image.Image) -> dict:
    """An image as an OpenAI chat content part: a base64 PNG data URL."""
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


class ChatJudge:
    """A multimodal chat model as HOI-Eval's and SCPE's VLM judge (see the module docstring).

    Args:
        chat: the backend (``engines.platform.chat``); its messages carry text and image parts.
        name: the judge's name in records and traces.
        temperature: sampling temperature (upstream 0.1).
        max_tokens: the longest reply.
        seed: sent with each request, for endpoints that honour it.
    """

    def __init__(self, chat: ChatBackend, name: str, *, temperature: float = JUDGE_TEMPERATURE,
                 max_tokens: int = 1024, seed: int = 0) -> None:
        self.chat, self.name = chat, name
        self.temperature, self.max_tokens, self.seed = temperature, max_tokens, seed

    def ask(self, prompt: str, parts: Sequence[Image.Image | str] = (), *, temperature: float | None = None) -> str:
        """One user message: the prompt, then each part (an image, or a text label) in order."""
        content: list[dict] = [{"type": "text", "text": prompt}]
        for part in parts:
            content.append({"type": "text", "text": part} if isinstance(part, str) else image_part(part))
        return self.chat.complete([{"role": "user", "content": content}],
                                  temperature=self.temperature if temperature is None else temperature,
                                  max_tokens=self.max_tokens, seed=self.seed)

    def yes_no(self, images: Sequence[Image.Image], question: str, context: str = "") -> str:
        """Two images (before, after): upstream's interaction check; one image: a question about it
        (upstream's QA), with ``context`` (boxes, instruction) beside it."""
        if len(images) == 2:
            prompt = INTERACTION_PROMPT.format(question=question, context=context, json_only=JSON_ONLY)
        elif len(images) == 1:
            prompt = QA_PROMPT.format(question=question, context=context, json_only=JSON_ONLY)
        else:
            raise ValueError(f"yes_no takes the (before, after) pair or one image, got {len(images)} images")
        return self.ask(prompt, list(images))

    def match_score(self, before: Image.Image, after_candidates: Image.Image, entity: str, instruction: str) -> str:
        """Upstream's identity match; ``entity`` "person" takes the person rubric, any other name the
        object rubric. The candidates are numbered from 0 on ``after_candidates``."""
        rubric = PERSON_RUBRIC if entity.strip().lower() == "person" else OBJECT_RUBRIC.format(entity=entity)
        prompt = MATCH_PROMPT.format(entity=entity, numbers="0, 1, 2, ...", instruction=instruction, rubric=rubric,
                                     json_only=JSON_ONLY)
        return self.ask(prompt, [before, after_candidates])

    def analyze_video(self, image: Image.Image, frames: Sequence[Image.Image], instruction: str,
                      prompt: str) -> VideoReport:
        """SCPE's analyzer over the source image and the video's frames."""
        text = ANALYZER_PROMPT.format(instruction=instruction, prompt=prompt or "N/A", json_only=JSON_ONLY)
        return parse_video_report(self.ask(text, ["Source image:", image, "Generated video frames, in time order:",
                                                  *frames]))

    def select_frame(self, frames: Sequence[Image.Image], instruction: str) -> FrameChoice:
        """SCPE's frame selection: call 1 writes the completion question, call 2 picks the earliest
        frame answering yes. A call whose reply does not parse, or whose endpoint fails, gives the first
        frame (``selection_mode="fallback"``), as upstream uses frame 1 when its calls return nothing."""
        if not frames:
            raise ValueError("select_frame needs at least one frame")
        question, action_type = "", "dynamic"
        try:
            reply = self.ask(FRAME_QUESTION_PROMPT.format(rules=FRAME_RULES, instruction=instruction,
                                                          json_only=JSON_ONLY), temperature=QUESTION_TEMPERATURE)
            meta = json_object(reply)
            question = str(meta.get("question") or "").strip()
            if not question:
                raise JudgeReplyError(f"no question in the reply: {reply[:200]!r}")
            action_type = "static" if str(meta.get("action_type", "")).strip().lower() == "static" else "dynamic"
        except (JudgeReplyError, BackendError) as error:
            return FrameChoice(0, False, "fallback", 0.0, action_type=action_type, raw=f"call 1: {error}")
        parts: list[Image.Image | str] = []
        for number, frame in enumerate(frames, start=1):
            parts += [f"Frame {number}:", frame]
        try:
            reply = self.ask(FRAME_SELECT_PROMPT.format(n=len(frames), instruction=instruction, question=question,
                                                        action_type=action_type, quality=QUALITY[action_type],
                                                        json_only=JSON_ONLY), parts)
            return parse_frame_choice(reply, len(frames), action_type=action_type, question=question)
        except (JudgeReplyError, BackendError) as error:
            return FrameChoice(0, False, "fallback", 0.0, action_type=action_type, question=question,
                               raw=f"call 2: {error}")


def _number(value: Any, name: str, kind: type) -> Any:
    """An option given as text on the command line, as ``kind``; a clear error otherwise."""
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"option {name} must be a {kind.__name__}, got {echo(value)}") from None


def _true(value: Any) -> bool:
    return value if isinstance(value, bool) else str(value).strip().lower() in ("1", "true", "yes", "on")


def chat_endpoint(role: str, model: str, base_url: str, api_key_env: str | None, timeout: float | str) -> ChatBackend:
    """The OpenAI-compatible backend of ``role``, once its URL and key variable are allowed.

    Both are checked before anything is sent: ``base_url`` must be an endpoint the server allows
    (``HAI_ENDPOINT_HOSTS``), and the key is read only from a declared variable (``HAI_API_KEY_*``
    or one listed in ``HAI_API_KEY_VARIABLES``; none sent when it is unset, as a local server needs).

    Raises:
        ValueError: (``EndpointRefused``, ``SecretRefused``) naming ``role.base_url`` or ``role.api_key_env``.
    """
    check_endpoint_url(base_url, field=f"{role}.base_url")
    check_key_variable(api_key_env, field=f"{role}.api_key_env")
    return OpenAICompatibleBackend(base_url, model, api_key_env=api_key_env, timeout=_number(timeout, "timeout", float))


@register("judge", "openai")
def openai_judge(model: str | None = None, base_url: str = DEFAULT_BASE_URL,
                 api_key_env: str | None = DEFAULT_KEY_VARIABLE, temperature: float | str = JUDGE_TEMPERATURE,
                 max_tokens: int | str = 1024, timeout: float | str = 120.0, chat: ChatBackend | None = None) -> ChatJudge:
    """An OpenAI-compatible multimodal endpoint as the judge (:func:`chat_endpoint`: an allowed
    ``base_url``, the key from the declared variable ``api_key_env``)."""
    if chat is None:
        if not model:
            raise ValueError("the openai judge needs a model name: model=NAME (--option judge.model=NAME)")
        chat = chat_endpoint("judge", model, base_url, api_key_env, timeout)
    return ChatJudge(chat, f"openai:{model or 'chat'}", temperature=_number(temperature, "temperature", float),
                     max_tokens=_number(max_tokens, "max_tokens", int))


# ---------------------------------------------------------------- the grounder


def _gray(image: Image.Image) -> np.ndarray:
    return np.asarray(image.convert("L"), dtype=np.float64)


def _window_sums(values: np.ndarray, h: int, w: int) -> np.ndarray:
    """The sum of every ``h`` x ``w`` window of ``values`` (an integral image), (H-h+1, W-w+1)."""
    integral = np.pad(values.cumsum(axis=0).cumsum(axis=1), ((1, 0), (1, 0)))
    return integral[h:, w:] - integral[:-h, w:] - integral[h:, :-w] + integral[:-h, :-w]


def normalized_correlation(scene: np.ndarray, template: np.ndarray) -> np.ndarray:
    """The normalised cross-correlation of ``template`` (h, w) at every position of ``scene`` (H, W)
    where it fits whole, (H-h+1, W-w+1); 0 where the window is flat. The products come from one
    FFT (no wrap-around in the positions kept), the windows' own spread from integral images."""
    (H, W), (h, w) = scene.shape, template.shape
    centred = template - template.mean()
    spectrum = np.fft.rfft2(scene) * np.conj(np.fft.rfft2(centred, s=(H, W)))
    products = np.fft.irfft2(spectrum, s=(H, W))[:H - h + 1, :W - w + 1]
    sums, squares = _window_sums(scene, h, w), _window_sums(scene * scene, h, w)
    spread = np.sqrt(np.clip(squares - sums * sums / (h * w), 0.0, None))  # each window's norm about its mean
    denominator = spread * np.sqrt((centred * centred).sum())
    return np.divide(products, denominator, out=np.zeros_like(products), where=denominator > 1e-6)


def locate_template(original: Image.Image, edited: Image.Image, box: Box, *, scales: Sequence[float] = (0.8, 1.0, 1.25),
                    search_side: int = 192) -> tuple[Box, float] | None:
    """Where ``box``'s crop of ``original`` best matches in ``edited``, and how well.

    Both images are searched in grey at most ``search_side`` px on the long side (the edit first
    brought to the original's size), the crop at each of ``scales``; the match is the window of
    highest normalised cross-correlation (1 = the same pixels up to brightness and contrast).
    Returns the box in ``edited``'s pixels and that correlation, or None when the crop is flat
    (nothing to follow) or fits nowhere.
    """
    x1, y1, x2, y2 = (round(v) for v in box)
    if x2 - x1 < 2 or y2 - y1 < 2:
        return None
    width, height = original.size
    factor = min(1.0, search_side / max(width, height))
    search_size = (max(1, round(width * factor)), max(1, round(height * factor)))
    scene = _gray(edited.convert("RGB").resize(search_size, Image.Resampling.BILINEAR))
    crop = original.crop((x1, y1, x2, y2))
    best: tuple[float, int, int, int, int] | None = None  # (correlation, x, y, w, h) in the search image
    for scale in scales:
        w, h = round((x2 - x1) * factor * scale), round((y2 - y1) * factor * scale)
        if w < 2 or h < 2 or w > search_size[0] or h > search_size[1]:
            continue
        template = _gray(crop.resize((w, h), Image.Resampling.BILINEAR))
        if template.std() < 1e-6:
            return None
        correlation = normalized_correlation(scene, template)
        y, x = np.unravel_index(int(correlation.argmax()), correlation.shape)
        if best is None or correlation[y, x] > best[0]:
            best = (float(correlation[y, x]), int(x), int(y), w, h)
    if best is None:
        return None
    value, x, y, w, h = best
    sx, sy = edited.width / search_size[0], edited.height / search_size[1]
    return (x * sx, y * sy, (x + w) * sx, (y + h) * sy), value


def _clip(box: Sequence[float], size: tuple[int, int]) -> Box:
    width, height = size
    x1, y1, x2, y2 = (float(v) for v in box)
    return (min(max(x1, 0.0), width), min(max(y1, 0.0), height), min(max(x2, 0.0), width), min(max(y2, 0.0), height))


class TransformersGrounder:
    """A transformers zero-shot detector as HOI-Eval's grounder (see the module docstring).

    Args:
        model: an ``AutoModelForZeroShotObjectDetection`` (Grounding DINO, OWLv2, OWL-ViT).
        processor: its ``AutoProcessor``.
        name: the grounder's name.
        device: torch device.
        track_threshold: the least template correlation that counts as having followed the object.
    """

    def __init__(self, model: Any, processor: Any, name: str, *, device: str = "cpu",
                 track_threshold: float = 0.5) -> None:
        self.model, self.processor, self.name = model.to(device).eval(), processor, name
        self.device, self.track_threshold = device, track_threshold
        self.kind = getattr(model.config, "model_type", "")

    def detect(self, image: Image.Image, prompt: str, *, box_threshold: float = 0.3,
               text_threshold: float = 0.25) -> list[Detection]:
        """Boxes of ``prompt`` in ``image``, best first, in the image's pixels."""
        import torch

        if not prompt.strip():
            raise ValueError("detect needs a text prompt (what to find), got an empty one")
        image = image.convert("RGB")
        width, height = image.size
        if self.kind in ("owlv2", "owlvit"):
            inputs = self.processor(text=[[prompt]], images=image, return_tensors="pt").to(self.device)
            with torch.no_grad():
                outputs = self.model(**inputs)
            # OWLv2 pads the image to a square before resizing, so its boxes are relative to that square.
            side = max(width, height)
            target = [(side, side)] if self.kind == "owlv2" else [(height, width)]
            result = self.processor.post_process_grounded_object_detection(
                outputs, threshold=box_threshold, target_sizes=target, text_labels=[[prompt]])[0]
        else:
            caption = prompt.lower().strip()
            caption = caption if caption.endswith(".") else caption + "."  # upstream's caption form
            inputs = self.processor(images=image, text=caption, return_tensors="pt").to(self.device)
            with torch.no_grad():
                outputs = self.model(**inputs)
            result = self.processor.post_process_grounded_object_detection(
                outputs, inputs["input_ids"], threshold=box_threshold, text_threshold=text_threshold,
                target_sizes=[(height, width)])[0]
        detections = [Detection(box=_clip(box, (width, height)), score=float(score), label=prompt)
                      for box, score in zip(result["boxes"].tolist(), result["scores"].tolist(), strict=True)]
        return sorted(detections, key=lambda detection: detection.score, reverse=True)

    def track(self, original: Image.Image, edited: Image.Image, box: Box) -> Box | None:
        """The annotated ``box`` followed into ``edited`` by :func:`locate_template`; None when the
        best correlation is under ``track_threshold``."""
        found = locate_template(original, edited, box)
        if found is None or found[1] < self.track_threshold:
            return None
        return _clip(found[0], edited.size)


@register("grounder", "transformers")
def transformers_grounder(path: str | None = None, model: Any = None, processor: Any = None, device: str = "cpu",
                          track_threshold: float | str = 0.5, local_files_only: bool | str = True) -> TransformersGrounder:
    """Grounding DINO or OWLv2 from a local folder (``AutoModelForZeroShotObjectDetection``)."""
    if model is None:
        if not path:
            raise ValueError("the transformers grounder needs a model folder: path=DIR (--option grounder.path=DIR), "
                             "e.g. a saved IDEA-Research/grounding-dino-tiny or google/owlv2-base-patch16-ensemble")
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor

        model = AutoModelForZeroShotObjectDetection.from_pretrained(path, local_files_only=_true(local_files_only))
        processor = AutoProcessor.from_pretrained(path, local_files_only=_true(local_files_only))
    if processor is None:
        raise ValueError("a processor is required when passing a loaded model")
    return TransformersGrounder(model, processor, f"transformers:{path or type(model).__name__}", device=device,
                                track_threshold=_number(track_threshold, "track_threshold", float))


__all__ = ["ChatJudge", "TransformersGrounder", "image_part", "locate_template", "normalized_correlation",
           "openai_judge", "parse_frame_choice", "parse_video_report", "transformers_grounder"]


# ---------------------------------------------------------------- SCPE's prompt refiner

GENERATOR_PROMPT = """You write the prompt for an image-to-video model that must turn the photo into a short video
in which the person performs an edit instruction, so that one frame shows the requested human-object
interaction.

Edit instruction: {instruction}

Playbook of rules learnt from earlier failures (follow the strategies and the template, avoid the pitfalls):
{playbook}

Return {{"reasoning": "<how the rules apply to this photo>", "enhanced_prompt": "<the video prompt>"}}.
{json_only}"""

REFLECTOR_PROMPT = """A generated video failed its edit instruction. Find why, in terms that carry over to other
photos: do NOT name objects, colours or people of this photo.

Edit instruction: {instruction}
Prompt used: {prompt}
The analyst's critique: {critique}

Return {{"root_cause": "<why the video failed>", "key_insight": "<a general rule that would have avoided it>"}}.
{json_only}"""

CURATOR_PROMPT = """You keep a playbook of prompting rules for an image-to-video editor. Decide what the new
insight adds. Add nothing that the playbook already says.

Playbook:
{playbook}

Root cause: {root_cause}
Key insight: {key_insight}

Return {{"operations": [{{"type": "ADD", "section": "strategies" | "templates" | "pitfalls", "content": "<the rule>"}}]}}
(an empty list when nothing is new). {json_only}"""

GENERATOR_TEMPERATURE = 0.5  # upstream's generator; the reflector and curator run at the judge's 0.1


class ChatRefiner:
    """SCPE's generator, reflector and curator on a chat model (upstream: Gemini 2.5 Pro for all three).

    A reply that does not carry what is asked raises :class:`~engines.hoi.judge_replies.JudgeReplyError`
    naming what is missing; the SCPE loop records it as that stage's failure."""

    def __init__(self, chat: ChatBackend, name: str, *, max_tokens: int = 1024, seed: int = 0) -> None:
        self.judge = ChatJudge(chat, name, temperature=JUDGE_TEMPERATURE, max_tokens=max_tokens, seed=seed)
        self.name = name

    def generate(self, image: Image.Image, instruction: str, playbook_text: str) -> EnhancedPrompt:
        reply = self.judge.ask(GENERATOR_PROMPT.format(instruction=instruction, playbook=playbook_text or "(empty)",
                                                       json_only=JSON_ONLY), [image],
                               temperature=GENERATOR_TEMPERATURE)
        obj = json_object(reply)
        prompt = str(obj.get("enhanced_prompt") or "").strip()
        if not prompt:
            raise JudgeReplyError(f"no enhanced_prompt in the generator's reply: {reply[:200]!r}")
        return EnhancedPrompt(prompt, str(obj.get("reasoning") or ""))

    def reflect(self, report: VideoReport, prompt: str, instruction: str) -> Insight:
        reply = self.judge.ask(REFLECTOR_PROMPT.format(instruction=instruction, prompt=prompt or "N/A",
                                                       critique=report.critique, json_only=JSON_ONLY))
        obj = json_object(reply)
        insight = str(obj.get("key_insight") or "").strip()
        if not insight:
            raise JudgeReplyError(f"no key_insight in the reflector's reply: {reply[:200]!r}")
        return Insight(str(obj.get("root_cause") or "").strip(), insight)

    def curate(self, insight: Insight, playbook_text: str) -> list[PlaybookOperation]:
        reply = self.judge.ask(CURATOR_PROMPT.format(playbook=playbook_text or "(empty)", root_cause=insight.root_cause,
                                                     key_insight=insight.key_insight, json_only=JSON_ONLY))
        operations = json_object(reply).get("operations")
        if not isinstance(operations, list):
            raise JudgeReplyError(f"no operations list in the curator's reply: {reply[:200]!r}")
        try:
            return [as_operation(op, f"curator operation {i + 1}") for i, op in enumerate(operations)]
        except PlaybookFormatError as error:
            raise JudgeReplyError(f"{error} in the curator's reply: {reply[:200]!r}") from None


@register("refiner", "openai")
def openai_refiner(model: str | None = None, base_url: str = DEFAULT_BASE_URL,
                   api_key_env: str | None = DEFAULT_KEY_VARIABLE, max_tokens: int | str = 1024,
                   timeout: float | str = 120.0, chat: ChatBackend | None = None) -> ChatRefiner:
    """An OpenAI-compatible chat endpoint as SCPE's prompt refiner (:func:`chat_endpoint`)."""
    if chat is None:
        if not model:
            raise ValueError("the openai refiner needs a model name: model=NAME")
        chat = chat_endpoint("refiner", model, base_url, api_key_env, timeout)
    return ChatRefiner(chat, f"openai:{model or 'chat'}", max_tokens=_number(max_tokens, "max_tokens", int))
