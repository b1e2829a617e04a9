"""ncnn's int8 arithmetic, shared by Quantize / Dequantize / Requantize and the quantized forms
of Convolution, ConvolutionDepthWise and InnerProduct.

* ``float2int8``: round half away from zero and saturate to [-127, 127] (never -128). ncnn's
  x86 vector loops, which the PyPI build runs on almost every element, compute
  ``trunc(v + copysign(0.5, v))`` in fp32 and convert with ``cvttps``: NaN and values beyond
  int32 come out as INT_MIN, so they saturate to -127, whatever their sign. The scalar tails
  use ``round()``, which differs only for v = +-0.49999997 (the fp32 add rounds up to 1).
* ``dequantize``: ``int32 * scale + bias`` as one fused multiply-add, as ncnn's x86 kernels
  compute it (``fmadd``): the fp32 product is exact in fp64, so only the sum rounds.
* ``per_axis0``: ncnn's scale / bias vectors apply per element of a 1-D blob's single value,
  per row of a 2-D blob and per channel of a 3-D / 4-D blob: the first numpy axis.
"""

from __future__ import annotations

import logging

import numpy as np

log = logging.getLogger("ncnn_c")

_HALF = np.float32(0.5)
_INT32_LIMIT = np.float32(2.0**31)


def float2int8(v: np.ndarray) -> np.ndarray:
    """ncnn's float -> int8 of an fp32 array (see the module docstring), as a new int8 array."""
    v = np.asarray(v, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.trunc(v + np.copysign(_HALF, v))
        # cvttps: NaN and |t| >= 2^31 give INT_MIN, which saturates to -127
        t[~(np.abs(t) < _INT32_LIMIT)] = -127
        np.clip(t, -127, 127, out=t)
    return t.astype(np.int8)


def dequantize(acc: np.ndarray, scale, bias=None) -> np.ndarray:
    """fp32 ``acc * scale + bias`` with one rounding (fused multiply-add); ``acc`` holds int32
    values (any numeric dtype), ``scale`` / ``bias`` broadcast against it."""
    v = np.asarray(acc).astype(np.float32).astype(np.float64)
    v *= np.asarray(scale, dtype=np.float32).astype(np.float64)
    if bias is not None:
        v += np.asarray(bias, dtype=np.float32).astype(np.float64)
    return v.astype(np.float32)


def scale_in(bottom_scales: np.ndarray, weight_scales: np.ndarray) -> np.ndarray:
    """Per output channel ``1 / (bottom_scale * weight_scale)`` in fp32; 0 where the weight
    scale is 0 (an all-zero output channel), as ncnn."""
    b = np.asarray(bottom_scales, dtype=np.float32)
    w = np.asarray(weight_scales, dtype=np.float32)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        s = np.float32(1.0) / (b * w)
    return np.where(w == 0, np.float32(0.0), s).astype(np.float32)


def per_axis0(values: np.ndarray, x: np.ndarray, dims: int) -> np.ndarray:
    """``values`` (1 value, or one per row / channel) shaped to broadcast over the numpy view
    ``x`` of a ``dims``-D blob. 1-D blobs take the first value only."""
    if values.size == 1 or dims == 1:
        return values[:1].reshape((1,) * x.ndim)
    return values.reshape((-1,) + (1,) * (x.ndim - 1))


def per_axis0_or_none(values: np.ndarray | None, x: np.ndarray, dims: int) -> np.ndarray | None:
    """per_axis0 of an optional vector (a bias)."""
    return None if values is None else per_axis0(values, x, dims)


def count_fits(layer, what: str, size: int, x_shape: tuple[int, ...], dims: int) -> bool:
    """Whether a ``size``-long per-row / per-channel vector fits a blob of numpy shape
    ``x_shape`` (1 always fits; 1-D blobs read only the first value); logs why not."""
    if size == 1 or dims == 1 or size == x_shape[0]:
        return True
    log.error(
        "%s %r: %s has %d values for a %d-D blob of %d %s",
        layer.type or type(layer).__name__,
        layer.name,
        what,
        size,
        dims,
        x_shape[0],
        "rows" if dims == 2 else "channels",
    )
    return False


def store(top, array: np.ndarray, opt) -> int:
    """Create ``top`` as an elempack-1 blob of ``array``'s numpy shape and element type (int8:
    elemsize 1, fp32: elemsize 4) from ``opt.blob_allocator`` and copy ``array`` in.
    Returns 0, or -100 when the allocation fails."""
    top.create(
        *reversed(array.shape), elemsize=array.dtype.itemsize, elempack=1, allocator=opt.blob_allocator
    )
    if top.empty():
        return -100
    top.tensor()[...] = array
    return 0


def blob_values(layer, bottom, elemsize: int, what: str) -> np.ndarray | None:
    """The numpy view of an elempack-1 blob of 1-4 dims whose elements are ``elemsize`` bytes
    (4: read as ``what`` says, int32 or fp32); None, logged, for anything else."""
    if bottom.dims < 1 or bottom.elempack != 1 or bottom.elemsize != elemsize:
        log.error(
            "%s %r: needs an elempack-1 blob of %s, got dims %d elemsize %d elempack %d",
            layer.type or type(layer).__name__,
            layer.name,
            what,
            bottom.dims,
            bottom.elemsize,
            bottom.elempack,
        )
        return None
    return bottom.tensor(np.int32) if what == "int32" else bottom.tensor()
