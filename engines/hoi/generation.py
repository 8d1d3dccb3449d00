"""The image editor and the I2V generator of HOI-Edit through diffusers pipelines, chosen by a config.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``; ``docs/hoi.md``, "Editing backends and serving them") compares
image editors (FLUX.1 Kontext, Qwen-Image-Edit, ...) with image-to-video models turned into
editors by SCPE (upstream: Wan2.2-I2V-A14B). This module runs those models through their diffusers
pipelines (``huggingface/diffusers``, ``src/diffusers/pipelines/``):

=====================  ======  ==========================================  ===========================================
``pipeline``           task    diffusers class                             checkpoints (hub ids or local copies)
=====================  ======  ==========================================  ===========================================
``wan``                i2v     ``WanImageToVideoPipeline``                 Wan-AI/Wan2.2-I2V-A14B-Diffusers, -TI2V-5B-
``svd``                i2v     ``StableVideoDiffusionPipeline``            stabilityai/stable-video-diffusion-img2vid-xt
``cogvideox``          i2v     ``CogVideoXImageToVideoPipeline``           THUDM/CogVideoX-5b-I2V
``ltx``                i2v     ``LTXImageToVideoPipeline``                 Lightricks/LTX-Video
``instruct-pix2pix``   edit    ``StableDiffusionInstructPix2PixPipeline``  timbrooks/instruct-pix2pix
``flux-kontext``       edit    ``FluxKontextPipeline``                     black-forest-labs/FLUX.1-Kontext-dev
``qwen-image-edit``    edit    ``QwenImageEditPipeline``                   Qwen/Qwen-Image-Edit
=====================  ======  ==========================================  ===========================================

A config is a JSON object (a file or a dict)::

    {"role": "diffusers", "task": "i2v", "pipeline": "wan", "model": "/models/Wan2.2-TI2V-5B-Diffusers",
     "dtype": "bfloat16", "device": "cuda", "num_inference_steps": 30, "height": 704, "width": 1280,
     "guidance_scale": 5.0, "negative_prompt": "...", "offload": true,
     "call_options": {"max_sequence_length": 512}}

Only ``pipeline`` and ``model`` are required. ``device`` defaults to the ``HAI_DEVICE`` setting
(``engines.platform.torch_device``); ``dtype`` to float32 (diffusers' usable-anywhere default; say
bfloat16 on a GPU). Unset sizes, steps and guidance keep the pipeline's own defaults (Wan 480x832,
50 steps, guidance 5.0). ``call_options`` passes further ``__call__`` arguments (SVD's ``fps``,
``motion_bucket_id``, ``min_guidance_scale``; InstructPix2Pix's ``image_guidance_scale``; LTX's
``frame_rate``). Every argument is checked against the pipeline's ``__call__`` before any weight is
read: a field the pipeline does not take is an error naming it, except the prompt, which a
prompt-less pipeline (SVD) simply does not receive. Frames come back as PIL images; Wan, CogVideoX
and LTX round ``num_frames`` to the frame counts their VAEs decode (Wan: 4k + 1).

**Half precision.** With ``dtype`` float16 or bfloat16 the denoiser and the encoders run in that
dtype, but two parts keep float32 arithmetic, as diffusers advises for them: the VAE (SD's VAE
overflows in float16, hence its ``force_upcast``; Wan's docs load its VAE in float32), whose
stages take and give the pipeline's dtype but compute in float32, and the scheduler's step (the
latents' update, where a half-precision sum loses the small denoising increments against latents
of size up to sigma_max: 700 for SVD), which gets float32 inputs and hands back the latents in the
pipeline's dtype. Each call runs with CUDA's float32 kept exact for a float32 pipeline (no TF32)
and with half-precision matrix products reducing in float32 for a half one
(``engines.platform.torch_device``); on the CPU neither switch changes anything.

**Nothing downloads silently.** Weights load with ``from_pretrained(..., local_files_only=True)``
(a local folder, or a hub id already in the Hugging Face cache) unless the config says
``"allow_download": true``.

:func:`load_generation_config` reads the config of any role (``"role"``: ``"diffusers"``,
``"gradio"`` for a model served by ``python -m engines.hoi serve``, ``"offline"`` for the
deterministic default) and checks it, naming the file and the field on any problem; ``make_role``
turns it into the role. The diffusers roles are registered as ``i2v``/``editor`` ``"diffusers"``
in ``engines.hoi.roles``; ``engines.hoi.offline.tiny_pipelines`` builds tiny random pipelines that this
module loads exactly like real checkpoints (the tests do).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from dataclasses import fields as dataclass_fields
from pathlib import Path
from typing import Annotated, Any, Literal

from PIL import Image
from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field, Strict, ValidationError, field_validator
from pydantic.dataclasses import dataclass as format_dataclass

from engines.hoi.roles import make, register
from engines.platform.endpoints import EndpointRefused, check_endpoint_url
from engines.platform.files import echo
from engines.platform.formats import FieldProblem, FormatError, format_error, read_json

TASKS = ("i2v", "edit")
ROLES = ("diffusers", "gradio", "offline")
DTYPES = ("float32", "float16", "bfloat16")
# The role table a task's role lives in (engines.hoi.roles.KINDS).
KIND_OF_TASK = {"i2v": "i2v", "edit": "editor"}
# The endpoint names of ``python -m engines.hoi serve``, the Gradio client's defaults.
DEFAULT_API_NAMES = {"i2v": "/generate", "edit": "/edit"}
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


@dataclass(frozen=True)
class PipelineSpec:
    """A diffusers pipeline class behind a config's ``pipeline`` name."""

    task: str
    class_name: str
    examples: str  # checkpoints it loads, for error messages


