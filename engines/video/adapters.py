"""Real model adapters of the video agent's roles.

- **LLM planner** (``llm-endpoint``, ``llm-transformers``): any chat model behind
  ``engines.platform.chat`` (an OpenAI-compatible endpoint such as vLLM or Ollama, or a local
  transformers causal LM) plans with upstream's three tools (``visual_retrieve``,
  ``visual_inspect``, finish; docs/video.md, "Method"), answering with one JSON object per step. A reply that does
  not parse, or names a span outside the video, is recorded and replaced by the heuristic
  planner's step, so a weak model still finishes a run.
- **CLIP / SigLIP scoring inspector** (``clip``): a contrastive image-text model
  (``CLIPModel``/``SiglipModel`` through ``AutoModel``) scores every sampled frame against each
  option ("a video frame showing <option>"); an option's support is its mean softmax share over
  the frames, the best support is the confidence, and the evidence cites the frames that favour it.
- **VLM inspector** (``vlm-transformers``): an image-text-to-text model (Qwen2.5-VL, SmolVLM,
  LLaVA-OneVision through ``AutoModelForImageTextToText``) reads the frames, each tagged with its
  time as upstream does (``[t.ttt second]``), and answers in upstream's inspector format, parsed by
  ``engines.video.gate.parse_verdict``.

Nothing downloads: paths are local folders (``local_files_only``) unless told otherwise. Tests
build tiny randomly initialised models from config (``tests/video/test_video_adapters.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from engines.platform.chat import ChatBackend, OpenAICompatibleBackend, TransformersBackend
from engines.video.decode import VideoReader, sample_times
from engines.video.gate import parse_verdict
from engines.video.questions import Question
from engines.video.roles import PLANNERS, Finalize, Inspect, Inspection, Retrieve, register
from engines.video.spans import Span, TimeFormatError, format_time, parse_time
from engines.video.trajectory import FrameRef, Step, Verdict

PLANNER_SYSTEM = """You plan how to answer a multiple-choice question about a long video. You cannot see the video.
Tools, one per step; reply with exactly one JSON object and nothing else:
{"action": "retrieve", "query": "<words to search the clip captions and dialogue for>"}
{"action": "inspect", "spans": [["HH:MM:SS", "HH:MM:SS"]], "context": "<what to look for>"}
{"action": "finish"}
Search first, then inspect the most promising spans; the inspector looks at the frames and alone gives the
answer. Never state the answer yourself. Finish when there is nothing left worth inspecting."""

INSPECTOR_PROMPT = """You are given frames of a video, each tagged with its time. Question:
{question}
Context from the planner: {context}
Answer in this format:
Answer: <one option letter, or SEARCH_MORE>
Evidence: <what you see, citing times as HH:MM:SS>
Confidence: <0.00-1.00>
Missing: <what is missing, when SEARCH_MORE>
Next search: <what to search for next, when SEARCH_MORE>
Give a letter only if your confidence is at least 0.95 and every element of the question is verified."""


def _history_text(history: Sequence[Step]) -> str:
    lines = []
    for step in history:
        if step.action == "retrieve":
            lines.append(f"Step {step.i}: searched {step.args.get('query', '')!r}:\n{step.observation}")
        elif step.action == "inspect":
            spans = ", ".join(s.label() for s in step.spans)
            lines.append(f"Step {step.i}: inspected {spans}:\n{step.observation}")
    return "\n\n".join(lines) or "(nothing yet)"


def parse_action(reply: str, duration: float | None = None) -> Retrieve | Inspect | Finalize:
    """The action in a planner's reply (its first JSON object). Raises ValueError saying what is wrong."""
    match = re.search(r"\{.*\}", reply, flags=re.S)
    if match is None:
        raise ValueError("no JSON object in the reply")
    try:
        obj = json.loads(match.group(0))
    except json.JSONDecodeError as error:
        raise ValueError(f"the JSON does not parse ({error.msg})") from None
    action = str(obj.get("action", "")).lower() if isinstance(obj, dict) else ""
    if action == "retrieve" and str(obj.get("query", "")).strip():
        return Retrieve(str(obj["query"]).strip(), "LLM planner: search")
    if action == "inspect":
        spans = []
        for pair in obj.get("spans") or []:
            try:
                start, end = (parse_time(value) for value in pair)
            except (TimeFormatError, TypeError, ValueError):
                raise ValueError(f"span {pair!r} is not a pair of times") from None
            if end < start or (duration is not None and start >= duration):
                raise ValueError(f"span {pair!r} lies outside the video")
            spans.append(Span(start, end))
        if not spans:
            raise ValueError("an inspect action needs spans")
        return Inspect(tuple(spans), str(obj.get("context", "")), "LLM planner: inspect")
    if action == "finish":
        return Finalize("LLM planner: finish")
    raise ValueError(f"unknown or incomplete action {obj!r}")


