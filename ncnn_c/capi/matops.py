"""Mat processing: convert_packing, flatten, copy_make_border(_3d), copy_cut_border(_3d)."""

from __future__ import annotations

from typing import Any

from .. import mat_ops
from ._core import MAT, OPTION, VOID, _export, _get, log
from .mat import _new_mat


def _opt(opt: int) -> Any:
    from ..option import Option

    return _get(opt, OPTION) if opt else Option()


@_export(VOID)
def ncnn_convert_packing(src: int, elempack: int, opt: int) -> Any:
    """Python form returns ``(None, new_mat_handle)``; C stores the handle in ``*dst``."""
    out = mat_ops.convert_packing(_get(src, MAT), int(elempack), _opt(opt))
    return None, _new_mat(out)


@_export(VOID)
def ncnn_flatten(src: int, opt: int) -> Any:
    out = mat_ops.flatten(_get(src, MAT), _opt(opt))
    return None, _new_mat(out)


def _into(dst: int, out: Any, what: str) -> None:
    d = _get(dst, MAT)
    if out is None or out.empty():
        log.error("%s: no result (see the line above)", what)
        d.release()
        return
    d.share_from(out)


@_export(VOID)
def ncnn_copy_make_border(
    src: int, dst: int, top: int, bottom: int, left: int, right: int, type: int, v: float, opt: int
) -> None:  # noqa: A002, E501
    _get(dst, MAT)
    out = mat_ops.copy_make_border(_get(src, MAT), top, bottom, left, right, type, v, _opt(opt))
    _into(dst, out, "ncnn_copy_make_border")


@_export(VOID)
def ncnn_copy_make_border_3d(
    src: int,
    dst: int,
    top: int,
    bottom: int,
    left: int,
    right: int,
    front: int,
    behind: int,
    type: int,
    v: float,
    opt: int,
) -> None:  # noqa: A002, E501
    _get(dst, MAT)
    out = mat_ops.copy_make_border_3d(
        _get(src, MAT), top, bottom, left, right, front, behind, type, v, _opt(opt)
    )
    _into(dst, out, "ncnn_copy_make_border_3d")


@_export(VOID)
def ncnn_copy_cut_border(src: int, dst: int, top: int, bottom: int, left: int, right: int, opt: int) -> None:
    _get(dst, MAT)
    out = mat_ops.copy_cut_border(_get(src, MAT), top, bottom, left, right, _opt(opt))
    _into(dst, out, "ncnn_copy_cut_border")


@_export(VOID)
def ncnn_copy_cut_border_3d(
    src: int, dst: int, top: int, bottom: int, left: int, right: int, front: int, behind: int, opt: int
) -> None:  # noqa: E501
    _get(dst, MAT)
    out = mat_ops.copy_cut_border_3d(_get(src, MAT), top, bottom, left, right, front, behind, _opt(opt))
    _into(dst, out, "ncnn_copy_cut_border_3d")
