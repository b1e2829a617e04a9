"""The shared GPU form of the normalisations (GroupNorm, InstanceNorm, LayerNorm, Normalize):
statistics per segment, then one in-place apply pass.

A segment is what one mean and variance (or, for Normalize, one L2 norm) cover: a group of
channels, a channel (or the whole 1-D/2-D blob), a LayerNorm slice, one spatial position. ``meanvar_partial.comp`` reduces chunks of every segment
in parallel (one invocation per chunk, two passes over it: mean, then squared deviations);
with several chunks per segment ``meanvar_combine.comp`` merges them (Chan's update), and
``meanvar_apply.comp`` normalises every scalar and applies gamma/beta. All statistics are
fp32 whatever the storage or arithmetic type. Chunks keep every core busy on a few large
segments (InstanceNorm on 3 channels of 227x227) without shared memory or barriers, which a
CPU device (lavapipe) pays for dearly; segments within one chunk take two dispatches.

Each layer describes its blob as ``NormLayout`` from the CPU class's own checks (run on the
blob's logical, unpacked shape so they validate and log exactly as on the CPU). Packed
blobs (elempack 4) are read in place: channel ch is lane ch % 4 of packed line ch / 4.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import LOCAL_1D, VulkanLayer, shape4
from ._perchannel import logical_shape

__all__ = ["MeanVarNormVulkan", "NormLayout", "line_view", "logical_shape"]

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# values one partial invocation reduces
CHUNK = 1024
# the largest dispatch extent along y / z (Vulkan's guaranteed maxComputeWorkGroupCount)
MAX_GROUPS = 65535


# meanvar_apply's gamma/beta index: the channel (times gmul), the position in the slice, the segment
GAMMA_CHANNEL, GAMMA_POSITION, GAMMA_SEGMENT = 0, 1, 2


@dataclass
class NormLayout:
    """Where a blob's segments lie (see meanvar_partial.comp) and how the apply pass finds a
    value's segment (see meanvar_apply.comp)."""

    P: int  # lanes per packed line (1 or 4)
    lstride: int  # scalars from one packed line to the next
    rows: int  # packed lines
    n: int  # values of one channel in one segment
    spc: int  # segments (slices) per channel
    nch: int  # channels per segment
    gmul: int = 1  # 0: one gamma for every channel (GAMMA_CHANNEL)
    # the apply pass's (n, nslice, inv_nch, segmul) when not (n, spc, 1/nch, spc): Normalize
    # across channels walks whole channels and finds its segment by position (kseg)
    apply: tuple | None = None

    def apply_constants(self) -> list:
        n, nslice, inv_nch, segmul = self.apply or (self.n, self.spc, 1.0 / self.nch, self.spc)
        return [self.lstride // self.P, n, nslice, self.rows, inv_nch, segmul, self.gmul]


def line_view(m) -> tuple[int, int, int, int]:
    """(P, lstride, rows, values per channel) of ``m`` along ncnn's channel axis; a 1-D blob
    is one line (its lanes are consecutive scalars)."""
    p = m.elempack
    if m.dims == 1:
        return 1, m.w * p, 1, m.w * p
    if m.dims == 2:
        return p, m.w * p, m.h, m.w
    w, h, d, c, cstep = shape4(m)
    return p, cstep * p, c, w * h * d


class MeanVarNormVulkan(VulkanLayer):
    """Mixin for the normalisations; ``norm_layout`` describes the segments of a blob."""

    # statistics: 0 mean/variance, 1..3 Normalize's sum of squares with eps_mode 0..2, 4 the
    # mean of squares (RMSNorm)
    stats_mode = 0
    gamma_mode = GAMMA_CHANNEL
    # 1: a value's segment also counts its position (Normalize across channels only)
    kseg = 0
    eps: float

    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.gamma_gpu: VkMat | None = None
        self.beta_gpu: VkMat | None = None

    def norm_layout(self, m) -> NormLayout | None:
        """The segments of blob ``m``; None (logged) when the layer refuses it."""
        raise NotImplementedError

    def gamma_beta(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The fp32 gamma and beta arrays to upload; None where the layer has none."""
        raise NotImplementedError

    def create_pipeline_vk(self, opt) -> int:
        gamma, beta = self.gamma_beta()
        mode = [self.stats_mode]
        self.pipeline_partial = self.new_pipeline("meanvar_partial", opt, mode, LOCAL_1D)
        self.pipeline_combine = self.new_pipeline("meanvar_combine", opt, mode, LOCAL_1D, option_free=True)
        spec = [int(gamma is not None), int(beta is not None), self.gamma_mode, self.kseg]
        self.pipeline_apply = self.new_pipeline("meanvar_apply", opt, spec, LOCAL_1D)
        self.pipeline_apply_pack4 = None
        if opt.use_packing_layout:
            self.pipeline_apply_pack4 = self.new_pipeline("meanvar_apply_pack4", opt, spec, LOCAL_1D)
            if self.pipeline_apply_pack4 is None:
                return -1
        ok = self.pipeline_partial and self.pipeline_combine and self.pipeline_apply
        return 0 if ok else -1

    def upload_model(self, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat
        from ...mat import Mat

        gamma, beta = self.gamma_beta()
        self.gamma_gpu, self.beta_gpu = VkMat(), VkMat()
        for arr, vk in ((gamma, self.gamma_gpu), (beta, self.beta_gpu)):
            if arr is not None:
                cmd.record_upload(Mat(np.ascontiguousarray(arr, np.float32)), vk, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.gamma_gpu = None
        self.beta_gpu = None

    def forward_inplace_vk(self, bottom_top, cmd, opt) -> int:
        from ...gpu.vkmat import VkMat

        lay = self.norm_layout(bottom_top)
        if lay is None:
            return -1
        constants = lay.apply_constants()
        if lay.rows > MAX_GROUPS or constants[2] > MAX_GROUPS:
            log.error(
                "%s %r: %d lines of %d slices exceed one dispatch", self.type, self.name, lay.rows, lay.spc
            )
            return -1
        count = lay.nch * lay.n
        nseg = lay.rows * lay.P * lay.spc // lay.nch
        nchunks = -(-count // CHUNK)
        eps = float(np.float32(self.eps))

        stats = VkMat()
        stats.create(2 * nseg, allocator=opt.workspace_vkallocator)
        if stats.empty():
            return -100
        partial = stats
        if nchunks > 1:
            partial = VkMat()
            partial.create(2 * nseg * nchunks, allocator=opt.workspace_vkallocator)
            if partial.empty():
                return -100
        pc = [lay.P, lay.lstride, lay.n, lay.spc, lay.nch, nseg, CHUNK, nchunks, int(nchunks == 1), eps]
        cmd.record_pipeline(self.pipeline_partial, [bottom_top, partial], pc, (nseg * nchunks, 1, 1))
        if nchunks > 1:
            pc = [nseg, nchunks, CHUNK, count, eps]
            cmd.record_pipeline(self.pipeline_combine, [partial, stats], pc, (nseg, 1, 1))

        pipeline = self.pipeline_apply_pack4 if lay.P == 4 else self.pipeline_apply
        if pipeline is None:
            log.error("%s %r: a packed blob without the packed pipeline", self.type, self.name)
            return -1
        grid = (constants[1], constants[2], lay.rows)
        bindings = [bottom_top, stats, self.gamma_gpu, self.beta_gpu]
        cmd.record_pipeline(pipeline, bindings, constants, grid)
        return 0
