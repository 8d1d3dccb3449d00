"""The synthetic DDXPlus-like task: determinism, exact posterior, progressive reveal, the DDXPlus loader."""

from __future__ import annotations

import argparse
import csv
import dataclasses
import itertools
import json

import numpy as np
import pytest

from engines.collab import cli, medical
from engines.collab import simulate as sim
from engines.collab.ai_sources import MedicalAI
from engines.collab.controller import fixed_baseline
from engines.collab.medical import (
    DDXPlusFormatError,
    Evidence,
    MedicalCase,
    MedicalWorld,
    default_world,
    describe,
    differential_vector,
    generate_cases,
    load_ddxplus,
    posterior,
    reveal,
)


def test_world_shape_and_synthetic_label():
    world = default_world()
    assert len(world.pathologies) == 12 and len(world.evidences) == 40
    assert np.allclose(world.chief.sum(axis=1), 1) and np.isclose(world.prior.sum(), 1)
    assert "SYNTHETIC" in medical.__doc__


def test_same_seed_same_cases():
    a, b = generate_cases(3, 20), generate_cases(3, 20)
    assert a == b
    assert a != generate_cases(4, 20)
    for case in a:
        assert case.INITIAL_EVIDENCE in case.EVIDENCES
        assert case.PATHOLOGY in case.labels
        assert case.SEX in ("M", "F") and 1 <= case.AGE <= 95
        probs = [p for _, p in case.DIFFERENTIAL_DIAGNOSIS]
        assert probs == sorted(probs, reverse=True) and np.isclose(sum(probs), 1)


def test_differential_is_the_full_information_posterior():
    world = default_world()
    for case in generate_cases(0, 10):
        full = posterior(case, [e.code for e in world.evidences])
        assert np.isclose(full.sum(), 1)
        np.testing.assert_allclose(differential_vector(case), full, atol=1e-12)
        np.testing.assert_allclose(posterior(case, reveal(case, 4, 4)), full, atol=1e-12)


def _tiny_world() -> MedicalWorld:
    evidences = (Evidence("E_1", "cough", "Cough?", "symptom"), Evidence("E_2", "fever", "Fever?", "symptom"),
                 Evidence("E_3", "smoker", "Smoke?", "antecedent"))
    return MedicalWorld(
        pathologies=("A", "B"), evidences=evidences, prior=np.array([0.3, 0.7]),
        evidence_prob=np.array([[0.9, 0.2, 0.6], [0.1, 0.5, 0.2]]),
        age_prob=np.array([[0.5, 0.5], [0.2, 0.8]]), p_male=np.array([0.6, 0.3]),
        chief=np.array([[0.8, 0.2, 0.0], [0.4, 0.6, 0.0]]), age_bins=((0, 39), (40, 99)))


def test_posterior_matches_brute_force_bayes():
    world = _tiny_world()
    # Case: 50-year-old woman, chief complaint fever, also smokes, no cough.
    case = MedicalCase(AGE=50, SEX="F", EVIDENCES=["E_2", "E_3"], INITIAL_EVIDENCE="E_2",
                       DIFFERENTIAL_DIAGNOSIS=[], PATHOLOGY="A", world=world)
    # Analytic: P(p) P(bin 2 | p) P(F | p) P(chief = fever | p) P(no cough | p) P(smoker | p).
    a = 0.3 * 0.5 * 0.4 * 0.2 * (1 - 0.9) * 0.6
    b = 0.7 * 0.8 * 0.7 * 0.6 * (1 - 0.1) * 0.2
    np.testing.assert_allclose(posterior(case, ["E_1", "E_3"]), [a / (a + b), b / (a + b)], rtol=1e-12)

    # Brute force: enumerate every complete world state and keep those matching the observation.
    def joint(p, age_bin, male, chief, statuses):
        pr = world.prior[p] * world.age_prob[p, age_bin] * (world.p_male[p] if male else 1 - world.p_male[p])
        pr *= world.chief[p, chief]
        for j, on in enumerate(statuses):
            if j != chief:
                q = world.evidence_prob[p, j]
                pr *= q if on else 1 - q
            elif not on:
                return 0.0
        return pr

    for observed in ([], ["E_1"], ["E_3"], ["E_1", "E_3"]):
        mass = np.zeros(2)
        for p, statuses in itertools.product(range(2), itertools.product([False, True], repeat=3)):
            if all(statuses[int(c[2:]) - 1] == (c in case.EVIDENCES) for c in observed):
                mass[p] += joint(p, 1, False, 1, statuses)  # marginalise the unobserved evidences
        np.testing.assert_allclose(posterior(case, observed), mass / mass.sum(), rtol=1e-12)


