"""The platform CLI end to end against a fresh SQLite file: in this process through ``main(argv)``,
and once as a subprocess (``python -m engines.platform``, its exit codes and messages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import Ran, run_main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def cli(tmp_path, monkeypatch, capsys):
    """``cli(*args)`` runs the platform CLI in this process on the test's own database and data dir."""
    from engines.platform import settings
    from engines.platform.__main__ import main

    monkeypatch.setenv("HAI_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    monkeypatch.setenv("HAI_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("HAI_ADMIN_PASSWORD", "")
    settings.reset_settings()

    def run(*args: str, ok: bool = True) -> Ran:
        ran = run_main(main, args, capsys)
        if ok and ran.returncode != 0:
            raise AssertionError(f"{args} exited {ran.returncode}: {ran.stderr}")
        return ran

    yield run
    settings.reset_settings()


@pytest.fixture
def cli_process(tmp_path):
    """``cli_process(*args)`` runs ``python -m engines.platform`` as a subprocess."""
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
    assert len(files) == 7 and (tmp_path / "out" / "responses.csv").read_text().count("\n") > 10
    job = json.loads(cli("--json", "jobs", "submit", "platform.countdown", "--params", '{"seconds": 0}', "--wait").stdout)
    assert job["status"] == "succeeded" and job["result"] == {"slept_s": 0.0}


def test_cli_bad_input_exits_2_with_a_clear_message(cli_process):
    cli = cli_process
    cli("migrate")
    proc = cli("studies", "create", "Bad Name", "demo_survey", ok=False)
    assert proc.returncode == 2 and "not a valid study name" in proc.stderr
    proc = cli("studies", "create", "fine", "no_such_protocol", ok=False)
    assert proc.returncode == 2 and "No study protocol named 'no_such_protocol'" in proc.stderr
    proc = cli("jobs", "submit", "platform.countdown", "--params", "{oops", ok=False)
    assert proc.returncode == 2 and "error:" in proc.stderr
    proc = cli("export", "ghost", "--out", "x", ok=False)
    assert proc.returncode == 2 and "no study called 'ghost'" in proc.stderr


# ---------------------------------------------------------------- options and job models from one dataclass

def test_options_and_job_model_come_from_one_config_dataclass():
    import argparse
    from dataclasses import dataclass, field

    from engines.platform.config_schema import argparse_options, job_model, option_values

    @dataclass(frozen=True)
    class ToyConfig:
        steps: int = field(default=100, metadata={"help": "steps to run", "min": 1, "max": 1_000})
        mode: str = field(default="fast", metadata={"help": "how to run", "choices": ("fast", "slow")})
        rate: float = field(default=0.5, metadata={"help": "a rate", "gt": 0, "lt": 1})
        verbose: bool = field(default=False, metadata={"help": "say more"})
        extra: dict = field(default_factory=dict, metadata={"help": "named extras"})
        path: str = field(default="x.npz", metadata={"help": "a file", "job": False})
        detail: int = field(default=3, metadata={"cli": False, "job": False})

    parser = argparse.ArgumentParser()
    argparse_options(ToyConfig, parser, prefix="toy_", overrides={"steps": {"help": "steps (default 100)"}})
    args = parser.parse_args(["--toy-steps", "5", "--toy-verbose", "--toy-extra", "a=1,b=x"])
    assert option_values(ToyConfig, args, prefix="toy_") == {
        "steps": 5, "mode": "fast", "rate": 0.5, "verbose": True, "extra": {"a": 1, "b": "x"}, "path": "x.npz"}
    assert "--toy-detail" not in parser._option_string_actions
    with pytest.raises(SystemExit):
        parser.parse_args(["--toy-mode", "medium"])  # choices
    with pytest.raises(SystemExit):
        parser.parse_args(["--toy-extra", "novalue"])  # key=value pairs

    Params = job_model(ToyConfig, name="ToyParams", defaults={"steps": 10})
    assert list(Params.model_fields) == ["steps", "mode", "rate", "verbose", "extra"]  # no path, no detail
    assert Params().steps == 10 and Params.model_fields["steps"].title == "Steps to run"
    for bad in ({"steps": 0}, {"mode": "medium"}, {"rate": 1.0}, {"path": "/etc/passwd"}):
        with pytest.raises(ValueError):
            Params(**bad)
    assert Params().extra == {} and Params().extra is not Params().extra  # a fresh dict per model


def test_json_after_the_command_and_an_unmigrated_database(cli):
    missing = cli("studies", "list", ok=False)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "no HAI Studio tables yet: run `python -m engines.platform migrate`" in missing.stderr
    cli("migrate")
    cli("studies", "create", "pilot-1", "demo_survey")
    progress = json.loads(cli("studies", "progress", "pilot-1", "--json").stdout)  # as the README writes it
    assert progress == json.loads(cli("--json", "studies", "progress", "pilot-1").stdout)


def test_closing_says_closed_and_links_need_a_study(cli):
    cli("migrate")
    cli("studies", "create", "pilot-1", "demo_survey")
    assert cli("studies", "close", "pilot-1").stdout.strip() == "pilot-1 is now closed"
    assert cli("studies", "open", "pilot-1").stdout.strip() == "pilot-1 is now open"
    proc = cli("studies", "links", "ghost", ok=False)
    assert proc.returncode == 2 and "There is no study called 'ghost'" in proc.stderr and not proc.stdout


def test_make_run_reads_the_public_address_from_dot_env(tmp_path):
    """A public address in .env (which the app reads) is not overridden by the port's localhost default."""
    (tmp_path / "Makefile").write_text((ROOT / "Makefile").read_text())
    (tmp_path / ".env").write_text('HAI_DEBUG=1\nHAI_PUBLIC_BASE_URL="https://study.example.org"\n')
    env = {k: v for k, v in os.environ.items() if k != "HAI_PUBLIC_BASE_URL"}
    shown = subprocess.run(["make", "-s", "--eval", "show-base-url: ; @echo $$HAI_PUBLIC_BASE_URL", "show-base-url",
                            "PORT=8777"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == "https://study.example.org", shown.stderr



@pytest.mark.parametrize(("given", "expected"), [(None, "http://localhost:8777"),
                                                  ("https://study.example.org", "https://study.example.org")])
def test_make_run_links_follow_the_port_unless_a_public_address_is_given(given, expected):
    """`make run PORT=8777` serves on 8777, so participant links must say 8777 too."""
    env = {k: v for k, v in os.environ.items() if k != "HAI_PUBLIC_BASE_URL"}
    if given:
        env["HAI_PUBLIC_BASE_URL"] = given
    shown = subprocess.run(["make", "-s", "--eval", "show-base-url: ; @echo $$HAI_PUBLIC_BASE_URL", "show-base-url",
                            "PORT=8777"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert shown.stdout.strip() == expected, shown.stderr
