"""Browser end-to-end fixtures: a real ``streamlit run app.py`` server and Debian's Chromium.

- ``e2e_db``: one migrated SQLite database per test session, holding the study ``demo``
  (protocol ``demo_survey``); ``e2e_db.engine`` is this process's engine for checking rows.
- ``app_server``: one Streamlit server per test module on that database (base URL in ``.base``).
- ``restartable_server``: a server of a test's own, on the same database, that the test may
  ``stop()``, ``start()`` or ``restart()`` (same port, so an open page can reload).
- ``browser``: one headless Chromium per session; ``new_page`` opens a page in a fresh context
  (its own cookies), closed after the test.

Every test here is skipped, with the reason, when ``/usr/bin/chromium`` or Playwright is missing.
Playwright drives Debian's chromium (``executable_path``); ``playwright install`` is never run.
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engines.platform import db as platform_db
from engines.platform import study_admin
from engines.platform.scratch import scratch_database

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
STREAMLIT = REPO_ROOT / ".venv" / "bin" / "streamlit"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]
HEALTH_TIMEOUT_S = 60.0
E2E_DIR = Path(__file__).resolve().parent


def _skip_reason() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"{CHROMIUM} is missing (install Debian's chromium: make chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    if not STREAMLIT.exists():
        return f"{STREAMLIT} is missing (make setup)"
    return None


SKIP_REASON = _skip_reason()


def pytest_collection_modifyitems(config, items):  # noqa: ARG001 - pytest hook
    if SKIP_REASON is None:
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(E2E_DIR):
            item.add_marker(skip)


# ------------------------------------------------------------------ database


@dataclass
class E2EDatabase:
    url: str
    data_dir: Path

    @property
    def engine(self):
        return platform_db.get_engine(self.url)

    def create_study(self, slug: str, protocol: str = "demo_survey", **kwargs) -> str:
        study_admin.create_study(slug, protocol, engine=self.engine, **kwargs)
        return slug


@pytest.fixture(scope="session")
def e2e_db(tmp_path_factory) -> Iterator[E2EDatabase]:
    """A fresh migrated SQLite database with the study ``demo``, shared by every browser test."""
    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    with scratch_database(None, migrated=True) as url:
        database = E2EDatabase(url, tmp_path_factory.mktemp("e2e-data"))
        database.create_study("demo")
        yield database
        platform_db.get_engine(url).dispose()


# ------------------------------------------------------------------ server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class StreamlitServer:
    """``streamlit run app.py`` in a subprocess, on a fixed port, against one database."""

    def __init__(self, database: E2EDatabase, log_dir: Path, port: int | None = None):
        self.database = database
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = log_dir / f"streamlit-{self.port}.log"
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "HAI_DATABASE_URL": self.database.url,
            "HAI_DATA_DIR": str(self.database.data_dir),
            "HAI_RUN_JOBS_IN_APP": "false",
           
            "PYTHONUNBUFFERED": "1",
        })
        return env

    def start(self) -> str:
        if self.process is not None and self.process.poll() is None:
            return self.base
        self.starts += 1
        log = open(self.log_path, "ab")  # noqa: SIM115 - closed with the process in stop()
        log.write(f"\n===== start #{self.starts} =====\n".encode())
        log.flush()
        self.process = subprocess.Popen(
            [str(STREAMLIT), "run", "app.py", "--server.headless", "true", "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=REPO_ROOT, env=self._env(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        self._log = log
        self._wait_healthy()
        return self.base

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + HEALTH_TIMEOUT_S
        last_error = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"streamlit exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.base}/_stcore/health", timeout=2) as response:
                    if response.read().decode().strip() == "ok":
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                last_error = str(exc)
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"streamlit was not healthy within {HEALTH_TIMEOUT_S}s ({last_error}):\n{self.log_tail()}")

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        self._log.close()

    def restart(self) -> str:
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@pytest.fixture(scope="session")
def app_server(e2e_db, tmp_path_factory) -> Iterator[StreamlitServer]:
    """One Streamlit server per test worker, on the shared e2e database: the browser files a worker
    runs share it (each start costs seconds of CPU: Streamlit, then the app's imports on the first
    page); a test that stops or restarts a server uses ``restartable_server``."""
    server = StreamlitServer(e2e_db, tmp_path_factory.mktemp("streamlit-logs"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def restartable_server(e2e_db, tmp_path) -> Iterator[StreamlitServer]:
    """A test's own server on the shared database; the test may stop/start/restart it."""
    server = StreamlitServer(e2e_db, tmp_path)
    server.start()
    yield server
    server.stop()


# ------------------------------------------------------------------ browser


@pytest.fixture(scope="session")
def playwright_instance():
    if SKIP_REASON:
        pytest.skip(SKIP_REASON)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_instance):
    browser = playwright_instance.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    yield browser
    browser.close()


@pytest.fixture
def new_page(browser, request):
    """``new_page()`` opens a page in a new browser context (a separate visitor); all closed at the end.

    On failure a screenshot of every open page goes to ``/tmp/e2e-fail-<test>-<n>.png``.
    """
    contexts = []

    def _new_page(context=None):
        if context is None:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(20_000)
            contexts.append(context)
        return context.new_page()

    yield _new_page
    failed = getattr(request.node, "rep_call", None)
    for i, context in enumerate(contexts):
        if failed is not None and failed.failed:
            for j, page in enumerate(context.pages):
                try:
                    page.screenshot(path=f"/tmp/e2e-fail-{request.node.name}-{i}-{j}.png", full_page=True)
                except Exception:  # noqa: BLE001 - best effort on an already failing test
                    pass
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


@pytest.fixture
def server_log_on_failure(request, app_server):
    """Print the module server's log tail when the test fails (add to tests that need it)."""
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(f"--- streamlit log ({app_server.log_path}) ---\n{app_server.log_tail()}")

