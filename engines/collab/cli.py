"""Options and runs of ``python -m engines.collab simulate`` and ``sweep`` (``__main__`` dispatches).

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.
The options come from the config dataclasses (``SimulationConfig``, ``SweepConfig``, ``LLMConfig``;
``engines.platform.config_schema``); this module adds what only a command line has (``--quick``,
``--out``, ``--json``) and turns parsed arguments into a config and a run.

``--T`` and ``--n-calibration`` default to the config's sizes, ``--quick``'s, or with
``--human llm`` the LLM run's smaller ones (each interaction there costs LLM calls).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from engines.collab import llm_simulate
from engines.collab.backends import BackendError
from engines.collab.llm_simulate import LLMConfig, simulate_llm
from engines.collab.result_files import write_result_file
from engines.collab.simulate import (
    LLM_HUMAN,
    QUICK_CALIBRATION,
    QUICK_T,
    SIMULATE_ONLY,
    SimulationConfig,
    simulate,
)
from engines.collab.sweep import (
    DEFAULT_COMP_GRID,
    DEFAULT_HARM_GRID,
    QUICK_COMP_GRID,
    QUICK_HARM_GRID,
    SweepConfig,
    run_sweep,
)
from engines.platform.config_schema import argparse_options, option_values
from engines.platform.files import echo
from engines.platform.progress import ProgressBar

LLM_PREFIX = "llm_"  # LLMConfig's options: --llm-base-url, ... (args.llm_base_url, ...)


def add_common_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``simulate`` and ``sweep``: ``SimulationConfig``'s, less the targets and baselines."""
    d = SimulationConfig()
    parser.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON object instead of a summary")
    argparse_options(SimulationConfig, parser, exclude=SIMULATE_ONLY, overrides={
        "T": {"default": None, "help": f"interactions (default {d.T}; --quick: {QUICK_T}; --human llm: "
                                       f"{llm_simulate.DEFAULT_T}, --quick {llm_simulate.QUICK_T})"},
        "n_calibration": {"default": None, "help": (
            f"calibration batch size (default {d.n_calibration}; --quick: {QUICK_CALIBRATION}; --human llm: "
            f"{llm_simulate.DEFAULT_CALIBRATION}, --quick {llm_simulate.QUICK_CALIBRATION})")}})
    parser.add_argument("--quick", action="store_true",
                        help=f"small run: T={QUICK_T}, calibration {QUICK_CALIBRATION} "
                             f"(--human llm: {llm_simulate.QUICK_T} and {llm_simulate.QUICK_CALIBRATION})")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON result to this file")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``simulate``: the common ones, the targets, the baselines and the LLM human's."""
    add_common_arguments(parser)
    argparse_options(SimulationConfig, parser, only=SIMULATE_ONLY)
    argparse_options(LLMConfig, parser.add_argument_group("LLM human (--human llm)"), prefix=LLM_PREFIX)


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``sweep``: the common ones and the two grids of targets."""
    add_common_arguments(parser)
    argparse_options(SweepConfig, parser)


def config_from_args(args: argparse.Namespace, *, exclude: tuple[str, ...] = (),
                     sizes: tuple[int, int, int, int] | None = None, **overrides) -> SimulationConfig:
    """The ``SimulationConfig`` of parsed options (those in ``exclude`` were not offered), with ``overrides``.

    ``sizes``: (T, n_calibration, quick T, quick n_calibration) used where ``--T`` /
    ``--n-calibration`` are not given; default the config's and ``QUICK_T``/``QUICK_CALIBRATION``.
    """
    d = SimulationConfig()
    T, n_calibration, quick_T, quick_calibration = sizes or (d.T, d.n_calibration, QUICK_T, QUICK_CALIBRATION)
    values = option_values(SimulationConfig, args, exclude=exclude)
    if values["T"] is None:
        values["T"] = quick_T if args.quick else T
    if values["n_calibration"] is None:
        values["n_calibration"] = quick_calibration if args.quick else n_calibration
    values.update(overrides)
    return SimulationConfig(**values)


def run_simulate(args: argparse.Namespace) -> dict:
    """Run T simulated interactions under online control and a fixed baseline (``--human llm``: an LLM plays the human)."""
    if args.human == LLM_HUMAN:
        return run_llm_simulate(args)
    config = config_from_args(args)
    with ProgressBar(f"simulate {config.schedule}", "interaction", enabled=not args.no_progress) as bar:
        result = simulate(config, progress=bar).to_dict()
    write_result_file(result, args.out)
    return result


def run_llm_simulate(args: argparse.Namespace) -> dict:
    """``simulate --human llm``: smaller defaults (T=200, calibration 50; --quick: 20 and 10)."""
    llm = LLMConfig(**option_values(LLMConfig, args, prefix=LLM_PREFIX))
    config = config_from_args(
        args, sizes=(llm_simulate.DEFAULT_T, llm_simulate.DEFAULT_CALIBRATION, llm_simulate.QUICK_T,
                     llm_simulate.QUICK_CALIBRATION),
        calibration_passes=0)  # one pass on round-1 answers (replays would cost many more calls)
    try:
        with ProgressBar("simulate llm", "interaction", enabled=not args.no_progress) as bar:
            result = simulate_llm(config, llm, progress=bar).to_dict()
    except BackendError as exc:
        raise ValueError(f"the LLM backend at {echo(llm.where)} failed: {exc}") from None
    write_result_file(result, args.out)
    return result


def run_sweep_command(args: argparse.Namespace) -> dict:
    """Final human accuracy over a grid of targets (every cell on the same draws)."""
    base = config_from_args(args, exclude=SIMULATE_ONLY, with_fixed=False, with_matched=False)
    grids = option_values(SweepConfig, args)
    harm = grids["alpha_harm_grid"] or (QUICK_HARM_GRID if args.quick else DEFAULT_HARM_GRID)
    comp = grids["alpha_comp_grid"] or (QUICK_COMP_GRID if args.quick else DEFAULT_COMP_GRID)
    with ProgressBar("sweep", "cell", enabled=not args.no_progress) as bar:
        result = run_sweep(SweepConfig(base=base, alpha_harm_grid=harm, alpha_comp_grid=comp), progress=bar).to_dict()
    write_result_file(result, args.out)
    return result
