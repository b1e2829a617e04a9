"""Deconvolution3D: transposed convolution over d, h, w of a 4-D blob (fp32), and the N-D
grouped form that DeconvolutionDepthWise3D, Deconvolution1D and DeconvolutionDepthWise1D
reuse (they set ``AXES`` and add param 7 = group).

One product per group gives every input cell's contribution to each kernel tap; the taps are
then added into the full output with one strided slice-add each (as Deconvolution does in
2-D). The full size is ``_geometry.transposed_shape``; it is cropped as ncnn's cut_padding
does: by the pads when one is positive, else to ``output_<axis>`` (all of them set) with
SAME pads (-233 puts the odd cut after, -234 before), else not at all. Weights are stored
[group][num_output / group][num_input / group][kd][kh][kw]; with dynamic_weight (the 1-D
forms' param 28) they come as an input blob [num_input][num_output / group][kw], and the
bias as another.
"""

from __future__ import annotations

import itertools
import logging
from typing import ClassVar

import numpy as np

from . import Param, param_ref
from ._fused_activation import check_activation, fused_activation
from ._geometry import (
    PAD_SAME_LOWER,
    PAD_SAME_UPPER,
    WINDOW_PARAMS,
    WeightBias,
    Window,
    show,
    transposed_shape,
)
from ._window_nd import create_top

log = logging.getLogger("ncnn_c")

OUTPUT_PAD_NAMES = {"d": "output_pad_behind", "h": "output_pad_bottom", "w": "output_pad_right"}


