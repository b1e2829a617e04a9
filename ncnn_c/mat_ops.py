"""Whole-Mat operations of ncnn's mat.h: borders, packing, flattening, resizing, casts.

``copy_make_border``, ``copy_make_border_3d``, ``copy_cut_border``, ``copy_cut_border_3d``,
``convert_packing``, ``flatten``, ``resize_nearest/bilinear/bicubic``, the ``cast_*``
functions and ``quantize_to_int8`` take the PyPI ``ncnn`` signatures: either
``f(src, dst, ..., opt)`` filling ``dst`` in place (returns None) or ``f(src, ..., opt)``
returning a new Mat. ``opt`` is optional and only its ``blob_allocator`` is used.

As in ncnn's mat.cpp, resizing runs the Interp layer (output size ``w`` x ``h``, so a 1-D
Mat becomes ``w`` planes and a 2-D Mat keeps its rows) and the casts run the Cast layer.

Bad arguments (negative borders, a cut larger than the Mat, an unknown border type) log one
line and leave ``dst`` empty, as ncnn does; nothing raises for data problems.
"""

from __future__ import annotations

import enum
import logging
from typing import Any

import numpy as np

from .mat import Mat

log = logging.getLogger("ncnn_c")

BORDER_CONSTANT = 0
BORDER_REPLICATE = 1
BORDER_REFLECT = 2
BORDER_TRANSPARENT = -233


class BorderType(enum.IntEnum):
    """Border modes of ``copy_make_border`` (the PyPI enum; ncnn's BORDER_REFLECT = 2 works too)."""

    BORDER_CONSTANT = 0
    BORDER_REPLICATE = 1


_NP_MODE: dict[int, Any] = {BORDER_REPLICATE: "edge", BORDER_REFLECT: "reflect"}


def _split(args: tuple[Any, ...], nint: int, name: str) -> tuple[Mat | None, list[Any], Any]:
    """(dst or None, the ``nint`` positional values, opt) from either PyPI call form."""
    dst = None
    rest = list(args)
    if rest and isinstance(rest[0], Mat):
        dst = rest.pop(0)
    opt = None
    if len(rest) == nint + 1:
        opt = rest.pop()
    if len(rest) != nint:
        raise TypeError(f"{name}: expected {nint} values after src (and dst), got {len(rest)}")
    return dst, rest, opt


def _allocator(opt: Any) -> Any:
    return getattr(opt, "blob_allocator", None) if opt is not None else None


def _finish(dst: Mat | None, out: Mat) -> Mat | None:
    if dst is None:
        return out
    dst.share_from(out) if not out.empty() else dst.release()
    return None


def _new_like(src: Mat, shape_ncnn: tuple[int, ...], opt: Any) -> Mat:
    out = Mat()
    out.create(*shape_ncnn, elemsize=src.elemsize, elempack=src.elempack, allocator=_allocator(opt))
    return out


def _pad_axes(src: Mat, pads: dict[str, tuple[int, int]]) -> list[tuple[int, int]]:
    """np.pad widths for src.tensor() (elempack axis last, never padded)."""
    names = {1: ("w",), 2: ("h", "w"), 3: ("c", "h", "w"), 4: ("c", "d", "h", "w")}[src.dims]
    widths = [pads.get(n, (0, 0)) for n in names]
    if src.elempack > 1:
        widths.append((0, 0))
    return widths


