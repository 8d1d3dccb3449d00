"""Tests of ``engines.hoi.adapters``: the OpenAI-compatible judge against a local fake endpoint that
records each request, the transformers grounder with tiny randomly initialised OWLv2 and Grounding
DINO built from config (tokenizers from a WordLevel vocabulary: nothing is downloaded), and the
template tracker on images whose answer is known by construction."""

from __future__ import annotations

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from PIL import Image

from engines.hoi.adapters import (
    ChatJudge,
    TransformersGrounder,
    locate_template,
    normalized_correlation,
    transformers_grounder,
)
from engines.hoi.judge_replies import JudgeReplyError, match_fields, parse_yes_no
from engines.hoi.roles import FrameChoice, make
from engines.platform.chat import BackendError

# ---------------------------------------------------------------- a fake chat-completions endpoint


class FakeEndpoint:
    """Answers POST /v1/chat/completions with the queued replies, in order, and keeps each request."""

    def __init__(self, replies: list[str], status: int = 200) -> None:
        self.replies, self.status, self.requests, self.headers = list(replies), status, [], []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.requests.append(body)
                endpoint.headers.append(dict(self.headers))
                reply = endpoint.replies.pop(0) if endpoint.replies else ""
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
                self.send_response(endpoint.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def _judge(endpoint: FakeEndpoint, **options) -> ChatJudge:
    import engines.hoi.adapters  # noqa: F401  (registers "openai")

    return make("judge", "openai", model="vlm-test", base_url=endpoint.base_url, **options)


def _images(request: dict) -> list[Image.Image]:
    """The images a request carried, decoded from their data URLs."""
    out = []
    for part in request["messages"][0]["content"]:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/png;base64,")
            out.append(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))
    return out


def _texts(request: dict) -> list[str]:
    return [part["text"] for part in request["messages"][0]["content"] if part["type"] == "text"]


def _solid(color, size=(40, 30)) -> Image.Image:
    return Image.new("RGB", size, color)


# ---------------------------------------------------------------- the judge