PIPELINES: dict[str, PipelineSpec] = {
    "wan": PipelineSpec("i2v", "WanImageToVideoPipeline", "Wan-AI/Wan2.2-I2V-A14B-Diffusers"),
    "svd": PipelineSpec("i2v", "StableVideoDiffusionPipeline", "stabilityai/stable-video-diffusion-img2vid-xt"),
    "cogvideox": PipelineSpec("i2v", "CogVideoXImageToVideoPipeline", "THUDM/CogVideoX-5b-I2V"),
    "ltx": PipelineSpec("i2v", "LTXImageToVideoPipeline", "Lightricks/LTX-Video"),
    "instruct-pix2pix": PipelineSpec("edit", "StableDiffusionInstructPix2PixPipeline", "timbrooks/instruct-pix2pix"),
    "flux-kontext": PipelineSpec("edit", "FluxKontextPipeline", "black-forest-labs/FLUX.1-Kontext-dev"),
    "qwen-image-edit": PipelineSpec("edit", "QwenImageEditPipeline", "Qwen/Qwen-Image-Edit"),
}

# Arguments the backend sets on every call: the inputs of the role's method, the seed's generator,
# and PIL output. A config may not set them (call_options), so one call means one thing.
_SET_BY_THE_ROLE = ("image", "prompt", "num_frames", "generator", "output_type", "return_dict")
# Config fields that become __call__ arguments of the same name when set.
_CALL_FIELDS = ("negative_prompt", "height", "width", "num_inference_steps", "guidance_scale")


class GenerationConfigError(FormatError):
    """A generation config that cannot be used, in the platform's wording (``engines.platform.formats``):
    the source (a file or a role's name), the field and the problem."""

    def __init__(self, field_name: str | None, problem: str, source: str | None = None) -> None:
        super().__init__(field_name or "", problem, source or "")

    def located(self, source: str) -> GenerationConfigError:
        """The same error, said of ``source`` (a file path or a role's name)."""
        return type(self)(self.field, self.problem, source)


class PipelineLoadError(GenerationConfigError):
    """The config is well formed but its ``model`` does not load (missing folder, not cached, wrong class)."""


# ---------------------------------------------------------------- field types

_CONFIG = ConfigDict(extra="forbid")
Task = Literal["i2v", "edit"]
Text = Annotated[str, Strict(), Field(min_length=1)]


def _whole(minimum: int):
    return Annotated[int, Strict(), Field(ge=minimum)] | None


def _filled(value: str | None) -> str | None:
    if value is not None and not value.strip():
        raise FieldProblem("", f"must be non-empty text (got {echo(value)})")
    return value


def _task_given(value: Any) -> Any:
    if value is None:
        raise FieldProblem("", 'is missing: say "i2v" (image to video) or "edit" (image editing)')
    return value


