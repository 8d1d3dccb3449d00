"""Tiny, randomly initialised diffusers pipelines of the HOI-Edit generation roles, built from config.

The I2V generator and the image editor of HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``;
``docs/hoi.md``, "Editing backends and serving them") run real diffusers pipelines (``engines.hoi.generation``). To try
and test that path with no weights, no network and no GPU, this module builds the same pipeline
classes with a few thousand random parameters, as diffusers' own fast tests do
(``tests/pipelines/wan/test_wan_22_image_to_video.py``,
``tests/pipelines/stable_video_diffusion/test_stable_video_diffusion.py``,
``tests/pipelines/stable_diffusion/test_stable_diffusion_instruction_pix2pix.py``), with two
changes that keep everything offline:

- the text encoders' tokenizers are a ``PreTrainedTokenizerFast`` over a small word-level
  vocabulary built here (upstream's tests download ``hf-internal-testing/tiny-random-t5``);
- SVD's image encoder is a ``CLIPVisionConfig(image_size=224, patch_size=32)``: the upstream test's
  ``image_size=32, patch_size=1`` fails under transformers 5, whose CLIP image processor crops to
  224 pixels.

Wan is the Wan2.2-A14B layout without a CLIP image encoder (``image_encoder=None``, the image
enters through the VAE latents only). The frames they produce are noise; what they prove is that
a pipeline is loaded, called and read back the way a real checkpoint is.

:func:`save_tiny` writes one with ``save_pretrained`` and returns the generation config that loads
it from that folder (``local_files_only``), as a user's downloaded checkpoint would be;
:func:`tiny_role` wraps one built in memory in the diffusers role (``serve --tiny``, reached through
the registry ``engines.hoi.backends``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

# Random weights, so the vocabulary only has to turn the prompts of the tests and the demo into ids;
# any other word becomes <unk>.
_WORDS = ("<pad>", "</s>", "<unk>", "<s>", "a", "the", "person", "picks", "up", "puts", "down", "holds",
          "opens", "closes", "cup", "box", "door", "ball", "bag", "camera", "is", "fixed", "and", "only",
          "one", "in", "frame", "make", "pick", "put")
_MAX_TOKENS = 16  # prompts are cut to this many tokens; the text encoders' positions cover it

# What each tiny pipeline is called with: sizes its VAE divides, few steps, few frames.
TINY_SETTINGS: dict[str, dict[str, Any]] = {
    # Wan: 8x spatial VAE and 2x2 patches, so sides are multiples of 16; frames are 4k + 1.
    "wan": {"task": "i2v", "height": 16, "width": 16, "num_inference_steps": 2,
            "call_options": {"max_sequence_length": _MAX_TOKENS}},
    # SVD: a 2-level VAE (2x spatial) and a 2-level UNet; the UNet's group norms need 32 channels.
    "svd": {"task": "i2v", "height": 32, "width": 32, "num_inference_steps": 2,
            "call_options": {"decode_chunk_size": 8}},
    # InstructPix2Pix edits at the source image's size (its __call__ takes no height or width).
    "instruct-pix2pix": {"task": "edit", "num_inference_steps": 2},
}
TINY_NAMES = tuple(TINY_SETTINGS)


def word_tokenizer(max_length: int = _MAX_TOKENS):
    """A fast tokenizer over :data:`_WORDS` (whitespace split, lower-cased), padding with id 0."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.WordLevel(vocab={word: i for i, word in enumerate(_WORDS)}, unk_token="<unk>"))
    core.normalizer = normalizers.Lowercase()
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
                                   bos_token="<s>", model_max_length=max_length)


def tiny_wan(seed: int = 0):
    """A ``WanImageToVideoPipeline`` with 2-layer transformer and text encoder (about 0.26 MB saved).

    Sizes as upstream's Wan2.2 I2V fast test; the text encoder is a UMT5 (the class Wan's
    checkpoints use) over :func:`word_tokenizer`."""
    import torch
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanImageToVideoPipeline, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    torch.manual_seed(seed)
    text_encoder = UMT5EncoderModel(UMT5Config(vocab_size=len(_WORDS), d_model=32, d_kv=8, d_ff=37, num_layers=2,
                                               num_heads=4, pad_token_id=0, eos_token_id=1))
    vae = AutoencoderKLWan(base_dim=3, z_dim=16, dim_mult=[1, 1, 1, 1], num_res_blocks=1,
                           temperal_downsample=[False, True, True])
    # in_channels 36 = 16 noise latents + 4 mask channels + 16 latents of the conditioning image.
    transformer = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12,
                                        in_channels=36, out_channels=16, text_dim=32, freq_dim=256, ffn_dim=32,
                                        num_layers=2, cross_attn_norm=True, qk_norm="rms_norm_across_heads",
                                        rope_max_seq_len=32, image_dim=None)
    scheduler = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=3.0)
    return WanImageToVideoPipeline(tokenizer=word_tokenizer(), text_encoder=text_encoder, vae=vae,
                                   scheduler=scheduler, transformer=transformer, image_encoder=None,
                                   image_processor=None)