def _make_border(src: Mat, top: int, bottom: int, left: int, right: int, front: int, behind: int,
                 type_: int, v: float, opt: Any, name: str) -> Mat:  # fmt: skip
    if src.empty():
        log.error("%s: empty src", name)
        return Mat()
    if type_ not in (BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT):
        log.error("%s: unsupported border type %d", name, type_)
        return Mat()
    if src.dims == 1:
        top = bottom = 0  # a 1-D Mat grows along w only (ncnn's Padding ignores top/bottom there)
    if src.dims != 4:
        front = behind = 0
    if min(top, bottom, left, right, front, behind) < 0:
        # ncnn's Padding crops some sides and not others for negative borders: refused here
        log.error("%s: negative border %s", name, (top, bottom, left, right, front, behind))
        return Mat()
    pads: dict[str, tuple[int, int]] = {"w": (left, right), "h": (top, bottom)}
    if src.dims == 4:
        pads["d"] = (front, behind)
    x = src.tensor()
    widths = _pad_axes(src, pads)
    if type_ == BORDER_REFLECT:
        for (a, b), n in zip(widths, x.shape, strict=True):
            if max(a, b) >= n and (a or b):
                log.error("%s: reflect border %d/%d too wide for size %d", name, a, b, n)
                return Mat()
    if type_ == BORDER_CONSTANT:
        y = np.pad(x, widths, mode="constant", constant_values=np.asarray(v, dtype=x.dtype))
    else:
        y = np.pad(x, widths, mode=_NP_MODE[type_])
    w, h = src.w + left + right, src.h + top + bottom
    shape = {1: (w,), 2: (w, h), 3: (w, h, src.c), 4: (w, h, src.d + front + behind, src.c)}[src.dims]
    out = _new_like(src, shape, opt)
    out.tensor()[...] = y
    return out


def copy_make_border(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] top, bottom, left, right, type, v[, opt])``: pad w/h by the border type."""
    dst, (top, bottom, left, right, type_, v), opt = _split(args, 6, "copy_make_border")
    out = _make_border(src, int(top), int(bottom), int(left), int(right), 0, 0, int(type_), float(v), opt,
                       "copy_make_border")  # fmt: skip
    return _finish(dst, out)


def copy_make_border_3d(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] top, bottom, left, right, front, behind, type, v[, opt])``; front/behind pad d."""
    dst, (top, bottom, left, right, front, behind, type_, v), opt = _split(args, 8, "copy_make_border_3d")
    out = _make_border(src, int(top), int(bottom), int(left), int(right), int(front), int(behind), int(type_),
                       float(v), opt, "copy_make_border_3d")  # fmt: skip
    return _finish(dst, out)


def _cut_border(src: Mat, top: int, bottom: int, left: int, right: int, front: int, behind: int, opt: Any,
                name: str) -> Mat:  # fmt: skip
    if src.empty():
        log.error("%s: empty src", name)
        return Mat()
    if min(top, bottom, left, right, front, behind) < 0:
        log.error("%s: negative border %s", name, (top, bottom, left, right, front, behind))
        return Mat()
    if left + right > src.w or top + bottom > src.h or (src.dims == 4 and front + behind > src.d):
        log.error(
            "%s: cut %s larger than the %dx%dx%d Mat", name, (top, bottom, left, right, front, behind),
            src.w, src.h, src.d,
        )  # fmt: skip
        return Mat()
    w, h = src.w - left - right, src.h - top - bottom
    x = src.tensor()
    if src.dims == 1:
        y = x[left : left + w]
        shape: tuple[int, ...] = (w,)
    elif src.dims == 2:
        y = x[top : top + h, left : left + w]
        shape = (w, h)
    elif src.dims == 3:
        y = x[:, top : top + h, left : left + w]
        shape = (w, h, src.c)
    else:
        d = src.d - front - behind
        y = x[:, front : front + d, top : top + h, left : left + w]
        shape = (w, h, d, src.c)
    if 0 in shape:
        log.error("%s: nothing left after the cut", name)
        return Mat()
    out = _new_like(src, shape, opt)
    out.tensor()[...] = y
    return out


def copy_cut_border(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] top, bottom, left, right[, opt])``: remove borders from w/h."""
    dst, (top, bottom, left, right), opt = _split(args, 4, "copy_cut_border")
    return _finish(dst, _cut_border(src, int(top), int(bottom), int(left), int(right), 0, 0, opt,
                                    "copy_cut_border"))  # fmt: skip


def copy_cut_border_3d(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] top, bottom, left, right, front, behind[, opt])``: also cut d (4-D Mats)."""
    dst, (top, bottom, left, right, front, behind), opt = _split(args, 6, "copy_cut_border_3d")
    out = _cut_border(src, int(top), int(bottom), int(left), int(right), int(front), int(behind), opt,
                      "copy_cut_border_3d")  # fmt: skip
    return _finish(dst, out)


