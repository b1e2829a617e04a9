"""DeformableConv2D (deformable convolution v1 / v2), fp32.

Inputs: the 3-D feature blob, the offsets (2 * kernel_h * kernel_w channels of the output
size: dy then dx per kernel tap) and, for v2, a mask (kernel_h * kernel_w channels) that
scales each tap. Every tap of every output position reads the input bilinearly at its
shifted location (corners outside the input read 0, locations beyond (-1, size) give 0);
the taps then meet the weights, stored [num_output][num_input][kh][kw], in one product.
Output size from ``_geometry.output_shape`` with the explicit pads (no SAME here, as ncnn).
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Param
from ._fused_activation import check_activation, fused_activation
from ._geometry import WINDOW_PARAMS, WeightBias, Window, output_shape, show
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")

F32 = np.float32


class DeformableConv2D(Window, WeightBias):
    AXES = "hw"
    PARAMS: ClassVar[tuple[Param, ...]] = (*WINDOW_PARAMS,)

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = False
        self.support_inplace = False
        self._weight: np.ndarray | None = None  # (num_output, num_input * maxk)
        self._bias: np.ndarray | None = None

    def check_params(self) -> int:
        if check_activation(self) != 0:
            return -1
        for name in ("kernel", "dilation", "stride"):
            for a, v in reversed(list(zip(self.AXES, self._per_axis(name), strict=True))):
                if v <= 0:
                    log.error("DeformableConv2D %r: %s_%s must be positive, got %d", self.name, name, a, v)
                    return -1
        if any(p < 0 for p in self.explicit_pads()):
            log.error(
                "DeformableConv2D %r: pad values %s must not be negative", self.name, self.explicit_pads()
            )
            return -1
        maxk = self.kernel_w * self.kernel_h
        if (
            self.num_output <= 0
            or self.weight_data_size <= 0
            or self.weight_data_size % (maxk * self.num_output)
        ):
            log.error(
                "DeformableConv2D %r: weight_data_size %d does not fit num_output %d x kernel %dx%d",
                self.name,
                self.weight_data_size,
                self.num_output,
                self.kernel_w,
                self.kernel_h,
            )
            return -1
        return 0

    def _prepare(self) -> None:
        w = np.ascontiguousarray(self.weight_data.tensor(), dtype=np.float32)
        self._weight = w.reshape(self.num_output, -1)
        self._bias = (
            np.asarray(self.bias_data.tensor(), dtype=np.float32).reshape(-1) if self.bias_term else None
        )

    def forward(self, bottoms, tops, opt) -> int:
        weight2d, bias = self._derived("_weight", "_bias")  # one read under the weights' lock (WeightBias)
        if len(bottoms) not in (2, 3) or any(b.dims != 3 or b.elempack != 1 for b in bottoms):
            log.error(
                "DeformableConv2D %r: needs 3-D fp32 input, offset (and mask) blobs, got %d blobs",
                self.name,
                len(bottoms),
            )
            return -1
        x = np.asarray(bottoms[0].tensor(), dtype=np.float32)
        c, h, w = x.shape
        kh, kw = self.kernel_h, self.kernel_w
        maxk = kh * kw
        if c * maxk != weight2d.shape[1]:
            log.error(
                "DeformableConv2D %r: %d input channels, weights expect %d",
                self.name,
                c,
                weight2d.shape[1] // maxk,
            )
            return -1
        pads = self.explicit_pads()
        out = output_shape((h, w), self.extents(), self._per_axis("stride"), pads)
        offset = np.asarray(bottoms[1].tensor(), dtype=np.float32)
        mask = np.asarray(bottoms[2].tensor(), dtype=np.float32) if len(bottoms) == 3 else None
        if (
            min(out) <= 0
            or offset.shape != (2 * maxk, *out)
            or (mask is not None and mask.shape != (maxk, *out))
        ):
            log.error(
                "DeformableConv2D %r: offset %s / mask %s do not fit %d taps of a %s output",
                self.name,
                offset.shape,
                None if mask is None else mask.shape,
                maxk,
                show(out),
            )
            return -1
        outh, outw = out
        sh, sw = self.stride_h, self.stride_w
        h_in = (np.arange(outh) * sh - pads[0]).astype(np.float32)[:, None]
        w_in = (np.arange(outw) * sw - pads[2]).astype(np.float32)[None, :]
        flat = x.reshape(c, -1)
        cols = np.empty((c, maxk, outh * outw), np.float32)
        for i in range(kh):
            for j in range(kw):
                k = i * kw + j
                him = h_in + F32(i * self.dilation_h) + offset[2 * k]
                wim = w_in + F32(j * self.dilation_w) + offset[2 * k + 1]
                inside = (him > -1) & (wim > -1) & (him < h) & (wim < w)
                hl, wl = np.floor(him), np.floor(wim)
                lh, lw = him - hl, wim - wl
                hh, hw = F32(1) - lh, F32(1) - lw
                hl, wl = hl.astype(np.int64), wl.astype(np.int64)
                val = np.zeros((c, outh, outw), np.float32)
                for dy, dx, weight in ((0, 0, hh * hw), (0, 1, hh * lw), (1, 0, lh * hw), (1, 1, lh * lw)):
                    yy, xx = hl + dy, wl + dx
                    ok = inside & (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
                    idx = np.clip(yy, 0, h - 1) * w + np.clip(xx, 0, w - 1)
                    val += flat[:, idx] * np.where(ok, weight, F32(0))
                if mask is not None:
                    val *= mask[k]
                cols[:, k] = val.reshape(c, -1)
        y = weight2d @ cols.reshape(c * maxk, -1)
        if bias is not None:
            y += bias[:, None]
        fused_activation(y, self.activation_type, self.activation_params)
        dst = create_top(tops[0], (self.num_output, outh, outw), opt)
        if dst is None:
            return -100
        dst[...] = y.reshape(dst.shape)
        return 0
