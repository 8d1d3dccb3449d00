"""A local fake OpenAI-compatible endpoint for the LLM collaborator tests, and a scripted "model" for it.

``FakeServer`` serves POST {url}/chat/completions on 127.0.0.1 (a random free port). It replays
``replies`` (canned strings, in order) or, when ``respond`` is set, answers each request with
``respond(body)``. ``ScriptedClinician`` is such a ``respond``: a deterministic participant that
reads the prompt the way a careful text reader would.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    """An OpenAI-compatible /chat/completions endpoint on 127.0.0.1 that replays canned replies."""

    def __init__(self, respond: Callable[[dict], str] | None = None):
        self.replies: list[str] = []
        self.requests: list[dict] = []
        self.status = 200
        self.respond = respond
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                if server.status != 200:
                    payload = b'{"error": {"message": "model crashed"}}'
                else:
                    if server.respond is not None:
                        content = server.respond(body)
                    else:
                        content = server.replies.pop(0) if server.replies else "no more canned replies"
                    payload = json.dumps({"id": "x", "object": "chat.completion", "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}).encode()
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # port 0: a random free port
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


_CLEAR_TRIANGLE = re.compile(r"^- a (?:small|medium-sized|large) (?:faint|grey|bright) triangle ", re.M)
_AI_SET = re.compile(r"^The AI assistant says the answer is one of: (.*)\.$", re.M)
_ALLOWED = re.compile(r"^Allowed answers: (.*)\.$", re.M)
_ROUND = re.compile(r"This is round (\d+) of at most")


class ScriptedClinician:
    """A deterministic participant behind ``FakeServer(respond=...)``.

    Alone it answers the number of triangles named outright in the scene (so it is right on easy
    images and undercounts when ``describe(detail="perceived")`` leaves a triangle ambiguous), or,
    for a medical case, the first allowed diagnosis. Shown an AI set that lacks its answer it
    switches to the set's closest count (shapes) or the set's first label (medical). It replies
    with prose instead of JSON in the rounds listed in ``garbage_rounds``, retries included.
    """

    def __init__(self, garbage_rounds: tuple[int, ...] = ()):
        self.garbage_rounds = set(garbage_rounds)
        self.prompts: list[str] = []

    def __call__(self, body: dict) -> str:
        prompt = body["messages"][1]["content"]
        self.prompts.append(prompt)
        if int(_ROUND.search(prompt).group(1)) in self.garbage_rounds:
            return "Let me think about it. Probably the second one."
        allowed = _ALLOWED.search(prompt).group(1).split(", ")
        counting = allowed[0] == "0"
        own = str(len(_CLEAR_TRIANGLE.findall(prompt))) if counting else allowed[0]
        shown = _AI_SET.search(prompt)
        ai_set = shown.group(1).split(", ") if shown and "(it shows no candidates)" not in shown.group(1) else []
        answer = own
        if ai_set and own not in ai_set:
            answer = min(ai_set, key=lambda a: abs(int(a) - int(own))) if counting else ai_set[0]
        return json.dumps({"answer": answer, "confidence": 4 if answer == own else 3, "final": False})


def tiny_gpt2(extra_words: tuple[str, ...] = ("the", "triangle", "patient")):
    """A randomly initialised 1-layer GPT-2 and a word-level tokenizer over a few JSON-ish words (seconds, no download)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = ["[UNK]", "[EOS]", "{", "}", '"answer"', ":", ",", "3", "round", "json", *extra_words]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]")
    torch.manual_seed(0)
    config = GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=len(words), n_positions=256,
                        bos_token_id=1, eos_token_id=1)
    return GPT2LMHeadModel(config), tokenizer
