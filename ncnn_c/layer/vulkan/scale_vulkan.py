"""Scale on the GPU, in place, through the shared perchannel.comp: stored scales (with or
without bias), or the two-input form (scale_data_size -233) whose scales are a second blob.

That blob is bound as the shader's fp32 coefficient buffer directly when it is a 1-D fp32
blob (a packed element's lanes are consecutive scalars, so its elempack does not matter);
otherwise it goes through the shared layout conversion to fp32 elempack 1 first. Scale
blobs of 3-D/4-D (whose channel padding would sit between the scales) are refused.
"""

from __future__ import annotations

import logging

import numpy as np

from ..scale import Scale
from . import is_fp16, outer_extent, record_convert
from ._perchannel import PerChannelVulkan, logical_shape

log = logging.getLogger("ncnn_c")


class Scale_vulkan(PerChannelVulkan, Scale):
    def gpu_coeffs(self):
        if not self.one_blob_only:
            return None, None
        return self.scale_data, (self.bias_data if self.bias_term else None)

    def create_pipeline_vk(self, opt) -> int:
        if self.one_blob_only:
            return super().create_pipeline_vk(opt)
        self.pipeline_packing = self.new_packing_pipeline(opt)
        if self.pipeline_packing is None:
            return -1
        return self.create_perchannel_pipelines(opt, True, False)

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        if not isinstance(bottom, list):
            return super().forward_vk(bottom, top, cmd, opt)
        # one top for two bottoms: scale a copy of the first, read the second as it is
        cmd.record_clone(bottom[0], top[0], opt)
        return self.forward_inplace_vk([top[0], *bottom[1:]], cmd, opt)

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        if not isinstance(bottom_top, list):
            return super().forward_inplace_vk(bottom_top, cmd, opt)
        if len(bottom_top) != 2:
            log.error("Scale %r: scales from a blob need 2 inputs, got %d", self.name, len(bottom_top))
            return -1
        x, s = bottom_top
        if s.dims not in (1, 2):
            log.error("Scale %r: the scale blob must be 1-D or 2-D on the GPU, got %d-D", self.name, s.dims)
            return -1
        n = outer_extent(s) * (s.w if s.dims == 2 else 1)
        # the CPU helper validates the count and logs as on the CPU
        if self._coeffs(logical_shape(x), np.empty(n, np.float32)) is None:
            return -1
        if s.dims != 1 or is_fp16(s):
            flat = type(s)()
            record_convert(cmd, self.pipeline_packing, s, flat, 1, False, opt)
            s = flat
        return self.record_perchannel(cmd, x, s, type(s)(), False)
