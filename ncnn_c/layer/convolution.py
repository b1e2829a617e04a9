"""Convolution (2-D, fp32) as im2col + one matrix product, with ncnn's padding and fused activations.

Also home of two helpers other CPU layers reuse: ``copy_make_border`` (constant padding
with ncnn's signed pads: negative values crop) and ``fused_activation`` (param 9/10 of
Convolution-like layers).
"""

from __future__ import annotations

import logging

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..mat import Mat
from . import Layer, workspace

log = logging.getLogger("ncnn_c")

# ncnn's "compute the pads from the input size" markers for pad params
PAD_SAME_UPPER = -233
PAD_SAME_LOWER = -234


def copy_make_border(
    x: np.ndarray, top: int, bottom: int, left: int, right: int, value: float, opt=None
) -> tuple[object, np.ndarray]:
    """Pad the last two axes of x with a constant; negative pads crop. Returns ``(keep, padded)``
    (x itself when all pads are 0); the copy comes from ``opt.workspace_allocator`` (see workspace()).

    Negative pads arise from SAME padding when the kernel is smaller than the stride. ncnn
    copies rows from the first one whatever ``top`` is, so a negative top drops rows at the
    bottom; we do the same. (A negative left is a true crop at the left in ncnn for narrow
    rows; for rows of 12+ floats ncnn writes out of bounds, which nobody should rely on.)
    """
    if top == bottom == left == right == 0:
        return None, x
    h, w = x.shape[-2:]
    # cropping first keeps the allocation to the final size
    x = x[..., : h - max(0, -top) - max(0, -bottom), max(0, -left) : w - max(0, -right)]
    top, bottom, left, right = (max(0, p) for p in (top, bottom, left, right))
    h, w = x.shape[-2:]
    keep, out = workspace(opt, x.shape[:-2] + (h + top + bottom, w + left + right))
    out.fill(value)
    out[..., top : top + h, left : left + w] = x
    return keep, out


def same_pads(size: int, kernel_extent: int, stride: int, upper: bool) -> tuple[int, int]:
    """(before, after) pads that make out = ceil(size / stride); SAME_UPPER puts the odd one after.

    A kernel smaller than the stride gives a negative total, split with C's truncating
    division as ncnn splits it (-3 -> -1 and -2)."""
    total = kernel_extent + (size - 1) // stride * stride - size
    half = int(total / 2)
    return (half, total - half) if upper else (total - half, half)


def same_border(
    h: int, w: int, ext_h: int, ext_w: int, stride_h: int, stride_w: int, upper: bool
) -> tuple[int, int, int, int]:
    """(top, bottom, left, right) of ncnn's SAME padding, in the terms copy_make_border uses.

    ncnn pads only when one side comes out positive, and its border copy crops negative rows at
    the bottom whichever side they belong to, negative columns where they are; the rows are
    moved here so that code indexing the input with these offsets (the GPU shaders) agrees.
    """
    l, r = same_pads(w, ext_w, stride_w, upper)
    t, b = same_pads(h, ext_h, stride_h, upper)
    if l <= 0 and r <= 0 and t <= 0 and b <= 0:
        return 0, 0, 0, 0
    if t < 0:
        t, b = 0, b + t
    return t, b, l, r


def activation_values(params) -> np.ndarray:
    """Param 10 (a float array Mat, or None/empty) as float32 numpy."""
    if params is None:
        return np.zeros(0, dtype=np.float32)
    if isinstance(params, Mat):
        if params.empty():
            return np.zeros(0, dtype=np.float32)
        return np.asarray(params.numpy(), dtype=np.float32).ravel()
    return np.asarray(params, dtype=np.float32).ravel()


