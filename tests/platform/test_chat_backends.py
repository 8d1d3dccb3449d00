"""``chat.OpenAICompatibleBackend`` against a real local HTTP server that fails on cue: which failures
are tried again, how long it waits (``chat.pause`` records the waits instead of sleeping), the
attempt limit and the time budget, timeouts, and an API key that never reaches a message or a log."""

from __future__ import annotations

import json
import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engines.platform import chat
from engines.platform.chat import BackendError, OpenAICompatibleBackend, RetryPolicy, retry_after
from engines.platform.credentials import SecretRefused

KEY = "sk-secret-0123456789abcdef"
HI = [{"role": "user", "content": "hi"}]
EXACT = RetryPolicy(jitter=0.0)  # waits 0.5, 1, 2 s: exact, so a test can check them


def completion(text: str) -> tuple[int, dict, bytes]:
    body = {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return 200, {}, json.dumps(body).encode()


class ScriptedServer:
    """POST /v1/chat/completions on 127.0.0.1 answering from a script, one entry per request:
    ``(status, headers, body)``, or ``("hang", seconds)`` to answer nothing (and close after that long). An entry
    whose body is None echoes the request's Authorization header back (as some proxies do).
    After the script: the last entry again."""

    def __init__(self, script: list):
        self.script, self.requests = list(script), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers["Content-Length"]))
                auth = self.headers.get("Authorization")
                server.requests.append({"auth": auth, "at": time.monotonic()})
                entry = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                if entry[0] == "hang":
                    time.sleep(entry[1])
                    return  # the client gave up waiting: nothing to answer
                status, headers, body = entry
                if body is None:
                    body = json.dumps({"error": f"bad credentials: {auth}"}).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*script):
        servers.append(ScriptedServer(list(script)))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def waits(monkeypatch):
    """The waits between tries, recorded instead of slept."""
    recorded: list[float] = []
    monkeypatch.setattr(chat, "pause", recorded.append)
    return recorded


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_CHAT_TEST", KEY)
    return "HAI_API_KEY_CHAT_TEST"


def test_a_429_is_tried_again_after_the_wait_its_retry_after_asks(serve, waits):
    server = serve((429, {"Retry-After": "7"}, b'{"error": "slow down"}'), completion("hello"))
    assert OpenAICompatibleBackend(server.url, "m").complete(HI) == "hello"
    assert len(server.requests) == 2 and waits == [7.0]


def test_a_retry_after_date_is_honoured_too(serve, waits):
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server = serve((503, {"Retry-After": later}, b"busy"), completion("hello"))
    assert OpenAICompatibleBackend(server.url, "m").complete(HI) == "hello"
    assert len(waits) == 1 and 25 <= waits[0] <= 30


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_server_errors_are_tried_again_with_exponential_backoff(serve, waits, status):
    server = serve((status, {}, b"oops"), (status, {}, b"oops"), (status, {}, b"oops"), completion("at last"))
    assert OpenAICompatibleBackend(server.url, "m", retry=EXACT).complete(HI) == "at last"
    assert len(server.requests) == 4 and waits == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_fail_at_once(serve, waits, status):
    server = serve((status, {"Retry-After": "1"}, b'{"error": "no"}'), completion("never"))
    with pytest.raises(BackendError, match=f"failed: HTTP {status}: ") as caught:
        OpenAICompatibleBackend(server.url, "m").complete(HI)
    assert len(server.requests) == 1 and waits == []
    assert (caught.value.status, caught.value.url, caught.value.attempts) == (status, server.url + "/chat/completions", 1)


def test_the_attempts_are_bounded_and_the_error_names_the_url_and_last_status(serve, waits):
    server = serve((502, {}, b"bad gateway"))
    backend = OpenAICompatibleBackend(server.url, "m", retry=RetryPolicy(attempts=3, jitter=0.0))
    with pytest.raises(BackendError) as caught:
        backend.complete(HI)
    assert str(caught.value) == f"POST {server.url}/chat/completions failed after 3 attempts: HTTP 502: 'bad gateway'"
    assert caught.value.status == 502 and caught.value.attempts == 3
    assert len(server.requests) == 3 and waits == [0.5, 1.0]