def _from_dict(cls, data: Any, source: str, **defaults: Any):
    """``cls(**data)`` for a config dataclass, with every error said of ``source`` in the platform's words."""
    if not isinstance(data, Mapping):
        raise GenerationConfigError(None, f"must be an object (got {type(data).__name__})", source)
    values = {**{key: value for key, value in defaults.items() if value is not None}, **data}
    try:
        return cls(**values)
    except ValidationError as exc:
        error = format_error(exc, format_name=f"a {echo(data.get('role', cls.role))} config")
        problem = error.problem
        if problem.startswith("is not a field of"):
            problem += f"; its fields are {', '.join(f.name for f in dataclass_fields(cls))}"
        raise GenerationConfigError(error.field or None, problem, source) from None


# ---------------------------------------------------------------- configs


@format_dataclass(config=_CONFIG)
class DiffusersConfig:
    """A diffusers pipeline as an I2V generator or an image editor (see the module docstring).

    Args:
        pipeline: a name of :data:`PIPELINES`.
        model: a local folder or a hub id (loaded from the cache unless ``allow_download``).
        task: "i2v" or "edit"; inferred from ``pipeline`` when left out, an error when it disagrees.
        dtype: the weights' dtype ("float32", "float16", "bfloat16").
        device: "auto", "cpu", "cuda", "cuda:N" or "mps"; default the ``HAI_DEVICE`` setting.
        num_inference_steps, height, width, guidance_scale, negative_prompt: ``__call__`` arguments
            (unset: the pipeline's defaults).
        offload: move each model to the accelerator only while it runs (``enable_model_cpu_offload``):
            slower, but far less memory (diffusers' Wan docs: about 13 GB for the 14B text-to-video model).
        allow_download: let ``from_pretrained`` fetch missing files from the Hugging Face Hub.
        variant: the weights' file variant (e.g. "fp16" for SVD's half-precision files).
        call_options: further ``__call__`` arguments by name.
    """

    pipeline: Literal[tuple(PIPELINES)]
    model: Annotated[Text, AfterValidator(_filled)]
    task: Task | None = None
    dtype: Literal[DTYPES] = "float32"  # diffusers' default: runs on any device; bfloat16 halves the memory on a GPU
    device: Annotated[str, Strict()] | None = None
    num_inference_steps: _whole(1) = None
    height: _whole(8) = None
    width: _whole(8) = None
    guidance_scale: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)] | None = None
    negative_prompt: Annotated[Text, AfterValidator(_filled)] | None = None
    offload: Annotated[bool, Strict()] = False
    allow_download: Annotated[bool, Strict()] = False
    variant: Annotated[Text, AfterValidator(_filled)] | None = None
    call_options: dict[Annotated[str, Strict()], Any] = field(default_factory=dict)
    role: Literal["diffusers"] = "diffusers"

    @field_validator("device")
    @classmethod
    def _device(cls, value: str | None) -> str | None:
        if value is not None and not _DEVICE.match(value):
            raise FieldProblem("", f'must be "auto", "cpu", "cuda", "cuda:N" or "mps" (got {echo(value)})')
        return value

    @field_validator("call_options")
    @classmethod
    def _call_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if name in _SET_BY_THE_ROLE:
                raise FieldProblem("", f"may not set {echo(name)}: the role sets it on every call")
            if name in _CALL_FIELDS:
                raise FieldProblem("", f"sets {echo(name)}, which is a field of its own; set it there")
        return value

    def __post_init__(self) -> None:
        spec = PIPELINES[self.pipeline]
        if self.task is None:
            self.task = spec.task
        if self.task != spec.task:
            raise FieldProblem("task", f"is {echo(self.task)} but pipeline {echo(self.pipeline)} "
                                       f"({spec.class_name}) does {echo(spec.task)}")

    @property
    def kind(self) -> str:
        return KIND_OF_TASK[self.task]

    def options(self) -> dict[str, Any]:
        """The keyword arguments of ``make(self.kind, "diffusers", ...)``."""
        return {key: value for key, value in asdict(self).items() if key != "role"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "generation config", *,
                  task: str | None = None) -> DiffusersConfig:
        return _from_dict(cls, data, source, task=task)


