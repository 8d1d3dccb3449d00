"""The JSON files the collaboration engine writes, read back and written by typed dataclasses.

Paper: Noorani, Kiyani, Hassani, Pappas, "Multi-Round Human–AI Collaboration with
User-Specified Requirements" (ICML 2026, arXiv:2602.17646); ``docs/collab.md``, Method.

- ``SimulationResultFile``: what ``python -m engines.collab simulate --out`` and a
  ``collab.simulate`` job write (``SimulationResult.to_dict``): accuracies, and per run (online,
  fixed, matched) the final metrics and the running traces at checkpoints (``TraceCheckpoints``).
- ``SweepResultFile``: what ``sweep`` and a ``collab.sweep`` job write: final accuracy over the
  (alpha_harm, alpha_comp) grid.
- ``CounterReportFile``: the counting CNN's training report, shipped
  (``assets/collab/counter_report.json``) or written by a ``collab.train_counter`` job.

Reading checks every key the figures and tables use and refuses a file that lacks one with a
``ResultFileError`` naming it (``simulate result 'online.trace' is missing key 'q_comp'``). Keys a
reader does not know are kept in ``extra`` and written back in the file's order, so
``from_json(data).to_dict() == data`` and ``to_json()`` gives the text ``write_result_file`` wrote.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from engines.platform.files import FileRefused, echo, loads_json, shown_path
from engines.platform.settings import REPO_ROOT

CONSTRAINTS = ("harm", "comp")  # the two constraints: counterfactual harm, complementarity
SHIPPED_COUNTER_REPORT = REPO_ROOT / "assets" / "collab" / "counter_report.json"

Source = bytes | str | dict | Path  # a file's bytes (an upload), its text, the parsed object, or its path


class ResultFileError(ValueError):
    """A result JSON is not what its reader expects; the message names the missing key or what is wrong."""


def result_text(data: dict) -> str:
    """The text of a result file: 2-space indented JSON with a final newline."""
    return json.dumps(data, indent=2) + "\n"


def write_result_file(data: dict, out: Path | str | None) -> None:
    """Write a result (``to_dict()``) to ``out`` (nothing when None): the file ``--out`` and a job's result.json hold."""
    if out is None:
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(result_text(data))


def _parse(source: Source, what: str = "the result") -> dict:
    """The JSON object of ``source``; a file or upload is parsed with the nesting limit
    (``files.loads_json``), so a hostile document gives a ``ResultFileError``, never a ``RecursionError``.
    Messages name a file by its path as a person may see it (``files.shown_path``)."""
    where = what
    if isinstance(source, Path):
        where = f"{what} ({shown_path(source)})"
        source = source.read_bytes()
    if isinstance(source, bytes | bytearray):
        try:
            source = bytes(source).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ResultFileError(f"{where}: not valid JSON: not UTF-8 text ({exc.reason})") from None
    if isinstance(source, str):
        try:
            source = loads_json(source, where=where)
        except FileRefused as exc:
            raise ResultFileError(str(exc)) from None
    if not isinstance(source, dict):
        raise ResultFileError(f"{what} must be a JSON object, got {type(source).__name__}")
    return source


def _require(data: Any, keys: Sequence[str], where: str) -> None:
    if not isinstance(data, dict):
        raise ResultFileError(f"{where} must be a JSON object, got {type(data).__name__}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise ResultFileError(f"{where} is missing key {echo(missing[0])}" +
                              (f" (and {', '.join(map(repr, missing[1:]))})" if missing[1:] else ""))


@dataclass
class _JsonRecord:
    """A JSON object as a dataclass: ``REQUIRED`` and ``OPTIONAL`` keys are fields, the rest ``extra``.

    ``keys`` remembers the file's key order (and which optional keys it had), so ``to_dict`` gives
    back the same object; a record built in code (``keys`` empty) writes its optional keys unless None.
    """

    REQUIRED: ClassVar[tuple[str, ...]] = ()
    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def _values(cls, data: dict, where: str) -> dict[str, Any]:
        _require(data, cls.REQUIRED, where)
        names = cls.REQUIRED + cls.OPTIONAL
        return {**{k: data[k] for k in names if k in data},
                "extra": {k: v for k, v in data.items() if k not in names}, "keys": tuple(data)}

    def to_dict(self) -> dict:
        values = {}
        for name in self.REQUIRED + self.OPTIONAL:
            value = getattr(self, name)
            if name in self.REQUIRED or name in self.keys or value is not None:
                values[name] = value.to_dict() if isinstance(value, _JsonRecord) else value
        values |= self.extra
        order = [k for k in self.keys if k in values] + [k for k in values if k not in self.keys]
        return {k: values[k] for k in order}

    def to_json(self) -> str:
        """The JSON text, laid out as ``write_result_file`` writes it."""
        return result_text(self.to_dict())


TRACE_KEYS = ("t", "violation_harm", "violation_comp", "local_harm", "local_comp", "q_harm", "q_comp")


