"""Convolution kernels shared by Convolution, ConvolutionDepthWise and Convolution1D.

Each function takes an fp32 input of numpy shape (c, h, w) and writes into ``dst``, a
(num_output, outh, outw) view of the top blob (channels may be cstep apart).

* ``gemm_into`` / ``grouped_into``: im2col of a bordered input (a strided view copied once
  into a workspace; no copy at all for 1x1 stride 1) and one matrix product (batched over the
  groups) straight into the top blob; the layer adds bias and activation.
* ``winograd43_*``: F(4x4, 3x3) Winograd for 3x3 stride-1 kernels, 36 products per 4x4 output
  tile instead of 144. Native transforms (``ncnn_c._native.cpu``) border the input on the fly
  and fuse bias and ReLU; the numpy fallback applies them as small dense GEMMs.
* ``depthwise_into``: one output channel per input channel; the native kernel borders each
  channel on the fly and fuses bias and ReLU, numpy sums shifted strided views.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .._native.blas import matmul as par_matmul
from .._native.cpu import cpu_kernels
from . import workspace
from ._geometry import copy_make_border


def channel_rows(dst: np.ndarray) -> np.ndarray | None:
    """``dst`` (c, h, w) as a (c, h*w) view when each channel is contiguous (cstep may pad
    between channels), so a matrix product can land in the top blob; None otherwise."""
    c, h, w = dst.shape
    if dst.strides[2] != 4 or (h > 1 and dst.strides[1] != w * 4):
        return None
    # merging h and w needs no copy here; copy=False makes numpy say so rather than copy
    # (as_strided would do too, at several times the cost for a small layer)
    try:
        return dst.reshape((c, h * w), copy=False)
    except ValueError:
        return None


def im2col(xp, kw, kh, sw, sh, dw, dh, outh, outw, opt, groups=1):
    """(keep, cols): cols is (groups, c/groups*kh*kw, outh*outw) float32 in a workspace."""
    c = xp.shape[0]
    sc, sy, sx = xp.strides
    win = as_strided(
        xp,
        shape=(c, kh, kw, outh, outw),
        strides=(sc, sy * dh, sx * dw, sy * sh, sx * sw),
        writeable=False,
    )
    keep, cols = workspace(opt, (groups, c // groups * kh * kw, outh * outw))
    cols.reshape(win.shape)[...] = win
    return keep, cols


def gemm_into(xp, dst, weight2d, kw, kh, sw, sh, dw, dh, opt) -> None:
    """dst = weight2d @ im2col(xp) for a plain (one group) convolution."""
    outc, outh, outw = dst.shape
    keep = None
    cols = channel_rows(xp) if kw == kh == 1 and sw == sh == 1 else None
    if cols is None:
        keep, cols3 = im2col(xp, kw, kh, sw, sh, dw, dh, outh, outw, opt)
        cols = cols3[0]
    rows = channel_rows(dst)
    if rows is not None:
        par_matmul(weight2d, cols, rows, _threads(opt))
    else:
        dst[...] = (weight2d @ cols).reshape(dst.shape)
    del keep


def grouped_into(xp, dst, weight3d, kw, kh, sw, sh, dw, dh, opt) -> None:
    """Grouped convolution: weight3d is (groups, outc/groups, c/groups*kh*kw)."""
    g = weight3d.shape[0]
    outc, outh, outw = dst.shape
    keep = None
    flat = channel_rows(xp) if kw == kh == 1 and sw == sh == 1 else None
    if flat is not None:
        # 1x1 stride 1 (ShuffleNet's grouped pointwise layers): the input already is the matrix
        cols = flat.reshape(g, xp.shape[0] // g, outh * outw)
    else:
        keep, cols = im2col(xp, kw, kh, sw, sh, dw, dh, outh, outw, opt, groups=g)
    rows = channel_rows(dst)
    if rows is not None:
        par_matmul(weight3d, cols, rows.reshape(g, outc // g, outh * outw), _threads(opt))
    else:
        dst[...] = np.matmul(weight3d, cols).reshape(dst.shape)
    del keep


# -- Winograd F(4x4, 3x3) ------------------------------------------------------------------------
# Lavin & Gray's matrices with interpolation points 0, +-1, +-2, inf; the 2-D transforms are
# Kronecker products, so each one is a single (36 x 36 / 16 x 36 / 36 x 9) GEMM over all tiles.
_BT = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
G_F43 = np.array(  # also the native plan's F(4,3) (net/native/ops/winograd.py)
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=np.float64,
)
_AT = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    dtype=np.float64,
)
_KB = np.kron(_BT, _BT).astype(np.float32)  # (36, 36): d (6x6 tile, row-major) -> V
_KA = np.kron(_AT, _AT).astype(np.float32)  # (16, 36): M -> Y (4x4)
_KG = np.kron(G_F43, G_F43)  # (36, 9): g (3x3) -> U


def winograd43_weights(weight: np.ndarray, outc: int, inc: int) -> np.ndarray:
    """The transformed kernels U as (36, outc, inc) float32 (computed in float64 once)."""
    g = np.asarray(weight, dtype=np.float64).reshape(outc * inc, 9)
    u = _KG @ g.T  # (36, outc*inc)
    return np.ascontiguousarray(u.reshape(36, outc, inc), dtype=np.float32)


def _threads(opt) -> int:
    return max(1, int(getattr(opt, "num_threads", 1) or 1))


def native_kernels():
    return cpu_kernels()


def native_act(activation_type: int, params) -> tuple[int, float] | None:
    """(relu, slope) of the native kernels for a fused activation they can apply (none, ReLU,
    leaky ReLU), None for the others."""
    if activation_type == 0:
        return 0, 1.0
    if activation_type == 1:
        return 1, 1.0
    if activation_type == 2:
        return 0, float(params[0])
    return None


def bias_act(dst, bias, activation_type: int, opt, params=None) -> bool:
    """Add bias (None or (c, 1) values) and apply the activation in one native pass when it is
    none, ReLU or leaky ReLU (slope ``params[0]``); False (nothing done) otherwise."""
    act = native_act(activation_type, params)
    if act is None or (bias is None and activation_type == 0):
        return bias is None and activation_type == 0
    native = native_kernels()
    return native is not None and native.bias_relu(dst, bias, act[0], _threads(opt), act[1])


def _bordered(x, pads, value, opt):
    """(keep, x bordered by pads (top, bottom, left, right)) for the numpy fallbacks."""
    if not any(pads):
        return None, x
    return copy_make_border(x, pads[0], pads[1], pads[2], pads[3], value, opt)


def winograd43_into(x, dst, u, bias, act, opt, pads=(0, 0, 0, 0), value=0.0) -> bool:
    """3x3 stride-1 convolution of x (c, h, w) bordered by ``pads`` (top, bottom, left, right,
    none negative) of ``value`` into dst (outc, outh, outw), bias added; returns whether the
    activation ``act`` (native_act's (relu, slope), or None) was applied too (the native
    transforms fuse it).

    The tiles live channel-major, (c, 36, t) and (outc, 36, t), so that each transform reads
    and writes one channel's block; the 36 products see them through transposed views, which
    BLAS takes as they are (unit column stride)."""
    c = x.shape[0]
    outc, outh, outw = dst.shape
    th, tw = -(-outh // 4), -(-outw // 4)
    t = th * tw
    native = native_kernels()
    threads = _threads(opt)
    keep_v, v = workspace(opt, (c, 36, t))
    if native is None or not native.wino43_input(x, v, th, tw, pads[0], pads[2], value, threads):
        keep_x, xb = _bordered(x, pads, value, opt)
        _wino_input_numpy(xb, v, th, tw, opt)
        del keep_x
    keep_m, m = workspace(opt, (outc, 36, t))
    # one BLAS product per tile position. Measured slower end to end on the benchmark shapes:
    # splitting the 36 products over Python threads with single-threaded BLAS (OpenBLAS's
    # spinning workers then compete for the cores), and a register-blocked native loop for
    # few tiles (faster alone on the smallest shapes only)
    par_matmul(u, v.transpose(1, 0, 2), m.transpose(1, 0, 2), threads)
    del keep_v
    relu, slope = act or (0, 1.0)
    if native is not None and native.wino43_output(m, dst, bias, relu, th, tw, threads, slope):
        return act is not None
    keep_y, y = workspace(opt, (outc, 16, t))
    np.matmul(_KA, m, out=y)
    del keep_m
    # (outc, 4, 4, th, tw) -> (outc, th, 4, tw, 4) is the output plane, tiles in place
    yv = y.reshape(outc, 4, 4, th, tw).transpose(0, 3, 1, 4, 2).reshape(outc, th * 4, tw * 4)
    if bias is not None:
        np.add(yv[:, :outh, :outw], bias.reshape(-1, 1, 1), out=dst)
    else:
        dst[...] = yv[:, :outh, :outw]
    del keep_y
    return False


def _wino_input_numpy(xp, v, th, tw, opt) -> None:
    """The input transform as one (36 x 36) GEMM over gathered 6x6 tiles."""
    c, h, w = xp.shape
    eh, ew = th * 4 + 2, tw * 4 + 2
    keep_ext = None
    if eh > h or ew > w:
        # whole tiles only: the extra rows/columns feed outputs that are cropped away
        keep_ext, ext = workspace(opt, (c, max(eh, h), max(ew, w)))
        ext[:, :h, :w] = xp
        ext[:, h:, :] = 0.0
        ext[:, :h, w:] = 0.0
        xp = ext
    sc, sy, sx = xp.strides
    tiles = as_strided(xp, shape=(c, 6, 6, th, tw), strides=(sc, sy, sx, 4 * sy, 4 * sx), writeable=False)
    keep_d, d = workspace(opt, (c, 36, th * tw))
    d.reshape(tiles.shape)[...] = tiles
    del keep_ext
    np.matmul(_KB, d, out=v)
    del keep_d


# -- depthwise -------------------------------------------------------------------------------------
def depthwise_into(x, dst, weight, bias, act, geom, opt, pads=(0, 0, 0, 0), value=0.0) -> bool:
    """dst[c] = bias[c] + sum over taps of weight[c, ky, kx] * shifted x[c], x bordered by
    ``pads`` (top, bottom, left, right) of ``value``; weight is (c, kh*kw), geom is (kw, kh,
    sw, sh, dw, dh); no pad may be negative. Returns whether the activation ``act``
    (native_act's (relu, slope), or None) was applied too."""
    native = native_kernels()
    relu, slope = act or (0, 1.0)
    if native is not None and native.depthwise(
        x, dst, weight, bias, relu, geom, pads, value, _threads(opt), slope
    ):
        return act is not None
    keep_x, xp = _bordered(x, pads, value, opt)
    kw, kh, sw, sh, dw, dh = geom
    c, outh, outw = dst.shape
    sc, sy, sx = xp.strides
    keep, tmp = workspace(opt, (c, outh, outw))
    first = True
    for ky in range(kh):
        for kx in range(kw):
            tap = as_strided(
                xp[:, ky * dh :, kx * dw :],
                shape=(c, outh, outw),
                strides=(sc, sy * sh, sx * sw),
                writeable=False,
            )
            wk = weight[:, ky * kw + kx].reshape(c, 1, 1)
            if first:
                np.multiply(tap, wk, out=dst)
                first = False
            else:
                np.multiply(tap, wk, out=tmp)
                dst += tmp
    del keep, keep_x
    if bias is not None:
        dst += bias.reshape(-1, 1, 1)
    return False