def fused_activation(x: np.ndarray, activation_type: int, params: np.ndarray) -> None:
    """Apply ncnn's fused activation in place on a float32 array.

    0 none, 1 ReLU, 2 LeakyReLU(slope), 3 Clip(min, max), 4 Sigmoid, 5 Mish, 6 HardSwish(alpha, beta).
    """
    if activation_type == 0:
        return
    if activation_type == 1:
        np.maximum(x, 0.0, out=x)
    elif activation_type == 2:
        np.multiply(x, params[0], out=x, where=x < 0)
    elif activation_type == 3:
        np.maximum(x, params[0], out=x)
        np.minimum(x, params[1], out=x)
    elif activation_type == 4:
        # ncnn clamps the exponent's argument so exp never overflows
        np.clip(x, -88.3762626647949, 88.3762626647949, out=x)
        np.negative(x, out=x)
        np.exp(x, out=x)
        x += 1.0
        np.reciprocal(x, out=x)
    elif activation_type == 5:
        x *= np.tanh(np.logaddexp(np.float32(0.0), x))
    elif activation_type == 6:
        alpha, beta = params[0], params[1]
        lower = -beta / alpha
        upper = 1.0 / alpha + lower
        mid = (x >= lower) & (x <= upper)
        x[mid] = x[mid] * (x[mid] * alpha + beta)
        x[x < lower] = 0.0
    else:
        raise ValueError(f"unknown activation_type {activation_type}")


