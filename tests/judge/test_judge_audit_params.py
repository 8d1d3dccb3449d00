"""The judge's and the audit's settings are declared once (``JudgeRunConfig``, ``AuditConfig``, ``ReliableBenchConfig``,
``StressTestConfig``): the commands and the jobs offer the same bounds, and seed the subsets alike."""

from __future__ import annotations

import pytest

from engines.judge.__main__ import main
from engines.judge.jobs import AUDIT, DEMO_ITEMS, JudgeAuditParams
from engines.platform import jobqueue
from tests.helpers import run_main


def test_the_job_and_the_command_line_refuse_the_same_bootstrap_count(sqlite_db, tmp_path, capsys):
    assert jobqueue.get_job(jobqueue.submit_job(AUDIT, {"bootstrap": 10_000})).params["bootstrap"] == 10_000
    with pytest.raises(jobqueue.JobError, match="bootstrap"):
        jobqueue.submit_job(AUDIT, {"bootstrap": 10_001})
    out = tmp_path / "audit.json"
    ran = run_main(main, ["audit", "--items", str(DEMO_ITEMS), "--bootstrap", "10001", "--out", str(out)], capsys)
    assert ran.returncode == 2 and "bootstrap must be from 0 to 10000, got 10001" in ran.stderr
    assert not out.exists()


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--target", "1.5", "target must be from 0 to 1, got 1.5"),
    ("--min-items", "1", "min_items must be at least 2, got 1"),
    ("--max-cell-std", "-0.1", "max_cell_std must be at least 0, got -0.1"),
    ("--max-correct", "-1", "max_correct must be at least 0, got -1"),
])
def test_a_subset_setting_out_of_bounds_is_refused_by_name(capsys, option, value, message):
    ran = run_main(main, ["audit", "--items", str(DEMO_ITEMS), "--subsets", option, value], capsys)
    assert ran.returncode == 2 and message in ran.stderr


def test_a_job_seeds_the_subsets_class_balancing_with_its_seed_as_the_command_line_does():
    config = JudgeAuditParams(seed=3, subsets=True).audit_config()
    assert (config.seed, config.reliable_bench.seed, config.stress_test.seed) == (3, 3, 3)
    assert config.subsets and config.human_rule == "majority" and config.bootstrap == 0


def test_the_judge_command_and_the_run_job_share_the_judge_and_its_batch_bounds(sqlite_db, tmp_path, capsys):
    from engines.judge.jobs import RUN

    assert jobqueue.get_job(jobqueue.submit_job(RUN, {"batch_size": 4096})).params["batch_size"] == 4096
    with pytest.raises(jobqueue.JobError, match="batch_size"):
        jobqueue.submit_job(RUN, {"batch_size": 4097})
    with pytest.raises(jobqueue.JobError, match="unknown judge 'coin-flip'"):
        jobqueue.submit_job(RUN, {"judge": "coin-flip"})
    out = tmp_path / "verdicts.csv"
    ran = run_main(main, ["judge", "--items", str(DEMO_ITEMS), "--judge", "gcg-strings", "--batch-size", "4097",
                          "--out", str(out), "--no-progress"], capsys)
    assert ran.returncode == 2 and "batch_size must be from 1 to 4096, got 4097" in ran.stderr
    assert not out.exists()
    unnamed = run_main(main, ["judge", "--items", str(DEMO_ITEMS), "--out", str(out)], capsys)
    assert unnamed.returncode == 2 and "--judge" in unnamed.stderr  # the command still asks which judge
