"""The judge area's model role: a text generator that answers a judge's prompt (``TextGenerator``).

One small ``Protocol``: ``complete(prompts, max_new_tokens, *, candidates=()) -> list[Completion]``,
greedy, one ``Completion(text, first_token_probs)`` per prompt. ``first_token_probs`` maps each
candidate answer word ("yes"/"no", "safe"/"unsafe") to its probability as the first generated
token, so LlamaGuard-3's p(unsafe) and the HarmBench classifier's p(yes) can be swept over a
threshold (spec ``shared/specs/judge.md`` §2); None when the backend gives no token probabilities.

Adapters:

- ``TransformersBackend``: a local causal LM (``from_pretrained`` on a local folder, or loaded
  objects). It reads a prompt's exact ``text`` when the judge has one (HarmBench's ``[INST]``
  prompt, LlamaGuard-3's rendered template), else the chat messages through the tokenizer's chat
  template. Probabilities come from the first step's logits.
- ``OpenAICompatibleBackend``: POST ``{base_url}/chat/completions`` over ``httpx`` (vLLM, Ollama,
  llama.cpp's server, hosted APIs); asks for ``logprobs``/``top_logprobs`` when the judge has
  candidate words and uses them when the server returns them.

``get_backend("transformers:PATH")`` / ``get_backend("openai:URL#MODEL")`` builds one from the
command line's ``--backend``; the endpoint's key is read from ``HAI_JUDGE_API_KEY`` when set.
The offline default judges (string matching, the learned MiniLM judge) need no backend at all.
Tests drive both adapters with a tiny randomly initialised Llama and a local HTTP server.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from engines.judge.prompts import JudgePrompt
from engines.platform.torch_device import resolve_device

API_KEY_ENV = "HAI_JUDGE_API_KEY"


class BackendError(RuntimeError):
    """The backend failed (HTTP status, transport error, a malformed response, a model that cannot load)."""


@dataclass(frozen=True)
class Completion:
    """A greedy reply and, when the backend has them, the candidates' first-token probabilities."""

    text: str
    first_token_probs: dict[str, float] | None = None


@runtime_checkable
class TextGenerator(Protocol):
    """A model that answers judge prompts. ``backend_id`` names it in cache keys (same id: same answers)."""

    backend_id: str

    def complete(self, prompts: Sequence[JudgePrompt], max_new_tokens: int, *,
                 candidates: Sequence[str] = ()) -> list[Completion]:
        """Greedy replies, one per prompt, in order."""
        ...


# ----------------------------------------------------------------------------- local transformers model