def convert_packing(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] elempack[, opt])``: regroup the outermost axis into ``elempack`` lanes.

    As ncnn's Packing layer: the outermost axis (w for 1-D, h for 2-D, c for 3-D/4-D) times
    the current elempack must divide by the new one; otherwise ``dst`` shares ``src`` unchanged.
    """
    dst, (elempack,), opt = _split(args, 1, "convert_packing")
    out_pack = int(elempack)
    if out_pack <= 0:
        log.error("convert_packing: elempack %d", out_pack)
        return _finish(dst, Mat())
    if src.empty() or src.elempack == out_pack:
        return _finish(dst, Mat(src))
    p = src.elempack
    outer = {1: src.w, 2: src.h, 3: src.c, 4: src.c}[src.dims] * p
    if outer % out_pack:
        return _finish(dst, Mat(src))
    x = src.tensor()
    if p == 1:
        x = x[..., None]
    # lanes next to their group: (outer/p, p, inner...) -> (outer, inner...)
    inner = x.shape[1:-1]
    flat = np.moveaxis(x, -1, 1).reshape((outer, *inner))
    y = np.moveaxis(flat.reshape((outer // out_pack, out_pack, *inner)), 1, -1)
    n_out = outer // out_pack
    scalar = src.elemsize // p
    shape = {1: (n_out,), 2: (src.w, n_out), 3: (src.w, src.h, n_out), 4: (src.w, src.h, src.d, n_out)}
    out = Mat()
    out.create(*shape[src.dims], elemsize=scalar * out_pack, elempack=out_pack, allocator=_allocator(opt))
    t = out.tensor()
    t[...] = y if out_pack > 1 else y[..., 0]
    return _finish(dst, out)


def flatten(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] [opt])``: all elements as one 1-D Mat (channel padding dropped)."""
    dst, _, opt = _split(args, 0, "flatten")
    if src.empty():
        log.error("flatten: empty src")
        return _finish(dst, Mat())
    if src.dims == 1:
        return _finish(dst, Mat(src))
    x = src.tensor()
    if src.elempack > 1:
        unpacked = convert_packing(src, 1, opt)
        assert unpacked is not None
        x = unpacked.tensor()
    out = Mat()
    n = int(np.prod(x.shape))
    out.create(n, elemsize=src.elemsize // src.elempack, elempack=1, allocator=_allocator(opt))
    out.tensor()[...] = x.reshape(-1)
    return _finish(dst, out)


# ---------------------------------------------------------------- through layers


def _run_layer(layer_cls: Any, params: dict[int, Any], src: Mat, opt: Any, name: str) -> Mat:
    """``src`` through a freshly built layer (ncnn's mat.cpp does the same); empty Mat on failure."""
    from .option import Option
    from .paramdict import ParamDict

    if src.empty():
        log.error("%s: empty src", name)
        return Mat()
    if src.elempack != 1:
        log.error("%s: needs elempack 1, got %d", name, src.elempack)
        return Mat()
    pd = ParamDict()
    for k, v in params.items():
        pd.set(k, v)
    layer = layer_cls()
    run_opt = Option()
    run_opt.blob_allocator = _allocator(opt)
    if layer.load_param(pd) != 0 or layer.create_pipeline(run_opt) != 0:
        return Mat()
    out = Mat()
    ret = layer.forward(src, out, run_opt)
    if ret != 0:
        log.error("%s: failed (%d)", name, ret)
        return Mat()
    return out


def _resize(resize_type: int, name: str, src: Mat, args: tuple[Any, ...]) -> Mat | None:
    from .layer.interp import Interp

    dst, (w, h), opt = _split(args, 2, name)
    w, h = int(w), int(h)
    if w <= 0 or h <= 0:
        log.error("%s: target size %dx%d", name, w, h)
        return _finish(dst, Mat())
    return _finish(dst, _run_layer(Interp, {0: resize_type, 3: h, 4: w}, src, opt, name))


def resize_nearest(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] w, h[, opt])``: nearest-neighbour resize of every channel to ``w`` x ``h``."""
    return _resize(1, "resize_nearest", src, args)


def resize_bilinear(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] w, h[, opt])``: bilinear resize (ncnn's half-pixel centres)."""
    return _resize(2, "resize_bilinear", src, args)


