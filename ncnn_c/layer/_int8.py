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


def int8_or_fp32(m) -> int:
    """The elemsize of the top of a layer that only moves its bottom's values (Concat, Slice,
    Crop, Padding): 1 for an int8 blob, which stays int8 as in ncnn, else 4."""
    return 1 if m.elemsize == 1 else 4


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


# an fp32 product of int8 values is exact while every partial sum stays within 2^24:
# K terms of at most 128 * 128 each
EXACT_K = (1 << 24) // (128 * 128)


def int8_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The exact integer product ``a @ b`` of int8-valued arrays (int8 or fp32 holding int8
    values; (..., M, K) @ (..., K, N)) as float64: fp32 BLAS over slices of ``EXACT_K`` terms,
    each exact, summed in float64 (exact up to 2^53, far beyond int32)."""
    k = a.shape[-1]
    out: np.ndarray | None = None
    for k0 in range(0, max(k, 1), EXACT_K):
        part = np.matmul(
            np.asarray(a[..., k0 : k0 + EXACT_K], dtype=np.float32),
            np.asarray(b[..., k0 : k0 + EXACT_K, :], dtype=np.float32),
        )
        out = part.astype(np.float64) if out is None else out + part
    assert out is not None
    return out


def conv_int8(
    xp: np.ndarray,
    w: np.ndarray,
    kernel: tuple[int, int],
    stride: tuple[int, int],
    dilation: tuple[int, int],
    out: tuple[int, int],
) -> np.ndarray:
    """The int32 sums of a grouped 2-D convolution, exact, as float64 (outc, outh, outw).

    ``xp``: the bordered input (C, H, W) of int8 values (any dtype); ``w``: the weights as
    (kh * kw, group, outc / group, C / group) int8 values in fp32. One product per kernel
    offset over a strided view of the input (no im2col buffer); a depthwise layer (one input
    and one output channel per group) multiplies elementwise instead."""
    (kh, kw), (sh, sw), (dh, dw), (outh, outw) = kernel, stride, dilation, out
    _, g, og, cg = w.shape
    xg = xp.reshape(g, cg, xp.shape[-2], xp.shape[-1])
    acc = np.zeros((g, og, outh * outw), np.float64)
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dh, j * dw
            xs = xg[:, :, y0 : y0 + sh * (outh - 1) + 1 : sh, x0 : x0 + sw * (outw - 1) + 1 : sw]
            xs = np.asarray(xs, dtype=np.float32).reshape(g, cg, outh * outw)
            wk = w[i * kw + j]
            if og == cg == 1:
                acc[:, 0] += wk[:, 0, 0, None] * xs[:, 0]
            else:
                acc += int8_matmul(wk, xs)
    return acc.reshape(g * og, outh, outw)


class Int8Scales:
    """A quantized layer's scales as ncnn loads them after the bias: the weight scales (one per
    output channel here, whatever count the model stores), the bottom blob's scale, and the top
    blob's when the layer requantizes its output (``int8_scale_term > 100``)."""

    def __init__(self, weight: np.ndarray, bottom: float, top: float | None) -> None:
        self.weight = weight
        self.bottom = np.float32(bottom)
        self.top = None if top is None else np.float32(top)
        # 1 / (bottom scale * weight scale) per output channel: int32 sums -> fp32
        self.scale_in = scale_in(np.float32(bottom), weight)

    def dequantize(self, acc: np.ndarray, bias, activation_type: int, activation_params, axis: int = 0):
        """fp32 ``activation(acc * scale_in + bias)`` of int32 sums whose output channels run along
        ``axis`` (the multiply-add fused, as ncnn)."""
        from ._fused_activation import fused_activation

        shape = [1] * acc.ndim
        shape[axis] = -1
        b = None if bias is None else np.asarray(bias, dtype=np.float32).reshape(shape)
        v = dequantize(acc, self.scale_in.reshape(shape), b)
        fused_activation(v, activation_type, activation_params)
        return v


def load_int8_scales(
    layer, mb, weight_count: int, requantize: bool
) -> tuple[np.ndarray, float, float | None] | None:
    """Read ``weight_count`` weight scales, the bottom scale and (``requantize``) the top scale
    (raw fp32 each); None, logged with the missing key, when the model ends first."""
    from ._elementwise import load_vector

    weight = load_vector(layer, mb, weight_count, "weight_data_int8_scales")
    if weight is None:
        return None
    bottom = load_vector(layer, mb, 1, "bottom_blob_int8_scales")
    if bottom is None:
        return None
    top = None
    if requantize:
        t = load_vector(layer, mb, 1, "top_blob_int8_scales")
        if t is None:
            return None
        top = float(t[0])
    return weight, float(bottom[0]), top


def quantized_weights(rows: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weights, their fp32 dequantized form) of weight rows, one row per output channel
    with its scale: fp32 rows are quantized as ncnn quantizes them at load, int8 rows (int8
    storage) taken as they are. The fp32 form (``w8 / scale``, 0 for a zero scale) is what the
    layer runs on in fp32 (no ``use_int8_inference``, or on a GPU)."""
    if rows.dtype == np.int8:
        w8 = np.array(rows)
    else:
        w8 = float2int8(np.multiply(rows, scales[:, None], dtype=np.float32))
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = np.where(scales == 0, np.float32(0), np.float32(1) / scales).astype(np.float32)
    return w8, w8.astype(np.float32) * inv[:, None]
