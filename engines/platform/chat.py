"""Model backends: the one layer through which every area talks to a language model.

``ChatBackend.complete(messages, *, temperature, max_tokens, seed) -> str`` is the protocol of the
areas whose roles chat (collaborators, the video planner, HOI's judge and refiner). Two adapters:

- ``OpenAICompatibleBackend``: POST ``{base_url}/chat/completions`` (OpenAI, vLLM, llama.cpp
  server, Ollama, a hosted endpoint), with per-request timeouts and retries (``RetryPolicy``);
- ``TransformersBackend``: a local causal LM (``from_pretrained`` on a local folder; never
  downloads unless told to).

Both also answer a batch with the first-token probabilities of candidate words
(``generate(prompts, max_tokens, candidates=...) -> list[Completion]``), which the judge area reads
as p("yes") or p("unsafe"): from the logits of the first step locally, from ``top_logprobs`` when an
endpoint returns them.

Secrets and endpoints: an endpoint URL is checked when its backend is made
(``endpoints.check_endpoint_url``); the API key is read only from a declared variable named by
``api_key_env`` (``credentials.api_key``), never passed as a value, and never appears in an error
or a log line. Failures of the endpoint or the model raise ``BackendError`` naming the URL and the
last HTTP status; callers handle unusable replies themselves.

Retries: HTTP 429 and 5xx and transport errors (refused connections, connect and read timeouts)
are tried again, up to ``RetryPolicy.attempts`` tries in all, after an exponential backoff with
jitter, or after the wait a ``Retry-After`` header asks for, while the policy's time budget lasts;
any other 4xx fails at once.
"""

from __future__ import annotations

import email.utils
import logging
import math
import random
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

from engines.platform.credentials import api_key
from engines.platform.endpoints import check_endpoint_url

log = logging.getLogger(__name__)

BODY_SHOWN = 300  # characters of an error response quoted in a BackendError
REDACTED = "[api key]"


class BackendError(RuntimeError):
    """The model backend failed: an HTTP status, a transport error, a malformed response, a model
    that cannot load. ``url`` and ``status`` (the last HTTP status, None without one) say where."""

    def __init__(self, message: str, *, url: str | None = None, status: int | None = None, attempts: int = 1):
        super().__init__(message)
        self.url, self.status, self.attempts = url, status, attempts


@dataclass(frozen=True)
class Completion:
    """A reply and, when the caller named candidate words, their probabilities as its first token
    (None when the backend gives no token probabilities)."""

    text: str
    first_token_probs: dict[str, float] | None = None


@runtime_checkable
class ChatBackend(Protocol):
    def complete(self, messages: list[dict], *, temperature: float, max_tokens: int, seed: int) -> str:
        """Return the assistant's reply to OpenAI-style ``messages`` ([{"role", "content"}, ...])."""
        ...