FALLBACK_PLANNER = "heuristic"  # takes the step of a reply that names no usable action


class LLMPlanner:
    """A chat model as the planner, with the heuristic planner as the fallback for unusable replies."""

    def __init__(self, chat: ChatBackend, name: str, *, max_tokens: int = 160, duration_s: float | None = None) -> None:
        self.chat, self.name, self.max_tokens, self.duration_s = chat, name, max_tokens, duration_s
        # The registered heuristic planner: engines.video.backends registers the offline roles before any
        # adapter is made through it (this module may not import the stand-ins, nor the registry, which imports it).
        if FALLBACK_PLANNER not in PLANNERS:
            raise RuntimeError(f"the {FALLBACK_PLANNER!r} planner is not registered: make planners through "
                               "engines.video.backends")
        self.fallback = PLANNERS[FALLBACK_PLANNER]()
        self.unusable = 0

    def act(self, question: Question, history: Sequence[Step], steps_left: int) -> Retrieve | Inspect | Finalize:
        messages = [{"role": "system", "content": PLANNER_SYSTEM},
                    {"role": "user", "content": f"Question:\n{question.prompt_text()}\n\nWhat you did so far:\n"
                                                f"{_history_text(history)}\n\nSteps left: {steps_left}. Your next step?"}]
        reply = self.chat.complete(messages, temperature=0.0, max_tokens=self.max_tokens, seed=0)
        try:
            return parse_action(reply, self.duration_s)
        except ValueError as problem:
            self.unusable += 1
            action = self.fallback.act(question, history, steps_left)
            note = f"Unusable planner reply ({problem}): {reply[:120]!r}; the heuristic planner's step instead. "
            return type(action)(**{**action.__dict__, "thought": note + action.thought})


@register("planner", "llm-endpoint")
def endpoint_planner(base_url: str, model: str, api_key_env: str | None = None) -> LLMPlanner:
    """An OpenAI-compatible endpoint as the planner; its key only from the declared variable ``api_key_env``."""
    return LLMPlanner(OpenAICompatibleBackend(base_url, model, api_key_env=api_key_env), f"llm-endpoint:{model}")


@register("planner", "llm-transformers")
def transformers_planner(path: str, model: Any = None, tokenizer: Any = None) -> LLMPlanner:
    return LLMPlanner(TransformersBackend(model if model is not None else path, tokenizer), f"llm-transformers:{path}")


def _frames(reader: VideoReader, spans: Sequence[Span], fps: float, max_frames: int) -> tuple[list[float], list]:
    times = sample_times(list(spans), fps=fps, max_frames=max_frames, duration=reader.info.duration_s)
    return times, reader.frames_at(times)


