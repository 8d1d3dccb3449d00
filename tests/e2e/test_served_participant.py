"""A participant in Chromium through ``make serve``'s proxy, when the app process they are on dies.

Two app processes behind nginx (``engines.platform.serve``), one database (PostgreSQL when
``HAI_TEST_DATABASE_URL`` is set, else SQLite). The participant answers a step, their process is
killed, and without reloading they go on: the tab reconnects through the proxy to the other
process, which shows the step they were at, and their next answer is stored once.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import time
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
pytest.importorskip("playwright.sync_api", reason="the playwright Python package is not installed")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} is missing (install Debian's chromium: make chromium)", allow_module_level=True)
if shutil.which("nginx", path="/usr/sbin:" + os.environ.get("PATH", "")) is None:
    pytest.skip("nginx is not installed (Debian: apt-get install nginx-light)", allow_module_level=True)

from engines.platform import serve, study_admin  # noqa: E402
from engines.platform.db import get_engine  # noqa: E402
from engines.platform.scratch import scratch_database  # noqa: E402
from studies.demo_survey import Comprehension, Consent, Instructions  # noqa: E402
from tests.e2e.browser_bot import BrowserParticipant, wait_ready  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def deployment(tmp_path):
    with scratch_database(os.environ.get("HAI_TEST_DATABASE_URL") or None) as url:
        study_admin.create_study("demo", "demo_survey", engine=get_engine(url))
        first = serve.free_ports(3)
        config = serve.ServeConfig(processes=2, workers=0, port=first, app_port=first + 1, run_dir=tmp_path)
        env = {**os.environ, "HAI_DATABASE_URL": url, "HAI_DATA_DIR": str(tmp_path / "data")}
        with serve.served(config, env) as running:
            yield running, get_engine(url)


def upstreams_of(route: str, access_log: Path) -> list[str]:
    """The app processes that served requests of ``route``, in order (one per log line)."""
    time.sleep(0.3)
    lines = [line.split() for line in access_log.read_text().splitlines()]
    return [parts[4] for parts in lines if len(parts) == 6 and parts[5] == route and parts[4] != "-"]


def test_a_participant_goes_on_without_reloading_when_their_process_dies(new_page, deployment):
    running, engine = deployment
    p = BrowserParticipant(new_page(), running.url, "demo", f"e2e-served-{secrets.token_hex(4)}", engine)
    p.open()
    p.answer({"agree": True}, step=Consent)

    route = next(c["value"] for c in p.page.context.cookies() if c["name"] == serve.ROUTE_COOKIE)
    access_log = running.run_dir / "logs" / "proxy-access.log"
    home = upstreams_of(route, access_log)[-1]
    assert set(upstreams_of(route, access_log)) == {home}, "the tab's requests went to more than one process"
    dying = next(app for app in running.apps if app.name == f"app {home.rsplit(':', 1)[1]}")
    os.killpg(dying.pid, signal.SIGKILL)
    dying.process.wait(timeout=10)

    # No reload: the tab reconnects by itself, through the proxy, to the process left.
    wait_ready(p.page, timeout_ms=30_000)
    view = p.view()
    assert view.step.step is Instructions
    p.expect_showing(view)
    after = p.answer({}, step=Instructions)
    assert after.step.step is Comprehension
    assert [r.step_index for r in p.responses()] == [0, 1]
    assert upstreams_of(route, access_log)[-1] != home
