"""What a Ray task of a job is handed, without starting Ray: secrets in its environment, never as arguments.

Ray keeps a task's arguments in its object store and shows them with the task (dashboard, state
API, logs of a failed task), so the database URL, the server keys and the API keys must reach a
job's task through its runtime environment instead.
"""

from __future__ import annotations

import pytest

from engines.platform import settings
from engines.platform.db import write_transaction
from engines.platform.models import Job

ray_executor = pytest.importorskip("engines.platform.ray_executor")

SECRETS = {
    "HAI_PSEUDONYM_KEY": "p" * 40,
    "HAI_ARENA_KEY": "a" * 40,
    "HAI_API_KEY_TEST": "sk-test-key-value",
    "OPENAI_API_KEY": "sk-declared-key-value",
}


class SpyTask:
    """Stands in for ``run_job_task``: records the options and the arguments of each ``.remote`` call."""

    def __init__(self) -> None:
        self.calls: list[tuple[dict, tuple]] = []

    def options(self, **options):
        spy = self

        class Bound:
            def remote(self, *args):
                spy.calls.append((options, args))
                return f"ref-{len(spy.calls)}"

        return Bound()


@pytest.fixture
def spy_task(sqlite_db, monkeypatch) -> SpyTask:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("HAI_API_KEY_VARIABLES", "OPENAI_API_KEY")
    monkeypatch.setenv("HAI_ADMIN_PASSWORD", "first-admin-password")
    monkeypatch.setenv("SOME_SERVER_SECRET", "server-only-value")
    settings.reset_settings()
    spy = SpyTask()
    monkeypatch.setattr(ray_executor, "run_job_task", spy)
    return spy


def _start_one(database_url: str, spy: SpyTask) -> tuple[dict, tuple]:
    with write_transaction() as session:  # a queued row, as submit_job leaves it
        job = Job(kind="platform.countdown", params={"seconds": 0})
        session.add(job)
        session.flush()
        job_id = job.id
    ray_executor.RayExecutor(1, database_url=database_url)._start_queued()  # noqa: SLF001
    ((options, args),) = spy.calls
    assert args[0] == job_id
    return options, args


def test_a_jobs_task_arguments_hold_no_secret(sqlite_db, spy_task):
    _options, args = _start_one(sqlite_db, spy_task)
    shown = repr(args)
    for secret in (*SECRETS.values(), sqlite_db, "first-admin-password", "server-only-value"):
        assert secret not in shown
    settings_env = args[1]
    assert "HAI_DATABASE_URL" not in settings_env and "HAI_PSEUDONYM_KEY" not in settings_env
    assert settings_env["HAI_DATA_DIR"] == str(settings.get_settings().data_dir)  # the non-secret settings still go
    assert settings_env["HAI_JOB_EXECUTOR"] == "ray"


def test_a_jobs_secrets_reach_its_task_as_its_environment(sqlite_db, spy_task):
    options, _args = _start_one(sqlite_db, spy_task)
    env = options["runtime_env"]["env_vars"]
    assert env["HAI_DATABASE_URL"] == sqlite_db
    assert {name: env[name] for name in SECRETS} == SECRETS
    assert "HAI_ADMIN_PASSWORD" not in env and "SOME_SERVER_SECRET" not in env
    assert env["PYTHONPATH"].startswith(str(ray_executor.REPO_ROOT))


def test_a_local_ray_starts_with_the_child_environment_and_the_app_keeps_its_own(monkeypatch):
    """The raylet and its workers inherit the environment ``ray.init`` starts them under."""
    monkeypatch.setenv("SOME_SERVER_SECRET", "s3cr3t")
    monkeypatch.setenv("HAI_DEVICE", "cpu")
    monkeypatch.setenv("HAI_RAY_ADDRESS", "")
    settings.reset_settings()
    seen = {}
    monkeypatch.setattr(ray_executor.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_executor.ray, "init", lambda **kwargs: seen.update(dict(__import__("os").environ)))
    assert ray_executor.connect() is True
    assert "SOME_SERVER_SECRET" not in seen and seen["HAI_DEVICE"] == "cpu"
    assert __import__("os").environ["SOME_SERVER_SECRET"] == "s3cr3t"
