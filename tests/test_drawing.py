"""ncnn_c.drawing: ncnn's draw_* helpers, checked pixel by pixel against their definitions."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

from ncnn_c import drawing

W, H = 23, 17


def _blank(c, fill=7):
    return np.full((H, W, c), fill, dtype=np.uint8)


def _expect(mask, c, color, fill=7):
    pen = [(color >> (8 * i)) & 0xFF for i in range(c)]
    want = _blank(c, fill)
    want[mask] = pen
    return want


def _grid():
    return np.mgrid[0:H, 0:W]


def _rect_mask(rx, ry, rw, rh, t):
    y, x = _grid()
    if t == -1:
        return (x >= rx) & (x < rx + rw) & (y >= ry) & (y < ry + rh)
    t0, t1 = t // 2, t - t // 2
    xs = (x >= rx - t0) & (x < rx + rw + t1)
    ys = (y >= ry - t0) & (y < ry + rh + t1)
    top = (y >= ry - t0) & (y < ry + t1) & xs
    bottom = (y >= ry + rh - t0) & (y < ry + rh + t1) & xs
    inner_y = (y >= ry + t1) & (y < ry + rh - t0)
    left = (x >= rx - t0) & (x < rx + t1) & inner_y
    right = (x >= rx + rw - t0) & (x < rx + rw + t1) & inner_y
    return (top | bottom | left | right) & ys


RECTS = [(2, 3, 10, 6), (-4, -3, 10, 8), (15, 10, 20, 20), (5, 5, 1, 1), (30, 30, 4, 4), (0, 0, 23, 17)]


@pytest.mark.parametrize("c", [1, 2, 3, 4])
@pytest.mark.parametrize("rect", RECTS)
@pytest.mark.parametrize("t", [-1, 1, 2, 3, 5])
def test_rectangle(c, rect, t):
    img = _blank(c)
    color = 0x11223344
    getattr(drawing, f"draw_rectangle_c{c}")(img, W, H, *rect, color, t)
    np.testing.assert_array_equal(img, _expect(_rect_mask(*rect, t), c, color))


def _circle_mask(cx, cy, r, t, c):
    y, x = _grid()
    q = (x - cx) ** 2 + (y - cy) ** 2
    if t == -1:
        inside = (y >= cy - (r - 1)) & (y < cy + r) & (x >= cx - (r - 1)) & (x < cx + r)
        return inside & (q <= r * r)
    t0 = t / 2
    t1 = t - t0
    reach = r if c in (2, 3) else r - 1
    inside = (y >= math.trunc(cy - reach - t0)) & (y < cy + r + t1)
    inside &= (x >= math.trunc(cx - reach - t0)) & (x < cx + r + t1)
    return inside & (q >= (r - t0) ** 2) & (q < (r + t1) ** 2)


@pytest.mark.parametrize("c", [1, 2, 3, 4])
@pytest.mark.parametrize("circle", [(11, 8, 5), (0, 0, 6), (22, 16, 9), (5, 12, 1), (40, 40, 3)])
@pytest.mark.parametrize("t", [-1, 1, 2, 3])
def test_circle(c, circle, t):
    img = _blank(c)
    getattr(drawing, f"draw_circle_c{c}")(img, W, H, *circle, 0xFFEEDDCC, t)
    np.testing.assert_array_equal(img, _expect(_circle_mask(*circle, t, c), c, 0xFFEEDDCC))


def _line_mask(x0, y0, x1, y1, t):
    y, x = _grid()
    t0 = t / 2
    t1 = t - t0
    box = (y >= math.trunc(min(y0, y1) - t0)) & (y < max(y0, y1) + t1)
    box &= (x >= math.trunc(min(x0, x1) - t0)) & (x < max(x0, x1) + t1)
    dx01, dy01 = x1 - x0, y1 - y0
    r = ((x - x0) * dx01 + (y - y0) * dy01) / (dx01 * dx01 + dy01 * dy01)
    px, py = x0 + dx01 * r, y0 + dy01 * r
    return box & (r >= 0) & (r <= 1) & ((x - px) ** 2 + (y - py) ** 2 < t1)


@pytest.mark.parametrize("c", [1, 3, 4])
@pytest.mark.parametrize(
    "line", [(1, 1, 20, 14), (20, 2, 3, 15), (-5, 8, 30, 8), (4, -10, 4, 30), (0, 16, 22, 0)]
)
@pytest.mark.parametrize("t", [1, 2, 4])
def test_line(c, line, t):
    img = _blank(c)
    getattr(drawing, f"draw_line_c{c}")(img, W, H, *line, 0x00A0B0C0, t)
    np.testing.assert_array_equal(img, _expect(_line_mask(*line, t), c, 0x00A0B0C0))


def test_degenerate_line_draws_nothing():
    img = _blank(3)
    drawing.draw_line_c3(img, W, H, 5, 5, 5, 5, 0xFFFFFF, 3)
    assert (img == 7).all()


def test_text_size_like_ncnn():
    assert drawing.get_text_drawing_size("abc", 10) == (30, 20)
    assert drawing.get_text_drawing_size("ab\nlonger\n", 8) == (48, 48)
    assert drawing.get_text_drawing_size("", 5) == (0, 10)
    assert drawing.get_text_drawing_size("a\tb", 5) == (10, 10)


@pytest.mark.parametrize("c", [1, 2, 3, 4])
def test_text_stays_in_its_cells_and_blends(c):
    img = np.zeros((40, 60, c), dtype=np.uint8)
    getattr(drawing, f"draw_text_c{c}")(img, 60, 40, "Hi!\ng", 3, 2, 8, 0xFFFFFFFF)
    ink = img[..., 0] > 0
    ys, xs = np.nonzero(ink)
    # "Hi!" in cells x 3..27, y 2..17; "g" in x 3..10, y 18..33
    assert ink[2:18, 3:27].any() and ink[18:34, 3:11].any()
    assert ((ys < 18) & (xs < 27) | (ys >= 18) & (xs < 11)).all()
    assert ys.min() >= 2 and ys.max() < 34 and xs.min() >= 3
    assert set(np.unique(img)) <= {0, 255}
    # blending: 50% grey background, white pen at full alpha -> 255 where inked, 128 elsewhere
    grey = np.full((40, 60, c), 128, dtype=np.uint8)
    getattr(drawing, f"draw_text_c{c}")(grey, 60, 40, "Hi!\ng", 3, 2, 8, 0xFFFFFFFF)
    np.testing.assert_array_equal(grey[..., 0] == 255, ink)


def test_every_printable_glyph_has_ink():
    for code in range(0x21, 0x7F):
        assert drawing.glyph_alpha(chr(code), 12).any(), chr(code)
    assert not drawing.glyph_alpha(" ", 12).any()


def test_text_clipped_at_edges():
    img = np.zeros((10, 10), dtype=np.uint8)
    drawing.draw_text_c1(img, 10, 10, "WWWW\nWWWW", -7, -5, 6, 0xFF)
    assert img.any()
    drawing.draw_text_c1(img, 10, 10, "far", 100, 100, 6, 0xFF)


def test_stride_and_raw_bytes():
    buf = bytearray(5 * 16)
    drawing.draw_rectangle(buf, 4, 5, 0, 0, 4, 5, 0x030201, -1, 3, stride=16)
    rows = np.frombuffer(bytes(buf), dtype=np.uint8).reshape(5, 16)
    assert (rows[:, :12].reshape(5, 4, 3) == [1, 2, 3]).all()
    assert (rows[:, 12:] == 0).all()


def test_bad_buffers_are_logged(caplog):
    with caplog.at_level(logging.ERROR, logger="ncnn_c"):
        drawing.draw_rectangle_c3(np.zeros(10, np.uint8), 4, 4, 0, 0, 2, 2, 0, 1)
        drawing.draw_circle_c1(np.zeros((4, 4), np.uint8), -1, 4, 0, 0, 2, 0, 1)
        drawing.draw_line_c1(bytes(16), 4, 4, 0, 0, 3, 3, 0, 1)
        drawing.draw_text_c1(np.zeros((4, 4), np.uint8), 4, 4, "a", 0, 0, 0, 0)
    assert len(caplog.records) == 4