class Deconvolution3D(Window, WeightBias):
    AXES = "dhw"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        *WINDOW_PARAMS,
        Param(24, "pad_front", "pad_left"),
        Param(17, "pad_behind", "pad_front"),
        Param(18, "output_pad_right", 0),
        Param(19, "output_pad_bottom", "output_pad_right"),
        Param(20, "output_pad_behind", "output_pad_right"),
        Param(21, "kernel_d", "kernel_w"),
        Param(22, "dilation_d", "dilation_w"),
        Param(23, "stride_d", "stride_w"),
        Param(25, "output_w", 0),
        Param(26, "output_h", "output_w"),
        Param(27, "output_d", "output_w"),
    )
    # Deconvolution3D is the one-group case; only the 1-D forms have dynamic weights
    group: int = 1
    dynamic_weight: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False
        self._wt: np.ndarray | None = None  # (group, outch_g * maxk, inch_g)
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
        for a in self.AXES:
            if getattr(self, OUTPUT_PAD_NAMES[a]) < 0:
                return self._reject(OUTPUT_PAD_NAMES[a], "must not be negative")
        pads = self.explicit_pads()
        if any(p < 0 and p not in (PAD_SAME_UPPER, PAD_SAME_LOWER) for p in pads) or (
            any(p > 0 for p in pads) and any(p < 0 for p in pads)
        ):
            return self._reject("pad", f"values {pads} are not supported")
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
        g, maxk = self.group, int(np.prod(self._per_axis("kernel")))
        outch_g = self.num_output // g
        w = np.ascontiguousarray(self.weight_data.tensor(), dtype=np.float32).reshape(g, outch_g, -1, maxk)
        self._wt = np.ascontiguousarray(w.transpose(0, 1, 3, 2)).reshape(g, outch_g * maxk, -1)
        self._bias = (
            np.asarray(self.bias_data.tensor(), dtype=np.float32).reshape(-1) if self.bias_term else None
        )

    def crop(self, full: tuple[int, ...]) -> tuple[int, ...] | None:
        """Flat (before, after) cuts of the full output per axis (ncnn's cut_padding); None,
        logged, when they cannot work."""
        pads = self.explicit_pads()
        outs = self._per_axis("output", 0)
        cut: tuple[int, ...] = (0,) * len(pads)
        if any(p > 0 for p in pads):
            cut = pads
        elif all(o > 0 for o in outs):
            extra = [f - o for f, o in zip(full, outs, strict=True)]
            if min(extra) < 0:
                self._reject(
                    "output size", f"{show(outs)} is larger than the full deconvolution {show(full)}"
                )
                return None
            if PAD_SAME_UPPER in pads:
                cut = tuple(v for e in extra for v in (e // 2, e - e // 2))
            elif PAD_SAME_LOWER in pads:
                cut = tuple(v for e in extra for v in (e - e // 2, e // 2))
            else:
                # ncnn leaves the top empty here
                self._reject("output size", "needs SAME pads (-233/-234)")
                return None
        if any(f - cut[2 * i] - cut[2 * i + 1] <= 0 for i, f in enumerate(full)):
            self._reject("pad", f"values {cut} leave nothing of a {show(full)} output")
            return None
        return cut

    def forward(self, bottom, top, opt) -> int:
        if isinstance(bottom, list):
            if self.dynamic_weight:
                got = self._dynamic_weights(bottom)
                if got is None:
                    return -1
                return self._forward(bottom[0], top[0], opt, *got)
            bottom, top = bottom[0], top[0]
        wt, bias = self._derived("_wt", "_bias")  # one read under the weights' lock (WeightBias)
        return self._forward(bottom, top, opt, wt, bias, self._per_axis("kernel"))

    def _dynamic_weights(self, bottoms) -> tuple[np.ndarray, np.ndarray | None, tuple[int, ...]] | None:
        """(wt, bias, kernel) from the input blobs of dynamic_weight mode: the weight blob is
        (num_input, num_output / group, kernel_w), num_input running over the groups; the bias
        blob (num_output,)."""
        need = 3 if self.bias_term else 2
        if len(bottoms) < need or bottoms[1].dims != 3:
            self._reject("dynamic_weight", f"needs {need} inputs with a 3-D weight blob")
            return None
        wm = np.asarray(bottoms[1].tensor(), dtype=np.float32)
        inch, outch_g, kw = wm.shape
        g = self.group
        if inch % g:
            self._reject("dynamic_weight", f"blob of {inch} inputs for {g} groups")
            return None
        w = wm.reshape(g, inch // g, outch_g, kw)
        wt = np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(g, outch_g * kw, inch // g)
        bias = None
        if self.bias_term:
            bias = np.asarray(bottoms[2].tensor(), dtype=np.float32).reshape(-1)
            if bias.size != g * outch_g:
                self._reject("dynamic_weight", f"bias blob of {bias.size} values for {g * outch_g} outputs")
                return None
        return wt, bias, (kw,)

    def _forward(
        self, bottom, top, opt, wt: np.ndarray, bias: np.ndarray | None, kernel: tuple[int, ...]
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
        g, rows, inch_g = wt.shape
        if x.shape[0] != g * inch_g:
            log.error(
                "%s %r: %d input channels, weights expect %d", self.type, self.name, x.shape[0], g * inch_g
            )
            return -1
        size = x.shape[1:]
        dilation, stride = self._per_axis("dilation"), self._per_axis("stride")
        output_pads = tuple(int(getattr(self, OUTPUT_PAD_NAMES[a])) for a in self.AXES)
        full = transposed_shape(size, self.extents(kernel), stride, output_pads)
        cut = self.crop(full)
        if cut is None:
            return -1
        outch = g * rows // int(np.prod(kernel))
        cols = np.matmul(wt, x.reshape(g, inch_g, -1)).reshape(outch, *kernel, *size)
        acc = np.zeros((outch, *full), dtype=np.float32)
        if bias is not None:
            acc += bias.reshape((-1,) + (1,) * len(size))
        for offs in itertools.product(*(range(k) for k in kernel)):
            where = tuple(
                slice(o * d, o * d + s * (n - 1) + 1, s)
                for o, d, s, n in zip(offs, dilation, stride, size, strict=True)
            )
            acc[(slice(None),) + where] += cols[(slice(None),) + offs]
        acc = acc[(slice(None),) + tuple(slice(cut[2 * i], f - cut[2 * i + 1]) for i, f in enumerate(full))]
        dst = create_top(top, acc.shape, opt)
        if dst is None:
            return -100
        dst[...] = acc
        fused_activation(dst, self.activation_type, self.activation_params)
        return 0
