"""Mats: creation (plain, external, elem), reshape, queries, pixels, mean/normalize."""

from __future__ import annotations

from typing import Any

import numpy as np

from ._core import (
    ALLOCATOR,
    HANDLES,
    INT,
    MAT,
    PTR,
    SIZE,
    VOID,
    _address,
    _destroy,
    _export,
    _floats_at,
    _get,
    _is_address,
    _opt_get,
    _u8_view,
)


def _new_mat(m: Any) -> int:
    return HANDLES.add(MAT, m)


def _mat_create(shape: tuple[int, ...], allocator: int, elemsize: int = 4, elempack: int = 1) -> int:
    from ..mat import Mat

    if any(int(x) <= 0 for x in shape):
        raise ValueError(f"non-positive shape {shape}")
    m = Mat(*shape, elemsize=int(elemsize), elempack=int(elempack), allocator=_opt_get(allocator, ALLOCATOR))
    if m.empty():
        raise MemoryError(f"cannot allocate a Mat of shape {shape}")
    return _new_mat(m)


def _mat_external(
    shape: tuple[int, ...], data: int, allocator: int, elemsize: int = 4, elempack: int = 1
) -> int:
    from ..mat import Mat

    if not _is_address(data):
        raise ValueError(f"data must be a memory address, got {type(data).__name__}")
    _address(data, "data")
    if any(int(x) <= 0 for x in shape):
        raise ValueError(f"non-positive shape {shape}")
    return _new_mat(
        Mat.from_external(
            int(data),
            *shape,
            elemsize=int(elemsize),
            elempack=int(elempack),
            allocator=_opt_get(allocator, ALLOCATOR),
        )
    )


@_export(PTR)
def ncnn_mat_create() -> int:
    from ..mat import Mat

    return _new_mat(Mat())


@_export(PTR)
def ncnn_mat_create_1d(w: int, allocator: int) -> int:
    return _mat_create((w,), allocator)


@_export(PTR)
def ncnn_mat_create_2d(w: int, h: int, allocator: int) -> int:
    return _mat_create((w, h), allocator)


@_export(PTR)
def ncnn_mat_create_3d(w: int, h: int, c: int, allocator: int) -> int:
    return _mat_create((w, h, c), allocator)


@_export(PTR)
def ncnn_mat_create_4d(w: int, h: int, d: int, c: int, allocator: int) -> int:
    return _mat_create((w, h, d, c), allocator)


