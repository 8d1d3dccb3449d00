"""Every command the README and the platform manual show, run as written against a throw-away SQLite database.

A documented command that stops working (an option renamed, ``--json`` no longer accepted after the
subcommand, ``make run`` no longer serving) fails here. Commands that cannot run inside a test are
in ``SKIPPED`` with the reason, and a command the documents gain that is neither run nor skipped
fails ``test_every_documented_command_is_run_or_skipped``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = tuple(ROOT / name for name in ("README.md", "docs/platform.md", "docs/operations.md", "docs/design.md",
                                           "docs/benchmarks.md"))
VENV = Path(sys.prefix)  # the environment running the tests; make targets get it as VENV
BIN = Path(sys.executable).parent

# A span of inline code is a command when it starts with one of these programs (or names an
# executable file of the repository, such as `.ci/run`); `bench/collab.py` or `st.login` are not.
PROGRAMS = {"make", "python", "python3", "alembic", "streamlit", "pytest", "ruff", "pip",
            "sqlite3", "pg_dump", "pg_restore", "psql", "createdb", "dropdb"}
SHELL_FENCES = {"bash", "sh", "shell", "console"}


class Run(NamedTuple):
    """How a documented command runs here: ``command`` with its placeholders filled ("" = exactly as
    documented), ``expect`` a text its output must contain, ``stdin`` what is typed at its prompt."""

    command: str = ""
    expect: str = ""
    stdin: str = ""


# The command-line walk of the documents, in the order a researcher meets it; one database throughout.
CLI_WALK: dict[str, Run] = {
    "python -m engines.platform --help": Run(expect="usage: python -m engines.platform"),
    "python -m engines.platform serve --help": Run(expect="sticky sessions"),
    "python -m engines.platform bootstrap": Run(expect="one-time password: "),
    "python -m engines.platform create-user NAME --role admin": Run(
        "python -m engines.platform create-user lab-admin --role admin",
        expect="created admin account 'lab-admin'", stdin="a-long-enough-passw0rd\n"),
    """python -m engines.platform studies create pilot-1 demo_survey --config '{"completion_code": "C0DE"}'""":
        Run(expect="created study pilot-1"),
    "python -m engines.platform studies links pilot-1": Run(
        expect="/?study=pilot-1&PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"),
    "python -m engines.platform bots demo_survey": Run(expect="completed"),
    "python -m engines.platform studies progress pilot-1 --json": Run(expect='"condition": "plain"'),
    "python -m engines.platform export pilot-1 --out exports/pilot-1": Run(expect="exports/pilot-1/responses.csv"),
    "python -m engines.platform export pilot-1 --out shared/pilot-1 --pseudonymise": Run(
        expect="shared/pilot-1/participants.csv"),
    "python -m engines.platform jobs params": Run(expect="## `video.ask`: Video: ask a question about a long video"),
    "python -m engines.platform jobs submit KIND --params '{...}' [--wait]": Run(
        """python -m engines.platform jobs submit platform.countdown --params '{"seconds": 0}' --wait""",
        expect="succeeded"),
}

# Commands that serve until stopped, or need the repository itself: each has its own test below.
OWN_TESTS = {
    "make run": "test_make_run_serves_links_on_the_port_it_serves (and the default port: test_make_run_defaults_to_8501)",
    "make run PORT=8600": "test_make_run_serves_links_on_the_port_it_serves (a free port instead of 8600)",
    "python -m engines.platform worker": "test_worker_runs_queued_jobs",
    "make serve": "test_make_serve_runs_app_processes_behind_the_proxy_and_a_worker",
    "python -m engines.platform serve --processes 2 --workers 1":
        "test_make_serve_runs_app_processes_behind_the_proxy_and_a_worker (make serve runs this command)",
    "make serve PROCESSES=3": "test_make_serve_runs_app_processes_behind_the_proxy_and_a_worker (with 2)",
    "HAI_DATABASE_URL=postgresql+psycopg://hai@db:5432/hai make serve PROCESSES=2 WORKERS=1":
        "test_make_serve_runs_app_processes_behind_the_proxy_and_a_worker (on SQLite and a free port; "
        "tests/platform/test_serve.py runs the processes on PostgreSQL)",
    "alembic check": "test_alembic_check",
    'python -c "from engines.platform import migrate; migrate.revision(\'what changed\')"':
        "test_migration_revision_command (against a copy of the migrations folder)",
    "make lint": "test_make_lint",
    "make gpu-check": "tests/attribution/test_attribution_bench.py::"
                      "test_the_gpu_check_runs_its_checks_on_the_cpu_without_a_gpu_and_says_so (its script, bench/gpu_check.py)",
}

SKIPPED = {
    "make test": "runs the whole suite, this file included: it would run itself",
    ".ci/run": "the CI entry point, which is `make test` again (on PostgreSQL as well)",
    "make bench": "every full benchmark, one after another (the video accuracy alone about 15 minutes); each has a --quick variant run in tests/bench or its area's tests",
    "make run HOST=0.0.0.0": "serves every interface of the machine; test_make_run_serves_links_on_the_port_it_serves "
                             "runs the same target on the default 127.0.0.1",
    "make mutation": "mutation testing of every core module takes about 40 minutes (bench/results/mutation.json)",
    "make mutation-changed": "re-tests the core modules changed since their recorded run: seconds to 40 minutes",
    "python -m engines.attribution experiment": "the experiment on the shipped policies with every method takes about "
                                                "a minute; tests/attribution/test_experiment.py runs its --quick variant",
    "make lock": "rewrites the repository's lock files from the package index (minutes, network); "
                 "tests/platform/test_lock_files.py checks the locks it wrote",
    "python -m engines.hoi demo": "rewrites the shipped HOI-Edit demo (about 90 s); its steps run in tests/hoi "
                                  "(test_hoi_demo_data, test_hoi_scpe, test_hoi_evaluate, test_hoi_jobs, test_hoi_demo)",
    "python -m engines.video sweep": "both agents at four budgets over 94 questions takes about a minute and a half; "
                                     "tests/video/test_video_cli.py runs a sweep on two 2-minute videos",
}


# ---------------------------------------------------------------- reading the documents

FENCED = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
COMMENT = re.compile(r"\s+#\s.*$")  # a shell comment after a command: whitespace, '#', space


def _is_command(span: str) -> bool:
    """Whether a span of inline code is something to type into a shell."""
    first = span.split()[0] if span.strip() else ""
    if first in PROGRAMS:
        return True
    path = ROOT / first
    return "/" in first and path.is_file() and os.access(path, os.X_OK)


def commands_in(text: str) -> list[str]:
    """The commands of a Markdown text: each line of a shell code block, and inline code that is a command."""
    found = []
    for language, body in FENCED.findall(text):
        if language in SHELL_FENCES:
            found += [COMMENT.sub("", line).strip() for line in body.splitlines()
                      if line.strip() and not line.lstrip().startswith("#")]
    prose = FENCED.sub("", text)  # inline code is looked for outside code blocks only
    found += [span.strip() for span in INLINE.findall(prose) if _is_command(span)]
    return found


def documented_commands() -> dict[str, str]:
    """Every command the documents show, with the first document showing it."""
    shown: dict[str, str] = {}
    for document in DOCUMENTS:
        for command in commands_in(document.read_text(encoding="utf-8")):
            shown.setdefault(command, document.relative_to(ROOT).as_posix())
    return shown


def test_every_documented_command_is_run_or_skipped():
    known = {*CLI_WALK, *OWN_TESTS, *SKIPPED}
    shown = documented_commands()
    unknown = {command: where for command, where in shown.items() if command not in known}
    assert not unknown, f"documented commands neither run nor listed in SKIPPED: {unknown}"
    stale = known - set(shown)
    assert not stale, f"commands run or skipped here that no document shows any more: {stale}"


def test_the_command_reader_finds_blocks_and_inline_commands():
    text = ("Run `make run PORT=9` or `bench/collab.py`; see `st.login`.\n\n```bash\n"
            "# a comment line\npython -m engines.platform migrate   # note\n```\n\n```\nlayout `make x`\n```\n")
    assert commands_in(text) == ["python -m engines.platform migrate", "make run PORT=9"]


# ---------------------------------------------------------------- running commands

def _environment(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment on a fresh SQLite file in ``tmp_path``, the repository importable from anywhere."""
    env = {**os.environ, "HAI_DATABASE_URL": f"sqlite:///{tmp_path / 'hai.db'}", "HAI_DATA_DIR": str(tmp_path / "data"),
           "HAI_ADMIN_PASSWORD": "", "PYTHONPATH": str(ROOT)}
    env.pop("HAI_PUBLIC_BASE_URL", None)  # links follow the port served, as on a fresh machine
    return {**env, **extra}


