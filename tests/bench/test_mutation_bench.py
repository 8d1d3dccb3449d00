"""The mutation score of ``bench/mutation.py``: what counts as caught, and what leaves the denominator."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _mutation():
    spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_score_counts_timeouts_as_caught_untested_as_survivors_and_drops_equivalents():
    mutation = _mutation()
    found = {"m.x__1": "killed", "m.x__2": "survived", "m.x__3": "no tests", "m.x__4": "timeout",
             "m.x__5": "survived"}
    entry = mutation.score_module(found, {"m.x__5": "renames a local variable only"})
    # caught: killed + timeout = 2; denominator: 5 mutants - 1 equivalent survivor = 4.
    assert entry["score"] == 0.5
    assert entry["equivalent"] == 1 and entry["mutants"] == 5
    assert entry["counts"] == {"killed": 1, "survived": 2, "no tests": 1, "timeout": 1}


def test_a_killed_mutant_listed_as_equivalent_still_counts_as_caught():
    mutation = _mutation()
    entry = mutation.score_module({"m.y__1": "killed", "m.y__2": "survived"}, {"m.y__1": "stale entry"})
    assert entry["score"] == 0.5 and entry["equivalent"] == 0


def test_a_listed_mutant_that_timed_out_counts_once_as_caught_never_above_all():
    mutation = _mutation()
    found = {"m.z__1": "killed", "m.z__2": "timeout", "m.z__3": "survived"}
    entry = mutation.score_module(found, {"m.z__2": "equivalent, but slow under load", "m.z__3": "equivalent"})
    # caught: killed + timeout = 2; denominator: 3 mutants - 1 equivalent survivor = 2.
    assert entry["score"] == 1.0 and entry["equivalent"] == 1


def test_every_core_module_and_its_tests_exist():
    mutation = _mutation()
    for module, tests in mutation.MODULES.items():
        assert (ROOT / module).is_file(), module
        assert tests and all((ROOT / t).is_file() for t in tests), (module, tests)


def test_equivalents_are_read_from_every_module_file(tmp_path):
    mutation = _mutation()
    (tmp_path / "a.b.json").write_text('{"a.b.x__mutmut_1": "why one"}')
    (tmp_path / "c.d.json").write_text('{"c.d.y__mutmut_2": "why two"}')
    assert mutation.load_equivalent(tmp_path) == {"a.b.x__mutmut_1": "why one", "c.d.y__mutmut_2": "why two"}


def test_every_listed_equivalent_names_a_core_module_and_says_why():
    mutation = _mutation()
    modules = {mutation.module_name(m) for m in mutation.MODULES}
    for path in (ROOT / "bench" / "mutation_equivalent").glob("*.json"):
        assert path.stem in modules, path
        for name, why in mutation.load_equivalent(path.parent).items():
            assert why.strip(), name


def test_a_module_whose_code_and_tests_are_unchanged_keeps_its_recorded_run(tmp_path, monkeypatch):
    import json

    mutation = _mutation()
    module = "engines/platform/csv_safety.py"
    stamp = mutation.fingerprint(module, mutation.MODULES[module])
    out = tmp_path / "mutation.json"
    out.write_text(json.dumps({"modules": {module: {"score": 0.97, "fingerprint": stamp}}}))

    def no_mutmut(*args, **kwargs):
        raise AssertionError("an unchanged module must not be mutated again")

    monkeypatch.setattr(mutation, "prepare_copy", no_mutmut)
    monkeypatch.setattr(mutation, "write_result", lambda result, path: None)
    result = mutation.run([module], tmp_path, 1, out, everything=False)
    assert result["modules"][module] == {"score": 0.97, "fingerprint": stamp, "reused": True}
    with_other_stamp = {"modules": {module: {"score": 0.97, "fingerprint": "0" * 16}}}
    out.write_text(json.dumps(with_other_stamp))
    try:
        mutation.run([module], tmp_path, 1, out, everything=False)
    except AssertionError as exc:
        assert "must not be mutated again" in str(exc)  # a changed fingerprint is re-tested
    else:
        raise AssertionError("a module with another fingerprint was not re-tested")


def test_the_fingerprint_follows_the_module_its_tests_and_the_shared_fixtures(tmp_path):
    mutation = _mutation()
    for name in ("engines/a.py", "tests/test_a.py", "tests/conftest.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    first = mutation.fingerprint("engines/a.py", ["tests/test_a.py"], tmp_path)
    for name in ("engines/a.py", "tests/test_a.py", "tests/conftest.py"):
        (tmp_path / name).write_text("x = 2\n")
        assert mutation.fingerprint("engines/a.py", ["tests/test_a.py"], tmp_path) != first
        (tmp_path / name).write_text("x = 1\n")
    assert mutation.fingerprint("engines/a.py", ["tests/test_a.py"], tmp_path) == first
