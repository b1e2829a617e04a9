"""Extractors: inputs and outputs by name and by index."""

from __future__ import annotations

from typing import Any

from ._core import (
    EXTRACTOR,
    HANDLES,
    INT,
    MAT,
    NET,
    OPTION,
    PTR,
    VOID,
    _destroy,
    _export,
    _get,
    _text_arg,
    log,
)
from .mat import _new_mat


@_export(PTR)
def ncnn_extractor_create(net: int) -> int:
    return HANDLES.add(EXTRACTOR, _get(net, NET).create_extractor())


@_export(VOID)
def ncnn_extractor_destroy(ex: int) -> None:
    _destroy(ex, EXTRACTOR)


@_export(VOID)
def ncnn_extractor_set_option(ex: int, opt: int) -> None:
    _get(ex, EXTRACTOR).set_option(_get(opt, OPTION))


def _input(ex: int, key: Any, mat: int) -> int:
    return int(_get(ex, EXTRACTOR).input(key, _get(mat, MAT)))


def _extract(ex: int, key: Any) -> tuple[int, int]:
    e = _get(ex, EXTRACTOR)
    ret, m = e.extract(key)
    if ret != 0 or m is None:
        log.error("extract %r failed (%d)", key, ret)
        return (int(ret) or -1, 0)
    return 0, _new_mat(m)


@_export(INT)
def ncnn_extractor_input(ex: int, name: Any, mat: int) -> int:
    return _input(ex, _text_arg(name, "name"), mat)


@_export(INT)
def ncnn_extractor_input_index(ex: int, index: int, mat: int) -> int:
    return _input(ex, int(index), mat)


@_export(INT)
def ncnn_extractor_extract(ex: int, name: Any) -> Any:
    """``(ret, mat_handle)``; the new Mat belongs to the caller (ncnn_mat_destroy). On
    failure ``(non-zero, 0)``: ncnn would hand back an empty Mat, we give NULL."""
    return _extract(ex, _text_arg(name, "name"))


@_export(INT)
def ncnn_extractor_extract_index(ex: int, index: int) -> Any:
    """As ``ncnn_extractor_extract``, by blob index."""
    return _extract(ex, int(index))
