"""An editor or I2V model served as a Gradio app, and the roles that call such a server.

HOI-Edit's generators are large (Wan2.2-I2V-A14B, FLUX.1 Kontext; ``docs/hoi.md``, "Editing backends and
serving them"): they run on a GPU box, while SCPE and the app run wherever the benchmark is. The box
serves the model with::

    python -m engines.hoi serve --config wan.json --host 0.0.0.0 --port 7861
    python -m engines.hoi serve --tiny wan            # a tiny random pipeline, to try it on a CPU

and the other side names it in a generation config, ``{"role": "gradio", "task": "i2v", "url":
"http://gpu-box:7861"}`` (``engines.hoi.generation.load_generation_config``), which makes the roles
registered here as ``i2v``/``editor`` ``"gradio"``. They call the server with ``gradio_client``.

The server has one named endpoint per task:

- ``/generate`` (i2v): source image, prompt, number of frames, seed -> a gallery of PNG frames;
- ``/edit`` (edit): source image, instruction, seed -> the edited image (PNG).

PNG keeps the frames exact through the transport (Gradio's gallery defaults to WebP); one
request runs at a time, as one pipeline holds the GPU. A server that cannot be reached, or lacks
the endpoint, is an error naming its URL.
"""

from __future__ import annotations

import argparse
import importlib
import os
import tempfile
from pathlib import Path
from typing import Any

from PIL import Image

from engines.hoi.generation import (
    GradioConfig,
    load_generation_config,
    make_role,
    require_task,
)
from engines.hoi.roles import register

TINY_CHOICES = ("wan", "svd", "instruct-pix2pix")  # the tiny stand-ins' TINY_NAMES (tests/hoi check it)
REGISTRY = "engines.hoi.backends"  # the role registry, which names the stand-ins (tiny_role)


class GradioEndpointError(ConnectionError):
    """The Gradio server could not be reached, lacks the endpoint, or failed a request; names the URL."""


def _gradio():
    # Gradio reports usage to its makers unless told not to; this project sends nothing anywhere unasked.
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    import gradio

    return gradio


# ---------------------------------------------------------------- server


def build_app(role: Any, task: str, *, title: str | None = None, note: str = "", default_frames: int = 17):
    """A Gradio ``Blocks`` app over ``role`` (an ``I2VGenerator`` for task "i2v", an ``ImageEditor``
    for "edit"), with the endpoint ``/generate`` or ``/edit`` (see the module docstring).

    Launch it with ``app.launch(...)``; :func:`run_serve` does so for the command line."""
    gr = _gradio()
    if task not in ("i2v", "edit"):
        raise ValueError(f'task must be "i2v" or "edit", got {task!r}')
    name = getattr(role, "name", type(role).__name__)

    def source(image: Image.Image | None) -> Image.Image:
        if image is None:
            raise gr.Error("Upload a source image first.")
        return image.convert("RGB")

    def generate(image, prompt, num_frames, seed) -> list[Image.Image]:
        frames = int(num_frames or 1)
        if frames < 1:
            raise gr.Error(f"The number of frames must be at least 1, got {frames}.")
        return role.generate(source(image), prompt or "", num_frames=frames, seed=int(seed or 0))

    def edit(image, instruction, seed) -> Image.Image:
        return role.edit(source(image), instruction or "", seed=int(seed or 0))

    with gr.Blocks(title=title or f"HOI-Edit {task}: {name}", delete_cache=(3600, 3600)) as app:
        gr.Markdown(f"### {title or 'HOI-Edit ' + ('image to video' if task == 'i2v' else 'image editing')}\n"
                    f"Model: `{name}`. {note}")
        with gr.Row():
            with gr.Column():
                image = gr.Image(type="pil", image_mode="RGB", label="Source image")
                text = gr.Textbox(label="Prompt" if task == "i2v" else "Instruction", lines=3)
                with gr.Row():
                    frames = gr.Number(value=default_frames, precision=0, minimum=1, label="Frames",
                                       visible=task == "i2v")
                    seed = gr.Number(value=0, precision=0, label="Seed")
                run = gr.Button("Generate" if task == "i2v" else "Edit", variant="primary")
            with gr.Column():
                if task == "i2v":
                    output = gr.Gallery(label="Frames", format="png", columns=4)
                    run.click(generate, [image, text, frames, seed], output, api_name="generate")
                else:
                    output = gr.Image(type="pil", format="png", label="Edited image")
                    run.click(edit, [image, text, seed], output, api_name="edit")
    # One request at a time: the pipeline holds the accelerator and its scheduler's state.
    app.queue(default_concurrency_limit=1)
    return app


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--config", type=Path,
                        help='a generation config (JSON), e.g. {"role": "diffusers", "task": "i2v", "pipeline": "wan", '
                             '"model": "/models/Wan2.2-TI2V-5B-Diffusers", "dtype": "bfloat16"}')
    source.add_argument("--tiny", choices=TINY_CHOICES,
                        help="serve a tiny randomly initialised pipeline (its output is noise): tries the whole "
                             "path with no weights and no GPU")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=7861)


