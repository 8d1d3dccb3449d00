"""The platform's one way with files people hand the app: the path policy, the upload helper, the
upload quota, declared API-key variables and endpoint hosts."""

from __future__ import annotations

import io
import json
import os

import numpy as np
import pytest

from engines.platform import settings
from engines.platform.credentials import SecretRefused, api_key, check_key_variable, child_environment
from engines.platform.endpoints import EndpointRefused, check_endpoint_url
from engines.platform.files import FileRefused, echo, loads_json, owned_folder, owned_path, shown_path
from engines.platform.uploads import MB, UploadRefused, quota_problem, store_upload, upload_label


@pytest.fixture
def data_dir(monkeypatch, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    monkeypatch.setenv("HAI_DATA_DIR", str(folder))
    settings.reset_settings()
    yield folder
    settings.reset_settings()


def set_env(monkeypatch, **values):
    for name, value in values.items():
        monkeypatch.setenv(name, str(value))
    settings.reset_settings()


# ------------------------------------------------------------------ the path policy


def test_a_file_in_an_owned_folder_is_resolved(data_dir):
    target = data_dir / "datasets" / "judge" / "set" / "items.jsonl"
    target.parent.mkdir(parents=True)
    target.write_text("{}\n")
    assert owned_path("datasets/judge/set/items.jsonl", what="items", suffixes=(".jsonl",)) == target.resolve()
    assert owned_path(target, what="items") == target.resolve()


@pytest.mark.parametrize("name", ["hai_studio.db", "pseudonym.key", ".env", "arena.key"])
def test_the_data_folders_own_files_are_never_reachable(data_dir, name):
    (data_dir / name).write_text("secret")
    for raw in (name, str(data_dir / name), f"uploads/../{name}", f"jobs/1/../../{name}"):
        with pytest.raises(FileRefused, match="outside the folders"):
            owned_path(raw, what="the trajectory's video")


def test_a_link_out_of_an_owned_folder_is_refused(data_dir):
    (data_dir / "hai_studio.db").write_text("secret")
    uploads = data_dir / "uploads" / "video"
    uploads.mkdir(parents=True)
    (uploads / "clip.mp4").symlink_to(data_dir / "hai_studio.db")
    with pytest.raises(FileRefused, match="outside the folders"):
        owned_path(uploads / "clip.mp4", what="video", suffixes=(".mp4",))


def test_system_files_and_the_owned_roots_themselves_are_refused(data_dir):
    with pytest.raises(FileRefused):
        owned_path("/etc/passwd", what="items")
    (data_dir / "jobs").mkdir()
    with pytest.raises(FileRefused):
        owned_path("jobs", what="run", kind="dir")


def test_suffix_kind_and_existence_are_checked(data_dir):
    folder = data_dir / "jobs" / "7"
    folder.mkdir(parents=True)
    (folder / "run.json").write_text("{}")
    with pytest.raises(FileRefused, match=r"not a \.jsonl file"):
        owned_path("jobs/7/run.json", what="trajectory", suffixes=(".jsonl",))
    with pytest.raises(FileRefused, match="not an existing file"):
        owned_path("jobs/7/missing.json", what="run")
    with pytest.raises(FileRefused, match="not an existing folder"):
        owned_path("jobs/7/run.json", what="run folder", kind="dir")
    assert owned_path("jobs/7", what="run folder", kind="dir") == folder.resolve()


def test_shipped_assets_are_readable_and_shown_relative(data_dir):
    shipped = next(p for p in owned_folder("shipped").rglob("*") if p.is_file())
    assert owned_path(shipped, what="demo", folders=("shipped",)) == shipped.resolve()
    assert shown_path(shipped).startswith("shipped/")
    with pytest.raises(FileRefused):
        owned_path(shipped, what="demo", folders=("uploads",))


def test_a_relative_path_stored_in_a_file_starts_from_that_files_folder(data_dir):
    run = data_dir / "datasets" / "video" / "demo"
    run.mkdir(parents=True)
    (run / "clip.mp4").write_bytes(b"x")
    assert owned_path("clip.mp4", what="video", base=run) == (run / "clip.mp4").resolve()
    with pytest.raises(FileRefused):
        owned_path("../../../hai_studio.db", what="video", base=run)


def test_messages_quote_at_most_a_short_piece_of_hostile_input(data_dir):
    hostile = "x" * 10_000
    with pytest.raises(FileRefused) as caught:
        owned_path(hostile, what="items")
    assert len(str(caught.value)) < 600
    assert len(echo(hostile)) == 120


def test_too_deep_json_is_a_clear_error_naming_where():
    with pytest.raises(FileRefused, match=r"items\.jsonl line 3: the JSON nests deeper than 64 levels"):
        loads_json("[" * 100_000 + "]" * 100_000, where="items.jsonl line 3")
    with pytest.raises(FileRefused, match="not valid JSON"):
        loads_json("{", where="run.json")
    assert loads_json('{"a": "[[[["}', where="x") == {"a": "[[[["}


# ------------------------------------------------------------------ uploads


def png_bytes(width=4, height=3) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(np.zeros((height, width, 3), dtype=np.uint8)).save(buffer, format="PNG")
    return buffer.getvalue()


def test_an_upload_is_kept_under_a_server_chosen_name_never_the_clients(data_dir, tmp_path):
    victim = tmp_path / "outside"
    victim.mkdir()
    stored = store_upload(b'{"key": "a"}\n', label=f"../../../{victim.name}/evil.jsonl", kind="jsonl", area="judge")
    assert stored.path.parent == (data_dir / "uploads" / "judge")
    assert stored.path.name == stored.sha256[:24] + ".jsonl"
    assert stored.label == "evil.jsonl"
    assert list(victim.iterdir()) == []
    assert [p.name for p in stored.path.parent.iterdir()] == [stored.path.name]  # no partial file left


def test_the_real_type_decides_not_the_name(data_dir):
    with pytest.raises(UploadRefused, match="clip.mp4: not a video file"):
        store_upload(png_bytes(), label="clip.mp4", kind="video", area="video")
    with pytest.raises(UploadRefused, match="policy.pt: not a PyTorch weights file"):
        store_upload(b"hello", label="policy.pt", kind="torch", area="attribution")
    with pytest.raises(UploadRefused, match="items.jsonl: a binary file"):
        store_upload(b"\x00\x01\x02", label="items.jsonl", kind="jsonl", area="judge")
    assert store_upload(png_bytes(), label="photo.jpeg", kind="image", area="attribution").path.suffix == ".png"
    assert not any(p.name.endswith(".partial") for p in (data_dir / "uploads").rglob("*"))


def test_empty_oversized_and_nested_uploads_are_refused(data_dir, monkeypatch):
    with pytest.raises(UploadRefused, match="policy.pt: the file is empty"):
        store_upload(b"", label="policy.pt", kind="torch", area="attribution")
    with pytest.raises(UploadRefused, match=r"deep.jsonl line 2: the JSON nests deeper"):
        store_upload(b'{"a": 1}\n' + b"[" * 5000 + b"]" * 5000, label="deep.jsonl", kind="jsonl", area="judge")
    set_env(monkeypatch, HAI_UPLOAD_MAX_MB=1)
    with pytest.raises(UploadRefused, match="larger than the 1 MB allowed"):
        store_upload(io.BytesIO(b"a" * (MB + 1)), label="big.csv", kind="csv", area="judge")
    assert not any((data_dir / "uploads").rglob("*.csv"))


def test_an_image_over_the_pixel_limit_is_refused_not_raised(data_dir, monkeypatch):
    from PIL import Image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)
    with pytest.raises(UploadRefused, match="more than the 100 allowed|larger than the 100 pixels"):
        store_upload(png_bytes(30, 30), label="big.png", kind="image", area="attribution")