def test_interaction_check_sends_both_images_as_png_and_returns_the_reply(monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_HOI_TEST", "k-123")
    reply = '{"answer": "yes", "confidence": 0.9, "reasoning": "the cup is in the hand"}'
    before, after = _solid((255, 0, 0)), _solid((0, 0, 255), (60, 50))
    with FakeEndpoint([reply]) as endpoint:
        judge = _judge(endpoint, api_key_env="HAI_API_KEY_HOI_TEST")
        text = judge.yes_no([before, after], "Has the person picked up the cup?")
    assert text == reply and parse_yes_no(text).confidence == 0.9
    request = endpoint.requests[0]
    assert request["model"] == "vlm-test" and request["temperature"] == 0.1  # upstream's temperature
    assert endpoint.headers[0]["Authorization"] == "Bearer k-123"
    sent = _images(request)
    assert [image.size for image in sent] == [(40, 30), (60, 50)]
    assert sent[0].getpixel((5, 5)) == (255, 0, 0) and sent[1].getpixel((5, 5)) == (0, 0, 255)
    prompt = _texts(request)[0]
    assert "Has the person picked up the cup?" in prompt and "BEFORE EDITING" in prompt and "JSON" in prompt


def test_a_qa_question_on_one_image_carries_its_context():
    with FakeEndpoint(['{"answer": "no", "confidence": 0.8}']) as endpoint:
        _judge(endpoint).yes_no([_solid((0, 255, 0))], "Is the lid off the pot?", 'The instruction was: "open it"')
    prompt = _texts(endpoint.requests[0])[0]
    assert "Is the lid off the pot?" in prompt and 'The instruction was: "open it"' in prompt
    assert "BEFORE EDITING" not in prompt and len(_images(endpoint.requests[0])) == 1


def test_no_api_key_is_sent_when_the_variable_is_unset(monkeypatch):
    monkeypatch.delenv("HAI_API_KEY_HOI_UNSET", raising=False)
    with FakeEndpoint(["{}"]) as endpoint:
        _judge(endpoint, api_key_env="HAI_API_KEY_HOI_UNSET").yes_no([_solid(0)], "q?")
    assert "Authorization" not in endpoint.headers[0]


@pytest.mark.parametrize("variable", ["HAI_DATABASE_URL", "HOME"])
@pytest.mark.parametrize("role", ["judge", "refiner"])
def test_a_variable_not_declared_for_api_keys_is_refused_before_any_request(monkeypatch, variable, role):
    from engines.platform.credentials import SecretRefused

    # A value the settings accept (they are read afresh per test): a database URL with its password.
    value = "postgresql://hai:secret-value@db.internal/hai" if variable == "HAI_DATABASE_URL" else "secret-value"
    monkeypatch.setenv(variable, value)
    with FakeEndpoint(["{}"]) as endpoint, pytest.raises(SecretRefused, match=f"{role}.api_key_env: '{variable}'"):
        make(role, "openai", model="m", base_url=endpoint.base_url, api_key_env=variable)
    assert endpoint.requests == []


@pytest.mark.parametrize("role", ["judge", "refiner"])
def test_a_link_local_endpoint_is_refused_before_any_request(role):
    from engines.platform.endpoints import EndpointRefused

    with pytest.raises(EndpointRefused, match=f"{role}.base_url: the host '169.254.169.254'"):
        make(role, "openai", model="m", base_url="http://169.254.169.254/latest/meta-data")


def test_the_default_key_variable_is_a_declared_one(monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_OPENAI", "k-default")
    monkeypatch.setenv("OPENAI_API_KEY", "k-undeclared")
    with FakeEndpoint(["{}"]) as endpoint:
        _judge(endpoint).yes_no([_solid(0)], "q?")
    assert endpoint.headers[0]["Authorization"] == "Bearer k-default"


def test_match_uses_the_person_rubric_for_the_person_and_the_object_rubric_otherwise():
    reply = '```json\n{"best_match_id": 1, "identity_score": 0.9, "quality_score": 0.5}\n```'
    with FakeEndpoint([reply, reply]) as endpoint:
        judge = _judge(endpoint)
        person = judge.match_score(_solid(0), _solid(1), "person", "Make the person sit")
        judge.match_score(_solid(0), _solid(1), "kettle", "Make the person pour from the kettle")
    first, second = (_texts(r)[0] for r in endpoint.requests)
    assert "Uncanny" in first or "uncanny" in first
    assert "same kettle instance" in second and "uncanny" not in second.lower()
    assert 'The editing instruction was: "Make the person sit"' in first
    assert len(_images(endpoint.requests[0])) == 2
    # The reply is returned as is, for judge_replies: similarity = 0.9 x 0.5.
    assert match_fields("subject", person)["subject_similarity"] == pytest.approx(0.45)


def test_video_analysis_reads_success_and_critique_and_refuses_an_unreadable_reply():
    frames = [_solid((i * 40, 0, 0)) for i in range(3)]
    with FakeEndpoint(['{"success": false, "critique": "the cup turned blue"}', "I think it failed."]) as endpoint:
        judge = _judge(endpoint)
        report = judge.analyze_video(_solid((9, 9, 9)), frames, "pick up the cup", "a hand lifts the cup")
        with pytest.raises(JudgeReplyError, match="no JSON object"):
            judge.analyze_video(_solid((9, 9, 9)), frames, "pick up the cup", "")
    assert (report.success, report.critique) == (False, "the cup turned blue")
    sent = _images(endpoint.requests[0])
    assert len(sent) == 4 and sent[0].getpixel((0, 0)) == (9, 9, 9) and sent[3].getpixel((0, 0)) == (80, 0, 0)
    assert '"pick up the cup"' in _texts(endpoint.requests[0])[0]


def test_frame_selection_two_calls_and_the_judges_frame_numbers_count_from_one():
    call1 = '{"action_type": "static", "question": "Is the cup on the table?"}'
    call2 = '{"best_frame_index": 3, "strict_pass": true, "selection_mode": "strict_earliest_yes", "match_score": 0.9}'
    frames = [_solid((i, i, i)) for i in range(5)]
    with FakeEndpoint([call1, call2]) as endpoint:
        choice = _judge(endpoint).select_frame(frames, "Put the cup on the table")
    # Frame 3 of the judge's 1..5 is index 2 of the list.
    assert choice == FrameChoice(best_frame_index=2, strict_pass=True, selection_mode="earliest_pass", match_score=0.9,
                                 action_type="static", question="Is the cup on the table?", raw=call2)
    first, second = endpoint.requests
    assert _images(first) == [] and first["temperature"] == 0.3  # call 1 writes the question, as upstream
    assert len(_images(second)) == 5 and "Is the cup on the table?" in _texts(second)[0]
    assert "Frame 1:" in _texts(second) and "Frame 5:" in _texts(second)
    assert "no motion blur" in _texts(second)[0]  # the static quality standard


@pytest.mark.parametrize("replies", [
    ['{"action_type": "dynamic", "question": "Is the hand waving?"}', "frame four looks best"],  # call 2 unreadable
    ['{"action_type": "dynamic", "question": "Is the hand waving?"}', '{"best_frame_index": 9}'],  # not a frame
    ["no idea"],  # call 1 unreadable: call 2 is not made
])
def test_frame_selection_falls_back_to_the_first_frame(replies):
    frames = [_solid((i, i, i)) for i in range(4)]
    with FakeEndpoint(replies) as endpoint:
        choice = _judge(endpoint).select_frame(frames, "Wave")
    assert (choice.best_frame_index, choice.selection_mode, choice.strict_pass) == (0, "fallback", False)
    assert len(endpoint.requests) == len(replies)


def test_a_failing_endpoint_raises_for_the_evaluator_to_record():
    with FakeEndpoint(["{}"], status=500) as endpoint, pytest.raises(BackendError, match="HTTP 500"):
        _judge(endpoint).yes_no([_solid(0), _solid(0)], "q?")


def test_the_openai_judge_needs_a_model_name():
    import engines.hoi.adapters  # noqa: F401

    with pytest.raises(ValueError, match="model=NAME"):
        make("judge", "openai", base_url="http://127.0.0.1:9/v1")


# ---------------------------------------------------------------- the template tracker


def _noise(size, seed) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)


def _scene_with_patch(patch: np.ndarray, at: tuple[int, int], size=(160, 120), seed=1) -> Image.Image:
    pixels = _noise(size, seed)
    x, y = at
    pixels[y:y + patch.shape[0], x:x + patch.shape[1]] = patch
    return Image.fromarray(pixels)


PATCH = _noise((30, 30), 7)


def test_normalized_correlation_by_hand():
    # Template [1, 2] centred is [-0.5, 0.5] (norm sqrt(0.5)). Window [1, 2]: the same shape, 1;
    # window [2, 1]: the mirror, -1; a flat window [0, 0]: 0 by definition.
    scene = np.array([[1.0, 2.0, 1.0], [0.0, 0.0, 0.0]])
    assert np.allclose(normalized_correlation(scene, np.array([[1.0, 2.0]])), [[1.0, -1.0], [0.0, 0.0]])


def test_template_tracking_finds_the_moved_object():
    original = _scene_with_patch(PATCH, (40, 30), seed=1)
    edited = _scene_with_patch(PATCH, (90, 50), seed=2)  # another background, the object moved
    box, correlation = locate_template(original, edited, (40, 30, 70, 60))
    assert box == (90, 50, 120, 80) and correlation == pytest.approx(1.0)
    grounder = TransformersGrounder(_TinyModel(), None, "t")
    assert grounder.track(original, edited, (40, 30, 70, 60)) == (90, 50, 120, 80)


def test_template_tracking_in_an_edit_twice_the_size():
    original = _scene_with_patch(PATCH, (40, 30), seed=1)
    big = np.repeat(np.repeat(PATCH, 2, axis=0), 2, axis=1)  # the object at twice the size
    edited = _scene_with_patch(big, (180, 100), size=(320, 240), seed=2)
    box, correlation = locate_template(original, edited, (40, 30, 70, 60))
    assert np.allclose(box, (180, 100, 240, 160), atol=2) and correlation > 0.8


def test_an_object_gone_from_the_edit_is_not_followed_and_a_flat_crop_never():
    original = _scene_with_patch(PATCH, (40, 30), seed=1)
    grounder = TransformersGrounder(_TinyModel(), None, "t")
    assert grounder.track(original, Image.fromarray(_noise((160, 120), 3)), (40, 30, 70, 60)) is None
    flat = Image.new("RGB", (160, 120), (50, 50, 50))
    assert locate_template(flat, flat, (10, 10, 40, 40)) is None


class _TinyModel:
    """Stands in for a detector where only tracking is tested."""

    class config:  # noqa: N801 - mirrors model.config
        model_type = "owlv2"

    def to(self, device):
        return self

    def eval(self):
        return self


# ---------------------------------------------------------------- the detectors, tiny and random


def _word_tokenizer(vocab: dict[str, int], *, bert: bool):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    if bert:  # Grounding DINO's text side is BERT: [CLS] text [SEP]
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
        return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                       cls_token="[CLS]", sep_token="[SEP]")
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", unk_token="[UNK]",
                                   bos_token="[CLS]", eos_token="[SEP]")


VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "human": 4, "cup": 5, ".": 6}


@pytest.fixture(scope="module")
def tiny_owlv2():
    import torch
    from transformers import Owlv2Config, Owlv2ForObjectDetection, Owlv2ImageProcessor, Owlv2Processor

    config = Owlv2Config(
        text_config=dict(vocab_size=len(VOCAB), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=16, pad_token_id=0, bos_token_id=2,
                         eos_token_id=3),
        vision_config=dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                           image_size=32, patch_size=8),
        projection_dim=16)
    torch.manual_seed(0)
    model = Owlv2ForObjectDetection(config).eval()
    processor = Owlv2Processor(image_processor=Owlv2ImageProcessor(size={"height": 32, "width": 32}),
                               tokenizer=_word_tokenizer(VOCAB, bert=False))
    return model, processor


def test_owlv2_gives_one_box_per_patch_best_first_inside_the_image(tiny_owlv2):
    import engines.hoi.adapters  # noqa: F401

    model, processor = tiny_owlv2
    grounder = make("grounder", "transformers", model=model, processor=processor)
    image = Image.fromarray(_noise((64, 48), 5))
    found = grounder.detect(image, "cup", box_threshold=0.0)
    # A 32-px input cut in 8-px patches: (32 / 8) ** 2 = 16 boxes, every one above a threshold of 0.
    assert len(found) == 16
    scores = [d.score for d in found]
    assert scores == sorted(scores, reverse=True) and all(d.label == "cup" for d in found)
    assert all(0 <= x1 <= x2 <= 64 and 0 <= y1 <= y2 <= 48 for x1, y1, x2, y2 in (d.box for d in found))
    # A threshold no sigmoid score reaches leaves nothing.
    assert grounder.detect(image, "cup", box_threshold=1.01) == []
    with pytest.raises(ValueError, match="text prompt"):
        grounder.detect(image, "  ")


