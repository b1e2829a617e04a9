"""Whole-Mat operations of ncnn's mat.h: borders, element packing and flattening.

``copy_make_border``, ``copy_make_border_3d``, ``copy_cut_border``, ``copy_cut_border_3d``,
``convert_packing`` and ``flatten`` take the PyPI ``ncnn`` signatures: either
``f(src, dst, ..., opt)`` filling ``dst`` in place (returns None) or ``f(src, ..., opt)``
returning a new Mat. ``opt`` is optional and only its ``blob_allocator`` is used.

Bad arguments (negative borders, a cut larger than the Mat, an unknown border type) log one
line and leave ``dst`` empty, as ncnn does; nothing raises for data problems.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from .mat import Mat

log = logging.getLogger("ncnn_c")

BORDER_CONSTANT = 0
BORDER_REPLICATE = 1
BORDER_REFLECT = 2
BORDER_TRANSPARENT = -233

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