def test_the_stored_total_is_capped(data_dir, monkeypatch):
    set_env(monkeypatch, HAI_UPLOADS_DISK_MB=1)
    store_upload(b"a" * (MB * 2 // 5), label="a.csv", kind="csv", area="judge")
    store_upload(b"b" * (MB * 2 // 5), label="b.csv", kind="csv", area="judge")
    with pytest.raises(UploadRefused, match="HAI_UPLOADS_DISK_MB"):
        store_upload(b"c" * (MB * 2 // 5), label="c.csv", kind="csv", area="judge")
    assert len(list((data_dir / "uploads" / "judge").iterdir())) == 2


def test_labels_are_printable_last_components():
    assert upload_label("C:\\Users\\x\\items.jsonl") == "items.jsonl"
    assert upload_label("a\x1b[31m.csv") == "a[31m.csv"
    assert upload_label("") == "upload"
    assert len(upload_label("y" * 500)) == 120


def test_the_quota_counts_files_and_bytes_per_session_and_in_all(monkeypatch):
    set_env(monkeypatch, HAI_UPLOAD_SESSION_FILES=2, HAI_UPLOAD_SESSION_MB=10, HAI_UPLOAD_TOTAL_MB=20,
            HAI_UPLOAD_MAX_MB=8)
    assert quota_problem([], 8 * MB, 0) is None
    assert "larger than the 8 MB" in quota_problem([], 8 * MB + 1, 0)
    assert "at most 2 uploads" in quota_problem([1, 1], 1, 0)
    assert "at most 10 MB" in quota_problem([6 * MB], 5 * MB, 6 * MB)
    assert "too many uploads" in quota_problem([], 5 * MB, 16 * MB)
    assert quota_problem([5 * MB], 5 * MB, 15 * MB) is None


# ------------------------------------------------------------------ secrets and endpoints


@pytest.mark.parametrize("name", ["HAI_DATABASE_URL", "HAI_PSEUDONYM_KEY", "HAI_ADMIN_PASSWORD", "HOME",
                                  "HAI_API_KEY_", "OPENAI_API_KEY"])
def test_only_declared_variables_may_hold_an_api_key(monkeypatch, name):
    set_env(monkeypatch, HAI_DATABASE_URL="postgresql://u:pw@db/x")
    with pytest.raises(SecretRefused, match="not a variable declared for API keys"):
        api_key(name)


def test_declared_variables_give_their_key(monkeypatch):
    set_env(monkeypatch, HAI_API_KEY_OPENAI="sk-1", OPENAI_API_KEY="sk-2", HAI_API_KEY_VARIABLES="OPENAI_API_KEY")
    assert api_key("HAI_API_KEY_OPENAI") == "sk-1"
    assert api_key("OPENAI_API_KEY") == "sk-2"
    assert api_key(None) is None and check_key_variable("") is None
    with pytest.raises(SecretRefused, match="is not set"):
        api_key("HAI_API_KEY_MISSING", required=True)


def test_a_child_process_gets_settings_and_keys_but_not_the_whole_environment(monkeypatch):
    base = {"PATH": "/bin", "HAI_DATABASE_URL": "sqlite://", "HAI_API_KEY_X": "k", "AWS_SECRET_ACCESS_KEY": "s",
            "HAI_ADMIN_PASSWORD": "pw", "GITHUB_TOKEN": "t"}
    env = child_environment({"PYTHONUNBUFFERED": "1"}, base=base)
    assert env == {"PATH": "/bin", "HAI_DATABASE_URL": "sqlite://", "HAI_API_KEY_X": "k", "PYTHONUNBUFFERED": "1"}


def test_endpoint_hosts(monkeypatch):
    set_env(monkeypatch, HAI_ENDPOINT_HOSTS="*")
    assert check_endpoint_url("https://api.example.org/v1") == "https://api.example.org/v1"
    for url in ("http://169.254.169.254/latest", "http://[fe80::1]/x"):
        with pytest.raises(EndpointRefused, match="not among the endpoint hosts"):
            check_endpoint_url(url)
    for url in ("file:///etc/passwd", "gopher://x", "http:///nohost"):
        with pytest.raises(EndpointRefused, match="not an http"):
            check_endpoint_url(url)
    with pytest.raises(EndpointRefused, match="not in the URL"):
        check_endpoint_url("https://user:key@api.example.org/v1")
    set_env(monkeypatch, HAI_ENDPOINT_HOSTS="gpu.lab.example, 169.254.1.2")
    assert check_endpoint_url("http://GPU.lab.example:8000/v1")
    assert check_endpoint_url("http://169.254.1.2/v1")
    with pytest.raises(EndpointRefused):
        check_endpoint_url("http://127.0.0.1:8000/v1")
    set_env(monkeypatch, HAI_ENDPOINT_HOSTS="")
    with pytest.raises(EndpointRefused, match="no endpoint host is allowed"):
        check_endpoint_url("https://api.example.org/v1")


def test_the_streamlit_upload_limit_is_the_settings_number():
    import tomllib

    config = tomllib.loads((settings.REPO_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == settings.Settings().upload_max_mb
    assert json.dumps(os.environ.get("HAI_UPLOAD_MAX_MB")) in ("null", '"50"')


def tiny_mp4(path, width, height, frames=3):
    import av

    with av.open(str(path), "w") as container:
        stream = container.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for i in range(frames):
            image = np.full((height, width, 3), 40 * i, dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path.read_bytes()


def test_a_video_is_kept_and_a_frame_over_the_pixel_cap_is_refused(data_dir, tmp_path, monkeypatch):
    small = tiny_mp4(tmp_path / "small.mp4", 64, 48)
    stored = store_upload(small, label="my clip.MP4", kind="video", area="video")
    assert stored.path.suffix == ".mp4" and stored.label == "my clip.MP4"
    large = tiny_mp4(tmp_path / "large.mp4", 96, 64)
    set_env(monkeypatch, HAI_MAX_FRAME_PIXELS=64 * 64)
    with pytest.raises(UploadRefused, match=r"frames of 96 x 64 pixels are more than the 4,096 allowed"):
        store_upload(large, label="large.mp4", kind="video", area="video")
