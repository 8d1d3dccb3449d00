"""Tests of ``engines.hoi.drawing``: upstream's box colours, numbered candidates and title bands,
checked pixel by pixel on small grey images (expected colours and positions worked out by hand)."""

from __future__ import annotations

import pytest
from PIL import Image

from engines.hoi.drawing import (
    BLUE,
    RED,
    WHITE,
    YELLOW,
    add_title,
    annotate,
    draw_boxes,
    draw_candidates,
    line_width,
    scale_box,
)

GREY = (128, 128, 128)


def _grey(width=120, height=90) -> Image.Image:
    return Image.new("RGB", (width, height), GREY)


def _whitish(pixel) -> bool:
    """Text is anti-aliased: its core is near white, not always exactly white."""
    return min(pixel) >= 200


def test_person_blue_object_red_tool_yellow_and_the_inside_left_alone():
    image = _grey()
    out = annotate(image, subject_box=(10, 10, 50, 80), object_box=(60, 20, 100, 40), tool_box=(70, 50, 110, 85),
                   width=2)
    # Left edges of each box, half-way down, take its colour; a pixel inside any box keeps grey.
    assert out.getpixel((10, 45)) == BLUE
    assert out.getpixel((60, 30)) == RED
    assert out.getpixel((70, 70)) == YELLOW
    assert out.getpixel((30, 45)) == GREY
    assert out.getpixel((80, 30)) == GREY
    # The width is 2 px: x=11 is still the outline, x=12 is inside.
    assert out.getpixel((11, 45)) == BLUE and out.getpixel((12, 45)) == GREY
    # The input image is untouched.
    assert image.getpixel((10, 45)) == GREY


def test_an_entity_left_out_is_not_drawn():
    out = annotate(_grey(), subject_box=(10, 10, 50, 80), width=2)
    colours = {out.getpixel((x, y)) for x in range(out.width) for y in range(out.height)}
    assert colours == {GREY, BLUE}


def test_a_box_past_the_image_is_clipped_and_a_backwards_box_refused():
    out = draw_boxes(_grey(), [((-20, -5, 200, 300), RED)], width=1)
    assert out.getpixel((0, 45)) == RED and out.getpixel((119, 45)) == RED and out.getpixel((60, 89)) == RED
    with pytest.raises(ValueError, match="ends before it starts"):
        draw_boxes(_grey(), [((50, 10, 40, 20), RED)])


def test_candidates_carry_a_filled_number_tab_in_their_colour():
    out = draw_candidates(_grey(200, 150), [(20, 60, 80, 140), (120, 0, 190, 100)], color=RED, width=2)
    # Candidate 0 starts 60 px down: its tab sits above the box, filled red with white text inside.
    tab = [out.getpixel((x, y)) for x in range(20, 34) for y in range(40, 60)]
    assert RED in tab and any(_whitish(p) for p in tab)
    # Candidate 1 touches the top edge: its tab goes just inside the box.
    tab = [out.getpixel((x, y)) for x in range(120, 134) for y in range(0, 18)]
    assert RED in tab and any(_whitish(p) for p in tab)
    # Nothing else changes far from both.
    assert out.getpixel((100, 130)) == GREY


def test_title_band_on_top_with_the_image_below_unchanged():
    image = _grey(120, 90)
    image.putpixel((5, 5), BLUE)
    out = add_title(image, "BEFORE EDITING", band=30)
    assert out.size == (120, 120)
    assert out.getpixel((5, 35)) == BLUE  # (5, 5) moved down by the band
    band = {out.getpixel((x, y)) for x in range(120) for y in range(30)}
    assert WHITE in band and len(band) > 1  # white, with dark title text
    assert out.getpixel((0, 0)) == WHITE


def test_default_band_and_line_width_follow_the_image_size():
    assert add_title(_grey(120, 360), "AFTER EDITING").size == (120, 360 + 30)  # 360 // 12
    assert add_title(_grey(120, 90), "AFTER EDITING").size == (120, 90 + 24)  # at least 24
    assert line_width((1920, 1080)) == 4  # 1080 / 300 = 3.6
    assert line_width((100, 80)) == 2


def test_scale_box_to_another_size():
    # An edit twice as wide and half as high as the original.
    assert scale_box((10, 20, 30, 40), (100, 100), (200, 50)) == (20, 10, 60, 20)
