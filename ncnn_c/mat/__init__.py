"""Mat, ncnn's blob container, and everything that reads or writes its memory.

* ``storage``: the flat aligned byte buffer, allocators, lifetime (``alignSize``).
* ``core``: the ``Mat`` class: ncnn's layout (``dims``, ``w h d c``, ``cstep``), views, clone.
* ``convert``: element type conversions (fp32 <-> fp16).
* ``pixels``: image in/out, bilinear resize, mean/norm (attached to ``Mat`` as methods).

Every name importable from the former single module still is: ``from ncnn_c.mat import Mat``.
"""

from __future__ import annotations

from . import pixels as _pixels  # noqa: F401 - attaches from_pixels & co. to Mat
from .convert import float16_to_float32, float32_to_float16
from .core import Mat, _check_int, _cstep_for, _shape_args, _unpickle_mat, unpack_shape
from .pixels import PIXEL_CONVERT_SHIFT, PIXEL_FORMAT_MASK, resize_bilinear_pixels
from .storage import _allocate, _as_byte_buffer, _Block, _give_back, alignSize

__all__ = [
    "PIXEL_CONVERT_SHIFT",
    "PIXEL_FORMAT_MASK",
    "Mat",
    "alignSize",
    "float16_to_float32",
    "float32_to_float16",
    "resize_bilinear_pixels",
    "unpack_shape",
    "_Block",
    "_allocate",
    "_as_byte_buffer",
    "_check_int",
    "_cstep_for",
    "_give_back",
    "_shape_args",
    "_unpickle_mat",
]
