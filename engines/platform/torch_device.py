"""Where model work runs, and the one rule for its inputs: they follow the model's device.

- ``resolve_device``: the device a model is *placed* on when it is loaded or built: the argument,
  else the ``HAI_DEVICE`` setting ("auto": CUDA when present, else the CPU).
- ``model_device`` / ``inputs_to``: once a model exists, work on it goes where its weights are.
  Code that runs a model never reads ``HAI_DEVICE`` again: it asks the model, and moves images,
  masks, baselines and context there (a model a caller placed elsewhere is honoured as it is).
- ``to_host``: the one copy of a finished result back to the CPU (a "meta" tensor, which has a
  shape but no data, comes back as zeros: tests run whole model paths on the meta device to
  catch a tensor left on the wrong device on machines without a GPU).
- ``exact_float32`` / ``full_precision_reductions``: blocks where CUDA computes float32 as
  float32 (no TF32) and half-precision matrix products reduce in float32. On Ampere and later
  GPUs cuDNN convolutions run in TF32 by default (10 mantissa bits: relative errors up to about
  ``TF32_UNIT_ROUNDOFF``, 1e-3 in a small CNN's outputs), so code that claims values equal to
  the CPU's turns it off; tolerances of code that keeps it follow from that unit roundoff.

torch is imported only when a device is asked for, so the platform itself never needs it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# TF32 keeps 10 of float32's 23 mantissa bits: its unit roundoff is 2^-11 (float32's is 2^-24).
TF32_UNIT_ROUNDOFF = 2.0 ** -11
FLOAT32_UNIT_ROUNDOFF = 2.0 ** -24


def resolve_device(device: Any = None) -> Any:
    """A ``torch.device``: the argument, else the ``HAI_DEVICE`` setting; "auto" picks CUDA when there is one."""
    import torch

    if device is None:
        try:
            from engines.platform.settings import get_settings

            device = get_settings().device
        except Exception:  # noqa: BLE001 - settings unreadable (a bare checkout): the CPU is always safe
            device = "cpu"
    if str(device) == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def model_device(model: Any) -> Any:
    """The ``torch.device`` a model computes on, or None when it does not say.

    A torch module: where its first parameter (else its first buffer) lives; a module with
    neither says nothing. Any other object: its ``device`` attribute when it has one (a
    transformers model, a diffusers pipeline, a policy wrapper that asks its own model). A plain
    function says nothing: its inputs stay where they are.
    """
    import torch

    if isinstance(model, torch.nn.Module):
        for tensor in model.parameters():
            return tensor.device
        for tensor in model.buffers():
            return tensor.device
        return None
    device = getattr(model, "device", None)
    if device is None or callable(device):
        return None
    return torch.device(device)


def inputs_to(model: Any, *values: Any) -> Any:
    """``values`` moved to ``model``'s device (``model_device``): tensors move, anything else (text,
    lists, None) is returned as it is; so are the tensors when the model does not say where it is.
    One value in, that value out; several in, a tuple out."""
    device = model_device(model)
    moved = tuple(_moved(value, device) for value in values)
    return moved[0] if len(moved) == 1 else moved


def _moved(value: Any, device: Any) -> Any:
    import torch

    if device is None or not isinstance(value, torch.Tensor) or value.device == device:
        return value
    return value.to(device)


def to_host(tensor: Any) -> Any:
    """``tensor`` on the CPU: the one transfer back after the work on the model's device.

    A meta tensor has no data to copy; it comes back as zeros of its shape and dtype, so that a
    whole model path can be run on the meta device (which refuses any mixing with CPU tensors)
    to check where its work happens."""
    import torch

    if tensor.device.type == "meta":
        return torch.zeros(tensor.shape, dtype=tensor.dtype)
    return tensor.detach().cpu()


def cuda_available() -> bool:
    """Whether torch can use a CUDA device here (a CUDA build and a GPU)."""
    import torch

    return torch.cuda.is_available()


def describe_device(device: Any) -> str:
    """A device as a person reads it: "cuda:0 (NVIDIA H200)", or "cpu (no CUDA device)" (``no_cuda_reason`` says why)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        return f"cuda:{index} ({torch.cuda.get_device_name(index)})"
    if device.type == "cpu":
        return "cpu (no CUDA device)" if not torch.cuda.is_available() else "cpu (a CUDA device is present but not used)"
    return str(device)


