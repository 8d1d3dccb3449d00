"""Serving an editor or I2V model with Gradio, and the gradio client roles calling it: a tiny Wan
pipeline and a hand-made editor served in-process on free ports."""

import argparse
import os
import socket

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach the Hub, even by mistake
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest
import torch
from PIL import Image, ImageOps

from engines.hoi.backends import tiny_role
from engines.hoi.roles import make
from engines.hoi.serve import GradioEndpointError, add_serve_arguments, app_from_arguments, build_app


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launched(app) -> str:
    port = free_port()
    app.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, ssr_mode=False)
    return f"http://127.0.0.1:{port}/"


def source() -> Image.Image:
    image = Image.new("RGB", (40, 30), (200, 30, 30))
    image.paste((20, 20, 220), (0, 0, 10, 30))  # a blue band on the left
    return image


class Recorded:
    """An I2V role that keeps the frames it returned last, to compare with what the client received."""

    def __init__(self, role) -> None:
        self.role, self.name, self.frames = role, role.name, []

    def generate(self, image, prompt, *, num_frames=17, seed=0):
        torch.set_num_threads(1)  # the server's worker thread: tiny models gain nothing from threads
        self.frames = self.role.generate(image, prompt, num_frames=num_frames, seed=seed)
        return self.frames


class MirrorEditor:
    """An editor whose answer is known by hand: the image flipped left to right."""

    name = "mirror"

    def edit(self, image: Image.Image, instruction: str, *, seed: int = 0) -> Image.Image:
        return ImageOps.mirror(image)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models gain nothing from threads; on a shared machine they contend
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def wan_server():
    role, task = tiny_role("wan")
    role = Recorded(role)
    app = build_app(role, task)
    url = launched(app)
    yield role, url
    app.close()


@pytest.fixture(scope="module")
def mirror_server():
    app = build_app(MirrorEditor(), "edit")
    url = launched(app)
    yield url
    app.close()


def test_served_frames_come_back_exactly_as_the_model_made_them(wan_server):
    role, url = wan_server
    served = make("i2v", "gradio", url=url)
    frames = served.generate(source(), "the person picks up the cup", num_frames=5, seed=2)
    assert [(frame.size, frame.mode) for frame in frames] == [((16, 16), "RGB")] * 5
    assert [frame.tobytes() for frame in frames] == [frame.tobytes() for frame in role.frames]  # PNG: lossless


def test_a_served_editor_returns_its_edit(mirror_server):
    edited = make("editor", "gradio", url=mirror_server).edit(source(), "mirror it", seed=0)
    assert edited.size == (40, 30)
    assert edited.getpixel((35, 5)) == (20, 20, 220)  # the blue band now on the right
    assert edited.getpixel((5, 5)) == (200, 30, 30)


def test_a_server_that_does_not_answer_is_named():
    url = f"http://127.0.0.1:{free_port()}/"  # nothing listens there
    with pytest.raises(GradioEndpointError, match=f"cannot reach the Gradio server at {url}"):
        make("i2v", "gradio", url=url)


def test_a_server_without_the_endpoint_says_which_it_has(wan_server):
    _, url = wan_server
    with pytest.raises(GradioEndpointError, match=f"server at {url} has no endpoint /edit; it has /generate"):
        make("editor", "gradio", url=url)


def test_the_serve_command_builds_a_tiny_pipeline_app():
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser)
    args = parser.parse_args(["--tiny", "svd"])
    assert (args.host, args.port) == ("127.0.0.1", 7861)
    app, served = app_from_arguments(args)
    assert served == {"task": "i2v", "model": "diffusers:svd:tiny-svd"}
    assert "/generate" in {f"/{fn.api_name}" for fn in app.fns.values() if fn.api_name}
    with pytest.raises(SystemExit):  # a config or a tiny pipeline, not both
        parser.parse_args(["--tiny", "wan", "--config", "wan.json"])
