"""Simulation: fast path == reference path, the paper's two claims at small scale, AI sources, CLI, bench."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engines.collab import cli
from engines.collab import simulate as sim
from engines.collab import sweep as sweep_mod
from engines.collab.ai_sources import PrecomputedAI, SyntheticAI
from engines.collab.controller import fixed_baseline
from engines.collab.humans import SCHEDULES, HumanParams, ScheduleConfig, make_schedule
from engines.collab.rules import Prefix, register_rule, unregister_rule
from engines.collab.simulate import SimulationConfig, prepare, run_controller, simulate

REPO_ROOT = Path(__file__).resolve().parents[2]
SHIFTING = ("drift", "abrupt_switch", "fatigue", "learning", "population_change", "adversarial")
RULE_PAIRS = [
    ("human_holds", {}, "human_lacks", {}),
    ("human_top_answer", {}, "supply_when_low_confidence", {"threshold": 0.6}),
    ("held_for_rounds", {"rounds": 2}, "human_lacks", {}),
    ("human_lacks", {}, "human_holds", {}),  # roles swapped: any rule may fill either slot
]


def assert_same_run(a, b):
    for name, values in a.arrays().items():
        np.testing.assert_array_equal(values, b.arrays()[name], err_msg=name)
    assert a.final_state == b.final_state


# Fast path == reference path

@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_fast_path_is_identical_to_reference_for_every_schedule(schedule):
    cfg = SimulationConfig(schedule=schedule, T=150, n_calibration=80, rounds=3, seed=7)
    p = prepare(cfg)
    for state in (p.state, fixed_baseline(p.state)):
        fast = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, cfg.rounds, "fast", chunks=3)
        ref = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, cfg.rounds, "reference")
        assert_same_run(fast, ref)


@pytest.mark.parametrize("protect, protect_params, supply, supply_params", RULE_PAIRS)
@pytest.mark.parametrize("conditional", [False, True])
def test_fast_path_is_identical_to_reference_for_every_builtin_rule(protect, protect_params, supply, supply_params,
                                                                    conditional):
    cfg = SimulationConfig(schedule="adversarial", T=120, n_calibration=80, rounds=4, seed=3, protect_rule=protect,
                           protect_params=protect_params, supply_rule=supply, supply_params=supply_params,
                           conditional=conditional, human="overtrusting")
    p = prepare(cfg)
    fast = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, p.state, cfg.rounds, "fast")
    ref = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, p.state, cfg.rounds, "reference")
    assert_same_run(fast, ref)
    assert fast.err_harm.any() or fast.err_comp.any()  # the adversary makes the comparison non-trivial


def test_simulate_is_seeded_and_engine_independent():
    a = simulate(SimulationConfig(T=300, n_calibration=100, engine="fast"))
    b = simulate(SimulationConfig(T=300, n_calibration=100, engine="reference"))
    c = simulate(SimulationConfig(T=300, n_calibration=100, seed=1))
    assert a.engine == "fast" and b.engine == "reference"
    for run in ("online", "fixed"):
        assert_same_run(a.runs[run], b.runs[run])
    assert not np.array_equal(a.runs["online"].answer_final, c.runs["online"].answer_final)


def test_custom_rules_run_on_the_reference_path_only():
    @register_rule("test_sim_protect_answer_and_neighbours", role="protect")
    def answer_and_neighbours(prefix: Prefix, params) -> np.ndarray:
        """Protect the current answer and the counts next to it."""
        return np.abs(np.arange(prefix.n_labels) - prefix.answers[-1]) <= 1

    try:
        cfg = SimulationConfig(T=200, n_calibration=100, protect_rule="test_sim_protect_answer_and_neighbours")
        assert cfg.resolved_engine() == "reference"
        result = simulate(cfg)
        assert result.engine == "reference" and all(result.online.within_bound.values())
        with pytest.raises(ValueError, match="reference path only"):
            simulate(dataclasses.replace(cfg, engine="fast"))
    finally:
        unregister_rule("test_sim_protect_answer_and_neighbours")


# Claim (1): online holds both rates within target + bound; the fixed baseline drifts under shifts

@pytest.fixture(scope="module")
def reproduction() -> dict:
    return {name: simulate(SimulationConfig(schedule=name, T=20_000, seed=0)) for name in sorted(SCHEDULES)}


@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
def test_online_controller_holds_both_rates_within_target_plus_bound(reproduction, schedule):
    online = reproduction[schedule].online
    for name in ("harm", "comp"):
        assert online.within_bound[name]
        assert online.violation_rate[name] <= online.target[name] + online.bound[name]
        assert online.max_excess[name] <= 1e-12  # at every t, not only at the end
        assert online.bound[name] < 0.002  # (B + η(1−α) − q1)/(ηT) at T = 20k, η = 0.05


@pytest.mark.parametrize("schedule", SHIFTING)
def test_fixed_baseline_ends_farther_from_target_under_shifts(reproduction, schedule):
    result = reproduction[schedule]

    def worst(summary):
        return max(abs(summary.violation_rate[k] - summary.target[k]) for k in ("harm", "comp"))

    assert worst(result.fixed) > 5 * worst(result.online)


# The fixed baseline's drift under shifts, against the noise a fixed threshold shows without one. Several
# seeds and a larger pilot, so that the threshold is set by the noise, not by one seed's draw.

DRIFT_SEEDS = range(5)
DRIFT_T, DRIFT_N_CAL = 20_000, 5_000


@pytest.fixture(scope="module")
def fixed_deviations() -> dict:
    """Per schedule and constraint, the fixed baseline's final rate − target on each seed, and the target."""
    out = {}
    for name in sorted(SCHEDULES):
        runs = [simulate(SimulationConfig(schedule=name, T=DRIFT_T, n_calibration=DRIFT_N_CAL, seed=seed,
                                          with_matched=False)).fixed for seed in DRIFT_SEEDS]
        out[name] = {k: (np.array([r.violation_rate[k] - r.target[k] for r in runs]), runs[0].target[k])
                     for k in ("harm", "comp")}
    return out


