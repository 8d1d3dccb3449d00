"""The simulations page draws an uploaded result file from where the platform stored it, and says
clearly why it refuses one (too deep, too large, not a result), quoting the file's name."""

from __future__ import annotations

import io
import json

import pytest
import streamlit

from engines.collab.simulate import SimulationConfig, simulate
from engines.platform.files import owned_folder
from tests.apptest_driver import page_as


class Chosen(io.BytesIO):
    """What ``st.file_uploader`` returns for a chosen file: its bytes, the browser's name, an id."""

    def __init__(self, data: bytes, name: str):
        super().__init__(data)
        self.name, self.file_id = name, f"id-{hash(data)}"


@pytest.fixture
def choose(monkeypatch):
    """``choose(data, name)``: the page's file picker returns that file (AppTest cannot pick one)."""
    picked: dict = {}

    def file_uploader(label, **kwargs):
        return Chosen(*picked["file"]) if "file" in picked else None

    monkeypatch.setattr(streamlit, "file_uploader", file_uploader)

    def pick(data: bytes, name: str) -> None:
        picked["file"] = (data, name)

    return pick


def _uploads_page(choose, data: bytes, name: str):
    choose(data, name)
    at = page_as("collab_simulations", "researcher")
    at.radio(key="collab-source").set_value("uploaded file").run()
    assert not at.exception, at.exception
    return at


def _stored() -> list[str]:
    folder = owned_folder("uploads") / "collab"
    return sorted(p.suffix for p in folder.iterdir()) if folder.is_dir() else []


def test_an_uploaded_result_is_stored_and_drawn(sqlite_db, choose):
    result = simulate(SimulationConfig(T=200, n_calibration=50, trace_points=10)).to_dict()
    data = json.dumps(result).encode()
    at = _uploads_page(choose, data, "../../etc/run.json")
    assert not at.error, [e.value for e in at.error]
    assert at.subheader[0].value.startswith("Simulation: schedule")
    assert len(at.get("plotly_chart")) == 3
    assert _stored() == [".json"]  # under uploads/collab with the server's name, never the browser's


def test_an_upload_nested_too_deeply_is_refused_clearly_and_not_kept(sqlite_db, choose):
    at = _uploads_page(choose, b"[" * 50_000 + b"]" * 50_000, "deep.json")
    assert any(e.value.startswith("deep.json") and "nests deeper than 64 levels" in e.value
               for e in at.error), [e.value for e in at.error]
    assert not at.get("plotly_chart") and _stored() == []


@pytest.mark.parametrize("data, problem", [(b'{"hello": 1}', "not a collab result"),
                                           (b'{"online": {}, ', "the result: not valid JSON")])
def test_a_json_that_is_not_a_result_names_the_file_quoted(sqlite_db, choose, data, problem):
    at = _uploads_page(choose, data, "notes\u2028<b>" + "x" * 200 + ".json")
    (error,) = at.error
    assert error.value.startswith("'notes\\u2028<b>xxx"), error.value  # repr-quoted: no raw line break
    assert "x" * 130 not in error.value  # at most 120 characters of the name
    assert f"… is not a collaboration result: {problem}" in error.value
