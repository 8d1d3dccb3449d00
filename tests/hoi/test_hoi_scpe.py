"""SCPE end to end with deterministic stub roles: what the playbook learns from, the prompt and
seed of every video, the frames sampled and the one selected, retries, traces and the files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from PIL import Image

from engines.hoi.benchmark import ANNOTATION_FILES, load_benchmark
from engines.hoi.playbook import Playbook, load_playbook
from engines.hoi.roles import TABLES, EnhancedPrompt, FrameChoice, Insight, PlaybookOperation, VideoReport
from engines.hoi.scpe import (
    WRAP_PREFIX,
    WRAP_SUFFIX,
    SCPEConfig,
    run_scpe,
    uniform_indices,
    wrap_prompt,
)
from engines.hoi.scpe_cli import add_scpe_arguments, read_role_config, run_scpe_command

LESSON = "Make the hand reach the object before the motion ends."
KEYS = ("pick.jpg", "drop.png", "wave.jpg")  # "pick" passes the stub analyzer, the others fail


def _item(instruction: str) -> dict:
    return {"instruction": instruction, "object": "cup", "subject_bounding_box": [0, 0, 4, 8],
            "object_bounding_box": [4, 4, 8, 8], "generated_question": "Is the cup held?",
            "tags_v6": "L1-interaction-relation_occur"}


def make_benchmark(root: Path, keys=KEYS):
    (root / "images" / "L1L2").mkdir(parents=True)
    for key in keys:
        Image.new("RGB", (8, 8), (200, 10, 10)).save(root / "images" / "L1L2" / key, format="PNG")
    annotations = {key: _item(f"{Path(key).stem} the cup") for key in keys}
    (root / ANNOTATION_FILES["L1L2"]).write_text(json.dumps(annotations), encoding="utf-8")
    return load_benchmark(root)


class StubI2V:
    """Frame i of a video is one colour: red = i, green = the seed (so a saved frame says which it was)."""

    name = "stub-i2v"

    def __init__(self, fail: bool = False):
        self.calls: list[tuple[str, int, int]] = []
        self.fail = fail

    def generate(self, image, prompt, *, num_frames=17, seed=0):
        self.calls.append((prompt, seed, num_frames))
        if self.fail:
            raise RuntimeError("the GPU box is down")
        return [Image.new("RGB", (8, 8), (i, seed % 256, 0)) for i in range(num_frames)]


class StubJudge:
    """Success when the prompt holds the lesson or the instruction is "pick ..." (or per ``verdicts``)."""

    name = "stub-judge"

    def __init__(self, select=3, verdicts=None):
        self.select, self.verdicts = select, list(verdicts or [])
        self.analyzed: list[tuple[str, str, int]] = []
        self.shown: list[int] = []

    def analyze_video(self, image, frames, instruction, prompt):
        self.analyzed.append((instruction, prompt, len(frames)))
        if self.verdicts:
            return VideoReport(success=self.verdicts.pop(0), critique="scripted")
        success = instruction.startswith("pick") or LESSON in prompt
        return VideoReport(success=success, critique="" if success else "the hand never reaches the cup")

    def select_frame(self, frames, instruction):
        self.shown.append(len(frames))
        if isinstance(self.select, Exception):
            raise self.select
        return FrameChoice(best_frame_index=self.select, strict_pass=True, selection_mode="earliest_pass",
                           match_score=0.9, question="Is the cup held?")


class StubRefiner:
    name = "stub-refiner"

    def __init__(self):
        self.seen_playbooks: list[str] = []
        self.reflected: list[str] = []

    def generate(self, image, instruction, playbook_text):
        self.seen_playbooks.append(playbook_text)
        rule = LESSON if LESSON in playbook_text else "no rule"
        return EnhancedPrompt(enhanced_prompt=f"{instruction}. {rule}", reasoning="stub")

    def reflect(self, report, prompt, instruction):
        self.reflected.append(instruction)
        return Insight(root_cause=report.critique, key_insight="the motion stops early")

    def curate(self, insight, playbook_text):
        return [PlaybookOperation("strategies", LESSON)]


def _run(tmp_path, *, config=None, judge=None, i2v=None, refiner=None, playbook=None, progress=None, keys=KEYS):
    bench = make_benchmark(tmp_path / "bench", keys)
    roles = (i2v or StubI2V(), judge or StubJudge(), refiner or StubRefiner())
    result = run_scpe(bench, bench.items("L1L2"), *roles, config or SCPEConfig(epochs=1, num_frames=5),
                      tmp_path / "out", playbook=playbook if playbook is not None else Playbook(), progress=progress)
    return result, roles


def _trace(tmp_path, key, method="scpe") -> dict:
    return json.loads((tmp_path / "out" / f"{method}_traces" / "L1L2" / f"{Path(key).stem}.json").read_text())


# ---------------------------------------------------------------- sampling and the wrap


def test_fifteen_frames_of_81_are_upstreams_truncated_linspace():
    # 80 * i / 14 truncated, by hand: 0, 5.71, 11.43, 17.14, 22.86, 28.57, 34.29, 40, 45.71, ...
    assert uniform_indices(81, 15) == [0, 5, 11, 17, 22, 28, 34, 40, 45, 51, 57, 62, 68, 74, 80]


def test_a_video_shorter_than_fifteen_frames_is_shown_whole():
    assert uniform_indices(9, 15) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    # 15 * i / 14 truncated: every frame but 14, the last one kept.
    assert uniform_indices(16, 15) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15]
    with pytest.raises(ValueError, match="at least one frame"):
        uniform_indices(0)


def test_the_wrap_is_upstreams():
    assert wrap_prompt("  The person lifts the cup. ") == (
        "The camera is fixed and the person is the only one in the frame. The person lifts the cup. "
        "With no other person's additional movements.")


# ---------------------------------------------------------------- learning


def test_a_failed_analysis_teaches_the_playbook_and_a_success_does_not(tmp_path):
    result, (i2v, judge, refiner) = _run(tmp_path)
    assert refiner.reflected == ["drop the cup", "wave the cup"]  # "pick" passed
    assert result.playbook.strategies == [LESSON]  # added once, the second time already present
    [epoch] = result.epochs
    assert (epoch.passed, epoch.learned, epoch.no_new_rule, epoch.added) == (1, 1, 1, 1)
    saved = load_playbook(tmp_path / "out" / "playbook.json")
    assert saved.strategies == [LESSON]
    passed, failed = _trace(tmp_path, "pick.jpg")["epochs"][0], _trace(tmp_path, "drop.png")["epochs"][0]
    assert passed["status"] == "ok_pass" and set(passed["stages"]) == {"i2v", "analysis"}
    assert failed["status"] == "ok_learned"
    assert {"analysis", "reflector", "curator", "merge"} <= set(failed["stages"])
    assert failed["stages"]["reflector"]["output"]["key_insight"] == "the motion stops early"
    assert failed["stages"]["curator"]["output"]["operations"][0]["content"] == LESSON
    assert failed["stages"]["merge"]["output"]["updated"] is True
    assert _trace(tmp_path, "wave.jpg")["epochs"][0]["status"] == "ok_fail_no_new_rule"
    for key in ("image_name", "status", "inputs", "stages"):
        assert key in failed


def test_epoch_zero_films_the_bare_instruction_and_later_epochs_the_playbooks_prompt(tmp_path):
    _, (i2v, judge, refiner) = _run(tmp_path, config=SCPEConfig(epochs=2, num_frames=5))
    prompts = [prompt for prompt, _, _ in i2v.calls]
    assert prompts[:3] == [wrap_prompt(f"{Path(k).stem} the cup") for k in KEYS]  # epoch 0
    assert prompts[3:6] == [wrap_prompt(f"{Path(k).stem} the cup. {LESSON}") for k in KEYS]  # epoch 1
    # The analyzer is told upstream's "N/A (Original Video)" for epoch 0's videos.
    assert [prompt for _, prompt, _ in judge.analyzed[:3]] == ["N/A (Original Video)"] * 3
    assert len(refiner.seen_playbooks) == 6  # generate is not asked in epoch 0: 3 in epoch 1, 3 final


def test_epoch_zero_learns_from_a_baseline_methods_strips_without_generating(tmp_path):
    bench_root = tmp_path / "bench"
    bench = make_benchmark(bench_root)
    for key in KEYS:
        strip = bench_root / "wan22_strips" / "L1L2" / Path(key).stem
        strip.mkdir(parents=True)
        for n in range(4):
            Image.new("RGB", (8, 8), (n, 0, 0)).save(strip / f"frame_{n:02d}.png")
    i2v, judge = StubI2V(), StubJudge()
    run_scpe(bench, bench.items("L1L2"), i2v, judge, StubRefiner(),
             SCPEConfig(epochs=1, num_frames=5, baseline_method="wan22"), tmp_path / "out", playbook=Playbook())
    assert len(i2v.calls) == 3  # the final pass only
    assert [n for _, _, n in judge.analyzed[:3]] == [4, 4, 4]  # the baseline's 4 frames each


def test_the_final_pass_prompts_with_the_learned_playbook(tmp_path):
    result, (i2v, judge, refiner) = _run(tmp_path)
    final_prompts = [prompt for prompt, _, _ in i2v.calls[3:]]
    assert all(LESSON in text for text in refiner.seen_playbooks)
    assert final_prompts == [wrap_prompt(f"{Path(k).stem} the cup. {LESSON}") for k in KEYS]
    assert all(p.startswith(WRAP_PREFIX) and p.endswith(WRAP_SUFFIX) for p in final_prompts)
    trace = _trace(tmp_path, "drop.png")
    assert trace["prompt"]["enhanced_prompt"] == f"drop the cup. {LESSON}"
    assert trace["status"] == "ok_pass" and {"generator", "i2v", "analysis"} == set(trace["stages"])


def test_the_caller_s_playbook_is_left_as_it_was(tmp_path):
    seed = Playbook(strategies=["Keep the camera still."])
    result, _ = _run(tmp_path, playbook=seed)
    assert seed.strategies == ["Keep the camera still."]
    assert result.playbook.strategies == ["Keep the camera still.", LESSON]


# ---------------------------------------------------------------- seeds, frames and selection


def test_item_idx_is_generated_with_seed_base_plus_idx_in_every_pass(tmp_path):
    _, (i2v, _, _) = _run(tmp_path, config=SCPEConfig(epochs=1, num_frames=5, seed=100))
    assert [seed for _, seed, _ in i2v.calls] == [100, 101, 102, 100, 101, 102]
    assert _trace(tmp_path, "wave.jpg")["prompt"]["seed"] == 102


def test_the_selected_frame_is_the_one_written_and_the_strip_holds_the_sampled_frames(tmp_path):
    result, (_, judge, _) = _run(tmp_path, config=SCPEConfig(epochs=0, num_frames=81, seed=7),
                                 judge=StubJudge(select=3), keys=("pick.jpg",))
    out = tmp_path / "out"
    frame_path = out / "scpe_frames" / "L1L2" / "pick.jpg"  # the key's own name
    assert result.items[0].frame_path == frame_path and judge.shown == [15]
    with Image.open(frame_path) as frame:
        assert frame.format == "PNG" and frame.getpixel((0, 0)) == (17, 7, 0)  # video frame 17 = sample 3
    strip = sorted((out / "scpe_strips" / "L1L2" / "pick").glob("*.png"))
    assert [p.name for p in strip] == [f"frame_{n:02d}.png" for n in range(15)]
    with Image.open(strip[14]) as last:
        assert last.getpixel((0, 0))[0] == 80
    selection = _trace(tmp_path, "pick.jpg")["selection"]
    assert selection["best_frame_index"] == 3 and selection["frame_index"] == 17 and not selection["fallback"]
    assert selection["selection_mode"] == "earliest_pass" and selection["question"] == "Is the cup held?"


@pytest.mark.parametrize(("select", "mode"), [(RuntimeError("call 2 failed"), "fallback"),
                                              (15, "invalid_index_fallback"), (-1, "invalid_index_fallback")])
def test_the_first_frame_is_kept_when_the_selector_fails(tmp_path, select, mode):
    _run(tmp_path, config=SCPEConfig(epochs=0, num_frames=81), judge=StubJudge(select=select), keys=("pick.jpg",))
    with Image.open(tmp_path / "out" / "scpe_frames" / "L1L2" / "pick.jpg") as frame:
        assert frame.getpixel((0, 0))[0] == 0
    selection = _trace(tmp_path, "pick.jpg")["selection"]
    assert selection["best_frame_index"] == 0 and selection["selection_mode"] == mode
    assert selection["fallback"] is True and selection["error"]


# ---------------------------------------------------------------- retries


def test_with_one_try_a_failing_video_is_kept_as_upstream(tmp_path):
    result, (i2v, _, refiner) = _run(tmp_path, config=SCPEConfig(epochs=0, num_frames=5), keys=("drop.png",))
    assert result.items[0].status == "ok_fail" and result.items[0].tries == 1 and len(i2v.calls) == 1
    assert refiner.reflected == []  # nothing learned in the final pass without a retry
    assert result.items[0].written


def test_retries_stop_at_the_first_success(tmp_path):
    judge = StubJudge(verdicts=[False, True, False])
    result, (i2v, _, refiner) = _run(tmp_path, config=SCPEConfig(epochs=0, num_frames=5, seed=10, retries=3),
                                     judge=judge, keys=("drop.png",))
    [item] = result.items
    assert item.status == "ok_pass" and item.tries == 2 and item.seed == 11  # 10 + idx 0 + try 1 * 1 item
    assert [seed for _, seed, _ in i2v.calls] == [10, 11]
    trace = _trace(tmp_path, "drop.png")
    assert {"analysis", "reflector", "curator", "merge"} <= set(trace["tries"][0]["stages"])
    # The retry reads the lesson its failure taught; the learned playbook file does not change.
    assert LESSON in refiner.seen_playbooks[1] and LESSON not in refiner.seen_playbooks[0]
    assert load_playbook(tmp_path / "out" / "playbook.json").strategies == []


def test_retries_stop_at_r_when_every_video_fails(tmp_path):
    judge = StubJudge(verdicts=[False] * 6)
    result, (i2v, _, refiner) = _run(tmp_path, config=SCPEConfig(epochs=0, num_frames=5, seed=0, retries=3),
                                     judge=judge, keys=("drop.png", "wave.jpg"))
    assert [item.tries for item in result.items] == [3, 3]
    assert [item.status for item in result.items] == ["ok_fail", "ok_fail"]
    # Seeds: base + idx + try * (2 items); no two videos share one.
    assert [seed for _, seed, _ in i2v.calls] == [0, 2, 4, 1, 3, 5]
    assert len(refiner.reflected) == 4  # the last try of each has nothing left to correct


# ---------------------------------------------------------------- failures, files, progress


def test_an_i2v_failure_is_recorded_and_leaves_no_frame(tmp_path):
    out_frame = tmp_path / "out" / "scpe_frames" / "L1L2" / "pick.jpg"
    out_frame.parent.mkdir(parents=True)
    out_frame.write_bytes(b"an earlier run's frame")
    result, _ = _run(tmp_path, config=SCPEConfig(epochs=1, num_frames=5), i2v=StubI2V(fail=True),
                     keys=("pick.jpg",))
    assert result.items[0].status == "failed_i2v" and not out_frame.exists()
    trace = _trace(tmp_path, "pick.jpg")
    assert trace["stages"]["i2v"]["error"] == "RuntimeError: the GPU box is down"
    assert trace["epochs"][0]["status"] == "failed_i2v" and trace["selection"] is None


def test_an_item_without_its_image_is_skipped(tmp_path):
    bench = make_benchmark(tmp_path / "bench")
    (tmp_path / "bench" / "images" / "L1L2" / "wave.jpg").unlink()
    bench = load_benchmark(tmp_path / "bench")
    result = run_scpe(bench, bench.items("L1L2"), StubI2V(), StubJudge(), StubRefiner(),
                      SCPEConfig(epochs=1, num_frames=5), tmp_path / "out", playbook=Playbook())
    assert [item.status for item in result.items][2] == "skipped_no_image"
    assert result.counts()["written"] == 2 and result.epochs[0].skipped == 1


def test_progress_counts_every_item_of_every_pass_and_the_run_is_recorded(tmp_path):
    calls = []
    result, _ = _run(tmp_path, config=SCPEConfig(epochs=2, num_frames=5, method_name="scpe_small", limit=2),
                     progress=lambda done, total, message: calls.append((done, total, message)))
    assert [(done, total) for done, total, _ in calls] == [(n, 6) for n in range(1, 7)]
    assert calls[0][2].startswith("learning epoch 1/2: L1L2/pick.jpg") and calls[-1][2].startswith("final: ")
    run = json.loads((tmp_path / "out" / "scpe_run.json").read_text())
    assert run["method"] == "scpe_small" and run["config"]["epochs"] == 2 and run["counts"]["items"] == 2
    assert run["roles"] == {"i2v": "stub-i2v", "judge": "stub-judge", "refiner": "stub-refiner"}
    assert (tmp_path / "out" / "scpe_small_traces" / "L1L2" / "drop.json").is_file()
    assert set(run["seconds"]) == {"learning", "final", "total"}


@pytest.mark.parametrize(("options", "words"), [({"epochs": -1}, "epochs"), ({"retries": 0}, "retries"),
                                                ({"limit": 0}, "limit"), ({"method_name": "../x"}, "method_name"),
                                                ({"baseline_method": ""}, "baseline_method")])
def test_a_bad_config_is_refused_naming_the_field(options, words):
    with pytest.raises(ValueError, match=words):
        SCPEConfig(**options)


# ---------------------------------------------------------------- command line


def test_the_command_reads_the_i2v_config_and_writes_the_method(dataset, monkeypatch):
    tmp_path = dataset.parent
    make_benchmark(tmp_path / "bench")
    made = {}

    def i2v_factory(**options):
        made.update(options)
        return StubI2V()

    monkeypatch.setitem(TABLES.i2v, "stub", i2v_factory)
    monkeypatch.setitem(TABLES.judges, "stub", StubJudge)
    monkeypatch.setitem(TABLES.refiners, "stub", StubRefiner)
    config = tmp_path / "i2v.json"
    config.write_text(json.dumps({"role": "stub", "url": "http://gpu-box:7860"}))
    parser = argparse.ArgumentParser()
    add_scpe_arguments(parser)
    args = parser.parse_args(["--benchmark", str(tmp_path / "bench"), "--i2v", str(config), "--out",
                              str(tmp_path / "bench"), "--judge", "stub", "--refiner", "stub", "--limit", "2",
                              "--method", "scpe_demo", "--num-frames", "5", "--no-progress"])
    result = run_scpe_command(args)
    assert made == {"url": "http://gpu-box:7860"}
    assert result["counts"]["written"] == 2
    assert result["summary"].startswith("SCPE scpe_demo: 2/2 frames written")
    assert (tmp_path / "bench" / "scpe_demo_frames" / "L1L2" / "drop.png").is_file()
    run = json.loads((tmp_path / "bench" / "scpe_run.json").read_text())
    assert run["benchmark"] == "datasets/hoi/bench"  # relative to the data folder: no path of this machine


@pytest.mark.parametrize("which", ["i2v", "out", "playbook"])
def test_the_command_refuses_files_and_outputs_outside_the_owned_folders(dataset, tmp_path, monkeypatch, which):
    from engines.platform.files import FileRefused

    make_benchmark(dataset)
    monkeypatch.setitem(TABLES.i2v, "stub", lambda **options: StubI2V())
    inside, outside = dataset / "i2v.json", tmp_path / "i2v.json"
    for path in (inside, outside):
        path.write_text(json.dumps({"role": "stub"}))
    (tmp_path / "playbook.json").write_text("{}")
    argv = {"i2v": ["--i2v", str(outside), "--out", str(dataset / "run")],
            "out": ["--i2v", str(inside), "--out", str(tmp_path / "run")],
            "playbook": ["--i2v", str(inside), "--out", str(dataset / "run"), "--playbook", str(tmp_path / "playbook.json")]}
    parser = argparse.ArgumentParser()
    add_scpe_arguments(parser)
    with pytest.raises(FileRefused, match=f"--{which}: .* is outside the folders the app"):
        run_scpe_command(parser.parse_args(["--benchmark", str(dataset), *argv[which], "--no-progress"]))
    assert not (tmp_path / "run").exists() and not (dataset / "run").exists()


@pytest.mark.parametrize(("text", "words"), [("[1]", "expected a JSON object"), ('{"url": "x"}', '"role"'),
                                             ("{", "not valid JSON")])
def test_a_bad_i2v_config_is_named(tmp_path, text, words):
    path = tmp_path / "i2v.json"
    path.write_text(text)
    with pytest.raises(ValueError, match=words) as raised:
        read_role_config(path)
    assert "i2v.json" in str(raised.value)
