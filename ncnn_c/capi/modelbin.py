"""Model bins: over a data reader or over an array of Mats; C may override the load slots."""

from __future__ import annotations

from typing import Any

from ..modelbin import ModelBin, _split_load_args
from ._core import (
    DATAREADER,
    HANDLES,
    MAT,
    MODELBIN,
    PTR,
    VOID,
    _destroy,
    _export,
    _get,
    c_override,
    take_mat,
)
from .mat import _new_mat

_SLOTS = {1: "load_1d", 2: "load_2d", 3: "load_3d"}


class _CModelBin(ModelBin):
    """A ModelBin whose ``load_1d/2d/3d`` a C program may override through the struct."""

    def __init__(self, inner: ModelBin) -> None:
        self.inner = inner
        self.handle = 0

    def load(self, *args: Any) -> Any:
        shape, type_ = _split_load_args(args)
        slot = _SLOTS.get(len(shape))
        fn = c_override(self.handle, slot) if self.handle and slot else None
        if fn is None:
            return self.inner.load(*args)
        return take_mat(fn(*shape, type_))

    def load_1d(self, w: int, type_: int) -> Any:
        return self.load(w, type_)


def _new_modelbin(inner: ModelBin) -> int:
    obj = _CModelBin(inner)
    obj.handle = HANDLES.add(MODELBIN, obj)
    return obj.handle


@_export(PTR)
def ncnn_modelbin_create_from_datareader(dr: int) -> int:
    from ..modelbin import ModelBinFromDataReader

    return _new_modelbin(ModelBinFromDataReader(_get(dr, DATAREADER)))


@_export(PTR)
def ncnn_modelbin_create_from_mat_array(weights: Any, n: int) -> int:
    """``weights``: Mat handles (the C bridge turns the ``ncnn_mat_t`` array into a list)."""
    from ..mat import Mat
    from ..modelbin import ModelBinFromMatArray

    n = int(n)
    if n < 0:
        raise ValueError(f"negative count {n}")
    handles = list(weights or [])[:n]
    if len(handles) < n:
        raise ValueError(f"{n} weights announced, {len(handles)} given")
    return _new_modelbin(ModelBinFromMatArray([Mat(_get(h, MAT)) for h in handles]))


@_export(VOID)
def ncnn_modelbin_destroy(mb: int) -> None:
    _destroy(mb, MODELBIN)


def default_load(mb: int, *args: Any) -> int:
    """The struct's default ``load_Nd``: a new Mat handle (NULL-free: an empty Mat on failure)."""
    obj = HANDLES.get(mb, MODELBIN)
    inner = obj.inner if isinstance(obj, _CModelBin) else obj
    return _new_mat(inner.load(*args))