def noise_se(alpha: float) -> float:
    """Standard error of the seeds' mean of (final rate − α) for a fixed threshold when nothing shifts.

    On one seed, a split-conformal threshold fitted on n points misses a new case with probability
    α ± sqrt(α(1−α)/n) (the spread of its coverage), and its rate over T cases adds the binomial
    sqrt(α(1−α)/T); the seeds are independent, so the mean's SE is sqrt(α(1−α)(1/n + 1/T)/S):
    0.0015 for α = 0.05, n = 5,000, T = 20,000, S = 5.
    """
    return math.sqrt(alpha * (1 - alpha) * (1 / DRIFT_N_CAL + 1 / DRIFT_T) / len(DRIFT_SEEDS))


@pytest.mark.parametrize("schedule", SHIFTING)
def test_fixed_baseline_drifts_beyond_three_standard_errors_under_shifts(fixed_deviations, schedule):
    z = max(abs(deviations.mean()) / noise_se(alpha) for deviations, alpha in fixed_deviations[schedule].values())
    assert z > 3, (schedule, z)


def test_fixed_baseline_stays_within_three_standard_errors_without_shift(fixed_deviations):
    """The control for the test above: the same noise model holds the unshifted stream's deviation."""
    for deviations, alpha in fixed_deviations["stationary"].values():
        assert abs(deviations.mean()) <= 3 * noise_se(alpha)


def test_fixed_baseline_is_near_target_without_shift(reproduction):
    fixed = reproduction["stationary"].fixed
    for name in ("harm", "comp"):
        assert abs(fixed.violation_rate[name] - fixed.target[name]) < 0.015  # calibration noise only


