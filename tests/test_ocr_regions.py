"""OCR only where a frame changed (issue 26): a camera inset moving beside a slide, a bullet appearing,
a new slide — read with the real rapidocr engine, whole frames against the changed part only."""

from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

from playlisteval.config import IndexSettings
from playlisteval.index.ocr import FrameTextReader, get_ocr

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def frame(lines: list[tuple[int, str]], inset_x: int) -> Image.Image:
    """A 1280x720 slide: text lines at (y, text), and a 200x110 'camera' square at x = ``inset_x``."""
    image = Image.new("RGB", (1280, 720), (32, 48, 80))
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 44)
    for y, text in lines:
        draw.text((80, y), text, font=font, fill=(255, 255, 255))
    draw.rectangle((inset_x, 570, inset_x + 200, 680), fill=(200, 120, 40))
    draw.ellipse((inset_x + 60, 590, inset_x + 140, 670), fill=(90, 200, 90))
    return image


def test_only_the_changed_part_is_read_and_the_rest_kept() -> None:
    engine = get_ocr(IndexSettings(ocr="rapidocr"))
    assert engine is not None
    reader = FrameTextReader(engine, max_side=640, skip_share=0.002, skip_level=24)
    title = (120, "Glacier moraine sediment")
    assert reader.lines(frame([title], 1000)) == ["Glacier moraine sediment"]
    # the camera moved: only its box is read; the slide's line is kept without reading it again
    assert reader.lines(frame([title], 1040)) == ["Glacier moraine sediment"]
    assert (reader.stats.read, reader.stats.partial) == (2, 1)
    # a bullet appears in an empty part of the slide: read there, joined below the title
    bullet = (260, "Ice ages left layers")
    assert reader.lines(frame([title, bullet], 1040)) == ["Glacier moraine sediment", "Ice ages left layers"]
    assert reader.stats.partial == 2
    # nothing changed: reused, not read
    reader.lines(frame([title, bullet], 1040))
    assert reader.stats.reused == 1
    # a new slide changes more than a quarter of the frame: read whole
    new = [(120 + 70 * k, f"Outwash plain number {k}") for k in range(7)]
    assert reader.lines(frame(new, 1040)) == [text for _, text in new]
    assert (reader.stats.read, reader.stats.partial) == (4, 2)


def test_a_line_the_change_touches_is_read_again_whole() -> None:
    """Words are added at the end of a line: the changed box grows over the whole old line, so the line is
    read again whole (not kept as it was, nor read as half a line)."""
    engine = get_ocr(IndexSettings(ocr="rapidocr"))
    assert engine is not None
    reader = FrameTextReader(engine, max_side=640, skip_share=0.002, skip_level=24)
    reader.lines(frame([(120, "Glacier moraine sediment"), (400, "Part three")], 1000))
    assert reader.lines(frame([(120, "Glacier moraine sediment"), (400, "Part three of twelve")], 1000)) == [
        "Glacier moraine sediment", "Part three of twelve"]
    assert reader.stats.partial == 1
