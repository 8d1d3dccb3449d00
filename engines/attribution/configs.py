"""What a policy's training and the experiment are asked for: their configs, without torch.

The jobs module (which every process discovers) and the command lines' options are derived from
these dataclasses (``engines.platform.config_schema``); keeping them apart from the code that trains
and measures lets a job worker, the Jobs page and ``--help`` start without importing torch.
The experiment is the synthetic test of ``docs/attribution.md`` (Method, "The experiment and its
permutation test").
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engines.platform.config_schema import check_fields
from engines.platform.files import echo

RHOS = (0.5, 0.9, 0.97, 0.99, 1.0)  # cue agreement of the shipped set: dense near 1, where reliance on the cue varies most
SEEDS = (0, 1, 2)

CUE_MODES = ("normal", "random", "none")


@dataclass(frozen=True)
class TrainConfig:
    """How one reaching policy is trained. Each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``train`` command's option, the ``attribution.train`` job's parameter."""

    rho: float = field(default=0.95, metadata={"help": "how often the cue agrees with the target", "min": 0, "max": 1})
    seed: int = field(default=0, metadata={"help": "seed of the expert frames and the initial weights", "min": 0})
    frames: int = field(default=6000, metadata={"help": "expert frames to train on", "min": 1, "max": 100_000})
    epochs: int = field(default=20, metadata={"help": "passes over the frames", "min": 1, "max": 100})
    batch_size: int = field(default=128, metadata={"min": 1, "cli": False, "job": False})
    learning_rate: float = field(default=2e-3, metadata={"gt": 0, "cli": False, "job": False})
    width: int = field(default=24, metadata={"min": 1, "cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)


METHODS = ("iss", "iss_contrast", "occlusion", "feature_ablation", "rise", "saliency", "integrated_gradients",
           "grad_cam")
QUICK = {"rhos": (0.0, 1.0), "seeds": (0, 1), "frames": 160, "epochs": 1, "nmr_frames": 1, "n_masks": 20,
         "episodes": 5, "methods": ("iss", "iss_contrast", "occlusion"), "permutations": 100, "bootstrap": 100}


@dataclass(frozen=True)
class ExperimentConfig:
    """The experiment's policies, maps and statistics. Each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``experiment`` command's option (unset: the config's value,
    or ``--quick``'s) and the ``attribution.experiment`` job's parameter."""

    rhos: tuple[float, ...] = field(default=RHOS, metadata={
        "help": "cue agreements of the policies (default: the shipped set's)", "min_length": 1, "max_length": 10,
        "cli": {"type": float, "nargs": "+", "default": None}})
    seeds: tuple[int, ...] = field(default=SEEDS, metadata={
        "help": "training seeds of the policies", "min_length": 1, "max_length": 10,
        "cli": {"type": int, "nargs": "+", "default": None}})
    # Training frames and epochs per policy, when it is trained here.
    frames: int = field(default=6000, metadata={"min": 1, "max": 100_000, "cli": False, "job": False})
    epochs: int = field(default=20, metadata={"min": 1, "max": 100, "cli": False, "job": False})
    nmr_frames: int = field(default=12, metadata={
        "help": "held-out in-distribution frames NMR is averaged over", "min": 1, "max": 200, "cli": {"default": None}})
    n_masks: int = field(default=300, metadata={"help": "masks per frame", "min": 1, "max": 5000,
                                                "cli": {"default": None}})
    grid: tuple[int, int] = field(default=(7, 7), metadata={"cli": False, "job": False})
    k: float = field(default=10.0, metadata={"gt": 0, "max": 100, "cli": False, "job": False})  # NMR@k, % of pixels
    episodes: int = field(default=100, metadata={"help": "closed-loop episodes per evaluation", "min": 1, "max": 1000,
                                                 "cli": {"default": None}})
    methods: tuple[str, ...] = field(default=METHODS, metadata={
        "help": "attribution methods compared", "min_length": 1,
        "cli": {"type": str, "nargs": "+", "choices": METHODS, "default": None}})
    # Load <dir>/reach-rho<rho>-seed<seed>.pt where present (the command line's --policy-dir and --train).
    policy_dir: str | None = field(default=None, metadata={"cli": False, "job": False})
    permutations: int = field(default=2000, metadata={"min": 1, "cli": False, "job": False})
    bootstrap: int = field(default=1000, metadata={"min": 1, "cli": False, "job": False})
    seed: int = field(default=0, metadata={"min": 0, "cli": False, "job": False})

    def __post_init__(self) -> None:
        check_fields(self)
        if any(not 0.0 <= rho <= 1.0 for rho in self.rhos):
            raise ValueError(f"every rho is a probability in [0, 1], got {', '.join(map(str, self.rhos))}")
        unknown = [m for m in self.methods if m not in METHODS]
        if unknown:
            raise ValueError(f"unknown method {echo(unknown[0])}; choose from {', '.join(METHODS)}")
        if len(self.rhos) * len(self.seeds) < 3:
            raise ValueError("a correlation needs at least 3 policies (rhos x seeds)")


# A train-set --quick run: seconds per policy, to check the command end to end.
QUICK_SET = {"frames": 300, "epochs": 1, "episodes": 5}


@dataclass(frozen=True)
class TrainSetConfig:
    """The shipped set of reaching policies, one per (rho, seed). Each field's metadata is its one
    declaration (``engines.platform.config_schema``): the ``train-set`` command's option."""

    rhos: tuple[float, ...] = field(default=RHOS, metadata={
        "help": "cue agreements of the policies", "min_length": 1, "cli": {"type": float, "nargs": "+"}})
    seeds: tuple[int, ...] = field(default=SEEDS, metadata={
        "help": "training seeds", "min_length": 1, "cli": {"type": int, "nargs": "+"}})
    # One policy's training sizes, with its bounds (TrainConfig's), checked before any process starts.
    frames: int = field(default=TrainConfig.frames, metadata={**TrainConfig.__dataclass_fields__["frames"].metadata,
                                                              "help": "expert frames per policy"})
    epochs: int = field(default=TrainConfig.epochs, metadata=TrainConfig.__dataclass_fields__["epochs"].metadata)
    episodes: int = field(default=100, metadata={"help": "closed-loop episodes per evaluation", "min": 1, "max": 1000})
    workers: int = field(default=2, metadata={"help": "training processes at once (one core each)", "min": 1,
                                              "max": 64})

    def __post_init__(self) -> None:
        check_fields(self)
        for rho in self.rhos:
            if not 0.0 <= rho <= 1.0:
                raise ValueError(f"rhos: every rho is a probability in [0, 1], got {rho:g}")
