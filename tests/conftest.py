"""Shared fixtures: throw-away databases (SQLite always, PostgreSQL when HAI_TEST_DATABASE_URL is set)."""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
from pathlib import Path

import pytest


def _share_threads_between_xdist_workers() -> None:
    """Under ``pytest -n N`` each worker gets cores/N math threads (set before torch is imported):
    N workers each starting a thread per core oversubscribe the machine, and tests that train
    small models ran slower in parallel than one after another."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers <= 1:
        return
    share = str(max(1, (os.cpu_count() or 1) // workers))
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ.setdefault(name, share)


_share_threads_between_xdist_workers()

from engines.platform import db, migrate, settings  # noqa: E402 - after the thread share
from engines.platform.scratch import RecycledSchemas  # noqa: E402

PG_URL = os.environ.get("HAI_TEST_DATABASE_URL", "")
os.environ.setdefault("HAI_RUN_JOBS_IN_APP", "false")


_MAIN = sys.modules["__main__"]


@pytest.fixture(autouse=True)
def restore_main_module():
    """Put pytest's own ``__main__`` back after each test. Streamlit's AppTest runs a page as
    ``__main__`` and leaves it there; a process spawned later (a fanned-out sweep, a training
    pool) would then run that page again while it starts up, and hang or fail."""
    yield
    sys.modules["__main__"] = _MAIN


@pytest.fixture(autouse=True)
def settings_read_afresh_after_each_test():
    """A test that changes a setting's environment variable (monkeypatch) and reads the settings
    leaves them cached after its environment is put back: the next test in the same worker would
    run under them (an endpoint host list of one test refused another test's local server)."""
    yield
    settings.reset_settings()


@pytest.fixture(autouse=True)
def forget_protocols_registered_in_the_test():
    """A study protocol a test registers in code (``tests.helpers.form_steps_protocol``) is forgotten
    after it: otherwise a later test in the same worker, loading the demo data, would create a study
    for it as if it were shipped."""
    from engines.platform import registry

    before = registry.names_registered_in_code()
    yield
    for name in registry.names_registered_in_code() - before:
        registry.unregister_protocol(name)


@pytest.fixture(autouse=True)
def cheap_password_hashing(request, monkeypatch):
    """Argon2 at its lowest cost in tests: the production parameters (0.1 s and 64 MiB per hash) made
    most of the account tests' time, and of their mutation runs'. A test marked ``production_argon2``
    keeps the production hasher (the one that checks those parameters)."""
    if request.node.get_closest_marker("production_argon2"):
        return
    from argon2 import PasswordHasher

    from engines.platform import auth

    cheap = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    monkeypatch.setattr(auth, "_HASHER", cheap)
    monkeypatch.setattr(auth, "_DUMMY_HASH", _CHEAP_DUMMY_HASH.setdefault("hash", cheap.hash("not-a-real-password")))


_CHEAP_DUMMY_HASH: dict[str, str] = {}


# Tests that hold a shared machine resource run on one xdist worker each (``--dist loadgroup``):
# a local Ray cluster, nginx with several app processes.
XDIST_GROUPS = {"test_jobs_ray.py": "ray", "test_serve.py": "served", "test_readme_commands.py": "served"}
# Browser flows and benchmarks' quick runs start app servers of their own: the tests of one file
# stay on one worker (they share module fixtures), files spread over the workers.
PER_FILE_GROUPS = {"e2e": "browser", "bench": "bench"}


def _group_of(path: Path) -> str | None:
    if path.name in XDIST_GROUPS:
        return XDIST_GROUPS[path.name]
    if path.parent.name in PER_FILE_GROUPS:
        return f"{PER_FILE_GROUPS[path.parent.name]}-{path.stem}"
    return None


def _uses_a_module_fixture(item) -> bool:
    """Whether the test uses a module-scoped fixture (a generated video, a quick benchmark run, a trained
    tiny model): the tests of its file then stay on one worker, so the fixture is built once, not once on
    every worker the file's tests were spread over."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(definition.scope == "module" for definitions in info.name2fixturedefs.values()
               for definition in definitions)


def _group_shared_resources(items) -> None:
    for item in items:
        path = Path(str(item.fspath))
        group = _group_of(path)
        if group is None and _uses_a_module_fixture(item):
            group = f"module-{path.parent.name}-{path.stem}"
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_runtest_setup(item):
    """Tests marked ``cuda`` run where torch has a CUDA device and are skipped elsewhere (torch is
    imported only for them)."""
    if item.get_closest_marker("cuda") is None:
        return
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device (torch has none here)")


def pytest_report_header(config):  # noqa: ARG001 - pytest hook
    return f"PostgreSQL tests: {'on (' + PG_URL.split('@')[-1] + ')' if PG_URL else 'off (HAI_TEST_DATABASE_URL not set)'}"


@pytest.fixture(scope="session")
def migrated_sqlite_template(tmp_path_factory) -> Path:
    """One migrated SQLite file per test session; each test gets a copy (migrating is the slow part)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    migrate.upgrade(f"sqlite:///{path}")
    db.get_engine(f"sqlite:///{path}").dispose()
    return path


@pytest.fixture
def use_database(monkeypatch, tmp_path):
    """Point the process's settings at ``url`` (and a temp data dir) for one test."""

    def _use(url: str) -> str:
        monkeypatch.setenv("HAI_DATABASE_URL", url)
        monkeypatch.setenv("HAI_DATA_DIR", str(tmp_path / "data"))
        monkeypatch.setenv("HAI_RUN_JOBS_IN_APP", "false")
        settings.reset_settings()
        return url

    yield _use
    settings.reset_settings()


@contextlib.contextmanager
def _sqlite_copy(use_database, template: Path, tmp_path: Path):
    """A copy of the migrated template in ``tmp_path``, in use for the block; its engine disposed after."""
    path = tmp_path / "hai.db"
    shutil.copy(template, path)
    url = use_database(f"sqlite:///{path}")
    yield url
    db.get_engine(url).dispose()


@pytest.fixture
def sqlite_db(use_database, migrated_sqlite_template, tmp_path) -> str:
    with _sqlite_copy(use_database, migrated_sqlite_template, tmp_path) as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_db(request, use_database, migrated_sqlite_template, tmp_path) -> str:
    """Runs the test once on SQLite and once on PostgreSQL (skipped without a server)."""
    if request.param == "sqlite":
        with _sqlite_copy(use_database, migrated_sqlite_template, tmp_path) as url:
            yield url
        return
    if not PG_URL:
        pytest.skip("HAI_TEST_DATABASE_URL is not set")
    with pg_schemas().borrow() as url:
        yield use_database(url)


@functools.cache
def pg_schemas() -> RecycledSchemas:
    """This process's migrated PostgreSQL schemas, emptied and lent again test after test."""
    return RecycledSchemas(PG_URL)


@pytest.fixture
def start_executor(sqlite_db):
    """``start(max_workers)``: a local executor (jobs in child processes) on the test's database;
    every one started is shut down after the test."""
    from engines.platform import jobqueue

    def start(max_workers: int) -> jobqueue.LocalExecutor:
        started.append(jobqueue.LocalExecutor(max_workers=max_workers, poll_s=0.2))
        started[-1].start()
        return started[-1]

    started: list[jobqueue.LocalExecutor] = []
    yield start
    for running in started:
        running.shutdown()


@pytest.fixture
def demo_study(sqlite_db) -> str:
    from engines.platform import study_admin

    study_admin.create_study("demo", "demo_survey")
    return "demo"


@pytest.fixture
def other_engine(sqlite_db, migrated_sqlite_template, tmp_path):
    """A second migrated SQLite database, reached only through its engine (the default stays sqlite_db):
    a function that drops the ``engine=`` it is given reads or writes the wrong database."""
    path = tmp_path / "other.db"
    shutil.copy(migrated_sqlite_template, path)
    engine = db.get_engine(f"sqlite:///{path}")
    yield engine
    engine.dispose()


def _name_groups_in_test_ids(config, items) -> None:
    """On an xdist worker under ``--dist loadgroup``: a grouped test's id ends in ``@group``, which is how the
    scheduler keeps a group on one worker. xdist 3.8 writes that suffix into ``item._nodeid``, which pytest 9
    no longer reads (the id comes from ``item._id``), so every group was ignored: a file's tests spread over
    both workers, each starting the file's servers and building its module fixtures. Written here the way
    pytest 9 reads it; nothing is done where the id already has its suffix (an xdist that does it itself)."""
    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                        for mark in item.iter_markers("xdist_group")})
        if names and "@" not in item.nodeid and hasattr(item, "_id"):
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")  # noqa: SLF001 - see the docstring


