"""Several real app processes on one database, alone and behind nginx (``engines.platform.serve``).

A participant who reconnects may land on another process: the study link resumes them there, a
submit that reaches both processes is stored once, and condition balance counts the arrivals of
both. Behind the proxy, every request of a browser goes to one process (its route cookie), the
browsers spread over the processes, and when a process dies its browsers reach another one and
resume. The database is PostgreSQL when ``HAI_TEST_DATABASE_URL`` is set (as in CI), else SQLite.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path

import pytest
from sqlmodel import Session, select

from bench.load import plan_answers, study_query
from bench.streamlit_ws import StreamlitSession
from engines.platform import runtime, serve, study_admin
from engines.platform.db import get_engine
from engines.platform.models import Participant, StepResponse
from engines.platform.scratch import scratch_database
from pages._step_form import widget_key
from tests.helpers import run_async

pytestmark = pytest.mark.slow
PROTOCOL = "demo_survey"


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    with scratch_database(os.environ.get("HAI_TEST_DATABASE_URL") or None) as url:
        yield url, tmp_path_factory.mktemp("serve-data")


@pytest.fixture(scope="module")
def plan():
    return plan_answers(PROTOCOL, must_fail=False)


def child_env(url: str, data_dir: Path) -> dict[str, str]:
    return {**os.environ, "HAI_DATABASE_URL": url, "HAI_DATA_DIR": str(data_dir)}


@pytest.fixture(scope="module")
def two_apps(database, tmp_path_factory):
    """Two app processes, no proxy: the test picks the process a participant reaches."""
    url, data_dir = database
    config = serve.ServeConfig(processes=2, workers=0, proxy=False, app_port=serve.free_ports(2),
                               run_dir=tmp_path_factory.mktemp("serve-apps"))
    with serve.served(config, child_env(url, data_dir)):
        yield [f"http://127.0.0.1:{port}" for port in config.app_ports]


def new_study(url: str, label: str) -> str:
    slug = f"serve-{label}-{os.urandom(3).hex()}"
    study_admin.create_study(slug, PROTOCOL, engine=get_engine(url))
    return slug


async def play(session: StreamlitSession, plan, items) -> None:
    """Submit the planned answers of ``items`` (indexes into the plan) on an open session."""
    for i in items:
        item = plan.items[i]
        values = {widget_key(item.step_index, name): value for name, value in item.data.items()}
        page = await session.submit(f"form-{item.step_index}", values)
        assert page.submit_button(f"form-{item.next_index}") is not None, (item, page.form_ids, page.alerts())


def stored(url: str, slug: str, external_id: str) -> tuple[Participant, list[StepResponse]]:
    with Session(get_engine(url)) as session:
        participant = session.get(Participant, runtime.find_participant(slug, external_id, engine=get_engine(url)))
        rows = session.exec(select(StepResponse).where(StepResponse.participant_id == participant.id)
                            .order_by(StepResponse.step_index)).all()
        return participant, list(rows)


def test_a_participant_resumes_on_the_other_process_and_a_submit_sent_to_both_is_stored_once(
        two_apps, database, plan):
    url, _ = database
    slug = new_study(url, "resume")
    link = study_query(slug, "p-moves")
    first, second = two_apps

    async def scenario():
        async with StreamlitSession.open(first, link) as tab:
            await tab.load()
            await play(tab, plan, [0, 1])  # consent, instructions on the first process
        # The reconnect reaches the second process: it shows the third step, not the consent.
        async with StreamlitSession.open(second, link) as tab_b, StreamlitSession.open(first, link) as tab_a:
            page_b, page_a = await tab_b.load(), await tab_a.load()
            at = plan.items[2].step_index
            assert page_b.submit_button(f"form-{at}") is not None, page_b.form_ids
            assert page_a.submit_button(f"form-{at}") is not None, page_a.form_ids
            # The same answer clicked in a tab on each process at once.
            await asyncio.gather(play(tab_a, plan, [2]), play(tab_b, plan, [2]))

    run_async(scenario())
    participant, rows = stored(url, slug, "p-moves")
    assert [r.step_index for r in rows] == [item.step_index for item in plan.items[:3]]
    assert participant.step_index == plan.items[3].step_index


def test_condition_balance_holds_for_arrivals_on_both_processes(two_apps, database):
    url, _ = database
    slug = new_study(url, "balance")

    async def arrive(i: int):
        async with StreamlitSession.open(two_apps[i % 2], study_query(slug, f"b{i}")) as tab:
            page = await tab.load()
            assert page.form_ids, page.alerts()

    async def everyone():
        await asyncio.gather(*(arrive(i) for i in range(8)))

    run_async(everyone())
    with Session(get_engine(url)) as session:
        study = study_admin.get_study(slug, engine=get_engine(url))
        conditions = Counter(p.condition for p in session.exec(
            select(Participant).where(Participant.study_id == study.id)))
    assert conditions == {"plain": 4, "explained": 4}


# ------------------------------------------------------------------ behind nginx


def _upstreams_by_route(access_log: Path) -> dict[str, set[str]]:
    routes: dict[str, set[str]] = {}
    for line in access_log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 6 and parts[4] != "-":
            routes.setdefault(parts[5], set()).add(parts[4])
    return routes


def _get(url: str, cookie: str | None = None) -> tuple[int, str | None]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        set_cookie = " ".join(response.headers.get_all("Set-Cookie") or [])
        match = re.search(rf"{serve.ROUTE_COOKIE}=([0-9a-f]+)", set_cookie)
        return response.status, match.group(1) if match else None


@pytest.mark.skipif(shutil.which("nginx", path="/usr/sbin:/usr/local/sbin:" + os.environ.get("PATH", "")) is None,
                    reason="nginx is not installed (Debian: apt-get install nginx-light)")
def test_behind_nginx_a_browser_stays_on_one_process_and_moves_on_when_it_dies(database, plan, tmp_path):
    url, data_dir = database
    first_port = serve.free_ports(3)
    config = serve.ServeConfig(processes=2, workers=0, port=first_port, app_port=first_port + 1, run_dir=tmp_path)
    slug = new_study(url, "proxy")
    link = study_query(slug, "p-proxied")
    with serve.served(config, child_env(url, data_dir)) as running:
        base = running.url
        status, route = _get(f"{base}/")
        assert status == 200 and route, "the proxy sets a route cookie on the first request"
        cookie = f"{serve.ROUTE_COOKIE}={route}"
        assert _get(f"{base}/", cookie) == (200, None), "a browser that has its cookie is not given another"
        for _ in range(5):
            _get(f"{base}/_stcore/health", cookie)
        others = [_get(f"{base}/_stcore/health")[1] for _ in range(20)]

        async def first_visit():
            async with StreamlitSession.open(base, link, headers={"Cookie": cookie}) as tab:
                await tab.load()
                await play(tab, plan, [0, 1])

        run_async(first_visit())
        access_log = tmp_path / "logs" / "proxy-access.log"
        time.sleep(0.5)  # nginx writes a websocket's line when it closes
        routes = _upstreams_by_route(access_log)
        assert len(routes[route]) == 1, routes[route]
        used = set().union(*(routes[r] for r in others))
        assert used == {f"127.0.0.1:{p}" for p in config.app_ports}, "twenty new browsers all reached one process"

        # The process this browser was on goes away; its reconnect reaches the other one and resumes.
        [home] = routes[route]
        dying = next(app for app in running.apps if app.name == f"app {home.rsplit(':', 1)[1]}")
        os.killpg(dying.pid, signal.SIGKILL)
        dying.process.wait(timeout=10)

        async def after_the_crash():
            async with StreamlitSession.open(base, link, headers={"Cookie": cookie}) as tab:
                page = await tab.load()
                assert page.submit_button(f"form-{plan.items[2].step_index}") is not None, page.form_ids
                await play(tab, plan, [2])

        run_async(after_the_crash())
        participant, rows = stored(url, slug, "p-proxied")
        assert [r.step_index for r in rows] == [item.step_index for item in plan.items[:3]]

        # The supervisor starts the dead process again, and it serves.
        assert any("restarted" in line for line in running.supervise_once())
        serve.wait_healthy(dying)


def test_nginx_config_is_accepted_by_nginx_and_names_every_app_process(tmp_path):
    nginx = shutil.which("nginx", path="/usr/sbin:/usr/local/sbin:" + os.environ.get("PATH", ""))
    config = serve.ServeConfig(processes=3, port=9000, app_port=9101, run_dir=tmp_path)
    text = serve.nginx_config(config, tmp_path)
    assert re.findall(r"server 127\.0\.0\.1:(\d+)", text) == ["9101", "9102", "9103"]
    assert "hash $hai_route consistent;" in text and "listen 127.0.0.1:9000;" in text
    if nginx:
        (tmp_path / "nginx.conf").write_text(text)
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (tmp_path / "nginx-temp" / sub).mkdir(parents=True)
        (tmp_path / "logs").mkdir()
        check = subprocess.run([nginx, "-t", "-e", str(tmp_path / "err.log"), "-p", str(tmp_path),
                                               "-c", str(tmp_path / "nginx.conf")], capture_output=True, text=True)
        assert check.returncode == 0, check.stderr


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"processes": 0}, "--processes must be at least 1"),
    ({"workers": -1}, "--workers must be 0 or more"),
    ({"port": 8512, "app_port": 8511}, "among the app ports"),
    ({"app_port": 65535, "processes": 2}, "leaves no room"),
])
def test_a_set_that_cannot_run_is_refused_with_the_reason(kwargs, message):
    with pytest.raises(serve.ServeError, match=message):
        serve.ServeConfig(**kwargs)


def test_several_processes_on_sqlite_are_warned_about_and_one_is_not():
    assert "PostgreSQL" in serve.database_warning("sqlite:///data/x.db", 2)
    assert serve.database_warning("sqlite:///data/x.db", 1) is None
    assert serve.database_warning("postgresql+psycopg://db/hai", 4) is None


def test_a_proxy_that_cannot_listen_stops_the_set_with_nginx_s_reason(database, tmp_path):
    url, data_dir = database
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config = serve.ServeConfig(processes=1, workers=0, port=port, app_port=serve.free_ports(1), run_dir=tmp_path)
        if shutil.which("nginx", path="/usr/sbin:" + os.environ.get("PATH", "")) is None:
            pytest.skip("nginx is not installed")
        with pytest.raises(serve.ServeError, match="(?s)proxy exited .*Address already in use"), \
                serve.served(config, child_env(url, data_dir)):
            pass


def test_a_process_that_keeps_dying_at_start_is_restarted_then_given_up_with_its_log(tmp_path):
    log = tmp_path / "app.log"
    broken = serve.Child("app 1", ["sh", "-c", "echo port taken; exit 3"], log)
    running = serve.ServedSet(serve.ServeConfig(processes=1, proxy=False, run_dir=tmp_path), tmp_path, [broken],
                              dict(os.environ))
    broken.start(running.env)
    restarts = []
    with pytest.raises(serve.ServeError, match=r"(?s)app 1 exited 4 times .*last code 3.*port taken"):
        for _ in range(10):
            broken.process.wait(timeout=10)
            restarts += running.supervise_once()
    assert len(restarts) == serve.QUICK_DEATHS_TOLERATED
    assert all("exited with code 3; restarted" in line for line in restarts)
