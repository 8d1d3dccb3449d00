"""Every job kind's quick run leaves the repository as it found it: runs write only under the data
folder (the job's result folder), and ``assets/`` and the code are read-only at run time, so that an
export's recorded code version describes the code that made it."""

from __future__ import annotations

import shutil
import subprocess
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
    for kind, params in runs.items():
        job_id = jobqueue.submit_job(kind, params)
        assert jobqueue.run_job(job_id) == "succeeded", (kind, jobqueue.get_job(job_id).error)
        assert _tree_state() == before, f"{kind} changed the working tree"