@_export(PTR)
def ncnn_mat_create_external_1d(w: int, data: int, allocator: int) -> int:
    return _mat_external((w,), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_2d(w: int, h: int, data: int, allocator: int) -> int:
    return _mat_external((w, h), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_3d(w: int, h: int, c: int, data: int, allocator: int) -> int:
    return _mat_external((w, h, c), data, allocator)


@_export(PTR)
def ncnn_mat_create_external_4d(w: int, h: int, d: int, c: int, data: int, allocator: int) -> int:
    return _mat_external((w, h, d, c), data, allocator)


@_export(PTR)
def ncnn_mat_create_1d_elem(w: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w,), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_2d_elem(w: int, h: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w, h), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_3d_elem(w: int, h: int, c: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_create((w, h, c), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_4d_elem(
    w: int, h: int, d: int, c: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_create((w, h, d, c), allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_1d_elem(w: int, data: int, elemsize: int, elempack: int, allocator: int) -> int:
    return _mat_external((w,), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_2d_elem(
    w: int, h: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_3d_elem(
    w: int, h: int, c: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h, c), data, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_external_4d_elem(
    w: int, h: int, d: int, c: int, data: int, elemsize: int, elempack: int, allocator: int
) -> int:
    return _mat_external((w, h, d, c), data, allocator, elemsize, elempack)


@_export(VOID)
def ncnn_mat_destroy(mat: int) -> None:
    _destroy(mat, MAT)


@_export(VOID)
def ncnn_mat_fill_float(mat: int, v: float) -> None:
    _get(mat, MAT).fill(float(v))


@_export(PTR)
def ncnn_mat_clone(mat: int, allocator: int) -> int:
    m = _get(mat, MAT)
    if getattr(m, "n", 1) > 1:
        return _batch_reshape(m, _shape_of(m), allocator)
    return _new_mat(m.clone(allocator=_opt_get(allocator, ALLOCATOR)))


def _shape_of(m: Any) -> tuple[int, ...]:
    return ((m.w,), (m.w, m.h), (m.w, m.h, m.c), (m.w, m.h, m.d, m.c))[m.dims - 1]


def _batch_items(m: Any) -> list[Any]:
    """One Mat view per batch item of a batch Mat (sharing its memory)."""
    from ..mat import Mat

    step = int(m.cstep * m.c) * int(m.elemsize)
    items = []
    for b in range(int(m.n)):
        v = Mat.from_external(m.data_ptr() + b * step, *_shape_of(m), elemsize=m.elemsize,
                              elempack=m.elempack, owner=m)  # fmt: skip
        v.cstep = m.cstep
        items.append(v)
    return items


def _batch_reshape(m: Any, shape: tuple[int, ...], allocator: int) -> int:
    """Clone / reshape of a batch Mat: each item reshaped into a new batch Mat."""
    if m.dims == 0 or int(np.prod(shape)) != m.w * m.h * m.d * m.c:
        raise ValueError(f"cannot reshape {_shape_of(m) if m.dims else ()} to {shape}")
    h = _mat_batch(shape, int(m.n), allocator, m.elemsize, m.elempack)
    out = _get(h, MAT)
    for src, dst in zip(_batch_items(m), _batch_items(out), strict=True):
        dst.tensor()[...] = np.ascontiguousarray(src.tensor()).reshape(dst.tensor().shape)
    return h


def _reshape(mat: int, shape: tuple[int, ...], allocator: int) -> int:
    m = _get(mat, MAT)
    if getattr(m, "n", 1) > 1:
        return _batch_reshape(m, shape, allocator)
    out = m.reshape(*shape, allocator=_opt_get(allocator, ALLOCATOR))
    if out.empty() and not m.empty():
        raise ValueError(f"cannot reshape {m.w}x{m.h}x{m.d}x{m.c} to {shape}")
    return _new_mat(out)


@_export(PTR)
def ncnn_mat_reshape_1d(mat: int, w: int, allocator: int) -> int:
    return _reshape(mat, (w,), allocator)


@_export(PTR)
def ncnn_mat_reshape_2d(mat: int, w: int, h: int, allocator: int) -> int:
    return _reshape(mat, (w, h), allocator)


@_export(PTR)
def ncnn_mat_reshape_3d(mat: int, w: int, h: int, c: int, allocator: int) -> int:
    return _reshape(mat, (w, h, c), allocator)


@_export(PTR)
def ncnn_mat_reshape_4d(mat: int, w: int, h: int, d: int, c: int, allocator: int) -> int:
    return _reshape(mat, (w, h, d, c), allocator)


def _make_mat_getter(field_name: str, ret: str) -> None:
    def getter(mat: int) -> int:
        return int(getattr(_get(mat, MAT), field_name, 1 if field_name == "n" else 0))

    getter.__name__ = getter.__qualname__ = f"ncnn_mat_get_{field_name}"
    getter.__doc__ = f"``mat.{field_name}``."
    globals()[getter.__name__] = _export(ret)(getter)


for _field, _ret in (
    ("dims", INT),
    ("w", INT),
    ("h", INT),
    ("d", INT),
    ("c", INT),
    ("n", INT),
    ("elemsize", SIZE),
    ("elempack", INT),
    ("cstep", SIZE),
):
    _make_mat_getter(_field, _ret)
del _field, _ret


@_export(PTR)
def ncnn_mat_get_data(mat: int) -> int:
    m = _get(mat, MAT)
    return 0 if m.empty() else int(m.data_ptr())


@_export(PTR)
def ncnn_mat_get_channel_data(mat: int, c: int) -> int:
    m = _get(mat, MAT)
    if m.empty():
        raise ValueError("empty Mat")
    return int(m.channel(int(c)).data_ptr())


_PIXEL_CHANNELS = {1: 3, 2: 3, 3: 1, 4: 4, 5: 4}


def _pixels(pixels: Any, type_: int, w: int, h: int, stride: int) -> np.ndarray:
    ch = _PIXEL_CHANNELS.get(int(type_) & 0xFFFF)
    if ch is None:
        raise ValueError(f"unknown pixel type {type_:#x}")
    if w <= 0 or h <= 0:
        raise ValueError(f"image size {w}x{h}")
    stride = int(stride) or w * ch
    return _u8_view(pixels, stride * (h - 1) + w * ch, "pixels")


def _from_pixels_result(m: Any) -> int:
    if m.empty():
        raise ValueError("conversion produced an empty Mat")
    return _new_mat(m)


@_export(PTR)
def ncnn_mat_from_pixels(pixels: Any, type: int, w: int, h: int, stride: int, allocator: int) -> int:  # noqa: A002
    from ..mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels(buf, type, w, h, stride, allocator=_opt_get(allocator, ALLOCATOR))
    )


@_export(PTR)
def ncnn_mat_from_pixels_resize(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    target_width: int,
    target_height: int,
    allocator: int,
) -> int:
    from ..mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_resize(
            buf, type, w, h, stride, target_width, target_height, allocator=_opt_get(allocator, ALLOCATOR)
        )
    )


@_export(PTR)
def ncnn_mat_from_pixels_roi(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    roix: int,
    roiy: int,
    roiw: int,
    roih: int,
    allocator: int,
) -> int:
    from ..mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_roi(
            buf, type, w, h, stride, roix, roiy, roiw, roih, allocator=_opt_get(allocator, ALLOCATOR)
        )
    )


@_export(PTR)
def ncnn_mat_from_pixels_roi_resize(
    pixels: Any,
    type: int,
    w: int,
    h: int,
    stride: int,  # noqa: A002
    roix: int,
    roiy: int,
    roiw: int,
    roih: int,
    target_width: int,
    target_height: int,
    allocator: int,
) -> int:
    from ..mat import Mat

    buf = _pixels(pixels, type, w, h, stride)
    return _from_pixels_result(
        Mat.from_pixels_roi_resize(
            buf,
            type,
            w,
            h,
            stride,
            roix,
            roiy,
            roiw,
            roih,
            target_width,
            target_height,
            allocator=_opt_get(allocator, ALLOCATOR),
        )
    )


def _out_channels(type_: int) -> int:
    dst = (int(type_) >> 16) & 0xFFFF or int(type_) & 0xFFFF
    ch = _PIXEL_CHANNELS.get(dst)
    if ch is None:
        raise ValueError(f"unknown pixel type {type_:#x}")
    return ch


@_export(VOID)
def ncnn_mat_to_pixels(mat: int, pixels: Any, type: int, stride: int) -> None:  # noqa: A002
    m = _get(mat, MAT)
    ch = _out_channels(type)
    stride = int(stride) or m.w * ch
    m.to_pixels(_u8_view(pixels, stride * (m.h - 1) + m.w * ch, "pixels", writable=True), type, stride)


@_export(VOID)
def ncnn_mat_to_pixels_resize(
    mat: int,
    pixels: Any,
    type: int,
    target_width: int,  # noqa: A002
    target_height: int,
    target_stride: int,
) -> None:
    m = _get(mat, MAT)
    ch = _out_channels(type)
    stride = int(target_stride) or target_width * ch
    if target_width <= 0 or target_height <= 0:
        raise ValueError(f"target size {target_width}x{target_height}")
    buf = _u8_view(pixels, stride * (target_height - 1) + target_width * ch, "pixels", writable=True)
    m.to_pixels_resize(buf, type, target_width, target_height, stride)


@_export(VOID)
def ncnn_mat_substract_mean_normalize(mat: int, mean_vals: Any, norm_vals: Any) -> None:
    m = _get(mat, MAT)
    n = (m.c if m.dims >= 3 else 1) * m.elempack
    m.substract_mean_normalize(_floats_at(mean_vals, n), _floats_at(norm_vals, n))


# ---------------------------------------------------------------- batch Mats


def _mat_batch(shape: tuple[int, ...], n: int, allocator: int, elemsize: int = 4, elempack: int = 1) -> int:
    """``n`` Mats of ``shape`` back to back, ``nstep`` elements apart (ncnn's batch Mat)."""
    from ..mat import Mat

    n = int(n)
    if n <= 0 or any(int(x) <= 0 for x in shape):
        raise ValueError(f"non-positive shape {shape} x {n}")
    one = Mat(
        *shape, elemsize=int(elemsize), elempack=int(elempack), allocator=_opt_get(allocator, ALLOCATOR)
    )
    if one.empty():
        raise MemoryError(f"cannot allocate a Mat of shape {shape}")
    if n == 1:
        return _new_mat(one)
    # ncnn_c's Mat allocates single Mats only: lay the batch out in one block of our own
    per = one.cstep * one.c * one.elemsize
    block = np.zeros(per * n, dtype=np.uint8)
    m = Mat.from_external(
        int(block.ctypes.data), *shape, elemsize=one.elemsize, elempack=one.elempack, owner=block
    )
    m.cstep = one.cstep
    m.n = n
    return _new_mat(m)


@_export(PTR)
def ncnn_mat_create_1d_batch(w: int, n: int, allocator: int) -> int:
    return _mat_batch((w,), n, allocator)


@_export(PTR)
def ncnn_mat_create_2d_batch(w: int, h: int, n: int, allocator: int) -> int:
    return _mat_batch((w, h), n, allocator)


@_export(PTR)
def ncnn_mat_create_3d_batch(w: int, h: int, c: int, n: int, allocator: int) -> int:
    return _mat_batch((w, h, c), n, allocator)


@_export(PTR)
def ncnn_mat_create_4d_batch(w: int, h: int, d: int, c: int, n: int, allocator: int) -> int:
    return _mat_batch((w, h, d, c), n, allocator)


@_export(PTR)
def ncnn_mat_create_1d_elem_batch(w: int, elemsize: int, elempack: int, n: int, allocator: int) -> int:
    return _mat_batch((w,), n, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_2d_elem_batch(
    w: int, h: int, elemsize: int, elempack: int, n: int, allocator: int
) -> int:
    return _mat_batch((w, h), n, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_3d_elem_batch(
    w: int, h: int, c: int, elemsize: int, elempack: int, n: int, allocator: int
) -> int:  # noqa: E501
    return _mat_batch((w, h, c), n, allocator, elemsize, elempack)


@_export(PTR)
def ncnn_mat_create_4d_elem_batch(
    w: int, h: int, d: int, c: int, elemsize: int, elempack: int, n: int, allocator: int
) -> int:  # noqa: E501
    return _mat_batch((w, h, d, c), n, allocator, elemsize, elempack)


@_export(SIZE)
def ncnn_mat_get_nstep(mat: int) -> int:
    m = _get(mat, MAT)
    return int(m.cstep * m.c)


@_export(PTR)
def ncnn_mat_get_batch_data(mat: int, b: int) -> int:
    m = _get(mat, MAT)
    if m.empty():
        raise ValueError("empty Mat")
    if not 0 <= int(b) < int(getattr(m, "n", 1)):
        raise IndexError(f"batch {b} out of range 0..{getattr(m, 'n', 1) - 1}")
    return int(m.data_ptr()) + int(b) * int(m.cstep * m.c) * int(m.elemsize)
