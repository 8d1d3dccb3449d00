"""Benchmark: K participants at once on the running app, through Streamlit's own websocket protocol.

Requirement (the study store's goal, as participants feel it): with 100 participants taking the
demo survey (``studies/demo_survey``) at the same time on 2 app processes, each pausing 1-5 s
before every submit as a person would, the participant page shows the next step within 300 ms of
a submit at the 95th percentile, and every answer is stored. Measured for K = 50 and 100 on 1 and
2 app processes; the result states the goal as a ratio, the capacity per core, and (with
``--baseline``) the same passes run by an earlier revision's code, so that a change is judged
against the code before it on the same machine in the same run.

Each simulated participant is one websocket session of ``bench/streamlit_ws.py`` (no browser, so
100+ of them fit on one event loop of a 2-core machine). It opens a Prolific-style study link, then
plays the study's own bot (``PlayerBot``, case "diligent"): for each item it pauses a think time
drawn uniformly from ``--think-min``..``--think-max`` s, fills the step's widgets (found by
``pages._step_form.widget_key``) and clicks the form's submit button. The items are planned once per run
by playing the bot through the runtime API on a scratch SQLite database (the demo survey's bot only
reads the number of items from the page it sees); ``SubmissionMustFail`` items whose value the page
can offer are played too and must come back refused on the same step, with an error shown.

Measured per participant and step: submit -> next step, from sending the submitting ``BackMsg``
until ``script_finished`` of the run that shows the next step (the run ended early by ``st.rerun``
is followed through), checked to show the expected step's submit button (the completion code after
the last step). Refused submissions and first loads (link opened -> first step shown) are
reported apart. After each size the database is asked for every participant's rows: all of them
completed, with exactly the rows and values the bot submitted.

``--processes P`` starts P ``streamlit run app.py`` servers on free ports against one database (a
scratch PostgreSQL schema when ``$HAI_BENCH_PG_URL`` or ``$HAI_TEST_DATABASE_URL`` is set, else a
temp SQLite file; ``--database`` chooses) and deals participants round-robin to them. Each server
first serves one untimed warm-up participant (its first session imports the pages). ``--url``
instead drives servers that already run (say, behind a proxy): the study is created through
``--database-url``, or an existing demo-survey study is named with ``--study`` (then no rows can
be counted).

``--baseline REF`` also runs every pass with servers of git revision ``REF`` (its files
extracted with ``git archive`` to a temp folder, started by that code's own ``serve`` command,
on a fresh scratch database of the same kind migrated by this code: the revision must share the
schema). The two codes take turns, the same participants with the same think times, and
``comparison`` gives each (P, K)'s p95 against the baseline's.

Prints one JSON line to stdout, writes the same object (indented) to ``bench/results/load.json``
(or ``--out``), progress on stderr.

    python bench/load.py                          # K = 50, 100 with 1 and with 2 server processes
    python bench/load.py --baseline HEAD          # and the same with the last commit's code
    python bench/load.py --processes 2 --sizes 100
    python bench/load.py --url http://127.0.0.1:8501 --database-url postgresql+psycopg://...
    python bench/load.py --quick                  # K = 2, think 0.1-0.3 s, one process
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Needs the repository on sys.path.
from bench._results import PG_ENV_VARS, emit, machine_info, pg_url_from_env, positive_counts  # noqa: E402

NAME = "load"
PROTOCOL = "demo_survey"
BOT_CASE = "diligent"
LIMIT_P95_MS = 300.0
GOAL_PARTICIPANTS = 100
GOAL_PROCESSES = 2
# A p95 more than this share above the baseline's, for the same (P, K), counts as a regression
# (two runs of one code on a shared 2-core machine differ by about this much).
REGRESSION_TOLERANCE = 0.10
# A p95 of fewer submits is about their maximum (a --quick run's 16): too noisy to call a regression.
MIN_SAMPLES_JUDGED = 200
FULL_SIZES, QUICK_SIZES = (50, 100), (2,)
FULL_PROCESSES, QUICK_PROCESSES = (1, 2), (1,)
FULL_THINK_S, QUICK_THINK_S = (1.0, 5.0), (0.1, 0.3)
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
STREAMLIT = REPO_ROOT / ".venv" / "bin" / "streamlit"
STEP_TIMEOUT_S = 60.0
SLOWEST_SHOWN = 5
ERRORS_SHOWN = 20


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="K concurrent participants complete the demo survey through the app's websocket protocol; "
                    f"submit -> next step latency p50/p95/max, rows stored. Goal: p95 < {LIMIT_P95_MS:g} ms at "
                    f"K = {GOAL_PARTICIPANTS} on {GOAL_PROCESSES} app processes with nothing lost.")
    parser.add_argument("--quick", action="store_true",
                        help=f"small run for tests: K = {QUICK_SIZES[0]}, think {QUICK_THINK_S[0]:g}-"
                             f"{QUICK_THINK_S[1]:g} s, one process")
    parser.add_argument("--sizes", type=positive_counts, default=None,
                        help="participant counts K, comma-separated (default "
                             f"{','.join(map(str, FULL_SIZES))})")
    parser.add_argument("--processes", type=positive_counts, default=None,
                        help="server process counts, comma-separated: one pass per count (default 1,2)")
    parser.add_argument("--url", action="append", default=[],
                        help="base URL of a running server (repeatable); no servers are started")
    parser.add_argument("--baseline", default=None, metavar="REF",
                        help="also run every pass with the servers of git revision REF (say HEAD: the code "
                             "before uncommitted changes), in turns with this code")
    parser.add_argument("--study", default=None,
                        help="with --url: slug of an existing demo-survey study to use instead of creating one")
    parser.add_argument("--database", choices=("sqlite", "postgresql"), default=None,
                        help="database of the started servers (default: postgresql when "
                             f"{' or '.join(PG_ENV_VARS)} is set, else sqlite)")
    parser.add_argument("--database-url", default=None,
                        help="with --url: the servers' database, to create studies and count rows")
    parser.add_argument("--think-min", type=float, default=None, help="shortest think time before a submit, s")
    parser.add_argument("--think-max", type=float, default=None, help="longest think time before a submit, s")
    parser.add_argument("--skip-must-fail", action="store_true",
                        help="leave out the bot's SubmissionMustFail items (by default they are played and "
                             "must be refused)")
    parser.add_argument("--step-timeout", type=float, default=STEP_TIMEOUT_S,
                        help=f"seconds a participant waits for a page before giving up (default {STEP_TIMEOUT_S:g})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the think times (default 0)")
    parser.add_argument("--log-dir", type=Path, default=None, help="keep the started servers' logs here")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    args = parser.parse_args(argv)

    think = QUICK_THINK_S if args.quick else FULL_THINK_S
    args.think_min = think[0] if args.think_min is None else args.think_min
    args.think_max = think[1] if args.think_max is None else args.think_max
    if not 0 <= args.think_min <= args.think_max:
        parser.error("need 0 <= --think-min <= --think-max")
    args.sizes = args.sizes or (QUICK_SIZES if args.quick else FULL_SIZES)
    if args.url:
        if args.processes:
            parser.error("--processes starts servers; with --url the servers already run")
        if args.baseline:
            parser.error("--baseline starts servers of another revision; with --url the servers already run")
        if args.database:
            parser.error("--database chooses the started servers' database; with --url pass --database-url")
        if not (args.study or args.database_url):
            parser.error("--url needs --database-url (to create the study and count rows) or --study")
        args.processes = (len(args.url),)
    else:
        if args.study or args.database_url:
            parser.error("--study and --database-url go with --url")
        args.processes = args.processes or (QUICK_PROCESSES if args.quick else FULL_PROCESSES)
        if args.database is None:
            args.database = "postgresql" if pg_url_from_env() else "sqlite"
        if args.database == "postgresql" and not pg_url_from_env():
            parser.error(f"--database postgresql needs a URL in {' or '.join(PG_ENV_VARS)}")
    return args


# ------------------------------------------------------------------ what the participants answer


@dataclass(frozen=True)
class PlannedSubmit:
    """One submit of the bot: the step it answers, the data, and the step the page must show after it."""

    step_name: str
    step_index: int
    data: dict[str, Any]
    must_fail: bool
    next_index: int | None  # None: the study is finished, the page shows the completion code


@dataclass(frozen=True)
class Plan:
    items: tuple[PlannedSubmit, ...]
    rows_per_participant: int
    final_status: str
    completion_code: str | None

    @property
    def accepted(self) -> list[PlannedSubmit]:
        return [item for item in self.items if not item.must_fail]


def _page_can_enter(spec, value) -> bool:
    # Copied from tests.apptest_driver.ui_can_enter: a radio offers only its options.
    return not spec.options or value in spec.options


def plan_answers(protocol_name: str, config: dict | None = None, *, case: str = BOT_CASE,
                 must_fail: bool = True) -> Plan:
    """Play the protocol's bot through the runtime API on a scratch SQLite study; what each participant will submit.

    A ``SubmissionMustFail`` the page cannot even offer (a value outside a radio's options) is left
    out, as are all of them with ``must_fail=False``.
    """
    from engines.platform import runtime, study_admin
    from engines.platform.bots import BotFailure, SubmissionMustFail, iterate_with_view, stored_responses
    from engines.platform.db import get_engine
    from engines.platform.forms import field_specs
    from engines.platform.registry import get_protocol
    from engines.platform.scratch import scratch_database

    protocol = get_protocol(protocol_name)
    if protocol.bot is None:
        raise runtime.StudyError(f"study protocol {protocol_name!r} ships no PlayerBot")
    with scratch_database() as url:
        engine = get_engine(url)
        protocol.bot.prepare(engine)
        study_admin.create_study("load-plan", protocol.name, config=config, engine=engine)
        entered = runtime.enter("load-plan", {"PROLIFIC_PID": ["plan"], "STUDY_ID": ["bench"],
                                              "SESSION_ID": ["plan"]}, engine=engine)
        participant_id = entered.participant_id
        bot = protocol.bot(case)
        items: list[PlannedSubmit] = []
        for item in iterate_with_view(bot, lambda: runtime.current_view(participant_id, engine=engine)):
            view = bot.view
            if view.finished or view.step is None or view.step.step is not item.step:
                raise BotFailure(f"the bot expects {item.step.__name__}, the participant is at "
                                 f"{view.step.name if view.step else view.status}")
            rejected = isinstance(item, SubmissionMustFail)
            specs = {spec.name: spec for spec in field_specs(view.response_model)}
            if rejected and (not must_fail or not all(
                    name in specs and _page_can_enter(specs[name], value) for name, value in item.data.items())):
                continue
            try:
                runtime.submit(participant_id, view.step.index, item.data, engine=engine)
            except runtime.InvalidResponse:
                if not rejected:
                    raise
            after = runtime.current_view(participant_id, engine=engine)
            next_index = None if after.finished or after.step is None else after.step.index
            if rejected and next_index != view.step.index:
                raise BotFailure(f"{item.step.__name__}: {item.data} was not refused")
            items.append(PlannedSubmit(view.step.name, view.step.index, dict(item.data), rejected, next_index))
        final = runtime.current_view(participant_id, engine=engine)
        rows = len(stored_responses(participant_id, engine=engine))
    return Plan(tuple(items), rows, final.status, final.completion.code if final.completion else None)


# ------------------------------------------------------------------ database and servers


@dataclass
class BenchDatabase:
    """The database the servers share and the data folder they write to; ``url`` None when unknown."""

    kind: str
    url: str | None
    data_dir: Path

    @property
    def engine(self):
        from engines.platform.db import get_engine

        return get_engine(self.url)


@contextlib.contextmanager
def bench_database(kind: str) -> Iterator[BenchDatabase]:
    """A migrated scratch database (a temp SQLite file, or a new PostgreSQL schema), removed afterwards."""
    from engines.platform.scratch import scratch_database

    folder = Path(tempfile.mkdtemp(prefix="hai-bench-load-"))
    try:
        with scratch_database(pg_url_from_env() if kind == "postgresql" else None) as url:
            yield BenchDatabase(kind, url, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Server:
    base_url: str
    pid: int | None = None  # None: a server this benchmark did not start (its CPU time is unknown)

    def cpu_seconds(self) -> float | None:
        """User + system CPU time the server process has used so far (Linux ``/proc``), or None."""
        if self.pid is None:
            return None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, in ticks


@contextlib.contextmanager
def streamlit_servers(database: BenchDatabase, count: int, log_dir: Path) -> Iterator[list[Server]]:
    """``count`` app processes on free ports against ``database``, once all are healthy.

    Started as ``make serve`` starts them (``engines.platform.serve``), without its proxy: the
    participants are dealt to the processes here.
    """
    from engines.platform import serve

    env = {**os.environ, "HAI_DATABASE_URL": database.url, "HAI_DATA_DIR": str(database.data_dir)}
    config = serve.ServeConfig(processes=count, workers=0, proxy=False, app_port=serve.free_ports(count),
                               run_dir=log_dir)
    try:
        with serve.served(config, env) as running:
            for app in running.apps:
                print(f"{NAME}: server {app.name} (log {app.log_path})", file=sys.stderr)
            yield [Server(f"http://127.0.0.1:{port}", app.pid) for port, app in zip(config.app_ports, running.apps,
                                                                                     strict=True)]
    except serve.ServeError as exc:
        raise RuntimeError(str(exc)) from None


@dataclass(frozen=True)
class Code:
    """The code the started servers run: this working tree's (``root`` None) or a baseline revision's."""

    label: str  # "current" or "baseline"
    root: Path | None = None
    ref: str | None = None
    commit: str | None = None


@contextlib.contextmanager
def baseline_code(ref: str) -> Iterator[Code]:
    """The files of git revision ``ref`` in a temp folder (``git archive``: the repository is left as it is)."""
    import io
    import subprocess
    import tarfile

    found = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=REPO_ROOT,
                           capture_output=True, text=True)
    if found.returncode != 0:
        raise RuntimeError(f"--baseline {ref}: not a revision of this repository ({found.stderr.strip()})")
    commit = found.stdout.strip()
    archive = subprocess.run(["git", "archive", "--format=tar", commit], cwd=REPO_ROOT, capture_output=True,
                             check=True)
    folder = Path(tempfile.mkdtemp(prefix="hai-bench-load-baseline-"))
    try:
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(folder, filter="data")
        yield Code("baseline", folder, ref, commit)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _app_pids(serve_pid: int) -> dict[int, int]:
    """The app processes a ``serve`` command started: {port: pid} (Linux ``/proc``; empty elsewhere)."""
    pids: dict[int, int] = {}
    with contextlib.suppress(OSError):
        for child in Path(f"/proc/{serve_pid}/task/{serve_pid}/children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().decode(errors="replace").split("\0")
            if "--server.port" in argv:
                pids[int(argv[argv.index("--server.port") + 1])] = int(child)
    return pids


def _wait_answering(port: int, process, log_path: Path, timeout_s: float = 120.0) -> None:
    """Return once the app on ``port`` answers its health check; raise with the log's end if ``process`` exits."""
    import urllib.error
    import urllib.request

    from engines.platform import serve

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the baseline's serve exited with code {process.returncode}:\n"
                               f"{serve.log_tail(log_path)}")
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{serve.HEALTH_PATH}", timeout=2) as response:
                if response.status == 200:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"the baseline's app on port {port} did not answer within {timeout_s:g} s:\n"
                       f"{serve.log_tail(log_path)}")


