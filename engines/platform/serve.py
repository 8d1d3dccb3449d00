"""Several app processes behind one sticky reverse proxy, plus job workers: ``make serve``.

One Streamlit process runs every page script in one Python interpreter, so its pages share one
core (the GIL). More participants at once than one process serves need more processes, all on
one database (PostgreSQL; SQLite works on one machine but queues every writer of every process
on one file lock), with a proxy in front that keeps each browser on the process its session
lives in. This module starts and supervises that set:

- ``processes`` ``streamlit run app.py`` servers on ``127.0.0.1:<app_port>...`` (never reachable
  from outside: only the proxy talks to them), with ``HAI_RUN_JOBS_IN_APP=false``;
- ``workers`` ``python -m engines.platform worker`` processes that run the jobs (local or Ray
  executor, as ``HAI_JOB_EXECUTOR`` says);
- nginx from the operating system, with a configuration written here (``nginx_config``).

Sticky sessions: nginx's open-source build has no ``sticky cookie``, so the proxy sets a random
``hai_route`` cookie on a browser's first request and picks the app process by a consistent hash
of it (``hash $hai_route consistent``). A Streamlit session lives in its process's memory
(widget state, uploaded files, ``st.image`` media), so every request of a tab must reach the
same process while it runs. When that process goes away, nginx sends the reconnect to another
one; nothing a participant did is lost, because the database is the record: the study link
resumes the participant at their step there, and a repeated submit is stored once
(``tests/platform/test_serve.py`` runs both on two real processes).

The proxy also forbids framing (clickjacking) and limits, per client address, how fast new pages,
new sessions (websockets) and uploads may come (``RATE_LIMITS``). The client address is the peer's,
or, from a proxy in front named in ``HAI_TRUSTED_PROXIES`` (a TLS terminator), the one it puts in
``X-Forwarded-For``; the app processes count failed logins under the same address.

Example::

    HAI_DATABASE_URL=postgresql+psycopg://hai@db/hai python -m engines.platform serve --processes 2 --port 8501
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from dotenv import dotenv_values

from engines.platform.login_throttle import trusted_networks
from engines.platform.private_files import private_dir
from engines.platform.settings import REPO_ROOT, get_settings

ROUTE_COOKIE = "hai_route"
HEALTH_PATH = "/_stcore/health"
RESTART_DELAY_S = 2.0
# A child that dies this soon after starting, this many times in a row, is broken (bad settings,
# a port taken): the whole set stops and says so instead of restarting it forever.
QUICK_DEATH_S = 10.0
QUICK_DEATHS_TOLERATED = 3
# nginx talks to the app processes from here: they read its X-Forwarded-For.
PROXY_ADDRESS = "127.0.0.1"
ENV_FILE = REPO_ROOT / ".env"  # the settings file the app processes read (they run in REPO_ROOT)
# Anti-framing: no other site may show the app in a frame and trick a logged-in researcher into clicks.
FRAMING_HEADERS = (("X-Frame-Options", "DENY"), ("Content-Security-Policy", "frame-ancestors 'none'"))


@dataclass(frozen=True)
class RateLimit:
    """Requests one client address may send to some routes: ``rate`` per second on average, ``burst``
    more at once (served at once, ``nodelay``); beyond that nginx answers 429."""

    zone: str
    rate: int
    burst: int


# What a person does costs a handful of these: a page load is one document request and one websocket
# (reruns, form submits and logins travel inside it); an upload is one request. A lab of 40 browsers
# behind one NAT address opening a study at the same moment fits in each burst. Streamlit's static
# bundle (/static/), media (/media/) and small endpoints (/_stcore/health) are not limited: a first
# page load fetches dozens of them, and they cost the app nothing.
RATE_LIMITS = {
    "/": RateLimit("hai_pages", rate=5, burst=50),  # documents: the study links, the login page, every page
    "/_stcore/stream": RateLimit("hai_sessions", rate=5, burst=50),  # new sessions (websocket upgrades)
    "/_stcore/upload_file": RateLimit("hai_uploads", rate=2, burst=20),
}
UNLIMITED_ROUTES = ("/static/", "/media/", "/_stcore/")
CONNECTIONS_PER_ADDRESS = 200  # open connections: one websocket per tab, a few for static files


class ServeError(RuntimeError):
    """The set cannot start or keep running; the message says which process and why."""


@dataclass(frozen=True)
class ServeConfig:
    """What ``serve`` starts.

    Args:
        processes: Streamlit app processes (each uses about one core when busy).
        workers: job worker processes (0: jobs are not run by this set).
        host / port: where the proxy listens (participants' and researchers' address).
        app_port: the first app process's port on 127.0.0.1; the others follow it.
        proxy: start nginx; False serves the app processes only (for a proxy of your own:
            ``nginx_config`` shows what it must do).
        nginx: the nginx executable.
        run_dir: the proxy's configuration, pid file, logs and temp files, and the processes' logs
            (default: ``<HAI_DATA_DIR>/serve``).
    """

    processes: int = 2
    workers: int = 1
    host: str = "127.0.0.1"
    port: int = 8501
    app_port: int = 8511  # the command line's default: the proxy's port + 10
    proxy: bool = True
    nginx: str = "nginx"
    run_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.processes < 1:
            raise ServeError(f"--processes must be at least 1, got {self.processes}")
        if self.workers < 0:
            raise ServeError(f"--workers must be 0 or more, got {self.workers}")
        ports = set(self.app_ports)
        if self.proxy and self.port in ports:
            raise ServeError(f"the proxy's port {self.port} is among the app ports "
                             f"{min(ports)}-{max(ports)}; choose another --app-port")
        if self.app_port < 1 or max(ports) > 65535:
            raise ServeError(f"--app-port {self.app_port} leaves no room for {self.processes} ports")

    @property
    def app_ports(self) -> list[int]:
        return [self.app_port + i for i in range(self.processes)]

    @property
    def folder(self) -> Path:
        return self.run_dir or get_settings().data_dir / "serve"


def _location(route: str, limit: RateLimit | None) -> str:
    limit_line = f"limit_req zone={limit.zone} burst={limit.burst} nodelay; " if limit else ""
    return f"        location {route} {{ {limit_line}proxy_pass http://hai_app; }}\n"


def nginx_config(config: ServeConfig, run_dir: Path, trusted_proxies: str = PROXY_ADDRESS) -> str:
    """The nginx configuration of ``config``: one sticky upstream of the app processes.

    Everything nginx writes (pid, logs, request bodies) goes under ``run_dir``, so it runs
    without root and beside any nginx the machine already has. ``trusted_proxies`` (the value of
    ``HAI_TRUSTED_PROXIES``): the proxies in front whose ``X-Forwarded-For`` names the client.

    Raises:
        ValueError: an entry of ``trusted_proxies`` is not an address or network.
    """
    servers = "\n".join(f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;" for port in config.app_ports)
    temp = run_dir / "nginx-temp"
    max_body_mb = 51  # Streamlit refuses uploads over 50 MB itself (.streamlit/config.toml) with a clear message
    # Started by root, nginx's workers would run as "nobody" and could not use the private folders
    # below: they run as the user who owns them (run `make serve` as a service account, not root).
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};\n" if os.geteuid() == 0 else ""
    # Parsed, then written back: nothing but an address or a network reaches the file.
    proxies = [str(network) for network in trusted_networks(trusted_proxies)]
    real_ip = "".join(f"    set_real_ip_from {network};\n" for network in proxies)
    proxy_geo = "".join(f" {network} 1;" for network in proxies)
    zones = "".join(f"    limit_req_zone $hai_client zone={limit.zone}:10m rate={limit.rate}r/s;\n"
                    for limit in RATE_LIMITS.values())
    # "always": the 429 and error answers carry them too.
    headers = "\n".join(f'        add_header {name} "{value}" always;' for name, value in FRAMING_HEADERS)
    locations = "".join(_location(route, limit) for route, limit in RATE_LIMITS.items())
    locations += "".join(_location(route, None) for route in UNLIMITED_ROUTES)
    return f"""# Written by engines/platform/serve.py; rewritten at every start.
{user}worker_processes 1;
pid {run_dir}/nginx.pid;
error_log {run_dir}/logs/nginx-error.log warn;
events {{ worker_connections 4096; }}
http {{
    # Which app process served which route (never the query string: study links carry panel ids).
    log_format hai_route '$time_iso8601 $status $request_method $uri $upstream_addr $hai_route';
    access_log {run_dir}/logs/proxy-access.log hai_route;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    client_max_body_size {max_body_mb}m;
    large_client_header_buffers 4 8k;

    # The client's address ($remote_addr): from a trusted proxy in front (HAI_TRUSTED_PROXIES), the
    # last X-Forwarded-For entry that is not itself a trusted proxy; from anyone else, the peer.
{real_ip}    real_ip_header X-Forwarded-For;
    real_ip_recursive on;

    # Limits count per client address, never under a trusted proxy's own address (one that sent no
    # X-Forwarded-For): that address stands for everyone behind it. An empty key is not counted.
    geo $hai_from_proxy {{ default 0;{proxy_geo} }}
    map $hai_from_proxy $hai_client {{ 1 ""; default $binary_remote_addr; }}
{zones}    limit_conn_zone $hai_client zone=hai_connections:10m;
    limit_req_status 429;
    limit_conn_status 429;

    map $http_upgrade $connection_upgrade {{ default upgrade; "" close; }}
    # The browser's route: its cookie, or a new random one on its first request.
    map $cookie_{ROUTE_COOKIE} $hai_route {{ "" $request_id; default $cookie_{ROUTE_COOKIE}; }}
    map $cookie_{ROUTE_COOKIE} $hai_set_route {{
        "" "{ROUTE_COOKIE}=$request_id; Path=/; HttpOnly; SameSite=Lax";
        default "";
    }}

    upstream hai_app {{
        hash $hai_route consistent;
{servers}
        keepalive 32;
    }}

    server {{
        listen {config.host}:{config.port};
        limit_conn hai_connections {CONNECTIONS_PER_ADDRESS};
        # Inherited by every location below (none sets its own).
        proxy_http_version 1.1;
        proxy_set_header Upgrade $http_upgrade;
        proxy_set_header Connection $connection_upgrade;
        # With the port: Streamlit accepts a websocket whose Origin matches its Host.
        proxy_set_header Host $http_host;
        proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        proxy_set_header X-Forwarded-Proto $scheme;
        proxy_read_timeout 86400s;
        proxy_send_timeout 86400s;
        # A process that is down: the next one in the ring takes its browsers.
        proxy_next_upstream error timeout http_502 http_503;
        proxy_connect_timeout 2s;
        add_header Set-Cookie $hai_set_route;
{headers}
{locations}    }}
}}
"""


def _operator_value(name: str, env: Mapping[str, str]) -> str | None:
    """The operator's value of setting ``name``: from the environment, else from the repository's
    ``.env`` (which the app processes read too, run from there); None when neither sets it."""
    for source in (env, dotenv_values(ENV_FILE)):
        for key, value in source.items():
            if key.upper() == name and value is not None:  # pydantic-settings reads names in any case
                return value
    return None


def child_environment(config: ServeConfig, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of every child: this one's, jobs left to the workers, the proxy trusted, and
    no model endpoint host allowed unless the operator lists them."""
    env = dict(os.environ if base is None else base)
    env.update({"HAI_RUN_JOBS_IN_APP": "false", "PYTHONUNBUFFERED": "1"})
    if config.proxy:
        # nginx puts the client in X-Forwarded-For; the app processes listen on 127.0.0.1 only, so no
        # client can reach them around it. Proxies the operator put in front stay trusted.
        operator = [entry.strip() for entry in (_operator_value("HAI_TRUSTED_PROXIES", env) or "").split(",")]
        env["HAI_TRUSTED_PROXIES"] = ",".join(dict.fromkeys([PROXY_ADDRESS, *filter(None, operator)]))
    # A served app is reachable by researchers who should not make the server send requests (with
    # API keys) to hosts of their choosing: the operator names the endpoint hosts.
    if _operator_value("HAI_ENDPOINT_HOSTS", env) is None:
        env["HAI_ENDPOINT_HOSTS"] = ""
    return env


