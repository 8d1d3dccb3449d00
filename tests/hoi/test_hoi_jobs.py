"""The HOI-Edit jobs in the queue: HOI-Eval of a method's edits (records the page reads), SCPE with
the offline roles then HOI-Eval of its frames, both writing only into the job's result folder (the
benchmark and the shipped assets are read, never written); and parameters refused at submission
with what is wrong: a folder the app does not own, an undeclared API-key variable, an endpoint on
a host the server does not allow."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from engines.hoi import browse
from engines.hoi.jobs import EVALUATE, SCPE, hoi_jobs, jobs_frame, result_layers
from engines.hoi.offline.demo import DEMO_DIR
from engines.platform import jobqueue
from engines.platform.settings import REPO_ROOT

pytestmark = pytest.mark.skipif(not DEMO_DIR.is_dir(), reason="the shipped demo is written by "
                                "`python -m engines.hoi demo`")
ASSETS = REPO_ROOT / "assets"


@pytest.fixture()
def demo(sqlite_db, data_dir):
    """A copy of the shipped demo registered as a data set: ``datasets/hoi/demo``."""
    root = data_dir / "datasets" / "hoi" / "demo"
    shutil.copytree(DEMO_DIR, root)
    return root


def assets_listing() -> dict[str, tuple[int, int]]:
    """Every file under assets/ with its size and modification time."""
    return {str(p.relative_to(ASSETS)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(ASSETS.rglob("*")) if p.is_file()}


def test_an_evaluation_job_writes_records_the_page_scores(demo):
    (demo / "records" / "offline-faithful.json").unlink()
    job_id = jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "offline-faithful", "limit": 3})
    assert jobqueue.get_job(job_id).params["benchmark"] == "datasets/hoi/demo"  # no path of this machine
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    assert not (demo / "records" / "offline-faithful.json").exists()  # the benchmark is only read
    records = json.loads((jobqueue.job_dir(job_id) / "records" / "offline-faithful.json").read_text())
    assert len(records["L1L2"]) + len(records.get("L3", {})) == 3
    assert job.result["summary"].startswith("offline-faithful: 3 item(s) judged")
    assert "offline-faithful" not in browse.open_workspace(demo).scores
    assert result_layers(demo) == [jobqueue.job_dir(job_id)]
    assert "offline-faithful" in browse.open_workspace(demo, result_layers(demo)).scores
    assert [j.id for j in hoi_jobs()] == [job_id]
    assert list(jobs_frame(hoi_jobs())["job"]) == ["evaluate offline-faithful (judge offline)"]


def test_a_benchmarks_run_stays_listed_behind_many_newer_runs_of_another_benchmark(demo):
    """The page layers every run of the benchmark it shows, however many runs of other benchmarks
    came after (they used to be filtered out of the newest 500 jobs of the area, so older runs vanished)."""
    from engines.platform.db import write_transaction
    from engines.platform.models import Job

    with write_transaction() as session:
        ours = Job(kind=EVALUATE, params={"benchmark": "datasets/hoi/demo", "method": "m"})
        session.add(ours)
        session.flush()
        ours_id = ours.id
        session.add_all([Job(kind=SCPE, params={"benchmark": "datasets/hoi/other", "method": "m"})
                         for _ in range(520)])
    jobqueue.job_dir(ours_id).mkdir(parents=True)
    assert result_layers(demo) == [jobqueue.job_dir(ours_id)]


def test_an_scpe_job_adds_a_method_with_frames_traces_and_scores(demo):
    job_id = jobqueue.submit_job(SCPE, {"benchmark": "datasets/hoi/demo", "limit": 2, "method": "scpe-job",
                                        "epochs": 0})
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    job = jobqueue.get_job(job_id)
    assert job.result["counts"]["written"] == 2
    assert not (demo / "scpe-job_frames").exists() and (jobqueue.job_dir(job_id) / "scpe-job_frames").is_dir()
    run = json.loads((jobqueue.job_dir(job_id) / "scpe_run.json").read_text())
    assert run["benchmark"] == "datasets/hoi/demo"
    workspace = browse.open_workspace(demo, result_layers(demo))
    assert "scpe-job" in workspace.methods and "scpe-job" in workspace.scores
    assert workspace.methods["scpe-job"].kind == "i2v" and workspace.methods["scpe-job"].offline
    first = workspace.benchmark.items()[0]
    view = browse.item_view(workspace, first.split, first.key, ["scpe-job"])
    assert len(view.outputs[0].strip) == 15 and view.outputs[0].trace is not None
    # A later evaluation of the SCPE method finds its frames in the SCPE job's folder.
    again = jobqueue.submit_job(EVALUATE, {"benchmark": "datasets/hoi/demo", "method": "scpe-job"})
    assert jobqueue.run_job(again) == "succeeded", jobqueue.get_job(again).error
    rest = len(workspace.benchmark.items()) - 2  # the two judged by the SCPE job are kept; the rest have no edit
    assert jobqueue.get_job(again).result["summary"].startswith(
        f"scpe-job: {rest} item(s) judged, 2 kept from before, {rest} without an output")


@pytest.mark.parametrize("kind", [EVALUATE, SCPE])
def test_quick_jobs_on_the_shipped_demo_leave_the_assets_unchanged(sqlite_db, kind):
    before = assets_listing()
    params = {"benchmark": "shipped/hoi/demo", "method": "offline-drift", "limit": 2} if kind == EVALUATE else \
        {"benchmark": str(DEMO_DIR), "method": "scpe-quick", "limit": 1, "epochs": 0}
    job_id = jobqueue.submit_job(kind, params)
    assert jobqueue.get_job(job_id).params["benchmark"] == "shipped/hoi/demo"
    assert jobqueue.run_job(job_id) == "succeeded", jobqueue.get_job(job_id).error
    assert assets_listing() == before
    assert any((jobqueue.job_dir(job_id) / "records").glob("*.json"))


def _outside(where: str, data_dir: Path, demo: Path, tmp_path: Path) -> str:
    """A benchmark folder (a readable copy of the demo's annotations) the app does not own."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    for name in demo.glob("collected_*.json"):
        shutil.copy(name, elsewhere / name.name)
    link = data_dir / "datasets" / "hoi" / "link"
    if not link.exists():
        link.symlink_to(elsewhere, target_is_directory=True)
    return {"/etc": "/etc", "data dir": str(data_dir), "dotdot": "datasets/hoi/../../../elsewhere",
            "link out": str(link), "elsewhere": str(elsewhere), "shipped root": "shipped"}[where]


@pytest.mark.parametrize("kind", [EVALUATE, SCPE])
@pytest.mark.parametrize("where", ["/etc", "data dir", "dotdot", "link out", "elsewhere", "shipped root"])
def test_a_benchmark_outside_the_owned_folders_is_refused_at_submission(demo, data_dir, tmp_path, kind, where):
    folder = _outside(where, data_dir, demo, tmp_path)
    with pytest.raises(jobqueue.JobError, match="benchmark: .*(is outside the folders the app reads from|is not a)"):
        jobqueue.submit_job(kind, {"benchmark": folder, "method": "offline-faithful"})
    assert jobqueue.list_jobs() == []


@pytest.mark.parametrize(("params", "message"), [
    ({"benchmark": "/nowhere", "method": "m"}, "is outside the folders"),
    ({"method": "../escape"}, r"method must be 1 to 64 letters, digits or _\.\+- starting with a letter or digit, "
                              r"got '\.\./escape'"),
    ({"method": "offline-faithful", "judge": "gpt"}, "unknown judge 'gpt'"),
    ({"method": "m", "judge": "openai", "judge_options": {"model": "m", "api_key_file": "/etc/passwd"}},
     "the judge 'openai' has no option 'api_key_file'"),
])
def test_bad_parameters_are_refused_with_the_reason(demo, params, message):
    with pytest.raises(jobqueue.JobError, match=message):
        jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), **params})


