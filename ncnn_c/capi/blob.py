"""Blobs (a net's named edges) and layers' bottom/top shapes.

ncnn's C API has no function that hands out an ``ncnn_blob_t``; ``blob_handle(net, i)`` (not
a C export) gives Python callers one, borrowed from its net.
"""

from __future__ import annotations

import ctypes
from typing import Any

from ._core import BLOB, HANDLES, INT, LAYER, NET, STR, VOID, _export, _get, write_c


def blob_handle(net: int, i: int) -> int:
    """A borrowed handle to blob ``i`` of ``net`` (dies with the net); 0 when out of range."""
    n = _get(net, NET)
    blobs = n.blobs()
    if not 0 <= int(i) < len(blobs):
        return 0
    return HANDLES.child(net, f"blob{int(i)}", BLOB, lambda: n.blobs()[int(i)])


@_export(STR)
def ncnn_blob_get_name(blob: int) -> str:
    return str(_get(blob, BLOB).name)


@_export(INT)
def ncnn_blob_get_producer(blob: int) -> int:
    return int(_get(blob, BLOB).producer)


@_export(INT)
def ncnn_blob_get_consumer(blob: int) -> int:
    return int(_get(blob, BLOB).consumer)


def _shape_out(shape: Any, outs: tuple[Any, ...], what: str) -> Any:
    vals = (int(shape.dims), int(shape.w), int(shape.h), int(shape.c))
    if all(o is None for o in outs):
        return vals  # the Python form: (dims, w, h, c)
    for name, addr, v in zip(("dims", "w", "h", "c"), outs, vals, strict=True):
        write_c(addr, ctypes.c_int, v, f"{what}: {name}")
    return None


@_export(VOID)
def ncnn_blob_get_shape(blob: int, dims: Any = None, w: Any = None, h: Any = None, c: Any = None) -> Any:
    return _shape_out(_get(blob, BLOB).shape, (dims, w, h, c), "ncnn_blob_get_shape")


def _layer_shape(layer: int, which: str, i: int) -> Any:
    from .layer import _layer

    shapes = getattr(_layer(layer).target, which)
    if not 0 <= int(i) < len(shapes):
        raise IndexError(f"{which} {i} out of range 0..{len(shapes) - 1}")
    return shapes[int(i)]


@_export(VOID)
def ncnn_blob_get_bottom_shape(
    layer: int, i: int, dims: Any = None, w: Any = None, h: Any = None, c: Any = None
) -> Any:  # noqa: E501
    return _shape_out(_layer_shape(layer, "bottom_shapes", i), (dims, w, h, c), "ncnn_blob_get_bottom_shape")


@_export(VOID)
def ncnn_blob_get_top_shape(
    layer: int, i: int, dims: Any = None, w: Any = None, h: Any = None, c: Any = None
) -> Any:  # noqa: E501
    return _shape_out(_layer_shape(layer, "top_shapes", i), (dims, w, h, c), "ncnn_blob_get_top_shape")


_ = LAYER  # the layer handle kind is checked by .layer._layer