class TransformersBackend:
    """A local causal LM via ``transformers``, greedy, CPU float32 by default.

    Args:
        model_path_or_object: a loaded ``PreTrainedModel`` or a local folder (never downloads unless
            ``local_files_only=False``).
        tokenizer: a loaded tokenizer; default: ``AutoTokenizer.from_pretrained`` of the folder.
        device: torch device.
        batch_size: prompts per forward pass (left-padded).
        backend_id: the name in cache keys; default ``transformers:<folder or model class>``.
    """

    def __init__(self, model_path_or_object: Any, tokenizer: Any = None, *, device: str = "cpu",
                 batch_size: int = 8, local_files_only: bool = True, backend_id: str | None = None):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if isinstance(model_path_or_object, str | os.PathLike):
            path = str(model_path_or_object)
            try:
                self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=local_files_only)
                if tokenizer is None:
                    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_files_only)
            except OSError as exc:
                raise BackendError(f"cannot load a causal LM from {path!r}: {exc}") from exc
            default_id = f"transformers:{path}"
        else:
            self.model = model_path_or_object
            default_id = f"transformers:{type(self.model).__name__}"
        if tokenizer is None:
            raise ValueError("a tokenizer is required when passing a loaded model")
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.backend_id = backend_id or default_id
        self.model.to(device).eval()

    def _uses_chat_template(self, prompt: JudgePrompt) -> bool:
        return prompt.text is None and bool(getattr(self.tokenizer, "chat_template", None))

    def render(self, prompt: JudgePrompt) -> str:
        """The string the model reads: the judge's exact text, else the chat template, else plain turns."""
        if prompt.text is not None:
            return prompt.text
        if self._uses_chat_template(prompt):
            return self.tokenizer.apply_chat_template(prompt.chat(), tokenize=False, add_generation_prompt=True)
        return "".join(f"{role}: {content}\n" for role, content in prompt.messages) + "assistant:"

    def encode(self, prompt: JudgePrompt) -> list[int]:
        """Token ids of ``render(prompt)``. The tokenizer adds its BOS token, except to a chat template's
        output, which already starts with it (the same ids as ``apply_chat_template(..., tokenize=True)``)."""
        add_special = not self._uses_chat_template(prompt)
        return list(self.tokenizer(self.render(prompt), add_special_tokens=add_special)["input_ids"])

    def candidate_token_ids(self, candidate: str) -> set[int]:
        """First token ids of the word as the model may start its reply with it: "yes" and " yes"."""
        ids = set()
        for variant in (candidate, " " + candidate):
            encoded = self.tokenizer.encode(variant, add_special_tokens=False)
            if encoded:
                ids.add(int(encoded[0]))
        return ids

    def _candidate_ids(self, candidates: Sequence[str]) -> dict[str, list[int]] | None:
        if not candidates:
            return None
        ids = {c: sorted(self.candidate_token_ids(c)) for c in candidates}
        seen: set[int] = set()
        for token_ids in ids.values():
            if seen & set(token_ids) or not token_ids:
                return None  # two answers start with the same token: the first token cannot tell them apart
            seen |= set(token_ids)
        return ids

    def _context_limit(self) -> int | None:
        config = self.model.config
        return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)

    def complete(self, prompts: Sequence[JudgePrompt], max_new_tokens: int, *,
                 candidates: Sequence[str] = ()) -> list[Completion]:
        out: list[Completion] = []
        candidate_ids = self._candidate_ids(candidates)
        for start in range(0, len(prompts), self.batch_size):
            out.extend(self._complete_batch(prompts[start:start + self.batch_size], max_new_tokens, candidate_ids))
        return out

    def _complete_batch(self, prompts: Sequence[JudgePrompt], max_new_tokens: int,
                        candidate_ids: dict[str, list[int]] | None) -> list[Completion]:
        import torch

        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        pad = 0 if pad is None else pad
        rows = [self.encode(p) for p in prompts]
        limit = self._context_limit()
        if limit:
            # Keep the end of an over-long prompt: it holds the question and the answer format
            # (HarmBench's classifier tokenizer truncates on the left too).
            keep = max(1, limit - max_new_tokens)
            rows = [r[-keep:] for r in rows]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, T), padded on the left
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row):] = 1
        with torch.no_grad():
            out = self.model.generate(ids.to(self.device), attention_mask=mask.to(self.device), do_sample=False,
                                      max_new_tokens=max_new_tokens, pad_token_id=pad, output_logits=True,
                                      return_dict_in_generate=True)
        first = out.logits[0].float().softmax(dim=-1).cpu()  # (B, V): the first generated position
        completions = []
        for i in range(len(rows)):
            text = tok.decode(out.sequences[i, width:], skip_special_tokens=True)
            probs = None
            if candidate_ids is not None:
                probs = {c: float(first[i, token_ids].sum()) for c, token_ids in candidate_ids.items()}
            completions.append(Completion(text, probs))
        return completions


# ----------------------------------------------------------------------------- OpenAI-compatible endpoint


