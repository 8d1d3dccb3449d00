"""The shipped set of reaching policies: trained in parallel processes, evaluated, reported.

``python -m engines.attribution train-set`` trains one reach-cnn policy per (rho, seed) into
``assets/attribution/policies/reach-rho<rho>-seed<seed>.pt`` (with its JSON sidecar) and writes
``REPORT.md`` and ``report.json`` beside them: each policy's closed-loop success and action error
with the cue as trained, randomised and absent (``docs/attribution.md``, Method, "The experiment and
its permutation test"). Training is seeded, one torch thread per process, so the same command gives
the same weights on the same machine; the whole default set (5 rho x 3 seeds) takes about ten
minutes on two cores.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

from engines.attribution.configs import CUE_MODES, QUICK_SET, TrainConfig, TrainSetConfig
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.progress import Progress
from engines.platform.settings import REPO_ROOT

SHIPPED_DIR = REPO_ROOT / "assets" / "attribution" / "policies"
SHIPPED_EXPERIMENT = SHIPPED_DIR.parent / "experiment.json"  # the shipped run (its regeneration command's --out)
COMMAND = "python -m engines.attribution train-set"


def policy_file(directory: str | Path, rho: float, seed: int) -> Path:
    """Where the policy of (rho, seed) lives in a set: ``reach-rho<rho>-seed<seed>.pt``."""
    return Path(directory) / f"reach-rho{rho:g}-seed{seed}.pt"


def shipped_policies(directory: str | Path = SHIPPED_DIR) -> list[dict]:
    """The report's rows of a policy set (rho, seed, file, evaluation, ...), each with its ``path``;
    empty when the folder holds no report.

    The set's folder and each row's ``file`` (relative to the folder) resolve through
    ``engines.attribution.paths``: a report cannot name a file outside the folders the app owns.

    Raises:
        FileRefused: the folder, or a file a row names, is not one the app opens.
        RunFileError: the report does not follow its format (``run_files.PolicySetReport``).
    """
    from engines.attribution.paths import policy_folder, policy_path
    from engines.attribution.run_files import read_set_report

    directory = policy_folder(directory)
    report = directory / "report.json"
    if not report.exists():
        return []
    rows = read_set_report(report)["policies"]
    return [{**row, "path": str(policy_path(row["file"], base=directory))} for row in rows]


def _train_one(rho: float, seed: int, frames: int, epochs: int, episodes: int, out_dir: str) -> dict:
    """One policy, in a worker process: train, evaluate, save; its row of the report."""
    import torch

    from engines.attribution.policies import parameter_count, save_policy, torch_policy
    from engines.attribution.train import evaluate, train_policy

    torch.set_num_threads(1)  # one process per core: threads within would only contend
    config = TrainConfig(rho=rho, seed=seed, frames=frames, epochs=epochs)
    result = train_policy(config)
    scores = evaluate(torch_policy(result.model), rho, episodes=episodes)
    path = policy_file(out_dir, rho, seed)
    save_policy(result.model, path, {"train": asdict(config), "final_loss": result.losses[-1],
                                     "train_seconds": round(result.seconds, 1),
                                     "parameters": parameter_count(result.model), "evaluation": scores,
                                     "episodes": episodes})
    return {"rho": rho, "seed": seed, "file": path.name, "final_loss": round(result.losses[-1], 5),
            "train_seconds": round(result.seconds, 1), "evaluation": scores}


def train_set(out_dir: str | Path, rhos: tuple[float, ...], seeds: tuple[int, ...], *, frames: int, epochs: int,
              episodes: int, workers: int, progress: Progress | None = None, command: str = COMMAND) -> dict:
    """Train every (rho, seed) into ``out_dir`` with ``workers`` processes; write the report there.
    ``progress(policies done, policies, "rho=.. seed=..: success per cue (seconds)")`` after each."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    cells = [(rho, seed) for rho in rhos for seed in seeds]
    # spawn, not fork: a forked torch with threads already started can deadlock.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [pool.submit(_train_one, rho, seed, frames, epochs, episodes, str(out_dir)) for rho, seed in cells]
        rows = []
        for future in futures:
            rows.append(future.result())
            if progress is not None:
                row, e = rows[-1], rows[-1]["evaluation"]
                progress(len(rows), len(cells), f"rho={row['rho']:g} seed={row['seed']}: "
                         + ", ".join(f"{cue} {e[cue]['success']:.0%}" for cue in CUE_MODES)
                         + f" ({row['train_seconds']:.0f} s)")
    report = {"command": command, "frames": frames, "epochs": epochs, "episodes": episodes, "workers": workers,
              "seconds": round(time.perf_counter() - started, 1), "policies": rows}
    (out_dir / "report.json").write_text(_json(report), encoding="utf-8")
    (out_dir / "REPORT.md").write_text(report_markdown(report), encoding="utf-8")
    return report