def test_owlv2_loaded_from_a_local_folder_detects_the_same(tiny_owlv2, tmp_path):
    model, processor = tiny_owlv2
    model.save_pretrained(tmp_path)
    processor.save_pretrained(tmp_path)
    image = Image.fromarray(_noise((64, 48), 5))
    in_memory = TransformersGrounder(model, processor, "m").detect(image, "human", box_threshold=0.0)
    loaded = transformers_grounder(path=str(tmp_path)).detect(image, "human", box_threshold=0.0)
    assert len(loaded) == len(in_memory) == 16
    assert np.allclose([d.box for d in loaded], [d.box for d in in_memory], atol=1e-3)


def test_the_transformers_grounder_needs_a_folder():
    with pytest.raises(ValueError, match="path=DIR"):
        transformers_grounder()


def test_grounding_dino_gets_upstreams_caption_and_keeps_its_queries():
    import torch
    from transformers import (
        BertConfig,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessor,
        GroundingDinoProcessor,
        SwinConfig,
    )

    backbone = SwinConfig(image_size=32, patch_size=4, embed_dim=8, depths=[1, 1], num_heads=[1, 1], window_size=2,
                          out_features=["stage1", "stage2"])
    text = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                      intermediate_size=16, max_position_embeddings=32)
    # d_model 32: its GroupNorm has 32 groups; 2 decoder layers: the box heads are tied across layers.
    config = GroundingDinoConfig(backbone_config=backbone, text_config=text, d_model=32, encoder_layers=1,
                                 decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
                                 encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, num_feature_levels=2,
                                 encoder_n_points=1, decoder_n_points=1, max_text_len=32, use_timm_backbone=False)
    torch.manual_seed(0)
    model = GroundingDinoForObjectDetection(config).eval()
    processor = GroundingDinoProcessor(
        image_processor=GroundingDinoImageProcessor(size={"shortest_edge": 32, "longest_edge": 64}),
        tokenizer=_word_tokenizer(VOCAB, bert=True))
    captions = []

    class Spy:
        def __call__(self, *args, **kwargs):
            captions.append(kwargs["text"])
            return processor(*args, **kwargs)

        def __getattr__(self, name):
            return getattr(processor, name)

    grounder = TransformersGrounder(model, Spy(), "gd")
    image = Image.fromarray(_noise((64, 48), 5))
    found = grounder.detect(image, "Human", box_threshold=0.0, text_threshold=0.0)
    assert captions == ["human."]  # lower-cased and ended with "." as upstream
    assert len(found) == 10  # one box per query above a threshold of 0
    assert all(0 <= x1 <= x2 <= 64 and 0 <= y1 <= y2 <= 48 for x1, y1, x2, y2 in (d.box for d in found))
    assert grounder.detect(image, "human", box_threshold=1.01) == []


