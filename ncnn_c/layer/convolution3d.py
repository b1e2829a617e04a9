"""Convolution3D: convolution over d, h, w of a 4-D blob (fp32), and the N-D grouped
convolution its depthwise form and ConvolutionDepthWise1D reuse (they set ``AXES`` and add
param 7 = group).

Padding and output size come from ``Window`` (_geometry.py); the taps of every window are
gathered into one (group, inch_g * maxk, outsize) matrix and multiplied by the weights
stored [num_output][num_input / group][kd][kh][kw] — one product per group. With
dynamic_weight (ConvolutionDepthWise1D's param 19) the weights and bias come as input blobs.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import numpy as np

from . import Param, param_ref
from ._fused_activation import check_activation, fused_activation
from ._geometry import WINDOW_PARAMS, WeightBias, Window, show
from ._window_nd import create_top, pad_nd, taps

log = logging.getLogger("ncnn_c")


class Convolution3D(Window, WeightBias):
    AXES = "dhw"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_PARAMS,
        Param(24, "pad_front", "pad_left"),
        Param(17, "pad_behind", "pad_front"),
        Param(18, "pad_value", 0.0),
        Param(21, "kernel_d", "kernel_w"),
        Param(22, "dilation_d", "dilation_w"),
        Param(23, "stride_d", "stride_w"),
    )
    # Convolution3D is the one-group case; only ConvolutionDepthWise1D has dynamic weights
    group: int = 1
    dynamic_weight: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._weight: np.ndarray | None = None  # (group, outch_g, inch_g * maxk)
        self._bias: np.ndarray | None = None

    def _reject(self, key: str, why: str) -> int:
        log.error("%s %r: %s %s", self.type or type(self).__name__, self.name, param_ref(self, key), why)
        return -1

    def check_params(self) -> int:
        if check_activation(self) != 0:
            return -1
        # a dynamic weight blob brings the kernel and num_output (ncnn's own dynamic cases
        # leave params 0, 1 and 6 at 0)
        for name in ("dilation", "stride") if self.dynamic_weight else ("kernel", "dilation", "stride"):
            # w first: the other axes default to it, so a bad w is the param to name
            for a, v in reversed(list(zip(self.AXES, self._per_axis(name), strict=True))):
                if v <= 0:
                    return self._reject(f"{name}_{a}", f"must be positive, got {v}")
        if self.group <= 0:
            return self._reject("group", f"must be positive, got {self.group}")
        if self.dynamic_weight:
            # the weights (and bias) come as input blobs
            self.one_blob_only = False
            return 0
        if self.num_output <= 0 or self.num_output % self.group:
            return self._reject("num_output", f"{self.num_output} does not split into {self.group} groups")
        maxk = int(np.prod(self._per_axis("kernel")))
        if self.weight_data_size <= 0 or self.weight_data_size % (maxk * self.num_output):
            return self._reject(
                "weight_data_size",
                f"{self.weight_data_size} does not fit num_output {self.num_output} x kernel "
                f"{show(self._per_axis('kernel'))}",
            )
        return 0

    def _prepare(self) -> None:
        w = np.ascontiguousarray(self.weight_data.tensor(), dtype=np.float32).reshape(-1)
        self._weight = w.reshape(self.group, self.num_output // self.group, -1)
        self._bias = (
            np.asarray(self.bias_data.tensor(), dtype=np.float32).reshape(-1) if self.bias_term else None
        )

    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            if self.dynamic_weight:
                got = self._dynamic_weights(bottom)
                if got is None:
                    return -1
                return self._forward(bottom[0], top[0], opt, *got)
            bottom, top = bottom[0], top[0]
        weight, bias = self._derived("_weight", "_bias")  # one read under the weights' lock (WeightBias)
        return self._forward(bottom, top, opt, weight, bias, self._per_axis("kernel"))

    def _dynamic_weights(self, bottoms) -> tuple[np.ndarray, np.ndarray | None, tuple[int, ...]] | None:
        """(weight, bias, kernel) from the input blobs of dynamic_weight mode: the weight blob
        is (num_output, num_input / group, kernel_w), the bias blob (num_output,)."""
        need = 3 if self.bias_term else 2
        if len(bottoms) < need or bottoms[1].dims != 3:
            self._reject("dynamic_weight", f"needs {need} inputs with a 3-D weight blob")
            return None
        wm = np.asarray(bottoms[1].tensor(), dtype=np.float32)
        outch, _, kw = wm.shape
        if outch % self.group:
            self._reject("dynamic_weight", f"blob of {outch} outputs for {self.group} groups")
            return None
        weight = np.ascontiguousarray(wm).reshape(self.group, outch // self.group, -1)
        bias = None
        if self.bias_term:
            bias = np.asarray(bottoms[2].tensor(), dtype=np.float32).reshape(-1)
            if bias.size != outch:
                self._reject("dynamic_weight", f"bias blob of {bias.size} values for {outch} outputs")
                return None
        return weight, bias, (kw,)

    def _forward(
        self, bottom, top, opt, weight: np.ndarray, bias: np.ndarray | None, kernel: tuple[int, ...]
    ) -> int:
        ndim = len(self.AXES) + 1
        if bottom.dims != ndim or bottom.elempack != 1:
            log.error(
                "%s %r: needs a %d-D fp32 blob with elempack 1, got dims %d elempack %d",
                self.type,
                self.name,
                ndim,
                bottom.dims,
                bottom.elempack,
            )
            return -1
        x = np.asarray(bottom.tensor(), dtype=np.float32)
        maxk = int(np.prod(kernel))
        g, outch_g, k_in = weight.shape
        inch_g = k_in // maxk
        if x.shape[0] != g * inch_g:
            log.error(
                "%s %r: %d input channels, weights expect %d", self.type, self.name, x.shape[0], g * inch_g
            )
            return -1
        size = x.shape[1:]
        pads = self.pads(size, kernel)
        out = self.output_shape(size, pads, kernel)
        if out is None:
            return -1
        xp = pad_nd(x, pads, self.pad_value)
        cols = np.stack(
            list(taps(xp, kernel, self._per_axis("dilation"), self._per_axis("stride"), out)), axis=1
        )
        n = int(np.prod(out))
        outch = g * outch_g
        y = np.matmul(weight, cols.reshape(g, inch_g * maxk, n)).reshape(outch, n)
        if bias is not None:
            y += bias[:, None]
        fused_activation(y, self.activation_type, self.activation_params)
        dst = create_top(top, (outch, *out), opt)
        if dst is None:
            return -100
        dst[...] = y.reshape(dst.shape)
        return 0