def test_reveal_grows_from_the_initial_evidence():
    case = generate_cases(5, 1)[0]
    steps = [reveal(case, k, 4) for k in range(1, 5)]
    assert steps[0] == [case.INITIAL_EVIDENCE]
    for before, after in itertools.pairwise(steps):
        assert after[:len(before)] == before and len(after) > len(before)
    assert sorted(steps[-1]) == sorted(e.code for e in default_world().evidences)
    with pytest.raises(ValueError, match="round_k"):
        reveal(case, 5, 4)


def test_more_evidence_makes_the_ai_more_accurate():
    cases = generate_cases(11, 500)
    labels = np.array([c.label for c in cases])
    acc = [np.mean([np.argmax(posterior(c, reveal(c, k, 3))) for c in cases] == labels) for k in (1, 2, 3)]
    assert acc[0] < acc[1] < acc[2]
    assert acc[2] - acc[0] > 0.15


def test_describe_lists_known_findings_without_the_diagnosis():
    case = generate_cases(2, 1)[0]
    text = describe(case, reveal(case, 2, 3))
    assert text.startswith(f"Patient: {case.AGE}-year-old")
    assert default_world().evidence_text(case.INITIAL_EVIDENCE) in text
    assert case.PATHOLOGY not in text and "Asked and denied" in text


# ---------------------------------------------------------------- DDXPlus loader

EVIDENCES_JSON = {
    "E_91": {"name": "E_91", "question_en": "Do you have a fever?", "data_type": "B", "possible-values": [],
             "value_meaning": {}},
    "E_53": {"name": "E_53", "question_en": "Where is the pain located?", "data_type": "M",
             "possible-values": ["V_44", "V_45"],
             "value_meaning": {"V_44": {"fr": "gorge", "en": "throat"}, "V_45": {"fr": "tête", "en": "head"}}},
    "E_56": {"name": "E_56", "question_en": "How intense is the pain?", "data_type": "C",
             "possible-values": list(range(11)), "value_meaning": {}},
}
CONDITIONS_JSON = {
    "URTI": {"cond-name-eng": "URTI", "symptoms": {"E_91": {}, "E_53": {}}, "antecedents": {}},
    "Bronchite": {"cond-name-eng": "Bronchitis", "symptoms": {"E_91": {}}, "antecedents": {}},
}
ROWS = [
    ["AGE", "DIFFERENTIAL_DIAGNOSIS", "SEX", "PATHOLOGY", "EVIDENCES", "INITIAL_EVIDENCE"],
    ["34", "[['URTI', 0.7], ['Bronchite', 0.3]]", "F", "URTI", "['E_91', 'E_53_@_V_44', 'E_56_@_4']", "E_91"],
    ["71", "[['Bronchite', 0.6], ['URTI', 0.4]]", "M", "Bronchite", "['E_91']", "E_91"],
]


def _fixture(tmp_path, rows=ROWS):
    paths = tmp_path / "patients.csv", tmp_path / "release_evidences.json", tmp_path / "release_conditions.json"
    with paths[0].open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    paths[1].write_text(json.dumps(EVIDENCES_JSON))
    paths[2].write_text(json.dumps(CONDITIONS_JSON))
    return paths