class Convolution(Layer):
    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self.weight_data = Mat()
        self.bias_data = Mat()
        self._weight2d: np.ndarray | None = None
        self._bias: np.ndarray | None = None

    def load_param(self, pd) -> int:
        self.num_output = pd.get(0, 0)
        self.kernel_w = pd.get(1, 0)
        self.dilation_w = pd.get(2, 1)
        self.stride_w = pd.get(3, 1)
        self.pad_left = pd.get(4, 0)
        self.bias_term = pd.get(5, 0)
        self.weight_data_size = pd.get(6, 0)
        self.int8_scale_term = pd.get(8, 0)
        self.activation_type = pd.get(9, 0)
        self.activation_params = pd.get(10, Mat())
        self.kernel_h = pd.get(11, self.kernel_w)
        self.dilation_h = pd.get(12, self.dilation_w)
        self.stride_h = pd.get(13, self.stride_w)
        self.pad_top = pd.get(14, self.pad_left)
        self.pad_right = pd.get(15, self.pad_left)
        self.pad_bottom = pd.get(16, self.pad_top)
        self.pad_value = float(pd.get(18, 0.0))
        self.dynamic_weight = pd.get(19, 0)
        self._act = activation_values(self.activation_params)

        if self.int8_scale_term:
            log.error(
                "Convolution %r: int8 quantized weights (8=%d) are not supported yet",
                self.name,
                self.int8_scale_term,
            )
            return -1
        if self.dynamic_weight:
            log.error("Convolution %r: dynamic_weight (19=1) is not supported yet", self.name)
            return -1
        if not 0 <= self.activation_type <= 6:
            log.error("Convolution %r: unknown activation_type %d", self.name, self.activation_type)
            return -1
        need = {2: 1, 3: 2, 6: 2}.get(self.activation_type, 0)
        if self._act.size < need:
            log.error(
                "Convolution %r: activation_type %d needs %d params in 10=, got %d",
                self.name,
                self.activation_type,
                need,
                self._act.size,
            )
            return -1
        maxk = self.kernel_w * self.kernel_h
        if self.num_output <= 0 or maxk <= 0 or self.weight_data_size % (maxk * self.num_output):
            log.error(
                "Convolution %r: weight_data_size %d does not fit num_output %d x kernel %dx%d",
                self.name,
                self.weight_data_size,
                self.num_output,
                self.kernel_w,
                self.kernel_h,
            )
            return -1
        return 0

    def load_model(self, mb) -> int:
        self.weight_data = mb.load(self.weight_data_size, 0)
        if self.weight_data.empty():
            return -100
        if self.bias_term:
            self.bias_data = mb.load(self.num_output, 1)
            if self.bias_data.empty():
                return -100
        self._prepare()
        return 0

    def _prepare(self) -> None:
        # [num_output][num_input][kh][kw] flattened per output: one row of the im2col product
        w = np.asarray(self.weight_data.numpy(), dtype=np.float32)
        self._weight2d = np.ascontiguousarray(w.reshape(self.num_output, -1))
        self._bias = (
            np.asarray(self.bias_data.numpy(), dtype=np.float32).reshape(-1, 1) if self.bias_term else None
        )

    def same_border(self, h: int, w: int) -> tuple[int, int, int, int]:
        """SAME padding (-233 / -234) for an h x w input, as (top, bottom, left, right)."""
        return same_border(
            h,
            w,
            self.dilation_h * (self.kernel_h - 1) + 1,
            self.dilation_w * (self.kernel_w - 1) + 1,
            self.stride_h,
            self.stride_w,
            self.pad_left == PAD_SAME_UPPER,
        )

    def _padded(self, x: np.ndarray, opt=None) -> tuple[object, np.ndarray]:
        pads = (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)
        h, w = x.shape[-2:]
        if any(p > 0 for p in pads):
            l, r, t, b = pads
        elif all(p == PAD_SAME_UPPER for p in pads) or all(p == PAD_SAME_LOWER for p in pads):
            t, b, l, r = self.same_border(h, w)
        else:
            return None, x
        return copy_make_border(x, t, b, l, r, self.pad_value, opt)

    def forward(self, bottom, top, opt) -> int:
        if self._weight2d is None:
            self._prepare()
        assert self._weight2d is not None  # set by _prepare()
        if bottom.elempack == 1 and bottom.dims == 1 and self.kernel_w == self.kernel_h == 1:
            return self._forward_flat(bottom, top, opt)
        if bottom.elempack != 1 or bottom.dims != 3:
            log.error(
                "Convolution %r: needs a 3-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = bottom.tensor()
        channels = x.shape[0]
        kw, kh = self.kernel_w, self.kernel_h
        if channels * kw * kh != self._weight2d.shape[1]:
            log.error(
                "Convolution %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self._weight2d.shape[1] // (kw * kh),
            )
            return -1
        _ws_padded, xp = self._padded(x, opt)
        hp, wp = xp.shape[-2:]
        outw = (wp - (self.dilation_w * (kw - 1) + 1)) // self.stride_w + 1
        outh = (hp - (self.dilation_h * (kh - 1) + 1)) // self.stride_h + 1
        if outw <= 0 or outh <= 0:
            log.error("Convolution %r: input %dx%d is smaller than the kernel", self.name, wp, hp)
            return -1

        if kw == kh == 1 and self.stride_w == self.stride_h == 1:
            cols = xp.reshape(channels, outh * outw)
        else:
            # im2col without a Python loop: a strided view (channel, ky, kx, oy, ox) over the
            # padded input, copied once into the (num_input*kh*kw, outh*outw) matrix
            sc, sy, sx = xp.strides
            win = as_strided(
                xp,
                shape=(channels, kh, kw, outh, outw),
                strides=(
                    sc,
                    sy * self.dilation_h,
                    sx * self.dilation_w,
                    sy * self.stride_h,
                    sx * self.stride_w,
                ),
                writeable=False,
            )
            _ws_cols, cols = workspace(opt, (channels * kh * kw, outh * outw))
            cols.reshape(win.shape)[...] = win
        top.create(outw, outh, self.num_output, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        dst = top.tensor()
        # each channel's rows are contiguous, only cstep may pad between channels: viewing the top
        # as (num_output, outh*outw) with the channel stride lets the product land there directly
        direct = dst.strides[1:] == (outw * 4, 4)
        out2d = (
            as_strided(dst, shape=(self.num_output, outh * outw), strides=(dst.strides[0], 4))
            if direct
            else None
        )
        out = np.matmul(self._weight2d, cols, out=out2d)
        if self._bias is not None:
            out += self._bias
        fused_activation(out, self.activation_type, self._act)
        if not direct:
            dst[...] = out.reshape(self.num_output, outh, outw)
        return 0

    def _forward_flat(self, bottom, top, opt) -> int:
        # ncnn's deprecated path: a 1x1 convolution over a flattened blob acts as InnerProduct
        assert self._weight2d is not None  # forward() prepared it
        x = bottom.tensor()
        if x.shape[0] != self._weight2d.shape[1]:
            log.error(
                "Convolution %r: flat input of %d values, weights expect %d",
                self.name,
                x.shape[0],
                self._weight2d.shape[1],
            )
            return -1
        out = self._weight2d @ x
        if self._bias is not None:
            out += self._bias[:, 0]
        fused_activation(out, self.activation_type, self._act)
        top.create(self.num_output, elemsize=4, elempack=1, allocator=opt.blob_allocator)
        if top.empty():
            return -100
        top.tensor()[...] = out
        return 0
