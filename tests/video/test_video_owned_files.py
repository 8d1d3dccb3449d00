"""Which files the video area opens on a person's behalf: only files inside the folders the app owns.

A trajectory is a file anyone could have written: its ``video_path`` pointing at the database, a key
file or /etc/passwd (directly, through ``..`` or through a link) is refused and never opened or
served by the page, while the shipped demo's runs keep playing. The same rule holds for a job's
video, the run files listed from finished jobs, and the upload path (checked by its content)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engines.platform import jobqueue
from engines.platform.files import FileRefused
from engines.platform.models import Job
from engines.platform.settings import get_settings, reset_settings
from engines.platform.uploads import UploadRefused
from engines.video import browse, library
from engines.video import jobs as video_jobs
from engines.video.jobs import ASK, SWEEP
from engines.video.sweep import portable
from engines.video.trajectory import from_json
from tests.apptest_driver import page_as

pytestmark = pytest.mark.skipif(not library.demo_runs(), reason="the shipped demo is written by "
                                "`python -m engines.video demo`")
SECRET = b"SQLite format 3\x00 not a video: the app's database"


def _data() -> Path:
    return get_settings().data_dir


def _secret_db() -> Path:
    """A stand-in for the live database in the data folder's root (outside every owned folder)."""
    _data().mkdir(parents=True, exist_ok=True)
    path = _data() / "hai_studio.db"
    path.write_bytes(SECRET)
    return path


def _crafted_run(video_path: str, job_id: int = 7) -> Path:
    """A trajectories file in a job's result folder whose one trajectory names ``video_path``."""
    record = json.loads(library.demo_runs()[0].path.read_text().splitlines()[0])
    record["video_path"] = video_path
    folder = _data() / "jobs" / str(job_id)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "trajectory.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def _link_to(target: Path) -> Path:
    """An upload-looking ``evil.mp4`` in the video uploads that is a link to ``target``."""
    folder = library.uploads_dir()
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "evil.mp4"
    link.symlink_to(target)
    return link


def _hostile_paths() -> dict[str, str]:
    """Each way a trajectory could name a file outside the owned folders."""
    db = _secret_db()
    (_data() / "secret.mp4").write_bytes(SECRET)  # a video suffix, but in the data folder's root
    return {"the database": str(db), "/etc/passwd": "/etc/passwd", "a video name in the data root":
            str(_data() / "secret.mp4"), "../ out of the job folder": "../../hai_studio.db",
            "../ to a .mp4 in the data root": "../../secret.mp4", "a link in the uploads": str(_link_to(db)),
            "a link named relative": "../../uploads/video/evil.mp4"}


HOSTILE = ["the database", "/etc/passwd", "a video name in the data root", "../ out of the job folder",
           "../ to a .mp4 in the data root", "a link in the uploads", "a link named relative"]


@pytest.mark.parametrize("which", HOSTILE)
def test_a_trajectory_naming_a_file_outside_the_owned_folders_is_refused(sqlite_db, which):
    run = _crafted_run(_hostile_paths()[which])
    [entry] = browse.load_run(run)
    with pytest.raises(FileRefused, match="video_path"):
        browse.trajectory_video(entry.trajectory, run)


@pytest.mark.parametrize("which", ["the database", "../ to a .mp4 in the data root", "a link in the uploads"])
def test_the_page_shows_the_refusal_and_serves_no_file(sqlite_db, monkeypatch, which):
    run = _crafted_run(_hostile_paths()[which])
    opened: list = []
    monkeypatch.setattr(library, "demo_runs", lambda: [library.RunFile("crafted run", run)])
    monkeypatch.setattr(video_jobs, "job_runs", lambda **_: [])
    monkeypatch.setattr(browse, "open_video", lambda *a, **k: opened.append(a) or pytest.fail("opened"))
    at = page_as("video_inspector", "researcher")
    assert not at.exception, at.exception
    assert at.get("video") == []  # nothing handed to the media server, so no /media URL for it
    assert any("The video is not shown" in w.value and "outside the folders" in w.value for w in at.warning)
    record = json.loads(run.read_text())
    inspect = next(k for k, step in enumerate(record["steps"]) if step["action"] == "inspect")
    at.selectbox(key=f"video-step-{record['uid']}").set_value(inspect).run()  # the step's frames are not read
    assert not at.exception and opened == []


