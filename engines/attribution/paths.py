"""Which files the attribution area opens and writes on a person's behalf.

Every path it is handed (a policy file a page or a job names, a command's ``--policy-dir``, a
policy set's ``report.json`` rows, a job's ``experiment.json``) resolves through the platform's
one path policy, ``engines.platform.files.owned_path``: inside the folders the app owns (uploads,
registered data sets, job results, the shipped assets), with the expected suffix, or it is refused
with ``FileRefused`` and never opened. A command writes (``--out``, ``--out-dir``) only under the
data folder's ``datasets/`` or ``jobs/``; the shipped set in ``assets/`` is written only by its
own regeneration command.
"""

from __future__ import annotations

from pathlib import Path

from engines.platform import files
from engines.platform.files import FileRefused, Folder, area_folder, owned_path, shown_path
from engines.platform.private_files import private_dir

AREA = "attribution"
POLICY_SUFFIXES = (".pt", ".pth")
OUTPUT_FOLDERS: tuple[Folder, ...] = ("datasets", "jobs")


def policy_path(path: str | Path, *, base: Path | None = None) -> Path:
    """A policy's weights file (``.pt``/``.pth``) inside the owned folders; a relative path starts
    from ``base`` (a policy set's folder for the files its report names)."""
    return owned_path(path, what="the policy's weights", suffixes=POLICY_SUFFIXES, base=base)


def policy_folder(path: str | Path) -> Path:
    """A folder of policies (``--policy-dir``) inside the owned folders."""
    return owned_path(path, what="--policy-dir", kind="dir")


def result_file(path: str | Path, *, what: str, suffixes: tuple[str, ...] = (".json",)) -> Path:
    """A job's result file (as its ``result_path`` names it), in a job's result folder."""
    return owned_path(path, what=what, suffixes=suffixes, folders=("jobs",))


def output_path(path: str | Path, *, what: str, shipped: Path | None = None) -> Path:
    """Where a command may write ``path``: the platform's ``output_path`` under the data folder's
    ``datasets/`` or ``jobs/`` (``datasets/attribution`` is made first); ``shipped``: the one shipped
    file or folder this command regenerates, also accepted."""
    private_dir(area_folder("datasets", AREA))
    return files.output_path(path, what=what, folders=OUTPUT_FOLDERS, regenerates=shipped)


def shown(path: str | Path) -> str:
    """``path`` as a result file keeps it: relative to its owned folder (``shipped/attribution/policies``)."""
    return shown_path(Path(path))


__all__ = ["AREA", "OUTPUT_FOLDERS", "POLICY_SUFFIXES", "FileRefused", "output_path", "policy_folder",
           "policy_path", "result_file", "shown"]