def app_command(port: int) -> list[str]:
    streamlit = Path(sys.executable).with_name("streamlit")
    return [str(streamlit), "run", str(REPO_ROOT / "app.py"), "--server.headless", "true",
            "--server.address", "127.0.0.1", "--server.port", str(port),
            "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none",
            "--server.maxUploadSize", str(get_settings().upload_max_mb)]  # one number: HAI_UPLOAD_MAX_MB


def worker_command() -> list[str]:
    return [sys.executable, "-m", "engines.platform", "worker"]


@dataclass
class Child:
    """One supervised process: how to start it, and its current run."""

    name: str
    argv: list[str]
    log_path: Path
    health_url: str | None = None
    process: subprocess.Popen | None = None
    started_at: float = 0.0
    quick_deaths: int = 0
    restarts: int = 0

    def start(self, env: Mapping[str, str]) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.argv, cwd=REPO_ROOT, env=dict(env), stdout=log,
                                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout_s: float = 10.0) -> None:
        if not self.alive():
            return
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=timeout_s)


def free_ports(count: int) -> int:
    """The first of ``count`` consecutive ports free now on 127.0.0.1 (for ``app_port``)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        held = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise ServeError(f"no run of {count} free ports on 127.0.0.1")


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def wait_healthy(child: Child, timeout_s: float = 120.0) -> None:
    """Return once ``child`` answers its health URL; raise with its log's end if it exits or stalls."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not child.alive():
            code = child.process.returncode if child.process else None
            raise ServeError(f"{child.name} exited with code {code} while starting:\n{log_tail(child.log_path)}")
        if child.health_url is None:
            return
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            with urllib.request.urlopen(child.health_url, timeout=2) as response:
                if response.status == 200:
                    return
        time.sleep(0.2)
    raise ServeError(f"{child.name} did not answer {child.health_url} within {timeout_s:g} s:\n"
                     f"{log_tail(child.log_path)}")


