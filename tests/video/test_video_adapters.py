"""The real adapters with tiny randomly initialised models built from config (nothing downloads):
the LLM planner over an OpenAI-compatible endpoint and a local GPT-2, the CLIP scoring inspector,
and a whole run of the agent with each."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engines.platform.chat import OpenAICompatibleBackend, TransformersBackend
from engines.video import backends
from engines.video.adapters import LLMPlanner, ScoringInspector, parse_action
from engines.video.agent import AgentConfig, answer
from engines.video.questions import Question
from engines.video.roles import FRAME_MODEL, Finalize, Retrieve, Roles
from engines.video.spans import Span
from engines.video.synthetic import SyntheticConfig, generate
from engines.video.trajectory import Hit
from tests.collab.fake_llm import FakeServer, tiny_gpt2

QUESTION = Question(uid="q", video_id="v", question="What colour are the circles on screen?",
                    options=("red", "blue", "green"), answer="B", benchmark="synthetic", gt_spans=(Span(20, 30),))


@pytest.fixture(scope="module")
def video(tmp_path_factory):
    out = tmp_path_factory.mktemp("adapters")
    [script] = generate(out, SyntheticConfig(minutes=1, seed=4))
    return str(out / f"{script.video_id}.mp4")


@pytest.fixture
def server():
    fake = FakeServer()
    yield fake
    fake.close()


class FixedRetriever:
    def search(self, query, *, top_k=30):
        return [Hit(Span(16, 32), 1.0, "Visual: circles. Dialogue: here we are.", "caption")]


def test_actions_are_read_from_the_first_json_object():
    assert parse_action('Sure. {"action": "retrieve", "query": "blue circles"} done') == Retrieve(
        "blue circles", "LLM planner: search")
    inspect = parse_action('{"action": "inspect", "spans": [["00:00:20", "00:00:35"]], "context": "circles"}')
    assert inspect.spans == (Span(20, 35),) and inspect.context == "circles"
    assert isinstance(parse_action('{"action": "finish"}'), Finalize)
    for reply, problem in (("no json here", "no JSON object"), ('{"action": "inspect", "spans": []}', "needs spans"),
                           ('{"action": "inspect", "spans": [["soon", "later"]]}', "not a pair of times"),
                           ('{"action": "dance"}', "unknown or incomplete action"),
                           ('{"action": "retrieve", "query": ', "no JSON object")):
        with pytest.raises(ValueError, match=problem):
            parse_action(reply)
    with pytest.raises(ValueError, match="outside the video"):
        parse_action('{"action": "inspect", "spans": [["01:00:00", "01:00:10"]]}', duration=600)


def test_the_endpoint_planner_follows_the_models_actions(server, video):
    server.replies = ['{"action": "retrieve", "query": "circles"}',
                      '{"action": "inspect", "spans": [["00:00:16", "00:00:32"]], "context": "count the circles"}',
                      '{"action": "finish"}']
    planner = backends.planner("llm-endpoint", base_url=server.url, model="planner-model")

    class Sure:
        name = "sure"

        def inspect(self, reader, spans, question, **kwargs):
            from engines.video.roles import Inspection
            from engines.video.trajectory import Verdict

            return Inspection(Verdict("SEARCH_MORE", None, 0.1, "", (), missing="unclear"), [])

    t = answer(QUESTION, video, Roles(planner, Sure(), lambda path: FixedRetriever()), AgentConfig(max_steps=6))
    assert [s.action for s in t.steps][:3] == ["retrieve", "inspect", "finalize"]
    assert t.steps[1].spans == (Span(16, 32),) and t.steps[1].args["context"] == "count the circles"
    sent = server.requests[1]["body"]
    assert sent["model"] == "planner-model" and sent["messages"][0]["content"].startswith("You plan how to answer")
    assert "Step 1: searched 'circles'" in sent["messages"][1]["content"]
    assert "(A) red\n(B) blue\n(C) green" in sent["messages"][1]["content"]


def test_an_unusable_reply_falls_back_to_the_heuristic_step_and_says_so(server):
    server.replies = ["I would look at the circles first."]
    planner = LLMPlanner(OpenAICompatibleBackend(server.url, "m"), "llm")
    action = planner.act(QUESTION, (), 8)
    assert isinstance(action, Retrieve) and action.query == QUESTION.question
    assert action.thought.startswith("Unusable planner reply (no JSON object in the reply)") and planner.unusable == 1


def test_a_tiny_local_gpt2_plans_a_whole_run(video):
    model, tokenizer = tiny_gpt2()
    planner = LLMPlanner(TransformersBackend(model, tokenizer), "llm-transformers:tiny", max_tokens=8)
    if not FRAME_MODEL.is_file():
        pytest.skip("the shipped frame model is written by train-inspector")
    inspector = backends.inspector("frame-model")
    t = answer(QUESTION, video, Roles(planner, inspector, lambda path: FixedRetriever()), AgentConfig(max_steps=3))
    # Random weights write no usable JSON: every step is the heuristic's, and the run still ends in an answer.
    assert planner.unusable >= 1 and t.final.answer in QUESTION.letters
    assert t.models["planner"] == "llm-transformers:tiny"


def tiny_clip():
    """A randomly initialised CLIP (1 layer per tower, 32 x 32 images) and a processor of the same shape
    as ``CLIPProcessor``'s call: text through a word-level tokenizer, images resized to 32 x 32."""
    import torch
    from PIL import Image
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import CLIPConfig, CLIPModel, PreTrainedTokenizerFast

    words = ["[UNK]", "[PAD]", "a", "video", "frame", "showing", "red", "blue", "green"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", model_max_length=8)
    torch.manual_seed(0)
    config = CLIPConfig(text_config={"vocab_size": len(words), "hidden_size": 16, "intermediate_size": 32,
                                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 8,
                                     "bos_token_id": 0, "eos_token_id": 2, "pad_token_id": 1},
                        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                                       "num_attention_heads": 2, "image_size": 32, "patch_size": 8},
                        projection_dim=8)
    model = CLIPModel(config)

    def processor(*, text, images, return_tensors, padding, truncation):
        encoded = tokenizer(text, return_tensors=return_tensors, padding=padding, truncation=truncation)
        pixels = np.stack([np.asarray(Image.fromarray(image).resize((32, 32)), np.float32) / 255.0 for image in images])
        encoded["pixel_values"] = torch.from_numpy(pixels).permute(0, 3, 1, 2).contiguous()
        return encoded

    return model, processor