class ScoringInspector:
    """A contrastive image-text model scores each frame against each option (see the module docstring)."""

    def __init__(self, model: Any, processor: Any, name: str, *, tau: float = 0.95,
                 template: str = "a video frame showing {option}") -> None:
        self.model, self.processor, self.name, self.tau, self.template = model.eval(), processor, name, tau, template

    def option_shares(self, frames: list[np.ndarray], options: Sequence[str]) -> np.ndarray:
        """(frames, options): each frame's softmax over the options' texts."""
        import torch

        texts = [self.template.format(option=option) for option in options]
        inputs = self.processor(text=texts, images=frames, return_tensors="pt", padding="max_length", truncation=True)
        with torch.no_grad():
            logits = self.model(**inputs).logits_per_image  # (frames, options)
        return torch.softmax(logits.float(), dim=-1).numpy()

    def inspect(self, reader: VideoReader, spans: Sequence[Span], question: Question, *, context: str = "",
                fps: float = 2.0, max_frames: int = 48, answer_only: bool = False) -> Inspection:
        times, frames = _frames(reader, spans, fps, max_frames)
        shares = self.option_shares(frames, question.options)
        support = shares.mean(axis=0)
        best = int(support.argmax())
        letter, confidence = question.letters[best], round(float(support[best]), 4)
        favouring = [times[i] for i in np.argsort(-shares[:, best])[:3]]
        evidence = (f"The frames at {', '.join(format_time(t) for t in sorted(favouring))} match "
                    f"“{question.options[best]}” best (image-text similarity).")
        refs = [FrameRef(t, None) for t in times]
        if confidence < self.tau and not answer_only:
            return Inspection(Verdict("SEARCH_MORE", None, confidence, evidence, tuple(sorted(favouring)),
                                      missing=f"no option stands out (best {letter}: {confidence:.2f})",
                                      search_more_type="VISUAL_UNCLEAR"), refs)
        return Inspection(Verdict("ANSWER", letter, confidence, evidence, tuple(sorted(favouring))), refs)


@register("inspector", "clip")
def clip_inspector(path: str, model: Any = None, processor: Any = None) -> ScoringInspector:
    """CLIP or SigLIP from a local folder (``AutoModel``/``AutoProcessor``)."""
    if model is None:
        from transformers import AutoModel, AutoProcessor

        model = AutoModel.from_pretrained(path, local_files_only=True)
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    return ScoringInspector(model, processor, f"clip:{path}")


class VLMInspector:
    """An image-text-to-text model answers in upstream's inspector format (see the module docstring)."""

    def __init__(self, model: Any, processor: Any, name: str, *, max_new_tokens: int = 200) -> None:
        self.model, self.processor, self.name, self.max_new_tokens = model.eval(), processor, name, max_new_tokens

    def messages(self, times: Sequence[float], question: Question, context: str) -> list[dict]:
        content: list[dict] = []
        for t in times:
            content += [{"type": "text", "text": f"[{t:.3f} second]"}, {"type": "image"}]
        content.append({"type": "text", "text": INSPECTOR_PROMPT.format(question=question.prompt_text(),
                                                                         context=context or "(none)")})
        return [{"role": "user", "content": content}]

    def inspect(self, reader: VideoReader, spans: Sequence[Span], question: Question, *, context: str = "",
                fps: float = 2.0, max_frames: int = 48, answer_only: bool = False) -> Inspection:
        import torch
        from PIL import Image

        times, frames = _frames(reader, spans, fps, max_frames)
        prompt = self.processor.apply_chat_template(self.messages(times, question, context), add_generation_prompt=True)
        inputs = self.processor(text=prompt, images=[Image.fromarray(f) for f in frames], return_tensors="pt")
        with torch.no_grad():
            out = self.model.generate(**inputs, max_new_tokens=self.max_new_tokens, do_sample=False)
        reply = self.processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)[0]
        verdict = parse_verdict(reply)
        if answer_only and verdict.answer not in question.letters:
            verdict = Verdict("ANSWER", question.letters[0], 0.0, f"No letter in the reply: {reply[:200]}", ())
        return Inspection(verdict, [FrameRef(t, None) for t in times], raw=reply)


@register("inspector", "vlm-transformers")
def vlm_inspector(path: str, model: Any = None, processor: Any = None) -> VLMInspector:
    """Qwen2.5-VL, SmolVLM, LLaVA-OneVision... from a local folder."""
    if model is None:
        from transformers import AutoModelForImageTextToText, AutoProcessor

        model = AutoModelForImageTextToText.from_pretrained(path, local_files_only=True)
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
    return VLMInspector(model, processor, f"vlm-transformers:{path}")
