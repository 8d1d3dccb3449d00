"""Chat models behind one small protocol, for every area whose roles talk to an LLM.

``ChatBackend.complete(messages, *, temperature, max_tokens, seed) -> str``. Adapters:

- ``OpenAICompatibleBackend``: POST ``{base_url}/chat/completions`` (OpenAI, vLLM, llama.cpp
  server, Ollama, a hosted endpoint);
- ``TransformersBackend``: a local causal LM with a chat template (``from_pretrained`` on a local
  folder; never downloads unless told to).

An endpoint URL is checked when its backend is made (``engines.platform.endpoints``). Failures of
the endpoint or the model (HTTP errors, an unreachable server) raise ``BackendError``;
callers handle unusable replies themselves. Used by the collaboration area's simulated
collaborators and the video area's LLM planner; tested with a local fake endpoint and a tiny
randomly initialised GPT-2 built from config (``tests/collab/test_llm_human.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engines.platform.endpoints import check_endpoint_url


class BackendError(RuntimeError):
    """The chat backend failed (HTTP status, transport error or a malformed response)."""


@runtime_checkable
class ChatBackend(Protocol):
    def complete(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int) -> str:
        """Return the assistant's reply to OpenAI-style ``messages`` ([{"role", "content"}, ...])."""
        ...


@dataclass
class OpenAICompatibleBackend:
    """Chat completions over HTTP in the OpenAI format, with ``httpx``.

    Args:
        base_url: the API root, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8000/v1";
            checked when the backend is made (``endpoints.check_endpoint_url``: http(s), a host
            ``HAI_ENDPOINT_HOSTS`` admits), so no caller can send a request, or a key, elsewhere.
        model: the model name sent in each request.
        api_key: sent as "Authorization: Bearer <key>" when given.
        timeout: seconds per request.

    Raises:
        EndpointRefused: ``base_url`` is not an endpoint this server may send requests to.
    """

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0
    # One client for all requests: a new one per request costs ~25 ms (TLS context), more than a local model's reply.
    _client: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.base_url = check_endpoint_url(self.base_url, field="base_url")

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 128,
                 seed: int = 0) -> str:
        import httpx

        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout)
        url = self.base_url.rstrip("/") + "/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        payload = {"model": self.model, "messages": messages, "temperature": temperature,
                   "max_tokens": max_tokens, "seed": seed}
        try:
            response = self._client.post(url, json=payload, headers=headers)
        except httpx.HTTPError as exc:
            raise BackendError(f"POST {url} failed: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise BackendError(f"POST {url} failed with HTTP {response.status_code}: {response.text[:300]!r}")
        try:
            return str(response.json()["choices"][0]["message"]["content"] or "")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise BackendError(f"POST {url}: HTTP {response.status_code} but not a chat completion: "
                               f"{response.text[:300]!r}") from exc


class TransformersBackend:
    """A local causal LM via ``transformers`` (CPU float32 by default).

    Uses the tokenizer's chat template when it has one, else a plain "role: content" prompt.
    Greedy decoding when ``temperature <= 0`` (the default for collaborators), otherwise sampling
    under ``torch.manual_seed(seed)``; prompts longer than the model's context keep their end.

    Args:
        model_or_path: a loaded ``PreTrainedModel`` or a local path / hub name.
        tokenizer: a loaded tokenizer; default ``AutoTokenizer.from_pretrained(model_or_path)``.
        device: torch device.
        local_files_only: with a path or name, never download weights unless set to False.
    """

    def __init__(self, model_or_path: Any, tokenizer: Any = None, *, device: str = "cpu",
                 local_files_only: bool = True):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if isinstance(model_or_path, str):
            self.model = AutoModelForCausalLM.from_pretrained(model_or_path, local_files_only=local_files_only)
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(model_or_path, local_files_only=local_files_only)
        else:
            self.model = model_or_path
        if tokenizer is None:
            raise ValueError("a tokenizer is required when passing a loaded model")
        self.tokenizer = tokenizer
        self.device = device
        self.model.to(device).eval()

    def prompt(self, messages: list[dict]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 128,
                 seed: int = 0) -> str:
        import torch

        ids = self.tokenizer(self.prompt(messages), return_tensors="pt")["input_ids"]  # (1, T)
        context = getattr(self.model.config, "max_position_embeddings", None) or getattr(
            self.model.config, "n_positions", None)
        if context and ids.shape[1] + max_tokens > context:
            ids = ids[:, -(context - max_tokens):]  # keep the end: the question and the format
        ids = ids.to(self.device)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        sample = temperature > 0
        kwargs = {"do_sample": True, "temperature": temperature} if sample else {"do_sample": False}
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            out = self.model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_tokens,
                                      pad_token_id=pad, **kwargs)
        return self.tokenizer.decode(out[0, ids.shape[1]:], skip_special_tokens=True)


__all__ = ["BackendError", "ChatBackend", "OpenAICompatibleBackend", "TransformersBackend"]