def test_the_shipped_demo_runs_still_play(sqlite_db):
    for run in library.demo_runs():
        for entry in browse.load_run(run.path):
            video = browse.trajectory_video(entry.trajectory, run.path)
            assert video == (library.DEMO / f"{entry.trajectory.video_id}.mp4").resolve()
    at = page_as("video_inspector", "researcher")
    assert not at.exception, at.exception
    [player] = at.get("video")
    assert "/media/" in player.proto.url and player.proto.start_time == 0 and not player.proto.autoplay


def test_a_relative_video_path_is_taken_from_the_run_files_folder(sqlite_db):
    folder = _data() / "jobs" / "8"
    folder.mkdir(parents=True)
    (folder / "clip.mp4").write_bytes(library.demo_videos()[0].read_bytes())
    run = _crafted_run("clip.mp4", job_id=8)
    [entry] = browse.load_run(run)
    assert browse.trajectory_video(entry.trajectory, run) == (folder / "clip.mp4").resolve()


def test_a_sweep_writes_video_paths_relative_to_its_runs_folder(tmp_path):
    record = json.loads(library.demo_runs()[0].path.read_text().splitlines()[0])
    record["video_path"] = str(tmp_path / "videos" / "a.mp4")
    trajectory = from_json(record)
    assert portable(trajectory, tmp_path / "runs").video_path == os.path.join("..", "videos", "a.mp4")
    elsewhere = tmp_path / "other" / "runs"
    assert portable(trajectory, elsewhere / "deeper").video_path == record["video_path"]  # not beside: kept


@pytest.mark.parametrize("path", ["/etc/passwd", "trajectory.jsonl", "../hai_studio.jsonl"])
def test_a_run_file_outside_the_owned_folders_is_not_read(sqlite_db, tmp_path, path):
    (tmp_path / "trajectory.jsonl").write_text(library.demo_runs()[0].path.read_text())
    target = tmp_path / path if not path.startswith("/") else Path(path)
    with pytest.raises(FileRefused, match="the run file"):
        browse.load_run(target)


def test_a_run_file_must_be_a_jsonl_file(sqlite_db):
    with pytest.raises(FileRefused, match=r"is not a \.jsonl file"):
        browse.load_run(library.DEMO / "runs" / "summary.json")


@pytest.mark.parametrize("which", ["the database", "/etc/passwd", "a video name in the data root",
                                   "a link in the uploads"])
def test_a_job_for_a_file_outside_the_owned_folders_is_refused_when_submitted(sqlite_db, which):
    video = _hostile_paths()[which]
    with pytest.raises(jobqueue.JobError, match="outside the folders the app reads from"):
        jobqueue.submit_job(ASK, {"video": video, "question": "What colour?", "options": ["red", "blue"]})


def test_a_relative_job_video_climbing_out_of_the_uploads_is_refused(sqlite_db):
    _hostile_paths()
    with pytest.raises(jobqueue.JobError, match="outside the folders"):
        jobqueue.submit_job(ASK, {"video": "uploads/video/../../secret.mp4", "question": "What colour?",
                                  "options": ["red", "blue"]})


def test_job_runs_lists_only_result_files_inside_the_jobs_folder(sqlite_db, monkeypatch):
    db = _secret_db()
    good = _crafted_run(str(library.demo_videos()[0]), job_id=9)
    fake = [Job(id=1, kind=ASK, status="succeeded", params={}, result={"result_path": str(db), "summary": "db"}),
            Job(id=2, kind=ASK, status="succeeded", params={}, result={"result_path": "/etc/passwd"}),
            Job(id=3, kind=SWEEP, status="succeeded", params={}, result={"result_path": str(library.DEMO / "runs")}),
            Job(id=4, kind=ASK, status="succeeded", params={}, result={"result_path": str(good), "summary": "ok"})]
    monkeypatch.setattr(video_jobs, "list_jobs", lambda **_: fake)
    assert [(r.label, r.path) for r in video_jobs.job_runs()] == [("job #4: ok", good.resolve())]