@dataclass
class ServedSet:
    """The running processes of one ``serve``; ``url`` is where browsers go."""

    config: ServeConfig
    run_dir: Path
    children: list[Child] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.config.host in ("0.0.0.0", "") else self.config.host  # noqa: S104 - a listen address
        port = self.config.port if self.config.proxy else self.config.app_port
        return f"http://{host}:{port}"

    @property
    def apps(self) -> list[Child]:
        return [c for c in self.children if c.name.startswith("app ")]

    def supervise_once(self) -> list[str]:
        """Restart every child that has exited; what happened, one line each (empty: all running).

        Raises:
            ServeError: a child keeps dying right after it starts.
        """
        events = []
        for child in self.children:
            if child.alive():
                if time.monotonic() - child.started_at > QUICK_DEATH_S:
                    child.quick_deaths = 0
                continue
            code = child.process.returncode if child.process else None
            if time.monotonic() - child.started_at < QUICK_DEATH_S:
                child.quick_deaths += 1
            if child.quick_deaths > QUICK_DEATHS_TOLERATED:
                raise ServeError(f"{child.name} exited {child.quick_deaths} times within {QUICK_DEATH_S:g} s of "
                                 f"starting (last code {code}):\n{log_tail(child.log_path)}")
            child.start(self.env)
            child.restarts += 1
            events.append(f"{child.name} exited with code {code}; restarted (pid {child.pid}, log {child.log_path})")
        return events

    def stop(self) -> None:
        # The proxy first, so that no new request reaches an app process that is going away.
        for child in sorted(self.children, key=lambda c: c.name != "proxy"):
            child.stop()


