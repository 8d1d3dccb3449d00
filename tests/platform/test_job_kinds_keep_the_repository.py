"""Every job kind's quick run leaves the repository as it found it and writes only where the path
policy lets it (``engines/platform/files.py``): its own result folder under the data folder, or a
temporary folder; ``assets/`` and the code are read-only at run time, so that an export's recorded
code version describes the code that made it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engines.hoi.offline.demo import DEMO_DIR
from engines.platform import demo, jobqueue, study_admin
from engines.platform.settings import get_settings
from engines.video import library

REPO = Path(__file__).resolve().parents[2]

# The smallest parameters each kind accepts for a run of a few seconds.
QUICK_RUNS = {
    "platform.countdown": {"seconds": 0.0},
    "platform.export_study": {},  # the slug of a demo study, made in the test
    "attribution.train": {"rho": 1.0, "seed": 1, "frames": 100, "epochs": 1, "episodes": 5},
    "attribution.experiment": {"rhos": [0.5, 1.0], "seeds": [0, 1], "n_masks": 10, "nmr_frames": 1, "episodes": 5,
                               "methods": ["occlusion"], "policies": "shipped"},  # shipped: nothing trained
    "collab.simulate": {"T": 60, "n_calibration": 20, "with_fixed": False, "with_matched": False},
    "collab.sweep": {"T": 60, "n_calibration": 20, "alpha_harm_grid": [0.1], "alpha_comp_grid": [0.1]},
    "collab.train_counter": {"quick": True, "train_size": 64, "epochs": 1, "threads": 1},
    "hoi.evaluate": {"benchmark": "datasets/hoi/demo", "method": "offline-faithful", "limit": 1},
    "hoi.scpe": {"benchmark": "datasets/hoi/demo", "limit": 1, "method": "scpe-quick", "evaluate": False},
    "judge.run": {"items": "demo", "judge": "gcg-strings", "use_cache": False},
    "judge.audit": {},
    "video.sweep": {"budgets": [1], "limit": 1},
}


def _video_question() -> dict:
    video = library.demo_videos()[0]
    return {"video": str(video), "question": "What colour is the shape?", "options": ["red", "green", "blue"],
            "max_steps": 2, "max_frames": 8}


def _tree_state() -> str:
    """Tracked changes and untracked files not ignored, as git sees them."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, check=True,
                          capture_output=True, text=True).stdout


_WRITES: list[str] | None = None  # while recording: every path opened for writing or made, in this process
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _record_writes(event: str, args: tuple) -> None:
    """An audit hook (it stays for the process; it records only while ``_WRITES`` is a list)."""
    if _WRITES is None:
        return
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path, mode, flags = args
        if (mode is not None and any(c in mode for c in "wax+")) or (mode is None and flags & _WRITE_FLAGS):
            _WRITES.append(os.fsdecode(path))
    elif event in ("os.rename", "os.replace"):
        _WRITES.append(os.fsdecode(args[1]))
    elif event == "os.mkdir":
        _WRITES.append(os.fsdecode(args[0]))


# Libraries' own caches in the user's home (matplotlib makes its folders there on import), and /dev/null.
_LIBRARY_PLACES = (Path.home() / ".cache", Path.home() / ".config", Path("/dev/null"))


def _strays(paths: list[str], job_folder: Path) -> list[str]:
    """The paths (resolved) a job may not write: in the data folder, anywhere but its own result
    folder; elsewhere, anywhere but the temporary folder and the libraries' own places."""
    data, job, temporary = (p.resolve() for p in (get_settings().data_dir, job_folder, Path(tempfile.gettempdir())))
    strays = set()
    for written in {Path(p).resolve() for p in paths}:
        if "__pycache__" in written.parts:
            continue  # Python's own bytecode cache of a module imported for the first time (site-packages too)
        if written.is_relative_to(data):  # the result folder, or making the folders that lead to it
            allowed = written.is_relative_to(job) or job.is_relative_to(written)
        else:
            allowed = written.is_relative_to(temporary) or any(written.is_relative_to(p) for p in _LIBRARY_PLACES)
        if not allowed:
            strays.add(str(written))
    return sorted(strays)


def test_every_kind_has_a_quick_run_here():
    shipped = {name for name in jobqueue.discover_job_kinds() if not name.startswith("tests.")}  # not a test's own
    assert set(QUICK_RUNS) | {"video.ask"} == shipped


@pytest.mark.slow
def test_each_kind_s_quick_run_succeeds_and_leaves_the_working_tree_unchanged(sqlite_db):
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    demo.load_demo_data()
    shutil.copytree(DEMO_DIR, get_settings().data_dir / "datasets" / "hoi" / "demo")  # a registered data set
    study = study_admin.list_studies()[0].slug
    before = _tree_state()
    runs = {**QUICK_RUNS, "platform.export_study": {"slug": study}, "video.ask": _video_question()}
    global _WRITES
    sys.addaudithook(_record_writes)
    outside = {}
    for kind, params in runs.items():
        job_id = jobqueue.submit_job(kind, params)
        _WRITES = []
        try:
            assert jobqueue.run_job(job_id) == "succeeded", (kind, jobqueue.get_job(job_id).error)
        finally:
            written, _WRITES = _WRITES, None
        assert _tree_state() == before, f"{kind} changed the working tree"
        strays = _strays(written, jobqueue.job_dir(job_id))
        if strays:
            outside[kind] = strays
    assert outside == {}, f"written outside the job's result folder and a temporary folder: {outside}"