def test_an_upload_is_checked_by_its_content_and_kept_in_the_video_uploads(sqlite_db):
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 64
    with pytest.raises(UploadRefused, match=r"^holiday.mp4: not a video file"):
        library.save_upload(png, "holiday.mp4")
    with pytest.raises(UploadRefused, match=r"^notes.mp4: not a video file"):
        library.save_upload(b"these are notes, not a video" * 10, "notes.mp4")
    assert library.uploaded_videos() == []  # nothing half-kept
    kept = library.save_upload(library.demo_videos()[0].read_bytes(), "../../my clip.MP4")
    assert kept.parent == _data() / "uploads" / "video" and kept.suffix == ".mp4" and "clip" not in kept.name
    assert library.uploaded_videos() == [kept]
    assert library.video_file(kept) == kept.resolve()


def test_an_upload_over_the_size_setting_is_refused(sqlite_db, monkeypatch):
    monkeypatch.setenv("HAI_UPLOAD_MAX_MB", "1")
    reset_settings()
    with pytest.raises(UploadRefused, match=r"big.mp4: larger than the 1 MB allowed \(HAI_UPLOAD_MAX_MB\)"):
        library.save_upload(b"\0" * (2 * 1024 * 1024), "big.mp4")
    assert library.uploaded_videos() == []


def test_an_upload_longer_than_allowed_is_removed_after_it_was_stored(sqlite_db, monkeypatch):
    monkeypatch.setattr(library, "MAX_DURATION_S", 360.0)  # the demo videos are 10 minutes long
    with pytest.raises(UploadRefused, match=r"long.mp4: 0.2 hours is longer than the 0.1 hours allowed"):
        library.save_upload(library.demo_videos()[0].read_bytes(), "long.mp4")
    assert library.uploaded_videos() == []


def test_the_page_states_the_upload_limit_from_the_settings(sqlite_db, monkeypatch):
    monkeypatch.setenv("HAI_UPLOAD_MAX_MB", "7")
    reset_settings()
    at = page_as("video_inspector", "researcher")
    at.radio(key="video-source").set_value("upload").run()
    assert not at.exception, at.exception
    [picker] = at.get("file_uploader")
    assert "at most 7 MB and 4 hours" in picker.proto.label and "500" not in picker.proto.label
    assert "At most 7 MB." in picker.proto.help
    assert not hasattr(library, "MAX_UPLOAD_MB")



def test_the_page_refuses_a_stored_upload_that_is_too_long_and_removes_it(sqlite_db, monkeypatch):
    import pages._upload
    from engines.platform.uploads import store_upload

    stored = store_upload(library.demo_videos()[0].read_bytes(), label="lecture.mp4", kind="video", area="video")
    monkeypatch.setattr(pages._upload, "file_input", lambda *a, **k: stored)  # what the picker hands the page
    monkeypatch.setattr(library, "MAX_DURATION_S", 360.0)
    at = page_as("video_inspector", "researcher")
    at.radio(key="video-source").set_value("upload").run()
    reason = "lecture.mp4: 0.2 hours is longer than the 0.1 hours allowed."
    assert [e.value for e in at.error] == [reason] and not stored.path.exists()
    at.run()  # a rerun hands the same upload back: the same reason, not a missing file
    assert [e.value for e in at.error] == [reason]
    next(b for b in at.button if b.label == "Ask").click().run()
    assert "Choose a demo video or upload one first." in [e.value for e in at.error]
    assert jobqueue.list_jobs(kind=ASK) == []