@dataclass
class TraceCheckpoints(_JsonRecord):
    """A run's traces at checkpoints t (1-based): running and trailing local rates, thresholds, bound.

    ``bound_*`` is absent for a run without a guarantee; a None entry in it: nothing counted yet.
    """

    REQUIRED: ClassVar[tuple[str, ...]] = TRACE_KEYS
    OPTIONAL: ClassVar[tuple[str, ...]] = ("bound_harm", "bound_comp")

    t: list[int]
    violation_harm: list[float]
    violation_comp: list[float]
    local_harm: list[float]
    local_comp: list[float]
    q_harm: list[float]
    q_comp: list[float]
    bound_harm: list[float | None] | None = None
    bound_comp: list[float | None] | None = None
    extra: dict = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict, where: str = "trace") -> TraceCheckpoints:
        values = cls._values(data, where)
        lengths = {k: len(values[k]) if isinstance(values[k], list) else None
                   for k in (*TRACE_KEYS, *(k for k in cls.OPTIONAL if values.get(k) is not None))}
        if None in lengths.values() or len(set(lengths.values())) != 1:
            raise ResultFileError(f"{where} has lists of different lengths: {lengths}")
        return cls(**values)

    def violation(self, name: str) -> list[float]:
        return getattr(self, f"violation_{name}")

    def local(self, name: str) -> list[float]:
        return getattr(self, f"local_{name}")

    def threshold(self, name: str) -> list[float]:
        return getattr(self, f"q_{name}")

    def bound(self, name: str) -> list[float | None] | None:
        return getattr(self, f"bound_{name}")


RUN_KEYS = ("violation_rate", "target", "bound", "within_bound", "accuracy", "mean_set_size", "set_coverage",
            "mean_rounds", "mean_stabilise_round", "trace")


@dataclass
class RunSummary(_JsonRecord):
    """One controller run of a simulation (online, fixed or matched): final metrics and traces.

    ``violation_rate``, ``target``, ``bound`` and ``within_bound`` are {"harm": ..., "comp": ...};
    ``bound`` and ``within_bound`` hold None for a run without a guarantee.
    """

    REQUIRED: ClassVar[tuple[str, ...]] = RUN_KEYS

    violation_rate: dict[str, float]
    target: dict[str, float]
    bound: dict[str, float | None]
    within_bound: dict[str, bool | None]
    accuracy: float
    mean_set_size: float
    set_coverage: float
    mean_rounds: float
    mean_stabilise_round: float
    trace: TraceCheckpoints
    extra: dict = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_dict(cls, data: dict, name: str = "online", *, what: str = "simulate result") -> RunSummary:
        """Read run ``name`` of a result; messages name the place as ``<what> '<name>.trace'``."""
        values = cls._values(data, f"{what} '{name}'")
        _require(values["target"], CONSTRAINTS, f"{what} '{name}.target'")
        values["trace"] = TraceCheckpoints.from_dict(values["trace"], f"{what} '{name}.trace'")
        return cls(**values)


SIMULATE_KEYS = ("config", "human_alone_accuracy", "ai_alone_accuracy", "online", "fixed", "shift_points")


@dataclass
class SimulationResultFile(_JsonRecord):
    """A ``simulate`` result: the config, accuracies alone, and the online, fixed and matched runs.

    Examples::

        >>> result = SimulationResultFile.from_json(path.read_bytes())  # doctest: +SKIP
        >>> result.online.violation_rate["harm"], result.online.trace.t[-1]  # doctest: +SKIP
    """

    kind: ClassVar[str] = "simulate"
    REQUIRED: ClassVar[tuple[str, ...]] = SIMULATE_KEYS
    OPTIONAL: ClassVar[tuple[str, ...]] = ("matched", "summary")

    config: dict
    human_alone_accuracy: float
    ai_alone_accuracy: float
    online: RunSummary
    fixed: RunSummary | None
    shift_points: list[int]
    matched: RunSummary | None = None
    summary: str | None = None
    extra: dict = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_json(cls, source: Source) -> SimulationResultFile:
        """Read and check a ``simulate`` result; ``ResultFileError`` names the first missing key."""
        values = cls._values(_parse(source), "simulate result")
        for which in ("online", "fixed", "matched"):
            if values.get(which) is not None:
                values[which] = RunSummary.from_dict(values[which], which)
        return cls(**values)

    def runs(self) -> dict[str, RunSummary]:
        """The runs present, in the order online, fixed, matched."""
        return {which: run for which in ("online", "fixed", "matched") if (run := getattr(self, which)) is not None}

    @property
    def title(self) -> str:
        c = self.config
        return f"Simulation: schedule {c.get('schedule', '?')}, T = {c.get('T', '?')}, human {c.get('human', '?')}"


SWEEP_KEYS = ("config", "cells", "accuracy", "human_alone_accuracy", "ai_alone_accuracy")


