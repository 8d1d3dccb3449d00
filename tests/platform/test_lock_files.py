"""The lock files stay in step with the requirement files they are generated from (`make lock`).

``requirements.txt`` and ``requirements-dev.txt`` are the edited inputs; ``requirements.lock`` and
``requirements-dev.lock`` are what `make run` and `make test` install, with ``--require-hashes``. A
requirement edited without `make lock` afterwards, a hand-edited lock line without a hash, or a torch
other than the CPU build 2.13.0 fails here. Files only: no network, no pip.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
PAIRS = {"requirements.txt": "requirements.lock", "requirements-dev.txt": "requirements-dev.lock"}
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)$")


def direct_requirements(name: str) -> list[Requirement]:
    """The requirements a requirement file names, those of the files it includes (``-r``) first."""
    found: list[Requirement] = []
    for raw in (ROOT / name).read_text(encoding="utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            found += direct_requirements(line.split(maxsplit=1)[1])
        else:
            found.append(Requirement(line))
    return found


def lock_entries(name: str) -> list[str]:
    """The logical lines of a lock file (backslash continuations joined), comments and blank lines left out."""
    text = re.sub(r"\\\n", " ", (ROOT / name).read_text(encoding="utf-8"))
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def locked(name: str) -> dict[str, Version]:
    """Package (canonical name) -> pinned version of a lock file."""
    pins: dict[str, Version] = {}
    for entry in lock_entries(name):
        if entry.startswith("-"):
            continue  # an option line (--find-links and the like), not a package
        match = PIN.match(entry.split()[0])
        assert match, f"{name}: not an exact pin: {entry[:100]}"
        pins[canonicalize_name(match.group(1))] = Version(match.group(2))
    return pins


@pytest.mark.parametrize(("source", "lock"), PAIRS.items())
def test_every_direct_requirement_is_locked_within_its_range(source, lock):
    pins = locked(lock)
    problems = []
    for requirement in direct_requirements(source):
        version = pins.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement} is not in {lock}")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement} but {lock} pins {version}")
    assert not problems, f"run `make lock` after editing {source}: " + "; ".join(problems)


@pytest.mark.parametrize("lock", PAIRS.values())
def test_every_locked_package_is_pinned_with_a_hash(lock):
    entries = [entry for entry in lock_entries(lock) if not entry.startswith("-")]
    assert len(entries) > 20, f"{lock} looks empty"
    unhashed = [entry.split()[0] for entry in entries if not HASH.search(entry)]
    assert not unhashed, f"{lock}: pinned without a --hash=sha256: {unhashed}"


@pytest.mark.parametrize("lock", PAIRS.values())
def test_torch_is_the_cpu_build_of_2_13_0(lock):
    pins = locked(lock)
    assert pins["torch"].public == "2.13.0", f"{lock} pins torch {pins['torch']}, not 2.13.0 (the CPU wheel on disk)"
    cuda = sorted(name for name in pins if name.startswith(("nvidia-", "triton", "cuda-")))
    assert not cuda, f"{lock} locks CUDA packages (a GPU build of torch): {cuda}"


def test_the_dev_lock_installs_the_runtime_lock_unchanged():
    """`make test` installs requirements-dev.lock on top of requirements.lock: same versions, nothing downgraded."""
    runtime, dev = locked("requirements.lock"), locked("requirements-dev.lock")
    differ = {name: (str(version), str(dev.get(name))) for name, version in runtime.items() if dev.get(name) != version}
    assert not differ, f"requirements-dev.lock disagrees with requirements.lock (run `make lock`): {differ}"


def test_make_installs_only_the_locks_with_hashes_required():
    installs = [line.strip() for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
                if re.search(r"-m pip install\b", line)]
    assert installs, "the Makefile installs nothing with pip any more"
    for line in installs:
        assert "--require-hashes" in line and re.search(r"-r requirements(-dev)?\.lock\b", line), line
