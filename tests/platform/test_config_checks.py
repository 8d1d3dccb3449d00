"""A config's bounds are declared once, in its fields' metadata, and met alike by every caller:
``check_fields`` in ``__post_init__`` (a script, the command line) and the job model derived from it."""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass, field

import pytest
from pydantic import ValidationError

from engines.platform.config_schema import JobParams, argparse_options, check_fields, job_model, option_values


@dataclass(frozen=True)
class Budget:
    steps: int = field(default=8, metadata={"help": "steps", "min": 1, "max": 64})
    rate: float = field(default=2.0, metadata={"help": "rate", "gt": 0, "max": 30})
    share: float = field(default=0.5, metadata={"help": "share", "gt": 0, "lt": 1})
    seed: int = field(default=0, metadata={"help": "seed", "min": 0})
    mode: str = field(default="fast", metadata={"help": "mode", "choices": ("fast", "exact")})
    limit: int | None = field(default=None, metadata={"help": "limit", "min": 1})
    grid: tuple[int, ...] = field(default=(1, 2), metadata={"min_length": 1, "max_length": 3, "cli": False})

    def __post_init__(self) -> None:
        check_fields(self)


@pytest.mark.parametrize(("values", "message"), [
    ({"steps": 0}, "steps must be from 1 to 64, got 0"),
    ({"steps": 65}, "steps must be from 1 to 64, got 65"),
    ({"rate": 0.0}, "rate must be above 0 and at most 30, got 0"),
    ({"rate": 30.5}, "rate must be above 0 and at most 30, got 30.5"),
    ({"share": 1.0}, "share must be above 0 and below 1, got 1"),
    ({"seed": -1}, "seed must be at least 0, got -1"),
    ({"mode": "slow"}, "mode must be one of fast, exact, got 'slow'"),
    ({"limit": 0}, "limit must be at least 1, got 0"),
    ({"grid": ()}, "grid needs at least 1 item(s), got ()"),
    ({"grid": (1, 2, 3, 4)}, "grid takes at most 3 item(s), got 4"),
    ({"steps": 2.5}, "steps must be a whole number, got 2.5"),
    ({"steps": True}, "steps must be a whole number, got True"),
    ({"rate": "fast"}, "rate must be a number, got 'fast'"),
    ({"limit": 1.0}, "limit must be a whole number, got 1.0"),
])
def test_a_value_outside_the_declared_bounds_is_refused_with_them_in_words(values, message):
    with pytest.raises(ValueError) as refused:
        Budget(**values)
    assert str(refused.value) == message


def test_the_bounds_themselves_an_unset_optional_and_numpy_numbers_pass():
    import numpy as np

    Budget(steps=1, rate=30.0, share=0.999, seed=0, limit=None, grid=(5, 6, 7))
    Budget(steps=64, rate=1e-9, mode="exact", limit=1)
    Budget(steps=np.int64(3), rate=np.float32(2.5), seed=np.int32(7), share=1 / 3)
    Budget(rate=3)  # a whole number is a number


def test_the_command_line_and_a_job_refuse_what_the_config_refuses():
    parser = argparse.ArgumentParser()
    argparse_options(Budget, parser)
    args = parser.parse_args(["--steps", "65"])
    with pytest.raises(ValueError, match="steps must be from 1 to 64, got 65"):
        Budget(**option_values(Budget, args))

    params = job_model(Budget, name="BudgetParams")
    assert params(steps=64).steps == 64
    with pytest.raises(ValidationError, match="steps"):
        params(steps=65)
    with pytest.raises(ValidationError, match="grid"):
        params(grid=())


def test_a_job_meets_the_configs_own_cross_field_check():
    @dataclass(frozen=True)
    class Window:
        start: int = field(default=0, metadata={"min": 0})
        end: int = field(default=10, metadata={"min": 0})

        def __post_init__(self) -> None:
            check_fields(self)
            if self.end <= self.start:
                raise ValueError(f"end must come after start, got {self.start} to {self.end}")

    params = job_model(Window, name="WindowParams")
    assert params(start=2, end=3).end == 3
    with pytest.raises(ValidationError, match="end must come after start, got 5 to 5"):
        params(start=5, end=5)


def test_a_jobs_config_is_built_from_its_values_after_the_base_models_flag_adjusts_them():
    @dataclass(frozen=True)
    class Training:
        images: int = field(default=1000, metadata={"min": 1})
        batch: int = field(default=100, metadata={"min": 1})

        def __post_init__(self) -> None:
            check_fields(self)
            if self.images < self.batch:
                raise ValueError(f"images ({self.images}) must be at least batch ({self.batch})")

    class Quick(JobParams):
        quick: bool = False

    def quick_sizes(params, values):
        return {**values, "images": 8, "batch": 4} if params.quick else values

    params = job_model(Training, name="TrainingParams", base=Quick, adjust=quick_sizes)
    assert params(images=500).config() == Training(images=500, batch=100)
    assert params(images=2, quick=True).config() == Training(images=8, batch=4)  # the sizes a quick run uses
    with pytest.raises(ValidationError, match=re.escape("images (2) must be at least batch (100)")):
        params(images=2)  # not quick: the config's own check refuses the job
    assert job_model(Training, name="PlainParams")(batch=10).config() == Training(batch=10)


def test_a_required_field_is_a_required_option_and_a_job_parameter_without_default():
    @dataclass(frozen=True)
    class Named:
        name: str = field(default="", metadata={"help": "name", "required": True})
        size: int = field(default=1, metadata={"help": "size", "min": 1})

        def __post_init__(self) -> None:
            check_fields(self)
            if not self.name:
                raise ValueError("name is empty")

    parser = argparse.ArgumentParser()
    argparse_options(Named, parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--size", "2"])  # argparse: the option is required
    assert Named(**option_values(Named, parser.parse_args(["--name", "x"]))) == Named(name="x")
    params = job_model(Named, name="NamedParams")
    with pytest.raises(ValidationError, match=r"name\n  Field required"):
        params(size=2)
    assert params(name="y").config() == Named(name="y")


def test_an_options_help_says_the_default_a_run_without_it_uses():
    parser = argparse.ArgumentParser()
    argparse_options(Budget, parser)
    shown = " ".join(parser.format_help().split())
    assert "--steps STEPS steps (default 8)" in shown and "--rate RATE rate (default 2)" in shown
    assert "--limit LIMIT limit" in shown and "limit (default" not in shown  # None: no default to say
    assert "--seed SEED seed (default 0)" in shown  # zero is a default worth saying, though it equals False


def test_a_job_model_on_another_of_the_same_config_builds_it_from_both_layers():
    # The shared options (steps, mode) in one layer, the job's own (seed) in the next: config() holds
    # the values of both, not the first layer's at the dataclass defaults.
    shared = job_model(Budget, name="SharedFields", only=("steps", "mode"))
    job = job_model(Budget, name="JobFields", base=shared, only=("seed",))
    assert job(steps=3, mode="exact", seed=7).config() == Budget(steps=3, mode="exact", seed=7)