@dataclass
class SweepResultFile(_JsonRecord):
    """A ``sweep`` result: final accuracy over the grid, ``accuracy[i][j]`` at (alpha_harm_grid[i], alpha_comp_grid[j])."""

    kind: ClassVar[str] = "sweep"
    REQUIRED: ClassVar[tuple[str, ...]] = SWEEP_KEYS
    OPTIONAL: ClassVar[tuple[str, ...]] = ("summary",)

    config: dict
    cells: list
    accuracy: list[list[float]]
    human_alone_accuracy: float
    ai_alone_accuracy: float
    summary: str | None = None
    extra: dict = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def from_json(cls, source: Source) -> SweepResultFile:
        """Read and check a ``sweep`` result; ``ResultFileError`` names the first missing key."""
        values = cls._values(_parse(source), "sweep result")
        _require(values["config"], ("alpha_harm_grid", "alpha_comp_grid"), "sweep result 'config'")
        rows, cols = len(values["config"]["alpha_harm_grid"]), len(values["config"]["alpha_comp_grid"])
        acc = values["accuracy"]
        if not (isinstance(acc, list) and len(acc) == rows and all(isinstance(r, list) and len(r) == cols for r in acc)):
            raise ResultFileError(f"sweep result 'accuracy' must be a {rows} x {cols} list of lists "
                                  "(alpha_harm_grid x alpha_comp_grid)")
        return cls(**values)

    @property
    def alpha_harm_grid(self) -> list[float]:
        return list(self.config["alpha_harm_grid"])

    @property
    def alpha_comp_grid(self) -> list[float]:
        return list(self.config["alpha_comp_grid"])

    @property
    def title(self) -> str:
        base = self.config.get("base", {})
        return f"Sweep: schedule {base.get('schedule', '?')}, T = {base.get('T', '?')}"


ResultFile = SimulationResultFile | SweepResultFile


def load_result_file(source: Source) -> ResultFile:
    """A ``simulate`` or ``sweep`` result, whichever ``source`` holds (bytes, text, parsed dict or path).

    Raises:
        ResultFileError: not JSON, nested beyond ``HAI_MAX_JSON_DEPTH``, not an object, neither
            kind, or a key missing (named).
    """
    data = _parse(source)
    if "cells" in data or ("accuracy" in data and "online" not in data):
        return SweepResultFile.from_json(data)
    if "online" not in data:
        raise ResultFileError("not a collab result: a simulate result needs key 'online', a sweep result key 'cells'")
    return SimulationResultFile.from_json(data)


METRIC_KEYS = ("n", "accuracy", "ece", "mean_confidence", "nll")


@dataclass
class CounterReportFile(_JsonRecord):
    """The counting CNN's training report (``counter_training.train_counter``).

    ``metrics`` maps an evaluation set ("overall", "easy", ..., "difficulty 0.67-1.00") to its n,
    accuracy, ECE, mean confidence and NLL. ``job_id`` and ``plots`` say where the report came from
    (the ``collab.train_counter`` job and the PNGs it wrote beside it; None and [] for the shipped
    model); they are not part of the file.
    """

    REQUIRED: ClassVar[tuple[str, ...]] = ("command", "n_parameters", "temperature", "metrics")
    OPTIONAL: ClassVar[tuple[str, ...]] = ("quick", "train_config", "train_difficulty", "history")

    command: str
    n_parameters: int
    temperature: float
    metrics: dict[str, dict]
    quick: bool | None = None
    train_config: dict | None = None
    train_difficulty: str | None = None
    history: list[dict] | None = None
    extra: dict = field(default_factory=dict)
    keys: tuple[str, ...] = field(default=(), repr=False, compare=False)
    job_id: int | None = field(default=None, compare=False)
    plots: list[Path] = field(default_factory=list, compare=False)

    @classmethod
    def from_json(cls, source: Source, *, job_id: int | None = None,
                  plots: Sequence[Path] = ()) -> CounterReportFile:
        """Read and check a training report; ``ResultFileError`` names the first missing key."""
        values = cls._values(_parse(source, "the counter report"), "counter report")
        _require(values["metrics"], ("overall",), "counter report 'metrics'")
        for name, metrics in values["metrics"].items():
            _require(metrics, METRIC_KEYS, f"counter report 'metrics.{name}'")
        return cls(**values, job_id=job_id, plots=list(plots))

    @property
    def overall(self) -> dict:
        return self.metrics["overall"]


def shipped_counter_report(path: Path = SHIPPED_COUNTER_REPORT) -> CounterReportFile | None:
    """The shipped model's report (``assets/collab/counter_report.json``); None if it is not there."""
    path = Path(path)
    return CounterReportFile.from_json(path) if path.is_file() else None


__all__ = ["SHIPPED_COUNTER_REPORT", "CounterReportFile", "ResultFile", "ResultFileError", "RunSummary",
           "SimulationResultFile", "SweepResultFile", "TraceCheckpoints", "load_result_file",
           "shipped_counter_report"]
