"""``chat.OpenAICompatibleBackend`` checks its endpoint when it is made, whoever makes it, before any request."""

from __future__ import annotations

import pytest

from engines.platform import settings
from engines.platform.chat import OpenAICompatibleBackend
from engines.platform.endpoints import EndpointRefused
from tests.collab.fake_llm import FakeServer


@pytest.fixture(autouse=True)
def settings_read_afresh():
    """Settings read from this test's environment, and forgotten after it (they are cached per process)."""
    settings.reset_settings()
    yield
    settings.reset_settings()


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data",  # a cloud's metadata service
    "http://[fe80::1]:8000/v1",
    "ftp://127.0.0.1/v1",
    "127.0.0.1:8000/v1",  # no scheme
    "http://key:secret@127.0.0.1:8000/v1",  # a key belongs in a declared variable
])
def test_a_backend_for_an_endpoint_the_server_may_not_reach_is_never_made(url):
    with pytest.raises(EndpointRefused, match="base_url: "):
        OpenAICompatibleBackend(url, "m", api_key_env="HAI_API_KEY_CHAT_TEST")


def test_a_listed_host_is_reached_and_any_other_refused(monkeypatch):
    server = FakeServer()
    server.replies.append("hello")
    try:
        monkeypatch.setenv("HAI_ENDPOINT_HOSTS", "127.0.0.1")
        monkeypatch.setenv("HAI_API_KEY_CHAT_TEST", "sk-test")
        backend = OpenAICompatibleBackend(server.url, "m", api_key_env="HAI_API_KEY_CHAT_TEST")
        assert backend.complete([{"role": "user", "content": "hi"}]) == "hello"
        assert server.requests[-1]["auth"] == "Bearer sk-test"
        with pytest.raises(EndpointRefused, match="the host 'localhost' is not among the endpoint hosts"):
            OpenAICompatibleBackend(server.url.replace("127.0.0.1", "localhost"), "m")
        monkeypatch.setenv("HAI_ENDPOINT_HOSTS", "")
        settings.reset_settings()
        with pytest.raises(EndpointRefused, match="no endpoint host is allowed on this server"):
            OpenAICompatibleBackend(server.url, "m")
    finally:
        server.close()
    assert len(server.requests) == 1