def test_the_clip_inspector_scores_every_frame_against_every_option(video):
    model, processor = tiny_clip()
    inspector = backends.inspector("clip", path="tiny", model=model, processor=processor)
    assert isinstance(inspector, ScoringInspector) and inspector.name == "clip:tiny"
    from engines.video.decode import open_video

    with open_video(video) as reader:
        frames = reader.frames_at([5.0, 25.0])
        shares = inspector.option_shares(frames, QUESTION.options)
        seen = inspector.inspect(reader, [Span(20, 30)], QUESTION, max_frames=6)
        forced = inspector.inspect(reader, [Span(20, 30)], QUESTION, max_frames=6, answer_only=True)
    assert shares.shape == (2, 3) and np.allclose(shares.sum(axis=1), 1.0)
    # Random weights cannot be sure of anything among three options: a search-more verdict, unless forced.
    assert seen.verdict.status == "SEARCH_MORE" and seen.verdict.search_more_type == "VISUAL_UNCLEAR"
    assert forced.verdict.status == "ANSWER" and forced.verdict.answer in QUESTION.letters
    assert len(seen.frames) == 6 and all(20 <= t <= 30 for t in forced.verdict.cited_times)
    assert json.dumps(forced.verdict.evidence).count("image-text similarity") == 1


def test_the_planner_options_reach_the_factory_from_the_command_line(server, video, tmp_path):
    from engines.video.cli import _options

    assert _options(["base_url=http://x/v1", "model=m=1"]) == {"base_url": "http://x/v1", "model": "m=1"}
    with pytest.raises(ValueError, match="a role option is KEY=VALUE, got 'model'"):
        _options(["model"])


def tiny_llava():
    """A randomly initialised LLaVA (CLIP vision tower of 16 x 16 images, one Llama layer) with a
    word-level tokenizer and a chat template: an image-text-to-text model as the VLM inspector loads."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    words = ["[UNK]", "[PAD]", "[EOS]", "<image>", "Answer:", "A", "B", "C", "SEARCH_MORE", "Evidence:",
             "Confidence:", "0.97", "user", "assistant"]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", eos_token="[EOS]")
    tokenizer.add_special_tokens({"additional_special_tokens": ["<image>"]})
    template = ("{% for m in messages %}{{ m['role'] }} {% for c in m['content'] %}{% if c['type'] == 'image' %}"
                "<image> {% else %}{{ c['text'] }} {% endif %}{% endfor %}{% endfor %}"
                "{% if add_generation_prompt %}assistant {% endif %}")
    processor = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 16},
                                                                  crop_size={"height": 16, "width": 16}),
                               tokenizer=tokenizer, patch_size=8, vision_feature_select_strategy="default",
                               chat_template=template, num_additional_image_tokens=1)
    torch.manual_seed(0)
    config = LlavaConfig(
        vision_config=CLIPVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                       image_size=16, patch_size=8),
        text_config=LlamaConfig(vocab_size=len(words), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=1024,
                                pad_token_id=1, eos_token_id=2, bos_token_id=0),
        image_token_index=3, vision_feature_select_strategy="default", vision_feature_layer=-1)
    return LlavaForConditionalGeneration(config), processor


def test_the_vlm_inspector_tags_frames_with_times_and_parses_the_reply(video):
    from engines.video.decode import open_video

    model, processor = tiny_llava()
    inspector = backends.inspector("vlm-transformers", path="tiny", model=model, processor=processor)
    messages = inspector.messages([1.0, 2.5], QUESTION, "look for circles")
    content = messages[0]["content"]
    assert [c.get("text") for c in content[:4]] == ["[1.000 second]", None, "[2.500 second]", None]
    assert "(A) red\n(B) blue\n(C) green" in content[-1]["text"] and "look for circles" in content[-1]["text"]
    with open_video(video) as reader:
        seen = inspector.inspect(reader, [Span(20, 30)], QUESTION, max_frames=4)
        forced = inspector.inspect(reader, [Span(20, 30)], QUESTION, max_frames=4, answer_only=True)
    # The reply is kept and read by upstream's parser as it is; a forced inspection always names a letter.
    from engines.video.gate import parse_verdict

    assert seen.raw and len(seen.frames) == 4 and seen.verdict == parse_verdict(seen.raw)
    assert forced.verdict.status == "ANSWER" and forced.verdict.answer in QUESTION.letters