def app_from_arguments(args: argparse.Namespace):
    """The app ``serve`` would launch, and what it serves: ``(app, {"task", "model"})``."""
    if args.tiny:
        # The tiny pipelines are offline stand-ins, named in the role registry (imported by name: it imports this module).
        role, task = importlib.import_module(REGISTRY).tiny_role(args.tiny)
        note = "A tiny randomly initialised pipeline: its frames are noise (synthetic, for trying the service)."
        default_frames = 9
    else:
        config = load_generation_config(args.config)
        role, task, note, default_frames = make_role(config), config.task, "", 17
    app = build_app(role, task, note=note, default_frames=default_frames)
    return app, {"task": task, "model": getattr(role, "name", type(role).__name__)}


def run_serve(args: argparse.Namespace) -> dict:
    """Serve an editor or I2V model as a Gradio app (endpoint /generate or /edit) until interrupted."""
    app, served = app_from_arguments(args)
    url = f"http://{args.host}:{args.port}"
    print(f"Serving {served['model']} ({served['task']}) at {url}; press Ctrl+C to stop.", flush=True)
    app.launch(server_name=args.host, server_port=args.port, show_error=True, ssr_mode=False)
    return {**served, "url": url, "summary": f"served {served['model']} at {url} until stopped"}


# ---------------------------------------------------------------- client roles


def _image_at(value: Any) -> Image.Image:
    """The image a gradio_client result names (a path, or a dict holding one), read into memory."""
    if isinstance(value, dict):
        value = value.get("image", value.get("path"))
        if isinstance(value, dict):
            value = value.get("path")
    if not isinstance(value, str):
        raise GradioEndpointError(f"expected an image file in the server's reply, got {value!r}")
    path = Path(value)
    with Image.open(path) as image:
        frame = image.convert("RGB")
    path.unlink(missing_ok=True)  # frames are read into memory; the download folder stays empty
    return frame


class GradioRole:
    """A model behind a Gradio server (see the module docstring); connects when made."""

    def __init__(self, config: GradioConfig) -> None:
        from gradio_client import Client

        self.config = config
        self.url, self.api_name = config.url, config.api_name
        self.name = f"gradio:{config.url.rstrip('/')}{config.api_name}"
        self._downloads = tempfile.TemporaryDirectory(prefix="hoi-gradio-")
        try:
            self.client = Client(config.url, verbose=False, download_files=self._downloads.name)
            endpoints = self.client.view_api(print_info=False, return_format="dict")["named_endpoints"]
        except Exception as exc:  # noqa: BLE001 - httpx, gradio_client and JSON errors alike mean "cannot use it"
            raise GradioEndpointError(f"cannot reach the Gradio server at {config.url} "
                                      f"({type(exc).__name__}: {exc})") from exc
        if config.api_name not in endpoints:
            raise GradioEndpointError(f"the Gradio server at {config.url} has no endpoint {config.api_name}; "
                                      f"it has {', '.join(sorted(endpoints)) or 'none'}")

    def _call(self, image: Image.Image, *inputs: Any) -> Any:
        from gradio_client import handle_file

        if not isinstance(image, Image.Image):
            raise TypeError(f"the source image must be a PIL image, got {type(image).__name__}")
        with tempfile.NamedTemporaryFile(suffix=".png", dir=self._downloads.name, delete=False) as upload:
            image.convert("RGB").save(upload, format="PNG")
        try:
            job = self.client.submit(handle_file(upload.name), *inputs, api_name=self.api_name)
            return job.result(timeout=self.config.timeout_s)
        except Exception as exc:  # noqa: BLE001 - the server's error, a timeout or a lost connection
            raise GradioEndpointError(f"the Gradio server at {self.url} failed on {self.api_name} "
                                      f"({type(exc).__name__}: {exc})") from exc
        finally:
            Path(upload.name).unlink(missing_ok=True)


class GradioVideoGenerator(GradioRole):
    """The I2V role over a server's ``/generate`` endpoint."""

    def generate(self, image: Image.Image, prompt: str, *, num_frames: int = 17, seed: int = 0) -> list[Image.Image]:
        gallery = self._call(image, prompt, int(num_frames), int(seed))
        if not isinstance(gallery, list | tuple):
            raise GradioEndpointError(f"the Gradio server at {self.url} answered {self.api_name} with "
                                      f"{type(gallery).__name__}, not a gallery of frames")
        return [_image_at(item) for item in gallery]


class GradioImageEditor(GradioRole):
    """The image-editor role over a server's ``/edit`` endpoint."""

    def edit(self, image: Image.Image, instruction: str, *, seed: int = 0) -> Image.Image:
        return _image_at(self._call(image, instruction, int(seed)))


@register("i2v", "gradio")
def gradio_i2v(**options: Any) -> GradioVideoGenerator:
    """An I2V generator served by ``python -m engines.hoi serve``: ``url`` (and ``api_name``, ``timeout_s``)."""
    source = "i2v 'gradio'"
    return GradioVideoGenerator(require_task(GradioConfig.from_dict(options, source, task="i2v"), "i2v", source))


@register("editor", "gradio")
def gradio_editor(**options: Any) -> GradioImageEditor:
    """An image editor served by ``python -m engines.hoi serve``: ``url`` (and ``api_name``, ``timeout_s``)."""
    source = "editor 'gradio'"
    return GradioImageEditor(require_task(GradioConfig.from_dict(options, source, task="edit"), "edit", source))