def _argv(command: str) -> list[str]:
    """The command split as a shell would, its program taken from the test's environment."""
    argv = shlex.split(command)
    if argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    elif (BIN / argv[0]).is_file():
        argv[0] = str(BIN / argv[0])
    return argv


def run_documented(command: str, env: dict[str, str], cwd: Path, stdin: str = "",
                   timeout: float = 60) -> subprocess.CompletedProcess:
    """Run ``command``; its own session, so a password prompt reads stdin instead of this terminal."""
    return subprocess.run(_argv(command), cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout, start_new_session=True)


def _failure(command: str, proc: subprocess.CompletedProcess, expect: str) -> str | None:
    """Why ``proc`` did not do what the documents promise, or None."""
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        return f"`{command}` exited {proc.returncode}:\n{output[-2000:]}"
    if expect not in output:
        return f"`{command}` did not print {expect!r}:\n{output[-2000:]}"
    if "--json" in command.split():
        try:
            json.loads(proc.stdout)
        except json.JSONDecodeError:
            return f"`{command}` printed no JSON:\n{proc.stdout[-2000:]}"
    return None


def test_command_line_walk_runs_as_documented(tmp_path):
    """The documented CLI commands in order on one new database; run from a scratch folder so that
    relative paths such as ``--out exports/pilot-1`` land there, not in the repository."""
    env = _environment(tmp_path)
    failures = []
    for documented, run in CLI_WALK.items():
        command = run.command or documented
        failure = _failure(command, run_documented(command, env, tmp_path, run.stdin), run.expect)
        if failure:
            failures.append(failure)
    assert not failures, "\n\n".join(failures)
    assert (tmp_path / "exports" / "pilot-1" / "study_config.json").is_file()


