"""The synthetic DDXPlus-like task: determinism, exact posterior, progressive reveal, the DDXPlus loader."""

from __future__ import annotations

import argparse
import ast
import dataclasses
import itertools
import json
import zipfile

import numpy as np
import pytest

from engines.collab import cli, ddxplus, medical
from engines.collab import simulate as sim
from engines.collab.ai_sources import MedicalAI
from engines.collab.controller import fixed_baseline
from engines.collab.ddxplus import DDXPlusFormatError, load_ddxplus
from engines.collab.llm_human import medical_views
from engines.collab.medical import (
    Evidence,
    MedicalCase,
    MedicalWorld,
    default_world,
    describe,
    differential_vector,
    generate_cases,
    posterior,
    reveal,
)
from tests.collab import ddxplus_fixture as fx


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
# The fixtures (tests/collab/ddxplus_fixture.py) follow the release's published format.

PATIENTS_ZIP = "release_test_patients.zip:release_test_patients"  # how messages name the zip's member


def ddxplus_folder(tmp_path, form="zip", **kwargs):
    """A DDXPlus release folder as downloaded (four patients, four pathologies); ``form`` as in ``write_release``."""
    return fx.write_release(tmp_path / f"ddxplus_{form}", form=form, **kwargs)


@pytest.mark.parametrize("form", ["zip", "csv", "bare", "folder"])
def test_release_read_as_downloaded_or_extracted(tmp_path, form):
    folder = ddxplus_folder(tmp_path, form)
    if form == "zip":  # one member, no extension, as the release ships it
        assert zipfile.ZipFile(folder / "release_test_patients.zip").namelist() == ["release_test_patients"]
    release = ddxplus.load_ddxplus_dir(folder)
    assert [c.PATHOLOGY for c in release.cases] == ["URTI", "Pneumonia", "Bronchiolitis", "Acute pulmonary edema"]
    assert [c.case_id for c in release.cases] == [2, 3, 4, 5] and release.n_patients == 4
    first = release.cases[0]
    assert (first.AGE, first.SEX, first.INITIAL_EVIDENCE) == (34, "F", "E_91")
    assert first.EVIDENCES[:4] == ["E_48", "E_53", "E_54_@_V_161", "E_54_@_V_183"]
    assert len(ddxplus.load_ddxplus_dir(folder, limit=1).cases) == 1
    assert ddxplus.count_patients(ddxplus.ddxplus_paths(folder)[0]) == 4


def test_zip_and_folder_must_hold_one_file(tmp_path):
    folder = ddxplus_folder(tmp_path)
    patients = folder / "release_test_patients.zip"
    with zipfile.ZipFile(patients, "w") as zf:  # what a re-zipped folder looks like
        zf.writestr("release_test_patients/", "")
        zf.writestr("__MACOSX/._release_test_patients", "x")
        zf.writestr("release_test_patients/release_test_patients.csv", fx.patients_csv(fx.PATIENTS))
    assert len(ddxplus.load_ddxplus_dir(folder).cases) == 4  # any member name, folders and macOS forks ignored
    for members in ([], ["a.csv", "b.csv"]):
        with zipfile.ZipFile(patients, "w") as zf:
            for name in members:
                zf.writestr(name, fx.patients_csv(fx.PATIENTS))
        with pytest.raises(DDXPlusFormatError, match=rf"^release_test_patients.zip: expected one patients CSV inside, "
                                                     rf"found {len(members)} files"):
            ddxplus.load_ddxplus_dir(folder)
    patients.write_text("not a zip")
    with pytest.raises(DDXPlusFormatError, match="^release_test_patients.zip: not a readable zip file"):
        ddxplus.load_ddxplus_dir(folder)
    extracted = ddxplus_folder(tmp_path, "folder") / "release_test_patients"
    (extracted / "notes.txt").write_text("mine")
    (extracted / ".DS_Store").write_text("")
    with pytest.raises(DDXPlusFormatError, match=r"folder release_test_patients/: must hold the one patients CSV, "
                                                 r"found 2 files \('notes.txt', 'release_test_patients'\)"):
        ddxplus.load_ddxplus_dir(extracted.parent)


