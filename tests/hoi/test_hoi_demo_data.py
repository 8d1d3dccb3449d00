"""Tests of ``engines.hoi.offline.demo_data``: the synthetic demo benchmark reads as upstream's and carries
every method's outputs where the layout says.

One item per recipe keeps it quick: 10 L1/L2 recipes and 4 L3 recipes (see ``RECIPES``), so 10 and 4
items; the tags per recipe are listed there, from which the tag counts below are added up by hand.
"""

from __future__ import annotations

import json

import pytest
from PIL import Image

from engines.hoi.benchmark import ANNOTATION_FILES, TAGS, load_benchmark
from engines.hoi.offline import demo_data


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("demo")
    summary = demo_data.generate_demo(root, items_per_tag=1, seed=0)
    return root, summary


def test_the_demo_loads_as_an_upstream_benchmark_with_every_tag(demo):
    root, summary = demo
    assert summary.items == {"L1L2": 10, "L3": 4}
    benchmark = load_benchmark(root)
    assert benchmark.split_counts() == {"L1L2": 10, "L3": 4}
    # occur: pick_up, touch_with_tool, basket_then_pick_up, pick_up_from_shelf; not_occur: put_down, let_go;
    # change_only: raise, take_touched; pos_end: put_on_shelf, basket_then_pick_up, shelf_to_basket;
    # pos_initial: pick_up_from_shelf, shelf_to_basket; non_rigid: squeeze, crush_to_fit;
    # reasoning: fill, read, crush_to_fit.
    assert benchmark.tag_counts() == {
        "L1-interaction-relation_change_only": 2, "L1-interaction-relation_not_occur": 2,
        "L1-interaction-relation_occur": 4, "L2-location_understanding-specific_pos_end": 3,
        "L2-location_understanding-specific_pos_initial": 2, "L3-non_rigid_change": 2, "L3-reasoning_process": 3}
    assert set(benchmark.tag_counts()) == set(TAGS)
    assert [item.key for item in benchmark if item.note] == []
    assert all(item.image_path is not None for item in benchmark)
    crush = next(item for item in benchmark.items("L3") if "fit into the basket" in item.instruction)
    assert crush.aux_questions == {"L3-non_rigid_change": "Is the can crushed?",
                                   "L3-reasoning_process": "Is the can in the basket?"}


def test_every_item_has_every_upstream_field_in_upstream_shapes(demo):
    root, _ = demo
    shapes = set()
    for split, name in ANNOTATION_FILES.items():
        for key, record in json.loads((root / name).read_text()).items():
            assert key.startswith(f"demo_{split.lower()}_") and key.endswith(".png")
            assert set(record) == {"instruction", "object", "subject_bounding_box", "object_bounding_box",
                                   "generated_question", "tools", "tool_bboxes", "tags_v6", "question_v6", "tag",
                                   "question"}
            assert isinstance(record["tags_v6"], str)
            assert record["generated_question"].startswith("Has the person in the blue bounding box ")
            shapes.add(type(record["question_v6"]).__name__ if record["question_v6"] != "" else "empty")
            if record["tools"]:
                assert len(record["tool_bboxes"]) == 4 and "yellow bounding box" in record["generated_question"]
            else:
                assert record["tool_bboxes"] == []
    assert shapes == {"list", "str", "empty"}


def test_each_method_has_an_output_for_every_item(demo):
    root, summary = demo
    methods = json.loads((root / "methods.json").read_text())
    assert list(methods) == summary.methods == [*demo_data.EDIT_METHODS, demo_data.I2V_METHOD]
    assert {name: entry["kind"] for name, entry in methods.items()} == {
        **{name: "image_edit" for name in demo_data.EDIT_METHODS}, "offline-i2v": "i2v"}
    assert all(entry["offline"] and entry["label"] and entry["description"] for entry in methods.values())
    benchmark = load_benchmark(root)
    for item in benchmark:
        for method in methods:
            with Image.open(root / f"{method}_frames" / item.split / item.key) as edited:
                assert edited.size == (256, 192)
        strip = sorted((root / "offline-i2v_strips" / item.split / item.key.removesuffix(".png")).iterdir())
        assert [path.name for path in strip] == [f"frame_{n:02d}.png" for n in range(15)]
        # The selected frame is one of the strip's frames.
        selected = (root / "offline-i2v_frames" / item.split / item.key).read_bytes()
        assert any(path.read_bytes() == selected for path in strip)


def test_the_items_follow_the_seed():
    first = demo_data.demo_items(items_per_tag=1, seed=5)
    again = demo_data.demo_items(items_per_tag=1, seed=5)
    other = demo_data.demo_items(items_per_tag=1, seed=6)
    assert first == again and first != other
    assert len(demo_data.demo_items(items_per_tag=3)) == 42  # 30 L1/L2 and 12 L3 items
    with pytest.raises(ValueError, match="items_per_tag"):
        demo_data.demo_items(items_per_tag=0)


def test_methods_are_added_to_the_list_kept_so_far(tmp_path):
    demo_data.add_method(tmp_path, "a", {"kind": "image_edit", "label": "A", "offline": True, "description": "x"})
    demo_data.add_method(tmp_path, "b", {"kind": "i2v", "label": "B", "offline": False, "description": "y"})
    assert list(json.loads((tmp_path / "methods.json").read_text())) == ["a", "b"]
    with pytest.raises(ValueError, match="kind must be"):
        demo_data.add_method(tmp_path, "c", {"kind": "video"})
