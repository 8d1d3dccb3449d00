"""The judge area's model role: a text generator that answers a judge's prompt (``TextGenerator``).

One small ``Protocol``: ``complete(prompts, max_new_tokens, *, candidates=()) -> list[Completion]``,
greedy, one ``Completion(text, first_token_probs)`` per prompt. ``first_token_probs`` maps each
candidate answer word ("yes"/"no", "safe"/"unsafe") to its probability as the first generated
token, so LlamaGuard-3's p(unsafe) and the HarmBench classifier's p(yes) can be swept over a
threshold (``docs/judge.md``, "Judging"); None when the backend gives no token probabilities.

The models themselves are the platform's backends (``engines.platform.chat``: timeouts, retries,
the endpoint and key checks); ``ModelGenerator`` puts one behind this protocol:

- ``TransformersBackend``: a local causal LM. It reads a prompt's exact ``text`` when the judge has
  one (HarmBench's ``[INST]`` prompt, LlamaGuard-3's rendered template), else the chat messages
  through the tokenizer's chat template. Probabilities come from the first step's logits.
- ``OpenAICompatibleBackend``: an OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp's
  server, hosted APIs); it reads the chat messages, asks for ``logprobs``/``top_logprobs`` when the
  judge has candidate words and uses them when the server returns them.

``get_backend("transformers:PATH")`` / ``get_backend("openai:URL#MODEL")`` builds one from the
command line's ``--backend``; the endpoint's key is read from the declared variable
``HAI_API_KEY_JUDGE`` when it is set. The offline default judges (string matching, the learned
MiniLM judge) need no backend at all. Tests drive both with a tiny randomly initialised Llama and a
local HTTP server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from engines.judge.prompts import JudgePrompt
from engines.platform.chat import Completion, OpenAICompatibleBackend, TransformersBackend
from engines.platform.credentials import API_KEY_PREFIX
from engines.platform.registries import Registry
from engines.platform.torch_device import resolve_device

API_KEY_VARIABLE = f"{API_KEY_PREFIX}JUDGE"  # a declared API-key variable (engines.platform.credentials)


@runtime_checkable
class TextGenerator(Protocol):
    """A model that answers judge prompts. ``backend_id`` names it in cache keys (same id: same answers)."""

    backend_id: str

    def complete(self, prompts: Sequence[JudgePrompt], max_new_tokens: int, *,
                 candidates: Sequence[str] = ()) -> list[Completion]:
        """Greedy replies, one per prompt, in order."""
        ...


Model = TransformersBackend | OpenAICompatibleBackend


def model_id(model: Model) -> str:
    """The name of a platform backend in cache keys: ``transformers:<folder or model class>`` or
    ``openai:<base_url>#<model>``."""
    if isinstance(model, TransformersBackend):
        return f"transformers:{model.source}"
    return f"openai:{model.base_url.rstrip('/')}#{model.model}"


class ModelGenerator:
    """A platform backend as the judges' ``TextGenerator``, greedy.

    Args:
        backend: a ``TransformersBackend`` (exact texts read verbatim, chat prompts through the
            chat template) or an ``OpenAICompatibleBackend`` (chat messages).
        backend_id: the name in cache keys; default ``model_id(backend)``.
    """

    def __init__(self, backend: Model, backend_id: str | None = None):
        self.backend = backend
        self.backend_id = backend_id or model_id(backend)

    @property
    def tokenizer(self) -> Any:
        """The local model's tokenizer (HarmBench clips generations with it); None for an endpoint."""
        return getattr(self.backend, "tokenizer", None)

    def prompt(self, prompt: JudgePrompt) -> str | list[dict]:
        """What the backend reads: the judge's exact text for a local model when it has one, else the messages."""
        if prompt.text is not None and isinstance(self.backend, TransformersBackend):
            return prompt.text
        return prompt.chat()

    def complete(self, prompts: Sequence[JudgePrompt], max_new_tokens: int, *,
                 candidates: Sequence[str] = ()) -> list[Completion]:
        return self.backend.generate([self.prompt(p) for p in prompts], max_new_tokens, candidates=candidates,
                                     temperature=0.0)


def as_generator(backend: TextGenerator | Model | str) -> TextGenerator:
    """A ``TextGenerator`` from a ``--backend`` spec, a platform backend, or one already."""
    if isinstance(backend, str):
        return get_backend(backend)
    if isinstance(backend, TransformersBackend | OpenAICompatibleBackend):
        return ModelGenerator(backend)
    return backend


# ----------------------------------------------------------------------------- registry

BackendFactory = Callable[[str], TextGenerator]
BACKENDS: Registry[tuple[BackendFactory, str]] = Registry("judge", "judge backends")


def register_backend(scheme: str, usage: str) -> Callable[[BackendFactory], BackendFactory]:
    """Decorator: make ``--backend <scheme>:<rest>`` build a backend with ``factory(rest)``."""

    def wrap(factory: BackendFactory) -> BackendFactory:
        BACKENDS.add(scheme, (factory, usage), usage)
        return factory

    return wrap


@register_backend("transformers", "transformers:PATH (a local model folder; device from $HAI_DEVICE)")
def _transformers(rest: str) -> TextGenerator:
    return ModelGenerator(TransformersBackend(rest, device=str(resolve_device())))


@register_backend("openai", f"openai:URL#MODEL (an OpenAI-compatible endpoint; key from ${API_KEY_VARIABLE})")
def _openai(rest: str) -> TextGenerator:
    url, sep, model = rest.rpartition("#")
    if not sep or not url or not model:
        raise ValueError(f"--backend openai:URL#MODEL needs both parts, got openai:{rest}")
    return ModelGenerator(OpenAICompatibleBackend(url, model, api_key_env=API_KEY_VARIABLE))


def get_backend(spec: str) -> TextGenerator:
    """A backend from ``SCHEME:REST`` (``transformers:PATH``, ``openai:URL#MODEL``).

    Raises:
        ValueError: an unknown scheme or a malformed spec (the message lists the known forms), or an
            endpoint URL this server may not send requests to (``EndpointRefused``).
        BackendError: a local model that cannot be loaded.
    """
    scheme, sep, rest = spec.partition(":")
    if not sep or scheme not in BACKENDS or not rest:
        forms = "; ".join(usage for _, usage in BACKENDS.values())
        raise ValueError(f"unknown backend {spec!r}; use one of: {forms}")
    return BACKENDS[scheme][0](rest)


__all__ = ["API_KEY_VARIABLE", "BACKENDS", "Completion", "ModelGenerator", "TextGenerator", "as_generator",
           "get_backend", "model_id", "register_backend"]
