"""The attribution area's files, as formats: a policy's sidecar, a trained set's report and an
experiment's result.

Each is JSON written by this area (``policies.save_policy``, ``policy_set.train_set``,
``experiment.run``) and read back from
folders a person can write to (a job's result folder, an uploaded policy's sidecar, the shipped
set), so each is declared here as a typed dictionary that pydantic checks on reading; a file that
does not follow it raises :class:`RunFileError` naming the file and the field
(``experiment.json: policies[3].ood_success: must be at most 1 (got 1.4)``). What is read stays a
plain ``dict``, as the pages and plots use it. No torch here: the pages read these files without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, NotRequired

from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this one's TypedDict before Python 3.12

from engines.platform.formats import FormatError, read_json

Rate = Annotated[float, Field(ge=0, le=1)]
Size = Annotated[int, Field(ge=1, le=4096)]


class RunFileError(FormatError):
    """An attribution file (sidecar or experiment result) that does not follow its format."""


class PolicySidecar(TypedDict):
    """``<policy>.json`` beside ``<policy>.pt``: the architecture's sizes (defaults 4, 2 and 24 when
    absent), and what training recorded (kept as given)."""

    __pydantic_config__ = {"extra": "allow"}  # type: ignore[misc] - pydantic reads it

    architecture: NotRequired[str]
    horizon: NotRequired[Size]
    action_dim: NotRequired[Size]
    width: NotRequired[Size]


class CueResult(TypedDict):
    """A policy's closed-loop success and action error with the cue as trained, randomised or absent."""

    __pydantic_config__ = {"extra": "allow"}  # type: ignore[misc] - pydantic reads it

    success: Rate
    action_mse: Annotated[float, Field(ge=0)]


class ReportRow(TypedDict):
    """One policy of a trained set's ``report.json``: its weights file (relative to the set's folder)
    and what training and evaluation recorded (kept as given)."""

    __pydantic_config__ = {"extra": "allow"}  # type: ignore[misc] - pydantic reads it

    file: Annotated[str, Field(min_length=1)]
    rho: Rate
    seed: int
    evaluation: NotRequired[dict[Literal["normal", "random", "none"], CueResult]]


class PolicySetReport(TypedDict):
    """A trained set's ``report.json`` (``policy_set.train_set``)."""

    __pydantic_config__ = {"extra": "allow"}  # type: ignore[misc] - pydantic reads it

    policies: list[ReportRow]


class Correlation(TypedDict):
    """Spearman's rho of NMR with one outcome across policies; all None with fewer than 3 policies."""

    rho: Annotated[float, Field(ge=-1, le=1)] | None
    p_permutation: Annotated[float, Field(gt=0, le=1)] | None
    ci_low: Annotated[float, Field(ge=-1, le=1)] | None
    ci_high: Annotated[float, Field(ge=-1, le=1)] | None
    n: Annotated[int, Field(ge=0)]


class PolicyResult(TypedDict):
    """One policy of an experiment: its NMR per method (None where no frame gave one) and its
    success and action error with the cue as trained (``id_``), randomised (``ood_``) and absent."""

    rho: Rate
    seed: int
    policy: str  # "loaded" or "trained"
    nmr: dict[str, Annotated[float, Field(ge=0)] | None]
    id_success: Rate
    id_mse: Annotated[float, Field(ge=0)]
    ood_success: Rate
    ood_mse: Annotated[float, Field(ge=0)]
    no_cue_success: Rate
    no_cue_mse: Annotated[float, Field(ge=0)]


class ExperimentResult(TypedDict):
    """``experiment.json``: the run's settings, its policies and the correlations per method."""

    config: dict[str, Any]
    policies: list[PolicyResult]
    correlations: dict[str, dict[Literal["ood_mse", "ood_success"], Correlation]]
    seconds: Annotated[float, Field(ge=0)]
    summary: str


def read_experiment_file(path: Path, *, name: str | None = None) -> ExperimentResult:
    """An experiment's ``experiment.json``, a plain ``dict`` (``RunFileError`` naming the file and the field)."""
    return read_json(path, ExperimentResult, format_name="an attribution experiment's result", name=name or path.name,
                     error=RunFileError)


def read_set_report(path: Path, *, name: str | None = None) -> PolicySetReport:
    """A trained set's ``report.json`` (as :func:`read_experiment_file`)."""
    return read_json(path, PolicySetReport, format_name="a policy set's report", name=name or path.name,
                     error=RunFileError)


def read_sidecar(path: Path, *, name: str | None = None) -> PolicySidecar:
    """A policy's sidecar (as :func:`read_experiment_file`)."""
    return read_json(path, PolicySidecar, format_name="a policy's sidecar", name=name or path.name, error=RunFileError)
