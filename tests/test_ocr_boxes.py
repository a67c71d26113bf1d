"""OCR of whole frames that recognises only the lines whose pixels changed (issue 43, 3): camera-like frames
(noise everywhere, so the changed-region crop covers the frame) with a clock that changes every frame and a
slide line that stays — read with the real rapidocr engine, detection at a size chosen for text."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from playlisteval.config import IndexSettings
from playlisteval.index.ocr import FrameTextReader, get_ocr
from playlisteval.index.ocr_boxes import iou

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


def frame(clock: str, slide: str, seed: int) -> Image.Image:
    """A 1280x720 frame: a gradient that moves with ``seed`` (camera motion: no frame matches the last)
    under fresh noise, a clock at the top right, a slide line."""
    rng = np.random.default_rng(seed)
    x = np.linspace(0, 1, 1280)[None, :, None]
    y = np.linspace(0, 1, 720)[:, None, None]
    base = 60 + 120 * (0.5 + 0.5 * np.sin(6 * x + 4 * y + seed * 0.6 + np.array([0, 0.5, 1])))
    pixels = np.clip(base + rng.normal(0, 6, (720, 1280, 3)), 0, 255).astype(np.uint8)
    image = Image.fromarray(pixels)
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(FONT, 40)
    draw.rectangle((860, 30, 1250, 90), fill=(0, 0, 0))
    draw.text((880, 38), clock, font=font, fill=(255, 255, 0))
    draw.rectangle((50, 100, 900, 165), fill=(20, 20, 20))
    draw.text((70, 110), slide, font=font, fill=(255, 255, 255))
    return image


def reader() -> FrameTextReader:
    engine = get_ocr(IndexSettings(ocr="rapidocr"))
    assert engine is not None
    return FrameTextReader(engine, max_side=640, skip_share=0.002, skip_level=24, detect_side=384)


def test_only_the_changing_clock_is_recognised_again() -> None:
    r = reader()
    assert r.boxes is not None
    slide = "Slide 3: glacier moraine"
    assert r.lines(frame("00:01:05", slide, 1)) == ["00:01:05", slide]
    assert (r.boxes.stats.read, r.boxes.stats.kept) == (2, 0)
    assert r.lines(frame("00:01:06", slide, 2)) == ["00:01:06", slide]
    assert r.lines(frame("00:01:07", slide, 3)) == ["00:01:07", slide]
    # every frame read whole (noise everywhere), but the slide line recognised once and kept twice
    assert r.stats.read == 3 and r.stats.partial == 0
    assert (r.boxes.stats.read, r.boxes.stats.kept) == (4, 2)


def test_a_line_whose_words_change_in_place_is_read_again() -> None:
    r = reader()
    r.lines(frame("00:02:00", "Slide 4: river delta", 5))
    # the same box, other words: its pixels changed, so its text is not kept
    assert r.lines(frame("00:02:00", "Slide 5: river mouth", 6)) == ["00:02:00", "Slide 5: river mouth"]


def test_the_same_text_as_reading_every_line() -> None:
    """Detection at 384 px finds what reading every line at 640 px finds, on these frames."""
    every = FrameTextReader(reader().engine, max_side=640, skip_share=0.002, skip_level=24, detect_side=0)
    assert every.boxes is None
    image = frame("12:34:56", "Ice ages left layers", 9)
    assert reader().lines(image) == every.lines(image)


def test_iou() -> None:
    assert iou((0, 0, 10, 10), (0, 0, 10, 10)) == 1.0
    assert iou((0, 0, 10, 10), (10, 0, 20, 10)) == 0.0
    assert abs(iou((0, 0, 10, 10), (5, 0, 15, 10)) - 1 / 3) < 1e-9


def test_recognition_batches_never_mix_line_widths() -> None:
    """A batch is padded to its widest line: a short clock batched with a long ticker cost as much as two
    tickers. Lines go to the recogniser in groups of similar width, and each text comes back in its place."""
    engine = get_ocr(IndexSettings(ocr="rapidocr"))
    assert engine is not None and hasattr(engine, "recognize")
    font = ImageFont.truetype(FONT, 30)

    def crop(text: str) -> np.ndarray:
        image = Image.new("RGB", (40 + 18 * len(text), 48), (0, 0, 0))
        ImageDraw.Draw(image).text((10, 6), text, font=font, fill=(255, 255, 255))
        return np.asarray(image)

    texts = ["12:05", "LIVE news from the glacier, more after the break", "08:30", "Slide 4"]
    calls: list[list[int]] = []
    _, inner = engine._take()  # type: ignore[attr-defined]
    real = inner.recognize_txt

    def spy(crops: list[np.ndarray]) -> object:
        calls.append([c.shape[1] for c in crops])
        return real(crops)

    inner.recognize_txt = spy
    try:
        engine._give(engine.threads, inner)  # type: ignore[attr-defined]
        read = engine.recognize([crop(t) for t in texts])  # type: ignore[attr-defined]
    finally:
        inner.recognize_txt = real
    assert [t for t, _ in read] == texts
    # the three short lines together, the ticker alone
    assert sorted(len(c) for c in calls) == [1, 3]


def test_detection_made_ahead_gives_the_same_lines() -> None:
    """The frame-reading thread detects the frames that will be read whole (every one here: the background
    moves) and not a frame that repeats the one before; the reader given those detections reads the same
    lines as one that detects for itself."""
    frames = [frame("00:03:00", "Slide 6: outwash plain", 11), frame("00:03:01", "Slide 6: outwash plain", 12)]
    frames.append(frames[-1].copy())
    ahead = reader().ahead()
    assert ahead is not None
    seen = ahead.see(frames)
    assert [s.quads is not None for s in seen] == [True, True, False]
    with_ahead, alone = reader(), reader()
    assert [with_ahead.lines(f, s) for f, s in zip(frames, seen, strict=True)] == [alone.lines(f) for f in frames]
    assert with_ahead.lines(frames[0]) == ["00:03:00", "Slide 6: outwash plain"]


def caption_frame(slide: str, seed: int) -> Image.Image:
    """A moving, noisy background with ``slide`` on a half-transparent black box (as broadcast captions are
    drawn): every pixel of the box changes from frame to frame, its glyphs do not."""
    base = frame("", "", seed).convert("RGBA")
    layer = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    draw.rectangle((40, 380, 900, 450), fill=(0, 0, 0, 115))
    draw.text((60, 390), slide, font=ImageFont.truetype(FONT, 40), fill=(255, 255, 255, 255))
    return Image.alpha_composite(base, layer).convert("RGB")


def test_a_caption_on_a_see_through_box_is_kept_by_its_glyphs() -> None:
    r = reader()
    assert r.boxes is not None
    first = r.lines(caption_frame("Slide 12: glacier moraine", 21))
    assert "Slide 12: glacier moraine" in first
    read_once = r.boxes.stats.read
    assert "Slide 12: glacier moraine" in r.lines(caption_frame("Slide 12: glacier moraine", 26))
    assert r.boxes.stats.read == read_once and r.boxes.stats.kept >= 1  # the box changed, its glyphs did not
    # one digit changed: read again
    assert "Slide 13: glacier moraine" in r.lines(caption_frame("Slide 13: glacier moraine", 31))


def test_same_glyphs() -> None:
    from playlisteval.index.ocr_boxes import same_glyphs

    rng = np.random.default_rng(3)
    text = np.full((20, 60), 60.0)
    text[5:15, 10:12] = text[5:15, 30:32] = 250.0  # two strokes
    moved = text + rng.normal(0, 6, text.shape) + np.where(text < 100, 30.0, 0.0)  # the background drifts
    assert same_glyphs(text, moved)
    other = moved.copy()
    other[5:15, 30:32] = 60.0  # a stroke gone
    assert not same_glyphs(text, other)
    assert not same_glyphs(np.full((20, 60), 90.0), np.full((20, 60), 90.0))  # no contrast: not judged
