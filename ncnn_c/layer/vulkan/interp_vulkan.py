"""Interp on the GPU: nearest, bilinear and bicubic resizing of 1-D..3-D blobs (sizes from
the params or a reference blob) in one interp.comp dispatch; any elempack in, ncnn's
elempack for the output shape out.

Source indices and weights decide which pixels are read, and the PyPI ncnn computes them
with a mix of float and double arithmetic, so they are not recomputed in the shader: the
CPU layer's own coefficient code builds per-axis tap tables (clamped source indices, then
weights) for each forward, and a small upload carries them. The shader sums taps in the
CPU layer's order (rows first, then columns).

A size expression (param 9) is evaluated on the host: such an Interp stays on the CPU."""

from __future__ import annotations

import logging

import numpy as np

from ..interp import Interp, _taps, cubic_coeffs, linear_coeffs, nearest_index
from . import VulkanLayer
from ._remap import LogicalDims, create_top, logical_shape, new_remap_pipelines, record_remap

log = logging.getLogger("ncnn_c")


def _table(taps) -> np.ndarray:
    """(out, 2T) rows of T source indices then T weights, from _taps' per-tap arrays."""
    idx = np.stack([i for i, _ in taps], axis=1).astype(np.float32)
    wt = np.stack([w for _, w in taps], axis=1).astype(np.float32)
    return np.concatenate([idx, wt], axis=1)


class Interp_vulkan(VulkanLayer, Interp):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True

    def check_params(self) -> int:
        ret = super().check_params()
        self.support_vulkan = self._size_expr is None
        return ret

    def create_pipeline_vk(self, opt) -> int:
        # taps per axis: nearest 1, bilinear 2, bicubic 4 (fixed loops the compiler unrolls)
        taps = {2: 2, 3: 4}.get(self.resize_type, 1)
        self.pipelines_interp = new_remap_pipelines(self, "interp", opt, [taps])
        return 0 if self.pipelines_interp else -1

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if isinstance(bottom, list):
            if len(bottom) != 2 or len(top) != 1:
                log.error(
                    "Interp %r: needs an input and a reference blob, got %d inputs", self.name, len(bottom)
                )
                return -1
            ref = LogicalDims(bottom[1])
            return self._resize_vk(bottom[0], top[0], ref.w, ref.h, cmd, opt, True)
        if bottom.dims == 1:
            w, h = 1, 1
        else:
            w, h = LogicalDims(bottom).w, LogicalDims(bottom).h
        outw, outh = self.output_width, self.output_height
        if outw == 0 or outh == 0:
            outw = int(np.float32(w) * np.float32(self.width_scale))
            outh = int(np.float32(h) * np.float32(self.height_scale))
        return self._resize_vk(bottom, top, outw, outh, cmd, opt, False)

    def _resize_vk(self, bottom, top, outw: int, outh: int, cmd, opt, dynamic: bool) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        dims = bottom.dims
        if dims not in (1, 2, 3):
            log.error("Interp %r: needs a 1-D..3-D blob, got dims %d", self.name, dims)
            return -1
        if outw <= 0 or (dims != 2 and outh <= 0):
            log.error("Interp %r: output size %dx%d is empty", self.name, outw, outh)
            return -1
        shape = logical_shape(bottom)
        if dims == 1:
            # every value becomes a constant output plane
            ret = create_top(top, (shape[0], outh, outw), bottom, opt)
            if ret:
                return ret
            return record_remap(self, cmd, self.pipelines_interp, [bottom, top, None], bottom, top, [0, 0, 1])
        h, w = shape[-2:]
        if dims == 2:
            outh = h
        if outw == w and outh == h:
            top.share_from(bottom)
            return 0
        if self.resize_type == 0:
            log.error("Interp %r: resize_type 0 cannot resize %dx%d to %dx%d", self.name, w, h, outw, outh)
            return -1
        step_y, step_x = self._steps(dynamic)
        if self.resize_type == 1:
            xt = _table([(nearest_index(w, outw, step_x), np.ones(outw, np.float32))])
            yt = _table([(nearest_index(h, outh, step_y), np.ones(outh, np.float32))])
        else:
            coeffs, first = (linear_coeffs, 0) if self.resize_type == 2 else (cubic_coeffs, -1)
            xt = _table(_taps(*coeffs(w, outw, self.align_corner, step_x), first, w))
            yt = _table(_taps(*coeffs(h, outh, self.align_corner, step_y), first, h))
        ret = create_top(top, shape[:-2] + (outh, outw), bottom, opt)
        if ret:
            return ret
        table = VkMat()
        # a 2-D blob keeps its rows: the y table goes unread
        tables = xt.reshape(-1) if dims == 2 else np.concatenate([xt.reshape(-1), yt.reshape(-1)])
        cmd.record_upload(Mat(tables), table, opt)
        constants = [xt.size, int(dims == 2), 0]
        return record_remap(self, cmd, self.pipelines_interp, [bottom, top, table], bottom, top, constants)