@format_dataclass(config=_CONFIG)
class GradioConfig:
    """A model served by ``python -m engines.hoi serve`` (or any Gradio app with the same endpoint).

    Args:
        url: the server's address, e.g. "http://gpu-box:7861".
        task: "i2v" or "edit".
        api_name: the endpoint; default "/generate" for i2v, "/edit" for edit.
        timeout_s: seconds to wait for one result (default: no limit; a video can take minutes).
    """

    url: Annotated[str, Strict()]
    task: Annotated[Task, BeforeValidator(_task_given), Field(validate_default=True)] = None
    api_name: Annotated[str, Strict()] | None = None
    timeout_s: Annotated[float, Strict(), Field(ge=0.001, allow_inf_nan=False)] | None = None
    role: Literal["gradio"] = "gradio"

    @field_validator("url")
    @classmethod
    def _url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise FieldProblem("", f'must be an http(s) address such as "http://127.0.0.1:7861" (got {echo(value)})')
        try:
            check_endpoint_url(value, field="url")  # the server's allowed hosts, before any request
        except EndpointRefused as refused:
            raise FieldProblem("", str(refused).removeprefix("url: ")) from None
        return value

    def __post_init__(self) -> None:
        if self.api_name is None:
            self.api_name = DEFAULT_API_NAMES[self.task]
        if not re.match(r"^/\w+$", self.api_name):
            raise FieldProblem("api_name", f'must be an endpoint name such as "/generate" (got {echo(self.api_name)})')

    @property
    def kind(self) -> str:
        return KIND_OF_TASK[self.task]

    def options(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if key != "role"}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "generation config", *,
                  task: str | None = None) -> GradioConfig:
        return _from_dict(cls, data, source, task=task)


@format_dataclass(config=_CONFIG)
class OfflineConfig:
    """The role's deterministic offline default; any other field is passed to it as an option."""

    task: Annotated[Task, BeforeValidator(_task_given), Field(validate_default=True)] = None
    extra: dict[str, Any] = field(default_factory=dict)  # the offline role's own options
    role: Literal["offline"] = "offline"

    @property
    def kind(self) -> str:
        return KIND_OF_TASK[self.task]

    def options(self) -> dict[str, Any]:
        return dict(self.extra)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "generation config", *,
                  task: str | None = None) -> OfflineConfig:
        if not isinstance(data, Mapping):
            raise GenerationConfigError(None, f"must be an object (got {type(data).__name__})", source)
        rest = {key: value for key, value in data.items() if key not in ("role", "task")}
        return _from_dict(cls, {"role": data.get("role", "offline"), "task": data.get("task", task), "extra": rest},
                          source)


GenerationConfig = DiffusersConfig | GradioConfig | OfflineConfig
_CONFIG_CLASSES = {"diffusers": DiffusersConfig, "gradio": GradioConfig, "offline": OfflineConfig}
# The module that registers each role name (imported by make_role, so a config alone is enough).
_ROLE_MODULES = {"diffusers": "engines.hoi.generation", "gradio": "engines.hoi.serve",
                 "offline": "engines.hoi.backends"}  # the registry names the offline stand-ins


def load_generation_config(source: str | Path | Mapping[str, Any], *, task: str | None = None) -> GenerationConfig:
    """The checked config of an editor or I2V role, from a JSON file or a dict.

    Args:
        source: a path to a JSON object, or the object itself. ``"role"`` picks the config:
            ``"diffusers"`` (:class:`DiffusersConfig`), ``"gradio"`` (:class:`GradioConfig`) or
            ``"offline"`` (:class:`OfflineConfig`).
        task: the task the caller needs ("i2v" for SCPE's ``--i2v``); fills a config that does not
            say, and is an error against one that says otherwise.

    Raises:
        GenerationConfigError: the file is missing or not JSON, the role is unknown, or a field is
            missing, unknown or wrong; the message names the file and the field.

    Example::

        config = load_generation_config("configs/wan.json", task="i2v")
        i2v = make_role(config)
    """
    if isinstance(source, Mapping):
        data, label = dict(source), "generation config"
    else:
        label = str(source)
        data = read_json(source, Any, format_name="a generation config", error=GenerationConfigError,
                         encoding="utf-8-sig")
    if not isinstance(data, dict):
        raise GenerationConfigError(None, f'expected a JSON object such as {{"role": "diffusers", ...}}, '
                                          f"got {type(data).__name__}", label)
    role = data.get("role")
    if role not in _CONFIG_CLASSES:
        raise GenerationConfigError("role", f"must be one of {', '.join(map(repr, ROLES))} (got {echo(role)})", label)
    if task is not None:
        if task not in TASKS:  # the caller's own argument, not the file's
            raise ValueError(f"task must be one of {', '.join(map(repr, TASKS))}, got {echo(task)}")
        if data.get("task", task) != task:
            raise GenerationConfigError("task", f"is {echo(data['task'])} but {echo(task)} is needed here", label)
    return _CONFIG_CLASSES[role].from_dict(data, label, task=task)