class CountingServer:
    """A local HTTP server that only counts the requests it gets."""

    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                server.requests += 1
                self.send_response(500)
                self.end_headers()

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_port}/v1"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.mark.parametrize("variable", ["HAI_DATABASE_URL", "HOME"])
def test_an_undeclared_key_variable_is_refused_at_submission_and_nothing_is_sent(demo, variable):
    # Both are set here: HAI_DATABASE_URL to the test's database, HOME by the system.
    server = CountingServer()
    try:
        with pytest.raises(jobqueue.JobError, match=f"judge_options.api_key_env: '{variable}' is not a variable "
                                                    "declared for API keys"):
            jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "offline-faithful", "judge": "openai",
                                           "judge_options": {"base_url": server.url, "model": "m",
                                                             "api_key_env": variable}})
    finally:
        server.close()
    assert server.requests == 0 and jobqueue.list_jobs() == []


def test_a_declared_key_variable_is_accepted(demo, monkeypatch):
    monkeypatch.setenv("HAI_API_KEY_JUDGE", "k")
    job_id = jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "offline-faithful", "judge": "openai",
                                            "judge_options": {"base_url": "http://127.0.0.1:9/v1", "model": "m",
                                                              "api_key_env": "HAI_API_KEY_JUDGE"}})
    assert jobqueue.get_job(job_id).params["judge_options"]["api_key_env"] == "HAI_API_KEY_JUDGE"


