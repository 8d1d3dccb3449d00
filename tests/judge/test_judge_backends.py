"""The judge backends: a tiny randomly initialised Llama (built from config, word-level tokenizer built
offline) through every prompt judge, and a real local HTTP server speaking OpenAI's chat-completions JSON.
Nothing is downloaded."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engines.judge.backends import ModelGenerator, get_backend
from engines.judge.items import Item
from engines.judge.judges import get_judge
from engines.judge.prompts import render_harmbench, render_pair
from engines.platform import settings
from engines.platform.chat import NO_RETRY, BackendError, OpenAICompatibleBackend, TransformersBackend
from engines.platform.endpoints import EndpointRefused

PROMPT_JUDGES = ("harmbench-cls", "llamaguard3", "strongreject", "pair", "jbb-llama3", "jbb-refusal")
WORDS = ["[UNK]", "[EOS]", "[PAD]", "yes", "no", "Yes", "No", "safe", "unsafe", "S1", "S2", ",", "Rating:", "[[10]]",
         "[[3]]", "#scores", "1.b", "2.b", "3.b", "0", "1", "5", "Behavior:", "Generation:", "Sure", "here", "is",
         "I'm", "sorry", "[INST]", "[/INST]", "Answer:", "the", "a"]


def _item(i: int, generation: str = "Sure here is the answer") -> Item:
    return Item(key=f"m/a/b{i}/0", behavior_id=f"b{i}", behavior=f"Write the thing number {i}", victim_model="m",
                attack="a", generation=f"{generation} item-{i}")


def tiny_llama(bias: dict[str, float] | None = None):
    """A 1-layer Llama (hidden 16) and a WordLevel tokenizer over ``WORDS``.

    With ``bias`` the weights are set so that every step's logits are known by hand: every token embeds
    to 3 * e0, the attention and MLP outputs are zero (so the last hidden state is RMSNorm(3 e0) = 4 e0,
    hidden size 16), and the output layer reads only dimension 0 with weight bias[word] / 4, so the logits
    are ``bias`` (0 for every other word) whatever the prompt.
    """
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]", pad_token="[PAD]")
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=2048,
                         bos_token_id=1, eos_token_id=1, pad_token_id=2, rms_norm_eps=1e-12)
    model = LlamaForCausalLM(config)
    if bias is not None:
        with torch.no_grad():
            model.model.embed_tokens.weight.zero_()
            model.model.embed_tokens.weight[:, 0] = 3.0
            for layer in model.model.layers:
                layer.self_attn.o_proj.weight.zero_()
                layer.mlp.down_proj.weight.zero_()
            model.model.norm.weight.fill_(1.0)
            model.lm_head.weight.zero_()
            for word, value in bias.items():
                model.lm_head.weight[vocab[word], 0] = value / 4
    return model.eval(), tokenizer


@pytest.fixture(scope="module")
def llama():
    model, tokenizer = tiny_llama()
    return ModelGenerator(TransformersBackend(model, tokenizer, batch_size=2))


def _rendered(generator: ModelGenerator, prompt) -> str:
    return generator.backend.render(generator.prompt(prompt))


def _independent_first_probs(generator: ModelGenerator, prompt, words):
    """Softmax of the model's last-position logits on the unpadded prompt, read at each word's token id."""
    import torch

    backend = generator.backend
    ids = backend.tokenizer(_rendered(generator, prompt))["input_ids"]
    with torch.no_grad():
        probs = backend.model(torch.tensor([ids])).logits[0, -1].softmax(-1)
    return {w: float(probs[backend.tokenizer.convert_tokens_to_ids(w)]) for w in words}, int(probs.argmax())


def test_transformers_first_token_probs_match_the_logits_computed_independently(llama):
    # Two prompts of different lengths in one batch: the shorter one is left-padded.
    prompts = [render_harmbench("Write a thing", "Sure here is"), render_harmbench("Write", "I'm sorry " * 20)]
    completions = llama.complete(prompts, 2, candidates=("yes", "no"))
    for prompt, completion in zip(prompts, completions, strict=True):
        expected, argmax = _independent_first_probs(llama, prompt, ("yes", "no"))
        assert completion.first_token_probs == pytest.approx(expected, rel=1e-4, abs=1e-7)
        # Greedy: the reply starts with the argmax token (an end-of-sequence token ends it at once).
        first_word = "" if WORDS[argmax] in ("[EOS]", "[PAD]") else WORDS[argmax]
        assert completion.text.split(" ")[0] == first_word


def test_chat_judges_go_through_the_tokenizers_chat_template():
    model, tokenizer = tiny_llama()
    tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    backend = ModelGenerator(TransformersBackend(model, tokenizer))
    assert _rendered(backend, render_pair("G", "P", "R")).startswith("<system> You are a helpful red teaming assistant.")
    assert _rendered(backend, render_pair("G", "P", "R")).endswith(
        "<user> [PROMPT]:P\n[ASSISTANT'S RESPONSE]: R <assistant>")
    # HarmBench's exact [INST] text bypasses the template.
    assert _rendered(backend, render_harmbench("B", "G")).startswith("[INST] <<SYS>>")


def test_transformers_backend_gives_no_probabilities_without_candidates(llama):
    (completion,) = llama.complete([render_pair("goal", "prompt", "response")], 3)
    assert completion.first_token_probs is None


@pytest.mark.parametrize("name", PROMPT_JUDGES)
def test_every_prompt_judge_runs_end_to_end_on_a_tiny_llama(llama, name):
    judge = get_judge(name, backend=llama, batch_size=2)
    items = [_item(i) for i in range(3)]
    verdicts = judge.judge(items)
    assert [v.judge for v in verdicts] == [name] * 3
    for verdict in verdicts:
        assert verdict.parse_status in ("ok", "unparsed", "out_of_range", "empty")
        if verdict.parse_status == "ok":
            assert 0.0 <= verdict.p_harmful <= 1.0 and verdict.label in (0, 1)
        else:  # a random model's garbage is recorded as such, never as a 0
            assert verdict.p_harmful is None and verdict.label is None


def test_harmbench_p_is_the_first_token_probability_of_yes():
    """Logits fixed by hand: yes 5, no 3, every other token 0. Greedy says "yes", and
    p = e^5 / (e^5 + e^3) = sigmoid(2) whatever the rest of the vocabulary does."""
    model, tokenizer = tiny_llama(bias={"yes": 5.0, "no": 3.0})
    verdict, = get_judge("harmbench-cls", backend=TransformersBackend(model, tokenizer)).judge([_item(0)])
    assert (verdict.raw, verdict.label, verdict.parse_status) == ("yes", 1, "ok")
    assert verdict.p_harmful == pytest.approx(1 / (1 + math.exp(-2.0)), rel=1e-5)


def test_jbb_judge_reads_unsafe_and_its_first_token_probability():
    model, tokenizer = tiny_llama(bias={"unsafe": 4.0, "safe": 3.0})
    verdict, = get_judge("jbb-llama3", backend=TransformersBackend(model, tokenizer)).judge([_item(0)])
    assert verdict.label == 1 and verdict.raw.startswith("unsafe")
    assert verdict.p_harmful == pytest.approx(1 / (1 + math.exp(-1.0)), rel=1e-5)


def test_harmbench_clips_long_generations_to_512_classifier_tokens():
    model, tokenizer = tiny_llama(bias={"no": 1.0})
    judge = get_judge("harmbench-cls", backend=TransformersBackend(model, tokenizer))
    long_item = _item(0, generation="the " * 600)
    text = judge.render(long_item).text
    generation = text.split("Generation:\n", 1)[1].split("\n\n---", 1)[0]
    assert generation.split(" ") == ["the"] * 512


# ----------------------------------------------------------------------------- OpenAI-compatible endpoint


class ChatServer:
    """A real HTTP server on 127.0.0.1 answering POST /v1/chat/completions; ``respond(body)`` returns
    (content, top_logprobs or None) for each request."""

    def __init__(self, respond):
        self.requests: list[dict] = []
        self.status = 200
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                content, top = respond(body)
                choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                if top is not None and body.get("logprobs"):
                    first = {"token": top[0][0], "logprob": top[0][1],
                             "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top]}
                    choice["logprobs"] = {"content": [first]}
                payload = json.dumps({"id": "x", "object": "chat.completion", "choices": [choice]}).encode()
                if server.status != 200:
                    payload = b'{"error": {"message": "overloaded"}}'
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _by_item(replies: dict[str, tuple[str, list | None]]):
    """Answer by the item marker in the prompt, so concurrent requests cannot swap replies."""

    def respond(body):
        text = json.dumps(body["messages"])
        return next(reply for marker, reply in replies.items() if marker in text)

    return respond


@pytest.fixture
def chat_server():
    servers = []

    def start(respond):
        servers.append(ChatServer(respond))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_endpoint_replies_yes_no_and_garbage_parse_as_ok_ok_unparsed(chat_server):
    server = chat_server(_by_item({"item-0": ("yes", None), "item-1": ("no", None), "item-2": ("I think so", None)}))
    judge = get_judge("harmbench-cls", backend=OpenAICompatibleBackend(server.url, "cls"))
    verdicts = judge.judge([_item(i) for i in range(3)])
    assert [(v.parse_status, v.label, v.p_harmful) for v in verdicts] == [
        ("ok", 1, 1.0), ("ok", 0, 0.0), ("unparsed", None, None)]
    assert [v.raw for v in verdicts] == ["yes", "no", "I think so"]


def test_endpoint_logprobs_give_p_from_the_first_token(chat_server):
    """top_logprobs: "yes" 0.6, " yes" 0.1, "no" 0.2 -> p = 0.7 / (0.7 + 0.2)."""
    top = [("yes", math.log(0.6)), ("no", math.log(0.2)), (" yes", math.log(0.1)), ("maybe", math.log(0.05))]
    server = chat_server(_by_item({"item-0": ("yes", top)}))
    verdict, = get_judge("harmbench-cls", backend=OpenAICompatibleBackend(server.url, "cls")).judge([_item(0)])
    assert verdict.p_harmful == pytest.approx(0.7 / 0.9)
    assert server.requests[0]["body"]["logprobs"] is True and server.requests[0]["body"]["max_tokens"] == 1


def test_endpoint_without_logprobs_falls_back_to_the_parsed_label(chat_server):
    server = chat_server(_by_item({"item-0": ("unsafe\nS1", None)}))
    verdict, = get_judge("llamaguard3", backend=OpenAICompatibleBackend(server.url, "guard")).judge([_item(0)])
    assert (verdict.label, verdict.p_harmful) == (1, 1.0)


def test_endpoint_gets_pair_system_and_user_turns_and_the_key(chat_server, monkeypatch):
    server = chat_server(_by_item({"item-0": ("Rating: [[7]]", None)}))
    monkeypatch.setenv("HAI_API_KEY_JUDGE_TEST", "k-123")
    backend = OpenAICompatibleBackend(server.url, "judge-model", api_key_env="HAI_API_KEY_JUDGE_TEST")
    verdict, = get_judge("pair", backend=backend).judge([_item(0)])
    request = server.requests[0]
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-123"
    assert [m["role"] for m in request["body"]["messages"]] == ["system", "user"]
    assert request["body"]["messages"][1]["content"].startswith("[PROMPT]:Write the thing number 0\n[ASSISTANT'S RESPONSE]: ")
    assert (verdict.label, verdict.p_harmful) == (0, pytest.approx(6 / 9))


def test_endpoint_http_error_raises_backend_error(chat_server):
    server = chat_server(_by_item({"item-0": ("yes", None)}))
    server.status = 503
    with pytest.raises(BackendError, match="HTTP 503"):
        get_judge("harmbench-cls", backend=OpenAICompatibleBackend(server.url, "cls", retry=NO_RETRY)).judge([_item(0)])


def test_backend_specs_from_the_command_line():
    backend = get_backend("openai:http://127.0.0.1:9/v1#guard-3")
    assert (backend.backend.base_url, backend.backend.model, backend.backend_id) == (
        "http://127.0.0.1:9/v1", "guard-3", "openai:http://127.0.0.1:9/v1#guard-3")
    for bad in ("openai:http://127.0.0.1:9/v1", "vllm:x", "transformers"):
        with pytest.raises(ValueError):
            get_backend(bad)


def test_the_command_lines_endpoint_key_comes_only_from_the_declared_judge_variable(chat_server, monkeypatch):
    """The key is read from HAI_API_KEY_JUDGE (credentials.api_key), not from an undeclared variable."""
    server = chat_server(_by_item({"item-0": ("yes", None)}))
    monkeypatch.setenv("HAI_JUDGE_API_KEY", "sk-undeclared")
    get_judge("harmbench-cls", backend=f"openai:{server.url}#cls").judge([_item(0)])
    monkeypatch.setenv("HAI_API_KEY_JUDGE", "sk-declared")
    get_judge("harmbench-cls", backend=f"openai:{server.url}#cls").judge([_item(0)])
    assert [r["auth"] for r in server.requests] == [None, "Bearer sk-declared"]


@pytest.mark.parametrize("spec", ["openai:http://169.254.169.254/v1#m", "openai:file:///etc/passwd#m",
                                  "openai:http://user:pw@127.0.0.1:9/v1#m"])
def test_the_command_lines_endpoint_is_checked_before_any_request(spec):
    with pytest.raises(EndpointRefused, match="base_url: "):
        get_backend(spec)


def test_only_the_listed_endpoint_hosts_are_judged_against(chat_server, monkeypatch):
    server = chat_server(_by_item({"item-0": ("yes", None)}))
    monkeypatch.setenv("HAI_ENDPOINT_HOSTS", "models.example.org")
    settings.reset_settings()
    try:
        with pytest.raises(EndpointRefused, match="'127.0.0.1' is not among the endpoint hosts"):
            get_judge("harmbench-cls", backend=f"openai:{server.url}#cls")
    finally:
        monkeypatch.delenv("HAI_ENDPOINT_HOSTS")
        settings.reset_settings()
    assert server.requests == []


def test_prompt_judge_without_backend_is_refused():
    with pytest.raises(ValueError, match="--backend"):
        get_judge("llamaguard3")


def test_cli_runs_a_prompt_judge_on_a_local_model_folder(tmp_path, capsys, monkeypatch):
    """``--backend transformers:PATH`` loads a saved model with ``from_pretrained`` (local files only)."""
    from engines.judge.__main__ import main
    from engines.judge.items import read_verdicts, write_items

    model, tokenizer = tiny_llama(bias={"no": 2.0, "yes": 1.0})
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    write_items([_item(i) for i in range(3)], tmp_path / "items.jsonl")
    monkeypatch.setenv("HAI_DEVICE", "cpu")
    main(["judge", "--items", str(tmp_path / "items.jsonl"), "--judge", "harmbench-cls", "--backend",
          f"transformers:{tmp_path / 'model'}", "--out", str(tmp_path / "v.csv"), "--no-progress"])
    assert "3 judged" in capsys.readouterr().out
    verdicts = [v for _, v in read_verdicts(tmp_path / "v.csv")]
    assert [(v.raw, v.label) for v in verdicts] == [("no", 0)] * 3
    assert verdicts[0].p_harmful == pytest.approx(1 / (1 + math.exp(1.0)), rel=1e-5)  # e^1 / (e^1 + e^2)
