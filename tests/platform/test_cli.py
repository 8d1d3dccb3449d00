"""The platform CLI end to end, in a subprocess, against a fresh SQLite file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path):
    env = {**os.environ, "HAI_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", "HAI_DATA_DIR": str(tmp_path),
           "HAI_ADMIN_PASSWORD": ""}

    def run(*args: str, ok: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run([sys.executable, "-m", "engines.platform", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)
        if ok and proc.returncode != 0:
            raise AssertionError(f"{args} exited {proc.returncode}: {proc.stderr}")
        return proc

    return run


@pytest.mark.slow
def test_cli_bootstrap_study_bots_export_jobs(cli, tmp_path):
    boot = json.loads(cli("--json", "bootstrap").stdout)
    assert "demo-survey" in boot["demo_studies_created"] and len(boot["one_time_password"]) >= 12
    assert "one_time_password" not in json.loads(cli("--json", "bootstrap").stdout)  # printed once only
    cli("studies", "create", "pilot", "demo_survey", "--config", '{"completion_code": "PIL0T"}')
    links = json.loads(cli("--json", "studies", "links", "pilot").stdout)
    assert links["prolific"].endswith("SESSION_ID={{%SESSION_ID%}}")
    reports = json.loads(cli("--json", "bots", "demo_survey", "--participants", "4", "--study", "pilot").stdout)
    assert [r["status"] for r in reports] == ["completed", "completed", "screened_out", "screened_out"]
    assert reports[0]["completion_code"] == "PIL0T"
    progress = json.loads(cli("--json", "studies", "progress", "pilot").stdout)
    assert sum(p["completed"] + p["screened_out"] for p in progress) == 4
    files = json.loads(cli("--json", "export", "pilot", "--out", str(tmp_path / "out")).stdout)["files"]
    assert len(files) == 6 and (tmp_path / "out" / "responses.csv").read_text().count("\n") > 10
    job = json.loads(cli("--json", "jobs", "submit", "platform.countdown", "--params", '{"seconds": 0}', "--wait").stdout)
    assert job["status"] == "succeeded" and job["result"] == {"slept_s": 0.0}


def test_cli_bad_input_exits_2_with_a_clear_message(cli):
    cli("migrate")
    proc = cli("studies", "create", "Bad Name", "demo_survey", ok=False)
    assert proc.returncode == 2 and "not a valid study name" in proc.stderr
    proc = cli("studies", "create", "fine", "no_such_protocol", ok=False)
    assert proc.returncode == 2 and "No study protocol named 'no_such_protocol'" in proc.stderr
    proc = cli("jobs", "submit", "platform.countdown", "--params", "{oops", ok=False)
    assert proc.returncode == 2 and "error:" in proc.stderr
    proc = cli("export", "ghost", "--out", "x", ok=False)
    assert proc.returncode == 2 and "no study called 'ghost'" in proc.stderr
