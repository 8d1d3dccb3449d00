"""The offline inspector's eyes: a small CNN that reads a pair of frames half a second apart.

It answers what the synthetic videos ask about (``engines.video.render``): how many objects are on
screen (0-4), their shape and colour, and which burned-in word is shown (or none). Which way the
objects drift is measured from the pair's pixels (``engines.video.offline.heuristics.direction_of``): a small
network trained as here did not learn a 2-pixel shift (27% held out, chance 20%). The pair is
seen at half resolution (80 x 60, six channels: both frames);
the word box at the top is read at full resolution from the first frame, where a 14-pixel word
is legible. Trained by ``python -m engines.video train-inspector`` on frames that went through the
same H.264 encoding as the benchmark; weights in ``assets/video/frame_model.pt``.

It stands in for a VLM (Qwen2.5-VL, SmolVLM) so that the agent and its metrics run with no
download; ``engines.video.backends`` wraps it as an inspector and as a captioner.
"""

from __future__ import annotations

import pickle
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from engines.video.render import COLOURS, DIRECTIONS, HEIGHT, SHAPES, WIDTH, WORDS

PAIR_GAP_S = 0.5  # the second frame of a pair, this much later
FRAME_WIDTH, FRAME_HEIGHT = WIDTH, HEIGHT  # the frames it reads; callers scale other videos to this
WORD_ROWS = (3, 21)  # the word box's rows in a 120-row frame
COUNTS = ("0", "1", "2", "3", "4")
MOVES = (*DIRECTIONS, "still")
WORD_CLASSES = (*WORDS, "none")
HEADS: dict[str, tuple[str, ...]] = {"count": COUNTS, "shape": SHAPES, "colour": tuple(COLOURS),
                                     "word": WORD_CLASSES}


@dataclass(frozen=True)
class FrameModelConfig:
    width: int = 32  # channels of the first convolution; the others are multiples of it
    hidden: int = 128


class FrameModel(nn.Module):
    """Pairs (B, 6, 60, 80) and word strips (B, 3, 18, 160), floats in [0, 1] -> logits per head."""

    def __init__(self, config: FrameModelConfig = FrameModelConfig()) -> None:
        super().__init__()
        self.config = config
        w = config.width
        # Shapes and motion are local and may be anywhere: convolutions, then pooled over the whole
        # frame (mean: how much of it, for counting; max: whether anywhere), not flattened by place.
        self.pair = nn.Sequential(
            nn.Conv2d(6, w, 3, padding=1), nn.ReLU(), nn.Conv2d(w, w, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),  # (w, 30, 40)
            nn.Conv2d(w, 2 * w, 3, padding=1), nn.ReLU(), nn.Conv2d(2 * w, 2 * w, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),  # (2w, 15, 20)
            nn.Conv2d(2 * w, 4 * w, 3, padding=1), nn.ReLU())  # (4w, 15, 20)
        self.pair_out = nn.Sequential(nn.Linear(8 * w, config.hidden), nn.ReLU())
        self.word = nn.Sequential(
            nn.Conv2d(3, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (w, 9, 80)
            nn.Conv2d(w, w, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),  # (w, 4, 40)
            nn.Flatten(), nn.Linear(w * 4 * 40, config.hidden), nn.ReLU())
        self.heads = nn.ModuleDict({name: nn.Linear(config.hidden, len(classes))
                                    for name, classes in HEADS.items() if name != "word"})
        self.word_head = nn.Linear(config.hidden, len(WORD_CLASSES))

    def forward(self, pairs: torch.Tensor, strips: torch.Tensor) -> dict[str, torch.Tensor]:
        features = self.pair(pairs)
        seen = self.pair_out(torch.cat([features.mean(dim=(2, 3)), features.amax(dim=(2, 3))], dim=1))
        logits = {name: head(seen) for name, head in self.heads.items()}
        logits["word"] = self.word_head(self.word(strips))
        return logits


def to_inputs(first: np.ndarray, second: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
    """Frames (N, 120, 160, 3) uint8 at t and t + 0.5 s -> the model's pairs and word strips.

    Raises:
        ValueError: frames of another size (the fully connected layers fix it); decode them at
            ``(FRAME_WIDTH, FRAME_HEIGHT)`` first (``engines.video.offline.heuristics.model_size``).
    """
    expected = (FRAME_HEIGHT, FRAME_WIDTH, 3)
    for frames in (first, second):
        if frames.ndim != 4 or tuple(frames.shape[1:]) != expected:
            raise ValueError(f"the frame model reads frames of {FRAME_WIDTH} x {FRAME_HEIGHT} RGB pixels, got an "
                             f"array of shape {tuple(frames.shape)}; scale the frames while decoding")
    a = torch.from_numpy(np.ascontiguousarray(first)).permute(0, 3, 1, 2).float() / 255.0
    b = torch.from_numpy(np.ascontiguousarray(second)).permute(0, 3, 1, 2).float() / 255.0
    pairs = F.avg_pool2d(torch.cat([a, b], dim=1), 2)  # (N, 6, 60, 80)
    strips = a[:, :, WORD_ROWS[0]:WORD_ROWS[1], :]  # (N, 3, 18, 160)
    return pairs.contiguous(), strips.contiguous()


@torch.no_grad()
def predict(model: FrameModel, first: np.ndarray, second: np.ndarray, batch_size: int = 64) -> dict[str, np.ndarray]:
    """Class probabilities per head, (N, classes), for frame pairs (N, 120, 160, 3)."""
    model.eval()
    out: dict[str, list[np.ndarray]] = {name: [] for name in HEADS}
    for start in range(0, len(first), batch_size):
        pairs, strips = to_inputs(first[start:start + batch_size], second[start:start + batch_size])
        for name, logits in model(pairs, strips).items():
            out[name].append(torch.softmax(logits, dim=-1).numpy())
    return {name: np.concatenate(parts) if parts else np.zeros((0, len(HEADS[name])), np.float32)
            for name, parts in out.items()}


def save(model: FrameModel, path: str | Path, report: dict | None = None) -> None:
    """Weights and config as plain tensors and numbers (loadable with ``weights_only=True``)."""
    torch.save({"config": asdict(model.config), "state": model.state_dict(), "heads": HEADS, "report": report or {}},
               Path(path))


def load(path: str | Path) -> FrameModel:
    """A saved frame model; tensors only, never pickled code. Raises ValueError on a wrong file."""
    try:
        saved = torch.load(Path(path), map_location="cpu", weights_only=True)
        model = FrameModel(FrameModelConfig(**saved["config"]))
        model.load_state_dict(saved["state"])
    except (KeyError, TypeError, RuntimeError, EOFError, ValueError, pickle.UnpicklingError) as error:
        raise ValueError(f"{path}: not a frame model saved by engines.video ({error})") from error
    if {k: tuple(v) for k, v in saved.get("heads", {}).items()} != HEADS:
        raise ValueError(f"{path}: the model's classes differ from this version's ({sorted(saved.get('heads', {}))})")
    return model.eval()