def test_adversary_breaks_the_fixed_baseline_but_not_the_online_controller(reproduction):
    result = reproduction["adversarial"]
    assert result.fixed.violation_rate["comp"] > result.fixed.target["comp"] + 0.02
    assert result.online.violation_rate["comp"] <= result.online.target["comp"] + result.online.bound["comp"]


def test_collaboration_beats_either_party_alone(reproduction):
    result = reproduction["stationary"]
    assert result.online.accuracy > max(result.human_alone_accuracy, result.ai_alone_accuracy)


# Claim (2): accuracy moves monotonically with each target

def test_looser_harm_control_raises_accuracy_on_a_small_grid():
    acc = [simulate(SimulationConfig(alpha_harm=a, T=20_000, with_fixed=False)).online.accuracy
           for a in (0.01, 0.02, 0.05)]
    assert acc[0] < acc[1] < acc[2]


def test_tighter_complementarity_raises_accuracy():
    acc = [simulate(SimulationConfig(alpha_comp=a, T=20_000, with_fixed=False)).online.accuracy
           for a in (0.02, 0.05, 0.1, 0.15)]
    assert acc[0] > acc[1] > acc[2] > acc[3]


def test_sweep_reports_accuracy_per_cell_and_trends():
    reports = []
    result = sweep_mod.run_sweep(sweep_mod.SweepConfig(
        base=SimulationConfig(T=20_000, with_fixed=False), alpha_harm_grid=(0.01, 0.02, 0.05),
        alpha_comp_grid=(0.02, 0.15)), progress=lambda done, total, message="": reports.append((done, total, message)))
    assert [(done, total) for done, total, _ in reports] == [(n, 6) for n in range(1, 7)]
    assert all(message.startswith(f"{done}/6 cells done") for done, _, message in reports)
    data = json.loads(json.dumps(result.to_dict()))
    assert len(data["cells"]) == 6 and np.array(data["accuracy"]).shape == (3, 2)
    assert data["trends"]["along_alpha_harm"] == {"0.02": "increasing", "0.15": "increasing"}
    assert set(data["trends"]["along_alpha_comp"].values()) == {"decreasing"}
    with pytest.raises(ValueError, match="strictly increasing"):
        sweep_mod.SweepConfig(alpha_harm_grid=(0.1, 0.05))


# Humans, schedules, AI sources, configuration

def test_schedules_shift_what_they_say(reproduction):
    rng = np.random.default_rng(0)
    base = HumanParams()
    T = 1000
    tracks = {name: make_schedule(ScheduleConfig(name), T, base, rng) for name in SCHEDULES}
    p = tracks["stationary"].params
    assert np.all(p.noise_hard == base.noise_hard) and not p.adversarial.any()
    assert tracks["drift"].hardness[-1] > tracks["drift"].hardness[0] == 0.0
    assert tracks["abrupt_switch"].params.belief_ratio[499] == 0.5 and tracks["abrupt_switch"].params.belief_ratio[500] == 1.0
    assert tracks["abrupt_switch"].shift_points == [500]
    assert tracks["fatigue"].params.attention[-1] < tracks["fatigue"].params.attention[0]
    assert tracks["learning"].params.noise_hard[-1] < tracks["learning"].params.noise_hard[0]
    assert tracks["population_change"].shift_points == [500]
    adv = tracks["adversarial"].params.adversarial
    assert not adv[:500].any() and adv[500:].all()
    assert reproduction["drift"].ai_alone_accuracy < reproduction["stationary"].ai_alone_accuracy  # harder cases
    with pytest.raises(ValueError, match="unknown schedule"):
        ScheduleConfig("sudden")