def require_task(config: GenerationConfig, task: str, source: str) -> GenerationConfig:
    """``config`` itself when it does ``task``; else :class:`GenerationConfigError` said of ``source``."""
    if config.task != task:
        raise GenerationConfigError("task", f"is {echo(config.task)} but {echo(task)} is needed here", source)
    return config


def make_role(config: GenerationConfig):
    """The I2V generator or image editor a config describes (``engines.hoi.roles.make``)."""
    module = _ROLE_MODULES[config.role]
    try:
        importlib.import_module(module)  # registers the role's name
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise  # the module is there but something it needs is not
    return make(config.kind, config.role, **config.options())


# ---------------------------------------------------------------- pipelines


def accepted_arguments(pipeline: Any) -> frozenset[str]:
    """The argument names a pipeline class's (or instance's) ``__call__`` takes."""
    return frozenset(name for name in inspect.signature(pipeline.__call__).parameters if name != "self")


def check_call_arguments(config: DiffusersConfig, accepted: frozenset[str]) -> None:
    """Raise :class:`GenerationConfigError` naming the first set field the pipeline does not take."""
    class_name = PIPELINES[config.pipeline].class_name
    for name in _CALL_FIELDS:
        if getattr(config, name) is not None and name not in accepted:
            hint = " (it takes min_guidance_scale and max_guidance_scale in call_options)" \
                if name == "guidance_scale" and "max_guidance_scale" in accepted else ""
            raise GenerationConfigError(name, f"is not an argument of {class_name}{hint}")
    for name in config.call_options:
        if name not in accepted:
            raise GenerationConfigError("call_options", f"sets {echo(name)}, which is not an argument of {class_name}")


def call_arguments(config: DiffusersConfig, accepted: frozenset[str], *, image: Image.Image, prompt: str,
                   seed: int, num_frames: int | None = None) -> dict[str, Any]:
    """The keyword arguments of one pipeline call: the role's inputs, the config's fields and options,
    a CPU generator seeded with ``seed`` (the same noise on any device), PIL output. Inputs the
    pipeline does not take (SVD's prompt) are left out."""
    import torch

    wanted = {"image": image, "prompt": prompt, "num_frames": num_frames,
              **{name: getattr(config, name) for name in _CALL_FIELDS}, **config.call_options}
    arguments = {name: value for name, value in wanted.items() if value is not None and name in accepted}
    arguments["generator"] = torch.Generator("cpu").manual_seed(int(seed))
    arguments["output_type"] = "pil"
    return arguments


def load_pipeline(config: DiffusersConfig) -> Any:
    """The config's diffusers pipeline, loaded (no download unless allowed) and placed on its device.

    Raises:
        GenerationConfigError: a field the pipeline does not take, or ``offload`` on the CPU.
        PipelineLoadError: the model does not load (naming it, and ``allow_download`` when that is why).
    """
    import diffusers
    import torch

    from engines.platform.torch_device import resolve_device

    spec = PIPELINES[config.pipeline]
    pipeline_class = getattr(diffusers, spec.class_name)
    check_call_arguments(config, accepted_arguments(pipeline_class))  # before reading gigabytes of weights
    device = resolve_device(config.device)
    if config.offload and device.type == "cpu":
        raise GenerationConfigError("offload", "moves models between the CPU and an accelerator, but the device is "
                                               'the CPU; set "offload": false or "device": "cuda"')
    local = Path(config.model).expanduser()
    options: dict[str, Any] = {"dtype": getattr(torch, config.dtype),
                               "local_files_only": not config.allow_download}
    if config.variant:
        options["variant"] = config.variant
    try:
        pipe = pipeline_class.from_pretrained(str(local) if local.exists() else config.model, **options)
    except (OSError, ValueError, TypeError) as exc:
        if local.exists():
            why = f"the folder {local} does not hold a {spec.class_name} ({type(exc).__name__}: {exc})"
        elif config.allow_download:
            why = f"it could not be fetched from the Hugging Face Hub ({type(exc).__name__}: {exc})"
        else:
            why = ("it is neither a local folder nor in the Hugging Face cache, and the config does not allow "
                   'downloads (add "allow_download": true to fetch it, e.g. ' f"{spec.examples})")
        raise PipelineLoadError("model", f"{echo(config.model)} does not load: {why}") from exc
    keep_float32_parts(pipe, options["dtype"])
    if config.offload:
        pipe.enable_model_cpu_offload(device=device)
    else:
        pipe.to(device)
    pipe.set_progress_bar_config(disable=True)
    return pipe


