"""The built-in reaching task: small RGB images with a spurious cue, so everything runs offline.

The synthetic test of the paper's claim (``docs/attribution.md``, "The reaching task" and Method,
"The experiment and its permutation test"). A 64 x 64 scene holds a textured background, grey
distractor disks, the agent (a blue ring) and the target (a dim red disk). A green square, the
**cue**, sits in the bottom-right corner region at a position that maps the target's position (a
miniature of the arena), so a policy can solve the task by reading the cue instead of the target.
The cue agrees with the target with probability ``rho`` (else it maps a random point): at rho = 1 it
is a perfect shortcut, at rho = 0 useless. Out of distribution the cue is random or absent.

The task is tuned so that the shortcut is the easier read, as in the paper's setting: the cue is
bright and sits in a fixed corner, the target is a low-contrast red close to the background; the
agent is a ring so that the target stays visible under it on the last steps (a solid agent hides
it, and only the cue then tells where to stop). With 20 epochs of behaviour cloning a policy
trained at rho = 0 reaches the target with the cue randomised as often as with it in place, one
trained at rho = 1 mostly fails with the cue randomised (``assets/attribution/policies/REPORT.md``).

The expert moves the agent straight toward the target, at most ``max_step`` pixels per step; an
action chunk is its next ``horizon`` moves, in units of ``max_step`` (so in [-1, 1]). The
relevance mask (what the task is about) is the agent and the target, each dilated by 2 pixels;
everything else is nuisance. Success: the agent within 3 pixels of the target in 30 steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BACKGROUND_LEVEL, TEXTURE_CONTRAST = 0.35, 0.12
# The target's red is dim on purpose (see above): bright, it is as easy to read as the cue.
AGENT_COLOUR, TARGET_COLOUR = (0.15, 0.35, 0.95), (0.64, 0.3, 0.26)
CUE_COLOUR, DISTRACTOR_COLOUR = (0.1, 0.95, 0.2), (0.6, 0.6, 0.6)


@dataclass(frozen=True)
class TaskConfig:
    size: int = 64
    agent_radius: int = 4
    agent_ring: float = 1.5  # the agent's ring width in pixels
    target_radius: int = 5
    cue_size: int = 8
    cue_region: int = 22  # the cue moves inside the bottom-right square of this side
    distractors: int = 2
    max_step: float = 4.0  # pixels per step
    horizon: int = 4  # steps per action chunk
    success_radius: float = 3.0
    max_steps: int = 30
    relevance_margin: int = 2
    texture_seed: int = 7  # the background texture is part of the task: the same in every episode


@dataclass
class Scene:
    """One state of the task; ``cue`` is the cue's top-left corner or None (no cue)."""

    agent: np.ndarray  # (2,) x, y in pixels
    target: np.ndarray
    cue: tuple[int, int] | None
    distractors: list[tuple[float, float]] = field(default_factory=list)