def _children(config: ServeConfig, run_dir: Path, nginx: str | None) -> list[Child]:
    logs = private_dir(run_dir / "logs")
    children = [Child(f"app {port}", app_command(port), logs / f"app-{port}.log",
                      health_url=f"http://127.0.0.1:{port}{HEALTH_PATH}") for port in config.app_ports]
    children += [Child(f"worker {i + 1}", worker_command(), logs / f"worker-{i + 1}.log")
                 for i in range(config.workers)]
    if nginx is not None:
        conf = run_dir / "nginx.conf"
        # One log for what nginx prints at start and what it logs later: a failed start shows its reason.
        children.append(Child("proxy", [nginx, "-e", str(logs / "nginx-error.log"), "-p", str(run_dir),
                                        "-c", str(conf), "-g", "daemon off;"],
                              logs / "nginx-error.log", health_url=f"http://{_local(config.host)}:{config.port}{HEALTH_PATH}"))
    return children


def _local(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "", "::") else host  # noqa: S104 - a listen address


def _check_proxy(config: ServeConfig, run_dir: Path, trusted_proxies: str) -> str:
    """Write nginx's configuration and have nginx check it; the nginx executable to start."""
    # Debian puts nginx in /usr/sbin, which is not on every user's PATH.
    nginx = shutil.which(config.nginx) or shutil.which(config.nginx, path="/usr/sbin:/usr/local/sbin")
    if nginx is None:
        raise ServeError(f"nginx was not found ({config.nginx!r}): install the distribution's package "
                         "(Debian: apt-get install nginx-light), pass --nginx PATH, or --no-proxy and a proxy of your own")
    conf = run_dir / "nginx.conf"
    private_dir(run_dir / "logs")
    for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
        private_dir(run_dir / "nginx-temp" / sub)
    try:
        conf.write_text(nginx_config(config, run_dir, trusted_proxies))
    except ValueError as exc:
        raise ServeError(str(exc)) from None
    test = subprocess.run([nginx, "-t", "-q", "-e", str(run_dir / "logs" / "nginx-error.log"), "-p", str(run_dir),
                           "-c", str(conf)], capture_output=True, text=True, timeout=30)
    if test.returncode != 0:
        raise ServeError(f"nginx refused its configuration {conf}:\n{(test.stderr or test.stdout).strip()}")
    return nginx


