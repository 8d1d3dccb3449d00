"""Mutation testing of the core modules with mutmut: how many planted bugs the tests catch.

For each core module, mutmut (https://github.com/boxed/mutmut) writes many small variants of it
("mutants": ``<`` for ``<=``, ``+ 1`` for ``+ 2``, a dropped argument, ...) and runs the module's
own tests against each; a mutant the tests fail on is *killed*, one they pass is a *survivor*: a
bug the suite would not notice. Each module runs in a private copy of the repository under
``--workdir`` with only its relevant test files (``MODULES``), so the whole run finishes in well
under an hour on two cores; ``make mutation`` runs every module, ``make mutation
MODULES=engines/collab/controller.py`` one.

Score = killed / (mutants - equivalent), where mutants covered by no selected test count as
survivors (a line no test runs is a line no test checks), and timeouts as killed (the mutant
hung the tests, which notice). Survivors that cannot be killed because they do not change
behaviour are listed in ``bench/mutation_equivalent/<module>.json`` (mutant name -> one line saying
why; one file per module) and leave the denominator. Results: ``bench/results/mutation.json`` with the score per module and
every surviving mutant's diff; the goal is at least 90% per module.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench._results import machine_info, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "mutation.json"
EQUIVALENT = ROOT / "bench" / "mutation_equivalent"
GOAL = 0.90

# Core module -> the test files that check it (run against each of its mutants), cheapest first.
MODULES: dict[str, list[str]] = {
    "engines/platform/runtime.py": ["tests/platform/test_runtime_units.py", "tests/platform/test_study_constants.py",
                                    "tests/platform/test_runtime.py", "tests/platform/test_panels.py",
                                    "tests/platform/test_link_limits.py"],
    "engines/platform/participant_rows.py": ["tests/platform/test_participant_rows.py",
                                             "tests/platform/test_runtime_units.py"],
    "engines/platform/auth.py": ["tests/platform/test_auth.py", "tests/platform/test_login_security.py"],
    "engines/platform/login_throttle.py": ["tests/platform/test_login_throttle_units.py",
                                           "tests/platform/test_login_security.py"],
    "engines/platform/password_policy.py": ["tests/platform/test_password_policy.py",
                                            "tests/platform/test_login_security.py"],
    "engines/platform/csv_safety.py": ["tests/platform/test_csv_safety.py"],
    "engines/platform/pseudonyms.py": ["tests/platform/test_pseudonyms_units.py",
                                       "tests/platform/test_pseudonymised_export.py"],
    "engines/platform/jobqueue.py": ["tests/platform/test_jobqueue_units.py", "tests/platform/test_jobs.py"],
    "engines/platform/study_admin.py": ["tests/platform/test_study_admin.py", "tests/platform/test_runtime.py",
                                        "tests/platform/test_export.py", "tests/platform/test_study_constants.py",
                                        "tests/platform/test_link_limits.py"],
    "engines/collab/controller.py": ["tests/collab/test_controller_edges.py", "tests/collab/test_controller.py"],
    "engines/collab/store.py": ["tests/collab/test_store.py", "tests/collab/test_store_audit.py",
                                "tests/collab/test_store_edges.py"],
    "engines/collab/study/report.py": ["tests/collab/test_study_report.py"],
    "engines/collab/jobs.py": ["tests/collab/test_collab_jobs_units.py"],  # fakes: the real jobs take minutes
    "engines/judge/metrics.py": ["tests/judge/test_judge_metrics.py"],
    "engines/judge/agreement.py": ["tests/judge/test_judge_agreement.py"],
    "engines/judge/asr.py": ["tests/judge/test_judge_asr.py"],
    "engines/judge/labeling.py": ["tests/judge/test_judge_labeling_units.py", "tests/judge/test_judge_labeling.py",
                                  "tests/judge/test_judge_project_import.py", "tests/judge/test_judge_invites.py"],
    "engines/judge/labeling_queue.py": ["tests/judge/test_judge_labeling_units.py", "tests/judge/test_judge_labeling.py",
                                        "tests/judge/test_judge_labeling_locks.py", "tests/judge/test_judge_study.py"],
    "engines/judge/review.py": ["tests/judge/test_judge_labeling_units.py", "tests/judge/test_judge_labeling.py",
                                "tests/judge/test_judge_labeling_locks.py"],
    "engines/attribution/iss.py": ["tests/attribution/test_iss_estimator.py", "tests/attribution/test_episode.py"],
    "engines/attribution/nmr.py": ["tests/attribution/test_nmr.py"],
    "engines/video/spans.py": ["tests/video/test_video_spans.py"],
    "engines/video/gate.py": ["tests/video/test_video_gate.py"],
    "engines/video/metrics.py": ["tests/video/test_video_metrics.py"],
}
# What the tests need besides the mutated package (mutmut copies these next to its mutants).
ALSO_COPY = ["studies", "pages", "assets", "tests", "bench", "app.py", ".streamlit"]
CAUGHT = ("killed", "timeout", "caught by type check")  # a mutant a test (or the limit) stopped
STATUSES = ("killed", "survived", "no tests", "timeout", "suspicious", "skipped", "not checked", "segfault",
            "caught by type check")


def module_name(path: str) -> str:
    return path.removesuffix(".py").replace("/", ".")


def prepare_copy(workdir: Path, module: str, tests: list[str]) -> Path:
    """A private copy of the tracked files with a ``[tool.mutmut]`` section for ``module``."""
    copy = workdir / module_name(module)
    if copy.exists():
        shutil.rmtree(copy)
    copy.mkdir(parents=True)
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    for name in files:
        source = ROOT / name
        if source.is_file():
            target = copy / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    section = {
        "source_paths": ["engines"],
        "only_mutate": [module],
        "also_copy": ALSO_COPY,
        "pytest_add_cli_args_test_selection": tests,
        "pytest_add_cli_args": ["-p", "no:randomly", "-q", "-x"],
    }
    lines = ["", "[tool.mutmut]"] + [f"{key} = {json.dumps(value)}" for key, value in section.items()]
    with (copy / "pyproject.toml").open("a") as handle:
        handle.write("\n".join(lines) + "\n")
    return copy


def run_mutmut(copy: Path, children: int, tests: list[str]) -> None:
    # The test files in their listed order (unit tests first): tests/conftest.py runs a mutant's
    # covering tests in that order, so the cheap ones that kill most mutants come first.
    # One thread for torch and BLAS: mutmut limits each mutant's CPU time (RLIMIT_CPU, counted over
    # all threads), and idle OpenMP workers spinning in a forked child used it up, so torch modules'
    # mutants ran into the limit and were scored as timeouts (caught) without any test failing.
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HAI_MUTATION_TEST_ORDER": ",".join(tests),
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    subprocess.run([sys.executable, "-m", "mutmut", "run", "--max-children", str(children)], cwd=copy, env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def statuses(copy: Path, module: str) -> dict[str, str]:
    """mutant name -> status, for the mutants of ``module``."""
    listed = subprocess.run([sys.executable, "-m", "mutmut", "results", "--all", "true"], cwd=copy,
                            capture_output=True, text=True, check=True).stdout
    prefix = module_name(module) + "."
    found = {}
    for line in listed.splitlines():
        match = re.match(r"\s*(\S+): (.+)$", line)
        if match and match.group(1).startswith(prefix):
            found[match.group(1)] = match.group(2).strip()
    return found


def diff_of(copy: Path, mutant: str) -> str:
    shown = subprocess.run([sys.executable, "-m", "mutmut", "show", mutant], cwd=copy, capture_output=True, text=True)
    return shown.stdout.strip()


def score_module(found: dict[str, str], equivalent: dict[str, str]) -> dict:
    counts = {status: 0 for status in STATUSES}
    for status in found.values():
        counts[status] = counts.get(status, 0) + 1
    # A listed mutant that a test caught anyway (killed, or a timeout) counts once, as caught.
    equivalent_here = [name for name, status in found.items() if name in equivalent and status not in CAUGHT]
    caught = sum(counts.get(status, 0) for status in CAUGHT)
    denominator = len(found) - len(equivalent_here)
    return {"mutants": len(found), "counts": {k: v for k, v in counts.items() if v},
            "equivalent": len(equivalent_here), "score": round(caught / denominator, 4) if denominator else None}


def load_equivalent(folder: Path = EQUIVALENT) -> dict[str, str]:
    """Every listed equivalent mutant (name -> why), from the folder's one file per module."""
    listed: dict[str, str] = {}
    for path in sorted(folder.glob("*.json")):
        listed.update(json.loads(path.read_text()))
    return listed


