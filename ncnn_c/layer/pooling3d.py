"""Pooling3D: max / average pooling over d, h, w of a 4-D blob (fp32) — global, adaptive and
windowed with ncnn's pad modes — and the N-D form Pooling1D reuses (``AXES = "w"``).

As Pooling (pooling.py): pad_mode 0 extends the trailing pads so the last partial window
still produces an output, 1 pads as the params say, 2 / 3 compute SAME pads. An average
without count_include_pad divides by the cells of each window inside [pad_before,
padded - pad_after - tail) per axis, the pads being the layer's params (so in modes 2 / 3
the computed SAME pads count as cells, as ncnn does).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from . import Param, param_ref
from ._geometry import PAD_NAMES, Window, same_padding
from ._window_nd import adaptive_reduce, create_top, pad_nd, taps
from .pooling import FLT_MAX, _overlap, _tail_pad

log = logging.getLogger("ncnn_c")


class Pooling3D(Window):
    AXES = "dhw"
    PARAMS: ClassVar[tuple[Param, ...]] = (
        Param(0, "pooling_type", 0),
        Param(1, "kernel_w", 0),
        Param(2, "stride_w", 1),
        Param(3, "pad_left", 0),
        Param(4, "global_pooling", 0),
        Param(5, "pad_mode", 0),
        Param(6, "avgpool_count_include_pad", 0),
        Param(7, "adaptive_pooling", 0),
        Param(8, "out_w", 0),
        Param(11, "kernel_h", "kernel_w"),
        Param(12, "stride_h", "stride_w"),
        Param(13, "pad_top", "pad_left"),
        Param(14, "pad_right", "pad_left"),
        Param(15, "pad_bottom", "pad_top"),
        Param(23, "pad_front", "pad_top"),
        Param(16, "pad_behind", "pad_front"),
        Param(18, "out_h", "out_w"),
        Param(21, "kernel_d", "kernel_w"),
        Param(22, "stride_d", "stride_w"),
        Param(28, "out_d", "out_w"),
    )

    def __init__(self) -> None:
        super().__init__()
        self.one_blob_only = True
        self.support_inplace = False

    def _reject(self, key: str, why: str) -> int:
        log.error("%s %r: %s %s", self.type or type(self).__name__, self.name, param_ref(self, key), why)
        return -1

    def check_params(self) -> int:
        if self.pooling_type not in (0, 1):
            return self._reject("pooling_type", f"{self.pooling_type} is not 0 (max) or 1 (avg)")
        if self.pad_mode not in (0, 1, 2, 3):
            return self._reject("pad_mode", f"{self.pad_mode} is not 0, 1, 2 or 3")
        if self.global_pooling:
            return 0
        if self.adaptive_pooling:
            for a, v in zip(self.AXES, self._per_axis("out", 0), strict=True):
                if v <= 0:
                    return self._reject(f"out_{a}", f"must be positive for adaptive pooling, got {v}")
            return 0
        for name in ("kernel", "stride"):
            # w first: the other axes default to it, so a bad w is the param to name
            for a, v in reversed(list(zip(self.AXES, self._per_axis(name), strict=True))):
                if v <= 0:
                    return self._reject(f"{name}_{a}", f"must be positive, got {v}")
        return 0

    def pads(self, size: Sequence[int], kernel: Sequence[int] | None = None) -> tuple[int, ...]:
        """Flat (before, after) pads per axis for an input of spatial ``size``, per pad_mode."""
        if self.pad_mode in (2, 3):
            upper = same_padding(size, self.extents(), self._per_axis("stride"), True)
            if self.pad_mode == 2:
                return upper
            lower = same_padding(size, self.extents(), self._per_axis("stride"), False)
            # ncnn's Pooling3D pads depth the SAME_UPPER way in SAME_LOWER mode too
            return upper[:2] + lower[2:] if self.AXES == "dhw" else lower
        pads = list(self.explicit_pads())
        if self.pad_mode == 0:
            for i, (n, k, s) in enumerate(
                zip(size, self._per_axis("kernel"), self._per_axis("stride"), strict=True)
            ):
                pads[2 * i + 1] += _tail_pad(n + pads[2 * i] + pads[2 * i + 1] - k, s)
        return tuple(pads)

    def forward(self, bottom, top, opt) -> int:
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
        is_max = self.pooling_type == 0
        c = x.shape[0]
        if self.global_pooling:
            flat = x.reshape(c, -1)
            y = flat.max(axis=1) if is_max else flat.sum(axis=1, dtype=np.float32) / np.float32(flat.shape[1])
            dst = create_top(top, (c,), opt)
            if dst is None:
                return -100
            dst[...] = y
            return 0
        if self.adaptive_pooling:
            y = x
            for i, o in enumerate(self._per_axis("out", 0)):
                y = adaptive_reduce(y, i + 1, o, is_max)
            dst = create_top(top, y.shape, opt)
            if dst is None:
                return -100
            dst[...] = y
            return 0
        return self._windowed(x, top, is_max, opt)

    def _windowed(self, x: np.ndarray, top, is_max: bool, opt) -> int:
        size = x.shape[1:]
        kernel, stride = self._per_axis("kernel"), self._per_axis("stride")
        pads = self.pads(size)
        out = self.output_shape(size, pads)
        if out is None:
            return -1
        xp = pad_nd(x, pads, -FLT_MAX if is_max else 0.0)
        exclude_pad = not is_max and not self.avgpool_count_include_pad
        region = []
        if exclude_pad:
            # the counted cells: inside the layer's own pads, without pad_mode 0's tail
            xp = xp.copy() if xp is x else xp
            for i, a in enumerate(self.AXES):
                before, after = (int(getattr(self, p)) for p in PAD_NAMES[a])
                n = xp.shape[i + 1]
                tail = n - size[i] - before - after if self.pad_mode == 0 else 0
                lo, hi = before, n - after - tail
                region.append((lo, hi))
                index: list[slice] = [slice(None)] * xp.ndim
                index[i + 1] = slice(0, max(lo, 0))
                xp[tuple(index)] = 0.0
                index[i + 1] = slice(max(hi, 0), None)
                xp[tuple(index)] = 0.0
        acc: np.ndarray | None = None
        for tap in taps(xp, kernel, (1,) * len(kernel), stride, out):
            if acc is None:
                acc = tap.copy()
            elif is_max:
                np.maximum(acc, tap, out=acc)
            else:
                acc += tap
        assert acc is not None
        if not is_max:
            if exclude_pad:
                area = np.ones((), np.int64)
                for i, (lo, hi) in enumerate(region):
                    counts = _overlap(np.arange(out[i]) * stride[i], kernel[i], lo, hi)
                    area = np.multiply.outer(area, counts)
                # a window wholly outside the region gives 0/0 = nan, as in ncnn
                with np.errstate(invalid="ignore", divide="ignore"):
                    acc /= area.astype(np.float32)
            else:
                acc /= np.float32(np.prod(kernel))
        dst = create_top(top, acc.shape, opt)
        if dst is None:
            return -100
        dst[...] = acc
        return 0