# ---------------------------------------------------------------- commands that serve until stopped

class _Output:
    """The merged output of a running process, collected by a thread so that reading never blocks."""

    def __init__(self, stream) -> None:  # noqa: ANN001 - a text pipe
        self.lines: list[str] = []
        self._thread = threading.Thread(target=lambda: self.lines.extend(stream), daemon=True)
        self._thread.start()

    def text(self) -> str:
        return "".join(self.lines)


@contextlib.contextmanager
def serving(argv: list[str], env: dict[str, str], cwd: Path) -> Iterator[tuple[subprocess.Popen, _Output]]:
    """Start ``argv`` in its own process group and stop the group after the block with Ctrl-C
    (SIGINT, as in a terminal), killing it if it does not stop within 20 s."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        yield proc, _Output(proc.stdout)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def wait_until(condition, what: str, proc: subprocess.Popen, output: _Output, timeout: float = 60) -> None:
    """Poll ``condition()`` until it is true; fail early, with the output, if the process ends."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            pytest.fail(f"exited {proc.returncode} before {what}:\n{output.text()[-3000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} after {timeout:.0f} s:\n{output.text()[-3000:]}")
        time.sleep(0.3)


# Local requests only: a proxy from the environment must not see (or answer) them.
_LOCAL = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str) -> tuple[int, str]:
    """Status and body of a GET, or (0, "") while nothing answers."""
    try:
        with _LOCAL.open(url, timeout=3) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except OSError:
        return 0, ""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _make(*args: str) -> list[str]:
    """``make`` on this environment's venv; its setup stamps count as done (`make test` did the setup),
    so a stale stamp never reinstalls packages from inside a test."""
    return ["make", "-o", f"{VENV}/.runtime-installed", "-o", f"{VENV}/.test-installed", "-o", "chromium",
            "-o", "nginx", f"VENV={VENV}", *args]


