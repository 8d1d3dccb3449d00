"""Regenerate the README's pictures from a fresh, throw-away installation.

    .venv/bin/python docs/images/capture.py

Bootstraps a temporary data folder (SQLite, the demo studies and projects), adds a researcher and
an annotator, serves the app on a free local port and photographs five pages with Debian's
Chromium through Playwright: collab.png, attribution.png, hoi.png, video.png and judge.png, next
to this file. The server and the temporary folder are removed at the end.

The browser window is 1280 pixels wide, as a laptop's, and tall enough that the whole region of
interest is drawn at once; each picture is that region of the main column, its white margin
cropped, saved as an optimised PNG (palette-quantised if it would exceed 250 KB).
"""

from __future__ import annotations

import io
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from PIL import Image, ImageChops

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
PYTHON = ROOT / ".venv" / "bin" / "python"
WIDTH, TALL = 1280, 2600  # the width sets the layout; the height only lets the whole region be drawn
MARGIN = 12  # pixels kept around a region
MAX_BYTES = 250_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
# A question of the shipped gated-agent run whose search takes several steps.
VIDEO_QUESTION = "synthetic-0007-000-q003"
# An item of the shipped HOI-Edit demo on which the methods differ visibly.
HOI_ITEM = 3
PASSWORD = "capture-pass-2026"  # throw-away accounts of a throw-away installation


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bootstrap(env: dict[str, str]) -> dict:
    """Migrate, create the first admin and the demo studies; returns the command's JSON report."""
    done = subprocess.run([str(PYTHON), "-m", "engines.platform", "bootstrap", "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"bootstrap failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def add_accounts() -> None:
    """A researcher, and an annotator on the demo labeling project's team (the only project yet)."""
    from engines.judge import labeling, members
    from engines.platform import auth

    auth.create_user("researcher", PASSWORD, "researcher")
    auth.create_user("annotator", PASSWORD, "annotator")
    members.add_members(labeling.list_projects()[0].slug, ["annotator"])


def shapes_participant(slug: str, external_id: str = "picture1") -> str:
    """Walk a participant of the shapes study to round 2 of the first image, where the AI's set shows.

    Returns the id for the link (``?pid=``). The steps before go through the engine, not the browser.
    """
    from engines.platform import runtime
    from studies.collab_shapes import TASK_CHOICES, rounds_choice

    pid = runtime.enter(slug, {"pid": external_id}).participant_id

    def answer(data: dict) -> None:
        view = runtime.current_view(pid)
        result = runtime.submit(pid, view.step.index, data)
        assert result.accepted and not result.check_failed, (view.step, result)

    answer({"agree": True})  # consent
    answer({})  # instructions
    rounds = runtime.current_view(pid).template_vars["rounds"]
    answer({"task": TASK_CHOICES[0], "rounds": rounds_choice(rounds)})  # comprehension
    answer({"answer": "Rarely"})  # attention check
    answer({"answer": 4, "confidence": 2})  # round 1: the participant's own count
    assert runtime.current_view(pid).template_vars.get("ai_set") is not None, "round 2 shows no AI set"
    return external_id


def start_server(env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    """Serve the app on 127.0.0.1:``port`` and wait until it answers; its output goes to ``log``."""
    with log.open("wb") as out:  # the child keeps its own handle
        server = subprocess.Popen(
            [str(ROOT / ".venv" / "bin" / "streamlit"), "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"], cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            if server.poll() is not None:
                raise RuntimeError(f"the app did not start:\n{log.read_text()[-2000:]}") from None
            time.sleep(0.5)
    stop(server)
    raise RuntimeError("the app did not answer /_stcore/health within two minutes")


def stop(server: subprocess.Popen) -> None:
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def save_png(raw: bytes, name: str) -> Path:
    """Crop the uniform margin away and write an optimised PNG, palette-quantised if it is too big."""
    image = Image.open(io.BytesIO(raw)).convert("RGB")
    background = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, background).getbbox()
    if box:
        pad = 16
        image = image.crop((max(box[0] - pad, 0), max(box[1] - pad, 0),
                            min(box[2] + pad, image.width), min(box[3] + pad, image.height)))
    path = OUT / name
    image.save(path, optimize=True)
    if path.stat().st_size > MAX_BYTES:
        image.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(path, optimize=True)
    return path


def capture(page, name: str, top, bottom) -> Path:
    """Photograph the main column from the top of locator ``top`` to the bottom of locator ``bottom``."""
    settle(page)
    main = page.get_by_test_id("stMainBlockContainer").bounding_box()
    y0 = top.bounding_box()["y"] - MARGIN
    end = bottom.bounding_box()
    # x + 2: the sidebar's border line would otherwise stop the white margin from being cropped
    clip = {"x": main["x"] + 2, "y": y0, "width": main["width"] - 2, "height": end["y"] + end["height"] + MARGIN - y0}
    return save_png(page.screenshot(clip=clip), name)


def settle(page, timeout_ms: int = 60_000) -> None:
    """Wait for the script run to end, then a little longer for charts and images to draw."""
    from tests.e2e.browser_bot import wait_ready

    wait_ready(page, timeout_ms)
    page.wait_for_timeout(1500)


def unfocus(page) -> None:
    """Leave no widget focused: Streamlit draws a focused box with a red outline, as if it were wrong."""
    page.evaluate("document.activeElement && document.activeElement.blur()")


def log_in(page, base: str, username: str) -> None:
    open_page(page, base)
    page.locator(".st-key-login-username input").fill(username)
    page.locator(".st-key-login-password input").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_text(f"Signed in as {username}").wait_for(timeout=60_000)


def open_page(page, url: str) -> None:
    page.goto(url)
    settle(page)


def take_pictures(base: str, study: str, participant: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            def new_page():
                context = browser.new_context(viewport={"width": WIDTH, "height": TALL}, color_scheme="light")
                return context.new_page()

            page = new_page()  # the participant: round 2 of the first image, with the AI's set
            open_page(page, f"{base}/?study={study}&pid={participant}")
            main = page.get_by_test_id("stMainBlockContainer")
            written.append(capture(page, "collab.png", main, main))

            page = new_page()
            log_in(page, base, "researcher")
            open_page(page, f"{base}/attribution-heatmaps")
            page.get_by_role("button", name="Compute the maps").click()
            settle(page, 180_000)
            written.append(capture(page, "attribution.png", page.get_by_text("Frame: reaching task"),
                                   page.get_by_text("ISS and the baselines are min-max normalised")))

            open_page(page, f"{base}/hoi-edit")
            page.get_by_role("tab", name="Item browser").click()
            page.locator(".st-key-hoi-item input").fill(str(HOI_ITEM))
            page.keyboard.press("Enter")
            unfocus(page)
            settle(page)
            written.append(capture(page, "hoi.png", page.get_by_test_id("stTabs"),
                                   page.get_by_text("The judge's reasoning").last))

            open_page(page, f"{base}/video-inspector")
            page.locator(".st-key-video-question").click()
            page.get_by_role("option", name=re.compile(VIDEO_QUESTION)).click()
            unfocus(page)
            settle(page)
            written.append(capture(page, "video.png", page.get_by_role("heading", name="1 · A run and a question"),
                                   page.get_by_text("Green: the evidence the question rests on")))

            page = new_page()  # the annotator, on the demo project
            log_in(page, base, "annotator")
            open_page(page, f"{base}/judge-label")
            written.append(capture(page, "judge.png", page.get_by_role("heading", name="Label"),
                                   page.get_by_role("button", name="Undo my last label (U)")))
        finally:
            browser.close()
    return written


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="hai-pictures-") as data_dir:
        # Set before the engines are imported: this process and the server use the same fresh folder.
        os.environ.update(HAI_DATA_DIR=data_dir, HAI_RUN_JOBS_IN_APP="false")
        os.environ.pop("HAI_DATABASE_URL", None)  # the default SQLite file in that folder
        env = dict(os.environ)
        report = bootstrap(env)
        sys.path.insert(0, str(ROOT))
        add_accounts()
        study = next(slug for slug in report["demo_studies_created"] if "shapes" in slug)
        participant = shapes_participant(study)
        port = free_port()
        server = start_server(env, port, Path(data_dir) / "server.log")
        try:
            written = take_pictures(f"http://127.0.0.1:{port}", study, participant)
        finally:
            stop(server)
    for path in written:
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
