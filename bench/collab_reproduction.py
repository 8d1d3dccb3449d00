"""Reproduce the paper's two claims at full scale, with figures.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.

- Claim (1): under every shift schedule the online controller keeps each running violation rate
  within target + bound(t) (a deterministic, finite-sample guarantee), while the fixed-threshold
  baseline calibrated once drifts away from the target when the humans shift.
  Each schedule runs T = 100,000 interactions, online and fixed on the same draws.
- Claim (2): final human accuracy moves monotonically with each target: tightening the
  complementarity target (smaller alpha_comp) and loosening the harm target (larger alpha_harm)
  raise it. A sweep over the alpha_harm x alpha_comp grid at T = 100,000 (common random numbers).
- Delayed updates (beyond the paper; what a crowdsourced study does): with P = 1, 10, 50
  participants in flight on one stream under drift, each update lands P − 1 updates late and
  the online rates stay within target + the delay-aware bound (``controller.upper_bound``).

Writes ``bench/results/collab_reproduction.json`` (or ``--out``) and PNGs to
``assets/collab/plots/`` (or ``--plots-dir``): ``violations_<schedule>.png`` (running rates with
the target line, the online bound band, centred rolling rates (W = 500), shift points, and the
threshold traces) and ``sweep_accuracy.png``. Prints one JSON line with the claims to stdout.

    python bench/collab_reproduction.py            # T = 100,000 per schedule and per cell (~1 min)
    python bench/collab_reproduction.py --quick    # T = 20,000, a 3 x 2 grid (seconds)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._results import write_result  # noqa: E402 - needs the repository on sys.path
from engines.collab import plots, rate_traces  # noqa: E402
from engines.collab.humans import SCHEDULES  # noqa: E402
from engines.collab.simulate import SimulationConfig, SimulationResult, simulate  # noqa: E402
from engines.collab.sweep import (  # noqa: E402
    DEFAULT_COMP_GRID,
    DEFAULT_HARM_GRID,
    QUICK_COMP_GRID,
    QUICK_HARM_GRID,
    SweepConfig,
    run_sweep,
)

FULL_T, QUICK_T = 100_000, 20_000
DEFAULT_OUT = REPO_ROOT / "bench" / "results" / "collab_reproduction.json"
DEFAULT_PLOTS = REPO_ROOT / "assets" / "collab" / "plots"
WINDOW = 500  # the precursor's centred rolling window
PLOT_POINTS = 2_000  # points per line in the PNGs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Reproduce the collaboration paper's two claims (online control "
                                                 "vs fixed thresholds; accuracy over the target grid).")
    parser.add_argument("--quick", action="store_true", help=f"T = {QUICK_T:,} and a small grid (for tests)")
    parser.add_argument("--T", type=int, default=None, help=f"interactions per run (default {FULL_T:,})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="result JSON")
    parser.add_argument("--plots-dir", type=Path, default=DEFAULT_PLOTS, help="where the PNGs go")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    return parser.parse_args(argv)


def _worst_deviation(summary) -> float:
    return max(abs(summary.violation_rate[k] - summary.target[k]) for k in rate_traces.CONSTRAINTS)


def claim_online_vs_fixed(T: int, seed: int) -> tuple[dict, dict[str, SimulationResult]]:
    """Claim (1) for every schedule: the online rates stay within target + bound; the fixed ones drift."""
    per_schedule, results = {}, {}
    for schedule in sorted(SCHEDULES):
        result = simulate(SimulationConfig(schedule=schedule, T=T, seed=seed))
        results[schedule] = result
        on, fx = result.online, result.fixed
        per_schedule[schedule] = {
            "online": {"violation_rate": on.violation_rate, "bound": on.bound, "within_bound": on.within_bound,
                       "max_excess": on.max_excess, "accuracy": on.accuracy},
            "fixed": {"violation_rate": fx.violation_rate, "accuracy": fx.accuracy},
            # The AI-only baseline (docs/collab.md, Method): a plain conformal set matched in coverage.
            "matched": {"violation_rate": result.matched.violation_rate, "accuracy": result.matched.accuracy,
                        "set_coverage": result.matched.set_coverage, "online_set_coverage": on.set_coverage,
                        "mean_set_size": result.matched.mean_set_size, "online_mean_set_size": on.mean_set_size},
            "target": on.target,
            "worst_deviation": {"online": _worst_deviation(on), "fixed": _worst_deviation(fx)},
            "fixed_farther": _worst_deviation(fx) > _worst_deviation(on),
            "shift_points": result.shift_points, "description": result.schedule_description,
            "human_alone_accuracy": result.human_alone_accuracy, "ai_alone_accuracy": result.ai_alone_accuracy,
            "wall_s": result.wall_s,
        }
        print(f"claim 1 {schedule:>18}: online {on.violation_rate}, fixed {fx.violation_rate}", file=sys.stderr)
    shifting = [s for s in per_schedule if s != "stationary"]
    claim = {
        "statement": "online running violation rates stay within target + bound(t) at every t under every "
                     "schedule; the fixed baseline ends farther from the target under shifts",
        "online_within_bound_all": all(all(r["online"]["within_bound"].values()) and
                                       all(e <= 1e-12 for e in r["online"]["max_excess"].values())
                                       for r in per_schedule.values()),
        "fixed_farther_under": [s for s in shifting if per_schedule[s]["fixed_farther"]],
        "schedules": per_schedule,
    }
    claim["holds"] = bool(claim["online_within_bound_all"] and "drift" in claim["fixed_farther_under"])
    return claim, results


def claim_accuracy_grid(T: int, seed: int, harm_grid, comp_grid) -> dict:
    """Claim (2): accuracy rises as alpha_comp tightens and as alpha_harm loosens from 0.01 to 0.05."""
    sweep = run_sweep(SweepConfig(base=SimulationConfig(T=T, seed=seed, with_fixed=False, with_matched=False),
                                  alpha_harm_grid=tuple(harm_grid), alpha_comp_grid=tuple(comp_grid)))
    data = sweep.to_dict()
    acc = np.array(sweep.accuracy)
    harm = list(harm_grid)
    tighter_comp = bool(np.all(np.diff(acc[0, :]) < 0))  # smallest alpha_harm: accuracy falls as alpha_comp grows
    i01, i05 = harm.index(0.01), harm.index(0.05)
    looser_harm = bool(np.all(acc[i05, :] > acc[i01, :]))
    print(f"claim 2: {data['summary']}", file=sys.stderr)
    return {
        "statement": "tightening alpha_comp raises final accuracy (at the smallest alpha_harm); loosening "
                     "alpha_harm from 0.01 to 0.05 raises it (for every alpha_comp)",
        "tighter_comp_raises_accuracy": tighter_comp,
        "looser_harm_raises_accuracy": looser_harm,
        "holds": tighter_comp and looser_harm,
        "sweep": {k: data[k] for k in ("config", "accuracy", "trends", "human_alone_accuracy", "ai_alone_accuracy",
                                       "cells", "wall_s")},
    }


OVERLAPS = (1, 10, 50)


def check_delayed_updates(T: int, seed: int, overlaps=OVERLAPS) -> dict:
    """With P participants in flight on one stream (drift), the online rates stay within target + the
    delay-aware bound (D = P − 1; ``controller.upper_bound``): the price of a crowd is a wider band."""
    rows = {}
    for overlap in overlaps:
        result = simulate(SimulationConfig(schedule="drift", T=T, seed=seed, overlap=overlap, with_matched=False))
        on = result.online
        rows[str(overlap)] = {"violation_rate": on.violation_rate, "bound": on.bound, "within_bound": on.within_bound,
                              "max_excess": on.max_excess, "accuracy": on.accuracy,
                              "fixed_violation_rate": result.fixed.violation_rate}
        print(f"delays: overlap {overlap:>3}: online {on.violation_rate}, bound {on.bound}", file=sys.stderr)
    holds = all(all(r["within_bound"].values()) and all(e <= 1e-12 for e in r["max_excess"].values())
                for r in rows.values())
    return {"statement": "with P overlapping participants (each update lands P - 1 updates late) the online "
                         "running rates stay within target + the delay-aware bound at every t",
            "schedule": "drift", "overlaps": rows, "holds": holds}


# FIGURES (matplotlib: static PNGs for the README; engines.collab.plots draws the same with plotly)

def _thin(traces: rate_traces.RateTraces, points: int = PLOT_POINTS) -> rate_traces.RateTraces:
    idx = np.unique(np.linspace(0, len(traces.t) - 1, min(points, len(traces.t))).round().astype(int))

    def pick(d):
        return {k: (None if v is None else v[idx]) for k, v in d.items()}

    return rate_traces.RateTraces(traces.label, traces.t[idx], pick(traces.running), pick(traces.local),
                                  pick(traces.thresholds), traces.target, pick(traces.bound), traces.local_kind)


def _run_traces(result: SimulationResult, which: str) -> rate_traces.RateTraces:
    run = result.runs[which]
    traces = rate_traces.traces_from_errors({"harm": run.err_harm, "comp": run.err_comp},
                                            {"harm": run.q_harm, "comp": run.q_comp}, run.final_state,
                                            fired={"harm": run.fired_harm, "comp": run.fired_comp}, label=which,
                                            window=WINDOW, centred=True)
    return _thin(traces)


def plot_schedule(result: SimulationResult, path: Path) -> None:
    import matplotlib.pyplot as plt

    runs = [_run_traces(result, "online"), _run_traces(result, "fixed")]
    colors = {"online": "tab:blue", "fixed": "tab:red"}
    fig, axes = plt.subplots(2, 2, figsize=(13, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    for col, name in enumerate(rate_traces.CONSTRAINTS):
        ax = axes[0, col]
        online = runs[0]
        target = online.target[name]
        ymax = min(1.0, max(2.5 * target, 1.3 * max(float(r.running[name][len(r.t) // 20:].max()) for r in runs),
                            1.2 * max(float(r.local[name].max()) for r in runs)))
        upper = np.minimum(target + online.bound[name], ymax)
        ax.fill_between(online.t, target, upper, color="tab:blue", alpha=0.25,
                        label="online guarantee: target + bound(t)")
        ax.plot(online.t, upper, color="tab:blue", ls="--", lw=0.9)  # the band's edge, visible once it is thin
        for r in runs:
            ax.plot(r.t, r.local[name], color=colors[r.label], lw=0.7, alpha=0.35,
                    label=f"{r.label}: centred rolling rate (W={WINDOW})")
            ax.plot(r.t, r.running[name], color=colors[r.label], lw=2, label=f"{r.label}: running rate")
        ax.axhline(target, color="black", ls="--", lw=1.2, label=f"target α = {target:g}")
        ax.set_ylim(0, ymax)
        ax.set_title(plots.CONSTRAINT_TITLES[name])
        ax.set_ylabel("violation rate")
        tax = axes[1, col]
        for r in runs:
            tax.plot(r.t, r.thresholds[name], color=colors[r.label], lw=0.8 if r.label == "online" else 1.8,
                     label=r.label)
        tax.set_title(plots.THRESHOLD_TITLES[name])
        tax.set_ylabel("threshold (score units)")
        tax.set_xlabel("interaction t")
        for point in result.shift_points:
            for a in (ax, tax):
                a.axvline(point, color="grey", ls=":", lw=1)
        for a in (ax, tax):
            a.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9, frameon=False)
    axes[1, 0].legend(title="thresholds", fontsize=9)
    cfg = result.config
    fig.suptitle(f"Schedule '{cfg.schedule}' — online vs fixed thresholds, T = {cfg.T:,}"
                 + (" (dotted: shift points)" if result.shift_points else ""), fontsize=13)
    fig.tight_layout(rect=(0, 0.09, 1, 0.97))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sweep(claim: dict, path: Path) -> None:
    import matplotlib.pyplot as plt

    sweep = claim["sweep"]
    harm, comp = sweep["config"]["alpha_harm_grid"], sweep["config"]["alpha_comp_grid"]
    acc = np.array(sweep["accuracy"])
    fig, (hm, ln) = plt.subplots(1, 2, figsize=(13, 5))
    image = hm.imshow(acc, cmap="viridis", aspect="auto", origin="lower")
    hm.set_xticks(range(len(comp)), [f"{c:g}" for c in comp])
    hm.set_yticks(range(len(harm)), [f"{h:g}" for h in harm])
    for i in range(len(harm)):
        for j in range(len(comp)):
            hm.text(j, i, f"{acc[i, j]:.3f}", ha="center", va="center",
                    color="white" if acc[i, j] < acc.mean() else "black", fontsize=9)
    hm.set_xlabel("alpha_comp (complementarity target)")
    hm.set_ylabel("alpha_harm (harm target)")
    hm.set_title("Final accuracy over the target grid")
    fig.colorbar(image, ax=hm, label="final accuracy")
    for j, c in enumerate(comp):
        ln.plot(harm, acc[:, j], marker="o", label=f"alpha_comp = {c:g}")
    ln.axhline(sweep["human_alone_accuracy"], color="grey", ls="--", label="human alone")
    ln.axhline(sweep["ai_alone_accuracy"], color="grey", ls=":", label="AI alone (top-1)")
    ln.set_xscale("log")
    ln.set_xlabel("alpha_harm (harm target, log scale)")
    ln.set_ylabel("final accuracy")
    ln.set_title("Final accuracy vs harm target, one line per alpha_comp")
    ln.grid(alpha=0.3)
    ln.legend(fontsize=9)
    T = sweep["config"]["base"]["T"]
    fig.suptitle(f"Claim (2): accuracy over (alpha_harm, alpha_comp), schedule "
                 f"'{sweep['config']['base']['schedule']}', T = {T:,} per cell", fontsize=13)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    T = args.T or (QUICK_T if args.quick else FULL_T)
    harm_grid, comp_grid = (QUICK_HARM_GRID, QUICK_COMP_GRID) if args.quick else (DEFAULT_HARM_GRID, DEFAULT_COMP_GRID)
    started = time.perf_counter()
    claim1, results = claim_online_vs_fixed(T, args.seed)
    claim2 = claim_accuracy_grid(T, args.seed, harm_grid, comp_grid)
    delays = check_delayed_updates(T, args.seed)
    plots = []
    if not args.no_plots:
        import matplotlib

        matplotlib.use("Agg")
        args.plots_dir.mkdir(parents=True, exist_ok=True)
        for schedule, result in results.items():
            path = args.plots_dir / f"violations_{schedule}.png"
            plot_schedule(result, path)
            plots.append(path)
        path = args.plots_dir / "sweep_accuracy.png"
        plot_sweep(claim2, path)
        plots.append(path)
    out = {
        "benchmark": "collab_reproduction",
        "command": "python bench/collab_reproduction.py" + (" --quick" if args.quick else ""),
        "T": T, "seed": args.seed, "quick": args.quick,
        "claims": {"online_vs_fixed": claim1, "accuracy_grid": claim2},
        "holds": {"online_vs_fixed": claim1["holds"], "accuracy_grid": claim2["holds"],
                  "delayed_updates": delays["holds"]},
        "delayed_updates": delays,
        "plots": [str(p.relative_to(REPO_ROOT)) if p.is_relative_to(REPO_ROOT) else str(p) for p in plots],
        "wall_s": round(time.perf_counter() - started, 2),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    write_result(out, args.out)
    print(json.dumps({"holds": out["holds"], "wall_s": out["wall_s"], "out": str(args.out)}))
    return out


if __name__ == "__main__":
    main()