def test_jitter_keeps_each_wait_between_its_share_and_the_whole_backoff(serve, waits):
    server = serve((500, {}, b"x"))
    policy = RetryPolicy(attempts=6, backoff_s=1.0, max_backoff_s=4.0, jitter=0.5)
    with pytest.raises(BackendError):
        OpenAICompatibleBackend(server.url, "m", retry=policy).complete(HI)
    full = [1.0, 2.0, 4.0, 4.0, 4.0]  # doubling, capped at max_backoff_s
    assert len(waits) == 5 and all(f / 2 <= w <= f for w, f in zip(waits, full, strict=True))


def test_no_wait_begins_that_would_pass_the_time_budget(serve, waits):
    server = serve((429, {"Retry-After": "3600"}, b"come back in an hour"))
    with pytest.raises(BackendError, match=r"failed \(waiting 3600.0 s more would pass the retry budget of 120 s\): "
                                           r"HTTP 429"):
        OpenAICompatibleBackend(server.url, "m").complete(HI)
    assert len(server.requests) == 1 and waits == []


def test_a_read_timeout_is_tried_again(serve, waits):
    server = serve(("hang", 1.0), completion("in time"))
    backend = OpenAICompatibleBackend(server.url, "m", timeout=0.2, retry=EXACT)
    assert backend.complete(HI) == "in time"
    assert len(server.requests) == 2 and waits == [0.5]


def test_a_refused_connection_is_tried_until_the_attempts_are_spent(serve, waits):
    server = serve(completion("gone"))
    url = server.url
    server.close()
    with pytest.raises(BackendError, match=r"failed after 4 attempts: ConnectError") as caught:
        OpenAICompatibleBackend(url, "m", connect_timeout=1.0, retry=EXACT).complete(HI)
    assert caught.value.status is None and waits == [0.5, 1.0, 2.0]


def test_the_timeouts_reach_the_http_client(serve):
    backend = OpenAICompatibleBackend(serve(completion("x")).url, "m", timeout=7.0, connect_timeout=3.0)
    backend.complete(HI)
    timeout = backend._client.timeout
    assert (timeout.connect, timeout.read, timeout.write) == (3.0, 7.0, 7.0)


def test_the_api_key_never_reaches_an_error_or_a_log_line(serve, waits, key, caplog):
    # The server echoes the Authorization header in its error body, first on a retried 503, then on a 401.
    server = serve((503, {}, None), (401, {}, None))
    with caplog.at_level(logging.DEBUG, logger="engines.platform.chat"), pytest.raises(BackendError) as caught:
        OpenAICompatibleBackend(server.url, "m", api_key_env=key).complete(HI)
    assert [r["auth"] for r in server.requests] == [f"Bearer {KEY}"] * 2  # the key was sent, and echoed
    assert "HTTP 401" in str(caught.value) and "[api key]" in str(caught.value)
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)
    assert "HTTP 503" in caplog.text and KEY not in caplog.text
    assert KEY not in repr(OpenAICompatibleBackend(server.url, "m", api_key_env=key))


def test_the_key_is_read_only_from_a_declared_variable(serve, monkeypatch):
    monkeypatch.setenv("HAI_DATABASE_URL", "postgresql://hai:db-password@db/hai")
    with pytest.raises(SecretRefused, match="api_key_env: 'HAI_DATABASE_URL' is not a variable declared"):
        OpenAICompatibleBackend(serve(completion("x")).url, "m", api_key_env="HAI_DATABASE_URL")
    with pytest.raises(TypeError):  # no way to hand the backend a key itself
        OpenAICompatibleBackend("http://127.0.0.1:9/v1", "m", api_key=KEY)


def test_a_200_that_is_not_a_chat_completion_is_not_tried_again(serve, waits):
    server = serve((200, {}, b'{"unexpected": true}'))
    with pytest.raises(BackendError, match="HTTP 200 but not a chat completion") as caught:
        OpenAICompatibleBackend(server.url, "m").complete(HI)
    assert len(server.requests) == 1 and caught.value.status == 200


@pytest.mark.parametrize(("value", "seconds"), [("5", 5.0), ("0.5", 0.5), ("-3", 0.0), ("soon", None), ("", None),
                                                 (None, None), ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0)])
def test_retry_after_values(value, seconds):
    assert retry_after(value) == seconds


@pytest.mark.parametrize("options", [{"attempts": 0}, {"jitter": 1.5}, {"budget_s": -1}])
def test_a_retry_policy_that_cannot_work_is_refused(options):
    with pytest.raises(ValueError):
        RetryPolicy(**options)