@pytest.mark.parametrize(("kind", "params", "field"), [
    (EVALUATE, {"method": "m", "judge": "openai", "judge_options": {"model": "m",
                                                                     "base_url": "http://169.254.169.254/v1"}},
     "judge_options.base_url"),
    (SCPE, {"i2v": {"role": "gradio", "url": "http://169.254.169.254:7861"}}, "url"),
])
def test_a_link_local_endpoint_is_refused_at_submission(demo, kind, params, field):
    with pytest.raises(jobqueue.JobError, match=f"{field}: the host '169.254.169.254' is not among"):
        jobqueue.submit_job(kind, {"benchmark": str(demo), **params})


def test_an_endpoint_host_the_server_does_not_list_is_refused(demo, monkeypatch):
    from engines.platform import settings

    monkeypatch.setenv("HAI_ENDPOINT_HOSTS", "judge.lab.example")
    settings.reset_settings()
    with pytest.raises(jobqueue.JobError, match="judge_options.base_url: the host 'api.openai.com'"):
        jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "m", "judge": "openai",
                                       "judge_options": {"model": "m"}})  # the default base_url is checked too
    jobqueue.submit_job(EVALUATE, {"benchmark": str(demo), "method": "m", "judge": "openai",
                                   "judge_options": {"model": "m", "base_url": "https://judge.lab.example/v1"}})


def test_a_diffusers_model_folder_outside_the_owned_folders_is_refused(demo, data_dir):
    with pytest.raises(jobqueue.JobError, match="i2v.model: '/etc' is outside the folders"):
        jobqueue.submit_job(SCPE, {"benchmark": str(demo), "i2v": {"role": "diffusers", "pipeline": "wan",
                                                                   "model": "/etc"}})
    models = data_dir / "datasets" / "hoi" / "models" / "wan"
    models.mkdir(parents=True)
    for model in ("Wan-AI/Wan2.2-TI2V-5B-Diffusers", str(models)):  # a hub id from the cache, an owned folder
        jobqueue.submit_job(SCPE, {"benchmark": str(demo), "i2v": {"role": "diffusers", "pipeline": "wan",
                                                                   "model": model}})


@pytest.mark.parametrize("epochs", [-1, 11])
def test_a_job_and_the_command_line_refuse_the_same_epoch_count(sqlite_db, tmp_path, capsys, epochs):
    # One declaration (SCPEConfig.epochs, 0 to 10): the job refuses it when submitted, the scpe command
    # before it opens the benchmark; 10 passes the job's check.
    from engines.hoi.__main__ import main as hoi_main

    base = {"benchmark": "shipped/hoi/demo", "method": "scpe-bounds"}
    with pytest.raises(jobqueue.JobError, match="epochs"):
        jobqueue.submit_job(SCPE, {**base, "epochs": epochs})
    assert jobqueue.get_job(jobqueue.submit_job(SCPE, {**base, "epochs": 10})).params["epochs"] == 10
    with pytest.raises(SystemExit) as exit_:
        hoi_main(["scpe", "--benchmark", str(DEMO_DIR), "--i2v", str(tmp_path / "i2v.json"), "--out",
                  str(tmp_path / "out"), "--epochs", str(epochs)])
    assert exit_.value.code == 2
    assert f"epochs must be from 0 to 10, got {epochs}" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