def test_load_ddxplus_fixture(tmp_path):
    release = load_ddxplus(*_fixture(tmp_path))
    assert release.pathologies == ("Bronchite", "URTI")
    first, second = release.cases
    assert (first.AGE, first.SEX, first.PATHOLOGY, first.INITIAL_EVIDENCE) == (34, "F", "URTI", "E_91")
    assert first.EVIDENCES == ["E_91", "E_53_@_V_44", "E_56_@_4"]
    assert first.DIFFERENTIAL_DIAGNOSIS == [("URTI", 0.7), ("Bronchite", 0.3)]
    assert first.label == 1 and second.label == 0
    np.testing.assert_allclose(differential_vector(first), [0.3, 0.7])
    text = describe(first, reveal(first, 2, 2))
    assert "Do you have a fever?" in text and "Where is the pain located?: throat" in text
    assert "How intense is the pain?: 4" in text
    assert len(load_ddxplus(*_fixture(tmp_path), limit=1).cases) == 1
    with pytest.raises(ValueError, match="MedicalWorld"):
        posterior(first, first.EVIDENCES)


@pytest.mark.parametrize(("column", "value", "message"), [
    ("EVIDENCES", "E_91, E_53", "patients.csv line 3, field EVIDENCES: not a list literal"),
    ("EVIDENCES", "['E_999']", "patients.csv line 3, field EVIDENCES: unknown evidence code 'E_999'"),
    ("DIFFERENTIAL_DIAGNOSIS", "[['URTI']]", "patients.csv line 3, field DIFFERENTIAL_DIAGNOSIS: items must be"),
    ("AGE", "old", "patients.csv line 3, field AGE: not an integer"),
    ("PATHOLOGY", "Flu", "patients.csv line 3, field PATHOLOGY: unknown pathology 'Flu'"),
])
def test_load_ddxplus_malformed_row(tmp_path, column, value, message):
    rows = [list(r) for r in ROWS]
    rows[2][rows[0].index(column)] = value
    with pytest.raises(DDXPlusFormatError) as info:
        load_ddxplus(*_fixture(tmp_path, rows))
    assert str(info.value).startswith(message)


def test_load_ddxplus_malformed_files(tmp_path):
    patients, evidences, conditions = _fixture(tmp_path)
    evidences.write_text('{"E_91": {"question_en": "x"},\n "E_53": }')
    with pytest.raises(DDXPlusFormatError, match=r"release_evidences.json line 2: not valid JSON"):
        load_ddxplus(patients, evidences, conditions)
    _fixture(tmp_path)
    patients.write_text("AGE,SEX\n30,F\n")
    with pytest.raises(DDXPlusFormatError, match=r"patients.csv line 1: missing column\(s\) PATHOLOGY"):
        load_ddxplus(patients, evidences, conditions)


def ddxplus_folder(tmp_path):
    """A DDXPlus release folder as ``--ddxplus-dir`` expects it (two patients, two pathologies)."""
    patients, _, _ = _fixture(tmp_path)
    patients.rename(tmp_path / "release_test_patients.csv")
    return tmp_path


def test_ddxplus_folder(tmp_path):
    with pytest.raises(ValueError, match="lacks release_test_patients or release_test_patients.csv"):
        medical.ddxplus_paths(_fixture(tmp_path)[0].parent)
    folder = ddxplus_folder(tmp_path)
    assert medical.ddxplus_pathologies(folder) == ("Bronchite", "URTI")
    assert [c.PATHOLOGY for c in medical.load_ddxplus_dir(folder).cases] == ["URTI", "Bronchite"]
    (folder / "release_conditions.json").unlink()
    with pytest.raises(ValueError, match=r"lacks release_conditions.json"):
        medical.ddxplus_paths(folder)
    with pytest.raises(ValueError, match="DDXPlus folder not found"):
        medical.ddxplus_paths(folder / "nope")


