"""What the shape-counting CNN is and how it is trained: its configs, without torch.

``CounterConfig`` is the network's shape (``engines.collab.counter``); ``TrainConfig`` is one training
run (``engines.collab.counter_training``). ``TrainConfig``'s field metadata is the one declaration
of the ``train-counter`` command's options and of the ``collab.train_counter`` job's parameters
(``engines.platform.config_schema``); keeping both configs apart from the network lets the job kinds
be discovered, and ``--help`` be shown, without importing torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from engines.collab.shapes import N_LABELS
from engines.platform.config_schema import check_fields, cli_type
from engines.platform.files import echo

DEFAULT_SEED = 2026
DEVICES = re.compile(r"cpu|auto|mps|cuda(:\d+)?")

# A --quick run (and a quick job): seconds on a laptop, enough to check the pipeline end to end (not a useful model).
QUICK = {"train_size": 256, "epochs": 1, "batch_size": 64, "val_size": 128, "test_size": 64, "scores_size": 128}

# A job trains smaller than the command line by default: under a minute on 2 idle CPU cores (about 40 s),
# a usable but weaker model than the shipped one (20,000 images, 8 epochs; accuracy about 0.6 against 0.81).
JOB_DEFAULTS = {"train_size": 6_000, "epochs": 6}


@dataclass(frozen=True)
class CounterConfig:
    """Shape of the counting CNN.

    Args:
        image_size: side of the square input image (must match the generator's).
        channels: output channels of (a strided 5x5 stem; a 3x3 conv then a 2x2 max-pool;
            two 3x3 convs).
        density: channels of the per-location 1x1 "density" layer that is summed over space.
        hidden: width of the MLP head on the summed features.
        dropout: dropout before the last layer (training only).
        n_labels: number of counts predicted (0..n_labels-1).
    """

    image_size: int = 64
    channels: tuple[int, int, int] = (16, 32, 48)
    density: int = 32
    hidden: int = 64
    dropout: float = 0.0  # the small model underfits in its CPU budget; raise it for longer runs
    n_labels: int = N_LABELS

    def __post_init__(self) -> None:
        if self.image_size % 4:
            raise ValueError(f"image_size must be divisible by 4 (a stride-2 stem and a 2x2 pool), got {self.image_size}")
        if len(self.channels) != 3 or min(self.channels) < 1:
            raise ValueError(f"channels must be three positive ints, got {self.channels}")
        if self.density < 1 or self.hidden < 1 or self.n_labels < 2:
            raise ValueError("density and hidden must be >= 1 and n_labels >= 2")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


def difficulty_range(text: str) -> tuple[float, float]:
    """``"LO,HI"`` -> (lo, hi), the ``--train-difficulty`` option."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"expected LO,HI (two numbers in [0, 1]), got {echo(text)}") from None
    return lo, hi


@dataclass(frozen=True)
class TrainConfig:
    """One training run of the counter.

    Besides the fields offered as options: ``weight_decay`` (AdamW's), ``val_size`` (held-out
    images the softmax temperature is fitted on), ``test_size`` (held-out images per difficulty
    preset for the report), ``scores_size`` (held-out images, difficulty ~ U[0, 1], whose
    probabilities are written for the simulation engine; also the report's "overall" row) and
    ``model`` (the network's shape).

    ``device``: "cpu", "cuda", "cuda:N", "mps", or "auto" (the ``HAI_DEVICE`` setting: CUDA when
    present). A seeded run is reproducible bit for bit on the same machine and device; the report's
    command names the device it ran on. Training keeps the device's default float32 arithmetic
    (TF32 convolutions on a recent GPU: faster, deterministic); the held-out scores and the
    calibration are computed with TF32 off, so they are the model's float32 probabilities.

    ``train_difficulty``: the training images' difficulty ~ U[lo, hi]. The evaluation and score
    images keep U[0, 1] and the presets, so models trained on different mixes are compared on the
    same cases.
    """

    seed: int = field(default=DEFAULT_SEED, metadata={"help": "seed of torch and all generated images", "min": 0})
    train_size: int = field(default=20_000, metadata={
        "help": "training images (each epoch sees them under a fresh flip or rotation)", "title": "Training images",
        "min": 2, "max": 200_000})
    epochs: int = field(default=8, metadata={"help": "passes over the training images", "min": 1, "max": 100})
    batch_size: int = field(default=128, metadata={"help": "images per optimiser step", "min": 2, "max": 4_096})
    lr: float = field(default=4e-3, metadata={"help": "peak learning rate (one-cycle)", "gt": 0, "max": 1})
    weight_decay: float = field(default=1e-4, metadata={"min": 0, "cli": False, "job": False})
    val_size: int = field(default=2_000, metadata={"min": 1, "cli": False, "job": False})
    test_size: int = field(default=1_000, metadata={"min": 1, "cli": False, "job": False})
    scores_size: int = field(default=5_000, metadata={"min": 1, "cli": False, "job": False})
    threads: int = field(default=2, metadata={"help": "torch CPU threads", "min": 1, "max": 64})
    device: str = field(default="cpu", metadata={
        "help": "torch device for training: cpu, cuda, cuda:N, mps or auto (the HAI_DEVICE setting)",
        "title": "Torch device"})
    train_difficulty: tuple[float, float] = field(default=(0.0, 1.0), metadata={
        "help": "training images' difficulty ~ U[lo, hi] (evaluation: U[0, 1])",
        "cli": {"type": cli_type(difficulty_range), "metavar": "LO,HI"}})
    model: CounterConfig = field(default_factory=CounterConfig, metadata={"cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)
        if not DEVICES.fullmatch(str(self.device)):
            raise ValueError(f"device must be cpu, cuda, cuda:N, mps or auto, got {echo(self.device)}")
        if self.train_size < self.batch_size:
            raise ValueError(f"train_size ({self.train_size}) must be at least batch_size ({self.batch_size})")
        lo, hi = self.train_difficulty
        if not 0.0 <= lo <= hi <= 1.0:
            raise ValueError(f"train_difficulty must be (lo, hi) with 0 <= lo <= hi <= 1, got ({lo}, {hi})")
