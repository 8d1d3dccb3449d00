"""What ``make serve`` sets up around the app processes (``engines.platform.serve``): the environment
they start with (the proxy trusted by address, no endpoint hosts unless the operator lists them) and
nginx's configuration (no framing, request limits per client address), checked as text and on a
running nginx in front of a stand-in app."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from engines.platform import login_throttle, serve
from engines.platform.endpoints import EndpointRefused, check_endpoint_url
from engines.platform.settings import reset_settings

NGINX = shutil.which("nginx", path="/usr/sbin:/usr/local/sbin:" + os.environ.get("PATH", ""))


@pytest.fixture
def no_env_file(tmp_path, monkeypatch) -> Path:
    """The repository's .env replaced by one of the test's own (empty until a test writes it)."""
    path = tmp_path / ".env"
    monkeypatch.setattr(serve, "ENV_FILE", path)
    return path


# --- The app processes' environment ------------------------------------------------------------


def test_the_app_processes_trust_the_proxy_by_address_not_by_a_flag(no_env_file):
    env = serve.child_environment(serve.ServeConfig(), base={})
    assert env["HAI_TRUSTED_PROXIES"] == "127.0.0.1"
    assert "HAI_TRUST_FORWARDED_FOR" not in env


def test_the_operators_proxies_stay_trusted_beside_nginx(no_env_file):
    env = serve.child_environment(serve.ServeConfig(), base={"HAI_TRUSTED_PROXIES": "10.0.0.5, 192.0.2.0/24"})
    assert env["HAI_TRUSTED_PROXIES"] == "127.0.0.1,10.0.0.5,192.0.2.0/24"
    no_env_file.write_text("HAI_TRUSTED_PROXIES=10.0.0.9\n")
    assert serve.child_environment(serve.ServeConfig(), base={})["HAI_TRUSTED_PROXIES"] == "127.0.0.1,10.0.0.9"


def test_without_the_proxy_nothing_is_trusted_for_the_operator(no_env_file):
    env = serve.child_environment(serve.ServeConfig(proxy=False), base={})
    assert "HAI_TRUSTED_PROXIES" not in env


def test_served_apps_allow_no_endpoint_host_unless_the_operator_lists_them(no_env_file, monkeypatch):
    env = serve.child_environment(serve.ServeConfig(), base={})
    assert env["HAI_ENDPOINT_HOSTS"] == ""
    monkeypatch.setenv("HAI_ENDPOINT_HOSTS", env["HAI_ENDPOINT_HOSTS"])
    reset_settings()
    try:
        with pytest.raises(EndpointRefused, match="no endpoint host is allowed on this server"):
            check_endpoint_url("https://api.openai.com/v1", field="base_url")
    finally:
        reset_settings()
    for listed in ("api.openai.com,judge.lab.org", "*"):
        assert serve.child_environment(serve.ServeConfig(), base={"HAI_ENDPOINT_HOSTS": listed})[
            "HAI_ENDPOINT_HOSTS"] == listed


def test_an_endpoint_list_in_the_env_file_is_not_overridden(no_env_file):
    """The app processes read .env too; an empty variable in their environment would win over it."""
    no_env_file.write_text("HAI_ENDPOINT_HOSTS=judge.lab.org\n")
    assert "HAI_ENDPOINT_HOSTS" not in serve.child_environment(serve.ServeConfig(), base={})


# --- nginx's configuration, as text --------------------------------------------------------------


def _config(trusted: str = "127.0.0.1", tmp: Path = Path("/run/hai")) -> str:
    return serve.nginx_config(serve.ServeConfig(processes=2, port=9000, app_port=9101), tmp, trusted)


def test_every_answer_forbids_framing():
    text = _config()
    server = text[text.index("    server {"):]
    assert "add_header X-Frame-Options \"DENY\" always;" in server
    assert "add_header Content-Security-Policy \"frame-ancestors 'none'\" always;" in server
    # nginx drops the server's add_header in a location that has one of its own: none has.
    locations = re.findall(r"location (\S+) \{([^}]*)\}", server)
    assert locations and all("add_header" not in body for _, body in locations)


def test_documents_sessions_and_uploads_are_limited_per_client_and_static_files_are_not():
    text = _config()
    locations = dict(re.findall(r"location (\S+) \{ ([^}]*)\}", text))
    assert locations["/"].startswith("limit_req zone=hai_pages burst=50 nodelay;")
    assert locations["/_stcore/stream"].startswith("limit_req zone=hai_sessions burst=50 nodelay;")
    assert locations["/_stcore/upload_file"].startswith("limit_req zone=hai_uploads burst=20 nodelay;")
    for route in ("/static/", "/media/", "/_stcore/"):
        assert "limit_req" not in locations[route]
    assert "limit_req_zone $hai_client zone=hai_pages:10m rate=5r/s;" in text
    assert "limit_req_zone $hai_client zone=hai_uploads:10m rate=2r/s;" in text
    assert "limit_conn hai_connections 200;" in text
    assert "limit_req_status 429;" in text


def test_the_client_address_comes_only_from_trusted_proxies():
    text = _config("127.0.0.1, 10.0.0.0/8")
    assert re.findall(r"set_real_ip_from (\S+);", text) == ["127.0.0.1/32", "10.0.0.0/8"]
    assert "real_ip_header X-Forwarded-For;" in text and "real_ip_recursive on;" in text
    # A proxy's own address (one that named no client) is never counted: it stands for everyone behind it.
    assert "geo $hai_from_proxy { default 0; 127.0.0.1/32 1; 10.0.0.0/8 1; }" in text
    assert 'map $hai_from_proxy $hai_client { 1 ""; default $binary_remote_addr; }' in text


def test_a_trusted_proxy_setting_that_is_no_address_never_reaches_the_file():
    with pytest.raises(ValueError, match="HAI_TRUSTED_PROXIES: '1.2.3.4; include /etc/passwd' is not an IP"):
        _config("127.0.0.1, 1.2.3.4; include /etc/passwd")


# --- nginx itself, in front of a stand-in app ---------------------------------------------------


class _Echo(http.server.BaseHTTPRequestHandler):
    """The stand-in app: answers every request with the X-Forwarded-For it received."""

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = (self.headers.get("X-Forwarded-For") or "").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:  # noqa: ARG002 - quiet
        return


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def proxy(tmp_path):
    """Start nginx with ``serve``'s configuration for ``trusted`` in front of the stand-in app; its URL."""
    if NGINX is None:
        pytest.skip("nginx is not installed")
    app = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=app.serve_forever, daemon=True).start()
    started = []

    def start(trusted: str) -> str:
        run_dir = tmp_path / f"nginx-{len(started)}"
        config = serve.ServeConfig(processes=1, port=_free_port(), app_port=app.server_address[1], run_dir=run_dir)
        nginx = serve._check_proxy(config, run_dir, trusted)  # also has nginx check the file (nginx -t)
        started.append(subprocess.Popen([nginx, "-e", str(run_dir / "logs" / "nginx-error.log"), "-p", str(run_dir),
                                         "-c", str(run_dir / "nginx.conf"), "-g", "daemon off;"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", config.port)) == 0:
                    return f"http://127.0.0.1:{config.port}"
            time.sleep(0.05)
        raise AssertionError(f"nginx did not listen:\n{serve.log_tail(run_dir / 'logs' / 'nginx-error.log')}")

    yield start
    for process in started:
        process.terminate()
        process.wait(timeout=10)
    app.shutdown()


def _request(url: str, forwarded: str | None = None, method: str = "GET") -> tuple[int, dict, str]:
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    request = urllib.request.Request(url, headers=headers, method=method, data=b"x" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), ""


def test_nginx_forbids_framing_and_throttles_one_client_not_the_others(proxy):
    base = proxy("127.0.0.1")
    status, headers, _ = _request(base + "/")
    assert status == 200 and headers["X-Frame-Options"] == "DENY"
    assert headers["Content-Security-Policy"] == "frame-ancestors 'none'"
    # One client's uploads beyond the burst (20 at once, then 2 a second) are refused, with the headers.
    answers = [_request(base + "/_stcore/upload_file/s/f", "203.0.113.7", "POST") for _ in range(26)]
    statuses = [status for status, _, _ in answers]
    assert 21 <= statuses.count(200) <= 23 and statuses[-1] == 429, statuses
    assert next(h for s, h, _ in answers if s == 429)["X-Frame-Options"] == "DENY"
    # Another client behind the same proxy is not held back by it.
    assert _request(base + "/_stcore/upload_file/s/f", "198.51.100.2", "POST")[0] == 200
    # Static files are never limited.
    assert {_request(base + "/static/app.js", "203.0.113.7")[0] for _ in range(60)} == {200}


def test_the_app_behind_nginx_counts_logins_under_the_client_nginx_names(proxy):
    base = proxy("127.0.0.1")
    _, _, seen = _request(base + "/", "6.6.6.6, 203.0.113.9")
    assert login_throttle.client_address("127.0.0.1", seen, trusted="127.0.0.1") == "203.0.113.9"


def test_nginx_ignores_the_forwarded_for_of_an_untrusted_peer(proxy):
    """Here 127.0.0.1 is no trusted proxy: every request counts under it, whatever it claims."""
    base = proxy("10.9.9.9")
    statuses = [_request(base + "/_stcore/upload_file/s/f", f"198.51.100.{i}", "POST")[0] for i in range(26)]
    assert statuses.count(429) >= 3, statuses


def test_a_trusted_proxy_that_names_no_client_is_not_throttled_as_one(proxy):
    """Its address stands for everyone behind it: limiting it would limit them all together."""
    base = proxy("127.0.0.1")
    assert {_request(base + "/_stcore/upload_file/s/f", None, "POST")[0] for _ in range(30)} == {200}
