"""Result files: a simulate / sweep result or a counter report is read into its dataclass, written back
unchanged, and refused with the name of the missing key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.collab.result_files import (
    SHIPPED_COUNTER_REPORT,
    CounterReportFile,
    ResultFileError,
    SimulationResultFile,
    SweepResultFile,
    load_result_file,
    shipped_counter_report,
)
from engines.collab.simulate import SimulationConfig, simulate
from engines.collab.sweep import SweepConfig, run_sweep
from engines.platform import settings


@pytest.fixture(scope="module")
def sim_data() -> dict:
    result = simulate(SimulationConfig(schedule="abrupt_switch", T=600, n_calibration=100, trace_points=20))
    return json.loads(json.dumps(result.to_dict()))


@pytest.fixture(scope="module")
def sweep_data() -> dict:
    sweep = run_sweep(SweepConfig(base=SimulationConfig(T=300, n_calibration=50, with_fixed=False),
                                  alpha_harm_grid=(0.02, 0.1), alpha_comp_grid=(0.1,)))
    return json.loads(json.dumps(sweep.to_dict()))


def test_simulate_result_reads_typed_fields_and_writes_back_the_same_file(sim_data, tmp_path):
    path = tmp_path / "result.json"
    path.write_text(json.dumps(sim_data, indent=2) + "\n")  # as result_files.write_result_file writes it
    for source in (path, path.read_bytes(), path.read_text(), sim_data):
        result = SimulationResultFile.from_json(source)
        assert result.to_dict() == sim_data and list(result.to_dict()) == list(sim_data)
    assert result.to_json() == path.read_text()
    assert result.online.violation_rate == sim_data["online"]["violation_rate"]
    assert result.online.trace.t == sim_data["online"]["trace"]["t"]
    assert result.online.trace.violation("harm") == sim_data["online"]["trace"]["violation_harm"]
    assert result.fixed.trace.bound("harm") is None  # a fixed threshold has no guarantee
    assert list(result.runs()) == ["online", "fixed", "matched"]
    assert result.extra["engine"] == sim_data["engine"]  # keys the reader does not use are kept
    assert load_result_file(path).kind == "simulate"


def test_sweep_result_reads_and_writes_back(sweep_data):
    result = load_result_file(json.dumps(sweep_data))
    assert isinstance(result, SweepResultFile) and result.kind == "sweep"
    assert result.alpha_harm_grid == [0.02, 0.1] and result.accuracy == sweep_data["accuracy"]
    assert result.to_dict() == sweep_data and result.title == "Sweep: schedule stationary, T = 300"


def test_bad_uploads_name_what_is_wrong(sim_data):
    with pytest.raises(ResultFileError, match="not valid JSON"):
        load_result_file(b"{not json")
    with pytest.raises(ResultFileError, match="JSON object"):
        load_result_file(b"[1, 2]")
    with pytest.raises(ResultFileError, match="needs key 'online'"):
        load_result_file(json.dumps({"hello": 1}))
    broken = {k: v for k, v in sim_data.items() if k != "human_alone_accuracy"}
    with pytest.raises(ResultFileError, match="missing key 'human_alone_accuracy'"):
        load_result_file(json.dumps(broken))
    broken = json.loads(json.dumps(sim_data))
    del broken["online"]["trace"]["q_comp"]
    with pytest.raises(ResultFileError, match=r"'online.trace' is missing key 'q_comp'"):
        SimulationResultFile.from_json(broken)
    broken = json.loads(json.dumps(sim_data))
    del broken["fixed"]["accuracy"]
    with pytest.raises(ResultFileError, match=r"simulate result 'fixed' is missing key 'accuracy'"):
        load_result_file(broken)
    broken = json.loads(json.dumps(sim_data))
    broken["online"]["trace"]["q_harm"].pop()
    with pytest.raises(ResultFileError, match=r"'online.trace' has lists of different lengths"):
        load_result_file(broken)
    with pytest.raises(ResultFileError, match="missing key 'accuracy'"):
        load_result_file({"cells": [], "config": {}})
    with pytest.raises(ResultFileError, match=r"sweep result 'config' is missing key 'alpha_harm_grid'"):
        SweepResultFile.from_json({"cells": [], "config": {}, "accuracy": [], "human_alone_accuracy": 0.5,
                                   "ai_alone_accuracy": 0.5})
    with pytest.raises(ResultFileError, match=r"must be a 1 x 1 list of lists"):
        SweepResultFile.from_json({"cells": [], "accuracy": [[0.5, 0.6]], "human_alone_accuracy": 0.5,
                                   "ai_alone_accuracy": 0.5,
                                   "config": {"alpha_harm_grid": [0.1], "alpha_comp_grid": [0.1]}})


@pytest.mark.parametrize("source", ["[" * 100_000 + "]" * 100_000, ('{"online": ' * 65 + "1" + "}" * 65).encode(),
                                    ('{"a": [' * 40 + "]}" * 40)])
def test_a_result_nested_too_deeply_is_refused_with_the_limit_not_a_recursion_error(source):
    limit = settings.get_settings().max_json_depth
    with pytest.raises(ResultFileError, match=f"the result: the JSON nests deeper than {limit} levels"):
        load_result_file(source)


def test_a_result_that_is_not_utf8_is_refused_clearly():
    with pytest.raises(ResultFileError, match="the result: not valid JSON: not UTF-8 text"):
        load_result_file(b"\xff\xfe{")


def test_counter_report_reads_the_shipped_file_and_names_a_missing_key():
    report = shipped_counter_report()
    shipped = json.loads(SHIPPED_COUNTER_REPORT.read_text())
    assert report.to_dict() == shipped and report.job_id is None and report.plots == []
    assert report.overall["accuracy"] == shipped["metrics"]["overall"]["accuracy"]
    assert shipped_counter_report(Path("/nonexistent/report.json")) is None
    broken = {k: v for k, v in shipped.items() if k != "temperature"}
    with pytest.raises(ResultFileError, match="counter report is missing key 'temperature'"):
        CounterReportFile.from_json(json.dumps(broken))
    broken = json.loads(json.dumps(shipped))
    del broken["metrics"]["hard"]["ece"]
    with pytest.raises(ResultFileError, match=r"'metrics.hard' is missing key 'ece'"):
        CounterReportFile.from_json(broken)
    with pytest.raises(ResultFileError, match="the counter report must be a JSON object"):
        CounterReportFile.from_json("[]")


def test_a_result_built_in_code_writes_only_what_it_has(sim_data):
    result = SimulationResultFile.from_json(sim_data)
    built = SimulationResultFile(config={"T": 1}, human_alone_accuracy=0.5, ai_alone_accuracy=0.6,
                                 online=result.online, fixed=None, shift_points=[])
    data = built.to_dict()
    assert list(data) == ["config", "human_alone_accuracy", "ai_alone_accuracy", "online", "fixed", "shift_points"]
    assert data["online"] == sim_data["online"]
    assert SimulationResultFile.from_json(built.to_json()) == built
