"""The diffusers editor and I2V roles: tiny random pipelines saved to folders and loaded back as a user's
checkpoint would be (``local_files_only``), and the generation configs' checks."""

import json
import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing here may reach the Hub, even by mistake

import pytest
import torch
from PIL import Image

from engines.hoi.generation import (
    DiffusersConfig,
    GenerationConfigError,
    GradioConfig,
    OfflineConfig,
    PipelineLoadError,
    load_generation_config,
    make_role,
)
from engines.hoi.offline.tiny_pipelines import save_tiny
from engines.hoi.roles import make

PROMPT = "the person picks up the cup"


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # Tiny models gain nothing from threads, and on a shared machine their threads only contend.
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The tiny pipelines' generation configs, each pointing at its saved folder."""
    root = tmp_path_factory.mktemp("tiny")
    return {name: save_tiny(name, root / name) for name in ("wan", "svd", "instruct-pix2pix")}


def options(config: dict) -> dict:
    return {key: value for key, value in config.items() if key != "role"}


def source(width: int = 40, height: int = 30) -> Image.Image:
    image = Image.new("RGB", (width, height), (200, 30, 30))
    image.paste((20, 20, 220), (0, 0, width // 2, height))  # left half blue, right half red
    return image


def pixels(frames: list[Image.Image]) -> list[bytes]:
    return [frame.tobytes() for frame in frames]


def test_wan_loaded_from_its_folder_makes_the_asked_frames_at_the_configured_size(saved):
    wan = make("i2v", "diffusers", **options(saved["wan"]))
    frames = wan.generate(source(), PROMPT, num_frames=5, seed=3)
    assert len(frames) == 5
    assert all(frame.size == (16, 16) and frame.mode == "RGB" for frame in frames)
    assert pixels(wan.generate(source(), PROMPT, num_frames=5, seed=3)) == pixels(frames)  # the seed fixes the noise
    assert pixels(wan.generate(source(), PROMPT, num_frames=5, seed=4)) != pixels(frames)


def test_wan_rounds_the_frame_count_to_what_its_vae_decodes(saved):
    # Wan's VAE packs 4 frames per latent after the first: 6 frames become 6 // 4 * 4 + 1 = 5.
    wan = make("i2v", "diffusers", **options(saved["wan"]))
    assert len(wan.generate(source(), PROMPT, num_frames=6, seed=0)) == 5


def test_svd_takes_no_prompt_and_makes_the_asked_frames(saved):
    svd = make_role(load_generation_config(saved["svd"]))
    frames = svd.generate(source(), PROMPT, num_frames=3, seed=1)
    assert [frame.size for frame in frames] == [(32, 32)] * 3
    # SVD conditions on the image alone, so another prompt with the same seed changes nothing.
    assert pixels(svd.generate(source(), "a different prompt", num_frames=3, seed=1)) == pixels(frames)


def test_instruct_pix2pix_edits_at_the_source_size(saved):
    editor = make("editor", "diffusers", **options(saved["instruct-pix2pix"]))
    edited = editor.edit(source(40, 32), "make the person pick up the cup", seed=0)
    assert edited.size == (40, 32) and edited.mode == "RGB"


def test_a_config_file_loads_into_its_role(saved, tmp_path):
    path = tmp_path / "wan.json"
    path.write_text(json.dumps(saved["wan"]), encoding="utf-8")
    config = load_generation_config(path, task="i2v")
    assert isinstance(config, DiffusersConfig)
    assert (config.pipeline, config.task, config.kind, config.height) == ("wan", "i2v", "i2v", 16)
    assert len(make_role(config).generate(source(), PROMPT, num_frames=1, seed=0)) == 1


def test_a_model_that_is_not_local_is_not_downloaded_and_the_error_says_how():
    with pytest.raises(PipelineLoadError) as caught:
        make("i2v", "diffusers", pipeline="svd", model="someone/not-a-cached-model")
    message = str(caught.value)
    assert "someone/not-a-cached-model" in message and '"allow_download": true' in message


def test_a_field_the_pipeline_does_not_take_is_named_before_any_weight_is_read():
    # The folder does not exist: the argument check comes first, so that is the error.
    with pytest.raises(GenerationConfigError, match=r"guidance_scale: is not an argument of "
                                                    r"StableVideoDiffusionPipeline.*max_guidance_scale"):
        make("i2v", "diffusers", pipeline="svd", model="/no/such/folder", guidance_scale=3.0)
    with pytest.raises(GenerationConfigError, match=r"'bogus', which is not an argument of WanImageToVideoPipeline"):
        make("i2v", "diffusers", pipeline="wan", model="/no/such/folder", call_options={"bogus": 1})


def test_offload_on_the_cpu_is_refused(saved):
    with pytest.raises(GenerationConfigError, match="i2v 'diffusers': offload: moves models between the CPU and an accelerator"):
        make("i2v", "diffusers", **{**options(saved["wan"]), "offload": True, "device": "cpu"})


@pytest.mark.parametrize(("config", "message"), [
    ({"role": "diffusers", "pipeline": "sora", "model": "m"}, "pipeline: must be one of 'wan'"),
    ({"role": "diffusers", "pipeline": "wan"}, "model: is missing"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "modle": "m"},
     "modle: is not a field of a 'diffusers' config; its fields are pipeline, model, task,"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "task": "edit"},
     "task: is 'edit' but pipeline 'wan'"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "dtype": "fp8"}, "dtype: must be one of"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "device": "gpu"}, "device: must be"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "height": 0}, "height: must be at least 8 (got 0)"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "num_inference_steps": True},
     "num_inference_steps: must be a whole number"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "offload": "yes"}, "offload: must be true or false"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "call_options": {"generator": 1}},
     "call_options: may not set 'generator'"),
    ({"role": "diffusers", "pipeline": "wan", "model": "m", "call_options": {"height": 64}},
     "call_options: sets 'height', which is a field of its own"),
    ({"role": "gradio", "task": "i2v", "url": "gpu-box:7861"}, "url: must be an http(s) address"),
    ({"role": "gradio", "url": "http://gpu-box:7861"}, "task: is missing"),
    ({"role": "vllm"}, "role: must be one of 'diffusers', 'gradio', 'offline'"),
])
def test_bad_configs_name_the_file_and_the_field(tmp_path, config, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(GenerationConfigError) as caught:
        load_generation_config(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_unreadable_config_files_are_named(tmp_path):
    with pytest.raises(GenerationConfigError, match="missing.json: cannot read"):
        load_generation_config(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text('{"role": "diffusers",', encoding="utf-8")
    with pytest.raises(GenerationConfigError, match=r"broken.json: not valid JSON .* line 1"):
        load_generation_config(tmp_path / "broken.json")


def test_the_task_a_command_needs_fills_or_refuses_the_config():
    assert load_generation_config({"role": "gradio", "url": "http://gpu-box:7861"}, task="i2v").task == "i2v"
    with pytest.raises(GenerationConfigError, match="task: is 'edit' but 'i2v' is needed here"):
        load_generation_config({"role": "gradio", "task": "edit", "url": "http://gpu-box:7861"}, task="i2v")
    with pytest.raises(GenerationConfigError, match="pipeline 'flux-kontext'"):
        load_generation_config({"role": "diffusers", "pipeline": "flux-kontext", "model": "m"}, task="i2v")


def test_each_role_gets_its_defaults_and_options():
    wan = load_generation_config({"role": "diffusers", "pipeline": "wan", "model": "m"})
    assert (wan.task, wan.dtype, wan.offload, wan.allow_download) == ("i2v", "float32", False, False)
    kontext = load_generation_config({"role": "diffusers", "pipeline": "flux-kontext", "model": "m"})
    assert (kontext.task, kontext.kind) == ("edit", "editor")
    served = load_generation_config({"role": "gradio", "task": "edit", "url": "http://gpu-box:7861"})
    assert isinstance(served, GradioConfig) and served.api_name == "/edit"
    offline = load_generation_config({"role": "offline", "task": "i2v", "frames": 4})
    assert isinstance(offline, OfflineConfig) and offline.options() == {"frames": 4}


def test_an_offline_config_makes_the_offline_default():
    assert make_role(load_generation_config({"role": "offline"}, task="i2v")).name == "offline"