@contextlib.contextmanager
def served(config: ServeConfig, env: Mapping[str, str] | None = None) -> Iterator[ServedSet]:
    """Start the set, wait until every app process and the proxy answer, stop it all on exit.

    The database must be migrated first (``python -m engines.platform bootstrap``): the processes
    start together and must not race to migrate it.
    """
    run_dir = private_dir(config.folder)
    child_env = child_environment(config, env)
    nginx = _check_proxy(config, run_dir, child_env.get("HAI_TRUSTED_PROXIES", PROXY_ADDRESS)) if config.proxy else None
    served_set = ServedSet(config, run_dir, _children(config, run_dir, nginx), child_env)
    try:
        for child in served_set.children:
            if child.name == "proxy":
                for app in served_set.apps:
                    wait_healthy(app)
            child.start(served_set.env)
        for child in served_set.children:
            if child.health_url:
                wait_healthy(child)
        yield served_set
    finally:
        served_set.stop()


def database_warning(url: str, processes: int) -> str | None:
    """A line to print when several processes would share a SQLite file."""
    if processes > 1 and url.startswith("sqlite"):
        return ("note: several app processes on SQLite queue every write of every process on one file lock; "
                "use PostgreSQL (HAI_DATABASE_URL=postgresql+psycopg://...) for more participants than one process serves")
    return None


def serve_forever(config: ServeConfig, *, poll_s: float = 1.0, out=print) -> None:
    """``served`` until SIGINT or SIGTERM, restarting any process that exits."""

    def stop(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    warning = database_warning(get_settings().resolved_database_url, config.processes)
    if warning:
        out(warning)
    try:
        with served(config) as running:
            apps = ", ".join(str(p) for p in config.app_ports)
            out(f"serving {running.url} : {config.processes} app processes (127.0.0.1:{apps}), "
                f"{config.workers} job workers{', nginx with sticky sessions' if config.proxy else ''}; "
                f"logs in {running.run_dir / 'logs'}; Ctrl-C to stop")
            while True:
                time.sleep(poll_s)
                for line in running.supervise_once():
                    out(line)
    except KeyboardInterrupt:
        out("stopped")