@contextlib.contextmanager
def baseline_servers(code: Code, database: BenchDatabase, count: int, log_dir: Path) -> Iterator[list[Server]]:
    """``count`` app processes of the baseline's code, started by its own ``serve`` command (no proxy, no workers)."""
    import signal
    import subprocess

    from engines.platform import serve

    first = serve.free_ports(count)
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / "serve.log"
    env = {**os.environ, "HAI_DATABASE_URL": database.url, "HAI_DATA_DIR": str(database.data_dir),
           "PYTHONPATH": str(code.root)}
    argv = [sys.executable, "-m", "engines.platform", "serve", "--processes", str(count), "--workers", "0",
            "--no-proxy", "--app-port", str(first)]
    with open(log_path, "ab") as log:
        process = subprocess.Popen(argv, cwd=code.root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    print(f"{NAME}: baseline {code.ref} ({code.commit[:12]}) serving (log {log_path})", file=sys.stderr)
    try:
        ports = [first + i for i in range(count)]
        for port in ports:
            _wait_answering(port, process, log_path)
        pids = _app_pids(process.pid)
        yield [Server(f"http://127.0.0.1:{port}", pids.get(port)) for port in ports]
    finally:
        process.send_signal(signal.SIGTERM)  # serve stops its app processes, then exits
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


# ------------------------------------------------------------------ one participant


@dataclass
class ParticipantRun:
    """What one simulated participant saw: timings in ms, and why it stopped if it failed."""

    number: int
    external_id: str
    server: str
    first_load_ms: float | None = None
    submit_ms: list[tuple[str, float]] = field(default_factory=list)  # (step name, ms), accepted submits
    rejected_ms: list[tuple[str, float]] = field(default_factory=list)  # (step name, ms), refused ones
    error: str | None = None


def study_query(slug: str, external_id: str) -> str:
    """The query of a Prolific-style study link (``engines.platform.panels.study_link`` with ids filled in)."""
    return urlencode({"study": slug, "PROLIFIC_PID": external_id, "STUDY_ID": "bench", "SESSION_ID": external_id})


def check_shown(page, item: PlannedSubmit | None, plan: Plan, expected_index: int | None) -> None:
    """Raise unless ``page`` shows step ``expected_index`` (None: the completion code), and a refusal's message."""
    from streamlit.proto.Alert_pb2 import Alert

    from bench.streamlit_ws import StreamlitProtocolError

    if page.exceptions:
        raise StreamlitProtocolError(f"the page raised {page.exceptions[0]}")
    if expected_index is None:
        if page.form_ids or (plan.completion_code and plan.completion_code not in page.code_blocks):
            raise StreamlitProtocolError(f"expected the completion code, the page shows forms {page.form_ids} "
                                         f"and errors {page.alerts()}")
        return
    if page.submit_button(f"form-{expected_index}") is None:
        raise StreamlitProtocolError(f"expected step {expected_index}, the page shows forms {page.form_ids} "
                                     f"and errors {page.alerts()}")
    if item is not None and item.must_fail and not (page.alerts() or page.alerts(Alert.WARNING)):
        raise StreamlitProtocolError(f"{item.step_name}: {item.data} came back without an error message")


async def play_participant(number: int, external_id: str, server: str, slug: str, plan: Plan,
                           think_s: tuple[float, float], rng: random.Random, timeout_s: float,
                           on_submit: Callable[[], None]) -> ParticipantRun:
    """Open the study link in a new session and play the plan, pausing a think time before each submit."""
    from bench.streamlit_ws import StreamlitSession
    from pages._step_form import widget_key

    run = ParticipantRun(number, external_id, server)
    where = "first load"
    try:
        async with StreamlitSession.open(server, study_query(slug, external_id), timeout_s=timeout_s) as session:
            page = await session.load()
            run.first_load_ms = page.latency_s * 1000
            check_shown(page, None, plan, plan.items[0].step_index if plan.items else None)
            for item in plan.items:
                where = f"{item.step_name} (step {item.step_index}{', must fail' if item.must_fail else ''})"
                await asyncio.sleep(rng.uniform(*think_s))
                values = {widget_key(item.step_index, name): value for name, value in item.data.items()}
                page = await session.submit(f"form-{item.step_index}", values)
                check_shown(page, item, plan, item.next_index)
                (run.rejected_ms if item.must_fail else run.submit_ms).append((item.step_name, page.latency_s * 1000))
                on_submit()
    except Exception as exc:  # noqa: BLE001 - one participant's failure is a result, the others go on
        run.error = f"at {where}: {type(exc).__name__}: {exc}"
    return run


async def play_all(servers: list[Server], slug: str, plan: Plan, size: int, think_s: tuple[float, float],
                   seed: str, timeout_s: float, on_submit: Callable[[], None]) -> list[ParticipantRun]:
    """``size`` participants at once, dealt round-robin to ``servers``, all on this event loop."""
    token = secrets.token_hex(3)  # fresh ids, so that a rerun against the same study never resumes someone
    return await asyncio.gather(*(
        play_participant(i, f"load-{token}-{i}", servers[i % len(servers)].base_url, slug, plan, think_s,
                         random.Random(f"{seed}-{i}"), timeout_s, on_submit)
        for i in range(size)))


# ------------------------------------------------------------------ what the database holds


def stored_check(engine, slug: str, plan: Plan, runs: list[ParticipantRun]) -> dict:
    """Rows stored against rows expected for the study's participants, and any answer not stored as submitted."""
    from sqlmodel import Session, select

    from engines.platform.models import Participant, StepResponse, Study

    expected_data = {item.step_index: item.data for item in plan.accepted}
    with Session(engine) as session:
        study = session.exec(select(Study).where(Study.slug == slug)).one()
        participants = {p.external_id: p for p in session.exec(select(Participant).where(
            Participant.study_id == study.id))}
        ids = [p.id for p in participants.values()]
        responses: dict[int, dict[int, dict]] = {}
        for row in session.exec(select(StepResponse).where(StepResponse.participant_id.in_(ids))) if ids else []:
            responses.setdefault(row.participant_id, {})[row.step_index] = row.data
    problems = []
    for run in runs:
        participant = participants.get(run.external_id)
        if participant is None:
            problems.append(f"participant {run.number}: not in the database")
            continue
        if participant.status != plan.final_status:
            problems.append(f"participant {run.number}: status {participant.status!r}, expected {plan.final_status!r}")
        stored = responses.get(participant.id, {})
        if len(stored) != plan.rows_per_participant:
            problems.append(f"participant {run.number}: {len(stored)} rows, expected {plan.rows_per_participant}")
        for index, data in expected_data.items():
            kept = {k: v for k, v in stored.get(index, {}).items() if not k.startswith("_")}
            wrong = {k: kept.get(k) for k, v in data.items() if kept.get(k) != v}
            if wrong:
                problems.append(f"participant {run.number}: step {index} stored {wrong}, submitted {data}")
    return {"rows_expected": len(runs) * plan.rows_per_participant,
            "rows_stored": sum(len(rows) for rows in responses.values()),
            "participants_completed": sum(p.status == plan.final_status for p in participants.values()),
            "stored_problems": problems[:ERRORS_SHOWN], "stored_problem_count": len(problems)}


# ------------------------------------------------------------------ statistics


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def latency_summary(samples_ms: list[float]) -> dict | None:
    if not samples_ms:
        return None
    return {"samples": len(samples_ms), "p50_ms": round(statistics.median(samples_ms), 1),
            "p95_ms": round(percentile(samples_ms, 0.95), 1), "max_ms": round(max(samples_ms), 1),
            "min_ms": round(min(samples_ms), 1), "mean_ms": round(statistics.fmean(samples_ms), 1)}


def size_result(processes: int, size: int, runs: list[ParticipantRun], wall_s: float, server_cpu_s: float | None,
                client_cpu_s: float, think_s: tuple[float, float], stored: dict | None) -> dict:
    """One row of the result file: latencies, errors, rows, throughput and CPU for (processes, K)."""
    submits = [ms for run in runs for _, ms in run.submit_ms]
    rejected = [ms for run in runs for _, ms in run.rejected_ms]
    loads = [run.first_load_ms for run in runs if run.first_load_ms is not None]
    by_step: dict[str, list[float]] = {}
    by_server: dict[str, list[float]] = {}
    for run in runs:
        for step, ms in run.submit_ms:
            by_step.setdefault(step, []).append(ms)
            by_server.setdefault(run.server, []).append(ms)
    slowest = sorted(((ms, run.number, step) for run in runs for step, ms in run.submit_ms), reverse=True)
    errors = [{"participant": run.number, "server": run.server, "reason": run.error} for run in runs if run.error]
    submit = latency_summary(submits)
    p95 = submit["p95_ms"] if submit else None
    requests = len(submits) + len(rejected) + len(loads)  # every one of them is a script run on a server
    step_gap_s = statistics.fmean(think_s) + (submit["mean_ms"] / 1000 if submit else 0.0)
    cpu_per_request_s = server_cpu_s / requests if server_cpu_s is not None and requests else None
    nothing_lost = (not errors and stored is not None and stored["rows_stored"] == stored["rows_expected"]
                    and stored["participants_completed"] == size and stored["stored_problem_count"] == 0)
    return {
        "processes": processes, "participants": size, "participants_per_process": round(size / processes, 1),
        "submit_next": submit, "rejected": latency_summary(rejected), "first_load": latency_summary(loads),
        "by_step": {step: latency_summary(values) for step, values in by_step.items()},
        "by_server": {server: latency_summary(values) for server, values in by_server.items()},
        "slowest": [{"ms": round(ms, 1), "participant": number, "step": step}
                    for ms, number, step in slowest[:SLOWEST_SHOWN]],
        "participants_failed": len(errors), "errors": errors[:ERRORS_SHOWN],
        **(stored or {"rows_expected": None, "rows_stored": None, "participants_completed": None,
                      "stored_problems": ["not checked: no database URL"], "stored_problem_count": None}),
        "nothing_lost": nothing_lost if stored is not None else None,
        "wall_s": round(wall_s, 2), "throughput_steps_per_s": round(len(submits) / wall_s, 2) if wall_s else None,
        "server_cpu_s": None if server_cpu_s is None else round(server_cpu_s, 2),
        "server_cpu_ms_per_request": None if cpu_per_request_s is None else round(cpu_per_request_s * 1000, 1),
        # How many participants, each spending think + latency per step, would keep one core busy
        # with server work: a ceiling (latency grows well before it), for sizing.
        "participants_per_busy_core": None if not cpu_per_request_s else round(step_gap_s / cpu_per_request_s, 1),
        "server_core_utilization": None if server_cpu_s is None else round(server_cpu_s / wall_s / os.cpu_count(), 3),
        "client_cpu_share": round(client_cpu_s / wall_s, 3) if wall_s else None,
        "limit_p95_ms": LIMIT_P95_MS, "p95_ratio_to_limit": None if p95 is None else round(p95 / LIMIT_P95_MS, 3),
        "pass": bool(p95 is not None and p95 < LIMIT_P95_MS and not errors and nothing_lost is not False),
    }


def goal_row(rows: list[dict]) -> dict | None:
    """The row the goal is judged on: K = GOAL_PARTICIPANTS on GOAL_PROCESSES app processes (None: not measured)."""
    return next((r for r in rows if r["participants"] == GOAL_PARTICIPANTS and r["processes"] == GOAL_PROCESSES),
                None)


def goal_verdict(rows: list[dict]) -> dict:
    """p95 < limit at K = 100 on 2 processes with every row stored; ``met`` None while that is not measured.

    ``per_processes``: the same test at K = 100 for every process count measured.
    """
    row = goal_row(rows)
    submit = (row or {}).get("submit_next") or {}
    per_processes = {str(r["processes"]): r["pass"] for r in rows if r["participants"] == GOAL_PARTICIPANTS}
    return {"limit_p95_ms": LIMIT_P95_MS, "participants": GOAL_PARTICIPANTS, "processes": GOAL_PROCESSES,
            "judged_on": "p95 of submit -> next step, with every row stored",
            "p95_ms": submit.get("p95_ms"), "p95_ratio_to_limit": row["p95_ratio_to_limit"] if row else None,
            "nothing_lost": row["nothing_lost"] if row else None,
            "per_processes": per_processes, "met": row["pass"] if row else None}


def capacity(rows: list[dict]) -> dict:
    """Per process count: the most participants measured within the limit, per core, and the CPU-derived ceiling.

    An app process runs its Python on one core at a time (the GIL), so P processes use at most
    min(P, cores) of them: ``participants_per_core_within_limit`` divides by that.
    """
    result = {}
    for processes in sorted({r["processes"] for r in rows}):
        mine = [r for r in rows if r["processes"] == processes]
        passing = [r for r in mine if r["pass"]]
        best = max(passing, key=lambda r: r["participants"]) if passing else None
        ceilings = [r["participants_per_busy_core"] for r in mine if r["participants_per_busy_core"]]
        cores = min(processes, os.cpu_count() or 1)
        result[str(processes)] = {
            "most_participants_within_limit": best["participants"] if best else None,
            "participants_per_process_within_limit": best["participants_per_process"] if best else None,
            "cores_used": cores,
            "participants_per_core_within_limit": round(best["participants"] / cores, 1) if best else None,
            "p95_ms_there": best["submit_next"]["p95_ms"] if best else None,
            "participants_per_busy_core_median": round(statistics.median(ceilings), 1) if ceilings else None,
        }
    return result


def comparison(current: list[dict], baseline: list[dict]) -> dict | None:
    """Each (P, K) measured by both codes: this code's p95 against the baseline's; None without a baseline.

    A regression: a p95 more than ``REGRESSION_TOLERANCE`` above the baseline's, or rows lost
    where the baseline lost none. A pair of fewer than ``MIN_SAMPLES_JUDGED`` submits is not
    judged on its p95 (``regression`` None unless rows were lost).
    """
    if not baseline:
        return None
    theirs = {(r["processes"], r["participants"]): r for r in baseline}
    pairs = []
    for row in current:
        other = theirs.get((row["processes"], row["participants"]))
        if other is None:
            continue
        mine_p95, their_p95 = (row["submit_next"] or {}).get("p95_ms"), (other["submit_next"] or {}).get("p95_ms")
        ratio = round(mine_p95 / their_p95, 3) if mine_p95 is not None and their_p95 else None
        samples = min((r["submit_next"] or {}).get("samples", 0) for r in (row, other))
        lost = row["nothing_lost"] is False and other["nothing_lost"] is not False
        slower = None if ratio is None or samples < MIN_SAMPLES_JUDGED else ratio > 1 + REGRESSION_TOLERANCE
        pairs.append({"processes": row["processes"], "participants": row["participants"], "p95_ms": mine_p95,
                      "baseline_p95_ms": their_p95, "p95_ratio_to_baseline": ratio, "samples": samples,
                      "nothing_lost": row["nothing_lost"], "baseline_nothing_lost": other["nothing_lost"],
                      "regression": True if lost else slower})
    judged = [p["regression"] for p in pairs if p["regression"] is not None]
    return {"tolerance": REGRESSION_TOLERANCE, "min_samples_judged": MIN_SAMPLES_JUDGED, "pairs": pairs,
            "no_regression": None if not judged else not any(judged)}


# ------------------------------------------------------------------ the run


@dataclass
class Target:
    """Where one pass runs: its servers, and the database to create studies in and count rows (or None)."""

    servers: list[Server]
    database: BenchDatabase | None
    warmup: list[dict] = field(default_factory=list)


async def warm_up(servers: list[Server], slug: str, plan: Plan, timeout_s: float) -> list[dict]:
    """One participant per server plays the whole study without pauses; untimed for the results."""
    runs = await asyncio.gather(*(
        play_participant(i, f"warmup-{secrets.token_hex(3)}-{i}", server.base_url, slug, plan, (0.0, 0.0),
                         random.Random(0), timeout_s, lambda: None)
        for i, server in enumerate(servers)))
    for run in runs:
        if run.error:
            raise RuntimeError(f"the warm-up participant on {run.server} failed {run.error}")
    return [{"server": run.server, "cold_first_load_ms": round(run.first_load_ms, 1),
             "submit_ms": [round(ms, 1) for _, ms in run.submit_ms]} for run in runs]


def new_study(database: BenchDatabase, label: str) -> str:
    from engines.platform import study_admin

    slug = f"load-{label}-{secrets.token_hex(3)}"
    study_admin.create_study(slug, PROTOCOL, title=f"Load benchmark ({label})", engine=database.engine)
    return slug


def run_pass(target: Target, processes: int, args: argparse.Namespace, plan: Plan, bar,
             code: str = "current") -> list[dict]:
    """Every size K against one set of servers (running ``code``); one result row per K.

    The think times depend on the seed, P and K only: both codes' participants pause alike.
    """
    from tqdm import tqdm

    rows = []
    think_s = (args.think_min, args.think_max)
    if target.database is not None and target.servers[0].pid is not None:
        target.warmup = asyncio.run(warm_up(target.servers, new_study(target.database, f"warmup-p{processes}"),
                                            plan, args.step_timeout))
    for size in args.sizes:
        slug = args.study or new_study(target.database, f"p{processes}-k{size}")
        bar.set_description(f"{NAME} {code} P={processes} K={size}")
        cpu_before = [s.cpu_seconds() for s in target.servers]
        client_before, started = time.process_time(), time.perf_counter()
        runs = asyncio.run(play_all(target.servers, slug, plan, size, think_s, f"{args.seed}-{processes}-{size}",
                                    args.step_timeout, lambda: bar.update(1)))
        wall_s, client_cpu_s = time.perf_counter() - started, time.process_time() - client_before
        cpu_after = [s.cpu_seconds() for s in target.servers]
        server_cpu_s = (None if None in cpu_before + cpu_after
                        else sum(after - before for before, after in zip(cpu_before, cpu_after, strict=True)))
        stored = stored_check(target.database.engine, slug, plan, runs) if target.database is not None else None
        row = size_result(processes, size, runs, wall_s, server_cpu_s, client_cpu_s, think_s, stored)
        rows.append({"code": code, **row})
        submit = row["submit_next"] or {}
        tqdm.write(f"{code:>8} P={processes} K={size:<3} submit->next p50 {submit.get('p50_ms')} p95 {submit.get('p95_ms')} "
                   f"max {submit.get('max_ms')} ms ({row['p95_ratio_to_limit']} x limit)  "
                   f"{row['throughput_steps_per_s']} steps/s  rows {row['rows_stored']}/{row['rows_expected']}  "
                   f"failed {row['participants_failed']}", file=sys.stderr)
        for error in row["errors"][:3]:
            tqdm.write(f"  participant {error['participant']}: {error['reason']}", file=sys.stderr)
    return rows


@contextlib.contextmanager
def targets(args: argparse.Namespace, processes: int, log_dir: Path, code: Code = Code("current")) -> Iterator[Target]:
    """The servers of one pass: started here on a fresh scratch database (this code's, or the
    baseline's), or the ones given with ``--url``."""
    if args.url:
        database = BenchDatabase("given", args.database_url, log_dir) if args.database_url else None
        yield Target([Server(url.rstrip("/")) for url in args.url], database)
        return
    with bench_database(args.database) as database:
        servers = (streamlit_servers(database, processes, log_dir) if code.root is None
                   else baseline_servers(code, database, processes, log_dir))
        with servers as started:
            yield Target(started, database)


def database_info(args: argparse.Namespace) -> dict:
    if args.url:
        return {"kind": "given", "url": _redact(args.database_url) if args.database_url else None}
    if args.database == "postgresql":
        return {"kind": "postgresql", "url": _redact(pg_url_from_env()), "scratch": "a new schema per pass"}
    return {"kind": "sqlite", "scratch": "a temp file per pass"}


def headline(rows: list[dict], size: int, baseline: list[dict]) -> dict:
    """Submit -> next step at K = ``size`` per process count, with the baseline's p95 beside it when run."""
    theirs = {r["processes"]: (r["submit_next"] or {}).get("p95_ms") for r in baseline if r["participants"] == size}
    results = {}
    for r in rows:
        if r["participants"] != size:
            continue
        submit = r["submit_next"] or {}
        results[str(r["processes"])] = {
            "p50_ms": submit.get("p50_ms"), "p95_ms": submit.get("p95_ms"), "max_ms": submit.get("max_ms"),
            "p95_ratio_to_limit": r["p95_ratio_to_limit"], "rows_stored": r["rows_stored"],
            "rows_expected": r["rows_expected"], "participants_failed": r["participants_failed"], "pass": r["pass"],
            **({"baseline_p95_ms": theirs.get(r["processes"])} if baseline else {})}
    return {"label": f"submit -> next step at K = {size} (ms), per server process count", "results": results}


def passes(args: argparse.Namespace, codes: list[Code]) -> Iterator[tuple[int, Code]]:
    """(process count, code) in the order they run: the codes take turns, which goes first alternating."""
    for i, processes in enumerate(args.processes):
        for code in (codes if i % 2 == 0 else codes[::-1]):
            yield processes, code


def run(args: argparse.Namespace) -> dict:
    from tqdm import tqdm

    from engines.platform.provenance import code_version

    started = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    plan = plan_answers(PROTOCOL, must_fail=not args.skip_must_fail)
    rows: list[dict] = []
    warmups: dict[str, dict[str, list[dict]]] = {"current": {}, "baseline": {}}
    log_root = args.log_dir or Path(tempfile.mkdtemp(prefix="hai-bench-load-logs-"))
    with contextlib.ExitStack() as stack:
        codes = [Code("current")]
        if args.baseline:
            codes.append(stack.enter_context(baseline_code(args.baseline)))
        total = len(codes) * len(args.processes) * sum(args.sizes) * len(plan.items)
        try:
            with tqdm(total=total, desc=NAME, unit="submit", file=sys.stderr, disable=None) as bar:
                for processes, code in passes(args, codes):
                    with targets(args, processes, log_root / f"{code.label}-p{processes}", code) as target:
                        rows.extend(run_pass(target, processes, args, plan, bar, code.label))
                        warmups[code.label][str(processes)] = target.warmup
        finally:
            if args.log_dir is None:
                shutil.rmtree(log_root, ignore_errors=True)
        baseline_code_info = codes[1] if len(codes) > 1 else None

    current = [r for r in rows if r["code"] == "current"]
    baseline = [r for r in rows if r["code"] == "baseline"]
    return {
        "benchmark": NAME,
        "requirement": f"{GOAL_PARTICIPANTS} concurrent participants on {GOAL_PROCESSES} app processes (think "
                       f"{FULL_THINK_S[0]:g}-{FULL_THINK_S[1]:g} s): p95 submit -> next step < {LIMIT_P95_MS:g} ms "
                       "with every answer stored",
        "headline": headline(current, max(args.sizes), baseline),
        "goal": goal_verdict(current),
        "capacity": capacity(current),
        "every_row_stored": (None if any(r["nothing_lost"] is None for r in rows)
                             else all(r["nothing_lost"] for r in rows)),
        "comparison": comparison(current, baseline),
        "baseline": None if baseline_code_info is None else {
            "ref": baseline_code_info.ref, "commit": baseline_code_info.commit, "goal": goal_verdict(baseline),
            "capacity": capacity(baseline), "results": baseline, "warmup": warmups["baseline"]},
        "config": {"quick": args.quick, "participants": list(args.sizes), "processes": list(args.processes),
                   "think_s": [args.think_min, args.think_max], "protocol": PROTOCOL, "bot_case": BOT_CASE,
                   "must_fail_played": not args.skip_must_fail, "seed": args.seed, "step_timeout_s": args.step_timeout,
                   "servers": "given (--url)" if args.url else "started", "baseline": args.baseline,
                   "pass_order": [f"{code.label} P={processes}" for processes, code in passes(args, codes)],
                   "submits_per_participant": len(plan.items), "accepted_per_participant": len(plan.accepted),
                   "rows_per_participant": plan.rows_per_participant,
                   "plan": [{"step": i.step_name, "index": i.step_index, "must_fail": i.must_fail} for i in plan.items]},
        "database": database_info(args),
        "results": current,
        "warmup": warmups["current"],
        "machine": machine_info(load_before),
        "code_version": code_version(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.url and not STREAMLIT.exists():
        print(f"{NAME}: cannot run: {STREAMLIT} is missing (make setup)", file=sys.stderr)
        return 2
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
