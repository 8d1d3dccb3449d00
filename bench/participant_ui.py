"""Benchmark: how fast the participant page answers in Chromium (first load, submit -> next trial).

Requirement: with one participant on an idle machine, submitting a trial round of the
shape-counting study (``studies/collab_shapes``) shows the next trial in under 250 ms, and a new
participant's first load of a study link shows the first step in under 1 s.

Set-up: a migrated SQLite database in a temporary folder holding two ``collab_shapes`` studies
(one for first loads, one for the trials), ``streamlit run app.py`` on a free port against it, and
Debian's chromium driven by Playwright (``executable_path``; no browser is ever downloaded).

Measured inside the page, so the driver's own round trips do not count:

- ``first_load``: each sample is a new participant (a new browser context: empty cache, no
  cookies, no session). From the navigation's start (``performance.timeOrigin``, i.e.
  ``page.goto``) until the first step's submit button is drawn and fresh, no skeleton is left
  and the app is idle (script state ``notRunning``, connection ``CONNECTED``). One participant
  is loaded first and reported apart (``cold_first_load_ms``): it is the server's first session.
- ``submit_next``: one participant, moved to the first trial through the runtime API, answers
  trial rounds in the browser (round 1, then round 2 marked final, so half of the next trials
  are a new image). From the click on "Submit answer" (a capturing ``click`` listener) until the
  next trial's submit button is drawn and fresh, the old one is gone, its image has loaded and
  the app is idle. Only submissions whose next step is a trial count. Each sample is checked
  against the database afterwards (the participant is on the expected step). The first
  ``WARMUP_SUBMISSIONS`` rounds are answered untimed (``warmup_samples_ms``): they fetch display
  code (checkbox, info box) that a real participant's browser fetched on the pages before.

Conditions are polled every ``POLL_MS`` ms (``page.wait_for_function``); no fixed sleep is timed.
Before each click and each new link the benchmark pauses ``THINK_MS`` (untimed), as a person would.
Each figure is the median and p95 over the samples, with its ratio to the limit. Prints one JSON
line to stdout, writes the same object (indented) to ``bench/results/participant_ui.json`` (or
``--out``), progress on stderr.

    python bench/participant_ui.py            # 10 first loads, 20 submissions
    python bench/participant_ui.py --quick    # 2 first loads, 3 submissions
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlencode

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Needs the repository on sys.path.
from bench._results import emit, machine_info  # noqa: E402

NAME = "participant_ui"
LIMIT_SUBMIT_NEXT_MS = 250.0
LIMIT_FIRST_LOAD_MS = 1000.0
FULL_LOADS, QUICK_LOADS = 10, 2
FULL_SUBMISSIONS, QUICK_SUBMISSIONS = 20, 3
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
CHROMIUM = Path("/usr/bin/chromium")
STREAMLIT = REPO_ROOT / ".venv" / "bin" / "streamlit"
# The flags the browser tests use (tests/e2e/conftest.py): no sandbox in containers, nothing in the background.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
]
PROTOCOL = "collab_shapes"
ROUNDS = 3
HEALTH_TIMEOUT_S = 90.0
STEP_TIMEOUT_MS = 30_000
POLL_MS = 5
# A participant reads and answers for seconds between clicks; the benchmark pauses this long (not
# timed) before each click and each new link, so work a run leaves behind (Streamlit's collection
# after every run) is not billed to the next sample, as it would not be for a person.
THINK_MS = 500
# The first trial rounds in a page fetch display code a participant's browser got on the pages before
# the trials (the checkbox, the info box); the benchmark's participant starts at the trials, so these
# rounds are answered first, untimed (their figures are reported as warmup_samples_ms).
WARMUP_SUBMISSIONS = 4
VIEWPORT = {"width": 1280, "height": 900}

# The page is idle and shows the step whose submit button sits in ``.st-key-FormSubmitter-form-<index>-...``.
# Streamlit marks elements of the previous run ``data-stale="true"`` until the run that replaces them ends.
_SHOWN_JS = """
(index) => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.dataset.testScriptState !== "notRunning" || app.dataset.testConnectionState !== "CONNECTED") {
    return false;
  }
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const fresh = "[data-testid='stElementContainer'][data-stale='false']";
  const wanted = index === null ? "" : `[class*='st-key-FormSubmitter-form-${index}-']`;
  const button = document.querySelector(`${fresh}[class*='st-key-FormSubmitter-form-']${wanted} button`);
  if (!button || button.getClientRects().length === 0) return false;
  for (const img of document.querySelectorAll(`${fresh} img`)) {
    if (!img.complete || img.naturalWidth === 0) return false;
  }
  return true;
}
"""

# First load: milliseconds since the navigation started, once the first step is shown.
_FIRST_LOAD_JS = f"() => ({_SHOWN_JS})(null) ? performance.now() : false"

# Submit -> next: milliseconds since the click, once step ``next`` is shown and step ``old`` is gone.
_SUBMIT_NEXT_JS = f"""
([old, next]) => {{
  if (window.__haiClickAt === undefined) return false;
  if (document.querySelector(`[class*='st-key-FormSubmitter-form-${{old}}-']`)) return false;
  return ({_SHOWN_JS})(next) ? performance.now() - window.__haiClickAt : false;
}}
"""

_ARM_CLICK_JS = """
() => {
  window.__haiClickAt = undefined;
  document.addEventListener("click", () => { window.__haiClickAt = performance.now(); },
                            {capture: true, once: true});
}
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Participant page latency in Chromium: a new participant's first load (limit "
                    f"{LIMIT_FIRST_LOAD_MS:g} ms) and submit -> next trial (limit {LIMIT_SUBMIT_NEXT_MS:g} ms).")
    parser.add_argument("--quick", action="store_true",
                        help=f"small run for tests: {QUICK_LOADS} first loads, {QUICK_SUBMISSIONS} submissions")
    parser.add_argument("--loads", type=int, default=None, help=f"first loads, one new participant each "
                                                                 f"(default {FULL_LOADS})")
    parser.add_argument("--submissions", type=int, default=None,
                        help=f"timed trial submissions (default {FULL_SUBMISSIONS})")
    parser.add_argument("--port", type=int, default=None, help="server port (default: a free one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    parser.add_argument("--server-log", type=Path, default=None, help="keep the server's log here")
    args = parser.parse_args(argv)
    for name in ("loads", "submissions"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name} must be >= 1")
    return args


def missing_requirement() -> str | None:
    """Why the benchmark cannot run here (no chromium, Playwright or streamlit), or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing (install Debian's chromium: make chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    if not STREAMLIT.exists():
        return f"{STREAMLIT} is missing (make setup)"
    return None


# ------------------------------------------------------------------ statistics


def percentile(values: list[float], q: float) -> float:
    """The ``q``-quantile (0..1) of ``values``, linear between order statistics (numpy's default)."""
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(samples_ms: list[float], limit_ms: float) -> dict:
    """Median and p95 of ``samples_ms`` and their ratios to ``limit_ms``; passes when p95 is under the limit."""
    # Ratios and the verdict from the rounded figures, so that the file agrees with itself.
    median, p95 = round(statistics.median(samples_ms), 1), round(percentile(samples_ms, 0.95), 1)
    return {"samples": len(samples_ms), "median_ms": median, "p95_ms": p95,
            "min_ms": round(min(samples_ms), 1), "max_ms": round(max(samples_ms), 1), "limit_ms": limit_ms,
            "median_ratio_to_limit": round(median / limit_ms, 3), "p95_ratio_to_limit": round(p95 / limit_ms, 3),
            "pass": p95 < limit_ms, "samples_ms": [round(x, 1) for x in samples_ms]}


# ------------------------------------------------------------------ database and server


@dataclass
class BenchDatabase:
    """The temporary SQLite database and data folder the server runs on."""

    url: str
    data_dir: Path

    @property
    def engine(self):
        from engines.platform.db import get_engine

        return get_engine(self.url)


@contextlib.contextmanager
def bench_database(interactions: int) -> Iterator[tuple[BenchDatabase, str, str]]:
    """A migrated SQLite database with a study for first loads and one for trials; removed afterwards."""
    from engines.platform import migrate, study_admin
    from engines.platform.db import get_engine

    folder = Path(tempfile.mkdtemp(prefix="hai-bench-ui-"))
    url = f"sqlite:///{(folder / 'db.sqlite').as_posix()}"
    try:
        migrate.upgrade(url)
        database = BenchDatabase(url, folder)
        config = {"constants": {"INTERACTIONS": interactions}}
        study_admin.create_study("bench-load", PROTOCOL, config=config, engine=database.engine)
        study_admin.create_study("bench-trial", PROTOCOL, config=config, engine=database.engine)
        yield database, "bench-load", "bench-trial"
    finally:
        get_engine(url).dispose()
        shutil.rmtree(folder, ignore_errors=True)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(database: BenchDatabase, port: int, log_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` on ``port`` against ``database``; yields its base URL once healthy."""
    env = {**os.environ, "HAI_DATABASE_URL": database.url, "HAI_DATA_DIR": str(database.data_dir),
           "HAI_RUN_JOBS_IN_APP": "false", "PYTHONUNBUFFERED": "1"}
    base = f"http://127.0.0.1:{port}"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [str(STREAMLIT), "run", "app.py", "--server.headless", "true", "--server.port", str(port),
             "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            _wait_healthy(process, base, log_path)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


def _wait_healthy(process: subprocess.Popen, base: str, log_path: Path) -> None:
    deadline = time.monotonic() + HEALTH_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited with {process.returncode}:\n{_tail(log_path)}")
        with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2) as response:
                if response.read().decode().strip() == "ok":
                    return
        time.sleep(0.2)
    raise RuntimeError(f"streamlit was not healthy within {HEALTH_TIMEOUT_S:g} s:\n{_tail(log_path)}")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def study_link(base: str, slug: str, external_id: str) -> str:
    """A Prolific-style participant link."""
    query = urlencode({"study": slug, "PROLIFIC_PID": external_id, "STUDY_ID": "bench", "SESSION_ID": external_id})
    return f"{base}/?{query}"


# ------------------------------------------------------------------ browser measurements


def new_page(browser):
    """A page in a new browser context: a new visitor with an empty cache."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(STEP_TIMEOUT_MS)
    return context, context.new_page()


def first_load_ms(browser, link: str) -> tuple[float, float]:
    """(in-page ms from navigation start, driver wall ms from ``goto``) until the first step is shown."""
    context, page = new_page(browser)
    try:
        page.wait_for_timeout(THINK_MS)
        started = time.perf_counter()
        page.goto(link, wait_until="commit")
        in_page = page.wait_for_function(_FIRST_LOAD_JS, polling=POLL_MS, timeout=STEP_TIMEOUT_MS).json_value()
        return float(in_page), (time.perf_counter() - started) * 1000
    finally:
        context.close()


def advance_to_trial(slug: str, external_id: str, engine) -> int:
    """Create the participant and answer the steps before the first trial through the runtime API."""
    from engines.platform import runtime

    entered = runtime.enter(slug, {"PROLIFIC_PID": [external_id], "STUDY_ID": ["bench"], "SESSION_ID": [external_id]},
                            engine=engine)
    answers = {"Consent": {"agree": True}, "Instructions": {},
               "Comprehension": {"task": "How many triangles are in the image", "rounds": "Up to 3"},
               "AttentionBefore": {"answer": "Rarely"}}
    while True:
        view = runtime.current_view(entered.participant_id, engine=engine)
        if view.step.name == "Trial":
            return entered.participant_id
        runtime.submit(entered.participant_id, view.step.index, answers[view.step.name], engine=engine)


def _widget(page, key: str):
    return page.locator(f"[data-testid='stElementContainer'][data-stale='false'].st-key-{key}")


def fill_round(page, index: int, answer: int, final: bool) -> None:
    """Type the count, pick confidence 4 and, when ``final``, tick the final box (no rerun: it is a form)."""
    entry = _widget(page, f"step{index}-answer").locator("input")
    entry.fill(str(answer))
    entry.blur()
    _widget(page, f"step{index}-confidence").get_by_test_id("stRadioOption").nth(3).click()
    if final:
        box = _widget(page, f"step{index}-final")
        if not box.locator("input[type='checkbox']").is_checked():
            box.locator("label").first.click()


def submit_next_ms(page, index: int, next_index: int) -> tuple[float, float]:
    """(in-page ms from the click, driver wall ms) until step ``next_index`` replaced step ``index``."""
    button = page.locator(f"[data-testid='stElementContainer'][data-stale='false']"
                          f"[class*='st-key-FormSubmitter-form-{index}-'] button")
    page.evaluate(_ARM_CLICK_JS)
    started = time.perf_counter()
    button.click()
    in_page = page.wait_for_function(_SUBMIT_NEXT_JS, arg=[index, next_index], polling=POLL_MS,
                                     timeout=STEP_TIMEOUT_MS).json_value()
    return float(in_page), (time.perf_counter() - started) * 1000


def interactions_for(submissions: int) -> int:
    """Images the trial study needs so that every submission (warm-up ones too) is followed by a trial."""
    return (WARMUP_SUBMISSIONS + submissions) // 2 + 2  # two rounds per image, and one image to spare


def next_trial_index(index: int, rnd: int, final: bool) -> int:
    """The step after trial step ``index`` (round ``rnd``): the next round, or round 1 of the next image."""
    return index + 1 if not final else index + ROUNDS - rnd + 1


def submit_round(page, participant_id: int, engine) -> tuple[float, float]:
    """Answer the participant's current trial round in the page; (in-page ms, driver ms) until the next trial."""
    from engines.platform import runtime

    view = runtime.current_view(participant_id, engine=engine)
    if view.finished or view.step.name != "Trial":
        raise RuntimeError(f"expected a trial, the participant is at {view.step}")
    index, rnd = view.step.index, view.template_vars["round"]
    final = rnd >= 2  # round 1 is followed by the AI's set; round 2 ends the image
    expected = next_trial_index(index, rnd, final)
    fill_round(page, index, answer=3, final=final)
    page.wait_for_timeout(THINK_MS)
    timings = submit_next_ms(page, index, expected)
    after = runtime.current_view(participant_id, engine=engine)
    if after.step is None or after.step.index != expected or after.step.name != "Trial":
        raise RuntimeError(f"the page showed step {expected} but the participant is at {after.step}")
    return timings


def measure_submissions(browser, base: str, slug: str, engine, count: int,
                        bar) -> tuple[list[float], list[float], list[float]]:
    """Answer trial rounds in one page: (timed in-page ms, their driver ms, the warm-up rounds' in-page ms)."""
    external_id = "bench-trial-1"
    participant_id = advance_to_trial(slug, external_id, engine)
    context, page = new_page(browser)
    warmup, in_page, driver = [], [], []
    try:
        page.goto(study_link(base, slug, external_id))
        page.wait_for_function(_FIRST_LOAD_JS, polling=POLL_MS, timeout=STEP_TIMEOUT_MS)
        for _ in range(WARMUP_SUBMISSIONS):
            warmup.append(submit_round(page, participant_id, engine)[0])
            bar.update(1)
        for _ in range(count):
            ms, wall = submit_round(page, participant_id, engine)
            in_page.append(ms)
            driver.append(wall)
            bar.update(1)
    finally:
        context.close()
    return in_page, driver, warmup


# ------------------------------------------------------------------ the run


def run(args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright
    from tqdm import tqdm

    from engines.platform.provenance import code_version

    loads = args.loads or (QUICK_LOADS if args.quick else FULL_LOADS)
    submissions = args.submissions or (QUICK_SUBMISSIONS if args.quick else FULL_SUBMISSIONS)
    started = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    port = args.port or free_port()
    with contextlib.ExitStack() as stack:
        database, load_slug, trial_slug = stack.enter_context(bench_database(interactions_for(submissions)))
        log_path = args.server_log or database.data_dir / "streamlit.log"
        base = stack.enter_context(streamlit_server(database, port, log_path))
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        total = 1 + loads + WARMUP_SUBMISSIONS + submissions
        bar = stack.enter_context(tqdm(total=total, desc=NAME, unit="sample", file=sys.stderr, disable=None))
        # The server's first session imports the pages and the study: reported apart, not a sample.
        cold_ms, _ = first_load_ms(browser, study_link(base, load_slug, "bench-cold"))
        bar.update(1)
        load_in_page, load_driver = [], []
        for i in range(loads):
            ms, wall = first_load_ms(browser, study_link(base, load_slug, f"bench-load-{i}"))
            load_in_page.append(ms)
            load_driver.append(wall)
            bar.update(1)
        submit_in_page, submit_driver, warmup = measure_submissions(browser, base, trial_slug, database.engine,
                                                                    submissions, bar)
        browser_version = browser.version

    first_load = {**summary(load_in_page, LIMIT_FIRST_LOAD_MS),
                  "driver_median_ms": round(statistics.median(load_driver), 1),
                  "cold_first_load_ms": round(cold_ms, 1)}
    submit_next = {**summary(submit_in_page, LIMIT_SUBMIT_NEXT_MS),
                   "driver_median_ms": round(statistics.median(submit_driver), 1),
                   "warmup_samples_ms": [round(x, 1) for x in warmup]}
    met = first_load["pass"] and submit_next["pass"]
    return {
        "benchmark": NAME,
        "requirement": f"one participant on an idle machine, in Chromium: submit -> next trial < "
                       f"{LIMIT_SUBMIT_NEXT_MS:g} ms, a new participant's first load < {LIMIT_FIRST_LOAD_MS:g} ms",
        "headline": {"label": "p95 submit -> next trial, p95 first load (ms, in the page)",
                     "submit_next_p95_ms": submit_next["p95_ms"], "first_load_p95_ms": first_load["p95_ms"],
                     "submit_next_median_ms": submit_next["median_ms"], "first_load_median_ms": first_load["median_ms"],
                     "pass": met},
        "goal": {"submit_next_limit_ms": LIMIT_SUBMIT_NEXT_MS, "first_load_limit_ms": LIMIT_FIRST_LOAD_MS,
                 "judged_on": "p95", "met": met},
        "results": {"submit_next": submit_next, "first_load": first_load},
        "config": {"quick": args.quick, "loads": loads, "submissions": submissions, "protocol": PROTOCOL,
                   "database": "sqlite", "poll_ms": POLL_MS, "think_ms": THINK_MS,
                   "warmup_submissions": WARMUP_SUBMISSIONS, "viewport": VIEWPORT,
                   "browser": f"chromium {browser_version}"},
        "machine": machine_info(load_before),
        "code_version": code_version(),
        "timestamp": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 2),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    reason = missing_requirement()
    if reason:
        print(f"{NAME}: cannot run: {reason}", file=sys.stderr)
        return 2
    emit(lambda: run(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