def _texture(config: TaskConfig) -> np.ndarray:
    rng = np.random.default_rng(config.texture_seed)
    coarse = rng.random((3, config.size // 8, config.size // 8))
    texture = np.kron(coarse, np.ones((1, 8, 8)))  # 8-pixel tiles
    return (BACKGROUND_LEVEL + TEXTURE_CONTRAST * (texture - 0.5)).astype(np.float32)


def cue_corner(point: np.ndarray, config: TaskConfig) -> tuple[int, int]:
    """Where the cue maps ``point``: the same relative place in the bottom-right region as the
    point's in the arena (where targets lie), so each cue pixel step is a small target move."""
    span = config.cue_region - config.cue_size
    origin = config.size - config.cue_region
    low, high = _arena(config, config.target_radius)
    relative = np.clip((np.asarray(point, dtype=float) - low) / (high - low), 0.0, 1.0)
    return int(origin + round(relative[0] * span)), int(origin + round(relative[1] * span))


def _arena(config: TaskConfig, radius: int) -> tuple[float, float]:
    """The range of a disk's centre (both axes): away from the border and from the cue's corner
    region, so the cue never hides the task."""
    return radius + 1, config.size - config.cue_region - radius


def _free_point(rng: np.random.Generator, config: TaskConfig, radius: int) -> np.ndarray:
    return rng.uniform(*_arena(config, radius), size=2)


def sample_scene(rng: np.random.Generator, config: TaskConfig, rho: float, cue: str = "normal") -> Scene:
    """A random start. ``cue``: "normal" (agrees with the target with probability rho),
    "random" (never agrees: out of distribution) or "none" (no cue)."""
    agent = _free_point(rng, config, config.agent_radius)
    target = _free_point(rng, config, config.target_radius)
    while np.linalg.norm(target - agent) < 3 * config.success_radius:
        target = _free_point(rng, config, config.target_radius)
    if cue == "none":
        corner = None
    elif cue == "normal" and rng.random() < rho:
        corner = cue_corner(target, config)
    elif cue in ("normal", "random"):
        corner = cue_corner(_free_point(rng, config, config.target_radius), config)
    else:
        raise ValueError(f"cue must be 'normal', 'random' or 'none', got {cue!r}")
    distractors = [tuple(_free_point(rng, config, 3)) for _ in range(config.distractors)]
    return Scene(agent, target, corner, distractors)


def _disk(grid_x: np.ndarray, grid_y: np.ndarray, centre, radius: float) -> np.ndarray:
    return (grid_x - centre[0]) ** 2 + (grid_y - centre[1]) ** 2 <= radius ** 2


def render(scene: Scene, config: TaskConfig, texture: np.ndarray | None = None) -> np.ndarray:
    """The scene as a float32 image (3, H, W) in [0, 1]."""
    image = (_texture(config) if texture is None else texture).copy()
    grid_y, grid_x = np.mgrid[0:config.size, 0:config.size] + 0.5
    for centre in scene.distractors:
        image[:, _disk(grid_x, grid_y, centre, 3)] = np.array(DISTRACTOR_COLOUR, np.float32)[:, None]
    if scene.cue is not None:
        x, y = scene.cue
        image[:, y:y + config.cue_size, x:x + config.cue_size] = np.array(CUE_COLOUR, np.float32)[:, None, None]
    image[:, _disk(grid_x, grid_y, scene.target, config.target_radius)] = np.array(TARGET_COLOUR, np.float32)[:, None]
    ring = (_disk(grid_x, grid_y, scene.agent, config.agent_radius)
            & ~_disk(grid_x, grid_y, scene.agent, config.agent_radius - config.agent_ring))
    image[:, ring] = np.array(AGENT_COLOUR, np.float32)[:, None]
    return image


def relevance_mask(scene: Scene, config: TaskConfig) -> np.ndarray:
    """The task-relevant pixels (H, W): the agent and the target, each dilated by ``relevance_margin``."""
    grid_y, grid_x = np.mgrid[0:config.size, 0:config.size] + 0.5
    margin = config.relevance_margin
    return (_disk(grid_x, grid_y, scene.agent, config.agent_radius + margin)
            | _disk(grid_x, grid_y, scene.target, config.target_radius + margin))


def expert_chunk(agent: np.ndarray, target: np.ndarray, config: TaskConfig) -> np.ndarray:
    """The expert's next ``horizon`` moves (horizon, 2), each straight at the target, clipped to
    ``max_step`` pixels and expressed in units of ``max_step``."""
    moves = np.zeros((config.horizon, 2), dtype=np.float32)
    position = np.asarray(agent, dtype=np.float64).copy()
    for step in range(config.horizon):
        delta = np.asarray(target) - position
        distance = float(np.linalg.norm(delta))
        move = delta if distance <= config.max_step else delta * (config.max_step / distance)
        moves[step] = move / config.max_step
        position = position + move
    return moves


def dataset(n_frames: int, rho: float, seed: int, config: TaskConfig = TaskConfig(), cue: str = "normal"):
    """(images (N, 3, H, W) float32, expert chunks (N, horizon, 2), relevance masks (N, H, W) bool)."""
    rng = np.random.default_rng(seed)
    texture = _texture(config)
    images = np.empty((n_frames, 3, config.size, config.size), dtype=np.float32)
    chunks = np.empty((n_frames, config.horizon, 2), dtype=np.float32)
    masks = np.empty((n_frames, config.size, config.size), dtype=bool)
    for index in range(n_frames):
        scene = sample_scene(rng, config, rho, cue)
        images[index] = render(scene, config, texture)
        chunks[index] = expert_chunk(scene.agent, scene.target, config)
        masks[index] = relevance_mask(scene, config)
    return images, chunks, masks
