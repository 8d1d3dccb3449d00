"""A benchmark folder's ``methods.json``, read as a format: each method's label defaults to its name,
and an entry that is not a method's names the file, the method and the field."""

from __future__ import annotations

import json

import pytest

from engines.hoi.methods import MethodsFileError, read_methods


def _write(folder, text: str):
    (folder / "methods.json").write_text(text, encoding="utf-8")
    return folder / "methods.json"


def test_labels_default_to_the_method_and_other_fields_are_kept(tmp_path):
    _write(tmp_path, json.dumps({"wan": {"kind": "i2v", "label": " Wan 2.2 ", "offline": False, "paper": "x"},
                                 "flux": {}}))
    assert read_methods(tmp_path) == {"wan": {"kind": "i2v", "label": "Wan 2.2", "offline": False, "paper": "x"},
                                      "flux": {"label": "flux"}}
    assert read_methods(tmp_path / "absent") == {}


@pytest.mark.parametrize(("text", "problem"), [
    ('{"wan": {"label": "  "}}', "wan.label: must not be empty"),
    ('{"wan": {"kind": "video"}}', "wan.kind: must be one of 'image_edit' or 'i2v' (got 'video')"),
    ('{"wan": "Wan 2.2"}', "wan: must be an object (got 'Wan 2.2')"),
    ('{"wan": {"offline": "no"}}', "wan.offline: must be true or false (got 'no')"),
    ('["wan"]', "must be an object (got a list)"),
    ('{"wan": {', "not valid JSON (Expecting property name enclosed in double quotes at line 1, column 10)"),
])
def test_an_entry_that_is_not_a_method_names_the_file_method_and_field(tmp_path, text, problem):
    path = _write(tmp_path, text)
    with pytest.raises(MethodsFileError) as raised:
        read_methods(tmp_path)
    assert str(raised.value) == f"{path}: {problem}"