# ---------------------------------------------------------------- the medical task in the simulator


def test_medical_ai_source_is_the_partial_evidence_posterior():
    ai = MedicalAI()
    cases = ai.draw(400, np.random.default_rng(0))
    assert cases.probs.shape == (400, 12) and np.allclose(cases.probs.sum(axis=1), 1)
    assert np.mean(cases.probs.argmax(axis=1) == cases.labels) == pytest.approx(0.8, abs=0.06)
    assert 0 <= cases.difficulty.min() and cases.difficulty.max() <= 1
    np.testing.assert_allclose(cases.difficulty, (1 - cases.probs.max(axis=1)) * 12 / 11)
    # The posterior given the chief complaint and the first fifth of the interview.
    case = generate_cases(5, 1)[0]
    known = medical.evidence_share(case, 0.2)
    assert known[0] == case.INITIAL_EVIDENCE and len(known) == 1 + int(np.ceil(0.2 * len(case.interview)))
    assert medical.evidence_share(case, 1.0) == reveal(case, 3, 3)
    tilted = ai.draw(400, np.random.default_rng(0), hardness=np.ones(400))
    assert tilted.difficulty.mean() > cases.difficulty.mean()


@pytest.mark.parametrize("schedule", ["stationary", "drift", "adversarial"])
def test_medical_fast_path_is_identical_to_reference(schedule):
    cfg = sim.SimulationConfig(task="medical", schedule=schedule, T=150, n_calibration=80, rounds=3, seed=7)
    assert cfg.n_labels == 12
    p = sim.prepare(cfg)
    assert p.cases.probs.shape == (150, 12) and p.draws.weights.shape == (150, 12)
    for state in (p.state, fixed_baseline(p.state)):
        fast = sim.run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, cfg.rounds, "fast")
        ref = sim.run_controller(p.cases, p.draws, p.params, p.protect, p.supply, state, cfg.rounds, "reference")
        for name, values in fast.arrays().items():
            np.testing.assert_array_equal(values, ref.arrays()[name], err_msg=name)
        assert fast.final_state == ref.final_state


def test_medical_task_from_the_command_line(tmp_path):
    parser = argparse.ArgumentParser()
    cli.add_simulate_arguments(parser)
    result = cli.run_simulate(parser.parse_args(["--task", "medical", "--quick", "--T", "1000", "--n-calibration", "200"]))
    assert result["config"]["task"] == "medical" and result["config"]["n_labels"] == 12
    assert result["engine"] == "fast" and result["online"]["within_bound"] == {"harm": True, "comp": True}
    assert result["collab_accuracy"]["online"] > max(result["human_alone_accuracy"], result["ai_alone_accuracy"])
    # The real release's format, through --ddxplus-dir: its pathologies are the labels.
    folder = ddxplus_folder(tmp_path)
    result = cli.run_simulate(parser.parse_args(["--task", "medical", "--ddxplus-dir", str(folder), "--T", "50",
                                        "--n-calibration", "20", "--no-fixed"]))
    assert result["config"]["n_labels"] == 2 and result["config"]["ddxplus_dir"] == str(folder)
    assert result["ai_alone_accuracy"] == 1.0  # the fixture's differentials rank the pathology first


def test_age_order_on_a_release_uses_distinct_patients(tmp_path):
    folder = str(ddxplus_folder(tmp_path))  # two patients
    config = sim.SimulationConfig(task="medical", ddxplus_dir=folder, case_order="age", T=1, n_calibration=1,
                                  calibration_passes=0)
    prepared = sim.prepare(config)
    assert len(prepared.cases.labels) == 1
    with pytest.raises(ValueError, match="has 2 patients; calibration and run need 3 distinct ones"):
        sim.prepare(dataclasses.replace(config, T=2))