# The order the scheduler deals work in (``--no-loadscope-reorder`` keeps the collection's order): the
# long work first, the many short unit tests last, so that the workers finish together rather than
# one waiting while the other runs a long group dealt last (longest first, as in LPT scheduling).
LONG_GROUP_PREFIXES = ("served", "ray", "browser-", "bench-")


def _dealing_rank(item) -> int:
    """0: groups that start servers, browsers or clusters, tests marked slow, benchmarks' quick
    runs; 1: files sharing a module fixture; 2: the rest."""
    groups = [str(mark.args[0]) for mark in item.iter_markers("xdist_group") if mark.args]
    if any(group.startswith(LONG_GROUP_PREFIXES) for group in groups):
        return 0
    if groups:
        return 1
    if item.get_closest_marker("slow") is not None or Path(str(item.fspath)).stem.endswith("_bench"):
        return 0
    return 2


def _long_work_first(items) -> None:
    items.sort(key=_dealing_rank)  # stable: a group's tests, and each file's, keep their order


def pytest_collection_modifyitems(config, items):
    """xdist groups for shared resources, the long work dealt first; under ``make mutation``, a mutant's
    tests cheapest first, so a killed mutant stops early.

    mutmut passes the tests covering a mutant in no particular order and stops at the first
    failure (``-x``); ``bench/mutation.py`` names the module's test files, unit tests first, in
    ``HAI_MUTATION_TEST_ORDER``. Tests run in that file order, each file top to bottom, and the
    PostgreSQL variants (slower: a server round trip per statement) after all the others.
    """
    _group_shared_resources(items)
    _name_groups_in_test_ids(config, items)
    order = os.environ.get("HAI_MUTATION_TEST_ORDER")
    if not order:
        _long_work_first(items)
        return
    rank = {name: index for index, name in enumerate(order.split(","))}

    def cost(item) -> tuple:
        path = item.nodeid.split("::", 1)[0]
        return "postgresql" in item.nodeid, rank.get(path, len(rank)), path, item.location[1] or 0

    items.sort(key=cost)
