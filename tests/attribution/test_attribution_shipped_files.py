"""The shipped attribution files name no path of the machine that made them, and read as they are."""

from __future__ import annotations

from engines.attribution.jobs import SHIPPED_EXPERIMENT, read_experiment
from engines.attribution.paths import policy_folder
from engines.attribution.policies import load_policy
from engines.attribution.policy_set import SHIPPED_DIR, shipped_policies
from engines.platform.settings import REPO_ROOT
from tests.hoi.test_hoi_shipped_files import absolute_paths, shipped_text_files

SHIPPED = REPO_ROOT / "assets" / "attribution"


def test_no_shipped_file_names_a_path_of_a_machine():
    files = shipped_text_files(SHIPPED)
    assert SHIPPED_EXPERIMENT in files and SHIPPED_DIR / "report.json" in files and len(files) > 15
    found = {str(p.relative_to(SHIPPED)): bad for p in files if (bad := absolute_paths(p))}
    assert found == {}


def test_the_shipped_experiment_names_its_policies_by_a_name_that_resolves():
    experiment = read_experiment(None)
    name = experiment["config"]["policy_dir"]
    assert name == "shipped/attribution/policies"
    folder = policy_folder(REPO_ROOT / "assets" / name.removeprefix("shipped/"))
    assert folder == SHIPPED_DIR.resolve()
    rows = shipped_policies(folder)
    assert {(p["rho"], p["seed"]) for p in experiment["policies"]} == {(r["rho"], r["seed"]) for r in rows}
    model, meta = load_policy(rows[0]["path"])
    assert meta["train"]["rho"] == rows[0]["rho"]
