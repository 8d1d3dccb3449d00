"""Training the offline inspector's frame model on clips that went through the benchmark's codec.

``python -m engines.video train-inspector --out assets/video/frame_model.pt`` draws random
one-second clips (a scene, 0-4 objects of a random shape and colour, drifting or still, a word or
none), renders them with ``engines.video.render``, encodes them all as one H.264 video with the
benchmark's settings and decodes it again, so the model learns from the colours and edges that
compression leaves, as the inspector will see them. Two frame pairs half a second apart per clip;
cross-entropy on every head (shape and colour only where objects are on screen).
Seeded: the same command gives the same weights on the same machine. A held-out set of clips from
another seed measures per-head accuracy, written into the weights file and the report.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import av
import numpy as np
import torch
import torch.nn.functional as F

from engines.platform.config_schema import check_fields
from engines.platform.progress import Progress
from engines.video.offline.frame_model import HEADS, FrameModel, FrameModelConfig, predict, save, to_inputs
from engines.video.render import COLOURS, DIRECTIONS, SHAPES, WORDS, Objects, Scene, render
from engines.video.synthetic import SyntheticConfig, encode_frames

FPS = 4
FRAMES_PER_CLIP = 4  # one second; pairs (0, 2) and (1, 3) are half a second apart


@dataclass(frozen=True)
class InspectorTrainConfig:
    """How the frame model is trained; each field's metadata is its one declaration
    (``engines.platform.config_schema``): the ``train-inspector`` command's option."""

    clips: int = field(default=3000, metadata={"help": "training clips", "min": 1})
    held_out_clips: int = field(default=300, metadata={"min": 1, "cli": False})
    epochs: int = field(default=14, metadata={"help": "passes over the clips", "min": 1})
    batch_size: int = field(default=64, metadata={"min": 1, "cli": False})
    learning_rate: float = field(default=2e-3, metadata={"gt": 0, "cli": False})
    seed: int = field(default=0, metadata={"help": "seed of the clips and the initial weights", "min": 0})
    width: int = field(default=16, metadata={"min": 1, "cli": False})

    def __post_init__(self) -> None:
        check_fields(self)


@dataclass
class Clips:
    """Decoded frame pairs (N, 120, 160, 3) uint8 and their labels (N,) per head (-1: not applicable)."""

    first: np.ndarray
    second: np.ndarray
    labels: dict[str, np.ndarray]


def _clip_labels(rng: random.Random) -> tuple[Objects | None, str | None, dict[str, int]]:
    count = rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 4])  # one clip in nine without objects
    word = rng.choice(WORDS) if rng.random() < 0.5 else None
    labels = {"count": count, "word": WORDS.index(word) if word else len(WORDS), "shape": -1, "colour": -1}
    if count == 0:
        return None, word, labels
    shape, colour = rng.choice(SHAPES), rng.choice(list(COLOURS))
    direction = rng.choice([*DIRECTIONS, None])
    labels.update(shape=SHAPES.index(shape), colour=list(COLOURS).index(colour))
    return Objects(shape, colour, count, direction, 0.0, rng.randrange(1 << 30)), word, labels


def make_clips(n_clips: int, seed: int, workdir: Path) -> Clips:
    """``n_clips`` random clips, rendered, encoded with the benchmark's settings and decoded."""
    rng = random.Random(seed)
    labels: dict[str, list[int]] = {name: [] for name in HEADS}
    plans = []
    for _ in range(n_clips):
        scene = Scene(tuple(rng.randint(30, 110) for _ in range(3)), tuple(rng.randint(30, 110) for _ in range(3)),
                      rng.randrange(1 << 30))
        objects, word, clip_labels = _clip_labels(rng)
        since = -rng.uniform(0, 15)  # a drift already under way: objects anywhere on their path
        plans.append((scene, objects, word, since))
        for name in HEADS:
            labels[name] += [clip_labels[name]] * 2  # the clip's two pairs

    def frames():
        for number, (scene, objects, word, since) in enumerate(plans):
            shifted = Objects(objects.shape, objects.colour, objects.count, objects.direction, since, objects.seed) \
                if objects else None
            for k in range(FRAMES_PER_CLIP):
                yield render(scene, shifted, word, k / FPS, number * FRAMES_PER_CLIP + k)

    path = workdir / f"clips-{seed}.mp4"
    encode_frames(frames(), path, SyntheticConfig(fps=FPS))
    decoded = np.empty((n_clips * FRAMES_PER_CLIP, 120, 160, 3), np.uint8)
    with av.open(str(path)) as container:
        for index, frame in enumerate(container.decode(container.streams.video[0])):
            decoded[index] = frame.to_ndarray(format="rgb24")
    first = np.concatenate([decoded[0::4, None], decoded[1::4, None]], axis=1).reshape(-1, 120, 160, 3)
    second = np.concatenate([decoded[2::4, None], decoded[3::4, None]], axis=1).reshape(-1, 120, 160, 3)
    return Clips(first, second, {name: np.asarray(values, np.int64) for name, values in labels.items()})


