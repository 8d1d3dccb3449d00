"""The HOI-Edit area's commands: score a method's evaluation records, rate methods from arena votes.

Every path they are given resolves through ``engines.hoi.folders``: what they read lies in the
folders the app owns, what they write goes under the data folder's ``datasets/`` or ``jobs/``.

Each is ``add_*_arguments(parser)`` / ``run_*(args) -> dict`` for ``engines.platform.area_cli``.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path


def add_score_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--benchmark", type=Path, required=True,
                        help="the folder with the two upstream annotation JSONs (and images/L1L2, images/L3)")
    parser.add_argument("--records", type=Path, required=True, action="append",
                        help="a method's evaluation records (JSON); repeat for several methods")


def _row(row) -> dict:
    return {key: value for key, value in asdict(row).items() if key not in ("split", "name")}


def run_score(args: argparse.Namespace) -> dict:
    """HOI-Eval's scores per split, tag and level, and the paper's table, for each method."""
    from engines.hoi.benchmark import load_benchmark
    from engines.hoi.folders import benchmark_folder, input_file
    from engines.hoi.scoring import score_files

    benchmark = load_benchmark(benchmark_folder(args.benchmark, what="--benchmark"))
    records = [input_file(path, what="--records", suffixes=(".json",)) for path in args.records]
    scored = score_files(benchmark, records)
    methods = {}
    for method, scores in scored.items():
        methods[method] = {
            "splits": {split: _row(row) for split, row in scores.splits.items()},
            "tags": {split: {tag: _row(row) for tag, row in rows.items()} for split, rows in scores.tags.items()},
            "levels": {split: {level: _row(row) for level, row in rows.items()} for split, rows in scores.levels.items()},
            "paper_table": scores.paper_table(),
            "missing": len(scores.missing), "failed": len(scores.failed), "unscored": len(scores.unscored)}
    lines = []
    for method, result in methods.items():
        cells = []
        for row in result["paper_table"]:
            value = row.get("I+Q&A", row.get("I"))
            cells.append(f"{row['level']} {'n/a' if value is None else f'{value:.4f}'}")
        lines.append(f"{method}: " + ", ".join(cells) + " (L1: I; L2, L3: I+Q&A)")
    return {"benchmark": str(args.benchmark), "methods": methods, "summary": "\n".join(lines)}


def add_ratings_arguments(parser: argparse.ArgumentParser) -> None:
    from engines.hoi.ratings import METHODS

    parser.add_argument("--votes", type=Path, required=True,
                        help="arena votes, one JSON object per line (this project's or GenAI-Arena's shape)")
    parser.add_argument("--method", choices=METHODS, default="bt", help="Bradley-Terry (bt) or online Elo (elo)")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap resamples for the 95%% intervals")
    parser.add_argument("--seed", type=int, default=0)


def run_ratings(args: argparse.Namespace) -> dict:
    """Ratings of the methods from pairwise votes, with bootstrap intervals and the win-rate matrix."""
    import json

    from engines.hoi.folders import input_file
    from engines.hoi.ratings import rate, win_rate_matrix
    from engines.hoi.votes import read_votes

    log = read_votes(input_file(args.votes, what="--votes", suffixes=(".jsonl", ".json")))
    ratings = rate(log, args.method, rounds=args.rounds, seed=args.seed)
    result = json.loads(ratings.to_json())
    matrix = win_rate_matrix(log)
    result["win_rate"] = {row: {column: (None if value != value else round(float(value), 4))
                                for column, value in matrix.loc[row].items()} for row in matrix.index}
    ranked = sorted(ratings.ratings, key=ratings.ratings.get, reverse=True)
    result["summary"] = (f"{ratings.n_votes} votes ({ratings.n_left_out} left out: names shown before the vote); "
                         + ", ".join(f"{m} {ratings.ratings[m]:.0f}" for m in ranked))
    return result


def add_arena_votes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--study", required=True, help="the arena study's slug")
    parser.add_argument("--out", type=Path, required=True, help="where to write the votes (JSONL)")


def run_arena_votes(args: argparse.Namespace) -> dict:
    """Every stored vote of an arena study as JSONL, for ``ratings --votes``."""
    from engines.hoi.arena import export_votes
    from engines.hoi.folders import output_path

    out = output_path(args.out, what="--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    n = export_votes(args.study, out).count(b"\n")
    return {"study": args.study, "out": str(args.out), "votes": n,
            "summary": f"{n} votes of study {args.study} written to {args.out}"}
