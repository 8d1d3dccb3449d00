"""General perception from pixels (engines.video.offline.perception): colour names over the whole hue circle
and the greys, colour words near a seen colour, shapes from their masks, objects against plain,
graded and changing backgrounds, places on the 3 x 3 grid, motion between frames, and text read by
Tesseract. Frames are drawn here with Pillow, not by either video generator."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from engines.video.decode import open_video
from engines.video.offline import perception
from engines.video.offline.perception import (
    colour_match,
    colour_name,
    find_objects,
    motion_of,
    normalise_place,
    position_fits,
    shape_of,
)
from engines.video.synthetic import SyntheticConfig, encode_frames

# Standard values (CSS named colours and the primaries) and the name a person gives each.
SWATCHES = [((255, 0, 0), "red"), ((178, 34, 34), "red"), ((255, 140, 0), "orange"), ((255, 215, 0), "yellow"),
            ((255, 255, 0), "yellow"), ((0, 128, 0), "green"), ((50, 205, 50), "green"), ((0, 255, 255), "cyan"),
            ((0, 206, 209), "cyan"), ((0, 0, 255), "blue"), ((65, 105, 225), "blue"), ((138, 43, 226), "purple"),
            ((102, 51, 153), "purple"), ((255, 0, 255), "magenta"), ((255, 105, 180), "pink"),
            ((255, 182, 193), "pink"), ((139, 69, 19), "brown"), ((0, 0, 0), "black"), ((255, 255, 255), "white"),
            ((128, 128, 128), "grey"), ((169, 169, 169), "grey")]


@pytest.mark.parametrize(("rgb", "name"), SWATCHES)
def test_colours_are_named_over_the_whole_hue_circle_and_the_greys(rgb, name):
    assert colour_name(rgb) == name


def test_a_colour_word_a_question_uses_matches_a_near_seen_colour():
    violet = (140, 40, 220)  # named purple
    assert colour_match(violet, "purple") == 1.0
    assert colour_match(violet, "violet") > 0.5 and colour_match(violet, "green") == 0.0
    assert colour_match((128, 128, 128), "gray") == 1.0  # either spelling
    assert colour_match((0, 0, 130), "navy") > colour_match((0, 0, 130), "red")


def _mask(shape: str, size: int = 24, width: int | None = None) -> np.ndarray:
    width = width or size
    image = Image.new("L", (width, size), 0)
    draw = ImageDraw.Draw(image)
    w, h = width - 1, size - 1
    if shape in {"square", "rectangle"}:
        draw.rectangle((0, 0, w, h), fill=255)
    elif shape == "circle":
        draw.ellipse((0, 0, w, h), fill=255)
    elif shape == "triangle":
        draw.polygon([(w / 2, 0), (w, h), (0, h)], fill=255)
    elif shape == "triangle-down":
        draw.polygon([(0, 0), (w, 0), (w / 2, h)], fill=255)
    elif shape == "diamond":
        draw.polygon([(w / 2, 0), (w, h / 2), (w / 2, h), (0, h / 2)], fill=255)
    elif shape == "cross":
        draw.rectangle((w / 3, 0, 2 * w / 3, h), fill=255)
        draw.rectangle((0, h / 3, w, 2 * h / 3), fill=255)
    return np.asarray(image) > 127


@pytest.mark.parametrize("size", [14, 24, 60])
@pytest.mark.parametrize(("shape", "width_factor", "expected"), [
    ("square", 1.0, "square"), ("rectangle", 1.8, "rectangle"), ("circle", 1.0, "circle"),
    ("triangle", 1.0, "triangle"), ("triangle-down", 1.0, "triangle"), ("diamond", 1.0, "diamond"),
    ("cross", 1.0, "other")])
def test_shapes_are_classed_from_their_masks_at_any_size(shape, width_factor, expected, size):
    assert shape_of(_mask(shape, size, int(size * width_factor))) == expected


def _frame(background, objects, size=(320, 240)) -> np.ndarray:
    """A frame: ``background`` (a colour, or two for a left-to-right gradient) and objects
    ``(shape, rgb, (cx, cy) as fractions, side in pixels)``."""
    width, height = size
    if len(background) == 2:
        ramp = np.linspace(0, 1, width)[None, :, None]
        image = (1 - ramp) * np.asarray(background[0]) + ramp * np.asarray(background[1])
        image = np.broadcast_to(image, (height, width, 3)).copy()
    else:
        image = np.broadcast_to(np.asarray(background, float), (height, width, 3)).copy()
    for shape, rgb, (cx, cy), side in objects:
        mask = _mask(shape, side)
        x0, y0 = int(cx * width - side / 2), int(cy * height - side / 2)
        image[y0:y0 + side, x0:x0 + side][mask] = rgb
    return image.astype(np.uint8)


def test_objects_of_colours_no_generator_used_are_found_on_a_gradient():
    frame = _frame([(40, 40, 60), (170, 170, 150)], [("square", (0, 206, 209), (0.2, 0.2), 30),
                                                     ("square", (255, 105, 180), (0.8, 0.8), 30),
                                                     ("circle", (139, 69, 19), (0.5, 0.5), 34)])
    found = {(r.colour, r.shape, r.cell) for r in find_objects(frame).objects}
    assert found == {("cyan", "square", "top-left"), ("pink", "square", "bottom-right"), ("brown", "circle", "centre")}


def test_the_background_may_change_from_frame_to_frame_and_objects_are_still_counted():
    objects = [("triangle", (250, 250, 250), (0.2, 0.5), 28), ("triangle", (250, 250, 250), (0.5, 0.5), 28),
               ("triangle", (250, 250, 250), (0.8, 0.5), 28)]
    for background in ([(20, 20, 20)], [(90, 30, 30), (30, 30, 120)], [(60, 120, 60)]):
        view = find_objects(_frame(background, objects))
        assert [(r.colour, r.shape) for r in view.objects] == [("white", "triangle")] * 3


def test_text_is_not_counted_as_an_object_and_its_box_is_found():
    frame = _frame([(200, 200, 200)], [("square", (220, 30, 30), (0.25, 0.6), 30)])
    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    draw.rectangle((150, 20, 300, 50), fill=(30, 30, 30))
    draw.text((158, 24), "FALCON", fill=(240, 240, 240), font=ImageFont.load_default(size=22))
    view = find_objects(np.asarray(image))
    assert [(r.colour, r.shape) for r in view.objects] == [("red", "square")]
    assert view.text_boxes


@pytest.mark.skipif(not perception.ocr_available(), reason="Debian's tesseract-ocr is not installed")
def test_tesseract_reads_the_words_on_screen():
    image = Image.fromarray(_frame([(90, 110, 140)], []))
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 100, 260, 140), fill=(245, 240, 220))
    draw.text((72, 106), "LANTERN", fill=(20, 20, 20), font=ImageFont.load_default(size=26))
    frame = np.asarray(image)
    assert "LANTERN" in perception.read_text(frame, find_objects(frame).text_boxes)


def test_places_on_the_grid_and_the_halves():
    assert normalise_place("Upper left corner") == "top-left"
    assert normalise_place("the middle") == "centre" and normalise_place("top centre") == "top"
    assert normalise_place("the right half of the screen") == "right half"
    assert normalise_place("somewhere") is None
    [region] = find_objects(_frame([(30, 30, 30)], [("circle", (255, 215, 0), (0.85, 0.15), 30)])).objects
    assert region.cell == "top-right" and position_fits(region, "the right half")
    assert position_fits(region, "upper half") and not position_fits(region, "bottom-left")


def test_motion_between_two_frames():
    def at(x, y):
        return find_objects(_frame([(30, 60, 30)], [("square", (40, 80, 230), (x, y), 28)])).objects
    [first] = at(0.3, 0.5)
    assert motion_of(first, at(0.36, 0.5)) == "right" and motion_of(first, at(0.24, 0.5)) == "left"
    assert motion_of(first, at(0.3, 0.42)) == "up" and motion_of(first, at(0.3, 0.58)) == "down"
    assert motion_of(first, at(0.3, 0.5)) == "still"
    assert motion_of(first, []) is None  # gone: no motion to tell


SMALL_BACKGROUNDS = ((30, 34, 40), (200, 196, 188), (60, 110, 70), (120, 60, 60))


@pytest.mark.parametrize("size", [11, 13, 15])
@pytest.mark.parametrize("background_rgb", SMALL_BACKGROUNDS)
def test_small_objects_of_a_160_by_120_video_keep_their_shapes_after_compression(tmp_path, size, background_rgb):
    # At 160 x 120 a shape 11-15 pixels across is a few 2 x 2 blocks of the codec's colour planes.
    image = Image.new("RGB", (160, 120), background_rgb)
    draw = ImageDraw.Draw(image)
    s = size
    draw.ellipse((20, 20, 20 + s, 20 + s), fill=(250, 140, 20))
    draw.rectangle((60, 20, 60 + s, 20 + s), fill=(20, 210, 215))
    draw.polygon([(110 + s / 2, 20), (110, 20 + s), (110 + s, 20 + s)], fill=(135, 50, 205))
    draw.polygon([(30 + s / 2, 70), (30 + s, 70 + s / 2), (30 + s / 2, 70 + s), (30, 70 + s / 2)], fill=(215, 45, 40))
    path = tmp_path / "small.mp4"
    encode_frames([np.asarray(image)] * 8, path, SyntheticConfig(fps=4, crf=23))
    with open_video(path) as reader:
        frame = reader.frame_at(1.0)
    seen = sorted((region.colour, region.shape) for region in find_objects(frame).objects)
    assert seen == [("cyan", "square"), ("orange", "circle"), ("purple", "triangle"), ("red", "diamond")]


def test_a_frame_seen_again_gets_its_view_from_the_cache_and_a_different_frame_its_own(monkeypatch):
    analysed = []
    real = perception._analyse
    monkeypatch.setattr(perception, "_analyse", lambda frame: analysed.append(frame.shape) or real(frame))
    perception.forget_views()
    red = _frame([(30, 30, 30)], [("square", (220, 30, 30), (0.3, 0.5), 30)])
    blue = _frame([(30, 30, 30)], [("circle", (30, 60, 230), (0.7, 0.5), 30)])
    first = find_objects(red)
    assert find_objects(red.copy()) is first and len(analysed) == 1  # same pixels: analysed once
    [square] = first.objects
    [circle] = find_objects(blue).objects
    assert (square.colour, square.shape) == ("red", "square") and (circle.colour, circle.shape) == ("blue", "circle")
    # The same bytes read as another shape are another frame.
    find_objects(red.reshape(red.shape[1], red.shape[0], 3))
    assert len(analysed) == 3
    perception.forget_views()
    assert find_objects(red) == first and len(analysed) == 4  # forgotten: analysed again, to the same view
