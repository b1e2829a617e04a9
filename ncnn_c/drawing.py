"""Drawing on interleaved 8-bit pixel buffers: ncnn's ``draw_*`` helpers (mat_pixel_drawing).

Every function takes the buffer (a writable numpy uint8 array or any writable bytes-like
object), its width and height in pixels, the shape's coordinates, a colour and, for outlines,
a thickness; ``stride`` (bytes per row) defaults to ``w * channels``. The ``_c1`` .. ``_c4``
names fix the channel count, as ncnn's do.

Semantics follow ncnn:

* ``color`` is a 32-bit value whose bytes, lowest first, are the channel values
  (``0x00FF0000`` is channel 2 = 255: blue in RGB order, red in BGR).
* Everything is clipped at the buffer edges; shapes may lie partly or wholly outside.
* Rectangles: ``thickness == -1`` fills ``[rx, rx+rw) x [ry, ry+rh)``; otherwise the outline is
  ``thickness`` pixels wide, centred on the rectangle's edges (``thickness // 2`` outside).
* Circles: filled (``-1``) covers points with ``dx^2 + dy^2 <= r^2``; an outline covers
  ``(r - t/2)^2 <= d^2 < (r + t/2)^2``.
* Lines: points whose projection falls on the segment and whose squared distance to it is
  below ``thickness - thickness/2`` (ncnn compares the squared distance with the half width,
  so thick lines are thinner than ``thickness``; kept for identical pictures).
* Text: each character occupies a cell ``fontpixelsize`` wide and ``2 * fontpixelsize`` tall,
  starting at the top-left ``(x, y)``; ``'\\n'`` starts a new line at ``x``; glyph pixels are
  alpha-blended over the background (``(bg * (255 - a) + color * a) // 255``).
  ``get_text_drawing_size`` gives the box ncnn reports for a text: the widest line times the
  cell width, and the number of lines times the cell height.

The font is ncnn_c's own: a 5x9 bitmap (7 rows above the baseline, 2 for descenders) for
every printable ASCII character, scaled by nearest neighbour into a 6x12 design cell. ncnn
uses a different, anti-aliased font, so text pixels differ from ncnn's (sizes and placement
are the same); everything else draws the same pixels as ncnn.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np

log = logging.getLogger("ncnn_c")

# Glyphs for '!'..'~' (0x21..0x7e): 9 rows of 5 bits each (bit 4 = leftmost column);
# rows 7 and 8 are below the baseline. Designed for ncnn_c.
_GLYPHS: dict[str, tuple[int, ...]] = {
    "!": (0x04, 0x04, 0x04, 0x04, 0x04, 0x00, 0x04, 0, 0),
    '"': (0x0A, 0x0A, 0x0A, 0x00, 0x00, 0x00, 0x00, 0, 0),
    "#": (0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A, 0, 0),
    "$": (0x04, 0x0F, 0x14, 0x0E, 0x05, 0x1E, 0x04, 0, 0),
    "%": (0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03, 0, 0),
    "&": (0x0C, 0x12, 0x14, 0x08, 0x15, 0x12, 0x0D, 0, 0),
    "'": (0x04, 0x04, 0x08, 0x00, 0x00, 0x00, 0x00, 0, 0),
    "(": (0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02, 0, 0),
    ")": (0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08, 0, 0),
    "*": (0x00, 0x04, 0x15, 0x0E, 0x15, 0x04, 0x00, 0, 0),
    "+": (0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00, 0, 0),
    ",": (0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08, 0),
    "-": (0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00, 0, 0),
    ".": (0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C, 0, 0),
    "/": (0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10, 0, 0),
    "0": (0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E, 0, 0),
    "1": (0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E, 0, 0),
    "2": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F, 0, 0),
    "3": (0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E, 0, 0),
    "4": (0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02, 0, 0),
    "5": (0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E, 0, 0),
    "6": (0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E, 0, 0),
    "7": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08, 0, 0),
    "8": (0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E, 0, 0),
    "9": (0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C, 0, 0),
    ":": (0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00, 0, 0),
    ";": (0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x04, 0x08, 0, 0),
    "<": (0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02, 0, 0),
    "=": (0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00, 0, 0),
    ">": (0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08, 0, 0),
    "?": (0x0E, 0x11, 0x01, 0x02, 0x04, 0x00, 0x04, 0, 0),
    "@": (0x0E, 0x11, 0x01, 0x0D, 0x15, 0x15, 0x0E, 0, 0),
    "A": (0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0, 0),
    "B": (0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E, 0, 0),
    "C": (0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E, 0, 0),
    "D": (0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C, 0, 0),
    "E": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F, 0, 0),
    "F": (0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10, 0, 0),
    "G": (0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F, 0, 0),
    "H": (0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11, 0, 0),
    "I": (0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0, 0),
    "J": (0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C, 0, 0),
    "K": (0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11, 0, 0),
    "L": (0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F, 0, 0),
    "M": (0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11, 0, 0),
    "N": (0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11, 0, 0),
    "O": (0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0, 0),
    "P": (0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10, 0, 0),
    "Q": (0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D, 0, 0),
    "R": (0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11, 0, 0),
    "S": (0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E, 0, 0),
    "T": (0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0, 0),
    "U": (0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E, 0, 0),
    "V": (0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04, 0, 0),
    "W": (0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A, 0, 0),
    "X": (0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11, 0, 0),
    "Y": (0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04, 0, 0),
    "Z": (0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F, 0, 0),
    "[": (0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E, 0, 0),
    "\\": (0x10, 0x10, 0x08, 0x04, 0x02, 0x01, 0x01, 0, 0),
    "]": (0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E, 0, 0),
    "^": (0x04, 0x0A, 0x11, 0x00, 0x00, 0x00, 0x00, 0, 0),
    "_": (0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F, 0, 0),
    "`": (0x08, 0x04, 0x02, 0x00, 0x00, 0x00, 0x00, 0, 0),
    "a": (0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F, 0, 0),
    "b": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E, 0, 0),
    "c": (0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E, 0, 0),
    "d": (0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F, 0, 0),
    "e": (0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E, 0, 0),
    "f": (0x06, 0x09, 0x08, 0x1C, 0x08, 0x08, 0x08, 0, 0),
    "g": (0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x11, 0x0E),
    "h": (0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x11, 0, 0),
    "i": (0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E, 0, 0),
    "j": (0x02, 0x00, 0x06, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C),
    "k": (0x10, 0x10, 0x12, 0x14, 0x18, 0x14, 0x12, 0, 0),
    "l": (0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E, 0, 0),
    "m": (0x00, 0x00, 0x1A, 0x15, 0x15, 0x11, 0x11, 0, 0),
    "n": (0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11, 0, 0),
    "o": (0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E, 0, 0),
    "p": (0x00, 0x00, 0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10),
    "q": (0x00, 0x00, 0x0F, 0x11, 0x11, 0x0F, 0x01, 0x01, 0x01),
    "r": (0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10, 0, 0),
    "s": (0x00, 0x00, 0x0F, 0x10, 0x0E, 0x01, 0x1E, 0, 0),
    "t": (0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06, 0, 0),
    "u": (0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D, 0, 0),
    "v": (0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04, 0, 0),
    "w": (0x00, 0x00, 0x11, 0x11, 0x15, 0x15, 0x0A, 0, 0),
    "x": (0x00, 0x00, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0, 0),
    "y": (0x00, 0x00, 0x11, 0x11, 0x11, 0x0F, 0x01, 0x11, 0x0E),
    "z": (0x00, 0x00, 0x1F, 0x02, 0x04, 0x08, 0x1F, 0, 0),
    "{": (0x02, 0x04, 0x04, 0x08, 0x04, 0x04, 0x02, 0, 0),
    "|": (0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0, 0),
    "}": (0x08, 0x04, 0x04, 0x02, 0x04, 0x04, 0x08, 0, 0),
    "~": (0x00, 0x00, 0x08, 0x15, 0x02, 0x00, 0x00, 0, 0),
}

# design cell: 6 columns x 12 rows; the glyph's 5x9 box sits at column 0, row 2
_CELL_W, _CELL_H, _TOP = 6, 12, 2


def _design_cells() -> dict[str, np.ndarray]:
    cells = {}
    for ch, rows in _GLYPHS.items():
        cell = np.zeros((_CELL_H, _CELL_W), dtype=np.uint8)
        for r, bits in enumerate(rows):
            for col in range(5):
                if bits & (0x10 >> col):
                    cell[_TOP + r, col] = 255
        cells[ch] = cell
    return cells


_CELLS = _design_cells()
_SCALED: dict[tuple[str, int], np.ndarray] = {}


def glyph_alpha(ch: str, fontpixelsize: int) -> np.ndarray:
    """The (2*fontpixelsize, fontpixelsize) uint8 alpha of ``ch`` (nearest-neighbour scaled)."""
    key = (ch, fontpixelsize)
    a = _SCALED.get(key)
    if a is None:
        cell = _CELLS.get(ch)
        if cell is None:
            a = np.zeros((2 * fontpixelsize, fontpixelsize), dtype=np.uint8)
        else:
            rows = np.arange(2 * fontpixelsize) * _CELL_H // (2 * fontpixelsize)
            cols = np.arange(fontpixelsize) * _CELL_W // fontpixelsize
            a = cell[rows][:, cols]
        if len(_SCALED) < 4096:
            _SCALED[key] = a
    return a


# ----------------------------------------------------------------------------- buffers


def _image(pixels: Any, w: int, h: int, channels: int, stride: int) -> np.ndarray | None:
    """An (h, w, channels) writable uint8 view of the buffer, or None (logged) when unusable."""
    w, h, stride = int(w), int(h), int(stride)
    if w <= 0 or h <= 0:
        log.error("draw: image size %dx%d", w, h)
        return None
    stride = stride or w * channels
    if stride < w * channels:
        log.error("draw: stride %d < %d bytes per row", stride, w * channels)
        return None
    need = stride * (h - 1) + w * channels
    arr = pixels if isinstance(pixels, np.ndarray) else np.frombuffer(pixels, dtype=np.uint8)
    if arr.dtype != np.uint8 or not arr.flags.writeable or not arr.flags.c_contiguous:
        log.error("draw: pixels must be a writable, contiguous uint8 buffer")
        return None
    flat = arr.reshape(-1)
    if flat.size < need:
        log.error("draw: buffer has %d bytes, %d needed for %dx%dx%d", flat.size, need, w, h, channels)
        return None
    return np.lib.stride_tricks.as_strided(flat, shape=(h, w, channels), strides=(stride, channels, 1))


def _pen(color: int, channels: int) -> np.ndarray:
    c = int(color) & 0xFFFFFFFF
    return np.array([(c >> (8 * i)) & 0xFF for i in range(channels)], dtype=np.uint8)


def _fill(img: np.ndarray, y0: int, y1: int, x0: int, x1: int, pen: np.ndarray) -> None:
    h, w = img.shape[:2]
    y0, y1, x0, x1 = max(y0, 0), min(y1, h), max(x0, 0), min(x1, w)
    if y0 < y1 and x0 < x1:
        img[y0:y1, x0:x1] = pen


def _box(img: np.ndarray, y0: int, y1: int, x0: int, x1: int) -> tuple[int, int, int, int] | None:
    h, w = img.shape[:2]
    y0, y1, x0, x1 = max(y0, 0), min(y1, h), max(x0, 0), min(x1, w)
    return (y0, y1, x0, x1) if y0 < y1 and x0 < x1 else None


# ----------------------------------------------------------------------------- shapes


def draw_rectangle(pixels: Any, w: int, h: int, rx: int, ry: int, rw: int, rh: int, color: int,
                   thickness: int, channels: int, stride: int = 0) -> None:  # fmt: skip
    img = _image(pixels, w, h, channels, stride)
    if img is None:
        return
    pen = _pen(color, channels)
    rx, ry, rw, rh, thickness = int(rx), int(ry), int(rw), int(rh), int(thickness)
    if thickness == -1:
        _fill(img, ry, ry + rh, rx, rx + rw, pen)
        return
    t0 = thickness // 2
    t1 = thickness - t0
    _fill(img, ry - t0, ry + t1, rx - t0, rx + rw + t1, pen)  # top
    _fill(img, ry + rh - t0, ry + rh + t1, rx - t0, rx + rw + t1, pen)  # bottom
    _fill(img, ry + t1, ry + rh - t0, rx - t0, rx + t1, pen)  # left
    _fill(img, ry + t1, ry + rh - t0, rx + rw - t0, rx + rw + t1, pen)  # right


def draw_circle(pixels: Any, w: int, h: int, cx: int, cy: int, radius: int, color: int, thickness: int,
                channels: int, stride: int = 0) -> None:  # fmt: skip
    img = _image(pixels, w, h, channels, stride)
    if img is None:
        return
    pen = _pen(color, channels)
    cx, cy, radius, thickness = int(cx), int(cy), int(radius), int(thickness)
    if thickness == -1:
        box = _box(img, cy - (radius - 1), cy + radius, cx - (radius - 1), cx + radius)
        if box is None:
            return
        y0, y1, x0, x1 = box
        dy = np.arange(y0, y1)[:, None] - cy
        dx = np.arange(x0, x1)[None, :] - cx
        img[y0:y1, x0:x1][dx * dx + dy * dy <= np.float32(radius) * np.float32(radius)] = pen
        return
    t0 = np.float32(thickness / 2.0)
    t1 = np.float32(thickness) - t0
    # ncnn starts the scan one row/column further out for 2 and 3 channels; its loop bounds
    # are floats truncated to int, mirrored here so the same pixels are reached
    reach = radius if channels in (2, 3) else radius - 1
    box = _box(
        img,
        math.trunc(float(np.float32(cy - reach) - t0)),
        math.ceil(float(np.float32(cy + radius) + t1)),
        math.trunc(float(np.float32(cx - reach) - t0)),
        math.ceil(float(np.float32(cx + radius) + t1)),
    )
    if box is None:
        return
    y0, y1, x0, x1 = box
    ys = np.arange(y0, y1)
    xs = np.arange(x0, x1)
    ys = ys[ys < np.float32(cy + radius) + t1]
    xs = xs[xs < np.float32(cx + radius) + t1]
    if ys.size == 0 or xs.size == 0:
        return
    q = ((xs[None, :] - cx) ** 2 + (ys[:, None] - cy) ** 2).astype(np.float32)
    r0 = np.float32(radius) - t0
    r1 = np.float32(radius) + t1
    mask = (q >= r0 * r0) & (q < r1 * r1)
    sub = img[ys[0] : ys[-1] + 1, xs[0] : xs[-1] + 1]
    sub[mask] = pen


def draw_line(pixels: Any, w: int, h: int, x0: int, y0: int, x1: int, y1: int, color: int, thickness: int,
              channels: int, stride: int = 0) -> None:  # fmt: skip
    img = _image(pixels, w, h, channels, stride)
    if img is None:
        return
    pen = _pen(color, channels)
    x0, y0, x1, y1, thickness = int(x0), int(y0), int(x1), int(y1), int(thickness)
    t0 = np.float32(thickness / 2.0)
    t1 = np.float32(thickness) - t0
    xmin, xmax, ymin, ymax = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
    ystart = math.trunc(float(np.float32(ymin) - t0))
    xstart = math.trunc(float(np.float32(xmin) - t0))
    ys = np.arange(max(ystart, 0), min(math.ceil(float(np.float32(ymax) + t1)), img.shape[0]))
    xs = np.arange(max(xstart, 0), min(math.ceil(float(np.float32(xmax) + t1)), img.shape[1]))
    ys = ys[ys < np.float32(ymax) + t1]
    xs = xs[xs < np.float32(xmax) + t1]
    if ys.size == 0 or xs.size == 0:
        return
    dx01, dy01 = x1 - x0, y1 - y0
    denom = dx01 * dx01 + dy01 * dy01
    if denom == 0:
        return  # ncnn divides by zero here and draws nothing
    dx0 = (xs[None, :] - x0).astype(np.int64)
    dy0 = (ys[:, None] - y0).astype(np.int64)
    r = ((dx0 * dx01 + dy0 * dy01).astype(np.float32) / np.float32(denom)).astype(np.float32)
    px = np.float32(x0) + np.float32(dx01) * r
    py = np.float32(y0) + np.float32(dy01) * r
    ddx = xs[None, :].astype(np.float32) - px
    ddy = ys[:, None].astype(np.float32) - py
    mask = (r >= 0) & (r <= 1) & (ddx * ddx + ddy * ddy < t1)
    sub = img[ys[0] : ys[-1] + 1, xs[0] : xs[-1] + 1]
    sub[mask] = pen


def _printable(ch: str) -> bool:
    return " " <= ch <= "~"


def get_text_drawing_size(text: str, fontpixelsize: int) -> tuple[int, int]:
    """(width, height) of ``text`` drawn with ``fontpixelsize``, as ncnn computes it."""
    fs = int(fontpixelsize)
    w = h = line_w = 0
    for ch in str(text):
        if ch == "\n":
            w = max(w, line_w)
            h += fs * 2
            line_w = 0
        if _printable(ch):
            line_w += fs
    return max(w, line_w), h + fs * 2


def draw_text(pixels: Any, w: int, h: int, text: str, x: int, y: int, fontpixelsize: int, color: int,
              channels: int, stride: int = 0) -> None:  # fmt: skip
    img = _image(pixels, w, h, channels, stride)
    if img is None:
        return
    fs = int(fontpixelsize)
    if fs <= 0:
        log.error("draw_text: fontpixelsize %d", fs)
        return
    pen = _pen(color, channels).astype(np.uint32)
    cursor_x, cursor_y = int(x), int(y)
    for ch in str(text):
        if ch == "\n":
            cursor_x = int(x)
            cursor_y += fs * 2
            continue
        if not _printable(ch):
            continue
        if ch != " ":
            box = _box(img, cursor_y, cursor_y + 2 * fs, cursor_x, cursor_x + fs)
            if box is not None:
                by0, by1, bx0, bx1 = box
                a = glyph_alpha(ch, fs)[by0 - cursor_y : by1 - cursor_y, bx0 - cursor_x : bx1 - cursor_x]
                a = a.astype(np.uint32)[..., None]
                region = img[by0:by1, bx0:bx1]
                region[...] = ((region.astype(np.uint32) * (255 - a) + pen * a) // 255).astype(np.uint8)
        cursor_x += fs


def _fixed(fn: Any, channels: int) -> Any:
    def bound(*args: Any, stride: int = 0) -> None:
        fn(*args, channels=channels, stride=stride)

    bound.__name__ = f"{fn.__name__}_c{channels}"
    bound.__doc__ = f"``{fn.__name__}`` on a {channels}-channel buffer."
    return bound


draw_rectangle_c1 = _fixed(draw_rectangle, 1)
draw_rectangle_c2 = _fixed(draw_rectangle, 2)
draw_rectangle_c3 = _fixed(draw_rectangle, 3)
draw_rectangle_c4 = _fixed(draw_rectangle, 4)
draw_circle_c1 = _fixed(draw_circle, 1)
draw_circle_c2 = _fixed(draw_circle, 2)
draw_circle_c3 = _fixed(draw_circle, 3)
draw_circle_c4 = _fixed(draw_circle, 4)
draw_line_c1 = _fixed(draw_line, 1)
draw_line_c2 = _fixed(draw_line, 2)
draw_line_c3 = _fixed(draw_line, 3)
draw_line_c4 = _fixed(draw_line, 4)
draw_text_c1 = _fixed(draw_text, 1)
draw_text_c2 = _fixed(draw_text, 2)
draw_text_c3 = _fixed(draw_text, 3)
draw_text_c4 = _fixed(draw_text, 4)