# ----------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long an endpoint request is tried again.

    Args:
        attempts: tries in all, the first included (1: never retry).
        backoff_s: the wait before the second try; it doubles before each later one.
        max_backoff_s: the longest computed wait (a server's ``Retry-After`` is honoured as given).
        jitter: the random share of each computed wait (0: exact waits; 0.5: between half and all
            of it), so that clients that failed together do not all come back together.
        budget_s: the time from the first try after which no further wait or try begins.
    """

    attempts: int = 4
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    jitter: float = 0.5
    budget_s: float = 120.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not (self.backoff_s >= 0 and self.max_backoff_s >= 0 and self.budget_s >= 0):
            raise ValueError("backoff_s, max_backoff_s and budget_s must be >= 0")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1: the second try)."""
        wait = min(self.max_backoff_s, self.backoff_s * 2 ** (retry - 1))
        return wait * (1 - self.jitter * random.random())


NO_RETRY = RetryPolicy(attempts=1)


def retryable_status(status: int) -> bool:
    """Too many requests, or a server error: worth another try. Any other 4xx will fail again."""
    return status == 429 or 500 <= status <= 599


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (a number or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def pause(seconds: float) -> None:
    """The wait between two tries (one name, so tests can record the waits instead of sleeping)."""
    time.sleep(seconds)


# ----------------------------------------------------------------------------- OpenAI-compatible endpoint


@dataclass
class OpenAICompatibleBackend:
    """Chat completions over HTTP in the OpenAI format, with ``httpx``.

    Args:
        base_url: the API root, e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8000/v1";
            checked when the backend is made (``endpoints.check_endpoint_url``: http(s), a host
            ``HAI_ENDPOINT_HOSTS`` admits), so no caller can send a request, or a key, elsewhere.
        model: the model name sent in each request.
        api_key_env: the declared variable holding the API key (``HAI_API_KEY_*`` or one listed in
            ``HAI_API_KEY_VARIABLES``), read once when the backend is made and sent as
            "Authorization: Bearer <key>"; None, or an unset variable, sends no key.
        timeout: seconds to wait for a response (read, write, pool) on each try.
        connect_timeout: seconds to wait for a connection on each try.
        retry: which failures are tried again, how often and for how long (``RetryPolicy``).
        max_workers: requests in flight at once in ``generate``.
        top_logprobs: alternatives of the first token asked for when ``generate`` has candidates.

    Raises:
        EndpointRefused: ``base_url`` is not an endpoint this server may send requests to.
        SecretRefused: ``api_key_env`` is not a variable declared for API keys.
    """

    base_url: str
    model: str
    _: KW_ONLY
    api_key_env: str | None = None
    timeout: float = 60.0
    connect_timeout: float = 10.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_workers: int = 4
    top_logprobs: int = 5
    _key: str | None = field(default=None, init=False, repr=False, compare=False)
    # One client for all requests: a new one per request costs ~25 ms (TLS context), more than a local model's reply.
    _client: Any = field(default=None, init=False, repr=False, compare=False)
    _lock: Any = field(default_factory=threading.Lock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.base_url = check_endpoint_url(self.base_url, field="base_url")
        self._key = api_key(self.api_key_env, field="api_key_env")
        if not (self.timeout > 0 and self.connect_timeout > 0):
            raise ValueError(f"timeout and connect_timeout must be > 0, got {self.timeout} and {self.connect_timeout}")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def _http(self) -> Any:
        import httpx

        with self._lock:
            if self._client is None:
                self._client = httpx.Client(timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout))
            return self._client

    def close(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _redact(self, text: str) -> str:
        """``text`` without the API key, for messages and logs (a server may echo what it was sent)."""
        return text.replace(self._key, REDACTED) if self._key else text

    def _failed(self, what: str, status: int | None, attempts: int, why: str = "") -> BackendError:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        return BackendError(self._redact(f"POST {self.url} failed{tries}{why}: {what}"), url=self.url, status=status,
                            attempts=attempts)

    def post(self, payload: dict) -> dict:
        """POST ``payload`` to ``/chat/completions`` under the retry policy; the response's JSON object.

        Raises:
            BackendError: a status that is not retried, the last retried failure once the attempts or
                the time budget are spent, or a response that is not a chat completion.
        """
        import httpx

        client, policy = self._http(), self.retry
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        started = time.monotonic()
        for attempt in range(1, policy.attempts + 1):
            status, asked = None, None
            try:
                response = client.post(self.url, json=payload, headers=headers)
            except (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError) as exc:
                what = f"{type(exc).__name__}: {exc}"
            except httpx.HTTPError as exc:  # not a transient failure (e.g. an unsupported protocol)
                raise self._failed(f"{type(exc).__name__}: {exc}", None, attempt) from None
            else:
                status = response.status_code
                if status < 400:
                    return self._chat_completion(response, attempt)
                what = f"HTTP {status}: {response.text[:BODY_SHOWN]!r}"
                if not retryable_status(status):
                    raise self._failed(what, status, attempt)
                asked = retry_after(response.headers.get("Retry-After"))
            if attempt == policy.attempts:
                raise self._failed(what, status, attempt)
            wait = asked if asked is not None else policy.backoff(attempt)
            if time.monotonic() - started + wait > policy.budget_s:
                raise self._failed(what, status, attempt,
                                   f" (waiting {wait:.1f} s more would pass the retry budget of {policy.budget_s:g} s)")
            log.warning("POST %s: %s; try %d of %d in %.1f s", self.url, self._redact(what)[:BODY_SHOWN],
                        attempt + 1, policy.attempts, wait)
            pause(wait)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _chat_completion(self, response: Any, attempts: int) -> dict:
        try:
            data = response.json()
            data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise self._failed(f"HTTP {response.status_code} but not a chat completion: "
                               f"{response.text[:BODY_SHOWN]!r}", response.status_code, attempts) from None
        return data

    def request(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 128,
                seed: int | None = None, **extra: Any) -> dict:
        """The first choice of a chat completion (``message``, and ``logprobs`` when asked for with ``extra``)."""
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": temperature,
                                   "max_tokens": max_tokens}
        if seed is not None:
            payload["seed"] = seed
        return self.post({**payload, **extra})["choices"][0]

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 128,
                 seed: int = 0) -> str:
        return str(self.request(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)["message"]
                   .get("content") or "")

    def generate(self, prompts: Sequence[list[dict]], max_tokens: int, *, candidates: Sequence[str] = (),
                 temperature: float = 0.0, seed: int | None = None) -> list[Completion]:
        """Replies to several conversations, ``max_workers`` at a time, in order; with ``candidates``,
        their first-token probabilities from ``top_logprobs`` when the server returns them."""
        extra = {"logprobs": True, "top_logprobs": self.top_logprobs} if candidates else {}

        def one(messages: list[dict]) -> Completion:
            choice = self.request(messages, temperature=temperature, max_tokens=max_tokens, seed=seed, **extra)
            text = str(choice["message"].get("content") or "")
            return Completion(text, first_token_probs(choice.get("logprobs"), candidates) if candidates else None)

        if len(prompts) <= 1 or self.max_workers <= 1:
            return [one(p) for p in prompts]
        with ThreadPoolExecutor(max_workers=self.max_workers) as pool:
            return list(pool.map(one, prompts))


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


# ----------------------------------------------------------------------------- local transformers model

Prompt = str | list[dict]  # an exact text, read verbatim, or chat messages


class TransformersBackend:
    """A local causal LM via ``transformers`` (CPU float32 by default).

    A prompt is chat messages, rendered with the tokenizer's chat template when it has one (else
    plain "role: content" turns), or an exact text read verbatim (a completion-style judge's
    rendered prompt). Greedy decoding when ``temperature <= 0``, otherwise sampling under
    ``torch.manual_seed(seed)``; prompts longer than the model's context keep their end.

    Args:
        model_or_path: a loaded ``PreTrainedModel`` or a local path / hub name.
        tokenizer: a loaded tokenizer; default ``AutoTokenizer.from_pretrained(model_or_path)``.
        device: torch device.
        local_files_only: with a path or name, never download weights unless set to False.
        batch_size: prompts per forward pass in ``generate`` (left-padded).

    Raises:
        BackendError: no causal LM can be loaded from the path.
    """

    def __init__(self, model_or_path: Any, tokenizer: Any = None, *, device: str = "cpu",
                 local_files_only: bool = True, batch_size: int = 8):
        import os

        from transformers import AutoModelForCausalLM, AutoTokenizer

        if isinstance(model_or_path, str | os.PathLike):
            path = str(model_or_path)
            try:
                self.model = AutoModelForCausalLM.from_pretrained(path, local_files_only=local_files_only)
                if tokenizer is None:
                    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_files_only)
            except OSError as exc:
                raise BackendError(f"cannot load a causal LM from {path!r}: {exc}") from exc
            self.source = path
        else:
            self.model = model_or_path
            self.source = type(self.model).__name__
        if tokenizer is None:
            raise ValueError("a tokenizer is required when passing a loaded model")
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = max(1, int(batch_size))
        self.model.to(device).eval()

    def _templated(self, prompt: Prompt) -> bool:
        return not isinstance(prompt, str) and bool(getattr(self.tokenizer, "chat_template", None))

    def render(self, prompt: Prompt) -> str:
        """The string the model reads: an exact text as is, else the chat template, else plain turns."""
        if isinstance(prompt, str):
            return prompt
        if self._templated(prompt):
            return self.tokenizer.apply_chat_template(prompt, tokenize=False, add_generation_prompt=True)
        return "".join(f"{m['role']}: {m['content']}\n" for m in prompt) + "assistant:"

    def encode(self, prompt: Prompt) -> list[int]:
        """Token ids of ``render(prompt)``. The tokenizer adds its BOS token, except to a chat template's
        output, which already starts with it (the same ids as ``apply_chat_template(..., tokenize=True)``)."""
        add_special = not self._templated(prompt)
        return list(self.tokenizer(self.render(prompt), add_special_tokens=add_special)["input_ids"])

    def first_token_ids(self, word: str) -> set[int]:
        """First token ids of the word as the model may start its reply with it: "yes" and " yes"."""
        ids = set()
        for variant in (word, " " + word):
            encoded = self.tokenizer.encode(variant, add_special_tokens=False)
            if encoded:
                ids.add(int(encoded[0]))
        return ids

    def candidate_ids(self, candidates: Sequence[str]) -> dict[str, list[int]] | None:
        """Each candidate's first token ids; None when there are none, or when two candidates share a
        first token (then the first token cannot tell them apart)."""
        if not candidates:
            return None
        ids = {c: sorted(self.first_token_ids(c)) for c in candidates}
        seen: set[int] = set()
        for token_ids in ids.values():
            if seen & set(token_ids) or not token_ids:
                return None
            seen |= set(token_ids)
        return ids

    def context_limit(self) -> int | None:
        config = self.model.config
        return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", None)

    def complete(self, messages: list[dict], *, temperature: float = 0.0, max_tokens: int = 128,
                 seed: int = 0) -> str:
        return self.generate([messages], max_tokens, temperature=temperature, seed=seed)[0].text

    def generate(self, prompts: Sequence[Prompt], max_tokens: int, *, candidates: Sequence[str] = (),
                 temperature: float = 0.0, seed: int = 0) -> list[Completion]:
        """Replies to ``prompts``, ``batch_size`` at a time, in order; with ``candidates``, their
        probabilities as the first generated token (from the first step's logits)."""
        candidate_ids = self.candidate_ids(candidates)
        out: list[Completion] = []
        for start in range(0, len(prompts), self.batch_size):
            rows = [self.encode(p) for p in prompts[start:start + self.batch_size]]
            out.extend(self._generate_batch(rows, max_tokens, candidate_ids, temperature, seed))
        return out

    def _generate_batch(self, rows: list[list[int]], max_tokens: int, candidate_ids: dict[str, list[int]] | None,
                        temperature: float, seed: int) -> list[Completion]:
        import torch

        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        pad = 0 if pad is None else pad
        limit = self.context_limit()
        if limit:
            # Keep the end of an over-long prompt: it holds the question and the answer format
            # (HarmBench's classifier tokenizer truncates on the left too).
            keep = max(1, limit - max_tokens)
            rows = [r[-keep:] for r in rows]
        width = max(len(r) for r in rows)
        ids = torch.full((len(rows), width), pad, dtype=torch.long)  # (B, T), padded on the left
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, width - len(row):] = torch.tensor(row, dtype=torch.long)
            mask[i, width - len(row):] = 1
        decoding = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            out = self.model.generate(ids.to(self.device), attention_mask=mask.to(self.device),
                                      max_new_tokens=max_tokens, pad_token_id=pad, return_dict_in_generate=True,
                                      output_logits=candidate_ids is not None, **decoding)
        first = out.logits[0].float().softmax(dim=-1).cpu() if candidate_ids is not None else None  # (B, V)
        completions = []
        for i in range(len(rows)):
            text = tok.decode(out.sequences[i, width:], skip_special_tokens=True)
            probs = None
            if first is not None:
                probs = {c: float(first[i, token_ids].sum()) for c, token_ids in candidate_ids.items()}
            completions.append(Completion(text, probs))
        return completions


__all__ = ["NO_RETRY", "BackendError", "ChatBackend", "Completion", "OpenAICompatibleBackend", "Prompt",
           "RetryPolicy", "TransformersBackend", "first_token_probs", "pause", "retry_after", "retryable_status"]
