"""The device rule: HAI_DEVICE places models, inputs follow the model, results come back once, and
the blocks that keep CUDA's float32 exact. The switches are process-wide flags that a CPU build of
torch also holds, so they are checked here on any machine; the CUDA-marked tests run on a GPU."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from engines.platform import settings
from engines.platform.torch_device import (
    TF32_UNIT_ROUNDOFF,
    describe_device,
    exact_float32,
    full_precision_reductions,
    inputs_to,
    model_device,
    no_cuda_reason,
    resolve_device,
    tf32_enabled,
    to_host,
)


@pytest.fixture
def hai_device(monkeypatch):
    def set_to(value: str) -> None:
        monkeypatch.setenv("HAI_DEVICE", value)
        settings.reset_settings()

    yield set_to
    settings.reset_settings()


def test_the_setting_places_models_and_auto_means_cuda_only_when_there_is_one(hai_device):
    hai_device("cpu")
    assert resolve_device() == torch.device("cpu")
    hai_device("cuda")  # said, not checked: the model's loading is where a missing GPU shows
    assert resolve_device() == torch.device("cuda")
    hai_device("auto")
    assert resolve_device() == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert resolve_device("cpu") == torch.device("cpu")  # an explicit device wins over the setting


def test_a_model_says_where_it_is_by_its_weights_not_by_the_setting(hai_device):
    hai_device("cuda")
    on_meta = nn.Linear(2, 2).to("meta")
    assert model_device(on_meta) == torch.device("meta")
    assert model_device(nn.BatchNorm1d(2, affine=False).to("meta")) == torch.device("meta")  # buffers only
    assert model_device(nn.ReLU()) is None  # no weights: it says nothing
    assert model_device(lambda images: images) is None

    class Wrapper:
        device = "meta"

    assert model_device(Wrapper()) == torch.device("meta")


def test_inputs_follow_the_model_and_everything_else_is_left_alone():
    model = nn.Linear(2, 2).to("meta")
    image, text = torch.ones(2), "pick up the cup"
    moved, same_text, nothing = inputs_to(model, image, text, None)
    assert moved.device.type == "meta" and same_text is text and nothing is None
    assert inputs_to(model, image).device.type == "meta"  # one in, one out
    assert inputs_to(lambda x: x, image) is image  # a model that does not say: the input stays


def test_results_come_back_to_the_cpu_and_meta_ones_as_zeros():
    assert to_host(torch.ones(2, device="meta")).tolist() == [0.0, 0.0]
    value = torch.ones(3, requires_grad=True) * 2
    host = to_host(value)
    assert host.device.type == "cpu" and not host.requires_grad


def test_exact_float32_turns_tf32_off_inside_and_restores_it_after_even_on_error():
    assert tf32_enabled()  # torch's default: cuDNN convolutions may use TF32
    with exact_float32():
        assert not tf32_enabled()
        assert torch.backends.cudnn.allow_tf32 is False  # the legacy getter still reads (libraries use it)
        assert torch.get_float32_matmul_precision() == "highest"
    assert tf32_enabled() and torch.backends.cudnn.allow_tf32 is True
    with pytest.raises(KeyError), exact_float32():
        raise KeyError("inside")
    assert tf32_enabled()


def test_exact_float32_gives_back_a_lower_matmul_precision_a_caller_chose():
    torch.set_float32_matmul_precision("high")
    try:
        with exact_float32():
            assert torch.get_float32_matmul_precision() == "highest"
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision("highest")


def test_full_precision_reductions_switch_off_half_precision_partial_sums_and_restore_them():
    matmul = torch.backends.cuda.matmul
    assert matmul.allow_fp16_reduced_precision_reduction and matmul.allow_bf16_reduced_precision_reduction
    with full_precision_reductions():
        assert not matmul.allow_fp16_reduced_precision_reduction
        assert not matmul.allow_bf16_reduced_precision_reduction
    assert matmul.allow_fp16_reduced_precision_reduction and matmul.allow_bf16_reduced_precision_reduction


def test_a_cpu_device_is_described_with_the_reason_there_is_no_gpu():
    if torch.cuda.is_available():
        assert describe_device("cpu") == "cpu (a CUDA device is present but not used)" and no_cuda_reason() is None
    else:
        assert describe_device("cpu") == "cpu (no CUDA device)"
        assert no_cuda_reason().startswith(f"torch {torch.__version__} is ")


# ---------------------------------------------------------------- on a GPU


@pytest.mark.cuda
def test_on_cuda_inputs_follow_a_model_on_the_gpu_and_come_back_once():
    model = nn.Conv2d(3, 4, 3).cuda()
    image = torch.rand(1, 3, 8, 8)
    moved = inputs_to(model, image)
    assert moved.device.type == "cuda" and model_device(model).type == "cuda"
    assert to_host(model(moved)).device.type == "cpu"
    assert describe_device("cuda").startswith("cuda:0 (")


@pytest.mark.cuda
def test_on_cuda_exact_float32_matches_the_cpu_and_tf32_stays_within_its_roundoff():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 5), nn.ReLU(), nn.Conv2d(32, 32, 5), nn.Flatten(), nn.LazyLinear(8))
    image = torch.rand(4, 3, 32, 32)
    expected = model(image).detach()
    model.cuda()
    with exact_float32():
        exact = model(image.cuda()).detach().cpu()
    scale = expected.abs().max()
    assert (exact - expected).abs().max() <= 1e-5 * scale
    with torch.no_grad():
        torch.backends.cudnn.allow_tf32 = True
        fast = model(image.cuda()).cpu()
    # TF32 rounds each operand to 10 mantissa bits: a few unit roundoffs per layer at most.
    assert (fast - expected).abs().max() <= 3 * 16 * TF32_UNIT_ROUNDOFF * scale
