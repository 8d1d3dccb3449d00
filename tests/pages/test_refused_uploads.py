"""An upload that passes the platform's type check but that the area cannot read (weights of another
model) is refused with its reason and leaves nothing on the server's disk, also after reruns."""

from __future__ import annotations

import io

from engines.platform.files import area_folder
from tests.apptest_driver import page_as


def _weights_of_another_model() -> bytes:
    import torch

    buffer = io.BytesIO()
    torch.save({"layer.weight": torch.zeros(2)}, buffer)
    return buffer.getvalue()


def test_weights_of_another_model_are_refused_and_not_kept(sqlite_db):
    at = page_as("attribution_heatmaps", "researcher")
    at.radio(key="attribution-policy-source").set_value("upload").run()
    at.file_uploader(key="attribution-policy-file").upload("mine.pt", _weights_of_another_model()).run()
    assert not at.exception, at.exception
    reason = "mine.pt: these weights are not the reach-cnn-v1 policy"
    assert any(e.value.startswith(reason) for e in at.error), [e.value for e in at.error]
    assert not list(area_folder("uploads", "attribution").glob("*"))  # removed at once
    at.run()  # the same file still chosen: the reason stays, nothing is stored again
    assert any(e.value.startswith(reason) for e in at.error)
    assert not list(area_folder("uploads", "attribution").glob("*"))
