"""Benchmark: what a researcher waits for on Research -> HOI-Edit, measured in Chromium.

Requirement: on a benchmark of 500 items x 8 methods, with one researcher on an idle machine, the
item browser shows the next item in under 300 ms (p95), and opening the benchmark shows its first
item in under 2 s. ``bench/hoi.py`` times the engine alone (``engines.hoi.browse``); this script
times the page around it, as a person sees it: Streamlit's script run, the images sent and drawn.

Set-up: a migrated SQLite database and a data folder in a temporary folder; the benchmark written
there as a registered data set, ``datasets/hoi/bench-0`` (``bench.hoi.write_benchmark``: upstream's
annotation file, 512 x 384 JPEG sources and edits, a records file per method, and 2,000 arena votes
in ``votes.jsonl``), and one more copy
per timed first view (``bench-1``, ...; hard links, so each opens cold in the server: nothing of
it cached); a researcher account; ``streamlit run app.py`` on a free port; Debian's chromium
driven by Playwright (the participant benchmark's set-up, ``bench/participant_ui.py``).

Measured inside the page (``performance.now()`` from a capturing listener), polled every
``POLL_MS`` ms, with ``THINK_MS`` untimed before each action:

- ``first_view``: the person types the folder into the sidebar and presses Enter; from the Enter
  key until the page is idle with the leaderboard drawn (``open_ms``); then they click the *Item
  browser* tab: from the click until the first item's source and edits are drawn and every image
  has loaded (``first_item_ms``). A sample is the sum, on a folder the server has never read.
- ``next_item``: in the item browser, a click on the item number's "+" until the next item's
  source caption is drawn, the previous item's is gone, every image has loaded and the app is
  idle. The first ``WARMUP_ITEMS`` clicks are untimed (display code the browser fetches once).

Each figure is the median and p95 over its samples, with its ratio to the limit. Prints one JSON
line, writes the same object to ``bench/results/hoi_ui.json`` (or ``--out``), progress on stderr.

    python bench/hoi_ui.py            # 500 items x 8 methods: 3 first views, 20 next items
    python bench/hoi_ui.py --quick    # 40 items x 3 methods: 1 first view, 3 next items
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

# Needs the repository on sys.path.
from bench._results import emit, machine_info  # noqa: E402
from bench.participant_ui import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    BenchDatabase,
    free_port,
    missing_requirement,
    streamlit_server,
    summary,
)

NAME = "hoi_ui"
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / f"{NAME}.json"
LIMIT_NEXT_ITEM_MS = 300.0
LIMIT_FIRST_VIEW_MS = 2000.0
FULL = {"items": 500, "methods": 8, "votes": 2000, "first_views": 3, "next_items": 20}
QUICK = {"items": 40, "methods": 3, "votes": 200, "first_views": 1, "next_items": 3}
WARMUP_ITEMS = 2
POLL_MS = 5
THINK_MS = 500
STEP_TIMEOUT_MS = 60_000
VIEWPORT = {"width": 1280, "height": 900}
USERNAME, PASSWORD = "bench-researcher", "bench-password-123"
FRESH = "[data-testid='stElementContainer'][data-stale='false']"

# The app is idle, nothing is left to draw, ``ready`` (a condition on the fresh elements) holds and
# every image has loaded: milliseconds since the armed event, else false.
_WAIT_JS = """
([ready, arg]) => {
  if (window.__haiAt === undefined) return false;
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.dataset.testScriptState !== "notRunning" || app.dataset.testConnectionState !== "CONNECTED") {
    return false;
  }
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const fresh = "__FRESH__";
  if (ready === "dataframe") {
    // the run the Enter key asked for has started (before it, the previous folder's table is fresh)
    if (!window.__haiRan || !document.querySelector(`${fresh} [data-testid='stDataFrame']`)) return false;
  } else {
    const captions = [...document.querySelectorAll("[data-testid='stImageCaption']")].map(e => e.innerText.trim());
    if (!captions.includes(`Source: ${arg.key}`)) return false;
    if (arg.previous && captions.includes(`Source: ${arg.previous}`)) return false;
    const edits = document.querySelectorAll(`${fresh} [data-testid='stImage'] img`).length;
    if (edits < arg.images) return false;
  }
  for (const img of document.querySelectorAll(`${fresh} img`)) {
    if (!img.complete || img.naturalWidth === 0) return false;
  }
  return performance.now() - window.__haiAt;
}
""".replace("__FRESH__", FRESH.replace('"', '\\"'))

_ARM_JS = """
(kind) => {
  window.__haiAt = undefined;
  window.__haiRan = false;
  const app = document.querySelector("[data-testid='stApp']");
  new MutationObserver((changes, observer) => {
    if (app.dataset.testScriptState === "running") { window.__haiRan = true; observer.disconnect(); }
  }).observe(app, {attributes: true, attributeFilter: ["data-test-script-state"]});
  document.addEventListener(kind, () => { window.__haiAt = performance.now(); }, {capture: true, once: true});
}
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=f"HOI-Edit page latency in Chromium: first view (limit {LIMIT_FIRST_VIEW_MS:g} ms) and "
                    f"next item (limit {LIMIT_NEXT_ITEM_MS:g} ms), p95.")
    parser.add_argument("--quick", action="store_true", help="40 items x 3 methods, 1 first view, 3 next items")
    parser.add_argument("--first-views", type=int, default=None, help="timed first views, a cold folder each")
    parser.add_argument("--next-items", type=int, default=None, help="timed next items")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"result file (default: {DEFAULT_OUT})")
    parser.add_argument("--server-log", type=Path, default=None, help="keep the server's log here")
    args = parser.parse_args(argv)
    for name in ("first_views", "next_items"):
        value = getattr(args, name)
        if value is not None and value < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    return args