def tiny_svd(seed: int = 0):
    """A ``StableVideoDiffusionPipeline`` with a 2-level spatio-temporal UNet (about 8 MB saved).

    SVD conditions on the image only (no prompt): a CLIP image embedding and the VAE latents."""
    import torch
    from diffusers import (
        AutoencoderKLTemporalDecoder,
        EulerDiscreteScheduler,
        StableVideoDiffusionPipeline,
        UNetSpatioTemporalConditionModel,
    )
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModelWithProjection

    torch.manual_seed(seed)
    # projection_class_embeddings_input_dim = 3 added time ids (fps, motion bucket, noise) x addition_time_embed_dim.
    unet = UNetSpatioTemporalConditionModel(
        block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=8, out_channels=4,
        down_block_types=("CrossAttnDownBlockSpatioTemporal", "DownBlockSpatioTemporal"),
        up_block_types=("UpBlockSpatioTemporal", "CrossAttnUpBlockSpatioTemporal"),
        cross_attention_dim=32, num_attention_heads=2, projection_class_embeddings_input_dim=24,
        addition_time_embed_dim=8)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                                       down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                                       latent_channels=4, layers_per_block=1)
    image_encoder = CLIPVisionModelWithProjection(CLIPVisionConfig(
        hidden_size=32, projection_dim=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
        image_size=224, patch_size=32))
    # The scheduler of SVD's released checkpoints (continuous-time Karras sigmas, v-prediction).
    scheduler = EulerDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                                       interpolation_type="linear", num_train_timesteps=1000,
                                       prediction_type="v_prediction", sigma_max=700.0, sigma_min=0.002,
                                       steps_offset=1, timestep_spacing="leading", timestep_type="continuous",
                                       use_karras_sigmas=True)
    return StableVideoDiffusionPipeline(vae=vae, image_encoder=image_encoder, unet=unet, scheduler=scheduler,
                                        feature_extractor=CLIPImageProcessor(crop_size=224, size=224))


def tiny_instruct_pix2pix(seed: int = 0):
    """A ``StableDiffusionInstructPix2PixPipeline`` with a 2-level UNet and a 2-layer CLIP text encoder.

    The UNet reads 8 channels: the noisy latents and the source image's latents (InstructPix2Pix's
    image conditioning)."""
    import torch
    from diffusers import (
        AutoencoderKL,
        EulerAncestralDiscreteScheduler,
        StableDiffusionInstructPix2PixPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    unet = UNet2DConditionModel(block_out_channels=(32, 64), layers_per_block=1, sample_size=16, in_channels=8,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=8)
    vae = AutoencoderKL(block_out_channels=[32, 64], in_channels=3, out_channels=3,
                        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
                        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"], latent_channels=4,
                        layers_per_block=1)
    text_encoder = CLIPTextModel(CLIPTextConfig(vocab_size=len(_WORDS), hidden_size=32, intermediate_size=37,
                                                num_attention_heads=4, num_hidden_layers=2, pad_token_id=0,
                                                bos_token_id=3, eos_token_id=1, max_position_embeddings=_MAX_TOKENS))
    return StableDiffusionInstructPix2PixPipeline(
        vae=vae, text_encoder=text_encoder, tokenizer=word_tokenizer(), unet=unet,
        scheduler=EulerAncestralDiscreteScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear"),
        safety_checker=None, feature_extractor=None, requires_safety_checker=False)


_BUILDERS = {"wan": tiny_wan, "svd": tiny_svd, "instruct-pix2pix": tiny_instruct_pix2pix}


def build_tiny(name: str, seed: int = 0):
    """The tiny pipeline ``name`` (one of :data:`TINY_NAMES`), in memory."""
    if name not in _BUILDERS:
        raise ValueError(f"no tiny pipeline {name!r}; choose one of {', '.join(TINY_NAMES)}")
    pipe = _BUILDERS[name](seed)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def tiny_config(name: str, folder: str | Path, *, dtype: str = "float32", device: str = "cpu") -> dict[str, Any]:
    """The generation config (``engines.hoi.generation``) that loads the tiny ``name`` saved in ``folder``,
    in ``dtype`` on ``device`` (saved in float32; ``from_pretrained`` casts, and a half-precision
    pipeline keeps its VAE and scheduler step in float32 as a real checkpoint's would)."""
    if name not in TINY_SETTINGS:
        raise ValueError(f"no tiny pipeline {name!r}; choose one of {', '.join(TINY_NAMES)}")
    settings = TINY_SETTINGS[name]
    return {"role": "diffusers", "pipeline": name, "model": str(folder), "device": device, "dtype": dtype,
            **{key: (dict(value) if isinstance(value, dict) else value) for key, value in settings.items()}}


def save_tiny(name: str, folder: str | Path, seed: int = 0) -> dict[str, Any]:
    """Build the tiny ``name``, ``save_pretrained`` it to ``folder`` and return :func:`tiny_config`.

    Example::

        config = save_tiny("wan", "/tmp/tiny-wan")
        i2v = make("i2v", "diffusers", **{k: v for k, v in config.items() if k != "role"})
    """
    folder = Path(folder)
    build_tiny(name, seed).save_pretrained(folder)
    return tiny_config(name, folder)


def tiny_role(name: str):
    """The tiny ``name`` built in memory, as the diffusers role a saved one would load into:
    ``(role, task)`` (``python -m engines.hoi serve --tiny NAME``)."""
    from engines.hoi.generation import DiffusersConfig, DiffusersImageEditor, DiffusersVideoGenerator

    if name not in TINY_SETTINGS:
        raise ValueError(f"no tiny pipeline {name!r}; choose one of {', '.join(TINY_NAMES)}")
    config = DiffusersConfig.from_dict({key: value for key, value in tiny_config(name, f"tiny-{name}").items()
                                        if key != "role"}, f"tiny {name}")
    role_class = DiffusersVideoGenerator if config.task == "i2v" else DiffusersImageEditor
    return role_class(build_tiny(name), config), config.task
