"""The shared GPU form of the per-channel layers (BatchNorm, Scale, Bias, PReLU): in-place
shaders computing ``x * mul[ch] + add[ch]`` or PReLU's ``x < 0 ? x * mul[ch] : x``, with fp32
coefficient buffers uploaded once: ``perchannel.comp`` on scalars (elempack 1, and 1-D blobs
of any packing), ``perchannel_pack4.comp`` on the vec4s of packed 2-D..4-D blobs. One
pipeline per coefficient mode a layer can meet (per row, per element, shared): the mode is a
specialization constant so that a row's coefficient load stays uniform over a work group
(on a CPU device, lavapipe, a load at a per-invocation index is a gather, several times
slower).

The CPU class stays the authority on which coefficients apply to a blob: the GPU forward
asks its ``channel_coeffs`` about the blob's logical (unpacked) shape, which validates and
logs exactly as on the CPU, and learns whether the operands are per channel or one scalar.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import numpy as np

from . import VulkanLayer, outer_extent, shape4

log = logging.getLogger("ncnn_c")


def logical_shape(m) -> Any:
    """``m`` as the elempack-1 blob the CPU checks reason about (dims, w, h, d, c, elempack);
    typed Any because it stands in for a Mat there."""
    w, h, c = m.w, m.h, m.c
    if m.dims == 1:
        w = outer_extent(m)
    elif m.dims == 2:
        h = outer_extent(m)
    else:
        c = outer_extent(m)
    return SimpleNamespace(dims=m.dims, w=w, h=h, d=m.d, c=c, elempack=1)


# perchannel.comp's coefficient modes
ROW, ELEMENT, SHARED = 0, 1, 2


def dispatch_rows(m) -> tuple[list[int], bool]:
    """(size, c, cstep) push constants for blob ``m`` and whether perchannel_pack4.comp runs
    it (packed 2-D..4-D: counted in packed elements) rather than perchannel.comp (scalars)."""
    p = m.elempack
    if m.dims == 1:
        return [m.w * p, 1, 0], False
    if m.dims == 2:
        return [m.w, m.h, m.w * (1 if p == 4 else p)], p == 4
    w, h, d, c, cstep = shape4(m)
    return [w * h * d, c, cstep], p == 4


def pad4(a: np.ndarray) -> np.ndarray:
    """``a`` as fp32, zero-padded to a multiple of 4 (read as vec4s by the pack4 shader)."""
    out = np.zeros(-(-len(a) // 4) * 4, np.float32)
    out[: len(a)] = a
    return out


class PerChannelVulkan(VulkanLayer):
    """Mixin for the per-channel layers; ``gpu_coeffs`` names the arrays to upload."""

    prelu = 0
    # the coefficient modes this layer's blobs can need (a pipeline each)
    chmodes: tuple[int, ...] = (ROW, ELEMENT)

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipelines_scalar: dict = {}
        self.pipelines_pack4: dict = {}
        self.mul_gpu = None
        self.add_gpu = None

    def gpu_coeffs(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(mul, add) fp32 arrays over every stored channel; None where the layer has none."""
        raise NotImplementedError

    def create_perchannel_pipelines(self, opt, has_mul: bool, has_add: bool) -> int:
        self.pipelines_scalar, self.pipelines_pack4 = {}, {}
        for mode in self.chmodes:
            spec = [self.prelu, int(has_mul), int(has_add), mode]
            self.pipelines_scalar[mode] = self.new_pipeline("perchannel", opt, spec)
            if opt.use_packing_layout and mode != ELEMENT:
                self.pipelines_pack4[mode] = self.new_pipeline("perchannel_pack4", opt, spec)
        pipelines = list(self.pipelines_scalar.values()) + list(self.pipelines_pack4.values())
        return 0 if all(pipelines) else -1

    def create_pipeline_vk(self, opt) -> int:
        mul, add = self.gpu_coeffs()
        return self.create_perchannel_pipelines(opt, mul is not None, add is not None)

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        mul, add = self.gpu_coeffs()
        for name, arr in (("mul_gpu", mul), ("add_gpu", add)):
            vk = VkMat()
            if arr is not None:
                cmd.record_upload(Mat(pad4(arr)), vk, opt)
            setattr(self, name, vk)
        return 0

    def release_gpu_data(self) -> None:
        self.mul_gpu = None
        self.add_gpu = None

    def record_perchannel(self, cmd, blob, mul, add, shared: bool) -> int:
        constants, packed = dispatch_rows(blob)
        mode = SHARED if shared else ELEMENT if blob.dims == 1 else ROW
        pipeline = (self.pipelines_pack4 if packed else self.pipelines_scalar).get(mode)
        if pipeline is None:
            log.error(
                "%s %r: no pipeline for a %d-D elempack %d blob",
                self.type,
                self.name,
                blob.dims,
                blob.elempack,
            )
            return -1
        cmd.record_pipeline(pipeline, [blob, mul, add], constants, (constants[0], constants[1], 1))
        return 0

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        coeffs = self.channel_coeffs(logical_shape(bottom_top))  # type: ignore[attr-defined]
        if coeffs is None:
            return -1
        shared = all(np.ndim(c) == 0 for c in coeffs)
        return self.record_perchannel(cmd, bottom_top, self.mul_gpu, self.add_gpu, shared)
