"""ParamDicts: create/destroy, typed get with defaults, set of ints, floats and arrays."""

from __future__ import annotations

import numpy as np

from ._core import FLOAT, HANDLES, INT, MAT, PARAMDICT, PTR, VOID, _destroy, _export, _get
from .mat import _new_mat


@_export(PTR)
def ncnn_paramdict_create() -> int:
    from ..paramdict import ParamDict

    return HANDLES.add(PARAMDICT, ParamDict())


@_export(VOID)
def ncnn_paramdict_destroy(pd: int) -> None:
    _destroy(pd, PARAMDICT)


@_export(INT)
def ncnn_paramdict_get_type(pd: int, id: int) -> int:  # noqa: A002 - ncnn's name
    """0 absent, 1 int/float (not yet typed), 2 int, 3 float, 4 array, 5 int array, 6 float array."""
    return int(_get(pd, PARAMDICT).type(int(id)))


@_export(INT)
def ncnn_paramdict_get_int(pd: int, id: int, def_: int) -> int:  # noqa: A002
    return int(_get(pd, PARAMDICT).get(int(id), int(def_)))


@_export(FLOAT)
def ncnn_paramdict_get_float(pd: int, id: int, def_: float) -> float:  # noqa: A002
    return float(np.float32(_get(pd, PARAMDICT).get(int(id), float(def_))))


@_export(PTR)
def ncnn_paramdict_get_array(pd: int, id: int, def_: int) -> int:  # noqa: A002
    """A new Mat handle: the array param ``id``, or (a share of) ``def_`` when absent."""
    from ..mat import Mat

    p = _get(pd, PARAMDICT)
    default = _get(def_, MAT) if def_ else Mat()
    return _new_mat(Mat(p.get(int(id), default)))


@_export(VOID)
def ncnn_paramdict_set_int(pd: int, id: int, i: int) -> None:  # noqa: A002
    _get(pd, PARAMDICT).set(int(id), int(i))


@_export(VOID)
def ncnn_paramdict_set_float(pd: int, id: int, f: float) -> None:  # noqa: A002
    _get(pd, PARAMDICT).set(int(id), float(f))


@_export(VOID)
def ncnn_paramdict_set_array(pd: int, id: int, v: int) -> None:  # noqa: A002
    from ..mat import Mat

    _get(pd, PARAMDICT).set(int(id), Mat(_get(v, MAT)))
