"""Pixel drawing: ncnn_draw_rectangle/circle/line/text_c1..c4 on raw pixel buffers."""

from __future__ import annotations

from typing import Any

from .. import drawing
from ._core import VOID, _export, _text_arg, _u8_view


def _buffer(pixels: Any, w: int, h: int, channels: int) -> Any:
    if int(w) <= 0 or int(h) <= 0:
        raise ValueError(f"image size {w}x{h}")
    return _u8_view(pixels, int(w) * int(h) * channels, "pixels", writable=True)


def _make(shape: str, channels: int) -> None:
    draw = getattr(drawing, f"draw_{shape}")
    name = f"ncnn_draw_{shape}_c{channels}"

    def fn(pixels: Any, w: int, h: int, *rest: Any) -> None:
        if shape == "text":
            rest = (_text_arg(rest[0] if rest else None, "text"), *rest[1:])
        draw(_buffer(pixels, w, h, channels), w, h, *rest, channels=channels)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"ncnn_c.drawing.draw_{shape} on a {channels}-channel buffer (address or bytes-like)."
    globals()[name] = _export(VOID)(fn)


for _shape in ("rectangle", "text", "circle", "line"):
    for _c in (1, 2, 3, 4):
        _make(_shape, _c)
del _shape, _c