# ---------------------------------------------------------------- precision


def keep_float32_parts(pipe: Any, dtype: Any) -> Any:
    """In a half-precision pipeline, run the VAE and the scheduler's step in float32 (the module
    docstring says why); a float32 pipeline is left as it is. Returns ``pipe``."""
    import torch

    if dtype == torch.float32:
        return pipe
    vae = getattr(pipe, "vae", None)
    if vae is not None:
        from diffusers.utils import logging as diffusers_logging

        # Quiet: diffusers warns on any ``to(dtype)`` of a model with float32-only parts, which this is.
        verbosity = diffusers_logging.get_verbosity()
        diffusers_logging.set_verbosity_error()
        try:
            vae.to(dtype=torch.float32)
        finally:
            diffusers_logging.set_verbosity(verbosity)
        for _, stage in vae.named_children():
            if any(True for _ in stage.parameters()):
                _Float32Stage(dtype).attach(stage)
    scheduler = getattr(pipe, "scheduler", None)
    if scheduler is not None and not getattr(scheduler.step, "float32_step", False):
        scheduler.step = _float32_step(scheduler.step)
    return pipe


def _cast(value: Any, dtype: Any) -> Any:
    """Floating tensors in ``value`` (nested in tuples, lists and dicts) cast to ``dtype``."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(dtype) if value.is_floating_point() and value.dtype != dtype else value
    if isinstance(value, (tuple, list)):
        return type(value)(_cast(item, dtype) for item in value)
    if isinstance(value, dict):
        return {key: _cast(item, dtype) for key, item in value.items()}
    return value


def _first_float(value: Any) -> Any:
    """The dtype of ``value`` if it is a floating tensor, else of the first floating tensor directly
    in it (a tuple, list or dict, one level), else None."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.dtype if value.is_floating_point() else None
    items = value.values() if isinstance(value, dict) else value if isinstance(value, (tuple, list)) else ()
    return next((item.dtype for item in items if isinstance(item, torch.Tensor) and item.is_floating_point()), None)


