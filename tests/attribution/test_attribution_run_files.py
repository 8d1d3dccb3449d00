"""The attribution area's files read as formats: a file edited by hand, or written by another
version, is refused with the file and the field named, before any page or plot uses it."""

from __future__ import annotations

import copy
import json

import pytest

from engines.attribution.jobs import SHIPPED_EXPERIMENT
from engines.attribution.policies import ReachPolicy, load_policy, save_policy
from engines.attribution.policy_set import shipped_policies
from engines.attribution.run_files import RunFileError, read_experiment_file


@pytest.fixture
def folder(data_dir):
    path = data_dir / "datasets" / "attribution"
    path.mkdir(parents=True)
    return path


@pytest.fixture
def shipped_result() -> dict:
    return json.loads(SHIPPED_EXPERIMENT.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r["policies"][1].update(ood_success=1.4), "policies[1].ood_success: must be at most 1 (got 1.4)"),
    (lambda r: r["policies"][0]["nmr"].update(iss="high"), "policies[0].nmr.iss: must be a number (got 'high')"),
    (lambda r: r["correlations"]["iss"].pop("ood_mse") and r["correlations"]["iss"].update(ood_error={}),
     "correlations.iss.ood_error: the name must be one of 'ood_mse' or 'ood_success' (got 'ood_error')"),
    (lambda r: r.pop("policies"), "policies: is missing"),
])
def test_an_edited_experiment_result_is_refused_naming_the_field(tmp_path, shipped_result, edit, message):
    edited = copy.deepcopy(shipped_result)
    edit(edited)
    path = tmp_path / "experiment.json"
    path.write_text(json.dumps(edited), encoding="utf-8")
    with pytest.raises(RunFileError) as info:
        read_experiment_file(path)
    assert str(info.value).startswith(f"experiment.json: {message}")


def test_the_shipped_result_reads_as_the_plain_dict_it_was_written_as(tmp_path, shipped_result):
    assert read_experiment_file(SHIPPED_EXPERIMENT) == shipped_result


def test_a_policy_whose_sidecar_gives_a_width_in_words_is_refused_naming_it(folder):
    path = save_policy(ReachPolicy(), folder / "mine.pt", {"train": {"rho": 0.5}})
    sidecar = json.loads(path.with_suffix(".json").read_text())
    assert load_policy(path, device="cpu")[1] == sidecar  # kept as written, training's record included
    path.with_suffix(".json").write_text(json.dumps({**sidecar, "width": "wide"}))
    with pytest.raises(RunFileError, match=r"^mine\.pt's sidecar mine\.json: width: must be a whole number \(got 'wide'\)"):
        load_policy(path, device="cpu")


def test_a_policy_set_report_row_without_its_file_is_refused_naming_the_row(folder):
    save_policy(ReachPolicy(), folder / "a.pt", {})
    (folder / "report.json").write_text(json.dumps({"policies": [{"rho": 1.0, "seed": 0, "file": "a.pt"},
                                                                 {"rho": 0.5, "seed": 1}]}))
    with pytest.raises(RunFileError, match=r"^report\.json: policies\[1\]\.file: is missing"):
        shipped_policies(folder)