def no_cuda_reason() -> str | None:
    """Why torch has no CUDA device here, or None when it has one."""
    import torch

    if torch.cuda.is_available():
        return None
    if not torch.backends.cuda.is_built():
        return f"torch {torch.__version__} is a CPU-only build (install its CUDA build to use a GPU)"
    return f"torch {torch.__version__} is built for CUDA {torch.version.cuda}, but it finds no GPU or driver"


# ---------------------------------------------------------------- precision


def _precision_flags() -> dict[str, str]:
    """The TF32 switches of torch's per-backend API (``fp32_precision``), readable in any state (the
    legacy ``allow_tf32`` getters raise once the two APIs were mixed)."""
    import torch

    backends = torch.backends
    return {"cudnn.conv": backends.cudnn.conv.fp32_precision, "cudnn.rnn": backends.cudnn.rnn.fp32_precision,
            "cuda.matmul": backends.cuda.matmul.fp32_precision,
            "mkldnn.matmul": backends.mkldnn.matmul.fp32_precision}


def _set_precision_flags(flags: dict[str, str]) -> None:
    import torch

    backends = torch.backends
    backends.cudnn.conv.fp32_precision = flags["cudnn.conv"]
    backends.cudnn.rnn.fp32_precision = flags["cudnn.rnn"]
    backends.cuda.matmul.fp32_precision = flags["cuda.matmul"]
    backends.mkldnn.matmul.fp32_precision = flags["mkldnn.matmul"]


def tf32_enabled() -> bool:
    """Whether float32 convolutions or matrix products may run in reduced precision (TF32) now."""
    import torch

    try:
        if torch.get_float32_matmul_precision() != "highest":
            return True
    except RuntimeError:  # the two APIs mixed elsewhere: assume the worse case
        return True
    return _tf32(_precision_flags()["cudnn.conv"], lambda: torch.backends.cudnn.allow_tf32)


def _tf32(flag: str, legacy) -> bool:
    """One switch: the per-backend value when it is set, else ("none") the legacy ``allow_tf32`` it defers to."""
    if flag in ("tf32", "ieee"):
        return flag == "tf32"
    try:
        return bool(legacy())
    except RuntimeError:  # the two APIs mixed elsewhere: assume the worse case
        return True


@contextlib.contextmanager
def exact_float32() -> Iterator[None]:
    """Within the block, float32 work is float32: no TF32 in cuDNN convolutions and RNNs nor in
    matrix products (CUDA's, and oneDNN's on the CPU); the previous switches come back after it,
    also when it raises.

    Switched through the calls that keep both of torch's APIs readable inside the block (a library
    reading ``torch.backends.cudnn.allow_tf32`` there gets False, not an error), restored through
    the per-backend values, which give back exactly the state before. The switches are
    process-wide: another thread's work meanwhile is exact too (slower, never less precise)."""
    import torch

    flags = _precision_flags()
    legacy = _legacy_switches()
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        if legacy is None:
            _set_precision_flags(flags)
        else:  # set as they were set: the new API's setters would leave the legacy getters raising
            torch.backends.cudnn.allow_tf32, matmul_precision = legacy
            torch.set_float32_matmul_precision(matmul_precision)


def _legacy_switches() -> tuple[bool, str] | None:
    """(``cudnn.allow_tf32``, the float32 matmul precision) when torch can say them, else None."""
    import torch

    try:
        return bool(torch.backends.cudnn.allow_tf32), torch.get_float32_matmul_precision()
    except RuntimeError:
        return None


@contextlib.contextmanager
def full_precision_reductions() -> Iterator[None]:
    """Within the block, float16 and bfloat16 matrix products on CUDA reduce in float32 (cuBLAS may
    otherwise sum split-K partial products in half precision, a GPU-only loss the CPU never has);
    restored after. Process-wide, like ``exact_float32``."""
    import torch

    matmul = torch.backends.cuda.matmul
    before = (matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction)
    matmul.allow_fp16_reduced_precision_reduction = False
    matmul.allow_bf16_reduced_precision_reduction = False
    try:
        yield
    finally:
        matmul.allow_fp16_reduced_precision_reduction, matmul.allow_bf16_reduced_precision_reduction = before


def synchronize(device: Any) -> None:
    """Wait for the work queued on ``device`` (CUDA runs asynchronously; timings need this)."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