# ------------------------------------------------------------------ data


def copy_folder(source: Path, target: Path) -> None:
    """``source`` again at ``target`` as hard links: new paths (nothing cached for them), no copying."""
    shutil.copytree(source, target, copy_function=os.link)


@contextlib.contextmanager
def bench_data(items: int, methods: int, votes: int, copies: int):
    """A migrated SQLite database, a researcher account, and ``copies`` registered benchmark folders
    (with ``votes`` arena votes in ``votes.jsonl``, which the page's arena tab rates)."""
    from bench.hoi import synthetic_votes, write_benchmark
    from engines.hoi.arena import votes_jsonl
    from engines.platform import auth, migrate
    from engines.platform.db import get_engine

    folder = Path(tempfile.mkdtemp(prefix="hai-bench-hoi-ui-"))
    url = f"sqlite:///{(folder / 'db.sqlite').as_posix()}"
    try:
        migrate.upgrade(url)
        database = BenchDatabase(url, folder)
        auth.create_user(USERNAME, PASSWORD, "researcher", engine=database.engine)
        datasets = folder / "datasets" / "hoi"
        datasets.mkdir(parents=True)
        started = time.perf_counter()
        write_benchmark(datasets / "bench-0", items, methods)
        (datasets / "bench-0" / "votes.jsonl").write_bytes(votes_jsonl(synthetic_votes(votes, methods)))
        write_s = time.perf_counter() - started
        for copy in range(1, copies + 1):
            copy_folder(datasets / "bench-0", datasets / f"bench-{copy}")
        yield database, write_s
    finally:
        get_engine(url).dispose()
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------ browser


def wait_idle(page) -> None:
    page.wait_for_timeout(300)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']", timeout=STEP_TIMEOUT_MS)


def log_in(page, base: str) -> None:
    page.goto(base)
    wait_idle(page)
    page.locator(".st-key-login-username input").fill(USERNAME)
    page.locator(".st-key-login-password input").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    wait_idle(page)
    for _ in range(100):  # the login cookie is written by a script after the run
        if any(c["name"] == "hai_session" and c["value"] for c in page.context.cookies()):
            return
        page.wait_for_timeout(100)
    raise RuntimeError("the login cookie was never written")


def timed(page, kind: str, action, ready: str, arg: dict | None = None) -> float:
    """In-page ms from the ``kind`` event ``action`` causes until ``ready`` holds (``_WAIT_JS``)."""
    page.wait_for_timeout(THINK_MS)
    page.evaluate(_ARM_JS, kind)
    action()
    handle = page.wait_for_function(_WAIT_JS, arg=[ready, arg or {}], polling=POLL_MS, timeout=STEP_TIMEOUT_MS)
    return float(handle.json_value())


def first_view(page, folder: str, first_key: str, images: int) -> tuple[float, float]:
    """(open ms, first item ms): the folder entered, then the Item browser tab opened."""
    field = page.locator(".st-key-hoi-root input")

    def enter() -> None:
        field.fill(folder)
        field.press("Enter")

    opened = timed(page, "keydown", enter, "dataframe")
    tab = page.get_by_role("tab", name="Item browser")
    first = timed(page, "click", tab.click, "item", {"key": first_key, "images": images})
    return opened, first