def test_precomputed_ai_scores(tmp_path):
    path = tmp_path / "counter_scores.npz"
    cases = SyntheticAI().draw(500, np.random.default_rng(0))
    np.savez(path, probs=cases.probs, labels=cases.labels, difficulty=cases.difficulty)
    result = simulate(SimulationConfig(ai="cnn", ai_scores=str(path), T=500, n_calibration=100))
    assert result.ai_alone_accuracy == pytest.approx(0.8, abs=0.1)
    missing = tmp_path / "nope.npz"
    with pytest.raises(ValueError, match=f"AI scores file not found: {missing}"):
        simulate(SimulationConfig(ai="cnn", ai_scores=str(missing), T=10))
    np.savez(path, probs=cases.probs[:, :5], labels=cases.labels, difficulty=cases.difficulty)
    with pytest.raises(ValueError, match=r"expected probs \(n, 10\)"):
        PrecomputedAI(path)


@pytest.mark.parametrize("kwargs, message", [
    (dict(task="chemistry"), r"task 'chemistry' is not available \(known: shapes, medical\)"),
    (dict(task="medical", n_labels=10), "the medical task has 12 labels"),
    (dict(task="medical", ai="cnn"), "medical task's AI is the Bayes posterior"),
    (dict(ddxplus_dir="/nowhere"), "ddxplus_dir needs task 'medical'"),
    (dict(human="llm", schedule="drift"), "the LLM human runs 'stationary'"),
    (dict(human="robot"), "unknown human model 'robot'"),
    (dict(schedule="sudden"), "unknown schedule 'sudden'"),
    (dict(alpha_harm=1.5), r"alpha_harm must be in \(0, 1\)"),
    (dict(rounds=0), "rounds must be >= 1"),
    (dict(ai="gpt"), "ai must be 'synthetic' or 'cnn'"),
    (dict(protect_rule="nope"), "unknown rule 'nope'"),
    (dict(supply_rule="held_for_rounds", supply_params={"rounds": 0}), "rounds must be an integer >= 1"),
])
def test_config_validation(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SimulationConfig(**kwargs)


def test_result_is_json_ready_with_running_traces():
    result = simulate(SimulationConfig(T=1000, n_calibration=100, trace_points=50))
    data = json.loads(json.dumps(result.to_dict(), allow_nan=False))
    trace = data["online"]["trace"]
    assert trace["t"][0] == 1 and trace["t"][-1] == 1000 and len(trace["t"]) == 50
    assert len(trace["violation_harm"]) == len(trace["bound_comp"]) == len(trace["q_harm"]) == 50
    assert data["fixed"]["bound"] == {"harm": None, "comp": None}
    assert data["online"]["violation_rate"]["harm"] == trace["violation_harm"][-1]
    assert 1.0 <= data["online"]["mean_rounds"] <= 3.0
    assert 1.0 <= data["online"]["mean_stabilise_round"] <= 4.0
    assert "within" in data["summary"]


# Command line

def _run_cli(*argv: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ}
    return subprocess.run([sys.executable, "-m", "engines.collab", *argv], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_cli_simulate_quick_json(tmp_path):
    out = tmp_path / "run.json"
    proc = _run_cli("simulate", "--quick", "--json", "--schedule", "drift", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == result
    assert result["config"]["T"] == sim.QUICK_T and result["config"]["schedule"] == "drift"
    assert set(result["collab_accuracy"]) == {"online", "fixed", "matched"}
    assert result["online"]["within_bound"] == {"harm": True, "comp": True}


def _main_in_process(capsys, *argv: str) -> tuple[int, str, str]:
    """``python -m engines.collab`` through its ``main(argv)`` in this process (``test_cli_simulate_quick_json``
    and ``test_cli_knows_the_rules_a_study_registers`` run it as a subprocess): exit status, stdout, stderr."""
    from engines.collab.__main__ import main

    capsys.readouterr()
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_sweep_quick_json(capsys):
    code, out, err = _main_in_process(capsys, "--json", "sweep", "--quick")
    assert code == 0, err[-3000:]
    result = json.loads(out)
    assert np.array(result["accuracy"]).shape == (len(sweep_mod.QUICK_HARM_GRID), len(sweep_mod.QUICK_COMP_GRID))


def test_cli_errors_exit_2_with_the_message(capsys):
    code, _, err = _main_in_process(capsys, "simulate", "--quick", "--task", "chemistry")
    assert code == 2
    assert "task 'chemistry' is not available (known: shapes, medical)" in err


def test_run_functions_take_parsed_arguments(tmp_path):
    parser = argparse.ArgumentParser()
    cli.add_simulate_arguments(parser)
    args = parser.parse_args(["--quick", "--T", "300", "--protect-rule", "held_for_rounds",
                              "--protect-params", "rounds=2", "--out", str(tmp_path / "a.json")])
    result = cli.run_simulate(args)
    assert result["config"]["protect_params"] == {"rounds": 2} and result["config"]["T"] == 300
    assert "interactions/s" in result["summary"]



def test_cli_knows_the_rules_a_study_registers(tmp_path):
    # studies/collab_shapes registers near_count when imported: the CLI discovers it as a job worker does.
    proc = _run_cli("--json", "simulate", "--quick", "--T", "50", "--n-calibration", "20", "--protect-rule",
                    "near_count", "--protect-params", "width=1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["config"]["protect_rule"] == "near_count" and result["config"]["protect_params"] == {"width": 1}
    assert result["engine"] == "reference"  # a custom rule runs on the reference path


def test_cli_options_come_from_the_config_fields():
    parser = argparse.ArgumentParser()
    cli.add_simulate_arguments(parser)
    dests = {a.dest: a for a in parser._actions}
    for f in dataclasses.fields(SimulationConfig):
        assert (f.name in dests) == (f.metadata.get("cli", True) is not False), f.name
    for flag in ("--T", "--n-calibration", "--no-fixed", "--no-matched", "--ai-scores", "--ddxplus-dir",
                 "--case-order", "--overlap", "--engine", "--quick", "--llm-base-url", "--llm-transcripts",
                 "--shape-detail"):
        assert flag in parser._option_string_actions, flag
    assert "default 10000; --quick: 2000; --human llm: 200, --quick 20" in dests["T"].help
    assert dests["schedule"].choices == sorted(sim.SCHEDULES) and "llm" in dests["human"].choices
    args = parser.parse_args(["--no-fixed", "--protect-params", "rounds=2", "--llm-local", "/m"])
    assert args.with_fixed is False and args.with_matched is True and args.protect_params == {"rounds": 2}
    assert args.llm_local == "/m"
    sweep_parser = argparse.ArgumentParser()
    cli.add_sweep_arguments(sweep_parser)
    assert "--alpha-harm" not in sweep_parser._option_string_actions
    assert sweep_parser.parse_args(["--alpha-harm-grid", "0.01,0.02"]).alpha_harm_grid == (0.01, 0.02)
    with pytest.raises(SystemExit):
        sweep_parser.parse_args(["--alpha-harm-grid", "0.01,x"])
    with pytest.raises(ValueError, match="expected comma-separated numbers"):
        sweep_mod.parse_grid("0.01, x")


# The reference loop: any collaborator, scores per round

def test_parametric_and_llm_collaborators_share_one_protocol():
    from engines.collab.humans import AdversarialHuman, ParametricHuman
    from engines.collab.llm_human import LLMCollaborator, TaskView
    from engines.collab.loop_reference import Collaborator

    person = ParametricHuman(HumanParams(), np.ones(10), 1.0, np.zeros(3), np.ones(3))
    adversary = AdversarialHuman(3, np.linspace(0, 1, 10), 0.5, 0.5, 3)
    llm = LLMCollaborator(backend=None, views=TaskView("d", "q", ("a", "b")))
    assert all(isinstance(c, Collaborator) for c in (person, adversary, llm))


class _Reader:
    """A collaborator that holds label 0 and never stops, recording the sets it is shown."""

    def __init__(self, n_labels: int):
        self.n_labels, self.shown = n_labels, []

    def answer(self) -> int:
        return 0

    def belief_set(self) -> np.ndarray:
        return np.arange(self.n_labels) == 0

    def confidence(self) -> float:
        return 0.5

    def see(self, shown_set: np.ndarray, ai_top: int) -> bool:
        self.shown.append((shown_set.copy(), ai_top))
        return False


def test_reference_loop_takes_the_ai_scores_of_each_round():
    from engines.collab.controller import ControllerConfig, ControllerState
    from engines.collab.loop_reference import run_reference
    from engines.collab.rules import make_rule

    # Round k's scores make label k the only one under both thresholds (0.5): the sets follow the rounds.
    scores = np.ones((2, 3, 4))
    for k in range(3):
        scores[:, k, k + 1] = 0.0
    readers, finished = [], []

    def reader(t, thresholds):
        readers.append(_Reader(4))
        return readers[-1]

    state = ControllerState(config=ControllerConfig(), q_harm=0.5, q_comp=0.5, q1_harm=0.5, q1_comp=0.5)
    trace = run_reference(np.array([2, 3]), lambda t, k: scores[t, k - 1], reader, make_rule("human_holds"),
                          make_rule("human_lacks"), state, 3, on_interaction=finished.append)
    for person in readers:
        assert [np.flatnonzero(s).tolist() for s, _ in person.shown] == [[1], [2], [3]]
        assert [top for _, top in person.shown] == [1, 2, 3]
    assert [f.errors.sets.sum(axis=1).tolist() for f in finished] == [[1, 1, 1], [1, 1, 1]]
    assert trace.covered.tolist() == [1, 1] and trace.rounds.tolist() == [3, 3]
    assert not trace.err_harm.any() and trace.err_comp.tolist() == [True, True]  # truth missed in two rounds
    assert [f.answers for f in finished] == [[0, 0, 0, 0]] * 2


# Benchmark script

def test_bench_quick_prints_one_json_line(tmp_path):
    out = tmp_path / "collab.json"
    env = {**os.environ}
    proc = subprocess.run([sys.executable, str(REPO_ROOT / "bench" / "collab.py"), "--quick", "--out", str(out)],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert json.loads(out.read_text()) == result
    assert result["benchmark"] == "collab" and result["goal"]["interactions_per_s"] == 100_000
    assert result["headline"]["interactions_per_s"] > 0 and result["headline"]["ratio_to_goal"] > 0


# Overlapping participants: delayed updates

@pytest.mark.parametrize("overlap", [2, 7])
def test_fast_path_is_identical_to_reference_with_overlapping_participants(overlap):
    cfg = SimulationConfig(schedule="adversarial", T=200, n_calibration=80, rounds=3, seed=5, overlap=overlap)
    p = prepare(cfg)
    fast = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, p.state, cfg.rounds, "fast", chunks=4,
                          overlap=overlap)
    ref = run_controller(p.cases, p.draws, p.params, p.protect, p.supply, p.state, cfg.rounds, "reference",
                         overlap=overlap)
    assert_same_run(fast, ref)
    # Interaction t used the live thresholds of overlap - 1 updates before its own.
    live_h = np.concatenate([[p.state.q_harm], p.state.q_harm + np.cumsum(
        p.state.step_harm * (fast.err_harm.astype(float) - cfg.alpha_harm))])
    for t in (0, overlap - 1, overlap, 150):
        assert fast.q_harm[t] == pytest.approx(live_h[max(t - overlap + 1, 0)])


def test_overlap_one_is_the_sequential_run_and_the_bound_widens_with_overlap():
    base = SimulationConfig(schedule="drift", T=3_000, n_calibration=200, seed=1)
    one = simulate(base)
    same = simulate(dataclasses.replace(base, overlap=1))
    assert one.online.violation_rate == same.online.violation_rate
    wide = simulate(dataclasses.replace(base, overlap=50))
    assert wide.online.bound["harm"] > one.online.bound["harm"]
    for name in ("harm", "comp"):  # the delay-aware guarantee holds at every checkpoint
        assert wide.online.within_bound[name] and wide.online.max_excess[name] <= 1e-12
    assert "overlap=50" in wide.summary()
    with pytest.raises(ValueError, match="overlap must be >= 1"):
        SimulationConfig(overlap=0)


# The AI-only baseline: a plain conformal set matched in coverage (spec §5 metric 3)

def test_matched_baseline_shows_rule_blind_sets_at_the_online_coverage():
    config = SimulationConfig(schedule="stationary", T=4_000, n_calibration=300, seed=2)
    result = simulate(config)
    online, matched = result.online, result.matched
    assert matched is not None and matched.bound == {"harm": None, "comp": None}  # fixed: no guarantee
    assert abs(matched.set_coverage - online.set_coverage) < 0.01  # matched in coverage
    run = result.runs["matched"]
    q = run.q_comp[0]
    assert np.all(run.q_comp == q)  # one threshold, frozen
    # Blind to the human: every round shows {y : s(y) <= q}, whatever the participant answered.
    cases = prepare(config).cases
    np.testing.assert_array_equal(run.set_size, run.rounds * (cases.scores <= q).sum(axis=1))
    data = json.loads(json.dumps(result.to_dict()))
    assert data["collab_accuracy"]["matched"] == matched.accuracy and "matched conformal set" in data["summary"]


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_matched_baseline_is_engine_independent(engine):
    cfg = SimulationConfig(schedule="drift", T=300, n_calibration=100, seed=4, engine=engine)
    other = dataclasses.replace(cfg, engine="reference" if engine == "fast" else "fast")
    assert_same_run(simulate(cfg).runs["matched"], simulate(other).runs["matched"])


def test_plain_errors_count_omissions_against_the_rules():
    from engines.collab.controller import errors_of_sets as plain_errors

    sets = np.array([[True, False, True], [False, False, True]])
    protect = np.array([[False, True, False], [False, False, False]])
    supply = np.array([[False, False, False], [True, True, False]])
    errors = plain_errors(sets, 1, protect, supply)
    assert (errors.err_harm, errors.err_comp, errors.fired_harm, errors.fired_comp) == (True, True, True, True)
    assert not plain_errors(sets, 2, protect, supply).fired_harm


# The medical task's age-ordered stream (the precursor's DDXPlus shift)

def test_age_order_calibrates_on_the_youngest_and_streams_by_age():
    config = SimulationConfig(task="medical", case_order="age", T=400, n_calibration=100, seed=3)
    prepared = prepare(config)
    ages = prepared.cases.age
    assert np.all(np.diff(ages) >= 0) and ages.min() >= 1
    assert "cases ordered by age: calibration on ages" in prepared.description
    fast = run_controller(prepared.cases, prepared.draws, prepared.params, prepared.protect, prepared.supply,
                          prepared.state, config.rounds, "fast")
    ref = run_controller(prepared.cases, prepared.draws, prepared.params, prepared.protect, prepared.supply,
                         prepared.state, config.rounds, "reference")
    assert_same_run(fast, ref)
    with pytest.raises(ValueError, match="case_order 'age' needs task 'medical'"):
        SimulationConfig(case_order="age")


@pytest.mark.parametrize("engine", ["fast", "reference"])
def test_progress_counts_every_runs_interactions_once_in_order(engine):
    """Three runs (online, fixed, matched) of T interactions: the reports climb to 3T, each run's
    own reports named after it and counted after the runs before it."""
    reports = []
    simulate(SimulationConfig(T=120, n_calibration=60, engine=engine),
             progress=lambda done, total, message="": reports.append((done, total, message)))
    assert {total for _, total, _ in reports} == {360}
    done = [d for d, _, _ in reports]
    assert done == sorted(done) and done[-1] == 360
    ends = {message: max(d for d, _, m in reports if m == message) for _, _, message in reports}
    assert ends == {"online": 120, "fixed": 240, "matched": 360}
    assert min(d for d, _, m in reports if m == "fixed") > 120