class _Float32Stage:
    """Hooks on one stage of a VAE (encoder, decoder, quant convs) kept in float32: its floating
    inputs are cast to float32 on the way in, its output back to the caller's dtype on the way out,
    so the pipeline around it sees the dtype it expects."""

    def __init__(self, dtype: Any) -> None:
        self.dtype = dtype
        self.callers: list[Any] = []  # the caller's dtype per call in progress (a stage may recurse)

    def attach(self, stage: Any) -> None:
        stage.register_forward_pre_hook(self.before, with_kwargs=True)
        stage.register_forward_hook(self.after, with_kwargs=True)

    def before(self, stage: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """Only the tensors passed directly are cast: a list argument may be a cache the stage
        fills in place (Wan's encoder and decoder keep their causal-convolution caches so)."""
        import torch

        self.callers.append(_first_float(args) or _first_float(kwargs))
        return (tuple(_cast(a, torch.float32) if isinstance(a, torch.Tensor) else a for a in args),
                {k: _cast(v, torch.float32) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()})

    def after(self, stage: Any, args: tuple, kwargs: dict, output: Any) -> Any:
        import torch

        caller = self.callers.pop() if self.callers else None
        return output if caller in (None, torch.float32) else _cast(output, caller)


def _float32_step(step: Any) -> Any:
    """A scheduler's ``step(model_output, timestep, sample, ...)`` on float32 inputs, its output
    (``prev_sample``, ``pred_original_sample``) handed back in the sample's dtype."""
    import torch

    @functools.wraps(step)
    def run(*args: Any, **kwargs: Any) -> Any:
        sample = kwargs.get("sample", args[2] if len(args) > 2 else None)
        dtype = _first_float(sample) or _first_float(kwargs.get("model_output", args[0] if args else None))
        result = step(*_cast(args, torch.float32), **_cast(kwargs, torch.float32))
        if dtype is None or dtype == torch.float32:
            return result
        if isinstance(result, tuple):
            return _cast(result, dtype)
        for key in list(result.keys()):  # a SchedulerOutput (an ordered dict with attributes)
            result[key] = _cast(result[key], dtype)
        return result

    run.float32_step = True
    return run


@contextlib.contextmanager
def call_precision(dtype: str) -> Iterator[None]:
    """The arithmetic of one pipeline call: float32 exact (no TF32) for a float32 pipeline, float32
    reductions in half-precision matrix products for a half one (``engines.platform.torch_device``)."""
    from engines.platform.torch_device import exact_float32, full_precision_reductions

    with exact_float32() if dtype == "float32" else full_precision_reductions():
        yield


def _rgb(image: Any) -> Image.Image:
    if not isinstance(image, Image.Image):
        raise TypeError(f"the source image must be a PIL image, got {type(image).__name__}")
    return image.convert("RGB")


class _DiffusersRole:
    def __init__(self, pipe: Any, config: DiffusersConfig) -> None:
        self.pipe, self.config = pipe, config
        self.name = f"diffusers:{config.pipeline}:{config.model}"
        self.accepted = accepted_arguments(pipe)
        check_call_arguments(config, self.accepted)
        # A pipeline keeps its scheduler's state between denoising steps: one call at a time.
        self._lock = threading.Lock()


class DiffusersVideoGenerator(_DiffusersRole):
    """The I2V role (``I2VGenerator``) over a diffusers image-to-video pipeline."""

    def generate(self, image: Image.Image, prompt: str, *, num_frames: int = 17, seed: int = 0) -> list[Image.Image]:
        """Frames of a video that starts at ``image`` and follows ``prompt``, as RGB PIL images.

        The pipeline may round ``num_frames`` to a count its VAE decodes (Wan: 4k + 1)."""
        if isinstance(num_frames, bool) or not isinstance(num_frames, int) or num_frames < 1:
            raise ValueError(f"num_frames must be a whole number >= 1, got {echo(num_frames)}")
        arguments = call_arguments(self.config, self.accepted, image=_rgb(image), prompt=prompt, seed=seed,
                                   num_frames=num_frames)
        with self._lock, call_precision(self.config.dtype):
            output = self.pipe(**arguments)
        video = output.frames[0]  # (batch of one) -> its frames
        return [frame.convert("RGB") for frame in video]


class DiffusersImageEditor(_DiffusersRole):
    """The image-editor role (``ImageEditor``) over a diffusers instruction-editing pipeline."""

    def edit(self, image: Image.Image, instruction: str, *, seed: int = 0) -> Image.Image:
        """``image`` edited as ``instruction`` says, as an RGB PIL image."""
        arguments = call_arguments(self.config, self.accepted, image=_rgb(image), prompt=instruction, seed=seed)
        with self._lock, call_precision(self.config.dtype):
            output = self.pipe(**arguments)
        return output.images[0].convert("RGB")


@register("i2v", "diffusers")
def diffusers_i2v(**options: Any) -> DiffusersVideoGenerator:
    """An I2V generator from the fields of a :class:`DiffusersConfig` (``pipeline``, ``model``, ...)."""
    config = require_task(DiffusersConfig.from_dict(options, "i2v 'diffusers'", task="i2v"), "i2v", "i2v 'diffusers'")
    try:
        return DiffusersVideoGenerator(load_pipeline(config), config)
    except GenerationConfigError as error:
        raise error.located("i2v 'diffusers'") from error.__cause__


@register("editor", "diffusers")
def diffusers_editor(**options: Any) -> DiffusersImageEditor:
    """An image editor from the fields of a :class:`DiffusersConfig` (``pipeline``, ``model``, ...)."""
    config = require_task(DiffusersConfig.from_dict(options, "editor 'diffusers'", task="edit"), "edit",
                          "editor 'diffusers'")
    try:
        return DiffusersImageEditor(load_pipeline(config), config)
    except GenerationConfigError as error:
        raise error.located("editor 'diffusers'") from error.__cause__
