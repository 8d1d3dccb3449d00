"""Widget specs derived from response schemas."""

from typing import Literal

import pytest
from pydantic import BaseModel, Field

from engines.platform.forms import field_specs
from studies.demo_survey import RatingResponse, SurveyResponse


def test_demo_schemas_map_to_widgets():
    rating = {s.name: s for s in field_specs(RatingResponse)}
    assert rating["helpfulness"].widget == "likert" and rating["helpfulness"].options == (1, 2, 3, 4, 5, 6, 7)
    assert rating["would_accept"].widget == "checkbox" and not rating["would_accept"].required
    survey = {s.name: s for s in field_specs(SurveyResponse)}
    assert survey["age"].widget == "number" and (survey["age"].minimum, survey["age"].maximum) == (18, 99)
    assert survey["ai_use"].widget == "radio" and survey["ai_use"].options[0] == "Never"
    assert survey["comments"].widget == "textarea" and survey["comments"].max_length == 500


def test_unsupported_type_is_reported_with_field_name():
    class Bad(BaseModel):
        when: list[int]

    with pytest.raises(TypeError, match="Bad.when"):
        field_specs(Bad)


def test_likert_needs_bounds():
    class Scale(BaseModel):
        score: int = Field(json_schema_extra={"widget": "likert"})

    with pytest.raises(ValueError, match="Scale.score"):
        field_specs(Scale)


def test_short_text_and_choices():
    class Short(BaseModel):
        name: str = Field(max_length=40)
        pick: Literal["a", "b"]

    specs = field_specs(Short)
    assert [s.widget for s in specs] == ["text", "radio"]
