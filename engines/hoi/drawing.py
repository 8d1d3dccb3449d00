"""The boxes HOI-Eval draws on images, as Pillow images: what the VLM judge is shown, and the page.

HOI-Edit (ICML 2026; ``oceanflowlab/HOI-Edit``, commit ``4022133``; ``docs/hoi.md``, "Method: HOI-Eval
scores") marks an item's entities by colour: the person (subject) in a **blue** box, the object in a
**red** box, a tool in a **yellow** box (``evaluation/gemini3_final_hoicheck_new_noquestion_track_
google_newsim.py`` ``draw_box_and_label``; ``evaluation/run_question_answering.py``
``draw_yellow_box_on_image``). For the identity match the candidates found in the edit are drawn
numbered (upstream ``draw_numbered_boxes``: a filled label in the box's colour, white text), and
each image the judge sees carries a white title band, "BEFORE EDITING" or "AFTER EDITING"
(upstream ``add_title_to_image``).

Every function returns a new image and leaves its input untouched. Boxes are ``(x1, y1, x2, y2)``
in the image's pixels; a box reaching past the image is drawn clipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from PIL import Image, ImageDraw, ImageFont

from engines.hoi.roles import Box

Color = tuple[int, int, int]  # RGB

BLUE: Color = (0, 0, 255)  # the person (subject)
RED: Color = (255, 0, 0)  # the object, and the entity to match
YELLOW: Color = (255, 255, 0)  # the tool
WHITE: Color = (255, 255, 255)
BLACK: Color = (0, 0, 0)

BEFORE_TITLE = "BEFORE EDITING"
AFTER_TITLE = "AFTER EDITING"


def line_width(size: tuple[int, int]) -> int:
    """Box outline width for an image of ``size`` (width, height): upstream draws 2-3 px on its
    ~1080p frames, so about 1/300 of the shorter side, never under 2 px."""
    return max(2, round(min(size) / 300))


def _font(px: int) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    return ImageFont.load_default(size=max(8, px))


def _clip(box: Box, size: tuple[int, int]) -> tuple[int, int, int, int]:
    width, height = size
    x1, y1, x2, y2 = (round(v) for v in box)
    x1, x2 = sorted((min(max(x1, 0), width - 1), min(max(x2, 0), width - 1)))
    y1, y2 = sorted((min(max(y1, 0), height - 1), min(max(y2, 0), height - 1)))
    return x1, y1, x2, y2


def _check_box(box: Box, what: str) -> None:
    if len(box) != 4:
        raise ValueError(f"{what}: a box is (x1, y1, x2, y2), got {box!r}")
    x1, y1, x2, y2 = box
    if x2 < x1 or y2 < y1:
        raise ValueError(f"{what}: box {tuple(box)!r} ends before it starts (needs x1 <= x2 and y1 <= y2)")


def draw_boxes(image: Image.Image, boxes: Sequence[tuple[Box, Color]], *, width: int | None = None) -> Image.Image:
    """``image`` (as RGB) with each ``(box, colour)`` outlined, in order (a later box over an earlier)."""
    out = image.convert("RGB")  # convert always copies
    draw = ImageDraw.Draw(out)
    stroke = width if width is not None else line_width(out.size)
    for i, (box, color) in enumerate(boxes):
        _check_box(box, f"box {i}")
        draw.rectangle(_clip(box, out.size), outline=color, width=stroke)
    return out


def annotate(image: Image.Image, *, subject_box: Box | None = None, object_box: Box | None = None,
             tool_box: Box | None = None, width: int | None = None) -> Image.Image:
    """An item's entities in upstream's colours: the person blue, the object red, the tool yellow
    (any left None is not drawn)."""
    boxes = [(box, color) for box, color in ((tool_box, YELLOW), (object_box, RED), (subject_box, BLUE))
             if box is not None]
    return draw_boxes(image, boxes, width=width)


def draw_candidates(image: Image.Image, boxes: Sequence[Box], *, color: Color = RED, start: int = 0,
                    width: int | None = None) -> Image.Image:
    """Candidate boxes, each labelled with its number (``start``, ``start + 1``, ...) on a filled
    tab in ``color``: above the box, or just inside it when the box touches the top edge (upstream
    ``draw_numbered_boxes``). The judge's ``best_match_id`` names one of these numbers."""
    out = draw_boxes(image, [(box, color) for box in boxes], width=width)
    draw = ImageDraw.Draw(out)
    font = _font(max(12, min(out.size) // 20))
    for number, box in enumerate(boxes, start=start):
        x1, y1, _, _ = _clip(box, out.size)
        text = str(number)
        left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
        tab_w, tab_h = right - left + 6, bottom - top + 6
        tab_y = y1 - tab_h if y1 - tab_h >= 0 else y1
        draw.rectangle((x1, tab_y, x1 + tab_w, tab_y + tab_h), fill=color)
        draw.text((x1 + 3 - left, tab_y + 3 - top), text, fill=WHITE, font=font)
    return out


def add_title(image: Image.Image, title: str, *, band: int | None = None) -> Image.Image:
    """``image`` below a white band holding ``title`` in black, centred (upstream
    ``add_title_to_image``, whose band is 80 px on ~1080p frames: here 1/12 of the height, at least
    24 px). The image itself keeps its pixels, shifted down by the band."""
    band = band if band is not None else max(24, image.height // 12)
    out = Image.new("RGB", (image.width, image.height + band), WHITE)
    out.paste(image.convert("RGB"), (0, band))
    draw = ImageDraw.Draw(out)
    font = _font(band // 2)
    left, top, right, bottom = draw.textbbox((0, 0), title, font=font)
    draw.text(((image.width - (right - left)) / 2 - left, (band - (bottom - top)) / 2 - top), title,
              fill=BLACK, font=font)
    return out


def scale_box(box: Box, from_size: tuple[int, int], to_size: tuple[int, int]) -> Box:
    """``box`` in an image of ``from_size`` (width, height) carried to an image of ``to_size``, as
    upstream rescales a tracked box when the edit's size differs from the original's."""
    sx, sy = to_size[0] / from_size[0], to_size[1] / from_size[1]
    x1, y1, x2, y2 = box
    return (x1 * sx, y1 * sy, x2 * sx, y2 * sy)


__all__ = ["AFTER_TITLE", "BEFORE_TITLE", "BLACK", "BLUE", "RED", "WHITE", "YELLOW", "add_title", "annotate",
           "draw_boxes", "draw_candidates", "line_width", "scale_box"]