def next_item(page, key: str, previous: str, images: int) -> float:
    up = page.locator(".st-key-hoi-item [data-testid='stNumberInputStepUp']")
    return timed(page, "click", up.click, "item", {"key": key, "previous": previous, "images": images})


def back_to_leaderboard(page) -> None:
    """The page as a person opens it: on its first tab."""
    page.get_by_role("tab", name="Leaderboard").click()
    wait_idle(page)


# ------------------------------------------------------------------ the run


def run(args: argparse.Namespace) -> dict:
    from playwright.sync_api import sync_playwright

    from engines.platform.provenance import code_version

    settings = QUICK if args.quick else FULL
    first_views = args.first_views or settings["first_views"]
    next_items = args.next_items or settings["next_items"]
    items, methods = settings["items"], settings["methods"]
    keys = [f"item_{index:04d}.jpg" for index in range(items)]  # bench.hoi's keys, in file order
    images = 1 + methods  # the source and each method's edit
    if WARMUP_ITEMS + next_items >= items:
        raise SystemExit(f"--next-items must be below {items - WARMUP_ITEMS} for {items} items")
    started = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    with contextlib.ExitStack() as stack:
        print(f"writing {items} items x {methods} methods…", file=sys.stderr, flush=True)
        # bench-0 warms the server (imports, the page's code), bench-1.. are the timed first views.
        database, write_s = stack.enter_context(bench_data(items, methods, settings["votes"], first_views))
        log_path = args.server_log or database.data_dir / "streamlit.log"
        base = stack.enter_context(streamlit_server(database, free_port(), log_path))
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        stack.callback(browser.close)
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(STEP_TIMEOUT_MS)
        page = context.new_page()
        log_in(page, base)
        page.goto(f"{base}/hoi-edit")
        wait_idle(page)
        warm_open, warm_first = first_view(page, "datasets/hoi/bench-0", keys[0], images)
        print(f"warm-up view: {warm_open:.0f} + {warm_first:.0f} ms", file=sys.stderr, flush=True)
        opens, firsts = [], []
        for copy in range(1, first_views + 1):
            back_to_leaderboard(page)
            opened, first = first_view(page, f"datasets/hoi/bench-{copy}", keys[0], images)
            opens.append(opened)
            firsts.append(first)
            print(f"first view {copy}: open {opened:.0f} ms + first item {first:.0f} ms", file=sys.stderr, flush=True)
        warmup, samples = [], []
        for position in range(1, 1 + WARMUP_ITEMS + next_items):
            ms = next_item(page, keys[position], keys[position - 1], images)
            (warmup if position <= WARMUP_ITEMS else samples).append(ms)
            print(f"next item {position + 1}: {ms:.0f} ms", file=sys.stderr, flush=True)
        browser_version = browser.version

    totals = [o + f for o, f in zip(opens, firsts, strict=True)]
    first = {**summary(totals, LIMIT_FIRST_VIEW_MS), "open_ms": [round(x, 1) for x in opens],
             "first_item_ms": [round(x, 1) for x in firsts],
             "warmup_ms": [round(warm_open, 1), round(warm_first, 1)]}
    following = {**summary(samples, LIMIT_NEXT_ITEM_MS), "warmup_samples_ms": [round(x, 1) for x in warmup]}
    met = first["pass"] and following["pass"]
    return {
        "benchmark": NAME,
        "requirement": f"{items} items x {methods} methods, one researcher, in Chromium: next item < "
                       f"{LIMIT_NEXT_ITEM_MS:g} ms and first view < {LIMIT_FIRST_VIEW_MS:g} ms (p95)",
        "headline": {"label": "p95 next item, p95 first view (ms, in the page)",
                     "next_item_p95_ms": following["p95_ms"], "first_view_p95_ms": first["p95_ms"],
                     "next_item_median_ms": following["median_ms"], "first_view_median_ms": first["median_ms"],
                     "pass": met},
        "goal": {"next_item_limit_ms": LIMIT_NEXT_ITEM_MS, "first_view_limit_ms": LIMIT_FIRST_VIEW_MS,
                 "judged_on": "p95", "met": met},
        "results": {"next_item": following, "first_view": first},
        "config": {"quick": args.quick, "items": items, "methods": methods, "votes": settings["votes"], "images_per_item": images,
                   "first_views": first_views, "next_items": next_items, "warmup_items": WARMUP_ITEMS,
                   "poll_ms": POLL_MS, "think_ms": THINK_MS, "viewport": VIEWPORT, "database": "sqlite",
                   "write_benchmark_s": round(write_s, 1), "browser": f"chromium {browser_version}"},
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