def test_member_names_of_a_zip_are_quoted_in_messages(tmp_path):
    folder = ddxplus_folder(tmp_path)
    with zipfile.ZipFile(folder / "release_test_patients.zip", "w") as zf:
        for name in ("a.csv", "b\n<i>" + "x" * 200 + ".csv"):
            zf.writestr(name, "x")
    with pytest.raises(DDXPlusFormatError) as refused:
        ddxplus.load_ddxplus_dir(folder)
    message = str(refused.value)
    assert "found 2 files ('a.csv', 'b\\n<i>xxx" in message and "\n" not in message  # no raw line break
    assert "x" * 130 not in message


def test_a_code_book_nested_too_deeply_is_refused_clearly(tmp_path):
    folder = ddxplus_folder(tmp_path)
    (folder / "release_evidences.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DDXPlusFormatError, match=r"^release_evidences.json: the JSON nests deeper than \d+ levels"):
        ddxplus.load_ddxplus_dir(folder)


def test_pathologies_are_named_by_condition_name(tmp_path):
    """The English release keeps French keys for some pathologies; patients use condition_name."""
    assert fx.CONDITIONS["Pneumonie"]["condition_name"] == "Pneumonia"
    folder = ddxplus_folder(tmp_path)
    release = ddxplus.load_ddxplus_dir(folder)
    assert release.pathologies == ddxplus.ddxplus_pathologies(folder) == fx.LABELS
    second = release.cases[1]
    assert second.PATHOLOGY == "Pneumonia" and second.label == fx.LABELS.index("Pneumonia")
    assert second.DIFFERENTIAL_DIAGNOSIS == [("Pneumonia", 0.61), ("Acute pulmonary edema", 0.25), ("URTI", 0.14)]
    np.testing.assert_allclose(differential_vector(second), [0.25, 0, 0.61, 0.14])
    with pytest.raises(ValueError, match="MedicalWorld"):
        posterior(second, second.EVIDENCES)
    # Other names of a pathology resolve to its condition_name: the French name, the English one, the key.
    rows = [dict(fx.PATIENTS[1], PATHOLOGY=name, DIFFERENTIAL_DIAGNOSIS=repr([[name, 0.7], ["Bronchiolite", 0.3]]))
            for name in ("Pneumonie", "Œdème pulmonaire aigu", "Pneumonia")]
    cases = ddxplus.load_ddxplus_dir(ddxplus_folder(tmp_path, "csv", patients=rows)).cases
    assert [c.PATHOLOGY for c in cases] == ["Pneumonia", "Acute pulmonary edema", "Pneumonia"]
    assert cases[0].DIFFERENTIAL_DIAGNOSIS == [("Pneumonia", 0.7), ("Bronchiolitis", 0.3)]


def test_french_release_names(tmp_path):
    """The original (French) release: keys, condition_name and the patients' names all French."""
    conditions = {entry["cond-name-fr"]: dict(entry, condition_name=entry["cond-name-fr"])
                  for entry in fx.CONDITIONS.values()}
    english = {e["cond-name-eng"]: e["cond-name-fr"] for e in fx.CONDITIONS.values()}
    rows = [dict(row, PATHOLOGY=english[row["PATHOLOGY"]], DIFFERENTIAL_DIAGNOSIS=repr(
        [[english[n], p] for n, p in ast.literal_eval(row["DIFFERENTIAL_DIAGNOSIS"])])) for row in fx.PATIENTS]
    release = ddxplus.load_ddxplus_dir(ddxplus_folder(tmp_path, conditions=conditions, patients=rows))
    assert release.pathologies == ("Bronchiolite", "IVRS ou virémie", "Pneumonie", "Œdème pulmonaire aigu")
    assert [c.PATHOLOGY for c in release.cases] == ["IVRS ou virémie", "Pneumonie", "Bronchiolite",
                                                   "Œdème pulmonaire aigu"]


def test_interview_text_of_a_real_format_patient(tmp_path):
    """What an LLM clinician reads of the fixture's first patient, round by round (3 rounds)."""
    first = ddxplus.load_ddxplus_dir(ddxplus_folder(tmp_path)).cases[0]
    # One item per question: E_54 and E_55 have two values each; E_57 and E_204 hold their defaults.
    assert first.interview == ("E_48", "E_53", "E_54", "E_55", "E_56", "E_97")
    head = ("Patient: 34-year-old female.\n"
            "Chief complaint: Do you have a fever (either felt or measured with a thermometer)? yes\n")
    assert describe(first, reveal(first, 1, 3)) == head + "Symptoms: none reported.\nHistory (antecedents): none reported."
    assert describe(first, reveal(first, 2, 3)) == head + (
        "Symptoms:\n"
        "- Do you have pain somewhere, related to your reason for consulting? yes\n"
        "- Characterize your pain: sensitive, heavy\n"
        "History (antecedents):\n"
        "- Do you live with 4 or more people? yes")
    assert describe(first, reveal(first, 3, 3)) == head + (
        "Symptoms:\n"
        "- Do you have pain somewhere, related to your reason for consulting? yes\n"
        "- Characterize your pain: sensitive, heavy\n"
        "- Do you feel pain somewhere? back of the head, forehead\n"
        "- How intense is the pain? 4 on a scale of 0 to 10\n"
        "- Do you have a sore throat? yes\n"
        "History (antecedents):\n"
        "- Do you live with 4 or more people? yes")
    # A default value is no finding; a non-default one of the same question is.
    second = ddxplus.load_ddxplus_dir(ddxplus_folder(tmp_path)).cases[1]
    assert describe(second, reveal(second, 2, 2)).endswith(
        "- Have you traveled out of the country in the last 4 weeks? Europe")
    views = medical_views(first, 3)
    assert [v.description for v in views] == [describe(first, reveal(first, k, 3)) for k in (1, 2, 3)]
    assert views[0].labels == fx.LABELS


def test_value_meanings_in_either_form(tmp_path):
    """value_meaning entries as published ({"en", "fr"}) or as the English text (some copies)."""
    evidences = json.loads(json.dumps(fx.EVIDENCES))
    evidences["E_54"]["value_meaning"] = {code: m["en"] for code, m in evidences["E_54"]["value_meaning"].items()}
    evidences["E_54"]["type-donnes"] = evidences["E_54"].pop("data_type")  # the earlier field name
    release = ddxplus.load_ddxplus_dir(ddxplus_folder(tmp_path, evidences=evidences))
    assert release.evidence_text("E_54_@_V_183") == "Characterize your pain: heavy"
    assert release.evidence_text("E_91") == "Do you have a fever (either felt or measured with a thermometer)? yes"
    assert release.finding("E_57", ["V_123"]) is None  # "nowhere" is the default


@pytest.mark.parametrize(("column", "value", "message"), [
    ("EVIDENCES", "E_91, E_53", "line 3: EVIDENCES: not a list literal"),
    ("EVIDENCES", "[" * 50_000 + "]" * 50_000, "line 3: EVIDENCES: not a list literal"),  # never a RecursionError
    ("EVIDENCES", "['E_999']", "line 3: EVIDENCES: unknown evidence code 'E_999'"),
    ("EVIDENCES", "['E_54_@_V_999']", "line 3: EVIDENCES: 'E_54_@_V_999': 'V_999' is not one of the "
                                      "possible-values of E_54"),
    ("DIFFERENTIAL_DIAGNOSIS", "[['URTI']]", "line 3: DIFFERENTIAL_DIAGNOSIS: items must be"),
    ("DIFFERENTIAL_DIAGNOSIS", "[['Flu', 0.5]]", "line 3: DIFFERENTIAL_DIAGNOSIS: unknown pathology 'Flu'"),
    ("AGE", "old", "line 3: AGE: not an integer"),
    ("PATHOLOGY", "Flu", "line 3: PATHOLOGY: unknown pathology 'Flu' (no condition_name, cond-name-eng, "
                         "cond-name-fr or key of release_conditions.json)"),
])
@pytest.mark.parametrize("form", ["zip", "csv"])
def test_malformed_row(tmp_path, column, value, message, form):
    rows = [dict(r) for r in fx.PATIENTS]
    rows[1][column] = value
    folder = ddxplus_folder(tmp_path, form, patients=rows)
    with pytest.raises(DDXPlusFormatError) as info:
        ddxplus.load_ddxplus_dir(folder)
    name = PATIENTS_ZIP if form == "zip" else "release_test_patients.csv"
    assert str(info.value).startswith(f"{name}, {message}")
    assert info.value.line == 3
    # Rows not drawn are not parsed.
    assert [c.case_id for c in ddxplus.load_ddxplus_dir(folder, rows=[3, 0]).cases] == [5, 2]


def test_malformed_files(tmp_path):
    folder = ddxplus_folder(tmp_path)
    patients, evidences, conditions = ddxplus.ddxplus_paths(folder)
    evidences.write_text('{"E_91": {"question_en": "x"},\n "E_53": }')
    with pytest.raises(DDXPlusFormatError, match=r"^release_evidences.json: not valid JSON \(Expecting value at line 2"):
        load_ddxplus(patients, evidences, conditions)
    ddxplus_folder(tmp_path)
    twins = dict(fx.CONDITIONS, Pneumopathie=fx.CONDITIONS["Pneumonie"])
    conditions.write_text(json.dumps(twins))
    with pytest.raises(DDXPlusFormatError, match="^release_conditions.json, entry 'Pneumopathie': condition_name: "
                                                 "'Pneumonia', the same as entry 'Pneumonie''s"):
        load_ddxplus(patients, evidences, conditions)
    ddxplus_folder(tmp_path)
    with zipfile.ZipFile(patients, "w") as zf:
        zf.writestr("release_test_patients", "AGE,SEX\n30,F\n")
    with pytest.raises(DDXPlusFormatError, match=rf"^{PATIENTS_ZIP}, line 1: missing column\(s\) PATHOLOGY"):
        load_ddxplus(patients, evidences, conditions)


@pytest.mark.parametrize(("book", "edit", "message"), [
    ("evidences", lambda b: b["E_91"].update(data_type="X"),
     "release_evidences.json, entry 'E_91': data_type: must be one of 'B', 'C' or 'M' (got 'X')"),
    ("evidences", lambda b: b["E_91"].pop("question_en"), "release_evidences.json, entry 'E_91': question_en: is missing"),
    ("evidences", lambda b: b.update(E_92="yes"), "release_evidences.json, entry 'E_92': must be an object (got 'yes')"),
    ("conditions", lambda b: b["Pneumonie"].update(condition_name=" "),
     "release_conditions.json, entry 'Pneumonie': condition_name: must not be empty"),
])
def test_a_code_book_entry_that_is_not_one_names_the_file_entry_and_field(tmp_path, book, edit, message):
    books = {"evidences": json.loads(json.dumps(fx.EVIDENCES)), "conditions": json.loads(json.dumps(fx.CONDITIONS))}
    edit(books[book])
    folder = ddxplus_folder(tmp_path, evidences=books["evidences"])
    (folder / "release_conditions.json").write_text(json.dumps(books["conditions"]))
    with pytest.raises(DDXPlusFormatError) as refused:
        ddxplus.load_ddxplus_dir(folder)
    assert str(refused.value) == message


def test_ddxplus_folder(tmp_path):
    folder = ddxplus_folder(tmp_path, "csv")
    (folder / "release_test_patients.csv").unlink()
    with pytest.raises(ValueError, match=r"lacks release_test_patients.zip \(or, extracted, release_test_patients.csv, "
                                         r"release_test_patients or release_test_patients/\)"):
        ddxplus.ddxplus_paths(folder)
    folder = ddxplus_folder(tmp_path)
    (folder / "release_conditions.json").unlink()
    with pytest.raises(ValueError, match=r"lacks release_conditions.json"):
        ddxplus.ddxplus_paths(folder)
    with pytest.raises(ValueError, match="DDXPlus folder not found"):
        ddxplus.ddxplus_paths(folder / "nope")


def test_draw_is_a_seeded_permutation_then_repeats(tmp_path):
    order = ddxplus.draw_order(10, 25, np.random.default_rng(0))
    assert sorted(order[:10]) == list(range(10)) and sorted(order[10:20]) == list(range(10))
    np.testing.assert_array_equal(order, ddxplus.draw_order(10, 25, np.random.default_rng(0)))
    assert np.bincount(order).max() == 3  # every patient once per pass
    folder = ddxplus_folder(tmp_path)
    drawn = ddxplus.draw_ddxplus(folder, 6, np.random.default_rng(1))
    assert drawn.summary() == {"cases": 6, "distinct_patients": 4, "patients_in_release": 4, "cases_repeat": True}
    assert sorted(c.case_id for c in drawn.cases[:4]) == [2, 3, 4, 5]


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
    assert "patients" not in result  # synthetic cases: nothing to repeat
    # The release as downloaded, through --ddxplus-dir: its pathologies are the labels.
    folder = ddxplus_folder(tmp_path)
    result = cli.run_simulate(parser.parse_args(["--task", "medical", "--ddxplus-dir", str(folder), "--T", "50",
                                                 "--n-calibration", "20", "--no-fixed"]))
    assert result["config"]["n_labels"] == 4 and result["config"]["ddxplus_dir"] == str(folder)
    assert result["ai_alone_accuracy"] == 1.0  # the fixture's differentials rank the pathology first
    # 70 cases from 4 patients: said in the result and its summary.
    assert result["patients"] == {"cases": 70, "distinct_patients": 4, "patients_in_release": 4, "cases_repeat": True}
    assert "DDXPlus: 70 cases from 4 of the release's 4 patients, patients repeat (about 17.5 times each)" \
        in result["summary"]


def _sorted_release(tmp_path, n=400):
    """n patients, the file sorted by pathology (as a file may be): its first rows are all one pathology."""
    rows = sorted(fx.random_patients(n, seed=5), key=lambda row: row["PATHOLOGY"])
    return fx.write_release(tmp_path / "sorted", patients=rows), rows


def test_release_patients_are_drawn_with_the_seed(tmp_path):
    folder, rows = _sorted_release(tmp_path)
    config = sim.SimulationConfig(task="medical", ddxplus_dir=str(folder), T=150, n_calibration=50, seed=3,
                                  with_fixed=False, with_matched=False)
    drawn = sim.draw(config)
    counts = np.bincount(np.concatenate([drawn.cal_cases.labels, drawn.cases.labels]), minlength=4)
    expected = np.bincount([fx.LABELS.index(r["PATHOLOGY"]) for r in rows], minlength=4) * 200 / len(rows)
    assert counts.min() > 0 and np.abs(counts - expected).max() < 25  # a random sample, not the file's first 200
    assert drawn.patients == {"cases": 200, "distinct_patients": 200, "patients_in_release": 400, "cases_repeat": False}
    again = sim.draw(config)
    np.testing.assert_array_equal(again.cases.probs, drawn.cases.probs)
    other = sim.draw(dataclasses.replace(config, seed=4))
    assert not np.array_equal(other.cases.probs, drawn.cases.probs)
    # No patient in both the pilot and the stream: the rows are distinct (their ages and differentials).
    keys = {(a, tuple(p)) for a, p in zip(drawn.cal_cases.age, drawn.cal_cases.probs.round(12), strict=True)}
    assert not keys & {(a, tuple(p)) for a, p in zip(drawn.cases.age, drawn.cases.probs.round(12), strict=True)}
    result = sim.simulate(config)
    assert "each once" in result.summary() and result.to_dict()["patients"]["cases_repeat"] is False


def test_a_schedule_tilt_reorders_the_drawn_patients(tmp_path):
    folder, _ = _sorted_release(tmp_path)
    base = sim.SimulationConfig(task="medical", ddxplus_dir=str(folder), T=300, n_calibration=50, seed=2)
    still, drift = sim.draw(base), sim.draw(dataclasses.replace(base, schedule="drift", strength=1.5))
    np.testing.assert_array_equal(still.cal_cases.probs, drift.cal_cases.probs)
    np.testing.assert_array_equal(np.sort(still.cases.difficulty), np.sort(drift.cases.difficulty))  # same patients
    assert drift.cases.difficulty[200:].mean() > drift.cases.difficulty[:100].mean() + 0.1


def test_age_order_on_a_release_uses_distinct_patients(tmp_path):
    folder = str(ddxplus_folder(tmp_path))  # four patients
    config = sim.SimulationConfig(task="medical", ddxplus_dir=folder, case_order="age", T=3, n_calibration=1,
                                  calibration_passes=0)
    prepared = sim.prepare(config)
    assert prepared.cases.age.tolist() == [34, 71, 80]  # the youngest (2) calibrates
    with pytest.raises(ValueError, match="has 4 patients; calibration and run need 5 distinct ones"):
        sim.prepare(dataclasses.replace(config, T=4))


def test_a_large_release_is_counted_and_only_the_drawn_rows_are_parsed(tmp_path):
    """A release of 20,000 patients: all are counted, 2,000 distinct ones drawn (speed: docs/collab.md)."""
    rows = fx.random_patients(1000, seed=1)
    folder = fx.write_release(tmp_path / "big", patients=rows * 20)
    drawn = ddxplus.draw_ddxplus(folder, 2_000, np.random.default_rng(0))
    assert drawn.n_patients == 20_000 and len(drawn.cases) == 2_000 and not drawn.repeats