@dataclass
class OpenAICompatibleBackend:
    """Chat completions in the OpenAI format over ``httpx``, greedy (temperature 0).

    Args:
        base_url: the API root, e.g. "http://127.0.0.1:8000/v1".
        model: the model name sent with each request.
        api_key: sent as "Authorization: Bearer <key>" when given.
        timeout: seconds per request.
        max_workers: requests in flight at once.
        top_logprobs: how many alternatives of the first token to ask for when the judge has candidates.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    max_workers: int = 4
    top_logprobs: int = 5

    def __post_init__(self) -> None:
        self.backend_id = f"openai:{self.base_url.rstrip('/')}#{self.model}"
        self._client: Any = None

    def _post(self, payload: dict) -> dict:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = self._client.post(url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            raise BackendError(f"POST {url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise BackendError(f"POST {url} failed with HTTP {response.status_code}: {response.text[:300]!r}")
        try:
            data = response.json()
            data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"POST {url}: HTTP {response.status_code} but not a chat completion: "
                               f"{response.text[:300]!r}") from exc
        return data

    def _one(self, prompt: JudgePrompt, max_new_tokens: int, candidates: Sequence[str]) -> Completion:
        payload: dict[str, Any] = {"model": self.model, "messages": prompt.chat(), "max_tokens": max_new_tokens,
                                   "temperature": 0.0}
        if candidates:
            payload.update(logprobs=True, top_logprobs=self.top_logprobs)
        choice = self._post(payload)["choices"][0]
        text = str(choice["message"].get("content") or "")
        return Completion(text, first_token_probs(choice.get("logprobs"), candidates) if candidates else None)

    def complete(self, prompts: Sequence[JudgePrompt], max_new_tokens: int, *,
                 candidates: Sequence[str] = ()) -> list[Completion]:
        if len(prompts) <= 1 or self.max_workers <= 1:
            return [self._one(p, max_new_tokens, candidates) for p in prompts]
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(lambda p: self._one(p, max_new_tokens, candidates), prompts))


def first_token_probs(logprobs: Any, candidates: Sequence[str]) -> dict[str, float] | None:
    """Candidates' probabilities from a chat completion's ``logprobs`` (its first token's ``top_logprobs``).

    A candidate's probability sums the alternatives that equal it once surrounding whitespace is
    removed ("yes", " yes"); one missing from the top alternatives gets 0. None when the server sent
    no log probabilities.
    """
    try:
        first = logprobs["content"][0]
    except (KeyError, IndexError, TypeError):
        return None
    alternatives = first.get("top_logprobs") or [{"token": first.get("token"), "logprob": first.get("logprob")}]
    probs = dict.fromkeys(candidates, 0.0)
    for alt in alternatives:
        token, logprob = alt.get("token"), alt.get("logprob")
        if isinstance(token, str) and isinstance(logprob, int | float) and token.strip() in probs:
            probs[token.strip()] += math.exp(logprob)
    return probs


# ----------------------------------------------------------------------------- registry

BackendFactory = Callable[[str], TextGenerator]
BACKENDS: dict[str, tuple[BackendFactory, str]] = {}


def register_backend(scheme: str, usage: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: make ``--backend <scheme>:<rest>`` build a backend with ``factory(rest)``."""

    def wrap(factory: BackendFactory) -> BackendFactory:
        BACKENDS[scheme] = (factory, usage)
        return factory

    return wrap


@register_backend("transformers", "transformers:PATH (a local model folder; device from $HAI_DEVICE)")
def _transformers(rest: str) -> TextGenerator:
    return TransformersBackend(rest, device=str(resolve_device()))


@register_backend("openai", "openai:URL#MODEL (an OpenAI-compatible endpoint; key from $HAI_JUDGE_API_KEY)")
def _openai(rest: str) -> TextGenerator:
    url, sep, model = rest.rpartition("#")
    if not sep or not url or not model:
        raise ValueError(f"--backend openai:URL#MODEL needs both parts, got openai:{rest}")
    return OpenAICompatibleBackend(url, model, api_key=os.environ.get(API_KEY_ENV) or None)


def get_backend(spec: str) -> TextGenerator:
    """A backend from ``SCHEME:REST`` (``transformers:PATH``, ``openai:URL#MODEL``).

    Raises:
        ValueError: an unknown scheme or a malformed spec (the message lists the known forms).
    """
    scheme, sep, rest = spec.partition(":")
    if not sep or scheme not in BACKENDS or not rest:
        forms = "; ".join(usage for _, usage in BACKENDS.values())
        raise ValueError(f"unknown backend {spec!r}; use one of: {forms}")
    return BACKENDS[scheme][0](rest)


__all__ = ["BACKENDS", "BackendError", "Completion", "OpenAICompatibleBackend", "TextGenerator",
           "TransformersBackend", "first_token_probs", "get_backend", "register_backend"]