def _make_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` without what an outer make (`make test PORT=...`) passes down to the make run here."""
    return {k: v for k, v in env.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "PORT")}


def readme_demo_link() -> str:
    """The Prolific-style demo link the README shows."""
    found = re.search(r"http://localhost:8501/\?study=\S+", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert found, "the README shows no demo study link"
    return found.group(0)


def _links_as_make_run_sees_them(port: int, slug: str, env: dict[str, str]) -> dict[str, str]:
    """The participant links of ``slug`` under the environment `make run PORT=port` gives the app."""
    recipe = f"readme-links: ; @$(PY) -m engines.platform --json studies links {slug}"
    proc = subprocess.run(_make("-s", "--eval", recipe, "readme-links", f"PORT={port}"), cwd=ROOT, env=_make_env(env),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_make_run_defaults_to_8501():
    dry = subprocess.run(_make("-n", "run"), cwd=ROOT, env=_make_env(dict(os.environ)), capture_output=True,
                         text=True, timeout=30)
    assert dry.returncode == 0 and "--server.port 8501" in dry.stdout, dry.stdout + dry.stderr


@pytest.mark.slow
def test_make_run_serves_links_on_the_port_it_serves(tmp_path):
    """`make run PORT=...` on a new database: it answers the health check, prints the admin's one-time
    password and the address it serves, and the README's demo link (on that port) is a link it issues."""
    port = _free_port()
    # browser.serverAddress: Streamlit's headless start otherwise asks a public service for this
    # machine's address (network); it changes only the printed "URL:" line.
    env = _environment(tmp_path, STREAMLIT_BROWSER_SERVER_ADDRESS="localhost")
    with serving(_make("run", f"PORT={port}"), _make_env(env), ROOT) as (proc, output):
        wait_until(lambda: _get(f"http://127.0.0.1:{port}/_stcore/health") == (200, "ok"), "health answer",
                   proc, output)
        # Streamlit may answer the health check before it prints the address: wait for the line.
        wait_until(lambda: f"http://localhost:{port}" in output.text(), f"printed address http://localhost:{port}",
                   proc, output, timeout=20)
        assert re.search(r"one-time password: \S{12,}", output.text()), output.text()
        link = readme_demo_link().replace("localhost:8501", f"localhost:{port}")
        issued = _links_as_make_run_sees_them(port, "demo-survey", env)["prolific"]
        params = {key: values[0] for key, values in parse_qs(urlsplit(link).query).items()}
        filled = issued.replace("{{%PROLIFIC_PID%}}", params["PROLIFIC_PID"]).replace(
            "{{%STUDY_ID%}}", params["STUDY_ID"]).replace("{{%SESSION_ID%}}", params["SESSION_ID"])
        assert filled == link
        assert _get(link.replace("localhost", "127.0.0.1"))[0] == 200


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nginx", path="/usr/sbin:" + os.environ.get("PATH", "")) is None,
                    reason="nginx is not installed (make setup-test installs Debian's nginx-light as root)")
def test_make_serve_runs_app_processes_behind_the_proxy_and_a_worker(tmp_path):
    """`make serve PROCESSES=2 WORKERS=1`: migrates, serves through nginx, runs a queued job, stops on Ctrl-C."""
    from engines.platform import jobqueue
    from engines.platform.db import get_engine

    port = _free_port()
    env = _environment(tmp_path)
    with serving(_make("serve", "PROCESSES=2", "WORKERS=1", f"PORT={port}"), _make_env(env), ROOT) as (proc, output):
        wait_until(lambda: "serving http://" in output.text(), "serving line", proc, output, timeout=180)
        printed = output.text()
        assert "note: several app processes on SQLite" in printed, printed
        assert f"serving http://127.0.0.1:{port} : 2 app processes" in printed, printed
        assert _get(f"http://127.0.0.1:{port}/_stcore/health") == (200, "ok")
        status, _ = _get(f"http://127.0.0.1:{port}/?study=demo-survey&PROLIFIC_PID=p1&STUDY_ID=s1&SESSION_ID=x1")
        assert status == 200
        engine = get_engine(env["HAI_DATABASE_URL"])
        job_id = jobqueue.submit_job("platform.countdown", {"seconds": 0}, engine=engine)
        wait_until(lambda: jobqueue.get_job(job_id, engine=engine).status == "succeeded", "job run by the worker",
                   proc, output, timeout=60)
    # make itself ends by the Ctrl-C (returncode -2); what it started stopped cleanly, every process of it.
    assert output.text().rstrip().endswith("stopped"), output.text()
    assert not subprocess.run(["pgrep", "-f", f"--server.port {port + 10}"], capture_output=True).stdout


@pytest.mark.slow
def test_worker_runs_queued_jobs(sqlite_db, tmp_path):
    """`python -m engines.platform worker` picks up a job queued elsewhere and stops cleanly on Ctrl-C."""
    from engines.platform import jobqueue

    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # sqlite_db put the test's database in the environment
    with serving(_argv("python -m engines.platform worker"), env, tmp_path) as (proc, output):
        wait_until(lambda: "worker running" in output.text(), "worker start line", proc, output, timeout=30)
        job_id = jobqueue.submit_job("platform.countdown", {"seconds": 0})
        wait_until(lambda: jobqueue.get_job(job_id).status == "succeeded", "finished job", proc, output, timeout=30)
    assert proc.returncode == 0, output.text()


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM])
def test_worker_stops_cleanly_on_ctrl_c_or_sigterm_even_if_started_with_sigint_ignored(sqlite_db, tmp_path,
                                                                                      stop_with):
    """A script's background job starts with SIGINT ignored; a service manager stops with SIGTERM."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(_argv("python -m engines.platform worker"), cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    output = _Output(proc.stdout)
    try:
        wait_until(lambda: "worker running" in output.text(), "worker start line", proc, output, timeout=30)
        os.kill(proc.pid, stop_with)
        assert proc.wait(timeout=20) == 0, output.text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


# ---------------------------------------------------------------- commands for schema changes and lint

def test_alembic_check(sqlite_db):
    proc = run_documented("alembic check", {**os.environ}, ROOT)
    assert proc.returncode == 0 and "No new upgrade operations detected" in proc.stdout + proc.stderr, proc.stderr


def _sandboxed_migrations(tmp_path: Path) -> Path:
    """A copy of alembic.ini and the migrations folder, for a command that writes a migration file."""
    shutil.copy(ROOT / "alembic.ini", tmp_path / "alembic.ini")
    shutil.copytree(ROOT / "engines" / "platform" / "migrations", tmp_path / "engines" / "platform" / "migrations",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "engines" / "platform" / "migrations" / "versions"


def test_migration_revision_command(sqlite_db, tmp_path):
    """The documented revision command, with the repository root pointed at a copy so that the new
    (empty: models and migrations agree) revision file is written there."""
    documented = next(c for c in OWN_TESTS if "migrate.revision" in c)
    code = shlex.split(documented)[2]
    versions = _sandboxed_migrations(tmp_path)
    before = {p.name for p in versions.glob("*.py")}
    prelude = f"import pathlib, engines.platform.migrate as m; m.REPO_ROOT = pathlib.Path({str(tmp_path)!r})\n"
    proc = subprocess.run([sys.executable, "-c", prelude + code], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    written = {p.name for p in versions.glob("*.py")} - before
    assert len(written) == 1 and next(iter(written)).endswith("_what_changed.py"), written


def test_make_lint():
    proc = subprocess.run(_make("lint"), cwd=ROOT, env=_make_env(dict(os.environ)), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
