"""SCPE's prompt refiner on a chat model (``engines.hoi.adapters.ChatRefiner``), with a scripted chat
backend: what each call sends, how replies become the prompt, the insight and playbook operations,
and that a reply missing what is asked is an error naming it (the SCPE loop records it as a failure)."""

from __future__ import annotations

import pytest
from PIL import Image

from engines.hoi.adapters import ChatRefiner, openai_refiner
from engines.hoi.judge_replies import JudgeReplyError
from engines.hoi.roles import Insight, PlaybookOperation, VideoReport


class ScriptedChat:
    def __init__(self, *replies: str):
        self.replies, self.calls = list(replies), []

    def complete(self, messages, *, temperature, max_tokens, seed):
        self.calls.append({"messages": messages, "temperature": temperature})
        return self.replies.pop(0)


def _text(call) -> str:
    return " ".join(part["text"] for part in call["messages"][0]["content"] if part["type"] == "text")


def test_generate_sends_the_photo_the_instruction_and_the_playbook():
    chat = ScriptedChat('```json\n{"reasoning": "fixed camera", "enhanced_prompt": "The person lifts the cup."}\n```')
    prompt = ChatRefiner(chat, "test").generate(Image.new("RGB", (8, 8)), "pick up the cup", "[strategy-001]: keep still")
    assert prompt.enhanced_prompt == "The person lifts the cup." and prompt.reasoning == "fixed camera"
    [call] = chat.calls
    assert call["temperature"] == 0.5  # upstream's generator temperature
    assert "pick up the cup" in _text(call) and "[strategy-001]: keep still" in _text(call)
    assert [p["type"] for p in call["messages"][0]["content"]] == ["text", "image_url"]


def test_reflect_and_curate_turn_a_critique_into_operations():
    chat = ScriptedChat('{"root_cause": "stopped short", "key_insight": "say the motion ends in contact"}',
                        '{"operations": [{"type": "add", "section": "strategies", "content": "End with contact."}]}')
    refiner = ChatRefiner(chat, "test")
    insight = refiner.reflect(VideoReport(False, "the hand never reaches the cup"), "lift it", "pick up the cup")
    assert insight == Insight("stopped short", "say the motion ends in contact")
    assert "the hand never reaches the cup" in _text(chat.calls[0]) and chat.calls[0]["temperature"] == 0.1
    assert refiner.curate(insight, "") == [PlaybookOperation("strategies", "End with contact.", "ADD")]


@pytest.mark.parametrize(("call", "reply", "words"), [
    ("generate", '{"reasoning": "x"}', "no enhanced_prompt"),
    ("reflect", '{"root_cause": "x"}', "no key_insight"),
    ("curate", '{"ops": []}', "no operations list"),
    ("curate", '{"operations": [{"type": "ADD", "section": "tips", "content": "x"}]}',
     "curator operation 1: section: must be one of 'strategies', 'templates' or 'pitfalls' \\(got 'tips'\\)"),
])
def test_a_reply_missing_what_is_asked_is_an_error_naming_it(call, reply, words):
    refiner = ChatRefiner(ScriptedChat(reply), "test")
    arguments = {"generate": (Image.new("RGB", (4, 4)), "i", ""), "reflect": (VideoReport(False, "c"), "p", "i"),
                 "curate": (Insight("r", "k"), "")}[call]
    with pytest.raises(JudgeReplyError, match=words):
        getattr(refiner, call)(*arguments)


def test_the_openai_refiner_needs_a_model_name():
    with pytest.raises(ValueError, match="needs a model name"):
        openai_refiner()