def _json(value) -> str:
    import json

    return json.dumps(value, indent=1, sort_keys=True) + "\n"


def report_markdown(report: dict) -> str:
    """The report as a markdown table: success and action error per cue mode, per policy."""
    lines = [
        "# Shipped reaching policies",
        "",
        f"Regenerate: `{report['command']}` ({report['frames']} expert frames, {report['epochs']} epoch{'s' if report['epochs'] != 1 else ''} per "
        f"policy; {report['workers']} processes; {report['seconds']:.0f} s on the machine that wrote this).",
        "Closed-loop success over "
        f"{report['episodes']} episodes and the action MSE against the expert on 256 held-out frames, with the "
        "cue as in training (in distribution), randomised and absent (out of distribution). The task and "
        "its spurious cue: `docs/attribution.md`.",
        "",
        "| rho | seed | success: cue as trained | cue randomised | no cue | MSE as trained | MSE randomised | file |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report["policies"]:
        e = row["evaluation"]
        lines.append(f"| {row['rho']:g} | {row['seed']} | {e['normal']['success']:.0%} | {e['random']['success']:.0%} "
                     f"| {e['none']['success']:.0%} | {e['normal']['action_mse']:.4f} | "
                     f"{e['random']['action_mse']:.4f} | `{row['file']}` |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ command line


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``train-set`` options: ``TrainSetConfig``'s, where the set goes, and ``--quick``."""
    parser.add_argument("--out-dir", type=Path, default=SHIPPED_DIR,
                        help="where the weights and REPORT.md go: the shipped set (default), or a folder under "
                             "datasets/attribution/ of the data folder")
    argparse_options(TrainSetConfig, parser)
    parser.add_argument("--quick", action="store_true", help=f"a small run for tests: {QUICK_SET['frames']} frames, "
                                                             f"{QUICK_SET['epochs']} epoch, {QUICK_SET['episodes']} episodes")


def _command_line(args: argparse.Namespace) -> str:
    """The command that regenerates this set: the options that differ from the defaults."""
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = vars(parser.parse_args([]))
    parts = [COMMAND]
    for name, value in vars(args).items():
        if name not in defaults or value == defaults[name] or name == "out_dir":
            continue
        flag = "--" + name.replace("_", "-")
        if value is True:
            parts.append(flag)
        else:
            parts.append(flag + " " + " ".join(f"{v:g}" if isinstance(v, float) else str(v)
                                               for v in (value if isinstance(value, list) else [value])))
    return " ".join(parts)


def run(args: argparse.Namespace) -> dict:
    """Train the shipped set of reaching policies (each rho x seed) and write their report."""
    from engines.attribution.paths import output_path

    config = TrainSetConfig(**{**option_values(TrainSetConfig, args), **(QUICK_SET if args.quick else {})})

    def progress(done: int, total: int, message: str = "") -> None:
        print(f"[{done}/{total}] {message}", file=sys.stderr, flush=True)

    out_dir = output_path(args.out_dir, what="--out-dir", shipped=SHIPPED_DIR)
    report = train_set(out_dir, config.rhos, config.seeds, frames=config.frames, epochs=config.epochs,
                       episodes=config.episodes, workers=config.workers, progress=progress, command=_command_line(args))
    return {**report, "summary": f"{len(report['policies'])} policies in {report['seconds']:.0f} s -> "
                                 f"{out_dir / 'REPORT.md'}"}
