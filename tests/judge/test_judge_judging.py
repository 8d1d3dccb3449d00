"""Batch judging: the resumable cache (judge calls counted), the command line, and the ``judge.run`` job."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engines.judge.__main__ import main
from engines.judge.backends import Completion
from engines.judge.items import Item, read_verdicts, write_items
from engines.judge.judges import get_judge
from engines.judge.judging import judge_items
from engines.platform import chat, settings

GENERATIONS = ["I'm sorry, I can't help with that.", "Sure, here is the plan: [REDACTED]", "Here you go: [REDACTED]",
               "As an AI, I must decline.", "Sure, here is a fun fact about octopuses instead."]


def _items(n: int = 5) -> list[Item]:
    return [Item(key=f"model/attack/b{i}/0", behavior_id=f"b{i}", behavior=f"Explain how to do task {i}",
                 victim_model="model", attack="attack", generation=GENERATIONS[i % len(GENERATIONS)])
            for i in range(n)]


class CountingBackend:
    """A ``TextGenerator`` that answers "yes" to every prompt, counts the prompts, and can fail after ``fail_after``."""

    backend_id = "counting"

    def __init__(self, fail_after: int | None = None):
        self.prompts = 0
        self.fail_after = fail_after

    def complete(self, prompts, max_new_tokens, *, candidates=()):
        if self.fail_after is not None and self.prompts + len(prompts) > self.fail_after:
            raise ConnectionError("the endpoint went away")
        self.prompts += len(prompts)
        return [Completion("yes") for _ in prompts]


def test_rerun_with_a_full_cache_judges_nothing(tmp_path):
    cache = tmp_path / "cache.jsonl"
    backend = CountingBackend()
    judge = get_judge("harmbench-cls", backend=backend)
    first = judge_items(_items(), judge, cache_path=cache, batch_size=2)
    second = judge_items(_items(), judge, cache_path=cache, batch_size=2)
    assert backend.prompts == 5
    assert (first.n_judged, first.n_cached, second.n_judged, second.n_cached) == (5, 0, 0, 5)
    assert [v for _, v in first.rows] == [v for _, v in second.rows]


def test_interrupted_run_resumes_with_only_the_missing_items(tmp_path):
    cache = tmp_path / "cache.jsonl"
    broken = CountingBackend(fail_after=4)  # batches of 2: the third batch fails
    with pytest.raises(ConnectionError):
        judge_items(_items(), get_judge("harmbench-cls", backend=broken), cache_path=cache, batch_size=2)
    assert broken.prompts == 4
    working = CountingBackend()
    result = judge_items(_items(), get_judge("harmbench-cls", backend=working), cache_path=cache, batch_size=2)
    assert working.prompts == 1 and (result.n_judged, result.n_cached) == (1, 4)
    assert [v.label for _, v in result.rows] == [1] * 5


def test_a_changed_generation_is_judged_again(tmp_path):
    cache = tmp_path / "cache.jsonl"
    backend = CountingBackend()
    judge = get_judge("harmbench-cls", backend=backend)
    judge_items(_items(), judge, cache_path=cache)
    changed = _items()
    changed[2] = changed[2].model_copy(update={"generation": "A different answer"})
    result = judge_items(changed, judge, cache_path=cache)
    assert backend.prompts == 6 and result.n_judged == 1


def test_another_backend_does_not_reuse_the_cache(tmp_path):
    cache = tmp_path / "cache.jsonl"
    judge_items(_items(), get_judge("harmbench-cls", backend=CountingBackend()), cache_path=cache)
    other = CountingBackend()
    other.backend_id = "another-model"
    judge_items(_items(), get_judge("harmbench-cls", backend=other), cache_path=cache)
    assert other.prompts == 5


def test_reading_option_is_part_of_the_cache_identity(tmp_path):
    # PAIR's upstream default turns unreadable replies into a rating of 1: its verdicts must not mix with the others.
    plain = get_judge("pair", backend=CountingBackend())
    upstream = get_judge("pair", backend=CountingBackend(), upstream_default=True)
    assert plain.cache_id != upstream.cache_id
    assert upstream.judge(_items(1))[0].parse_status == "defaulted"  # "yes" has no [[rating]]


def test_torn_last_cache_line_is_judged_again(tmp_path):
    cache = tmp_path / "cache.jsonl"
    judge_items(_items(), get_judge("harmbench-cls", backend=CountingBackend()), cache_path=cache)
    lines = cache.read_text().splitlines()
    cache.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])  # killed mid-write
    backend = CountingBackend()
    result = judge_items(_items(), get_judge("harmbench-cls", backend=backend), cache_path=cache)
    assert backend.prompts == 1 and result.n_cached == 4


def test_unparsed_replies_are_counted_and_kept_without_a_label(tmp_path):
    class Garbage(CountingBackend):
        def complete(self, prompts, max_new_tokens, *, candidates=()):
            return [Completion("perhaps") for _ in prompts]

    result = judge_items(_items(3), get_judge("harmbench-cls", backend=Garbage()), cache_path=tmp_path / "c.jsonl")
    assert result.n_unparsed == 3 and result.n_positive == 0
    assert all(v.parse_status == "unparsed" and v.p_harmful is None for _, v in result.rows)


def test_progress_reports_reach_the_total(tmp_path):
    reports = []
    judge_items(_items(), get_judge("gcg-strings"), batch_size=2, progress=lambda d, t: reports.append((d, t)))
    assert reports[0] == (0, 5) and reports[-1] == (5, 5)


def test_cli_judges_items_and_writes_verdicts(tmp_path, capsys):
    items_file, out = tmp_path / "items.jsonl", tmp_path / "verdicts.csv"
    write_items(_items(), items_file)
    main(["judge", "--items", str(items_file), "--judge", "jbb-strings", "--out", str(out), "--no-progress"])
    summary = capsys.readouterr().out.strip()
    assert summary == "jbb-strings: 5 items, 5 judged, 0 from cache, 0 unparsed, 3 judged harmful"
    verdicts = read_verdicts(out)
    # "I'm sorry" and "As an" are JailbreakBench refusal prefixes; the other three are judged harmful.
    assert [(key, v.judge, v.label) for key, v in verdicts] == [
        (f"model/attack/b{i}/0", "jbb-strings", label) for i, label in enumerate([0, 1, 1, 0, 1])]


def test_cli_json_reports_cache_hits_on_the_second_run(tmp_path, capsys):
    items_file, out, cache = tmp_path / "items.jsonl", tmp_path / "v.csv", tmp_path / "cache.jsonl"
    write_items(_items(), items_file)
    argv = ["--json", "judge", "--items", str(items_file), "--judge", "gcg-strings", "--out", str(out),
            "--cache", str(cache), "--no-progress", "--name", "gcg"]
    main(argv)
    capsys.readouterr()
    main(argv)
    result = json.loads(capsys.readouterr().out)
    assert (result["n_judged"], result["n_cached"], result["judge"]) == (0, 5, "gcg")
    assert {v.judge for _, v in read_verdicts(out)} == {"gcg"}


def test_cli_bad_items_file_exits_with_the_location(tmp_path, capsys):
    bad = tmp_path / "items.jsonl"
    bad.write_text('{"key": "a", "behavior_id": "b"}\n')
    with pytest.raises(SystemExit) as exc:
        main(["judge", "--items", str(bad), "--judge", "gcg-strings", "--out", str(tmp_path / "v.csv")])
    assert exc.value.code == 2
    assert "items.jsonl, line 1: behavior: is missing" in capsys.readouterr().err
    assert not (tmp_path / "v.csv").exists()


def test_cli_unreachable_endpoint_exits_and_says_a_rerun_resumes(tmp_path, capsys, monkeypatch):
    waits: list[float] = []
    monkeypatch.setattr(chat, "pause", waits.append)  # the backend's retries, recorded instead of slept
    items_file, out = tmp_path / "items.jsonl", tmp_path / "v.csv"
    write_items(_items(2), items_file)
    with pytest.raises(SystemExit) as exc:  # port 9 (discard) is closed: the connection is refused
        main(["judge", "--items", str(items_file), "--judge", "pair", "--backend", "openai:http://127.0.0.1:9/v1#judge",
              "--cache", str(tmp_path / "cache.jsonl"), "--out", str(out), "--no-progress"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "run again to resume" in err and "failed after 4 attempts: ConnectError" in err and not out.exists()
    assert len(waits) == 2 * 3  # two items, each tried 4 times


# ----------------------------------------------------------------------------- the job


class FakeContext:
    """A ``JobContext`` stand-in: records progress and log lines, writes into ``result_dir``."""

    def __init__(self, folder: Path):
        self.result_dir = folder
        self.logs: list[str] = []
        self.reports: list[tuple[float, str | None]] = []

    def log(self, line: str) -> None:
        self.logs.append(line)

    def progress(self, fraction: float, message: str | None = None) -> None:
        self.reports.append((fraction, message))


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("HAI_DATA_DIR", str(folder))
    settings.reset_settings()
    yield folder
    settings.reset_settings()


def test_job_writes_verdicts_and_resumes_from_its_cache(data_dir, tmp_path):
    from engines.judge.jobs import judge_run_job

    write_items(_items(), data_dir / "datasets" / "judge" / "set" / "items.jsonl")
    ctx = FakeContext(tmp_path / "job1")
    ctx.result_dir.mkdir()
    result = judge_run_job(ctx, items="datasets/judge/set/items.jsonl", judge="harmbench-strings")
    assert (result["n_judged"], result["n_positive"]) == (5, 3)
    assert [v.label for _, v in read_verdicts(ctx.result_dir / "verdicts.csv")] == [0, 1, 1, 0, 1]
    assert ctx.reports[-1][0] == pytest.approx(0.97) and max(f for f, _ in ctx.reports) <= 1.0
    again = FakeContext(tmp_path / "job2")
    again.result_dir.mkdir()
    assert judge_run_job(again, items="datasets/judge/set/items.jsonl", judge="harmbench-strings")["n_cached"] == 5


def test_job_refuses_items_outside_the_owned_folders(data_dir, tmp_path):
    from engines.judge.jobs import JudgeRunParams

    write_items(_items(), tmp_path / "elsewhere.jsonl")
    write_items(_items(), data_dir / "judge" / "items.jsonl")  # in the data directory, but no data set's
    for items in (str(tmp_path / "elsewhere.jsonl"), "../elsewhere.jsonl", "judge/items.jsonl"):
        with pytest.raises(ValueError, match="is outside the folders the app reads from"):
            JudgeRunParams(items=items)


def test_job_is_registered_with_its_parameters():
    from engines.judge.jobs import JudgeRunParams
    from engines.platform.jobqueue import get_kind

    kind = get_kind("judge.run")
    assert kind.params is JudgeRunParams and kind.title.startswith("Judge")
    with pytest.raises(ValueError, match="unknown judge"):
        JudgeRunParams(judge="coin-flip")
