"""docs/jobs.md is written from the job kinds' parameter models, and says what they say today."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from engines.platform.jobqueue import discover_job_kinds
from engines.platform.param_docs import job_parameters_markdown, model_table, type_text
from engines.platform.settings import REPO_ROOT


def test_the_reference_page_is_what_the_parameter_models_say():
    shipped = {name: kind for name, kind in discover_job_kinds().items() if not name.startswith("tests.")}
    written = (REPO_ROOT / "docs" / "jobs.md").read_text(encoding="utf-8")
    assert written == job_parameters_markdown(shipped), (
        "docs/jobs.md is out of date: python -m engines.platform jobs params > docs/jobs.md")
    for name in shipped:
        assert f"## `{name}`:" in written


def test_a_table_states_types_defaults_bounds_and_titles():
    class Budget(BaseModel):
        steps: int = Field(default=8, ge=1, le=64, title="Planner steps")
        share: float = Field(default=0.5, gt=0, lt=1)
        agent: Literal["gated", "coupled"] = "gated"
        limit: int | None = None
        budgets: list[int] = Field(default=[2, 4], min_length=1, max_length=6)
        video: str

    assert model_table(Budget).splitlines() == [
        "| Parameter | Type | Default | Bounds | What it is |",
        "|---|---|---|---|---|",
        "| `steps` | int | `8` | ≥ 1, ≤ 64 | Planner steps |",
        "| `share` | float | `0.5` | > 0, < 1 |  |",
        '| `agent` | "gated" or "coupled" | `"gated"` |  |  |',
        "| `limit` | int or null | `null` |  |  |",
        "| `budgets` | list of int | `[2, 4]` | at least 1 long, at most 6 long |  |",
        "| `video` | str | required |  |  |",
    ]


def test_type_names_read_as_words():
    assert type_text(tuple[float, float]) == "pair of float and float"
    assert type_text(tuple[int, ...]) == "list of int"
    assert type_text(dict[str, str]) == "object"