def resize_bicubic(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] w, h[, opt])``: bicubic resize (Keys' kernel, A = -0.75)."""
    return _resize(3, "resize_bicubic", src, args)


def _cast(
    type_from: int, type_to: int, scalar: int, name: str, src: Mat, args: tuple[Any, ...]
) -> Mat | None:
    from .layer.cast import Cast

    dst, _, opt = _split(args, 0, name)
    if not src.empty() and src.elemsize // max(1, src.elempack) != scalar:
        log.error("%s: expects %d-byte elements, got elemsize %d", name, scalar, src.elemsize)
        return _finish(dst, Mat())
    return _finish(dst, _run_layer(Cast, {0: type_from, 1: type_to}, src, opt, name))


def cast_float32_to_float16(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] [opt])``: fp16 copy (round to nearest even, overflow to inf)."""
    return _cast(1, 2, 4, "cast_float32_to_float16", src, args)


def cast_float16_to_float32(src: Mat, *args: Any) -> Mat | None:
    return _cast(2, 1, 2, "cast_float16_to_float32", src, args)


def cast_int8_to_float32(src: Mat, *args: Any) -> Mat | None:
    return _cast(3, 1, 1, "cast_int8_to_float32", src, args)


def cast_float32_to_bfloat16(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] [opt])``: bf16 bits in a 2-byte Mat (fp32 bits + 0x8000, top half)."""
    return _cast(1, 4, 4, "cast_float32_to_bfloat16", src, args)


def cast_bfloat16_to_float32(src: Mat, *args: Any) -> Mat | None:
    return _cast(4, 1, 2, "cast_bfloat16_to_float32", src, args)


def quantize_to_int8(src: Mat, *args: Any) -> Mat | None:
    """``(src, [dst,] scale_data[, opt])``: int8 = round(x * scale), saturated to [-127, 127].

    As ncnn's Quantize: one scale for everything, or one per channel (dims 3/4), per row
    (dims 2) or per element (dims 1). Rounding is half away from zero; NaN gives -127.
    """
    name = "quantize_to_int8"
    rest = list(args)
    dst = rest.pop(0) if len(rest) >= 2 and isinstance(rest[0], Mat) and isinstance(rest[1], Mat) else None
    if not rest or not isinstance(rest[0], Mat) or len(rest) > 2:
        raise TypeError(f"{name}: expected (src, [dst,] scale_data[, opt])")
    scale_mat = rest[0]
    opt = rest[1] if len(rest) == 2 else None
    if src.empty() or src.elemsize != 4 or src.elempack != 1:
        log.error("%s: needs a non-empty fp32 Mat with elempack 1", name)
        return _finish(dst, Mat())
    scales = (
        np.ascontiguousarray(scale_mat.tensor(), dtype=np.float32).reshape(-1)
        if not scale_mat.empty()
        else None
    )
    groups = {1: src.w, 2: src.h, 3: src.c, 4: src.c}[src.dims]
    if scales is None or scales.size not in (1, groups):
        log.error("%s: %s scales for %d groups", name, 0 if scales is None else scales.size, groups)
        return _finish(dst, Mat())
    x = src.tensor()
    if scales.size == 1:
        y = x * scales[0]
    else:
        y = x * scales.reshape((groups,) + (1,) * (x.ndim - 1))
    with np.errstate(invalid="ignore"):
        # roundf: half away from zero, decided on the exact fraction (y + 0.5 could round up)
        r = np.trunc(y)
        r += np.sign(y) * (np.abs(y - r) >= np.float32(0.5))
        r[np.isnan(r)] = -127  # ncnn's int conversion of NaN gives INT_MIN, then saturates
        np.clip(r, -127, 127, out=r)
    out = Mat()
    out.create(*src._shape_tuple(), elemsize=1, elempack=1, allocator=_allocator(opt))
    if out.empty():
        return _finish(dst, Mat())
    out.tensor()[...] = r.astype(np.int8)
    return _finish(dst, out)