# ---------------------------------------------------------------- both adapters in HOI-Eval


def test_the_adapters_run_hoi_eval_end_to_end(tiny_owlv2, tmp_path):
    from engines.hoi.benchmark import ANNOTATION_FILES
    from engines.hoi.evaluate import evaluate_method

    item = {"instruction": "Make the person lift the cup", "object": "cup", "subject_bounding_box": [4, 4, 30, 44],
            "object_bounding_box": [36, 20, 56, 40], "generated_question": "Has the person lifted the cup?",
            "tools": "", "tool_bboxes": [], "tags_v6": "L1-interaction-relation_occur, "
            "L2-location_understanding-specific_pos_end", "question_v6": ["Is the cup above the table?"]}
    (tmp_path / "images" / "L1L2").mkdir(parents=True)
    (tmp_path / "edits" / "L1L2").mkdir(parents=True)
    (tmp_path / ANNOTATION_FILES["L1L2"]).write_text(json.dumps({"k.png": item}), encoding="utf-8")
    scene = Image.fromarray(_noise((64, 48), 11))
    scene.save(tmp_path / "images" / "L1L2" / "k.png")
    scene.resize((128, 96)).save(tmp_path / "edits" / "L1L2" / "k.png")  # the edit at twice the size
    # One reply every step reads: the interaction check and QA take answer and confidence, the match its scores.
    reply = ('{"answer": "yes", "confidence": 0.7, "best_match_id": 0, "identity_score": 1.0, "quality_score": 0.5, '
             '"reasoning": "lifted"}')
    model, processor = tiny_owlv2
    with FakeEndpoint([reply] * 4) as endpoint:
        result = evaluate_method(tmp_path, "tiny", tmp_path / "edits", TransformersGrounder(model, processor, "owl"),
                                 _judge(endpoint), out=tmp_path / "records.json")
    record = result["records"]["L1L2"]["k.png"]
    # The edit is the scene itself, so the cup's crop is followed to where it was: one pair, four calls
    # (interaction, person match, cup match, the QA question).
    assert record["object_box_source"] == "track" and record["object_box"] == [36, 20, 56, 40]
    assert len(endpoint.requests) == 4
    assert [len(_images(r)) for r in endpoint.requests] == [2, 2, 2, 1]
    assert record["max_yes_confidence"] == 0.7 and record["reasoning"] == "lifted"
    assert record["subject_similarity"] == 0.5 and record["object_similarity"] == 0.5
    assert record["qa"] == [{"question": "Is the cup above the table?", "answer": "yes", "confidence": 0.7}]
    assert "L1 0.7000, L2 0.7000" in result["summary"]
