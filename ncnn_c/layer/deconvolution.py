"""Deconvolution (transposed 2-D convolution, fp32): one matrix product then a col2im scatter-add.

Every input pixel spreads ``weights^T @ x`` over a kernel-sized patch of the output. We compute
all patches with one GEMM, ``(outch*kh*kw, inch) @ (inch, h*w)``, then add them into the output
with one strided slice-add per kernel tap, so the Python loop runs kh*kw times whatever the image
size. The full output is then cropped by the pads (or to ``output_w x output_h``) and the fused
activation applied.

DeconvolutionDepthWise reuses this class with ``group`` > 1 (a batched GEMM per group), and
both GPU forms take their output size and crop from ``Deconvolution.deconv_geometry``.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from ..mat import Mat
from . import Param, param_error, workspace
from ._fused_activation import check_activation, fused_activation
from ._geometry import (
    PAD_SAME_LOWER,
    PAD_SAME_UPPER,
    WINDOW_PARAMS,
    WeightBias,
    kernel_extent,
    transposed_shape,
)

log = logging.getLogger("ncnn_c")


def flat_weights(m: Mat) -> np.ndarray:
    """A loaded weight Mat as a flat float32 array (a copy only when the Mat is padded)."""
    return np.ascontiguousarray(m.tensor(), dtype=np.float32).reshape(-1)


class Deconvolution(WeightBias):
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_PARAMS,
        Param(18, "output_pad_right", 0),
        Param(19, "output_pad_bottom", "output_pad_right"),
        Param(20, "output_w", 0),
        Param(21, "output_h", "output_w"),
        Param(28, "dynamic_weight", 0),
    )
    DERIVED: ClassVar[tuple[str, ...]] = ("_wt",)

    num_output: int
    kernel_w: int
    kernel_h: int
    dilation_w: int
    dilation_h: int
    stride_w: int
    stride_h: int
    pad_left: int
    pad_right: int
    pad_top: int
    pad_bottom: int
    bias_term: int
    weight_data_size: int
    activation_type: int
    activation_params: np.ndarray
    output_pad_right: int
    output_pad_bottom: int
    output_w: int
    output_h: int
    dynamic_weight: int
    # Deconvolution is the one-group case of DeconvolutionDepthWise
    group: int = 1

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        # (group, outch_g*kh*kw, inch_g): one GEMM operand per group, rows ordered (outch, ky, kx)
        self._wt: np.ndarray | None = None
        self._bias: np.ndarray | None = None

    # -- params ---------------------------------------------------------------------------
    def check_params(self) -> int:
        if self.dynamic_weight:
            self.one_blob_only = False
        if check_activation(self) != 0:
            return -1
        if min(self.stride_w, self.stride_h, self.dilation_w, self.dilation_h) <= 0:
            log.error(
                "%s %r: stride %dx%d and dilation %dx%d must be positive",
                self.type,
                self.name,
                self.stride_w,
                self.stride_h,
                self.dilation_w,
                self.dilation_h,
            )
            return -1
        if self.output_pad_right < 0 or self.output_pad_bottom < 0:
            log.error("%s %r: negative output_pad", self.type, self.name)
            return -1
        pads = (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)
        same = (PAD_SAME_UPPER, PAD_SAME_LOWER)
        if any(p < 0 and p not in same for p in pads) or (
            any(p > 0 for p in pads) and any(p < 0 for p in pads)
        ):
            log.error("%s %r: unsupported pads %s", self.type, self.name, pads)
            return -1
        if self.group <= 0 or self.num_output <= 0 or self.num_output % self.group:
            log.error(
                "%s %r: num_output %d does not split into %d groups",
                self.type,
                self.name,
                self.num_output,
                self.group,
            )
            return -1
        if self.dynamic_weight:
            return 0
        for key in ("kernel_w", "kernel_h"):
            if getattr(self, key) <= 0:
                return param_error(self, key, "must be positive")
        maxk = self.kernel_w * self.kernel_h
        if maxk <= 0 or self.weight_data_size <= 0 or self.weight_data_size % (maxk * self.num_output):
            log.error(
                "%s %r: weight_data_size %d does not fit num_output %d x kernel %dx%d",
                self.type,
                self.name,
                self.weight_data_size,
                self.num_output,
                self.kernel_w,
                self.kernel_h,
            )
            return -1
        return 0

    # -- weights (loaded by WeightBias.load_model) ------------------------------------------
    def _prepare(self) -> None:
        # stored per group as [outch_g][inch_g][kh][kw]
        g = self.group
        outch_g = self.num_output // g
        maxk = self.kernel_w * self.kernel_h
        inch_g = self.weight_data_size // (maxk * self.num_output)
        w = flat_weights(self.weight_data).reshape(g, outch_g, inch_g, maxk)
        self._wt = np.ascontiguousarray(w.transpose(0, 1, 3, 2)).reshape(g, outch_g * maxk, inch_g)
        self._bias = flat_weights(self.bias_data) if self.bias_term else None

    def _dynamic_weights(self, bottoms: list[Mat]) -> tuple[np.ndarray, np.ndarray | None, int, int] | None:
        """(wt, bias, kernel_w, kernel_h) from the weight (and bias) blobs of dynamic_weight mode."""
        need = 3 if self.bias_term else 2
        if len(bottoms) < need:
            log.error(
                "%s %r: dynamic_weight needs %d inputs, got %d", self.type, self.name, need, len(bottoms)
            )
            return None
        wm = bottoms[1]
        if wm.dims != 4:
            log.error("%s %r: dynamic weight blob must be 4-D, got dims %d", self.type, self.name, wm.dims)
            return None
        # blob layout [inch][outch_g][kh][kw], inch running over the groups
        g = self.group
        inch, outch_g, kh, kw = wm.c, wm.d, wm.h, wm.w
        if inch % g:
            log.error("%s %r: weight blob of %d channels for %d groups", self.type, self.name, inch, g)
            return None
        w = np.asarray(wm.tensor(), dtype=np.float32).reshape(g, inch // g, outch_g, kh * kw)
        wt = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(g, outch_g * kh * kw, inch // g)
        bias = None
        if self.bias_term:
            bias = np.asarray(bottoms[2].tensor(), dtype=np.float32).reshape(-1)
            if bias.size != outch_g * g:
                log.error(
                    "%s %r: bias blob of %d values for %d outputs",
                    self.type,
                    self.name,
                    bias.size,
                    outch_g * g,
                )
                return None
        return wt, bias, kw, kh

    # -- geometry -------------------------------------------------------------------------
    def deconv_geometry(
        self, w: int, h: int, kernel_w: int, kernel_h: int
    ) -> tuple[int, int, tuple[int, int, int, int]] | None:
        """(full_w, full_h, (top, bottom, left, right) crop) for a w x h input, None if it cannot work.

        As ncnn: positive pads crop; otherwise output_w/output_h with SAME pads (-233 puts the
        odd cut at the end, -234 at the start) crop to that size; otherwise nothing is cropped.
        """
        full_h, full_w = transposed_shape(
            (h, w),
            (kernel_extent(kernel_h, self.dilation_h), kernel_extent(kernel_w, self.dilation_w)),
            (self.stride_h, self.stride_w),
            (self.output_pad_bottom, self.output_pad_right),
        )
        pads = (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom)
        crop = (0, 0, 0, 0)
        if any(p > 0 for p in pads):
            crop = (self.pad_top, self.pad_bottom, self.pad_left, self.pad_right)
        elif self.output_w > 0 and self.output_h > 0:
            wcut, hcut = full_w - self.output_w, full_h - self.output_h
            if wcut < 0 or hcut < 0:
                log.error(
                    "%s %r: output %dx%d larger than the full deconvolution %dx%d",
                    self.type,
                    self.name,
                    self.output_w,
                    self.output_h,
                    full_w,
                    full_h,
                )
                return None
            if PAD_SAME_UPPER in pads:
                crop = (hcut // 2, hcut - hcut // 2, wcut // 2, wcut - wcut // 2)
            elif PAD_SAME_LOWER in pads:
                crop = (hcut - hcut // 2, hcut // 2, wcut - wcut // 2, wcut // 2)
            else:
                # ncnn produces no output here (its cut_padding leaves the top empty)
                log.error("%s %r: output_w/output_h need SAME pads (-233/-234)", self.type, self.name)
                return None
        t, b, l, r = crop
        if full_w - l - r <= 0 or full_h - t - b <= 0:
            log.error(
                "%s %r: pads %s leave nothing of a %dx%d output", self.type, self.name, crop, full_w, full_h
            )
            return None
        return full_w, full_h, crop

    # -- forward --------------------------------------------------------------------------
    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            if self.dynamic_weight:
                got = self._dynamic_weights(bottom)
                if got is None:
                    return -1
                return self._forward(bottom[0], top[0], opt, *got)
            bottom, top = bottom[0], top[0]
        if self.dynamic_weight:
            log.error("%s %r: dynamic_weight needs the weight blob as an input", self.type, self.name)
            return -1
        wt, bias = self._derived("_wt", "_bias")  # one read under the weights' lock (WeightBias)
        return self._forward(bottom, top, opt, wt, bias, self.kernel_w, self.kernel_h)

    def _forward(self, bottom: Mat, top: Mat, opt, wt: np.ndarray, bias, kernel_w: int, kernel_h: int) -> int:
        if bottom.dims != 3 or bottom.elempack != 1:
            log.error(
                "%s %r: needs a 3-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.type,
                self.name,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        groups, rows, inch_g = wt.shape
        x = bottom.tensor()
        inch, h, w = x.shape
        if inch != groups * inch_g:
            log.error(
                "%s %r: %d input channels, weights expect %d", self.type, self.name, inch, groups * inch_g
            )
            return -1
        geom = self.deconv_geometry(w, h, kernel_w, kernel_h)
        if geom is None:
            return -1
        full_w, full_h, (t, b, l, r) = geom
        maxk = kernel_w * kernel_h
        outch = groups * (rows // maxk)

        # one product for all kernel taps: cols[(o, ky, kx), pixel]
        xg = x.reshape(groups, inch_g, h * w)
        if inch_g == 1 and rows == maxk:
            # depthwise: a K=1 product is just a broadcast multiply
            cols = wt * xg
        else:
            cols = np.matmul(wt, xg)
        cols5 = cols.reshape(outch, kernel_h, kernel_w, h, w)

        top.create(
            full_w - l - r, full_h - t - b, outch, elemsize=4, elempack=1, allocator=opt.blob_allocator
        )
        if top.empty():
            return -100
        dst = top.tensor()
        cropped = (t, b, l, r) != (0, 0, 0, 0)
        keep, full = workspace(opt, (outch, full_h, full_w)) if cropped else (None, dst)
        if bias is None:
            full.fill(0.0)
        else:
            full[...] = bias.reshape(-1, 1, 1)
        sh, sw, dh, dw = self.stride_h, self.stride_w, self.dilation_h, self.dilation_w
        span_h, span_w = (h - 1) * sh + 1, (w - 1) * sw + 1
        for ky in range(kernel_h):
            for kx in range(kernel_w):
                y0, x0 = ky * dh, kx * dw
                full[:, y0 : y0 + span_h : sh, x0 : x0 + span_w : sw] += cols5[:, ky, kx]
        if cropped:
            dst[...] = full[:, t : full_h - b, l : full_w - r]
        del keep
        fused_activation(dst, self.activation_type, self.activation_params)
        return 0