def _loss(logits: dict[str, torch.Tensor], labels: dict[str, torch.Tensor]) -> torch.Tensor:
    total = logits["count"].new_zeros(())
    for name, head in logits.items():
        target = labels[name]
        known = target >= 0
        if known.any():
            total = total + F.cross_entropy(head[known], target[known])
    return total


def accuracy(model: FrameModel, clips: Clips) -> dict[str, float]:
    """Per-head accuracy on ``clips`` (shape and colour only where objects are shown)."""
    probabilities = predict(model, clips.first, clips.second)
    result = {}
    for name, target in clips.labels.items():
        known = target >= 0
        result[name] = round(float((probabilities[name][known].argmax(axis=1) == target[known]).mean()), 4)
    return result


def train(config: InspectorTrainConfig = InspectorTrainConfig(),
          progress: Progress | None = None) -> tuple[FrameModel, dict]:
    """Train a frame model; returns it and its report (config, accuracy per head, seconds).
    ``progress(epochs done, epochs, "loss L")`` (``engines.platform.progress``) is called per epoch."""
    started = time.perf_counter()
    torch.manual_seed(config.seed)
    with tempfile.TemporaryDirectory(prefix="hai-inspector-") as workdir:
        clips = make_clips(config.clips, config.seed, Path(workdir))
        held_out = make_clips(config.held_out_clips, config.seed + 10_000, Path(workdir))
    model = FrameModel(FrameModelConfig(width=config.width))
    optimiser = torch.optim.Adam(model.parameters(), lr=config.learning_rate)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimiser, T_max=config.epochs)
    labels = {name: torch.from_numpy(values) for name, values in clips.labels.items()}
    generator = torch.Generator().manual_seed(config.seed)
    n = len(clips.first)
    for epoch in range(config.epochs):
        model.train()
        order = torch.randperm(n, generator=generator)
        losses = []
        for start in range(0, n, config.batch_size):
            batch = order[start:start + config.batch_size].numpy()
            pairs, strips = to_inputs(clips.first[batch], clips.second[batch])
            loss = _loss(model(pairs, strips), {name: values[batch] for name, values in labels.items()})
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        scheduler.step()
        if progress is not None:
            progress(epoch + 1, config.epochs, f"loss {float(np.mean(losses)):.4f}")
    report = {"config": asdict(config), "held_out_accuracy": accuracy(model, held_out),
              "train_accuracy": accuracy(model, clips), "seconds": round(time.perf_counter() - started, 1),
              "torch": str(torch.__version__), "parameters": sum(p.numel() for p in model.parameters())}
    return model.eval(), report


def write_report(report: dict, path: Path) -> None:
    config = report["config"]
    rows = "\n".join(f"| {name} | {report['held_out_accuracy'][name]:.1%} | {report['train_accuracy'][name]:.1%} |"
                     for name in HEADS)
    path.write_text(f"""# The offline inspector's frame model

Regenerate: `python -m engines.video train-inspector --out assets/video/frame_model.pt`
({config['clips']} random one-second clips through the benchmark's H.264 settings, {config['epochs']} epochs,
seed {config['seed']}; {report['seconds']} s on the machine that wrote this; {report['parameters']} parameters).

Accuracy on {config['held_out_clips']} held-out clips (another seed) and on the training clips. Shape
and colour count only clips with objects on screen. (Which way objects drift is measured from the
pixels, not learned: see `engines/video/offline/frame_model.py`.)

| head | held out | training |
|---|---:|---:|
{rows}

```json
{json.dumps(report, indent=2)}
```
""")


def train_and_save(config: InspectorTrainConfig, out: Path,
                   progress: Progress | None = None) -> dict:
    """Train, then write the weights (``out``) and ``REPORT.md`` beside them."""
    model, report = train(config, progress)
    out.parent.mkdir(parents=True, exist_ok=True)
    save(model, out, report)
    write_report(report, out.with_name("REPORT.md"))
    return report