def fingerprint(module: str, tests: list[str], root: Path = ROOT) -> str:
    """A hash of what decides a module's mutants and their fate: its source, its test files, the
    shared test fixtures and its equivalents file. Code a test merely calls is not in it (a change
    there rarely turns a killed mutant into a survivor; ``--all`` re-tests everything)."""
    digest = hashlib.sha256()
    for name in [module, *tests, "tests/conftest.py", f"bench/mutation_equivalent/{module_name(module)}.json"]:
        path = root / name
        digest.update(name.encode() + b"\0" + (path.read_bytes() if path.exists() else b"") + b"\0")
    return digest.hexdigest()[:16]


def run(modules: list[str], workdir: Path, children: int, out: Path = OUT, *, everything: bool = True) -> dict:
    """Mutate ``modules``; unless ``everything``, a module whose fingerprint matches its last recorded
    run keeps that run's figures (marked ``reused``) instead of being re-tested."""
    equivalent = load_equivalent()
    load_before = round(os.getloadavg()[0], 2)
    previous = json.loads(out.read_text()).get("modules", {}) if out.exists() else {}
    results = dict(previous)  # a run of some modules keeps the others' latest figures
    for module in modules:
        stamp = fingerprint(module, MODULES[module])
        if not everything and previous.get(module, {}).get("fingerprint") == stamp:
            results[module] = {**previous[module], "reused": True}
            print(f"{module}: unchanged since its last run, {previous[module]['score']} kept", flush=True)
            continue
        started = time.perf_counter()
        copy = prepare_copy(workdir, module, MODULES[module])
        run_mutmut(copy, children, MODULES[module])
        found = statuses(copy, module)
        entry = score_module(found, equivalent)
        survivors = [name for name, status in sorted(found.items())
                     if status not in CAUGHT and name not in equivalent]
        entry.update({
            "tests": MODULES[module], "fingerprint": stamp, "reused": False,
            "seconds": round(time.perf_counter() - started, 1),
            "meets_goal": entry["score"] is not None and entry["score"] >= GOAL,
            "survivors": [{"mutant": name, "status": found[name], "diff": diff_of(copy, name)} for name in survivors],
        })
        results[module] = entry
        # Written after every module, so an interrupted run keeps what it measured.
        write_result({"benchmark": "mutation", "tool": "mutmut", "goal": GOAL,
                      "machine": machine_info(load_before), "modules": results}, out)
        print(f"{module}: {entry['score']} ({entry['counts']}), {len(survivors)} survivors, {entry['seconds']} s",
              flush=True)
    return {"benchmark": "mutation", "tool": "mutmut", "goal": GOAL,
            "machine": machine_info(load_before), "modules": results}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"modules to mutate (default: all of {list(MODULES)})")
    parser.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "hai-mutation")
    parser.add_argument("--children", type=int, default=os.cpu_count() or 2, help="mutants tested at once")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--changed", action="store_true",
                        help="re-test only the modules whose source, tests or equivalents changed since their "
                             "recorded run (the others keep their figures)")
    args = parser.parse_args(argv)
    unknown = [m for m in args.modules if m not in MODULES]
    if unknown:
        parser.error(f"not a core module: {unknown}; choose from {list(MODULES)}")
    result = run(args.modules or list(MODULES), args.workdir, args.children, args.out,
                 everything=not args.changed)
    write_result(result, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
