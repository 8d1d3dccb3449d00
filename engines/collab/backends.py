"""Model backends of the collaboration area: the chat model that plays the human (``ChatBackend``).

LLM collaborators: ``docs/collab.md``, Method, "Tasks, AI and simulated collaborators". The protocol
and its adapters (an OpenAI-compatible endpoint, a local transformers model) live in
``engines.platform.chat``, shared with the other areas whose roles talk to an LLM; they are
re-exported here.

Offline default and tests: a local fake endpoint with a scripted participant
(``tests/collab/fake_llm.py``) and a tiny randomly initialised GPT-2 built from config. The
collaborator (``engines.collab.llm_human``) handles unusable replies itself.
"""

from __future__ import annotations

from engines.platform.chat import BackendError, ChatBackend, OpenAICompatibleBackend, TransformersBackend

__all__ = ["BackendError", "ChatBackend", "OpenAICompatibleBackend", "TransformersBackend"]
