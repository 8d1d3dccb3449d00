"""The LLM collaborator against a local fake OpenAI-compatible server and a tiny random transformers model."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.collab.backends import BackendError, ChatBackend, OpenAICompatibleBackend, TransformersBackend
from engines.collab.llm_human import (
    LLMCollaborator,
    Reply,
    ReplyError,
    TaskView,
    medical_views,
    parse_reply,
    play,
    shape_view,
)
from engines.collab.medical import generate_cases
from engines.collab.rules import Prefix
from engines.collab.shapes import N_LABELS, generate_task
from engines.platform.chat import NO_RETRY
from tests.collab.fake_llm import FakeServer, tiny_gpt2


@pytest.fixture
def server():
    srv = FakeServer()
    yield srv
    srv.close()


def _reply(answer, confidence=3, final=False) -> str:
    return json.dumps({"answer": answer, "confidence": confidence, "final": final})


def _fixed_ai(mask_labels, n_labels):
    seen: list[Prefix] = []

    def ai(prefix: Prefix) -> np.ndarray:
        seen.append(prefix)
        mask = np.zeros(n_labels, dtype=bool)
        mask[list(mask_labels)] = True
        return mask

    return ai, seen


def test_backend_protocol_and_request_format(server, monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_COLLAB_TEST", "sk-test")
    backend = OpenAICompatibleBackend(server.url, model="fake-model", api_key_env="HAI_API_KEY_COLLAB_TEST", timeout=5)
    assert isinstance(backend, ChatBackend)
    server.replies = ["hello"]
    assert backend.complete([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=7, seed=3) == "hello"
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer sk-test"
    assert request["body"] == {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}],
                               "temperature": 0.0, "max_tokens": 7, "seed": 3}


def test_shape_task_three_rounds(server):
    task = generate_task(4, "medium")
    server.replies = [_reply(task.count + 1, 2), _reply(task.count, 3), _reply(task.count, 4),
                      _reply(str(task.count), 5, True)]
    person = LLMCollaborator(OpenAICompatibleBackend(server.url, "m"), shape_view(task), rounds=3)
    ai, seen = _fixed_ai([task.count], N_LABELS)
    result = play(person, ai)
    assert result.answers == [task.count + 1, task.count, task.count, task.count]
    assert [r.confidence_raw for r in result.records] == [2, 3, 4, 5]
    assert result.records[0].confidence == 0.25 and result.records[-1].confidence == 1.0
    assert len(result.ai_sets) == 3 and person.stopped and result.parse_failures == 0
    # Records look like humans.py output: answer index, belief set {answer}, confidence in [0, 1].
    for r in result.records:
        assert r.belief_set.shape == (N_LABELS,) and r.belief_set.sum() == 1 and r.belief_set[r.answer]
    assert [p.round for p in seen] == [1, 2, 3]
    assert seen[2].ai_sets.shape == (2, N_LABELS)
    # The prompts carry the scene, the previous answers and the AI set.
    first = server.requests[0]["body"]["messages"][1]["content"]
    assert task.describe() in first and "AI assistant" not in first and task.question in first
    later = server.requests[2]["body"]["messages"][1]["content"]
    assert f"round 2: {task.count} (confidence 3)" in later
    assert f"The AI assistant says the answer is one of: {task.count}." in later


def test_medical_case_reveals_evidence_and_stops_on_final(server):
    case = generate_cases(1, 1)[0]
    views = medical_views(case, rounds=3)
    assert len(views[0].description) < len(views[-1].description)
    wrong = next(name for name in case.labels if name != case.PATHOLOGY)
    server.replies = [_reply(wrong, 2), _reply(case.PATHOLOGY.upper(), 4, final=True)]
    person = LLMCollaborator(OpenAICompatibleBackend(server.url, "m"), views, rounds=3, persona="You trust the AI.")
    result = play(person, _fixed_ai([case.label], len(case.labels))[0])
    assert result.answers == [case.labels.index(wrong), case.label]
    assert len(result.ai_sets) == 1 and person.stopped  # "final" ends the interaction early
    prompts = [r["body"]["messages"] for r in server.requests]
    assert "You trust the AI." in prompts[0][0]["content"]
    assert views[0].description in prompts[0][1]["content"]
    assert views[1].description in prompts[1][1]["content"]
    assert case.PATHOLOGY in prompts[0][1]["content"]  # in the allowed answers list


def test_malformed_replies_retry_then_fall_back(server):
    task = generate_task(9, "easy")
    server.replies = [
        "I think there are three triangles.",  # round 1: prose ...
        'Sure! ```json\n{"answer": 3, "confidence": 4, "final": false}\n```',  # ... the retry parses
        _reply(42, 3),  # round 2: not a label ...
        '{"answer": 5, "confidence": 3, "final": fal',  # ... and invalid JSON: keeps the previous answer
        _reply(4, 9),  # round 3: confidence out of range ...
        _reply(4, "4"),  # ... the retry parses (a numeric string is accepted)
    ]
    person = LLMCollaborator(OpenAICompatibleBackend(server.url, "m"), shape_view(task), rounds=2)
    result = play(person, _fixed_ai([3, 4], N_LABELS)[0])
    r1, r2, r3 = result.records
    assert (r1.answer, r1.retried, r1.fallback, r1.parse_error) == (3, True, False, None)
    assert (r2.answer, r2.confidence_raw, r2.fallback) == (3, 4, True)
    assert "no JSON object" in r2.parse_error and len(r2.replies) == 2
    assert (r3.answer, r3.confidence_raw, r3.retried, r3.fallback) == (4, 4, True, False)
    assert result.parse_failures == 1
    retry_messages = server.requests[1]["body"]["messages"]
    assert retry_messages[-2]["role"] == "assistant" and "could not be used" in retry_messages[-1]["content"]


def test_round_one_failure_falls_back_to_first_label(server):
    server.replies = ["no idea", "still no idea"]
    person = LLMCollaborator(OpenAICompatibleBackend(server.url, "m"), shape_view(generate_task(1, "easy")))
    assert (person.answer(), person.confidence()) == (0, 0.0)
    assert person.records[0].fallback and person.belief_set().sum() == 1


def test_parse_reply_rules():
    labels = ("Influenza", "Migraine")
    assert parse_reply('{"answer": "migraine", "confidence": 2}', labels).answer == 1
    assert parse_reply('{"answer": "Influenza", "confidence": 4.0, "final": "true"}', labels) == Reply(0, 4, True)
    with pytest.raises(ReplyError, match="no \"answer\""):  # the first JSON object is the one used
        parse_reply('x {"a": 1} {"answer": "Influenza", "confidence": 5}', labels)
    with pytest.raises(ReplyError, match="not one of the allowed labels"):
        parse_reply('{"answer": "Flu", "confidence": 3}', labels)
    with pytest.raises(ReplyError, match="confidence"):
        parse_reply('{"answer": "Migraine", "confidence": 0}', labels)
    with pytest.raises(ReplyError, match="confidence"):
        parse_reply('{"answer": "Migraine"}', labels)
    with pytest.raises(ReplyError, match="no JSON object"):
        parse_reply("{not json}", labels)


def test_http_error_names_the_status(server):
    server.status = 500
    backend = OpenAICompatibleBackend(server.url, "m", retry=NO_RETRY)
    with pytest.raises(BackendError, match=r"HTTP 500.*model crashed"):
        backend.complete([{"role": "user", "content": "hi"}], temperature=0, max_tokens=5, seed=0)
    person = LLMCollaborator(backend, shape_view(generate_task(2, "easy")))
    with pytest.raises(BackendError, match="HTTP 500"):
        person.answer()


def test_unreachable_server_is_a_backend_error():
    srv = FakeServer()
    url = srv.url
    srv.close()
    with pytest.raises(BackendError, match="failed"):
        OpenAICompatibleBackend(url, "m", timeout=2, retry=NO_RETRY).complete([], temperature=0, max_tokens=1, seed=0)


# ---------------------------------------------------------------- a tiny local transformers model


def test_transformers_backend_runs_and_garbage_falls_back():
    model, tokenizer = tiny_gpt2()
    backend = TransformersBackend(model, tokenizer)
    assert isinstance(backend, ChatBackend)
    messages = [{"role": "user", "content": "How many triangles ?"}]
    out = backend.complete(messages, temperature=0.0, max_tokens=6, seed=1)
    assert isinstance(out, str)
    assert out == backend.complete(messages, temperature=0.0, max_tokens=6, seed=2)  # greedy: seed-free
    sampled = backend.complete(messages, temperature=1.0, max_tokens=6, seed=5)
    assert sampled == backend.complete(messages, temperature=1.0, max_tokens=6, seed=5)  # seeded sampling

    # A long scene is cut to the model's context (256 positions) instead of failing.
    person = LLMCollaborator(backend, shape_view(generate_task(3, "hard")), rounds=2, max_tokens=6)
    result = play(person, _fixed_ai([1, 2], N_LABELS)[0])
    assert len(result.records) == 3 and result.parse_failures == 3
    assert all(r.answer == 0 and r.fallback for r in result.records)  # garbage: first label, then kept

    # With a chat template the template renders the prompt.
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }} : {{ m['content'] }} {% endfor %}assistant :"
    assert backend.render(messages).endswith("assistant :")
    assert isinstance(backend.complete(messages, temperature=0.0, max_tokens=3, seed=0), str)


def test_views_share_one_label_space():
    a = TaskView("x", "q?", ("0", "1"))
    b = TaskView("y", "q?", ("A", "B"))
    with pytest.raises(ValueError, match="label space"):
        LLMCollaborator(object(), [a, b])
