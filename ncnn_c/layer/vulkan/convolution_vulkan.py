"""Convolution on the GPU: register-tiled direct convolution with in-shader padding and fused activation.

Pads (including SAME -233/-234, resolved from the input size at forward time) never
materialise a bordered copy: the shader reads pad_value for taps outside the input.
A 1x1 stride-1 unpadded convolution uses the shader's flat variant.

Each invocation computes T output positions x 4*G output channels (``tile_w`` and
``out_groups``, chosen per device type in ``_tile_shape``), so the weights are uploaded as [outc/(4G)][c][kh*kw][G][4]
(one vec4 load per tap gives 4 output channels) and the bias as [outc/(4G)][G][4], both
zero-filled past num_output.
Weights that fp16 holds exactly (a model stored as fp16) are uploaded as halves: half
the weight loads, bit-identical results.

Packing follows ncnn's convention: with use_packing_layout the layer reads elempack 4 when
its input channel count divides by 4 (convolution_pack4.comp, weights as
[outc/(4G)][inc/4][kh*kw][G][4 in][4 out]) and writes elempack 4 when num_output does
(out_pack4 in either shader), so a packed network never converts around a convolution. A
bottom in the other packing (its producer could not pack) is converted first by the
net's shared layout pipeline.

On a GPU, a big elempack 4 -> 4 layer runs as an implicit GEMM instead
(convolution_pack4_gemm.comp): a work group computes an output-channel x position tile,
staging weight and gathered input slices in shared memory (see ``_use_gemm`` for when,
``GEMM_TILE`` for the tile, ``_upload_gemm`` for its weight layout). ``GEMM_POLICY``
(or the environment variable NCNN_C_CONV_GEMM) forces it on or off, e.g. to test it on
lavapipe.

A kernel whose row window would exceed MAX_WINDOW inputs (a ViT's 32x32 stride-32 patch
embedding) reads its taps one by one instead (``direct_taps``). A 1-D bottom of a 1x1
convolution, ncnn's deprecated form, runs as an InnerProduct would: reshaped to c x 1 x 1,
convolved, reshaped back to 1-D (``_forward_flat_vk``).
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

import numpy as np

from .._fused_activation import activation_specs
from ..convolution import Convolution
from . import (
    LOCAL_1D,
    LOCAL_2D,
    VulkanLayer,
    elemsize_for,
    fp16_exact,
    is_fp16,
    shader_policy,
    upload_weights,
)
from ._int8 import Int8Passes
from ._remap import PAIRS, record_reshape

if TYPE_CHECKING:
    from ...gpu.vkmat import VkMat

log = logging.getLogger("ncnn_c")

# the shaders' code for ncnn's piecewise linear activations (0 none, 1 ReLU, 2 leaky ReLU,
# 3 clip) taken from push constants
_ACT_RUNTIME = 7


def activation_constants(layer) -> tuple[list, list[float]]:
    """(specialization constants activation_type, param 0, param 1; push constants slope,
    lo, hi) of a Convolution's fused activation.

    None, ReLU, leaky ReLU and clip are one code whose slope and bounds are push constants:
    layers that differ only in them share a pipeline (on lavapipe each convolution pipeline
    costs 20-30 ms in every load_model). Sigmoid, Mish and HardSwish stay specialization
    constants. ConvolutionDepthWise keeps all of them specialization constants: its few
    taps per output make the runtime selects cost 15-25 % of a 3x3 depthwise layer on
    lavapipe (measured per layer), more than the build they would save."""
    spec = activation_specs(layer.activation_type, layer._act)
    t, a0, a1 = spec
    inf = float("inf")
    if t in (0, 1, 2, 3):
        slope, lo, hi = 1.0, -inf, inf
        if t == 1:
            lo = 0.0
        elif t == 2:
            slope = a0
        elif t == 3:
            lo, hi = a0, a1
        return [_ACT_RUNTIME, 0.0, 0.0], [slope, lo, hi]
    return spec, [1.0, -inf, inf]


# When an elempack 4 -> 4 layer runs as an implicit GEMM: "auto" (a non-CPU device and a
# big enough layer, see _use_gemm), "always" (every such layer, any device: for testing it
# on lavapipe) or "never". Read at create_pipeline; the environment variable
# NCNN_C_CONV_GEMM overrides it.
GEMM_POLICY = "auto"
# "auto" thresholds: at least this many output channels and input channels x taps. Below
# them a GEMM tile is mostly padding (outc 8..28 fills under half of a 32-channel tile) and
# the K loop is a step or two, so the shared-memory staging and barriers buy nothing.
GEMM_MIN_OUTC = 32
GEMM_MIN_K = 64
# The GEMM tile: (invocations along positions, invocations along output vec4s, positions
# per invocation, output vec4s per invocation, taps per K step). The default is a 64-wide
# work group covering 32 positions x 32 channels (ncnn's shape for its GEMM convolution:
# small tiles keep batch-1 layers spread over many work groups) with 16 taps per step
# (two 8 KiB fp32 shared slices). Overridable as NCNN_C_CONV_GEMM_TILE="8,8,4,1,16".
GEMM_TILE = (8, 8, 4, 1, 16)
# The longest row window (inputs per row of taps of one tile) the direct shaders stage in
# private arrays; a longer one reads its taps directly. Measured on lavapipe: 128-input windows
# went wrong from 16 input channels, 64-input ones from 64 channels, 256 from 6 (the failure
# grows with the window and, oddly, the channel count; 35..37-input windows were right at
# every size tried). Common kernels stay under it: 3x3 stride 2 and 7x7 stride 2 at 16
# positions stage 33 and 37 inputs.
MAX_WINDOW = 40


def gemm_policy() -> str:
    """GEMM_POLICY, or NCNN_C_CONV_GEMM when set; ValueError for anything else."""
    return shader_policy("NCNN_C_CONV_GEMM", GEMM_POLICY)


def gemm_tile() -> tuple[int, int, int, int, int]:
    """GEMM_TILE, or NCNN_C_CONV_GEMM_TILE when set, checked: ValueError if a step's shared
    slices do not split evenly over the work group."""
    env = os.environ.get("NCNN_C_CONV_GEMM_TILE", "").strip()
    try:
        tile = tuple(int(v) for v in env.split(",")) if env else tuple(GEMM_TILE)
    except ValueError:
        raise ValueError(f"NCNN_C_CONV_GEMM_TILE must be 5 integers, got {env!r}") from None
    if len(tile) != 5 or min(tile) < 1:
        raise ValueError(f"the GEMM tile must be 5 positive integers, got {tile}")
    inv_n, inv_m, pos, vec4s, kb = tile
    lsize = inv_n * inv_m
    if (kb * inv_n * pos) % lsize or (kb * 4 * inv_m * vec4s) % lsize:
        raise ValueError(
            f"GEMM tile {tile}: a step's input and weight slices must split evenly over {lsize} invocations"
        )
    return inv_n, inv_m, pos, vec4s, kb


class Convolution_vulkan(VulkanLayer, Convolution):
    def __init__(self) -> None:
        super().__init__()
        self.support_fp16_storage = True
        self.support_packing = True
        self.pipeline_convolution = None
        self.pipeline_packing = None
        self._in_pack4 = False
        self._out_pack4 = False
        self.weight_data_gpu: VkMat | None = None
        self.bias_data_gpu: VkMat | None = None
        self._flat = False
        self._out_groups = 2
        self._tile_w = 8
        self._weight_fp16 = False
        self._weight_halves: np.ndarray | None = None  # the fp16 weights, from the check to the upload
        self._gemm = False
        self._gemm_tile = GEMM_TILE
        self.pipelines_reshape: dict = {}
        self._flat_warned = False
        self._int8_passes: Int8Passes | int | None = None

    def _is_flat_1x1(self) -> bool:
        # SAME pads of a 1x1 stride-1 kernel are always zero
        return (
            self.kernel_w == self.kernel_h == 1
            and self.stride_w == self.stride_h == 1
            and not any(p > 0 for p in (self.pad_left, self.pad_right, self.pad_top, self.pad_bottom))
        )

    def create_pipeline_vk(self, opt) -> int:
        # int8 weights: the float shaders give the raw int32 sums, passes around them (_int8.py)
        self._int8_passes = Int8Passes.setup(self, opt, "_weight2d")
        if self._int8_passes == -1:
            return -1
        if isinstance(self._int8_passes, Int8Passes):
            opt = self._int8_passes.opt  # fp32 blobs: the raw int32 sums do not fit fp16
        act_spec, self._act_push = activation_constants(self)
        # unused params are normalised so that equivalent layers share one cached pipeline
        self._flat = self._is_flat_1x1()
        if self._flat:
            geometry = [1, 1, 1, 1, 1, 1]
        else:
            geometry = [
                self.kernel_w,
                self.kernel_h,
                self.dilation_w,
                self.dilation_h,
                self.stride_w,
                self.stride_h,
            ]
        packing = bool(opt.use_packing_layout)
        self._in_pack4 = packing and self.num_input() % 4 == 0
        self._out_pack4 = packing and self.num_output % 4 == 0
        self._tile_w, self._out_groups = self._tile_shape()
        try:
            self._gemm = self._use_gemm()
        except ValueError as e:
            log.error("Convolution %r: %s", self.name, e)
            return -1
        specs = geometry + [1 if self.bias_term else 0, *act_spec, int(self._flat)]
        self._weight_fp16 = self._weights_fit_fp16()
        if self._gemm:
            specs += [int(self._weight_fp16), *self._gemm_tile]
        else:
            specs += [self._out_groups, int(self._weight_fp16), self._tile_w, int(self._out_pack4)]
            specs += [int(self._direct_taps())]
        if packing:
            self.pipeline_packing = self.new_packing_pipeline(opt)
            if self.pipeline_packing is None:
                return -1
        if self.cpu_device() and opt.use_fp16_arithmetic:
            # llvmpipe emulates half arithmetic: fp32 accumulation is faster there (SqueezeNet
            # on lavapipe: 375 ms with fp16 arithmetic, 285 ms without) and more accurate
            opt = opt.copy()
            opt.use_fp16_arithmetic = False
        if self.kernel_w == self.kernel_h == 1:
            # ncnn's deprecated 1-D input (see _forward_flat_vk): built at its first use, if any
            pairs = PAIRS if packing else PAIRS[:1]
            self.pipelines_reshape = {
                pair: self.new_pipeline("reshape", opt, list(pair), LOCAL_2D, needed=False) for pair in pairs
            }
        if self._gemm:
            inv_n, inv_m = self._gemm_tile[:2]
            self.pipeline_convolution = self.new_pipeline(
                "convolution_pack4_gemm", opt, specs, (inv_n * inv_m, 1, 1)
            )
        else:
            shader = "convolution_pack4" if self._in_pack4 else "convolution"
            self.pipeline_convolution = self.new_pipeline(shader, opt, specs, LOCAL_1D)
        return 0 if self.pipeline_convolution else -1

    def _use_gemm(self) -> bool:
        """Whether this layer runs as an implicit GEMM (sets ``_gemm_tile``).

        Only elempack 4 -> 4 has a GEMM shader. "auto" picks it on non-CPU devices for layers
        with at least GEMM_MIN_OUTC output channels and GEMM_MIN_K input channels x taps;
        lavapipe keeps the direct shader, whose big register tiles are tuned for it (a 3x3
        256->256 layer at 56x56, fp32 packed: 1.4 s direct, 8.6 s GEMM; llvmpipe runs a
        work group as SIMD lanes of a few threads, so the shared-memory staging and barriers
        buy nothing there and the small per-invocation tile loses). A tile the
        device cannot run (work group or shared memory too big) falls back to the direct
        shader."""
        policy = gemm_policy()
        if not (self._in_pack4 and self._out_pack4) or policy == "never":
            return False
        tile = gemm_tile()
        if policy == "auto":
            k = self.num_input() * self.kernel_w * self.kernel_h
            if self.cpu_device() or self.num_output < GEMM_MIN_OUTC or k < GEMM_MIN_K:
                return False
        assert self.vkdev is not None  # create_pipeline_vk runs only with a device
        info = self.vkdev.info
        inv_n, inv_m, pos, vec4s, kb = tile
        shared = kb * (inv_n * pos + 4 * inv_m * vec4s) * 16
        if inv_n * inv_m > int(getattr(info, "max_workgroup_invocations", 128) or 128) or shared > int(
            getattr(info, "max_shared_memory_size", 16384) or 16384
        ):
            log.warning(
                "Convolution %r: GEMM tile %s does not fit the device; direct convolution", self.name, tile
            )
            return False
        self._gemm_tile = tile
        return True

    def _direct_taps(self) -> bool:
        """Whether the direct shaders read each tap's inputs directly instead of staging a
        row window of ``(tile_w - 1) * stride_w + (kernel_w - 1) * dilation_w + 1`` inputs:
        when that window exceeds MAX_WINDOW (see DIRECT TAPS in convolution.comp)."""
        if self._flat:
            return False
        window = (self._tile_w - 1) * self.stride_w + (self.kernel_w - 1) * self.dilation_w + 1
        return window > MAX_WINDOW

    def _tile_shape(self) -> tuple[int, int]:
        """(tile_w, out_groups) for this device and packing.

        A CPU device (lavapipe) is bound by loads, so big register tiles win there. Measured
        on lavapipe (CPU time of 64->64 channel layers at 55x55 and 27x27, 1x1 and 3x3):
        16 positions x 16 channels beat 8 x 8 by 1.7x for 3x3 kernels and 1.6x for 1x1; the
        elempack 1 shader falls off a cliff beyond that (its accumulators spill), while the
        elempack 4 one gains another 10-20% at 16 x 32. Fewer output channels than a tile
        holds would only waste work, so small layers get fewer groups. A GPU wants many
        light invocations instead: on an H200 big tiles made SqueezeNet 2.3x slower and its
        pipelines 3x slower to build, so GPUs get the smallest tile the shaders allow (4
        positions x 8 channels: steady 5.3 ms instead of 10.3, cold load_model 0.52 s
        instead of 0.86 s).

        The elempack 4 tile on a CPU device is 8 positions x 32 channels, not 16 x 32: lavapipe's
        vkCreateComputePipelines (Mesa's NIR passes over the unrolled tile, paid at every
        start, warm or cold) grows faster than the tile: about 60 ms per variant at 8 x 32
        against 105-170 ms at 16 x 32. Measured on the 2-core box, median of 3, fresh Mesa
        cache, 2 pipeline threads: SqueezeNet v1.1 warm load_model 0.39 -> 0.21 s, inference
        219 -> 204 ms; ResNet50 0.66 -> 0.43 s, inference 2.28 -> 2.79 s (still a third of
        the PyPI ncnn's). 16 x 16 builds as fast as 8 x 32 but ran ResNet50 slower (2.89 s)."""
        if not self.cpu_device():
            return 4, 2
        vec4s = -(-self.num_output // 4)
        if self._in_pack4:
            return 8, 8 if vec4s > 4 else max(1, vec4s)
        # the elempack 1 shader loads weights in pairs: an even group count
        return 16, 4 if vec4s > 2 else 2

    def _weights_fit_fp16(self) -> bool:
        """Whether every weight converts to fp16 and back unchanged (NaN and overflow never do);
        the halves are kept for upload_model."""
        self._weight_halves = None if self._weight2d is None else fp16_exact(self._weight2d)
        return self._weight_halves is not None

    def upload_model(self, cmd, opt) -> int:
        if isinstance(self._int8_passes, Int8Passes):
            self._int8_passes.upload_model(cmd, opt)
        if self._gemm:
            return self._upload_gemm(cmd, opt)
        assert self._weight2d is not None  # load_model() prepared it
        g = self._out_groups
        groups = -(-self.num_output // (4 * g))
        weight = self._weight2d
        if self._weight_fp16:
            # pairs of halves in 32-bit words, the first in the low half (unpackHalf2x16)
            weight = self._weight_halves if self._weight_halves is not None else weight.astype(np.float16)
        self._weight_halves = None
        if groups * 4 * g != self.num_output:
            padded = np.zeros((groups * 4 * g, weight.shape[1]), weight.dtype)
            padded[: self.num_output] = weight
            weight = padded
        if self._in_pack4:
            # [groups][g][4 out][c/4][4 in][maxk] -> [groups][c/4][maxk][g][4 in][4 out]
            maxk = self.kernel_w * self.kernel_h
            weight = weight.reshape(groups, g, 4, -1, 4, maxk).transpose(0, 3, 5, 1, 4, 2)
        else:
            # [groups][g][4][c*maxk] -> [groups][c*maxk][g][4]
            weight = weight.reshape(groups, g, 4, -1).transpose(0, 3, 1, 2)
        self.weight_data_gpu = upload_weights(cmd, weight, opt)
        if self.bias_term:
            assert self._bias is not None  # load_model() prepared it
            bias = np.zeros(groups * 4 * g, np.float32)
            bias[: self.num_output] = self._bias.reshape(-1)
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def _gemm_dims(self) -> tuple[int, int, int]:
        """(output vec4s per M tile, M tiles, taps per K step) of the GEMM layout."""
        _, inv_m, _, vec4s, kb = self._gemm_tile
        tile_m = inv_m * vec4s
        return tile_m, -(-self.num_output // (4 * tile_m)), kb

    def _upload_gemm(self, cmd, opt) -> int:
        """Weights as [M tiles][K steps][kb][4 in][tile_m][4 out] (K = inc/4 x taps, input
        vec4 major), zero-filled past num_output and past K, so that each work group reads
        one contiguous slice per step in the order it lays it out in shared memory; bias as
        [M tiles * tile_m][4], zero-filled."""
        assert self._weight2d is not None  # load_model() prepared it
        tile_m, mtiles, kb = self._gemm_dims()
        weight = self._weight2d
        if self._weight_fp16:
            weight = self._weight_halves if self._weight_halves is not None else weight.astype(np.float16)
        self._weight_halves = None
        maxk = self.kernel_w * self.kernel_h
        q = self.num_input() // 4
        k = q * maxk
        steps = -(-k // kb)
        outc_p = mtiles * tile_m * 4
        padded = np.zeros((outc_p, steps * kb, 4), weight.dtype)
        # [outc][q][4 in][maxk] -> [outc][q][maxk][4 in], written through a view of the K axis
        dst = padded[: self.num_output, :k].reshape(self.num_output, q, maxk, 4)
        assert np.shares_memory(dst, padded)
        dst[...] = weight.reshape(self.num_output, q, 4, maxk).transpose(0, 1, 3, 2)
        # [mt][tile_m][4 out][step][kb][4 in] -> [mt][step][kb][4 in][tile_m][4 out]
        layout = padded.reshape(mtiles, tile_m, 4, steps, kb, 4).transpose(0, 3, 4, 5, 1, 2)
        self.weight_data_gpu = upload_weights(cmd, layout, opt)
        if self.bias_term:
            assert self._bias is not None  # load_model() prepared it
            bias = np.zeros(outc_p, np.float32)
            bias[: self.num_output] = self._bias.reshape(-1)
            self.bias_data_gpu = upload_weights(cmd, bias, opt)
        return 0

    def release_gpu_data(self) -> None:
        self.weight_data_gpu = None
        self.bias_data_gpu = None

    def forward_vk(self, bottom, top, cmd, opt) -> int:
        return Int8Passes.run(self._int8_passes, self._forward_float_vk, bottom, top, cmd, opt)

    def _forward_float_vk(self, bottom, top, cmd, opt) -> int:
        if bottom.dims == 1 and self.pipelines_reshape:
            return self._forward_flat_vk(bottom, top, cmd, opt)
        if bottom.dims != 3:
            return int(self.accepts_3d(bottom)) - 1
        return self._forward_3d_vk(bottom, top, cmd, opt)

    def _forward_flat_vk(self, bottom, top, cmd, opt) -> int:
        """ncnn's deprecated 1-D input of a 1x1 convolution (the CPU layer's ``_forward_flat``):
        an InnerProduct, run as the convolution of a c x 1 x 1 blob. ncnn logs its advice to
        use InnerProduct; PaddleOCR v5's detection model has such layers after a global pool."""
        n = bottom.w * bottom.elempack
        if n * self.num_output != self.weight_data_size:
            log.error(
                "Convolution %r: flat input of %d values, weights expect %d",
                self.name,
                n,
                self.weight_data_size // self.num_output,
            )
            return -1
        if not self._flat_warned:
            self._flat_warned = True
            log.warning("Convolution %r: a 1-D input is ncnn's deprecated form, use InnerProduct", self.name)
        column = type(bottom)()
        ret = record_reshape(self, cmd, self.pipelines_reshape, bottom, column, (n, 1, 1), opt)
        if ret:
            return ret
        out = type(bottom)()
        ret = self._forward_3d_vk(column, out, cmd, opt)
        if ret:
            return ret
        return record_reshape(self, cmd, self.pipelines_reshape, out, top, (self.num_output,), opt)

    def _forward_3d_vk(self, bottom, top, cmd, opt) -> int:
        in_pack = 4 if self._in_pack4 else 1
        bottom = self.in_elempack(cmd, bottom, in_pack, opt)
        if isinstance(bottom, int):
            return bottom
        # the elempack 1 shader reads its bottom as vec4s
        if in_pack == 1 and not self.accepts_vec4_channels(bottom):
            return -1
        w, h, channels = bottom.w, bottom.h, bottom.c * in_pack
        maxk = self.kernel_w * self.kernel_h
        if channels * maxk * self.num_output != self.weight_data_size:
            log.error(
                "Convolution %r: %d input channels, weights expect %d",
                self.name,
                channels,
                self.weight_data_size // (maxk * self.num_output),
            )
            return -1
        t, b, l, r = self.pads((h, w))
        out = self.output_shape((h, w), (t, b, l, r))
        if out is None:
            return -1
        outh, outw = out

        out_pack = 4 if self._out_pack4 else 1
        top.create(
            outw,
            outh,
            self.num_output // out_pack,
            elemsize=elemsize_for(out_pack, is_fp16(bottom)),
            elempack=out_pack,
            allocator=opt.blob_vkallocator,
        )
        if top.empty():
            return -100
        bias = self.bias_data_gpu if self.bias_term else self.weight_data_gpu
        # the shader's push constant block, in order (c counts packed channels)
        constants = [w, h, bottom.c, bottom.cstep, outw, outh, self.num_output, top.cstep]
        constants += [l, t, float(self.pad_value), *self._act_push]
        if self._gemm:
            inv_n, inv_m, pos = self._gemm_tile[:3]
            grid = (-(-outw * outh // (inv_n * pos)) * inv_n * inv_m, self._gemm_dims()[1], 1)
        else:
            tiles = -(-outw * outh // self._tile_w) if self._flat else -(-outw // self._tile_w) * outh
            grid = (tiles, -(-self.num_output // (4 * self._out_groups)), 1)
        cmd.record_pipeline(
            self.pipeline_convolution, [bottom, top, self.weight_data_gpu, bias], constants, grid
        )
        return 0
